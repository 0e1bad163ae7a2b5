"""The last official names a port needs: a subclassed `Resource`, `HttpResource`,
`TransportSecuritySettings` and `MCPServer(subscriptions=...)`.

Each is used the same way on both SDKs and compared with what the official
server does: listings and reads by each SDK's client, HTTP statuses for the
same Host and Origin headers, and the error a refused method answers.
"""

from __future__ import annotations

from typing import Any

import httpx
import mcp.server.mcpserver.resources as their_resources
import pytest
from mcp.client import Client as OfficialClient
from mcp.server.mcpserver import MCPServer as OfficialServer
from mcp.server.transport_security import TransportSecuritySettings as TheirSecurity
from mcp.shared.exceptions import MCPError as TheirError
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

import mcp_resolve
import mcp_resolve.resources as our_resources
from http_helpers import http_server, initialize_request
from mcp_resolve import Client, Context, MCPError, MCPServer, TransportSecuritySettings
from mcp_resolve.stores.bus import InMemorySubscriptionBus, ResourceUpdated, ToolsListChanged

pytestmark = pytest.mark.anyio


def _dump(value: Any) -> Any:
    data = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.pop("_meta", None)  # the 2026-07-28 envelope's serverInfo, compared elsewhere
    return data


def _subclasses(base: Any) -> list[Any]:
    """The same user code on either SDK: subclasses of its `Resource` overriding `read()`."""

    class Greeting(base):  # type: ignore[misc, valid-type]
        who: str = "world"

        async def read(self) -> str:
            return f"hello {self.who}"

    class Pixel(base):  # type: ignore[misc, valid-type]
        async def read(self) -> bytes:
            return b"\x89PNG\x00"

    return [
        Greeting(uri="greet://ada", who="Ada", description="A greeting"),
        Greeting(uri="greet://default", name="plain", title="Plain"),
        Pixel(uri="img://pixel", mime_type="image/png", meta={"k": "v"}),
    ]


async def _listed_and_read(server: Any, client: Any) -> tuple[list[Any], dict[str, Any]]:
    async with client:
        listed = [_dump(r) for r in (await client.list_resources()).resources]
        reads = {r["uri"]: _dump(await client.read_resource(r["uri"])) for r in listed}
    return listed, reads


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_resource_subclass_overriding_read_is_served_as_by_the_official_server(mode: str) -> None:
    official, mine = OfficialServer("kinds"), MCPServer("kinds")
    for resource in _subclasses(their_resources.Resource):
        official.add_resource(resource)
    for resource in _subclasses(our_resources.Resource):
        mine.add_resource(resource)
    theirs = await _listed_and_read(official, OfficialClient(official, mode=mode))
    ours = await _listed_and_read(mine, Client(mine, mode=mode))
    assert ours == theirs
    assert ours[1]["greet://ada"]["contents"][0]["text"] == "hello Ada"
    assert "blob" in ours[1]["img://pixel"]["contents"][0]


async def test_a_resource_subclass_reads_directly_and_refuses_what_the_official_refuses() -> None:
    theirs, ours = _subclasses(their_resources.Resource), _subclasses(our_resources.Resource)
    assert [await r.read() for r in ours] == [await r.read() for r in theirs]
    assert await our_resources.TextResource(uri="t://x", text="t").read() == "t"
    with pytest.raises(TypeError):
        our_resources.Resource(uri="x://bare")  # nothing to read: no function, no read() override
    with pytest.raises(TypeError):
        _subclasses(our_resources.Resource)[0].__class__(uri="greet://x", colour="red")  # not a field


def _origin_app() -> Starlette:
    async def data(request: Any) -> Response:
        return PlainTextResponse('{"ok": true}')

    async def big(request: Any) -> Response:
        return PlainTextResponse("x" * 5000)

    async def missing(request: Any) -> Response:
        return PlainTextResponse("no", status_code=404)

    return Starlette(routes=[Route("/data", data), Route("/big", big), Route("/missing", missing)])


async def _read_outcome(client: Any, uri: str) -> Any:
    try:
        return _dump(await client.read_resource(uri))
    except (MCPError, TheirError) as error:
        return {"code": error.code, "message": error.message}


@pytest.mark.slow
async def test_http_resource_reads_its_url_as_the_official_one_does() -> None:
    async with http_server(_origin_app()) as origin:

        def build(kinds: Any) -> list[Any]:
            return [
                kinds.HttpResource(uri="web://data", url=f"{origin}/data", name="data"),
                kinds.HttpResource(uri="web://missing", url=f"{origin}/missing", mime_type="text/plain"),
            ]

        official, mine = OfficialServer("web"), MCPServer("web")
        for resource in build(their_resources):
            official.add_resource(resource)
        for resource in build(our_resources):
            mine.add_resource(resource)
        seen = []
        for client in (OfficialClient(official), Client(mine)):
            async with client:
                listed = [_dump(r) for r in (await client.list_resources()).resources]
                seen.append((listed, {r["uri"]: await _read_outcome(client, r["uri"]) for r in listed}))
        assert seen[1] == seen[0]
        assert seen[1][1]["web://data"]["contents"][0]["text"] == '{"ok": true}'
        assert seen[1][1]["web://missing"] == {
            "code": -32603,
            "message": "Error reading resource web://missing",
        }

        capped = MCPServer("capped")
        capped.add_resource(our_resources.HttpResource(uri="web://big", url=f"{origin}/big", max_bytes=1000))
        async with Client(capped) as client:
            with pytest.raises(MCPError) as refused:  # past the cap: a crash of the read, the size in the log
                await client.read_resource("web://big")
        assert (refused.value.code, refused.value.message) == (-32603, "Error reading resource web://big")


SECURITY_CASES = [
    TheirSecurity(enable_dns_rebinding_protection=False),
    TheirSecurity(allowed_hosts=["example.com:*"], allowed_origins=["https://app.example.com"]),
    TheirSecurity(allowed_hosts=["api.example.com:8443"], allowed_origins=["http://localhost:*"]),
    TheirSecurity(allowed_hosts=[], allowed_origins=[]),
]
HEADERS = [
    {"Host": "example.com:8080"},
    {"Host": "api.example.com:8443"},
    {"Host": "evil.example:80"},
    {"Host": "example.com:8080", "Origin": "https://app.example.com"},
    {"Host": "example.com:8080", "Origin": "https://evil.example"},
    {"Host": "api.example.com:8443", "Origin": "http://localhost:5173"},
    {"Host": "api.example.com:8443", "Origin": "http://localhost.evil:5173"},
]
INITIALIZE = initialize_request()


async def _statuses(app: Any) -> list[bool]:
    """Whether each request of HEADERS got past the Host/Origin check (any answer but 421/403/400)."""
    passed = []
    async with http_server(app) as url, httpx.AsyncClient(timeout=10) as client:
        for headers in HEADERS:
            response = await client.post(
                f"{url}/mcp",
                json=INITIALIZE,
                headers={"Accept": "application/json, text/event-stream", **headers},
            )
            passed.append(response.status_code not in (400, 403, 421))
    return passed


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(SECURITY_CASES)))
async def test_transport_security_accepts_the_hosts_and_origins_the_official_accepts(case: int) -> None:
    theirs = SECURITY_CASES[case]
    ours = TransportSecuritySettings(**theirs.model_dump())
    official = OfficialServer("secure").streamable_http_app(transport_security=theirs)
    mine = MCPServer("secure").streamable_http_app(transport_security=ours)
    expected = await _statuses(official)
    assert await _statuses(mine) == expected
    assert any(expected) or case == 3  # each case lets something through but the empty one


@pytest.mark.slow
async def test_transport_security_on_the_sse_app_and_refusing_a_second_spelling() -> None:
    security = TransportSecuritySettings(allowed_hosts=["example.com:*"])
    app = MCPServer("sse").sse_app(transport_security=security)
    async with http_server(app) as url, httpx.AsyncClient(timeout=10) as client:
        refused = await client.post(
            f"{url}/messages/?session_id=x", json={}, headers={"Host": "evil.example:1"}
        )
        passed = await client.post(
            f"{url}/messages/?session_id=x", json={}, headers={"Host": "example.com:1"}
        )
    assert refused.status_code == 403  # refused by the Host check (the unknown session would be 404)
    assert passed.status_code not in (400, 403, 421)  # past the check: the unknown session is what fails
    with pytest.raises(ValueError, match="not both"):
        MCPServer("x").streamable_http_app(transport_security=security, allowed_hosts=["a"])


async def test_subscriptions_takes_a_bus_that_the_notify_methods_publish_to() -> None:
    bus = InMemorySubscriptionBus()
    mcp = MCPServer("bus", subscriptions=bus)
    seen: list[Any] = []
    bus.subscribe(seen.append)

    @mcp.tool()
    async def touch(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        await ctx.notify_resource_updated("r://x")
        return "ok"

    async with Client(mcp) as client:
        await client.call_tool("touch", {})
    assert seen == [ToolsListChanged(), ResourceUpdated(uri="r://x")]
    assert mcp.subscription_bus is bus
    with pytest.raises(ValueError, match="not both"):
        MCPServer("x", subscriptions=bus, subscription_bus=InMemorySubscriptionBus())


async def test_subscriptions_false_leaves_listen_unserved_as_the_official() -> None:
    official = OfficialServer("quiet", subscriptions=False)
    async with OfficialClient(official) as client:
        with pytest.raises(TheirError) as theirs:
            async with client.listen(tools_list_changed=True):
                pass
    mine = MCPServer("quiet", subscriptions=False)
    async with Client(mine) as client:
        with pytest.raises(MCPError) as ours:
            await client.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert ours.value.code == theirs.value.code == -32601
    assert ours.value.message.startswith(theirs.value.message)  # ours names the method after it
    assert not mine.serves("subscriptions/listen") and MCPServer("loud").serves("subscriptions/listen")


def test_the_official_top_level_names_are_here() -> None:
    import mcp

    assert "InvalidUriTemplate" in mcp.__all__
    assert mcp_resolve.InvalidUriTemplate is mcp_resolve.exceptions.InvalidUriTemplate
    assert set(TransportSecuritySettings.model_fields) == set(TheirSecurity.model_fields)


@pytest.mark.slow
async def test_transport_security_given_to_run_streamable_http_async() -> None:
    import anyio

    from http_helpers import free_port

    port = free_port()
    mcp = MCPServer("run")
    security = TransportSecuritySettings(allowed_hosts=["example.com:*"])
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: mcp.run_streamable_http_async(
                    host="127.0.0.1", port=port, transport_security=security
                )
            )
            async with httpx.AsyncClient(timeout=5) as client:
                while True:
                    try:
                        refused = await client.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE)
                        break
                    except httpx.ConnectError:
                        await anyio.sleep(0.05)
                passed = await client.post(
                    f"http://127.0.0.1:{port}/mcp",
                    json=INITIALIZE,
                    headers={"Host": "example.com:8000", "Accept": "application/json, text/event-stream"},
                )
            group.cancel_scope.cancel()
    assert refused.status_code == 403  # 127.0.0.1 is not on the list the settings give (421 by the official)
    assert passed.status_code == 200
