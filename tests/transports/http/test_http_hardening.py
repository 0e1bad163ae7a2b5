"""The HTTP endpoint under hostile or sloppy input, session rules, disconnects, headers, mounting, workers.

Raw httpx requests against a real uvicorn server: every refusal has the
status the Streamable HTTP spec names and a JSON-RPC error body without
internals, and a valid request right after it still succeeds.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from http_helpers import http_server, serving
from mcp_resolve import Client, Context, MCPServer, RequestStateSecurity
from mcp_resolve.server._deployment import check_state_keys
from mcp_resolve.transports.http import serve_http

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Probe:
    """What the server's tools report to the test thread."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.finished: list[str] = []
        self.finished_event = threading.Event()


class Name(BaseModel):
    name: str


def hardening_server(probe: Probe) -> MCPServer:
    mcp = MCPServer("http-hardening")

    @mcp.tool()
    async def whoami(ctx: Context) -> str:
        """Who the request's headers say is calling."""
        return (ctx.headers or {}).get("x-caller", "nobody")

    @mcp.tool()
    async def count_up(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return f"counted to {steps}"

    @mcp.tool()
    async def explode() -> str:
        raise RuntimeError("boom")

    @mcp.resource("note://explode")
    def broken() -> str:
        raise KeyError("internal")

    @mcp.tool()
    async def wait_forever() -> str:
        probe.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            probe.cancelled.set()
        return "never"

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        try:
            outcome = await ctx.elicit("Your name?", Name)
            probe.finished.append(f"answered {outcome.action}")
            return "asked"
        except BaseException as exc:
            probe.finished.append(f"failed: {exc}")
            raise
        finally:
            probe.finished_event.set()

    return mcp


def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return message


def modern(
    method: str, params: dict[str, Any] | None = None, *, version: str = MODERN, request_id: Any = 1
) -> tuple[bytes, dict[str, str]]:
    """A 2026-07-28 request body and the headers a correct client sends with it."""
    full = {**(params or {}), "_meta": {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: {}}}
    headers = {**BOTH, "mcp-protocol-version": version, "mcp-method": method}
    name = full.get("uri") if method == "resources/read" else full.get("name")
    if isinstance(name, str):
        headers["mcp-name"] = name
    return json.dumps(rpc(method, full, request_id)).encode(), headers


def initialize_body() -> bytes:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    return json.dumps(rpc("initialize", params)).encode()


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Probe]]:
    probe = Probe()
    with serving(hardening_server(probe).streamable_http_app()) as base:
        yield f"{base}/mcp", probe


async def open_session(http: httpx.AsyncClient, url: str) -> str:
    response = await http.post(url, content=initialize_body(), headers=BOTH)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    assert all(0x21 <= ord(c) <= 0x7E for c in session_id) and len(session_id) >= 32
    headers = {**BOTH, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    initialized = await http.post(
        url, json=rpc("notifications/initialized", request_id=None), headers=headers
    )
    assert initialized.status_code == 202 and initialized.content == b""
    return session_id


def session_headers(session_id: str) -> dict[str, str]:
    return {**BOTH, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}


def _with(headers: dict[str, str], **changes: str | None) -> dict[str, str]:
    out = dict(headers)
    for key, value in changes.items():
        name = key.replace("_", "-")
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _bad_inputs() -> list[Any]:
    body, headers = modern("tools/list")
    call_body, call_headers = modern("tools/call", {"name": "whoami", "arguments": {}})
    mismatched = modern("tools/list", version="v999.0.0")[0]
    unsupported_body, unsupported_headers = modern("tools/list", version="1999-01-01")
    no_meta = json.dumps(rpc("tools/list", {})).encode()
    unknown_body, unknown_headers = modern("unknown/method")
    huge = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"'
        + b"x" * (20 * 1024 * 1024)
        + b'"}}'
    )
    case = pytest.param
    return [
        case("POST", body, _with(headers, content_type="text/plain"), 415, -32600, id="wrong-content-type"),
        case("POST", body, _with(headers, accept=None), 406, -32600, id="missing-accept"),
        case("POST", body, _with(headers, accept="text/html"), 406, -32600, id="unacceptable-accept"),
        case("POST", b'{"jsonrpc": "2.0", "id": 1,', headers, 400, -32700, id="malformed-json"),
        case("POST", b"[1, 2]", headers, 400, -32600, id="batch"),
        case("POST", huge, headers, 413, -32600, id="20MB-body"),
        case("POST", json.dumps(rpc("tools/list")).encode(), BOTH, 400, -32600, id="missing-session-id"),
        case(
            "POST",
            json.dumps(rpc("tools/list")).encode(),
            _with(BOTH, mcp_session_id="nope"),
            404,
            -32600,
            id="unknown-session-id",
        ),
        case("POST", mismatched, headers, 400, -32020, id="protocol-version-header-mismatch"),
        case(
            "POST",
            body,
            _with(headers, mcp_protocol_version=None),
            400,
            -32020,
            id="modern-meta-without-header",
        ),
        case("POST", unsupported_body, unsupported_headers, 400, -32022, id="unsupported-version"),
        case("POST", no_meta, headers, 400, -32602, id="modern-header-without-meta"),
        case("POST", unknown_body, unknown_headers, 404, -32601, id="unknown-method"),
        case("POST", body, _with(headers, mcp_method="prompts/list"), 400, -32020, id="mcp-method-mismatch"),
        case("POST", body, _with(headers, mcp_method=None), 400, -32020, id="mcp-method-missing"),
        case(
            "POST", call_body, _with(call_headers, mcp_name="count_up"), 400, -32020, id="mcp-name-mismatch"
        ),
        case("POST", call_body, _with(call_headers, mcp_name=None), 400, -32020, id="mcp-name-missing"),
        case("POST", body, _with(headers, origin="http://evil.example"), 403, -32600, id="foreign-origin"),
        case("POST", body, _with(headers, host="evil.example.com"), 403, -32600, id="foreign-host"),
        case("PUT", body, headers, 405, -32600, id="method-not-allowed"),
        case("GET", b"", _with(BOTH, mcp_protocol_version=MODERN), 405, -32600, id="modern-get"),
        case("GET", b"", BOTH, 400, -32600, id="get-without-session"),
        case("DELETE", b"", _with(BOTH, mcp_session_id="nope"), 404, -32600, id="delete-unknown-session"),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "body", "headers", "status", "code"), _bad_inputs())
async def test_bad_input_gets_its_status_and_the_server_keeps_serving(
    served: tuple[str, Probe], method: str, body: bytes, headers: dict[str, str], status: int, code: int
) -> None:
    url, _probe = served
    async with httpx.AsyncClient() as http:
        del http.headers["accept"]  # httpx would send `Accept: */*` on its own
        response = await http.request(method, url, content=body, headers=headers)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        error = response.json()
        assert error["jsonrpc"] == "2.0" and error["error"]["code"] == code
        request_id = (
            json.loads(body).get("id") if status in (400, 404) and code not in (-32700, -32600) else None
        )
        assert error["id"] == request_id  # modern errors echo the request id; transport refusals have none
        assert "Traceback" not in response.text

        valid_body, valid_headers = modern("tools/call", {"name": "whoami", "arguments": {}})
        after = await http.post(url, content=valid_body, headers=valid_headers)
        assert after.status_code == 200
        assert after.json()["result"]["content"][0]["text"] == "nobody"


@pytest.mark.slow
async def test_remembered_header_verdicts_hold_when_the_same_values_come_again(
    served: tuple[str, Probe],
) -> None:
    """Host and media-type verdicts are kept by raw header value: a repeat is judged as the first was."""
    url, _probe = served
    body, headers = modern("tools/call", {"name": "whoami", "arguments": {}})
    async with httpx.AsyncClient() as http:
        del http.headers["accept"]
        for _ in range(3):
            foreign = await http.post(url, content=body, headers=_with(headers, host="evil.example.com"))
            assert foreign.status_code == 403
            plain = await http.post(url, content=body, headers=_with(headers, content_type="text/plain"))
            assert plain.status_code == 415
            html_only = await http.post(url, content=body, headers=_with(headers, accept="text/html"))
            assert html_only.status_code == 406
            sse_only = await http.post(url, content=body, headers=_with(headers, accept="text/event-stream"))
            assert sse_only.status_code == 200 and sse_only.headers["content-type"] == "text/event-stream"
            fine = await http.post(url, content=body, headers=headers)
            assert fine.status_code == 200 and fine.headers["content-type"] == "application/json"


@pytest.mark.slow
async def test_header_values_may_be_base64(served: tuple[str, Probe]) -> None:
    url, _probe = served
    body, headers = modern("tools/call", {"name": "whoami", "arguments": {}})
    async with httpx.AsyncClient() as http:
        encoded = await http.post(url, content=body, headers={**headers, "mcp-name": "=?base64?d2hvYW1p?="})
        assert encoded.status_code == 200, encoded.text
        garbled = await http.post(
            url, content=body, headers={**headers, "mcp-name": "=?base64?d2hvYW1p?="[:-3] + "?="}
        )
        assert garbled.status_code == 400 and garbled.json()["error"]["code"] == -32020
        shouted = await http.post(url, content=body, headers={**headers, "MCP-METHOD": "tools/call"})
        assert shouted.status_code == 200
        wrong_case = await http.post(url, content=body, headers={**headers, "mcp-method": "TOOLS/CALL"})
        assert wrong_case.status_code == 400 and wrong_case.json()["error"]["code"] == -32020


@pytest.mark.slow
async def test_failures_inside_handlers_leak_no_traceback(served: tuple[str, Probe]) -> None:
    url, _probe = served
    async with httpx.AsyncClient() as http:
        body, headers = modern("tools/call", {"name": "explode", "arguments": {}})
        tool = await http.post(url, content=body, headers=headers)
        assert tool.status_code == 200 and tool.json()["result"]["isError"] is True
        body, headers = modern("resources/read", {"uri": "note://explode"})
        resource = await http.post(url, content=body, headers=headers)
        # The official SDK's wording for a resource that crashed; what it raised stays in the log.
        assert resource.json()["error"] == {
            "code": -32603,
            "message": "Error reading resource note://explode",
            "data": {"uri": "note://explode"},
        }
        for response in (tool, resource):
            assert "Traceback" not in response.text and 'File "' not in response.text
            assert "boom" not in response.text and "internal" not in response.text


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


@pytest.mark.slow
async def test_response_shape_follows_accept(served: tuple[str, Probe]) -> None:
    url, _probe = served
    body, headers = modern("tools/call", {"name": "count_up", "arguments": {"steps": 2}})
    message = json.loads(body)
    message["params"]["_meta"]["progressToken"] = "t"
    body = json.dumps(message).encode()
    async with httpx.AsyncClient() as http:
        streamed = await http.post(url, content=body, headers=headers)
        assert streamed.headers["content-type"] == "text/event-stream"
        assert streamed.headers["x-accel-buffering"] == "no"
        events = _events(streamed.text)
        assert [e.get("method") for e in events] == ["notifications/progress", "notifications/progress", None]
        assert [e["params"]["progress"] for e in events[:2]] == [1, 2]
        assert events[-1]["result"]["content"][0]["text"] == "counted to 2"

        json_only = await http.post(url, content=body, headers={**headers, "accept": "application/json"})
        assert json_only.headers["content-type"] == "application/json"
        assert json_only.json()["result"]["content"][0]["text"] == "counted to 2"  # progress dropped

        list_body, list_headers = modern("tools/list")
        sse_only = await http.post(
            url, content=list_body, headers={**list_headers, "accept": "text/event-stream"}
        )
        assert sse_only.headers["content-type"] == "text/event-stream"
        assert len(_events(sse_only.text)[0]["result"]["tools"]) == 5


@pytest.mark.slow
async def test_handshake_session_lifecycle(served: tuple[str, Probe]) -> None:
    url, _probe = served
    async with httpx.AsyncClient(timeout=10) as http:
        session_id = await open_session(http, url)
        headers = session_headers(session_id)
        listed = await http.post(url, json=rpc("tools/list"), headers=headers)
        assert listed.status_code == 200 and listed.headers["mcp-session-id"] == session_id
        assert len(listed.json()["result"]["tools"]) == 5

        wrong_version = await http.post(
            url, json=rpc("tools/list"), headers={**headers, "mcp-protocol-version": "2025-03-26"}
        )
        assert wrong_version.status_code == 400
        stray_answer = await http.post(url, json={"jsonrpc": "2.0", "id": 99, "result": {}}, headers=headers)
        assert stray_answer.status_code == 202

        ended = anyio.Event()

        async def listen() -> None:
            async with http.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"] == "text/event-stream"
                opened.set()
                async for _chunk in stream.aiter_bytes():
                    pass
            ended.set()

        opened = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(listen)
            await opened.wait()
            deleted = await http.delete(url, headers=headers)
            assert deleted.status_code == 204
            await ended.wait()  # DELETE ended the session's GET stream

        gone = await http.post(url, json=rpc("tools/list"), headers=headers)
        assert gone.status_code == 404
        assert (await http.delete(url, headers=headers)).status_code == 404


@pytest.mark.slow
async def test_a_handshake_question_whose_stream_is_gone_fails_instead_of_hanging(
    served: tuple[str, Probe],
) -> None:
    url, probe = served
    probe.finished.clear()
    probe.finished_event.clear()
    async with httpx.AsyncClient(timeout=10) as http:
        session_id = await open_session(http, url)
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "ask_name", "arguments": {}}, request_id=7)
        async with http.stream("POST", url, json=call, headers=headers) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    assert json.loads(line[6:])["method"] == "elicitation/create"
                    break
        # The POST's connection is closed with the question unanswered.
        assert await anyio.to_thread.run_sync(probe.finished_event.wait, 10)
        assert probe.finished == ["failed: the client disconnected before answering"]
        ping = await http.post(url, json=rpc("ping", request_id=8), headers=headers)
        assert ping.json() == {"jsonrpc": "2.0", "id": 8, "result": {}}


@pytest.mark.slow
async def test_closing_a_modern_stream_cancels_the_call(served: tuple[str, Probe]) -> None:
    url, probe = served
    probe.started.clear()
    probe.cancelled.clear()
    body, headers = modern("tools/call", {"name": "wait_forever", "arguments": {}})

    async def call(http: httpx.AsyncClient) -> None:
        await http.post(url, content=body, headers=headers)

    async with httpx.AsyncClient(timeout=10) as http, anyio.create_task_group() as group:
        group.start_soon(call, http)
        assert await anyio.to_thread.run_sync(probe.started.wait, 10)
        group.cancel_scope.cancel()  # the client goes away mid-call
    assert await anyio.to_thread.run_sync(probe.cancelled.wait, 10)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_request_headers_reach_tools(served: tuple[str, Probe], mode: Any) -> None:
    url, _probe = served
    async with Client(url, mode=mode, headers={"X-Caller": "ada"}) as client:
        result = await client.call_tool("whoami", {})
        assert result.content[0].text == "ada"  # type: ignore[union-attr]
    async with httpx.AsyncClient() as http:  # per request, not per session
        session_id = await open_session(http, url)
        for caller in ("bo", "cy"):
            call = rpc("tools/call", {"name": "whoami", "arguments": {}})
            answer = await http.post(
                url, json=call, headers={**session_headers(session_id), "x-caller": caller}
            )
            assert answer.json()["result"]["content"][0]["text"] == caller


def counting_server(counts: dict[str, int]) -> MCPServer:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> Any:
        counts["enter"] += 1
        try:
            yield {"greeting": "hi"}
        finally:
            counts["exit"] += 1

    mcp = MCPServer("mounted", lifespan=lifespan)

    @mcp.tool()
    async def greet(ctx: Context) -> str:
        return str(ctx.lifespan_context["greeting"])

    return mcp


@pytest.mark.slow
@pytest.mark.parametrize("wired", [False, True], ids=["lazy-lifespan", "parent-runs-lifespan"])
async def test_mounted_inside_a_parent_starlette_app(wired: bool) -> None:
    counts = {"enter": 0, "exit": 0}
    mcp_app = counting_server(counts).streamable_http_app()

    async def health(_request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    routes = [Route("/health", health), Mount("/tools", app=mcp_app)]
    parent = Starlette(routes=routes, lifespan=mcp_app.router.lifespan_context if wired else None)
    async with http_server(parent) as base:
        assert counts["enter"] == (1 if wired else 0)
        for mode in ("auto", "legacy"):
            async with Client(f"{base}/tools/mcp", mode=mode) as client:  # type: ignore[arg-type]
                assert (await client.call_tool("greet", {})).content[0].text == "hi"  # type: ignore[union-attr]
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{base}/health")).text == "ok"
        assert counts == {"enter": 1, "exit": 0}
    assert counts == {"enter": 1, "exit": 1}


def test_workers_without_shared_keys_are_refused(caplog: pytest.LogCaptureFixture) -> None:
    ephemeral = MCPServer("fleet")
    assert ephemeral.request_state_security.is_ephemeral
    with pytest.raises(RuntimeError, match="MCP_RESOLVE_STATE_KEYS"):
        check_state_keys(ephemeral, 2)
    with pytest.raises(RuntimeError, match="MCP_RESOLVE_STATE_KEYS"):
        serve_http(ephemeral, workers=4, app_import="somewhere:app")
    with pytest.raises(RuntimeError, match="MCP_RESOLVE_STATE_KEYS"):
        ephemeral.run(transport="streamable-http", workers=2)

    keyed = MCPServer("fleet", request_state_security=RequestStateSecurity(keys=["k" * 48]))
    check_state_keys(keyed, 8)  # shared keys: any number of workers
    with pytest.raises(ValueError, match="app_import"):
        serve_http(keyed, workers=2)

    with caplog.at_level(logging.WARNING, logger="mcp_resolve.http"):
        check_state_keys(keyed, 1)
        check_state_keys(ephemeral, 1)
        check_state_keys(ephemeral, 1)
    warnings = [r.getMessage() for r in caplog.records if r.name == "mcp_resolve.http"]
    assert len(warnings) == 1 and "retries that arrive after a restart will be rejected" in warnings[0]


@pytest.mark.slow
async def test_idle_sessions_expire() -> None:
    app = hardening_server(Probe()).streamable_http_app(session_idle_timeout=0.0)
    async with http_server(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        first = (await http.post(url, content=initialize_body(), headers=BOTH)).headers["mcp-session-id"]
        await http.post(url, content=initialize_body(), headers=BOTH)
        stale = await http.post(url, json=rpc("tools/list"), headers=session_headers(first))
        assert stale.status_code == 404
        assert len(app.state.mcp_endpoint.sessions) <= 1


@pytest.mark.slow
async def test_cancelled_notification_stops_a_handshake_call(served: tuple[str, Probe]) -> None:
    url, probe = served
    probe.started.clear()
    probe.cancelled.clear()
    async with httpx.AsyncClient(timeout=10) as http:
        session_id = await open_session(http, url)
        headers = session_headers(session_id)
        outcome: list[httpx.Response] = []

        async def call() -> None:
            call = rpc("tools/call", {"name": "wait_forever", "arguments": {}}, request_id="slow")
            outcome.append(await http.post(url, json=call, headers=headers))

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            assert await anyio.to_thread.run_sync(probe.started.wait, 10)
            cancel = rpc("notifications/cancelled", {"requestId": "slow"}, request_id=None)
            assert (await http.post(url, json=cancel, headers=headers)).status_code == 202
        assert probe.cancelled.is_set()
        assert (
            outcome[0].status_code == 202 and outcome[0].content == b""
        )  # a cancelled request gets no answer


@pytest.mark.slow
async def test_a_json_only_client_cannot_be_asked_mid_call(served: tuple[str, Probe]) -> None:
    url, _probe = served
    async with httpx.AsyncClient(timeout=10) as http:
        session_id = await open_session(http, url)
        headers = {**session_headers(session_id), "accept": "application/json"}
        call = rpc("tools/call", {"name": "ask_name", "arguments": {}})
        answer = await http.post(url, json=call, headers=headers)
        assert answer.headers["content-type"] == "application/json"
        assert answer.status_code == 200
        assert "accepts only application/json" in answer.json()["error"]["message"]


@pytest.mark.slow
async def test_sessions_belong_to_the_principal_that_opened_them() -> None:
    app = hardening_server(Probe()).streamable_http_app(
        principal=lambda request: request.headers.get("x-user")
    )
    async with http_server(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        opened = await http.post(url, content=initialize_body(), headers={**BOTH, "x-user": "alice"})
        headers = session_headers(opened.headers["mcp-session-id"])
        mine = await http.post(url, json=rpc("tools/list"), headers={**headers, "x-user": "alice"})
        assert mine.status_code == 200
        theirs = await http.post(url, json=rpc("tools/list"), headers={**headers, "x-user": "mallory"})
        assert theirs.status_code == 404  # not "forbidden": the id reveals nothing to another principal


@pytest.mark.slow
async def test_session_count_is_bounded() -> None:
    app = hardening_server(Probe()).streamable_http_app(max_sessions=1)
    async with http_server(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        first = await http.post(url, content=initialize_body(), headers=BOTH)
        refused = await http.post(url, content=initialize_body(), headers=BOTH)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "60"
        assert "mcp-session-id" not in refused.headers
        await http.delete(url, headers=session_headers(first.headers["mcp-session-id"]))
        assert (await http.post(url, content=initialize_body(), headers=BOTH)).status_code == 200


class _Chunks:
    """An ASGI `receive` over fixed messages, counting how many were taken."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self.messages, self.taken = list(messages), 0

    async def __call__(self) -> dict[str, Any]:
        self.taken += 1
        return self.messages.pop(0)


def _chunk(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_read_body_whole_chunked_oversized_and_abandoned() -> None:
    from mcp_resolve.transports.http._wire.body import DRAIN_LIMIT, ClientGone, read_body

    # A body that arrives whole needs no declared length (not even a readable one).
    assert await read_body(_Chunks(_chunk(b"{}", False)), 10, b"junk") == b"{}"
    assert await read_body(_Chunks(_chunk(b"x" * 11, False)), 10, None) is None
    # In chunks: joined; past the limit, drained and refused.
    assert await read_body(_Chunks(_chunk(b"ab", True), _chunk(b"c", False)), 10, b"3") == b"abc"
    drained = _Chunks(_chunk(b"x" * 8, True), _chunk(b"x" * 8, True), _chunk(b"x", False))
    assert await read_body(drained, 10, None) is None and drained.taken == 3
    # Declared beyond what we would drain: refused after the first chunk, the rest left unread.
    huge = _Chunks(_chunk(b"x", True), _chunk(b"x", False))
    assert await read_body(huge, 10, str(10 + DRAIN_LIMIT + 1).encode()) is None and huge.taken == 1
    with pytest.raises(ClientGone):
        await read_body(_Chunks(_chunk(b"ab", True), {"type": "http.disconnect"}), 10, None)
