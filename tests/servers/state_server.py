"""A server for the requestState tests: every handler and resolver run leaves a line in an events file.

The events file is how a test proves that a rejected token ran nothing, even
in another process. Configured by environment (so a test can start several
differently keyed or named processes from one file):

    MCP_RESOLVE_STATE_KEYS      the key ring, read by the framework's own default
    STATE_SERVER_NAME           server name, i.e. the audience (default "State Server")
    STATE_SERVER_EVENTS         events file (one line per handler or resolver run)
    STATE_SERVER_CLOCK_FILE     a file holding a clock offset in seconds, re-read on each use
    STATE_SERVER_CODEC_SECRET   use `HmacCodec` (a custom, sign-only codec) instead of keys
    STATE_SERVER_REPLAY_DB      a SQLite replay store at this path (default: in-process)
    STATE_SERVER_APP=refund     serve the refund desk example instead, counting refunds

`python tests/servers/state_server.py` serves stdio.
"""

# No `from __future__ import annotations`: the handlers are closures, so their annotations
# must be evaluated where the local resolvers are in scope.

import base64
import binascii
import functools
import hashlib
import hmac
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from mcp_types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel

from mcp_resolve import (
    Context,
    Elicit,
    InvalidRequestState,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    SqliteReplayStore,
)

ROOT = Path(__file__).resolve().parents[2]
REFUND_DESK = ROOT / "examples" / "refund_desk" / "server.py"


class Events:
    """Appends one line per run; a line is on disk before the response that follows it is sent."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def record(self, name: str) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(name + "\n")


class HmacCodec:
    """A custom sign-only codec: `base64url(data).hmac`. Malformed input raises ValueError on purpose,
    so the framework's fail-closed handling of foreign exceptions is exercised too."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _mac(self, body: str) -> str:
        return hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()

    def seal(self, data: bytes) -> str:
        body = base64.urlsafe_b64encode(data).decode()
        return f"{body}.{self._mac(body)}"

    def unseal(self, token: str) -> bytes:
        body, mac = token.split(".")  # ValueError on anything but exactly one dot
        if not hmac.compare_digest(mac, self._mac(body)):
            raise InvalidRequestState("HMAC mismatch")
        try:
            return base64.urlsafe_b64decode(body.encode())
        except binascii.Error as exc:
            raise InvalidRequestState("bad base64") from exc


def offset_clock(path: str) -> Callable[[], float]:
    def clock() -> float:
        text = Path(path).read_text(encoding="utf-8").strip() if os.path.exists(path) else ""
        return time.time() + (float(text) if text else 0.0)

    return clock


def security(env: Mapping[str, str]) -> RequestStateSecurity | None:
    """None (the framework default, from the environment) unless the test injects a clock or codec."""
    clock_file, secret = env.get("STATE_SERVER_CLOCK_FILE"), env.get("STATE_SERVER_CODEC_SECRET")
    options: dict[str, Any] = {"clock": offset_clock(clock_file)} if clock_file else {}
    if secret:
        return RequestStateSecurity(codec=HmacCodec(secret.encode()), **options)
    return RequestStateSecurity.from_env(**options) if options else None


class Color(BaseModel):
    color: str


def build(env: Mapping[str, str]) -> MCPServer:
    """The test server: resolver-backed tools, prompt and template, and a hand-written multi-round tool."""
    events = Events(env.get("STATE_SERVER_EVENTS"))
    db = env.get("STATE_SERVER_REPLAY_DB")
    mcp = MCPServer(
        env.get("STATE_SERVER_NAME", "State Server"),
        request_state_security=security(env),
        replay_store=SqliteReplayStore(db) if db else None,
    )

    async def ask_color(item: str) -> Color | Elicit[Color]:
        events.record("ask_color")
        return Elicit(f"Which color for {item}?", Color)

    @mcp.tool()
    async def pick(item: str, color: Annotated[Color, Resolve(ask_color)]) -> str:
        events.record("pick")
        return f"{item} in {color.color}"

    @mcp.tool()
    async def other(item: str, color: Annotated[Color, Resolve(ask_color)]) -> str:
        events.record("other")
        return f"other {item} in {color.color}"

    @mcp.prompt("pick")
    async def pick_prompt(item: str, color: Annotated[Color, Resolve(ask_color)]) -> str:
        events.record("pick_prompt")
        return f"Describe {item} in {color.color}"

    @mcp.resource("notes://{item}")
    async def note(item: str, color: Annotated[Color, Resolve(ask_color)]) -> str:
        events.record("note")
        return f"note on {item} in {color.color}"

    @mcp.tool()
    async def manual(step: str, ctx: Context) -> CallToolResult | InputRequiredResult:
        """Multi-round by hand: its own plaintext state, no resolvers."""
        events.record("manual")
        if ctx.request_state is None:
            question = {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": f"Confirm {step}?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                },
            }
            return InputRequiredResult.model_validate(
                {"inputRequests": {"confirm": question}, "requestState": f"manual-plaintext:{step}"}
            )
        typed = (ctx.input_responses or {}).get("confirm")  # an ElicitResult, as the official types it
        answer = typed.model_dump(exclude_none=True) if typed is not None else None
        text = f"state={ctx.request_state} answer={answer}"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return mcp


def build_refund_desk(env: Mapping[str, str]) -> MCPServer:
    """The refund desk as shipped (a fresh import), plus a refund counter around the tool it registered.

    The wrapper is registered with the desk's own `single_use` flag, so the
    example's declaration is what the tests exercise.
    """
    # A fixed module name: question keys derive from it, and a retry may reach another process.
    spec = importlib.util.spec_from_file_location("refund_desk", REFUND_DESK)
    assert spec is not None and spec.loader is not None
    desk = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = desk
    spec.loader.exec_module(desk)
    mcp: MCPServer = desk.mcp
    events = Events(env.get("STATE_SERVER_EVENTS"))
    db = env.get("STATE_SERVER_REPLAY_DB")
    if db:
        mcp.replay_store = SqliteReplayStore(db)
    tool = mcp.registry.tools["refund_order"]
    original = tool.fn

    @functools.wraps(original)
    async def refund_order(*args: Any, **kwargs: Any) -> Any:
        events.record("refund_order")
        return await original(*args, **kwargs)

    mcp.add_tool(refund_order, name=tool.name, single_use=tool.single_use)
    return mcp


if __name__ == "__main__":
    app = build_refund_desk if os.environ.get("STATE_SERVER_APP") == "refund" else build
    app(os.environ).run()
