"""The handshake era (2024-11-05 .. 2025-11-25): `initialize`, session state, mid-call questions."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import pydantic_core
from mcp_types import LoggingLevel
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from ..context import LOG_LEVELS
from ..errors import INVALID_PARAMS, MCPError, ToolError
from ..resolve.questions import Question
from .extension_ids import check_declared_extensions

if TYPE_CHECKING:
    from ..context import SendRequest
    from .serves import DescribesServer

__all__ = [
    "HandshakeState",
    "LiveQuestioner",
    "finish_result",
    "initialize",
    "set_level",
    "subscribe",
    "undeclared_session",
]

logger = logging.getLogger("mcp_resolve.protocol")

_MODERN_ONLY_RESULT_KEYS = ("resultType", "ttlMs", "cacheScope")
MAX_CLIENT_BYTES = 64 * 1024
"""The most JSON a session keeps of `initialize`'s `capabilities` and `clientInfo` together: a real
client sends a few hundred bytes, and a session keeps them (in a fleet, in its stored record) for its
whole life."""
MAX_SUBSCRIPTIONS = 1000
MAX_SUBSCRIPTION_BYTES = 64 * 1024
"""What one session's resource subscriptions may hold: URIs, and their bytes (UTF-8) together."""


@dataclass
class HandshakeState:
    """What `initialize` settled for one connection (a stdio process or an HTTP session)."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: LoggingLevel | None = None
    initialized: bool = False
    subscriptions: set[str] = field(default_factory=set)
    """Resource URIs the client asked to hear about (`notifications/resources/updated`); bounded by
    `MAX_SUBSCRIPTIONS` and `MAX_SUBSCRIPTION_BYTES`."""


def initialize(server: DescribesServer, params: dict[str, Any]) -> tuple[HandshakeState, dict[str, Any]]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise MCPError(INVALID_PARAMS, "Invalid params: initialize needs a string 'protocolVersion'")
    capabilities = params.get("capabilities", {})
    if not isinstance(capabilities, dict):
        raise MCPError(INVALID_PARAMS, "Invalid params: 'capabilities' must be an object")
    check_declared_extensions(capabilities)
    client_info = params.get("clientInfo")
    kept = len(pydantic_core.to_json([capabilities, client_info]))
    if kept > MAX_CLIENT_BYTES:
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: 'capabilities' and 'clientInfo' take {kept} bytes of JSON, over the limit of "
            f"{MAX_CLIENT_BYTES}",
        )
    version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    state = HandshakeState(version, capabilities, client_info if isinstance(client_info, dict) else None)
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": server.capabilities(modern=False),
        "serverInfo": server.server_info(),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return state, result


def undeclared_session() -> HandshakeState:
    """The session of a client that sent `notifications/initialized` without `initialize`.

    It told us nothing, so it gets what the official SDK assumes in that case:
    the newest handshake version, no capabilities, no client info. Questions
    that need a capability are then refused with -32021 (naming it), exactly
    as for a client that initialized and declared none.
    """
    logger.info(
        "a client sent notifications/initialized without initialize; serving it protocol %s "
        "with no declared capabilities",
        LATEST_HANDSHAKE_VERSION,
    )
    return HandshakeState(LATEST_HANDSHAKE_VERSION, {}, None, initialized=True)


def set_level(state: HandshakeState, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
    state.log_level = level
    return {}


def subscribe(state: HandshakeState, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`resources/subscribe` and `resources/unsubscribe`: session state, like the log level."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise MCPError(INVALID_PARAMS, f"Invalid params: {method} needs a string 'uri'")
    if method == "resources/subscribe":
        if uri not in state.subscriptions:
            held = sum(len(kept.encode()) for kept in state.subscriptions) + len(uri.encode())
            if len(state.subscriptions) >= MAX_SUBSCRIPTIONS or held > MAX_SUBSCRIPTION_BYTES:
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid params: this session's subscriptions are full (at most {MAX_SUBSCRIPTIONS} "
                    f"URIs, {MAX_SUBSCRIPTION_BYTES} bytes in all); unsubscribe from one first",
                )
        state.subscriptions.add(uri)
    else:
        state.subscriptions.discard(uri)
    return {}


def finish_result(result: dict[str, Any]) -> dict[str, Any]:
    """Drop what only 2026-07-28 results carry: strict handshake-era peers reject unknown keys."""
    for key in _MODERN_ONLY_RESULT_KEYS:
        result.pop(key, None)
    return result


class LiveQuestioner:
    """Asks each resolver question as a server-to-client request tied to the call.

    One question at a time per call: a person answers one form at a time.
    """

    def __init__(self, send_request: SendRequest) -> None:
        self._send_request = send_request
        self._lock = anyio.Lock()

    async def ask(self, wire_key: str, question: Question) -> Any:
        async with self._lock:
            try:
                return await self._send_request(question["method"], question["params"])
            except MCPError as exc:
                raise ToolError(
                    f"the client could not answer {question['method']} for resolver {wire_key}: {exc.message}"
                ) from None

    def input_required(
        self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None
    ) -> Any:  # pragma: no cover - never pending here
        raise RuntimeError("handshake-era questions are answered mid-call")

    def carried(self) -> Mapping[str, Any]:
        """Nothing: a handshake-era call is one request, so `carry=True` has no later round to serve."""
        return {}
