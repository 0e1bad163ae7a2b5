"""The everything server and the client features the conformance harness leans on, in seconds, without Node.

`make conformance` runs the official harness; these tests pin the same
behaviour closer to the code so a regression names its cause: the question
keys and rounds the harness expects on 2026-07-28, the forms it inspects on
2025-11-25, `Mcp-Param-*` checking, and the client's stream resumption and
version retry. The server is the real example served by uvicorn; the two
scripted peers stand in only for server behaviour ours does not have (closing
a stream mid-call, refusing a version it lists).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest
from mcp_types import ElicitRequestFormParams, LoggingMessageNotificationParams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conftest import EXAMPLES, load_module
from http_helpers import http_server, serving
from mcp_resolve import Client, InvalidSignature, MCPServer
from mcp_resolve.protocol.param_headers import decode_header_value, encode_header_value

MODERN = "2026-07-28"
ALL_CAPS = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
EVERYTHING = EXAMPLES / "everything"


@pytest.fixture(scope="module")
def everything() -> Iterator[ModuleType]:
    sys.path.insert(0, str(EVERYTHING))
    try:
        yield load_module(EVERYTHING / "server.py")
    finally:
        sys.path.remove(str(EVERYTHING))


@pytest.fixture(scope="module")
def url(everything: ModuleType) -> Iterator[str]:
    with serving(everything.mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


def post(
    url: str, method: str, params: dict[str, Any], *, caps: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """One 2026-07-28 request as the harness sends it; the HTTP status and the JSON-RPC response."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": ALL_CAPS if caps is None else caps,
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    name = params.get("uri") if method == "resources/read" else params.get("name")
    sent = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if isinstance(name, str):
        sent["Mcp-Name"] = name
    response = httpx.post(url, json=body, headers={**sent, **(headers or {})}, timeout=10)
    for line in response.text.splitlines():
        payload = line.removeprefix("data:").strip()
        if payload.startswith("{") and json.loads(payload).get("id") == 7:
            return response.status_code, json.loads(payload)
    raise AssertionError(f"no response in {response.text!r}")


def call(url: str, name: str, **params: Any) -> dict[str, Any]:
    status, response = post(url, "tools/call", {"name": name, "arguments": {}, **params})
    assert status == 200 and "result" in response, response
    return response["result"]  # type: ignore[no-any-return]


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# -- 2026-07-28: what the input-required scenarios look for -----------------------------------
@pytest.mark.slow
def test_tools_are_listed_as_the_harness_expects(url: str, everything: ModuleType) -> None:
    status, response = post(url, "tools/list", {})
    tools = {tool["name"]: tool for tool in response["result"]["tools"]}
    assert status == 200 and next(iter(tools)) == "test_simple_text"  # http-header-validation calls tools[0]
    assert all(tool["description"] and tool["inputSchema"]["type"] == "object" for tool in tools.values())
    assert tools["json_schema_2020_12_tool"]["inputSchema"] == everything.JSON_SCHEMA_2020_12
    assert tools["test_header_region"]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "asked"),
    [
        ("test_input_required_result_elicitation", {"user_name": "elicitation/create"}),
        ("test_input_required_result_sampling", {"capital_question": "sampling/createMessage"}),
        ("test_input_required_result_list_roots", {"client_roots": "roots/list"}),
        ("test_input_required_result_request_state", {"confirm": "elicitation/create"}),
        (
            "test_input_required_result_multiple_inputs",
            {
                "user_name": "elicitation/create",
                "greeting": "sampling/createMessage",
                "client_roots": "roots/list",
            },
        ),
    ],
)
def test_first_round_asks_under_the_expected_keys(url: str, tool: str, asked: dict[str, str]) -> None:
    result = call(url, tool)
    assert result["resultType"] == "input_required" and isinstance(result["requestState"], str)
    assert {key: request["method"] for key, request in result["inputRequests"].items()} == asked


@pytest.mark.slow
def test_multi_round_asks_step_two_only_after_step_one(url: str) -> None:
    first = call(url, "test_input_required_result_multi_round")
    assert list(first["inputRequests"]) == ["step1"]
    second = call(
        url,
        "test_input_required_result_multi_round",
        inputResponses={"step1": accept(name="Alice")},
        requestState=first["requestState"],
    )
    assert list(second["inputRequests"]) == ["step2"] and second["requestState"] != first["requestState"]
    third = call(
        url,
        "test_input_required_result_multi_round",
        inputResponses={"step2": accept(color="blue")},
        requestState=second["requestState"],
    )
    assert third["resultType"] == "complete" and third["content"][0]["text"] == "Alice likes blue"


@pytest.mark.slow
def test_a_first_round_uses_answers_it_recognises_and_ignores_the_rest(url: str) -> None:
    responses = {"user_name": accept(name="Alice"), "unknown_extra_key": accept(foo="bar")}
    result = call(url, "test_input_required_result_elicitation", inputResponses=responses)
    assert result["resultType"] == "complete" and result["content"][0]["text"] == "Hello, Alice!"
    unrelated = call(url, "test_input_required_result_elicitation", inputResponses={"wrong_key": accept(x=1)})
    assert list(unrelated["inputRequests"]) == ["user_name"]


@pytest.mark.slow
@pytest.mark.parametrize("responses", [None, {"user_name": 12345}, ["user_name"]])
def test_malformed_input_responses_are_invalid_params(url: str, responses: Any) -> None:
    params = {"name": "test_input_required_result_elicitation", "arguments": {}, "inputResponses": responses}
    _status, response = post(url, "tools/call", params)
    assert response["error"]["code"] == -32602


@pytest.mark.slow
def test_a_tampered_request_state_is_refused(url: str) -> None:
    state = call(url, "test_input_required_result_tampered_state")["requestState"]
    _status, response = post(
        url,
        "tools/call",
        {
            "name": "test_input_required_result_tampered_state",
            "arguments": {},
            "inputResponses": {"confirm": accept(ok=True)},
            "requestState": state + "-TAMPERED",
        },
    )
    assert response["error"] == {"code": -32602, "message": "Invalid or expired requestState"}


@pytest.mark.slow
def test_only_questions_the_client_can_answer_are_asked(url: str) -> None:
    _status, response = post(
        url,
        "tools/call",
        {"name": "test_input_required_result_capabilities", "arguments": {}},
        caps={"sampling": {}},
    )
    assert list(response["result"]["inputRequests"]) == ["capital_question"]


@pytest.mark.slow
def test_a_missing_capability_is_a_400_naming_it(url: str) -> None:
    status, response = post(url, "tools/call", {"name": "test_missing_capability", "arguments": {}}, caps={})
    assert status == 400 and response["id"] == 7
    assert response["error"]["code"] == -32021
    assert response["error"]["data"]["requiredCapabilities"] == {"sampling": {}}


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
)
def test_handshake_only_methods_are_not_found(url: str, method: str) -> None:
    status, response = post(url, method, {})
    assert (status, response["id"], response["error"]["code"]) == (404, 7, -32601)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("eu west", True),
        ("=?base64?ZXUgd2VzdA==?=", True),  # "eu west", Base64
        ("=?base64?ZXUgd2VzdA?=", False),  # bad padding
        ("us-east1", False),  # disagrees with the body
        (None, False),  # missing although the body sets it
    ],
)
def test_mirrored_param_header_must_match_the_body(url: str, header: str | None, accepted: bool) -> None:
    headers = {} if header is None else {"Mcp-Param-Region": header}
    status, response = post(
        url, "tools/call", {"name": "test_header_region", "arguments": {"region": "eu west"}}, headers=headers
    )
    if accepted:
        assert status == 200 and response["result"]["content"][0]["text"] == "Region: eu west"
    else:
        assert status == 400 and response["error"]["code"] == -32020


# -- 2025-11-25: the forms the SEP-1034/1330 scenarios inspect, and logging ---------------------
@pytest.mark.slow
@pytest.mark.anyio
async def test_legacy_forms_carry_defaults_and_every_enum_shape(url: str) -> None:
    forms: list[dict[str, Any]] = []

    async def answer(params: ElicitRequestFormParams) -> dict[str, Any]:
        schema = params.requested_schema
        forms.append(
            schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
        )
        return {"action": "decline"}

    async with Client(url, mode="legacy", elicitation_handler=answer) as client:
        for tool in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
            result = await client.call_tool(tool, {})
            assert result.content[0].text == "Elicitation completed: action=decline, content=null"  # type: ignore[union-attr]
    defaults, enums = (form["properties"] for form in forms)
    assert {name: prop["default"] for name, prop in defaults.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    assert (defaults["age"]["type"], defaults["score"]["type"]) == ("integer", "number")
    assert enums["untitledSingle"]["enum"] == ["option1", "option2", "option3"]
    assert "enum" not in enums["titledSingle"] and enums["titledSingle"]["oneOf"][0] == {
        "const": "value1",
        "title": "First Option",
    }
    assert enums["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
    assert enums["untitledMulti"]["items"] == {"type": "string", "enum": ["option1", "option2", "option3"]}
    assert enums["titledMulti"]["items"]["anyOf"][2] == {"const": "value3", "title": "Third Choice"}


@pytest.mark.slow
@pytest.mark.anyio
async def test_legacy_logging_reaches_a_client_that_set_a_level(url: str) -> None:
    logged: list[Any] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params.data)

    async with Client(url, mode="legacy", log_handler=on_log) as client:
        await client.call_tool("test_tool_with_logging", {})
    assert logged == ["Tool execution started", "Tool processing data", "Tool execution completed"]


# -- what the client must do for the client scenarios -------------------------------------------
def test_header_values_are_encoded_as_the_spec_table_says() -> None:
    table = {
        "us-west1": "us-west1",
        "Hello, 世界": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        " padded ": "=?base64?IHBhZGRlZCA=?=",
        "line1\nline2": "=?base64?bGluZTEKbGluZTI=?=",
        "=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
    }
    for value, encoded in table.items():
        assert encode_header_value(value) == encoded
        assert decode_header_value(encoded) == value
    assert (encode_header_value(42), encode_header_value(False)) == ("42", "false")
    for malformed in ("=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="):
        with pytest.raises(ValueError):
            decode_header_value(malformed)


@pytest.mark.parametrize(
    "properties",
    [
        {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"},
        },
        {"a": {"type": "number", "x-mcp-header": "Amount"}},
        {"a": {"type": "string", "x-mcp-header": "My Region"}},
        {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}},
    ],
    ids=["duplicate", "number", "space", "inside-items"],
)
def test_invalid_header_declarations_are_refused_at_registration(properties: dict[str, Any]) -> None:
    mcp = MCPServer("bad-headers")

    def never(a: Any = None, b: Any = None) -> str:
        return "never"

    with pytest.raises(InvalidSignature, match="x-mcp-header"):
        mcp.tool(input_schema={"type": "object", "properties": properties})(never)


def _sse(*events: str) -> StreamingResponse:
    async def body() -> Any:
        for event in events:
            yield event

    return StreamingResponse(body(), media_type="text/event-stream", headers={"mcp-session-id": "s-1"})


@pytest.mark.slow
@pytest.mark.anyio
async def test_client_resumes_a_stream_the_server_closed_before_answering() -> None:
    """As SEP-1699 polling servers do: a priming event with an id, then the stream ends; the answer waits on GET."""
    gets: list[str | None] = []
    pending: list[Any] = []

    async def endpoint(request: Request) -> Response:
        if request.method == "GET":
            gets.append(request.headers.get("last-event-id"))
            if request.headers.get("last-event-id") != "ev-1" or not pending:
                return _sse(": the server-to-client stream\n\n")
            answer = {
                "jsonrpc": "2.0",
                "id": pending.pop(),
                "result": {"content": [{"type": "text", "text": "back"}]},
            }
            return _sse(f"id: ev-2\ndata: {json.dumps(answer)}\n\n")
        message = await request.json()
        if "id" not in message:
            return Response(status_code=202)
        if message["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "p", "version": "1"},
            }
            return JSONResponse(
                {"jsonrpc": "2.0", "id": message["id"], "result": result}, headers={"mcp-session-id": "s-1"}
            )
        pending.append(message["id"])
        return _sse("id: ev-1\nretry: 10\ndata: \n\n")

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])
    async with http_server(app) as base, Client(f"{base}/mcp", mode="legacy") as client:
        result = await client.call_tool("test_reconnection", {})
    assert result.content[0].text == "back"  # type: ignore[union-attr]
    assert (
        "ev-1" in gets and None in gets
    )  # the resumption, and the standalone stream opened after initialize


@pytest.mark.slow
@pytest.mark.anyio
async def test_client_retries_discovery_at_a_version_the_server_names() -> None:
    """The request-metadata scenario refuses the first request whatever it says, naming what it takes."""
    seen: list[tuple[str, str]] = []

    async def endpoint(request: Request) -> Response:
        message = await request.json()
        seen.append((message["method"], request.headers["mcp-protocol-version"]))
        if len(seen) == 1:
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": MODERN},
            }
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": error}, status_code=400)
        result = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "tools": []}
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    async with http_server(app) as base, Client(f"{base}/mcp", mode=MODERN) as client:
        await client.list_tools()
    assert seen == [("server/discover", MODERN), ("server/discover", MODERN), ("tools/list", MODERN)]
