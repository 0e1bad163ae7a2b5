"""Client ID Metadata Documents: fetched over real HTTP on loopback, checked, cached as their headers say.

Hostile documents and addresses are in tests/attack/test_attack_cimd.py; these are the working
cases: a document becomes a public client, the cache keeps it for `max-age` (clamped), forgets it
for `no-store`, stays bounded, and concurrent requests share one fetch.
"""

from __future__ import annotations

import anyio
import pytest

from mcp_resolve.auth.cimd import ClientMetadataDocuments
from mcp_resolve.auth.provider import AuthorizeError
from upstream_helpers import DocumentServer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("client_id", "is_url"),
    [
        ("https://app.example.com/oauth/client.json", True),
        ("http://127.0.0.1:3000/client.json", True),
        ("https://app.example.com", False),  # no path: not a document's location
        ("https://app.example.com/", False),
        ("my-registered-client", False),
        ("urn:example:client", False),
    ],
)
def test_which_client_ids_are_documents(client_id: str, is_url: bool) -> None:
    assert ClientMetadataDocuments.is_cimd_client_id(client_id) is is_url


pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_a_document_becomes_a_public_client() -> None:
    server = DocumentServer()
    async with server.serving():
        client_id = server.document(
            "/oauth/client.json",
            client_uri="https://app.example.com",
            scope="mcp:read",
            application_type="native",
        )
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        try:
            client = await documents.client(client_id)
        finally:
            await documents.aclose()
    assert client.client_id == client_id
    assert client.client_name == "Example MCP Client"
    assert [str(u) for u in client.redirect_uris or ()] == ["http://127.0.0.1:3000/callback"]
    assert client.token_endpoint_auth_method == "none" and client.client_secret is None
    assert client.grant_types == ["authorization_code", "refresh_token"]
    assert client.application_type == "native" and client.scope == "mcp:read"
    # the document's redirect URIs are the ones checked (RFC 8252: a loopback one with any port)
    assert (
        str(client.validate_redirect_uri("http://127.0.0.1:4711/callback"))
        == "http://127.0.0.1:4711/callback"
    )
    with pytest.raises(AuthorizeError):
        client.validate_redirect_uri("https://evil.example/callback")


@pytest.mark.slow
async def test_max_age_is_honoured_within_the_bounds() -> None:
    server, clock = DocumentServer(), Clock()
    async with server.serving():
        short = server.document("/short.json", _headers={"cache-control": "public, max-age=120"})
        tiny = server.document("/tiny.json", _headers={"cache-control": "max-age=1"})
        huge = server.document("/huge.json", _headers={"cache-control": "max-age=999999999"})
        plain = server.document("/plain.json")
        documents = ClientMetadataDocuments(
            allow_http_loopback=True, min_ttl_s=60, max_ttl_s=3600, default_ttl_s=300, clock=clock
        )
        try:
            for client_id in (short, tiny, huge, plain):
                await documents.client(client_id)
                await documents.client(client_id)
            assert server.hits == {"/short.json": 1, "/tiny.json": 1, "/huge.json": 1, "/plain.json": 1}

            clock.now += 61  # past tiny's max-age=1 raised to the 60 s floor
            for client_id in (short, tiny, huge, plain):
                await documents.client(client_id)
            assert server.hits == {"/short.json": 1, "/tiny.json": 2, "/huge.json": 1, "/plain.json": 1}

            clock.now += 100  # 161 s: short (120 s) is stale, plain (300 s default) is not
            for client_id in (short, plain):
                await documents.client(client_id)
            assert server.hits["/short.json"] == 2 and server.hits["/plain.json"] == 1

            clock.now += 3600  # past the 3600 s ceiling that capped huge's max-age
            await documents.client(huge)
            assert server.hits["/huge.json"] == 2
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_no_store_is_never_kept_and_a_changed_document_is_seen() -> None:
    server = DocumentServer()
    async with server.serving():
        client_id = server.document("/c.json", _headers={"cache-control": "no-store"})
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        try:
            assert (await documents.client(client_id)).client_name == "Example MCP Client"
            server.document("/c.json", client_name="Renamed", _headers={"cache-control": "no-cache"})
            assert (await documents.client(client_id)).client_name == "Renamed"
            assert server.hits["/c.json"] == 2
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_the_cache_is_bounded_oldest_out_first() -> None:
    server = DocumentServer()
    async with server.serving():
        ids = [server.document(f"/c{i}.json") for i in range(3)]
        documents = ClientMetadataDocuments(allow_http_loopback=True, max_cached=2)
        try:
            for client_id in ids:
                await documents.client(client_id)
            await documents.client(ids[2])
            await documents.client(ids[1])
            assert server.hits == {"/c0.json": 1, "/c1.json": 1, "/c2.json": 1}
            await documents.client(ids[0])  # evicted by the third
            assert server.hits["/c0.json"] == 2
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_concurrent_requests_share_one_fetch() -> None:
    server = DocumentServer()
    async with server.serving():
        client_id = server.document("/slowish.json")
        answer = server.answers["/slowish.json"]
        answer.drip_s = 0.002  # long enough for all of them to arrive while it is under way
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        names: list[str | None] = []

        async def ask() -> None:
            names.append((await documents.client(client_id)).client_name)

        try:
            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(ask)
            assert names == ["Example MCP Client"] * 10
            assert server.hits["/slowish.json"] == 1
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_the_host_name_is_resolved_and_the_connection_goes_to_a_checked_address() -> None:
    """`localhost` is looked up (a loopback address: only with allow_http_loopback), and the request
    still names the host it was for."""
    server = DocumentServer()
    async with server.serving() as url:
        port = url.rsplit(":", 1)[1]
        server.url = f"http://localhost:{port}"
        client_id = server.document("/named.json")
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        try:
            assert (await documents.client(client_id)).client_id == client_id
            assert server.hosts[-1] == f"localhost:{port}"
        finally:
            await documents.aclose()
        strict = ClientMetadataDocuments()
        try:
            with pytest.raises(AuthorizeError, match="https"):
                await strict.client(client_id)
            with pytest.raises(AuthorizeError, match="non-public address"):
                await strict.client(f"https://localhost:{port}/named.json")
            assert server.hits["/named.json"] == 1
        finally:
            await strict.aclose()
