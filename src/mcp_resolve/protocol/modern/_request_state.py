"""The sealing step: a multi-round call's `requestState` unsealed before it runs and sealed after.

The state a round hands the client is sealed (`mcp_resolve.sealing`) and
bound to the request that got it: the method, the tool, prompt or resource,
the arguments, the server and the principal. An echoed one is opened against
the echoing request's binding before any middleware or handler sees it, so
they only ever read plaintext, and a state minted for one call cannot steer
another. A `single_use` tool's state is also claimed here, before it runs
(`protocol.single_use` keeps the claim and its answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import INTERNAL_ERROR, InvalidRequestState, MCPError
from ...replay import ReplayStoreFull, RoundStore
from ...sealing import StateBinding, UnsealedState, digest_arguments
from ..single_use import SingleUse, claim_round

if TYPE_CHECKING:
    from ..hooks import RequestWatch
    from ..serves import SealsState

__all__ = ["BindingOnce", "open_state", "seal_state", "state_binding"]


def state_binding(
    server: SealsState, method: str, params: dict[str, Any], principal: str | None
) -> StateBinding:
    """What a state sealed for this request is bound to (and an echoed one checked against)."""
    if method == "resources/read":
        target, arguments = str(params.get("uri")), None
    else:
        target, arguments = str(params.get("name")), params.get("arguments")
    return StateBinding(
        method=method,
        target=target,
        arguments_digest=digest_arguments(arguments if isinstance(arguments, dict) else None),
        audience=server.request_state_security.resolve_audience(server.name),
        principal=principal,
    )


class BindingOnce:
    """A request's state binding, digested only if a state is opened or sealed, and then once."""

    __slots__ = ("_binding", "_request")

    def __init__(
        self, server: SealsState, method: str, params: dict[str, Any], principal: str | None
    ) -> None:
        self._request = (server, method, params, principal)
        self._binding: StateBinding | None = None

    def __call__(self) -> StateBinding:
        if self._binding is None:
            self._binding = state_binding(*self._request)
        return self._binding


async def open_state(
    server: SealsState,
    method: str,
    params: dict[str, Any],
    binding_of: Callable[[], StateBinding],
    watch: RequestWatch | None = None,
    once: SingleUse | None = None,
) -> dict[str, Any]:
    """Unseal an echoed requestState; the handler gets the plaintext. Any failure is the frozen error.

    A JSON null is no state at all (a first round). For a single-use tool the
    state is claimed before anything runs, on every round rather than only
    the last: claiming only on completion would let two concurrent copies
    both run, and an unclaimed earlier round could be replayed to mint a
    fresh final-round state. With a store that keeps answers and a `once`
    to hold the claim, the same caller's retry of a round gets its kept
    answer (`KeptAnswer`, see `single_use`); otherwise a client whose
    round was lost starts over.
    """
    token = params.get("requestState")
    if token is None:
        return params
    binding = binding_of()
    try:
        opened = server.request_state_security.unseal(token, binding)
    except InvalidRequestState as exc:
        server.log.warning("rejected requestState on %s %r: %s", method, binding.target, exc)
        if watch is not None:
            watch.state_rejected("invalid")
        raise MCPError.invalid_state() from None
    if server.is_single_use(method, params):
        try:
            claimed = await _claim_state(server, opened, binding.principal, params, once)
        except ReplayStoreFull as full:
            server.log.warning(
                "refused single-use %s %r: the replay store holds %d claims, the most it may",
                method,
                binding.target,
                full.limit,
            )
            if watch is not None:
                watch.state_rejected("store_full")
            raise
        if not claimed:
            server.log.warning("rejected replayed requestState on %s %r", method, binding.target)
            if watch is not None:
                watch.state_rejected("replayed")
            raise MCPError.invalid_state()
    if watch is not None:
        watch.state_opened(opened.carried)
    return {**params, "requestState": opened.payload.decode("utf-8", "replace")}


async def _claim_state(
    server: SealsState,
    opened: UnsealedState,
    principal: str | None,
    params: dict[str, Any],
    once: SingleUse | None,
) -> bool:
    """Claim a single-use state; a store that fails fails the call (-32603), never lets it run unclaimed."""
    store = server.replay_store
    if once is not None and isinstance(store, RoundStore):
        return await claim_round(server, store, opened, principal, params, once)
    try:
        return await store.claim(opened.state_id, opened.expires_at)
    except MCPError:
        raise
    except Exception:
        server.log.exception("the replay store failed to record a claim")
        raise MCPError(INTERNAL_ERROR, "replay store unavailable: try again shortly") from None


def seal_state(
    server: SealsState,
    binding_of: Callable[[], StateBinding],
    result: dict[str, Any],
    watch: RequestWatch | None = None,
) -> None:
    """Seal the plaintext requestState a handler returned, bound to this very request.

    On an instrumented server the watch's `carry` (the call's first-round
    trace context) is sealed beside it, so the next round links to the first.
    """
    plaintext = result.get("requestState")
    if plaintext is None:
        return
    binding = binding_of()
    carry = None if watch is None else watch.carry()
    security = server.request_state_security
    payload = str(plaintext).encode()
    result["requestState"] = (
        security.seal(payload, binding) if carry is None else security.seal(payload, binding, carry=carry)
    )
