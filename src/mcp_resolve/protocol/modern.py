"""The 2026-07-28 era: per-request `_meta`, `server/discover`, input-required rounds, sealed state.

Every request stands alone. Its envelope is validated on arrival; on the
three methods that may take several rounds, an echoed `requestState` is
unsealed and checked against the request before any handler sees it, and a
round's outgoing state is sealed on the way out. Handlers and the resolver
engine only ever see plaintext.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    InputRequiredResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..context import LOG_LEVELS, Context, RequestScope
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    InvalidRequestState,
    MCPError,
)
from ..replay import ReplayStoreFull, RoundStore
from ..resolve.questions import Question
from ..resolve.run import PENDING
from ..resolve.state import StateRecord, question_digest
from ..sealing import StateBinding, UnsealedState, digest_arguments
from .extension_ids import check_declared_extensions
from .jsonrpc import IncomingRequest, Sink, failure_message, notifier, result_message
from .middleware import ClientView, ServerRequestContext, dump_result, run_chain
from .single_use import KeptAnswer, SingleUse, claim_round

if TYPE_CHECKING:
    from ..resolve.run import Questioner
    from ._serves import DescribesServer, SealsState, ServesRequests
    from .hooks import RequestWatch

__all__ = [
    "MULTI_ROUND_METHODS",
    "REMOVED_METHODS",
    "BatchQuestioner",
    "BindingOnce",
    "discover",
    "finish_result",
    "open_state",
    "respond",
    "seal_state",
    "state_binding",
]

MULTI_ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
REMOVED_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
"""Handshake-era methods 2026-07-28 dropped: answered as unknown methods, never served."""
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


async def respond(
    server: ServesRequests,
    request: IncomingRequest,
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None = None,
) -> dict[str, Any]:
    """The response message to one 2026-07-28 request (a result or an error); never raises for bad input.

    The request carries all its context in `meta`, so it needs no connection:
    the HTTP endpoint calls this straight from its POST, and a stream
    transport's `Connection` hands over any request that carries the envelope.
    The envelope is checked before anything runs; the request scope made from
    it is built only if the handler reads its Context.

    On an instrumented server the telemetry serves the request, calling this
    again with its `watch`; without it, the cost is the one check below.
    """
    if watch is None and server.telemetry is not None:
        again = partial(respond, server, request, meta, sink, principal, headers)
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        return await server.telemetry.observe(
            request, meta, headers, again, modern=True, protocol_version=version
        )
    once = SingleUse()
    if server.middleware:
        message = await _respond_through_middleware(
            server, request, meta, sink, principal, headers, watch, once
        )
    else:
        message = await _respond_plain(server, request, meta, sink, principal, headers, watch, once)
    if once.ticket is not None:
        await once.keep(message)
    return message


async def _respond_plain(
    server: ServesRequests,
    request: IncomingRequest,
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None,
    once: SingleUse,
) -> dict[str, Any]:
    """`respond` on a server without middleware."""
    method, params = request.method, request.params
    try:
        _check_envelope(meta)
        if method == "server/discover":
            return result_message(request.id, finish_result(server, method, discover(server)))
        if method in REMOVED_METHODS:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method} is not part of protocol 2026-07-28")
        handler = server.handler(method)
        if "inputResponses" in params:
            _input_responses(params)  # a malformed map is the request's error, whoever would read it
        rounds = method in MULTI_ROUND_METHODS
        binding: BindingOnce | None = None
        if rounds and params.get("requestState") is not None:
            binding = BindingOnce(server, method, params, principal)
            params = await open_state(server, method, params, binding, watch, once)
        scope = partial(
            _request_scope, server, request, params, meta, sink, principal, headers, rounds, watch
        )
        with once.shield():
            result = await handler(params, Context(scope, watch))
        return _answer(server, request, params, principal, binding, result, watch)
    except KeptAnswer as kept:
        return kept.message(request.id)
    except Exception as exc:
        return failure_message(request, exc)


async def _respond_through_middleware(
    server: ServesRequests,
    request: IncomingRequest,
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None,
    once: SingleUse,
) -> dict[str, Any]:
    """`respond` on a server with middleware: the chain wraps everything between the envelope and the seal.

    The envelope and an echoed `requestState` are checked before the chain
    (the official SDK's request-state boundary sits outside user middleware
    too), so a middleware sees plaintext state; an `input_required` result
    is sealed after it, bound to the request as the client sent it.
    """
    method, params = request.method, request.params
    try:
        _check_envelope(meta)
        rounds = method in MULTI_ROUND_METHODS
        binding: BindingOnce | None = None
        if rounds and params.get("requestState") is not None:
            if "inputResponses" in params:
                _input_responses(params)
            binding = BindingOnce(server, method, params, principal)
            params = await open_state(server, method, params, binding, watch, once)
        version = meta[PROTOCOL_VERSION_META_KEY]
        ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
            method=method,
            params=params,
            request_id=request.id,
            meta=meta,
            protocol_version=version,
            lifespan_context=server.lifespan_context,
            session=ClientView(meta[CLIENT_CAPABILITIES_META_KEY], meta.get(CLIENT_INFO_META_KEY), version),
            headers=headers,
            era="modern",
        )

        async def inner(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
            to = request
            if ctx.method != method or ctx.params is not params:
                to = IncomingRequest(
                    request.id, ctx.method, dict(ctx.params or {}), request.headers, request.access_token
                )
            return await _serve(server, to, meta, sink, principal, headers, watch)

        with once.shield():
            result = dump_result(await run_chain(server.middleware, ctx, inner))
        return _answer(server, request, params, principal, binding, result, watch)
    except KeptAnswer as kept:
        return kept.message(request.id)
    except Exception as exc:
        return failure_message(request, exc)


def _answer(
    server: ServesRequests,
    request: IncomingRequest,
    params: dict[str, Any],
    principal: str | None,
    binding: BindingOnce | None,
    result: dict[str, Any],
    watch: RequestWatch | None,
) -> dict[str, Any]:
    """The response message for `result`; an `input_required` one of a multi-round method sealed first.

    `binding` is the one an echoed requestState was opened against, if any
    (a new round is bound to the same request); else it is made here.
    """
    method = request.method
    if result.get("resultType") == "input_required" and method in MULTI_ROUND_METHODS:
        seal_state(server, binding or BindingOnce(server, method, params, principal), result, watch)
    return result_message(request.id, finish_result(server, method, result))


async def _serve(
    server: ServesRequests,
    request: IncomingRequest,
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None,
) -> dict[str, Any]:
    """The innermost link of the middleware chain: what `respond` does between envelope and seal."""
    method, params = request.method, request.params
    if method == "server/discover":
        return finish_result(server, method, discover(server))
    if method in REMOVED_METHODS:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method} is not part of protocol 2026-07-28")
    handler = server.handler(method)
    if "inputResponses" in params:
        _input_responses(params)
    rounds = method in MULTI_ROUND_METHODS
    scope = partial(_request_scope, server, request, params, meta, sink, principal, headers, rounds, watch)
    return finish_result(server, method, await handler(params, Context(scope, watch)))


def _check_envelope(meta: dict[str, Any]) -> None:
    """Refuse a request whose `_meta` envelope is unusable: an unsupported version, or a malformed part."""
    version = meta.get(PROTOCOL_VERSION_META_KEY)
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {
                "supported": list(MODERN_PROTOCOL_VERSIONS),
                "requested": version if isinstance(version, str) else str(version),
            },
        )
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(capabilities, dict):
        raise MCPError(
            INVALID_PARAMS, f"Invalid params: _meta needs an object at {CLIENT_CAPABILITIES_META_KEY!r}"
        )
    if "extensions" in capabilities:
        check_declared_extensions(capabilities)
    client_info = meta.get(CLIENT_INFO_META_KEY)
    if client_info is not None and not (
        isinstance(client_info, dict) and isinstance(client_info.get("name"), str)
    ):
        raise MCPError(
            INVALID_PARAMS, f"Invalid params: {CLIENT_INFO_META_KEY!r} must be an Implementation object"
        )
    log_level = meta.get(LOG_LEVEL_META_KEY)
    if log_level is not None and log_level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown log level {log_level!r} in _meta")


def _request_scope(
    server: ServesRequests,
    request: IncomingRequest,
    params: dict[str, Any],
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    rounds: bool,
    watch: RequestWatch | None = None,
) -> RequestScope:
    """The scope of a request whose envelope passed `_check_envelope`.

    On a method that may take several rounds (`rounds`), hand-written handlers
    also see the round's verified plaintext state and the client's answers.
    """
    questioner: Questioner = BatchQuestioner(
        params,
        first_round_answers=server.first_round_answers and not server.is_single_use(request.method, params),
    )
    scope = RequestScope(
        request_id=request.id,
        method=request.method,
        era="modern",
        protocol_version=meta[PROTOCOL_VERSION_META_KEY],
        client_capabilities=meta[CLIENT_CAPABILITIES_META_KEY],
        client_info=meta.get(CLIENT_INFO_META_KEY),
        log_level=meta.get(LOG_LEVEL_META_KEY),
        progress_token=meta.get("progressToken"),
        meta=meta,
        send_notification=notifier(sink),
        send_request=None,
        lifespan_context=server.lifespan_context,
        headers=headers,
        principal=principal,
        access_token=request.access_token,
        questioner=questioner if watch is None else watch.questioner(questioner),
        peer=request.peer,
    )
    if rounds:
        state, responses = params.get("requestState"), params.get("inputResponses")
        scope.request_state = state if isinstance(state, str) else None
        scope.input_responses = responses if isinstance(responses, dict) else {}
    return scope


def discover(server: DescribesServer) -> dict[str, Any]:
    ttl_ms, scope = server.cache_hint("server/discover")
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
        "capabilities": server.capabilities(modern=True),
        "ttlMs": ttl_ms,
        "cacheScope": scope,
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def finish_result(server: DescribesServer, method: str, result: dict[str, Any]) -> dict[str, Any]:
    result.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS and result["resultType"] == "complete":
        ttl_ms, scope = server.cache_hint(method)
        result.setdefault("ttlMs", ttl_ms)
        result.setdefault("cacheScope", scope)
    meta = result.setdefault("_meta", {})
    meta.setdefault(SERVER_INFO_META_KEY, server.server_info())
    return result


def state_binding(
    server: SealsState, method: str, params: dict[str, Any], principal: str | None
) -> StateBinding:
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


def _input_responses(params: dict[str, Any]) -> dict[str, Any]:
    """The round's answers by question key; a malformed map is a protocol error, not a missing answer."""
    if "inputResponses" not in params:
        return {}
    responses = params["inputResponses"]
    if not isinstance(responses, dict) or not all(isinstance(r, dict) for r in responses.values()):
        raise MCPError(
            INVALID_PARAMS, "Invalid params: inputResponses must map each question key to a result object"
        )
    return responses


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


_NO_RECORD = StateRecord()
"""A first round's record: nothing asked, nothing answered (only ever read)."""


class BatchQuestioner:
    """Answers questions from this round's `inputResponses`, or marks them for the next round.

    An answer counts only for a question this server asked, with exactly that
    wording, in a requestState it sealed: so every answer went through a round
    whose state the replay store of a `single_use` tool can claim. Answers that
    arrive with no requestState (a first round) are ignored and the questions
    asked, unless the server opted into `first_round_answers` (never for a
    `single_use` tool); they are validated before use either way.
    """

    def __init__(self, params: dict[str, Any], *, first_round_answers: bool = False) -> None:
        state = params.get("requestState")
        self.first_round = state is None
        self.record = (
            _NO_RECORD
            if state is None
            else StateRecord.decode(state.encode() if isinstance(state, str) else None)
        )
        self.responses: dict[str, Any] = (
            _input_responses(params) if state is not None or first_round_answers else {}
        )
        self.used: dict[str, tuple[str, Any]] = {}
        self.open: dict[str, str] = {}
        """Key -> digest of each question left for the next round (computed once, in `ask`)."""

    async def ask(self, wire_key: str, question: Question) -> Any:
        digest = question_digest(question)
        recorded = self.record.answers.get(wire_key)
        if recorded is not None and recorded[0] == digest:
            self.used[wire_key] = recorded
            return recorded[1]
        asked = self.first_round or self.record.asked.get(wire_key) == digest
        if asked and wire_key in self.responses:
            answer = self.responses[wire_key]
            self.used[wire_key] = (digest, answer)
            return answer
        self.open[wire_key] = digest
        return PENDING

    def carried(self) -> Mapping[str, Any]:
        """What `Resolve(fn, carry=True)` resolvers gave in earlier rounds: only ever from a state this
        server sealed (a first round has none, and a client cannot write one)."""
        return self.record.carried

    def input_required(
        self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None
    ) -> InputRequiredResult:
        asked = {key: self.open.get(key) or question_digest(question) for key, question in pending.items()}
        record = StateRecord(asked=asked, answers=self.used, carried=dict(carried) if carried else {})
        return InputRequiredResult.model_validate(
            {"inputRequests": pending, "requestState": record.encode().decode()}
        )
