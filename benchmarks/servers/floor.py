"""The HTTP floor: a bare ASGI app that answers W1, served by the same uvicorn as the frameworks.

Not a framework and not an MCP server: it checks nothing, keeps nothing and
knows three methods. It exists to be measured. Every framework's HTTP figure
stands on uvicorn, the event loop and the kernel's loopback, driven by the
same client; this app costs next to nothing on top of them, so its CPU per
call is that shared floor, and a framework's CPU per call less the floor is
what the framework itself spends. The driver serves W1 on 2026-07-28 from it
alongside the frameworks (README.md, "HTTP, fifth round").

Run `python -m benchmarks.servers.floor http PORT`.
"""

from __future__ import annotations

import sys
from typing import Any

import pydantic_core

from ._common import serve_from_argv

_SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "floor", "version": "0"}}
_ECHO = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "outputSchema": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]},
}
_JSON = [(b"content-type", b"application/json")]


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
            "tools": [_ECHO],
            "ttlMs": 0,
            "cacheScope": "public",
            "resultType": "complete",
            "_meta": _SERVER_INFO,
        }
    if method == "tools/call" and params.get("name") == "echo":
        text = params["arguments"]["text"]
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"result": text},
            "isError": False,
            "resultType": "complete",
            "_meta": _SERVER_INFO,
        }
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
    result = _result(request["method"], request.get("params") or {})
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
