"""Agreeing on the protocol era with a server: `server/discover` (2026-07-28) or the `initialize` handshake.

`mode="auto"` probes with `server/discover` and, when the server stays silent
or refuses the method, falls back to the handshake; a server that answers
the probe by naming only versions we do not speak is an error, not a
handshake-era server. So is a probe the server never answered (the
connection failed) or that could not be signed (the OAuth login failed): the
server's era is unknown then, and a handshake that happened to work a moment
later would settle on the older protocol with a server that speaks the new
one (and, for a login, send the person to the browser again). What the
server said about itself comes back as a `ServerHello`.

Timeouts here are for servers that never answer: the time a person spends on
a login page (the OAuth flow's clock) does not count against them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from ..errors import UNSUPPORTED_PROTOCOL_VERSION, MCPError
from .auth.errors import AuthorizationError
from .pipes import undelivered
from .session import ClientSession

__all__ = ["Mode", "ServerHello", "check_mode", "negotiate", "within"]

T = TypeVar("T")
Mode = Literal["auto", "legacy", "2026-07-28"]
"""The era a Client asks for: probe and fall back, the handshake era, or a modern version."""

Clock = Callable[[], float]
"""Seconds spent waiting for a person so far (an OAuth flow's `time_with_person`)."""


@dataclass
class ServerHello:
    """What a server said about itself when the era was agreed on."""

    protocol_version: str
    capabilities: dict[str, Any]
    info: dict[str, Any] | None
    instructions: str | None


def check_mode(mode: str) -> None:
    """Refuse a `mode` that names no era we speak (ValueError)."""
    if mode not in ("auto", "legacy", *MODERN_PROTOCOL_VERSIONS):
        raise ValueError(
            f"mode must be 'auto', 'legacy' or one of {list(MODERN_PROTOCOL_VERSIONS)}, got {mode!r}"
        )


async def negotiate(
    session: ClientSession,
    mode: str,
    *,
    meta: Callable[[str], dict[str, Any]],
    capabilities: Callable[[], dict[str, Any]],
    client_info: dict[str, Any],
    timeout: float | None,
    probe_timeout: float,
    clock: Clock | None,
) -> ServerHello:
    """The era `mode` asks for, agreed with the server over `session` within `timeout` seconds.

    `meta(version)` is the client's 2026-07-28 `_meta` at `version`;
    `capabilities()` and `client_info` are what the handshake declares.
    `clock`, when the HTTP auth has one, says how long a person took to log
    in: that time does not count against either timeout.
    """
    return await within(
        _negotiate(session, mode, meta, capabilities, client_info, probe_timeout, clock), timeout, clock
    )


async def _negotiate(
    session: ClientSession,
    mode: str,
    meta: Callable[[str], dict[str, Any]],
    capabilities: Callable[[], dict[str, Any]],
    client_info: dict[str, Any],
    probe_timeout: float,
    clock: Clock | None,
) -> ServerHello:
    if mode in MODERN_PROTOCOL_VERSIONS:
        return _modern(await _discover(session, meta, mode, clock))
    if mode == "auto":
        try:
            result = await _discover(session, meta, MODERN_PROTOCOL_VERSIONS[-1], clock, probe_timeout)
        except AuthorizationError:
            raise  # no login: the server's era is beside the point
        except MCPError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                raise MCPError(
                    exc.code, f"the server supports none of our modern versions: {exc.message}", exc.data
                ) from None
            if undelivered(exc.data):
                raise  # the server said nothing: no era can be read from that
        except TimeoutError:
            pass
        else:
            return _modern(result)
    return await _handshake(session, capabilities(), client_info)


async def _discover(
    session: ClientSession,
    meta: Callable[[str], dict[str, Any]],
    version: str,
    clock: Clock | None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """`server/discover` at `version`; a refusal naming versions we speak is retried once with the newest.

    The retry happens even when that is the version just sent: the server
    said which versions it takes, and its word is the one to follow.
    """
    try:
        return await within(session.request("server/discover", {"_meta": meta(version)}), timeout, clock)
    except MCPError as exc:
        offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
        common = [v for v in MODERN_PROTOCOL_VERSIONS if isinstance(offered, list) and v in offered]
        if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not common:
            raise
    return await within(session.request("server/discover", {"_meta": meta(common[-1])}), timeout, clock)


def _modern(discover: dict[str, Any]) -> ServerHello:
    supported = discover.get("supportedVersions") or []
    common = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
    if not common:
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION, f"no common protocol version (server offers {supported})"
        )
    return ServerHello(
        protocol_version=common[-1],
        capabilities=discover.get("capabilities") or {},
        info=(discover.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo"),
        instructions=discover.get("instructions"),
    )


async def _handshake(
    session: ClientSession, capabilities: dict[str, Any], client_info: dict[str, Any]
) -> ServerHello:
    result = await session.request(
        "initialize",
        {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": capabilities,
            "clientInfo": client_info,
        },
    )
    version = result.get("protocolVersion")
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"the server chose protocol version {version!r}, which we do not speak",
        )
    hello = ServerHello(
        protocol_version=version,
        capabilities=result.get("capabilities") or {},
        info=result.get("serverInfo"),
        instructions=result.get("instructions"),
    )
    await session.notify("notifications/initialized")
    return hello


async def within(operation: Awaitable[T], timeout: float | None, clock: Clock | None) -> T:
    """`operation` within `timeout` seconds, not counting the time a person spends logging in.

    The probe's timeout is for servers that never answer; a 401 that
    opens a browser must not make a modern server look like a legacy one.
    """
    if timeout is None or clock is None:
        with anyio.fail_after(timeout):
            return await operation
    started, waited = anyio.current_time(), clock()
    with anyio.CancelScope(deadline=started + timeout) as scope:
        async with anyio.create_task_group() as group:

            async def extend() -> None:
                while True:
                    scope.deadline = started + timeout + (clock() - waited)
                    await anyio.sleep(0.2)

            group.start_soon(extend)
            try:
                result = await operation
            except Exception as exc:  # raised as itself below, not wrapped in an ExceptionGroup
                failure: Exception | None = exc
            else:
                failure = None
            group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result
    raise TimeoutError
