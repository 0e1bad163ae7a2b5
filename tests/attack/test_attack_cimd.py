"""Hostile Client ID Metadata Documents and URLs: the server fetches what an anonymous caller names.

Each attack is refused with an `AuthorizeError` fit to show a person, within the deadline, and
where an address is forbidden nothing is sent to it: private, loopback, link-local (cloud
metadata), multicast and reserved addresses, as IP literals or behind a redirect; oversized,
trickled, non-JSON and lying documents from a real HTTP server on loopback.
"""

from __future__ import annotations

import json

import anyio
import anyio.abc
import pytest

from mcp_resolve.auth.cimd import ClientMetadataDocuments
from mcp_resolve.auth.provider import AuthorizeError
from upstream_helpers import Answer, DocumentServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "client_id",
    [
        "https://10.0.0.5/client.json",
        "https://192.168.1.1/client.json",
        "https://172.16.0.1/client.json",
        "https://169.254.169.254/latest/meta-data",  # cloud metadata
        "https://100.64.0.1/client.json",  # shared address space
        "https://0.0.0.0/client.json",
        "https://224.0.0.1/client.json",  # multicast
        "https://240.0.0.1/client.json",  # reserved
        "https://[fd00::1]/client.json",  # unique local
        "https://[fe80::1]/client.json",  # link-local
        "https://[::ffff:10.0.0.5]/client.json",  # IPv4-mapped private
        "https://[2002:a00:5::1]/client.json",  # 6to4 carrying 10.0.0.5
        "https://[2002:a9fe:a9fe::1]/client.json",  # 6to4 carrying the cloud metadata address
        "https://[64:ff9b::a9fe:a9fe]/client.json",  # NAT64 to the cloud metadata address
        "https://127.0.0.1/client.json",  # loopback, not allowed here
        "https://[::1]/client.json",
    ],
)
async def test_a_private_ip_literal_is_refused_before_connecting(client_id: str) -> None:
    documents = ClientMetadataDocuments(timeout_s=2)
    try:
        with anyio.fail_after(3), pytest.raises(AuthorizeError) as error:
            await documents.client(client_id)
        assert error.value.error == "invalid_request"
        assert "non-public address" in (error.value.error_description or "")
    finally:
        await documents.aclose()


async def test_private_addresses_stay_refused_with_loopback_allowed() -> None:
    documents = ClientMetadataDocuments(allow_http_loopback=True, timeout_s=2)
    try:
        for client_id in (
            "https://10.0.0.5/c.json",
            "https://169.254.169.254/c.json",
            "http://10.0.0.5/c.json",
        ):
            with pytest.raises(AuthorizeError):
                await documents.client(client_id)
    finally:
        await documents.aclose()


@pytest.mark.parametrize(
    ("client_id", "why"),
    [
        ("http://app.example.com/client.json", "https"),
        ("http://127.0.0.1:9/client.json", "https"),  # loopback http needs allow_http_loopback
        ("ftp://app.example.com/client.json", "https"),
        ("https://app.example.com/client.json#frag", "fragment"),
        ("https://app.example.com/client.json?x=1", "query"),
        ("https://user:pw@app.example.com/client.json", "user information"),
        ("https://app.example.com/a/../client.json", ". or .."),
        ("https://app.example.com/", "path"),
        ("https://app.example.com:99999/c.json", "valid URL"),
        ("https://app.example.com/" + "a" * 3000, "at most"),
    ],
)
async def test_malformed_client_id_urls_are_refused_unfetched(client_id: str, why: str) -> None:
    documents = ClientMetadataDocuments()
    try:
        with pytest.raises(AuthorizeError, match=None) as error:
            await documents.client(client_id)
        assert why in (error.value.error_description or "")
    finally:
        await documents.aclose()


async def _listener_that_records() -> tuple[anyio.abc.SocketListener, int, list[bytes]]:
    arrived: list[bytes] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    return listener, listener.extra(anyio.abc.SocketAttribute.local_port), arrived


@pytest.mark.slow
async def test_a_redirect_is_not_followed_to_a_private_address_or_anywhere() -> None:
    listener, port, arrived = await _listener_that_records()

    async def record(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            arrived.append(await stream.receive(65536))

    server = DocumentServer()
    async with listener, anyio.create_task_group() as group, server.serving():
        group.start_soon(listener.serve, record)
        documents = ClientMetadataDocuments(allow_http_loopback=True, timeout_s=2)
        try:
            for path, target in (
                ("/to-metadata.json", "http://169.254.169.254/latest/meta-data/"),
                ("/to-private.json", "http://10.0.0.5/client.json"),
                ("/to-loopback.json", f"http://127.0.0.1:{port}/client.json"),
            ):
                server.answers[path] = Answer(b"", status=302, headers={"location": target})
                with anyio.fail_after(3), pytest.raises(AuthorizeError, match="redirects") as error:
                    await documents.client(f"{server.url}{path}")
                assert error.value.error == "invalid_request"
            await anyio.sleep(0.2)
            assert arrived == []  # the redirect target never saw a request
        finally:
            await documents.aclose()
            group.cancel_scope.cancel()


@pytest.mark.slow
async def test_an_oversized_document_is_refused() -> None:
    server = DocumentServer()
    async with server.serving():
        declared = server.document("/declared.json", client_name="x" * 100, padding="y" * 6000)
        chunked = f"{server.url}/chunked.json"
        body = json.dumps({"client_id": chunked, "padding": "z" * 6000}).encode()
        server.answers["/chunked.json"] = Answer(body, drip_s=0)  # streamed: no Content-Length
        documents = ClientMetadataDocuments(allow_http_loopback=True, max_bytes=5120)
        try:
            for client_id in (declared, chunked):
                with pytest.raises(AuthorizeError, match="larger than 5120 bytes"):
                    await documents.client(client_id)
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_a_slow_drip_is_cut_off_at_the_deadline() -> None:
    server = DocumentServer()
    async with server.serving():
        client_id = server.document("/drip.json")
        server.answers[
            "/drip.json"
        ].drip_s = 0.1  # ~25 s for the whole document; each byte well within any read timeout
        documents = ClientMetadataDocuments(allow_http_loopback=True, timeout_s=1)
        try:
            started = anyio.current_time()
            with anyio.fail_after(5), pytest.raises(AuthorizeError) as error:
                await documents.client(client_id)
            assert anyio.current_time() - started < 3
            assert error.value.error == "temporarily_unavailable"
            assert "within 1 s" in (error.value.error_description or "")
        finally:
            await documents.aclose()


def _lie(server: DocumentServer, path: str, **fields: object) -> str:
    return server.document(path, **fields)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"client_id": "https://app.example.com/client.json"}, "not its own URL"),
        ({"client_secret": "hunter2"}, "client_secret"),
        ({"client_secret_expires_at": 0}, "client_secret_expires_at"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "must be none"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "must be none"),
        ({"redirect_uris": []}, "redirect_uris"),
        ({"redirect_uris": "http://127.0.0.1/cb"}, "redirect_uris"),
        ({"redirect_uris": ["not a url"]}, "redirect_uris"),
        ({"client_name": ""}, "client_name"),
        ({"client_name": "n" * 201}, "client_name"),
        ({"grant_types": ["client_credentials"]}, "grants"),
        ({"response_types": ["token"]}, "response_types"),
        ({"logo_uri": "javascript:alert(1)"}, "logo_uri"),
    ],
)
async def test_a_document_that_lies_or_asks_too_much_is_refused(fields: dict[str, object], why: str) -> None:
    server = DocumentServer()
    async with server.serving():
        client_id = _lie(server, "/c.json", **fields)
        if fields.get("client_id"):
            client_id = f"{server.url}/c.json"
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        try:
            with pytest.raises(AuthorizeError) as error:
                await documents.client(client_id)
            assert error.value.error == "invalid_request"
            assert why in (error.value.error_description or "")
            assert "hunter2" not in str(error.value)
        finally:
            await documents.aclose()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("answer", "why", "error_code"),
    [
        (Answer(b"<html>hello</html>"), "not JSON", "invalid_request"),
        (Answer(b"[1, 2, 3]"), "not a JSON object", "invalid_request"),
        (Answer(b"\xff\xfe\x00garbage"), "not JSON", "invalid_request"),
        (Answer(b"{}", status=404), "HTTP 404", "invalid_request"),
        (Answer(b"{}", status=503), "HTTP 503", "temporarily_unavailable"),
    ],
)
async def test_a_non_json_or_failing_answer_is_refused(answer: Answer, why: str, error_code: str) -> None:
    server = DocumentServer()
    async with server.serving():
        server.answers["/c.json"] = answer
        documents = ClientMetadataDocuments(allow_http_loopback=True)
        try:
            with pytest.raises(AuthorizeError) as error:
                await documents.client(f"{server.url}/c.json")
            assert (error.value.error, why in (error.value.error_description or "")) == (error_code, True)
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_a_failure_is_remembered_briefly_so_a_bad_url_is_not_hammered() -> None:
    server = DocumentServer()
    async with server.serving():
        server.answers["/bad.json"] = Answer(b"nope")
        documents = ClientMetadataDocuments(allow_http_loopback=True, failure_ttl_s=30)
        try:
            for _ in range(20):
                with pytest.raises(AuthorizeError):
                    await documents.client(f"{server.url}/bad.json")
            assert server.hits["/bad.json"] == 1
        finally:
            await documents.aclose()


@pytest.mark.slow
async def test_concurrent_fetches_are_capped() -> None:
    server = DocumentServer()
    async with server.serving():
        ids = [server.document(f"/d{i}.json") for i in range(6)]
        for i in range(6):
            server.answers[f"/d{i}.json"].drip_s = 0.005
        documents = ClientMetadataDocuments(allow_http_loopback=True, max_concurrent=2, timeout_s=5)
        outcomes: list[str] = []

        async def ask(client_id: str) -> None:
            try:
                await documents.client(client_id)
                outcomes.append("ok")
            except AuthorizeError as exc:
                outcomes.append(exc.error)

        try:
            async with anyio.create_task_group() as group:
                for client_id in ids:
                    group.start_soon(ask, client_id)
            assert sorted(outcomes) == ["ok", "ok"] + ["temporarily_unavailable"] * 4
            assert sum(server.hits.values()) == 2
        finally:
            await documents.aclose()
