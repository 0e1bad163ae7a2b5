"""The HTTP floor: a bare ASGI app that answers W1 and W3n, served by the same uvicorn as the frameworks.

Not a framework and not an MCP server: it checks nothing, keeps nothing and
knows three methods. It exists to be measured. Every framework's HTTP figure
stands on uvicorn, the event loop and the kernel's loopback, driven by the
same client; this app costs next to nothing on top of them, so its CPU per
call is that shared floor, and a framework's CPU per call less the floor is
what the framework itself spends. Its `nap` (W3n: one 20 ms await) is the
floor under W3's latency in the same way: what the host, uvicorn and the
client make of a call that waits 20 ms, with no framework at all, and the W3
target over HTTP is judged against it. The driver serves W1 and W3n on
2026-07-28 from it alongside the frameworks (README.md, "Reading the figures").

Run `python -m benchmarks.servers.floor http PORT`.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pydantic_core

from ._common import FAN_OUT_DELAY, serve_from_argv

_SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "floor", "version": "0"}}
_ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "outputSchema": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]},
}
_NAP = {
    "name": "nap",
    "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
    "outputSchema": {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
}
_JSON = [(b"content-type", b"application/json")]


def _tool_result(value: Any) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": str(value)}],
        "structuredContent": {"result": value},
        "isError": False,
        "resultType": "complete",
        "_meta": _SERVER_INFO,
    }


def _result(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """What the official client's W1 conversation needs, as the frameworks answer it; None for anything else."""
    if method == "server/discover":
        return {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": False}},
            "ttlMs": 0,
            "cacheScope": "public",
            "resultType": "complete",
            "_meta": _SERVER_INFO,
        }
    if method == "tools/list":
        return {
            "tools": [_ECHO, _NAP],
            "ttlMs": 0,
            "cacheScope": "public",
            "resultType": "complete",
            "_meta": _SERVER_INFO,
        }
    if method == "tools/call" and params.get("name") == "echo":
        return _tool_result(params["arguments"]["text"])
    return None


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":  # lifespan: returning at once tells uvicorn there is nothing to run
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = pydantic_core.from_json(body)
    if "id" not in request:  # a notification: accepted, nothing to say
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    params = request.get("params") or {}
    if request["method"] == "tools/call" and params.get("name") == "nap":
        await asyncio.sleep(FAN_OUT_DELAY)
        result: dict[str, Any] | None = _tool_result(params["arguments"]["x"])
    else:
        result = _result(request["method"], params)
    if result is None:
        answer = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "not here"}}
    else:
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    out = pydantic_core.to_json(answer)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*_JSON, (b"content-length", b"%d" % len(out))],
        }
    )
    await send({"type": "http.response.body", "body": out})


def _no_stdio() -> None:
    sys.exit("the floor is served over HTTP only: python -m benchmarks.servers.floor http PORT")


if __name__ == "__main__":
    serve_from_argv(_no_stdio, lambda: app)
