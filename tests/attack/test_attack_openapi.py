"""Hostile OpenAPI descriptions and hostile APIs: every walk and every answer is bounded.

Descriptions: recursive and mutually recursive `$ref`s, a `$ref` loop with
nothing behind it, a reference outside the document, nesting past the
bound, a 100 000-value enum, operation names that collide once sanitised.
APIs (the FastAPI order desk, in process): an answer larger than the cap,
one that never comes, an error page repeating the caller's credentials at
length.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from mcp_resolve import Client, MCPError, MCPServer
from mcp_resolve.bridges import BridgedTool
from mcp_resolve.bridges._openapi_schema import MAX_DEPTH, MAX_ENUM
from mcp_resolve.bridges.openapi import OpenAPIError, openapi_components
from openapi_app import TOKEN, build_app

pytestmark = pytest.mark.anyio

UNUSED = httpx.AsyncClient(base_url="http://unused")


def spec_with(
    schemas: dict[str, Any], body: dict[str, Any], paths: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "hostile", "version": "1"},
        "paths": paths
        or {
            "/x": {
                "post": {
                    "operationId": "x",
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {
                        "200": {"description": "ok", "content": {"application/json": {"schema": body}}}
                    },
                }
            }
        },
        "components": {"schemas": schemas},
    }


def only_tool(spec: dict[str, Any]) -> dict[str, Any]:
    (tool,) = openapi_components(spec, UNUSED)
    assert isinstance(tool, BridgedTool)
    return tool.definition()


def test_recursive_refs_stay_pointers_not_expansions() -> None:
    schemas = {
        "Node": {
            "type": "object",
            "properties": {
                "next": {"$ref": "#/components/schemas/Node"},
                "other": {"$ref": "#/components/schemas/Other"},
            },
        },
        "Other": {"type": "object", "properties": {"back": {"$ref": "#/components/schemas/Node"}}},
    }
    definition = only_tool(spec_with(schemas, {"$ref": "#/components/schemas/Node"}))
    schema = definition["inputSchema"]
    assert schema["properties"]["next"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Other"]["properties"]["back"] == {"$ref": "#/$defs/Node"}
    assert definition["outputSchema"]["properties"]["other"] == {"$ref": "#/$defs/Other"}
    assert len(json.dumps(definition)) < 2_000


def test_a_ref_loop_with_nothing_behind_it_is_refused() -> None:
    schemas = {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"}}
    spec = spec_with(schemas, {"type": "object"})
    spec["paths"]["/x"]["post"]["requestBody"] = {"$ref": "#/components/requestBodies/Loop"}
    spec["components"]["requestBodies"] = {"Loop": {"$ref": "#/components/requestBodies/Loop"}}
    with pytest.raises(OpenAPIError, match=r"more than \d+ references"):
        openapi_components(spec, UNUSED)
    # The schema loop alone is finite: two pointers.
    definition = only_tool(
        spec_with(schemas, {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}})
    )
    assert definition["inputSchema"]["$defs"] == {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}


def test_references_outside_the_document_and_dangling_ones_are_refused() -> None:
    with pytest.raises(OpenAPIError, match="not local to the document"):
        only_tool(spec_with({}, {"$ref": "http://169.254.169.254/latest/meta-data"}))
    with pytest.raises(OpenAPIError, match="points at nothing"):
        only_tool(
            spec_with({}, {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Missing"}}})
        )


def test_nesting_past_the_bound_is_refused() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_DEPTH + 5):
        deep = {"type": "array", "items": deep}
    with pytest.raises(OpenAPIError, match="nested deeper than"):
        only_tool(spec_with({}, {"type": "object", "properties": {"a": deep}}))
    chain = {
        f"S{i}": {"type": "object", "properties": {"n": {"$ref": f"#/components/schemas/S{i + 1}"}}}
        for i in range(500)
    }
    chain["S500"] = {"type": "string"}
    with pytest.raises(OpenAPIError, match="nested deeper than"):
        only_tool(spec_with(chain, {"$ref": "#/components/schemas/S0"}))


def test_a_huge_enum_keeps_its_type_and_loses_its_list() -> None:
    values = [f"v{i}" for i in range(100_000)]
    small = ["a", "b"]
    body = {
        "type": "object",
        "properties": {"big": {"type": "string", "enum": values}, "small": {"type": "string", "enum": small}},
    }
    definition = only_tool(spec_with({}, body))
    assert definition["inputSchema"]["properties"]["big"] == {"type": "string"}
    assert definition["inputSchema"]["properties"]["small"]["enum"] == small
    assert len(json.dumps(definition)) < 10 * MAX_ENUM


def test_names_colliding_after_sanitising_get_distinct_names() -> None:
    ok = {"200": {"description": "ok"}}
    paths = {
        "/a": {
            "get": {"operationId": "get items", "responses": ok},
            "post": {"operationId": "get/items", "responses": ok},
        },
        "/b": {
            "get": {"operationId": "get_items", "responses": ok},
            "put": {"operationId": "x" * 300, "responses": ok},
        },
        "/c": {"get": {"operationId": "x" * 300 + "y", "responses": ok}, "delete": {"responses": ok}},
        "/c/": {"delete": {"responses": ok}},
    }
    names = [c.definition()["name"] for c in openapi_components(spec_with({}, {}, paths), UNUSED)]
    assert names[:3] == ["get_items", "get_items_2", "get_items_3"]
    assert names[3] == "x" * 64 and names[4] == "x" * 62 + "_2"
    assert names[5:] == ["delete_c", "delete_c_2"]
    assert len(set(names)) == len(names)
    # And two such servers cannot make one tool shadow another: each keeps its own name.
    mcp = MCPServer.from_openapi(spec_with({}, {}, paths), UNUSED)
    assert sorted(mcp.registry.tools) == sorted(names)


def desk(**options: Any) -> MCPServer:
    app = build_app()
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://desk",
        headers={"authorization": f"Bearer {TOKEN}"},
    )
    return MCPServer.from_fastapi(app, client=client, **options)


async def test_an_answer_larger_than_the_cap_is_an_error_not_a_memory_spike() -> None:
    async with Client(desk(max_response_bytes=64 * 1024)) as client:
        small = await client.call_tool("big", {"kib": 16})
        huge = await client.call_tool("big", {"kib": 4096})
    assert not small.is_error and len(small.content[0].text) == 16 * 1024
    assert huge.is_error and "larger than 65536 bytes" in huge.content[0].text
    assert len(huge.content[0].text) < 300


async def test_an_answer_that_never_comes_ends_at_the_deadline() -> None:
    async with Client(desk(timeout=0.5)) as client:
        with anyio.fail_after(10):
            late = await client.call_tool("slow", {})
    assert late.is_error and "no complete answer within 0.5 s" in late.content[0].text


async def test_an_error_page_echoing_credentials_is_bounded_and_redacted() -> None:
    async with Client(desk()) as client:
        crashed = await client.call_tool("crash", {})
    text = crashed.content[0].text
    assert crashed.is_error and "HTTP 500 Internal Server Error" in text
    assert TOKEN not in text and "[redacted]" in text
    assert len(text) < 800 and "bytes in all" in text


def test_incoming_credentials_are_never_forwarded_and_calls_are_always_bounded() -> None:
    with pytest.raises(ValueError, match="authorization is never forwarded"):
        desk(forward_headers=["Authorization"])
    for bad in (
        {"timeout": 0},
        {"timeout": float("inf")},
        {"timeout": float("nan")},
        {"max_response_bytes": 0},
    ):
        with pytest.raises(ValueError, match="must be positive"):
            desk(**bad)


class _Bearer(httpx.Auth):
    """Credentials added per request by an auth flow: never in `client.headers`."""

    def auth_flow(self, request: httpx.Request) -> Any:
        request.headers["Authorization"] = f"Bearer {TOKEN}"
        yield request


async def test_credentials_an_auth_flow_added_are_redacted_too() -> None:
    app = build_app()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://desk", auth=_Bearer())
    async with Client(MCPServer.from_fastapi(app, client=client)) as session:
        allowed = await session.call_tool("get_order", {"order_id": 1})
        crashed = await session.call_tool("crash", {})
    assert not allowed.is_error  # the flow's token reached the API
    assert (
        crashed.is_error and TOKEN not in crashed.content[0].text and "[redacted]" in crashed.content[0].text
    )


def recording_client(
    seen: list[str], base_url: str = "https://api.example/v1/tenant-42/"
) -> httpx.AsyncClient:
    """An upstream that records every URL it is asked for and answers 200."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url}")
        return httpx.Response(200, json={"ok": True})

    return httpx.AsyncClient(base_url=base_url, transport=httpx.MockTransport(handler))


PATH_SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/orgs/{org}/repos/{repo}": {
            "delete": {
                "operationId": "delete_repo",
                "parameters": [
                    {"name": "org", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}},
                ],
                "responses": {"204": {"description": "gone"}},
            }
        }
    },
}


async def test_dot_segment_and_empty_path_values_never_leave_the_route() -> None:
    seen: list[str] = []
    mcp = MCPServer.from_openapi(PATH_SPEC, client=recording_client(seen))
    async with Client(mcp) as client:
        for org, repo in ((("..", "..")), ("acme", ""), (".", "x"), ("acme", "..")):
            result = await client.call_tool("delete_repo", {"org": org, "repo": repo})
            assert result.is_error and "cannot be" in result.content[0].text
        fine = await client.call_tool("delete_repo", {"org": "acme", "repo": "%2e%2e"})
    assert not fine.is_error
    assert seen == ["DELETE https://api.example/v1/tenant-42/orgs/acme/repos/%252e%252e"]


async def test_a_resource_template_refuses_dot_segment_path_values() -> None:
    from mcp_resolve.bridges.openapi import MCPType, RouteMap

    seen: list[str] = []
    mcp = MCPServer.from_openapi(
        PATH_SPEC
        | {
            "paths": {
                "/users/{user_id}/avatar": {
                    "get": {
                        "operationId": "avatar",
                        "parameters": [
                            {"name": "user_id", "in": "path", "required": True, "schema": {"type": "string"}}
                        ],
                        "responses": {"200": {"description": "ok"}},
                    }
                }
            }
        },
        client=recording_client(seen, "https://api.example"),
        route_maps=[RouteMap(MCPType.RESOURCE_TEMPLATE)],
    )
    async with Client(mcp) as client:
        for value in (".", "..", "%2E%2E", "%2E"):
            with pytest.raises(MCPError):
                await client.read_resource(f"resource://avatar/{value}")
        await client.read_resource("resource://avatar/alice")
    assert seen == ["GET https://api.example/users/alice/avatar"]


def _alice() -> str:
    return "alice"


async def test_hide_covers_a_renamed_parameter_and_any_header_case() -> None:
    from mcp_resolve import Resolve

    cid = {"name": "customer_id", "in": "path", "required": True, "schema": {"type": "string"}}
    tenant = {"name": "x-tenant", "in": "header", "required": True, "schema": {"type": "string"}}
    body = {"type": "object", "properties": {"customer_id": {"type": "string"}, "text": {"type": "string"}}}
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/customers/{customer_id}/notes": {
                "post": {
                    "operationId": "add_note",
                    "parameters": [cid, tenant],
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.url.path} {request.headers['x-tenant']} {request.content.decode()}")
        return httpx.Response(200, json={})

    client = httpx.AsyncClient(base_url="https://api.example", transport=httpx.MockTransport(handler))
    hide = {"customer_id": Resolve(_alice), "X-Tenant": Resolve(_alice)}
    mcp = MCPServer.from_openapi(spec, client=client, hide=hide)
    async with Client(mcp) as session:
        (tool,) = (await session.list_tools()).tools
        assert sorted(tool.input_schema["properties"]) == ["text"]
        sent = {"customer_id__path": "bob", "customer_id": "bob", "x-tenant": "bob", "text": "hi"}
        result = await session.call_tool("add_note", sent)
    assert not result.is_error
    assert seen == ['/customers/alice/notes alice {"text":"hi","customer_id":"alice"}']


def echo_client(handler: Any, **options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url="https://api.example", transport=httpx.MockTransport(handler), **options
    )


ECHO_SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/pets": {
            "post": {
                "operationId": "create_pet",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"name": {"type": "string"}}}
                        }
                    }
                },
                "responses": {"201": {"description": "ok"}},
            }
        },
        "/fail": {"get": {"operationId": "fail", "responses": {"200": {"description": "ok"}}}},
    },
}


async def test_a_credential_past_the_first_kilobytes_of_an_error_page_is_still_redacted() -> None:
    token = "eyJhbGciOiJSUzI1NiJ9." + "A" * 300 + ".sig"

    def handler(request: httpx.Request) -> httpx.Response:
        name = json.loads(request.content)["name"]  # an error page echoing a field, then the headers
        return httpx.Response(422, text=f"{name}|{request.headers['authorization']}")

    client = echo_client(handler, headers={"Authorization": f"Bearer {token}"})
    async with Client(MCPServer.from_openapi(ECHO_SPEC, client=client)) as session:
        for pad in (0, 440, 499):  # 4-byte characters move the token across any byte-based window
            result = await session.call_tool("create_pet", {"name": "\U0001f600" * pad})
            text = result.content[0].text
            assert result.is_error and "eyJhbGciOiJSUzI1NiJ9" not in text and "AAAA" not in text, pad


async def test_credentials_in_query_parameters_and_userinfo_are_redacted() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text=f"no route {request.url} for {request.url.userinfo.decode()}")

    client = httpx.AsyncClient(
        base_url="https://robot:pa55-word%21@api.example",
        params={"api_key": "sk_live_SECRET123", "page": "1234"},
        transport=httpx.MockTransport(handler),
    )
    async with Client(MCPServer.from_openapi(ECHO_SPEC, client=client)) as session:
        result = await session.call_tool("fail", {})
    text = result.content[0].text
    assert result.is_error and "HTTP 404" in text and "[redacted]" in text
    assert "sk_live_SECRET123" not in text and "pa55-word" not in text and "robot" not in text
    assert "page=1234" in text  # not a credential: left alone


async def test_header_values_with_line_breaks_controls_or_non_ascii_are_refused() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("x-trace", ""))
        return httpx.Response(200, json={})

    spec = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/echo": {
                "get": {
                    "operationId": "echo",
                    "parameters": [{"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    async with Client(MCPServer.from_openapi(spec, client=echo_client(handler))) as session:
        for bad in ("a\r\nX-Admin: 1", "a\nb", "caf\u00e9", "nul\x00", "del\x7f"):
            result = await session.call_tool("echo", {"X-Trace": bad})
            assert result.is_error and "printable ASCII" in result.content[0].text, bad
        fine = await session.call_tool("echo", {"X-Trace": "abc-123\tok"})
    assert not fine.is_error and seen == ["abc-123\tok"]


async def test_from_fastapi_stops_an_oversized_answer_as_the_app_writes_it() -> None:
    chunk, cap = 16 * 1024, 64 * 1024
    produced = 0
    api = FastAPI()

    @api.get("/export", operation_id="export")
    async def export() -> StreamingResponse:
        async def body() -> Any:
            nonlocal produced
            while produced < 4 * 1024 * 1024:  # 4 MiB at most, should the cap not hold
                produced += chunk
                yield b"x" * chunk
                await anyio.sleep(0)

        return StreamingResponse(body(), media_type="text/plain")

    async with Client(MCPServer.from_fastapi(api, max_response_bytes=cap, timeout=30)) as session:
        with anyio.fail_after(20):
            result = await session.call_tool("export", {})
    assert result.is_error and f"larger than {cap} bytes" in result.content[0].text
    assert produced <= cap + chunk  # the app was stopped at the cap, not read whole into memory
