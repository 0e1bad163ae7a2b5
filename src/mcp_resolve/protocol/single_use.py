"""Single-use rounds, exactly once from the caller's side: claimed before they run, their answer kept.

A `single_use` tool's sealed state is claimed in the replay store before
anything runs, so no copy of a round ever runs twice. With a store that
keeps answers (`RoundStore`: the in-memory and Redis ones), a claimed round
also runs to its end even if its client goes away, and its answer is kept
under the claim for the state's lifetime, so the same caller retrying after
a lost answer gets that answer back rather than a refusal. "The same
caller" is a digest of the state id, the principal and the answers sent:
a request without a principal (no authentication, no `principal=` function)
cannot be told from a replay by whoever else holds the token, so it is
refused as before. A retry that finds its round still running waits for it,
up to the store's `retry_wait`, then is told to retry.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from ..errors import INTERNAL_ERROR, MCPError
from ..replay import RoundClaim, RoundStore
from .jsonrpc import encode

if TYPE_CHECKING:
    from ..sealing import UnsealedState
    from .serves import SealsState

__all__ = ["KEPT_ANSWER_MISSING", "STILL_RUNNING", "KeptAnswer", "SingleUse", "claim_round"]

STILL_RUNNING = "this single-use call is still running: retry shortly"
KEPT_ANSWER_MISSING = "this single-use call already ran; its answer was not kept for a retry"
_NO_SHIELD = nullcontext()


class KeptAnswer(Exception):
    """The answer an earlier copy of this round got, to send again in place of running anything."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__("a kept answer")
        self.outcome = outcome

    def message(self, request_id: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, **self.outcome}


class SingleUse:
    """One request's claim on a single-use round: empty until `claim_round` wins one."""

    __slots__ = ("expires_at", "state_id", "store", "ticket")

    def __init__(self) -> None:
        self.store: RoundStore | None = None
        self.state_id = ""
        self.expires_at = 0.0
        self.ticket: str | None = None

    def shield(self) -> AbstractContextManager[Any]:
        """Around the run of a claimed round: its client leaving must not cut it (the answer is kept)."""
        return _NO_SHIELD if self.ticket is None else anyio.CancelScope(shield=True)

    async def keep(self, message: dict[str, Any]) -> None:
        """Record the round's answer (`message`, a result or an error) for a retry; a no-op unless claimed."""
        if self.ticket is None or self.store is None:
            return
        ticket, self.ticket = self.ticket, None
        outcome = encode({k: message[k] for k in ("result", "error") if k in message})
        with anyio.CancelScope(shield=True):  # bounded by the store's own deadline
            await self.store.keep_outcome(self.state_id, self.expires_at, ticket, outcome)


def caller_digest(state_id: str, principal: str | None, params: dict[str, Any]) -> str | None:
    """Who may get this round's answer again: its principal, sending the same answers; None if anonymous."""
    if principal is None:
        return None
    responses = params.get("inputResponses")
    canonical = json.dumps(
        [state_id, principal, responses if isinstance(responses, dict) else None],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    data = b"mcp-resolve/single-use-caller/v1\x00" + canonical.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


async def claim_round(
    server: SealsState,
    store: RoundStore,
    opened: UnsealedState,
    principal: str | None,
    params: dict[str, Any],
    once: SingleUse,
) -> bool:
    """Claim the round for this request: True if it must run (and `once` holds the claim), False if
    replayed. Raises `KeptAnswer` for the same caller's finished round, and MCPError (-32603) when
    the store cannot say or the round is still running after `retry_wait`."""
    caller = caller_digest(opened.state_id, principal, params)
    deadline = anyio.current_time() + store.retry_wait
    delay = 0.02
    while True:
        found = await _claim(server, store, opened, caller)
        if found.status != "running" or anyio.current_time() + delay > deadline:
            break
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.25)
    if found.status == "won":
        once.store, once.state_id, once.expires_at = store, opened.state_id, opened.expires_at
        once.ticket = found.ticket
        return True
    if found.status == "running":
        raise MCPError(INTERNAL_ERROR, STILL_RUNNING)
    if found.status == "done":
        server.log.info("a retry of single-use %r got the answer kept for it", params.get("name"))
        if found.outcome is None:
            raise MCPError(INTERNAL_ERROR, KEPT_ANSWER_MISSING)
        _kept(found.outcome)
    return False


async def _claim(
    server: SealsState, store: RoundStore, opened: UnsealedState, caller: str | None
) -> RoundClaim:
    try:
        return await store.claim_round(opened.state_id, opened.expires_at, caller)
    except MCPError:
        raise
    except Exception:
        server.log.exception("the replay store failed to record a claim")
        raise MCPError(INTERNAL_ERROR, "replay store unavailable: try again shortly") from None


def _kept(outcome: bytes) -> NoReturn:
    try:
        kept = json.loads(outcome)
    except ValueError:
        kept = None
    if not isinstance(kept, dict) or not ({"result", "error"} & kept.keys()):
        raise MCPError(INTERNAL_ERROR, KEPT_ANSWER_MISSING)
    raise KeptAnswer({k: kept[k] for k in ("result", "error") if k in kept})
