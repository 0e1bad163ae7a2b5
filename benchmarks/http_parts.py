"""Where a 2026-07-28 HTTP echo's instructions go: each part of our path counted alone under callgrind.

`instructions.py` counts a whole W1 call through our app and, with `--floor`,
through the bare ASGI app of `servers/floor.py`; this splits ours into the
parts the README's "Where the time goes" names. Each part runs on inputs
prepared once (the W1 request's headers, body, decoded message, arguments),
2,000 times after the same warm-up as every other part; a run that makes no
call of it is subtracted, so one call's cost is left. Parts are nested (a
request's `respond` contains the tool's call, which contains its argument
validation), so the README's table subtracts the inner ones from the outer.

    python benchmarks/http_parts.py               # every part (a few minutes)
    python benchmarks/http_parts.py decode scope  # some of them
    python benchmarks/http_parts.py --drive decode 2000   # what valgrind runs

It reaches into our private modules on purpose: it measures them.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CALLS = 2000


def _parts() -> dict[str, Callable[[], Awaitable[Any]]]:
    """Each part as a coroutine function of no arguments, on the W1 request (imports our server)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    import pydantic_core

    from benchmarks.instructions import FIRST_ROUNDS, _app, call, post_scope
    from benchmarks.servers.floor import _tool_result as floor_app_result
    from benchmarks.servers.floor import app as floor_app
    from mcp_resolve._concurrency import asyncio_cancel_scope
    from mcp_resolve.context import Context
    from mcp_resolve.protocol.jsonrpc import decode, result_message
    from mcp_resolve.protocol.modern import _dispatch
    from mcp_resolve.protocol.modern._envelope import check_envelope, finish_result
    from mcp_resolve.server._methods import call_tool
    from mcp_resolve.transports.http._exchange import endpoint as endpoint_module
    from mcp_resolve.transports.http._exchange.exchange import Exchange
    from mcp_resolve.transports.http._wire.body import read_body
    from mcp_resolve.transports.http._wire.headers import RequestHeaders, modern_rejection
    from mcp_resolve.transports.http._wire.media import post_media

    app = _app()
    endpoint = app.state.mcp_endpoint
    server = endpoint.server
    body = FIRST_ROUNDS["W1"]
    message = decode(body)
    meta, params = message.params["_meta"], message.params
    tool = server.registry.tools["echo"]
    arguments = params["arguments"]
    values = tool.signature.validate(arguments)
    answer = result_message(1, finish_result(server, "tools/call", tool.convert_result("hello")))
    scope = post_scope(body, "echo")
    whole = {"type": "http.request", "body": body, "more_body": False}

    async def receive() -> dict[str, Any]:
        return whole

    async def send(message: dict[str, Any]) -> None:
        pass

    async def no_sink(message: dict[str, Any]) -> None:
        pass

    scope_class = asyncio_cancel_scope()
    options = endpoint.options

    async def nothing() -> None:
        pass

    async def transport_checks() -> None:
        """What the endpoint checks before the request's work: Host, media types, body, version, headers."""
        headers = RequestHeaders(scope["headers"])
        endpoint._screen(headers)
        raw = headers.raw
        post_media(raw.get(b"content-type"), raw.get(b"accept"))
        await read_body(receive, options.max_body_bytes, raw.get(b"content-length"))
        headers.value(b"mcp-protocol-version")
        headers.value(b"mcp-session-id")
        modern_rejection(message, headers)
        endpoint._principal(scope, receive)
        endpoint_module._address(scope)

    headers = RequestHeaders(scope["headers"])

    async def t_headers() -> None:
        RequestHeaders(scope["headers"])

    async def t_screen() -> None:
        endpoint._screen(headers)

    async def t_media() -> None:
        post_media(headers.raw.get(b"content-type"), headers.raw.get(b"accept"))

    async def t_body() -> None:
        await read_body(receive, options.max_body_bytes, headers.raw.get(b"content-length"))

    async def t_rejection() -> None:
        modern_rejection(message, headers)

    async def t_who() -> None:
        endpoint._principal(scope, receive)
        endpoint_module._address(scope)

    async def json_decode() -> None:
        decode(body)

    async def respond() -> None:
        """The request served: envelope, dispatch, the tool's call, the result finished; not written."""
        request = decode(body)
        await _dispatch.respond(server, request, request.params["_meta"], no_sink, None, None)

    async def envelope() -> None:
        check_envelope(meta)

    async def tools_call() -> None:
        """The `tools/call` handler: the name and arguments checked, the tool's call, the result's era check."""
        await call_tool(server, params, Context(lambda: None))

    async def tool_call() -> None:
        """The tool's call: its arguments validated, the body run, its value as a CallToolResult."""
        await tool.call(arguments, Context(lambda: None))

    async def validation() -> None:
        tool.signature.validate(arguments)

    async def tool_body() -> None:
        await tool.signature.invoke(values, Context(lambda: None))

    async def convert() -> None:
        tool.convert_result("hello")

    async def finish() -> None:
        result_message(1, finish_result(server, "tools/call", {"content": [], "isError": False}))

    async def encode_write() -> None:
        """The answer encoded and written as JSON (both ASGI messages) by a fresh exchange."""
        exchange = Exchange(
            True, True, options.sse_ping_interval, True, status_of=endpoint_module._modern_status
        )
        exchange._send = send
        await exchange.sink(answer)

    async def exchange_run() -> None:
        """The exchange around a ready answer: its anyio scope, first-pause callback, the JSON write, the end."""
        exchange = Exchange(
            True, True, options.sse_ping_interval, True, status_of=endpoint_module._modern_status
        )
        await exchange.run(_ready(answer), receive, send)

    async def anyio_scope() -> None:
        with scope_class():
            pass

    async def ours() -> None:
        """Our app's whole call, on a no-op ASGI receive and send."""
        await app(scope, receive, send)

    async def floor() -> None:
        """The floor's app, on the same receive and send."""
        await floor_app(scope, receive, send)

    floor_answer = {"jsonrpc": "2.0", "id": 1, "result": floor_app_result("hello")}

    async def floor_decode() -> None:
        """The floor's reading of the body: the JSON parse alone."""
        pydantic_core.from_json(body)

    async def floor_write() -> None:
        """The floor's answer encoded and written (both ASGI messages)."""
        out = pydantic_core.to_json(floor_answer)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(out))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": out})

    async def driver_ours() -> None:
        """One W1 call of `instructions.py`'s driver (what it counts)."""
        await call(app, "W1")

    return {
        "nothing": nothing,
        "ours": ours,
        "floor": floor,
        "transport": transport_checks,
        "t_headers": t_headers,
        "t_screen": t_screen,
        "t_media": t_media,
        "t_body": t_body,
        "t_rejection": t_rejection,
        "t_who": t_who,
        "decode": json_decode,
        "respond": respond,
        "envelope": envelope,
        "tools_call": tools_call,
        "tool_call": tool_call,
        "validation": validation,
        "body": tool_body,
        "convert": convert,
        "finish": finish,
        "encode_write": encode_write,
        "exchange_run": exchange_run,
        "scope": anyio_scope,
        "floor_decode": floor_decode,
        "floor_write": floor_write,
        "driver": driver_ours,
    }


async def _ready(message: dict[str, Any]) -> dict[str, Any]:
    return message


def drive(part: str, calls: int) -> None:
    import uvloop

    async def main() -> None:
        parts = _parts()
        from benchmarks.instructions import _app, call

        app = _app()
        for _ in range(30):  # the same warm-up for every part, and the caches of a served app
            await call(app, "W1")
            for run in parts.values():
                await run()
        run = parts[part]
        for _ in range(calls):
            await run()

    uvloop.run(main())


def count(part: str, baseline: int) -> int:
    collected = _collected(part, CALLS)
    return (collected - baseline) // CALLS


def _collected(part: str, calls: int) -> int:
    sys.path[:0] = [str(ROOT)]
    from benchmarks.instructions import callgrind_total

    return callgrind_total(__file__, "--drive", part, str(calls))


PART_NAMES = [
    "ours",
    "floor",
    "floor_decode",
    "floor_write",
    "driver",
    "transport",
    "decode",
    "respond",
    "envelope",
    "tools_call",
    "tool_call",
    "validation",
    "body",
    "convert",
    "finish",
    "encode_write",
    "exchange_run",
    "scope",
]
TRANSPORT_PARTS = ["t_headers", "t_screen", "t_media", "t_body", "t_rejection", "t_who"]
"""The transport checks one by one (not run unless named)."""


def main(argv: list[str]) -> int:
    if argv[:1] == ["--drive"]:
        drive(argv[1], int(argv[2]))
        return 0
    chosen = argv or PART_NAMES
    unknown = [name for name in chosen if name not in PART_NAMES + TRANSPORT_PARTS]
    if unknown:
        print(f"unknown part(s) {unknown}; choose from {PART_NAMES + TRANSPORT_PARTS}", file=sys.stderr)
        return 2
    _collected("nothing", 0)  # compiles what is stale, so that no counted run does
    baseline = _collected("nothing", CALLS)
    for part in chosen:
        print(f"{part:13s} {count(part, baseline):>9,} instructions per call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
