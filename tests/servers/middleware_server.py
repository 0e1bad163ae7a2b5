"""A server with a middleware chain (log, rewrite, refuse, crash, answer itself) and one extension.

Written against the official SDK's names with only the import lines changed
(`mcp.server.mcpserver` -> `mcp_resolve`, `mcp.shared.exceptions` ->
`mcp_resolve`). `build(sdk)` builds the same server on either SDK, so a test
can compare what the official client sees from both; run as a script it
serves ours over stdio (with the argument `official`, the official one).

The tool `seen` answers with what the middleware observed so far, so a test
reads the chain's order over any transport.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

from mcp_types import RequestParams

SECRET = "db-password=hunter2"
"""In the crashing middleware's exception: it must reach the log, never the client."""


class EchoParams(RequestParams):
    text: str


def build(sdk: str = "ours") -> Any:
    if sdk == "ours":
        from mcp_resolve import (
            Extension,
            MCPError,
            MCPServer,
            MethodBinding,
            ToolBinding,
            require_client_extension,
        )

        def refusal(code: int, message: str) -> Exception:
            return MCPError(code, message)
    else:
        from mcp.server.mcpserver import (
            Extension,
            MCPServer,
            MethodBinding,
            ToolBinding,
            require_client_extension,
        )
        from mcp.shared.exceptions import MCPError as OfficialError

        def refusal(code: int, message: str) -> Exception:
            return OfficialError(code=code, message=message)

    seen: list[str] = []
    ran: list[str] = []

    async def outer(ctx: Any, call_next: Any) -> Any:
        kind = "notification" if ctx.request_id is None else "request"
        seen.append(f"outer> {ctx.method} ({kind})")
        result = await call_next(ctx)
        seen.append(f"outer< {ctx.method}")
        return result

    async def inner(ctx: Any, call_next: Any) -> Any:
        seen.append(f"inner> {ctx.method}")
        try:
            return await call_next(ctx)
        except Exception as exc:  # observes a failure below it, then lets it go on
            seen.append(f"inner! {ctx.method} {type(exc).__name__}")
            raise

    async def policy(ctx: Any, call_next: Any) -> Any:
        params = dict(ctx.params or {})
        name = params.get("name")
        if ctx.method == "tools/call" and name == "echo":
            arguments = {**(params.get("arguments") or {})}
            arguments["text"] = f"{arguments.get('text', '')} (rewritten)"
            return await call_next(replace(ctx, params={**params, "arguments": arguments}))
        if ctx.method == "tools/call" and name == "forbidden":
            raise refusal(-32600, "forbidden by policy")
        if ctx.method == "tools/call" and name == "crash":
            raise RuntimeError(f"middleware crashed: {SECRET}")
        if ctx.method == "prompts/list":
            # A short-circuit owns its envelope in the official SDK, so this one is complete for
            # 2026-07-28; ours would fill the missing keys itself (tests/protocol/test_middleware.py).
            answer: dict[str, Any] = {"prompts": [{"name": "from-middleware"}]}
            if ctx.protocol_version == "2026-07-28":
                answer.update(resultType="complete", ttlMs=0, cacheScope="public")
            return answer
        return await call_next(ctx)

    async def echo_method(ctx: Any, params: EchoParams) -> dict[str, Any]:
        require_client_extension(ctx, "com.example/echo")
        return {"echoed": params.text}

    def shout(text: str) -> str:
        """Upper-case the text (contributed by the echo extension)."""
        return text.upper()

    class Echo(Extension):  # type: ignore[misc, valid-type]
        identifier = "com.example/echo"

        def settings(self) -> dict[str, Any]:
            return {"loud": True}

        def tools(self) -> list[Any]:
            return [ToolBinding(shout, meta={"com.example/echo": {"kind": "shout"}})]

        def methods(self) -> list[Any]:
            return [MethodBinding("com.example/echo", EchoParams, echo_method)]

        async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
            if params.name == "shout":
                require_client_extension(ctx, "com.example/echo")
            return await call_next(ctx)

    mcp = MCPServer("middleware-demo", extensions=[Echo()], middleware=[outer, inner])
    mcp.middleware.append(policy)  # the list is live, as in the official SDK

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @mcp.tool()
    def forbidden() -> str:
        """Never runs: the policy middleware refuses it."""
        ran.append("forbidden")
        return "ran"

    @mcp.tool()
    def crash() -> str:
        """Never runs: the middleware in front of it crashes."""
        ran.append("crash")
        return "ran"

    @mcp.tool()
    def observed() -> list[str]:
        """What the middleware saw so far (and which refused tools ran: none should)."""
        return [*seen, *(f"ran {name}" for name in ran)]

    return mcp


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    build(sys.argv[1] if len(sys.argv) > 1 else "ours").run()  # `official`: the official SDK's server
