"""MCP Apps on the server: `ui://` views, UI tools, and what clients read of them, on both eras.

The expected wire shapes are the specification's own JSON examples (SEP-1865, `apps.mdx`: the
weather dashboard), read by our Client in memory and over HTTP and by the official SDK's client
over HTTP; every `_meta.ui` is validated against the `schema.json` of the ext-apps package (with
`jsonschema`), every read content item against the MCP `TextResourceContents` model too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import Annotated, Any

import jsonschema
import mcp_types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client import advertise
from mcp_types import TextResourceContents

from conftest import TESTS
from http_helpers import http_server
from mcp_resolve import Client, Context, MCPServer, Resolve
from mcp_resolve.apps import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    Apps,
    ResourceCsp,
    ResourcePermissions,
    client_supports_apps,
)
from mcp_resolve.resources import Resource

pytestmark = pytest.mark.anyio

SCHEMA_PATH = (
    TESTS
    / "node"
    / "node_modules"
    / "@modelcontextprotocol"
    / "ext-apps"
    / "dist"
    / "src"
    / "generated"
    / "schema.json"
)
URI = "ui://weather-server/dashboard-template"
HTML = "<!DOCTYPE html><html><body><div id='w'>Loading...</div></body></html>"
DECLARES_APPS = {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}
ERAS = ["2026-07-28", "legacy"]

# The specification's examples, as a client reads them.
SPEC_TOOL_META = {"ui": {"resourceUri": URI, "visibility": ["model", "app"]}}
SPEC_RESOURCE_UI = {
    "csp": {
        "connectDomains": ["https://api.openweathermap.org"],
        "resourceDomains": ["https://cdn.jsdelivr.net"],
    },
    "prefersBorder": True,
}
SPEC_LISTING = {
    "uri": URI,
    "name": "weather_dashboard",
    "description": "Interactive weather dashboard widget",
    "mimeType": APP_MIME_TYPE,
    "_meta": {"ui": SPEC_RESOURCE_UI},
}
SPEC_CONTENT = {"uri": URI, "mimeType": APP_MIME_TYPE, "text": HTML, "_meta": {"ui": SPEC_RESOURCE_UI}}


def _schema(name: str) -> dict[str, Any]:
    document = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return {"$schema": document["$schema"], "$defs": document["$defs"], "$ref": f"#/$defs/{name}"}


def valid_ui(kind: str, ui: Any) -> None:
    """`ui` fits the ext-apps schema's `McpUiToolMeta` or `McpUiResourceMeta` (raises otherwise)."""
    jsonschema.Draft202012Validator(_schema(kind)).validate(ui)


# -- the server ------------------------------------------------------------------------------
STOCK = {"A1": 4, "B2": 0}
RESTOCKED: list[tuple[str, int]] = []


def stock_level(order_id: str) -> int:
    return STOCK[order_id]


def build() -> MCPServer:
    apps = Apps()
    apps.add_html_resource(
        URI,
        HTML,
        name="weather_dashboard",
        description="Interactive weather dashboard widget",
        csp=ResourceCsp(
            connect_domains=["https://api.openweathermap.org"], resource_domains=["https://cdn.jsdelivr.net"]
        ),
        prefers_border=True,
    )
    apps.add_html_resource(
        "ui://weather-server/camera.html",
        "<p>camera</p>",
        permissions=ResourcePermissions(camera={}, clipboard_write={}),
        domain="a1b2c3.claudemcpcontent.com",
        prefers_border=False,
    )

    @apps.tool(
        resource_uri=URI,
        visibility=["model", "app"],
        name="get_weather",
        description="Get current weather for a location",
    )
    def get_weather(location: str, ctx: Context) -> str:
        view = "view" if client_supports_apps(ctx) else "text only"
        extension = ctx.client_supports_extension(EXTENSION_ID)
        return f"{location}: 21C ({view}, declared={extension})"

    @apps.tool(resource_uri=URI, visibility=["app"], description="Restock an order's items")
    def restock(order_id: str, units: Annotated[int, Resolve(stock_level)]) -> str:
        RESTOCKED.append((order_id, units))
        return f"restocked {units}"

    return MCPServer("weather", extensions=[apps])


@asynccontextmanager
async def our_client(transport: str, mode: str, declares: bool) -> AsyncIterator[Client]:
    extensions = DECLARES_APPS if declares else None
    if transport == "memory":
        async with Client(build(), mode=mode, extensions=extensions) as client:  # type: ignore[arg-type]
            yield client
        return
    async with (
        http_server(build().streamable_http_app()) as base,
        Client(f"{base}/mcp", mode=mode, extensions=extensions) as client,  # type: ignore[arg-type]
    ):
        yield client


def _dump(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(by_alias=True, exclude_none=True, mode="json"))


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def _observe(client: Any, declares: bool) -> dict[str, Any]:
    """What a client reads of the server's Apps: the same from ours and the official one."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    resources = {_dump(r)["uri"]: _dump(r) for r in (await client.list_resources()).resources}
    read = await client.read_resource(URI)
    weather = await client.call_tool("get_weather", {"location": "Paris"})
    RESTOCKED.clear()
    restocked = await client.call_tool("restock", {"order_id": "A1", "units": 999})
    return {
        "tool_meta": {name: _dump(tool).get("_meta") for name, tool in tools.items()},
        "restock_schema": _dump(tools["restock"])["inputSchema"],
        "listing": resources,
        "contents": [_dump(item) for item in read.contents],
        "weather": _text(weather),
        "restock": (_text(restocked), list(RESTOCKED)),
    }


def _check(seen: dict[str, Any], declares: bool) -> None:
    assert seen["tool_meta"]["get_weather"] == SPEC_TOOL_META
    assert seen["tool_meta"]["restock"] == {"ui": {"resourceUri": URI, "visibility": ["app"]}}
    for meta in seen["tool_meta"].values():
        valid_ui("McpUiToolMeta", meta["ui"])
    # An app-only tool is still a tool: its resolved parameter is no input, and a value sent is ignored.
    assert seen["restock_schema"]["properties"] == {"order_id": {"title": "Order Id", "type": "string"}}
    assert seen["restock"] == ("restocked 4", [("A1", 4)])
    assert seen["listing"][URI] == SPEC_LISTING
    camera = seen["listing"]["ui://weather-server/camera.html"]
    assert camera["mimeType"] == APP_MIME_TYPE
    assert camera["_meta"]["ui"] == {
        "permissions": {"camera": {}, "clipboardWrite": {}},
        "domain": "a1b2c3.claudemcpcontent.com",
        "prefersBorder": False,
    }
    for listed in seen["listing"].values():
        valid_ui("McpUiResourceMeta", listed["_meta"]["ui"])
    assert seen["contents"] == [SPEC_CONTENT]  # on the read content item, where hosts read it
    for item in seen["contents"]:
        mcp_types.TextResourceContents.model_validate(item)
        valid_ui("McpUiResourceMeta", item["_meta"]["ui"])
    expected = "view, declared=True" if declares else "text only, declared=False"
    assert seen["weather"] == f"Paris: 21C ({expected})"


# -- our Client, in memory and over HTTP, both eras -------------------------------------------
@pytest.mark.parametrize("declares", [True, False])
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", ["memory", pytest.param("http", marks=pytest.mark.slow)])
async def test_our_client_reads_the_views_as_the_spec_shows(
    transport: str, mode: str, declares: bool
) -> None:
    async with our_client(transport, mode, declares) as client:
        seen = await _observe(client, declares)
        modern = mode != "legacy"
        assert client.protocol_version == ("2026-07-28" if modern else "2025-11-25")
        # Advertised on 2026-07-28; the handshake era's capabilities have no such field (as the official).
        assert client.server_capabilities.get("extensions") == ({EXTENSION_ID: {}} if modern else None)
    _check(seen, declares)


# -- the official SDK's client, over HTTP, both eras ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("declares", [True, False])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_reads_the_views_as_the_spec_shows(mode: str, declares: bool) -> None:
    extensions = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})] if declares else None
    async with (
        http_server(build().streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode, extensions=extensions) as client,
    ):
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        seen = await _observe(client, declares)
    _check(seen, declares)


# -- registration and advertisement ------------------------------------------------------------
def test_the_extension_is_advertised_only_with_a_view_or_a_ui_tool() -> None:
    assert "extensions" not in MCPServer("bare", extensions=[Apps()]).capabilities(modern=True)
    only_view = Apps()
    only_view.add_html_resource("ui://a/view.html", "<p>a</p>")
    capabilities = MCPServer("view", extensions=[only_view]).capabilities(modern=True)
    assert capabilities["extensions"] == {EXTENSION_ID: {}}
    assert "extensions" not in MCPServer("view", extensions=[only_view]).capabilities(modern=False)


def test_a_tool_naming_an_unregistered_view_is_refused_naming_both() -> None:
    apps = Apps()
    apps.add_html_resource("ui://desk/other.html", "<p>x</p>")

    @apps.tool(resource_uri="ui://desk/receipt.html", name="refund_order")
    def refund(order_id: str) -> str:
        return order_id

    with pytest.raises(ValueError, match=r"'refund_order'.*'ui://desk/receipt\.html'"):
        MCPServer("desk", extensions=[apps])


def test_what_apps_refuses_when_declared() -> None:
    apps = Apps()
    with pytest.raises(ValueError, match="ui:// scheme"):
        apps.add_html_resource("https://desk/receipt.html", "<p>x</p>")
    with pytest.raises(ValueError, match="ui:// scheme"):
        apps.tool(resource_uri="file:///receipt.html")
    with pytest.raises(ValueError, match="owns _meta"):
        apps.tool(resource_uri="ui://a/b.html", meta={"ui": {}})
    with pytest.raises(ValueError, match="visibility"):
        apps.tool(resource_uri="ui://a/b.html", visibility=["everyone"])  # type: ignore[list-item]
    plain = Resource.from_function(lambda: "x", uri="ui://a/b.txt", mime_type="text/plain")
    with pytest.raises(ValueError, match="text/html;profile=mcp-app"):
        apps.add_resource(plain)


async def test_a_prebuilt_resource_gets_the_app_type_and_keeps_its_meta() -> None:
    apps = Apps()
    ui = {"ui": {"csp": {"connectDomains": []}}}
    apps.add_resource(Resource.from_function(lambda: "<p>disk</p>", uri="ui://a/disk.html", meta=ui))
    async with Client(MCPServer("disk", extensions=[apps])) as client:
        read = await client.read_resource("ui://a/disk.html")
    assert [_dump(item) for item in read.contents] == [
        {"uri": "ui://a/disk.html", "mimeType": APP_MIME_TYPE, "text": "<p>disk</p>", "_meta": ui}
    ]


async def test_contents_a_view_builds_itself_still_carry_its_meta() -> None:
    """A function returning its own contents (a list of them) keeps the view's `_meta.ui` on each,
    unless an item brings a `_meta` of its own: the spec's hosts read it there."""
    apps = Apps()
    ui = {"ui": {"prefersBorder": True}}

    def built() -> list[TextResourceContents]:
        return [
            TextResourceContents(uri="ui://a/built.html", mimeType=APP_MIME_TYPE, text="<p>one</p>"),
            TextResourceContents(
                uri="ui://a/built.html", mimeType=APP_MIME_TYPE, text="<p>two</p>", _meta={"own": 1}
            ),
        ]

    apps.add_resource(Resource.from_function(built, uri="ui://a/built.html", meta=ui))
    async with Client(MCPServer("built", extensions=[apps])) as client:
        read = await client.read_resource("ui://a/built.html")
    assert [_dump(item).get("_meta") for item in read.contents] == [ui, {"own": 1}]


def test_the_schema_check_catches_what_the_spec_forbids() -> None:
    """The validation above is not vacuous: a tool's `_meta.ui` may not carry a CSP, nor a view a bad one."""
    with pytest.raises(jsonschema.ValidationError):
        valid_ui("McpUiToolMeta", {"resourceUri": URI, "csp": {}})
    with pytest.raises(jsonschema.ValidationError):
        valid_ui("McpUiResourceMeta", {"csp": {"connectDomain": ["x"]}})
    with pytest.raises(jsonschema.ValidationError):
        valid_ui("McpUiToolMeta", {"resourceUri": URI, "visibility": ["everyone"]})


# -- official Apps code, ported by its import --------------------------------------------------
CLOCK_HTML = "<!DOCTYPE html><html><body><time id='t'></time></body></html>"


async def test_the_official_docstring_example_ports_by_its_import() -> None:
    from mcp_resolve.server import MCPServer as PortedServer
    from mcp_resolve.server.apps import Apps as PortedApps

    # The example of mcp/server/apps.py, with `mcp.server` imports changed to `mcp_resolve.server`.
    apps = PortedApps()

    @apps.tool(resource_uri="ui://clock/app.html", description="Current time")
    def get_time(ctx: Context) -> str:
        return datetime.now(timezone.utc).isoformat()

    apps.add_html_resource("ui://clock/app.html", CLOCK_HTML)

    mcp = PortedServer("clock", extensions=[apps])

    async with Client(mcp, extensions=DECLARES_APPS) as client:
        assert client.server_capabilities["extensions"] == {EXTENSION_ID: {}}
        tools = (await client.list_tools()).tools
        assert [(t.name, t.meta) for t in tools] == [
            ("get_time", {"ui": {"resourceUri": "ui://clock/app.html"}})
        ]
        now = datetime.fromisoformat(_text(await client.call_tool("get_time", {})))
        assert now.tzinfo is not None
        listed = [_dump(r) for r in (await client.list_resources()).resources]
        assert listed == [
            {
                "uri": "ui://clock/app.html",
                "name": "ui://clock/app.html",
                "description": "",
                "mimeType": APP_MIME_TYPE,
            }
        ]
        read = await client.read_resource("ui://clock/app.html")
        assert [_dump(c) for c in read.contents] == [
            {"uri": "ui://clock/app.html", "mimeType": APP_MIME_TYPE, "text": CLOCK_HTML}
        ]
