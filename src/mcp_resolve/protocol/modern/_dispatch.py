"""One path from a 2026-07-28 request to its response, with the middleware chain as an optional layer.

`respond` checks the envelope, opens an echoed requestState (the sealing
step), serves the request and seals what it returns. Serving it is
`_dispatch`: `server/discover`, the handshake-era methods the era dropped,
the handler's lookup and its call with a Context whose scope is built only
if the handler reads it. On a server with middleware, the chain wraps that
same `_dispatch`, between the opened state and the seal (the official SDK's
request-state boundary sits outside user middleware too): a middleware sees
plaintext state both ways, and its result is sealed bound to the request as
the client sent it. Without middleware nothing of the chain runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from ...context import Context, RequestScope
from ...errors import METHOD_NOT_FOUND, MCPError
from ..jsonrpc import IncomingRequest, Sink, failure_message, notifier, result_message
from ..middleware import ClientView, ServerRequestContext, dump_result, run_chain
from ..single_use import KeptAnswer, SingleUse
from ._envelope import check_envelope, discover, finish_result
from ._request_state import BindingOnce, open_state, seal_state
from ._rounds import MULTI_ROUND_METHODS, BatchQuestioner, input_responses

if TYPE_CHECKING:
    from ...resolve.run import Questioner
    from ..hooks import RequestWatch
    from ..serves import ServesRequests

__all__ = ["REMOVED_METHODS", "respond"]

REMOVED_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
"""Handshake-era methods 2026-07-28 dropped: answered as unknown methods, never served."""
LONG_LIVED_METHODS = frozenset({"subscriptions/listen"})
"""Requests that last as long as their stream: while served, `respond` keeps only their id and method."""


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
    telemetry = server.telemetry
    if watch is None and telemetry is not None and telemetry.active:
        again = partial(respond, server, request, meta, sink, principal, headers)
        version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        return await telemetry.observe(request, meta, headers, again, modern=True, protocol_version=version)
    once = SingleUse()
    method, params = request.method, request.params
    try:
        check_envelope(meta)
        binding: BindingOnce | None = None
        if method in MULTI_ROUND_METHODS and params.get("requestState") is not None:
            if "inputResponses" in params:
                input_responses(params)  # a malformed map is refused before any state is opened
            binding = BindingOnce(server, method, params, principal)
            params = await open_state(server, method, params, binding, watch, once)
        serve = _through_middleware if server.middleware else _dispatch
        with once.shield():
            pending = serve(server, request, params, meta, sink, principal, headers, watch)
            del meta, headers  # read no more here: a long-lived stream (listen) need not hold them
            if method in LONG_LIVED_METHODS:  # nor the decoded request: only its id and method are read
                params = {}
                request = IncomingRequest(request.id, method, params)
            result = await pending
        message = _answer(server, request, params, principal, binding, result, watch)
    except KeptAnswer as kept:
        message = kept.message(request.id)
    except Exception as exc:
        message = failure_message(request, exc)
    if once.ticket is not None:
        await once.keep(message)
    return message


def _dispatch(
    server: ServesRequests,
    request: IncomingRequest,
    params: dict[str, Any],
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None,
) -> Awaitable[dict[str, Any]]:
    """Serve `request` with `params` (its state already opened): the handler's call, not yet awaited.

    Returning the awaitable rather than awaiting it costs a request no extra
    coroutine; a refusal (an unknown or dropped method, malformed answers)
    raises here, before any handler runs.
    """
    method = request.method
    if method == "server/discover":
        return _ready(discover(server))
    if method in REMOVED_METHODS:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method} is not part of protocol 2026-07-28")
    handler = server.handler(method)
    if "inputResponses" in params:
        input_responses(params)  # a malformed map is the request's error, whoever would read it
    rounds = method in MULTI_ROUND_METHODS
    scope = partial(request_scope, server, request, params, meta, sink, principal, headers, rounds, watch)
    return handler(params, Context(scope, watch))


async def _ready(result: dict[str, Any]) -> dict[str, Any]:
    return result


async def _through_middleware(
    server: ServesRequests,
    request: IncomingRequest,
    params: dict[str, Any],
    meta: dict[str, Any],
    sink: Sink,
    principal: str | None,
    headers: Mapping[str, str] | None,
    watch: RequestWatch | None,
) -> dict[str, Any]:
    """`_dispatch` inside `server.middleware`: what the chain returns, as a wire dict.

    The chain's innermost link serves the request as the chain left it, a
    rewritten method or params included, and hands back the finished result.
    """
    method = request.method
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
        to, to_params = request, params
        if ctx.method != method or ctx.params is not params:
            to = IncomingRequest(
                request.id, ctx.method, dict(ctx.params or {}), request.headers, request.access_token
            )
            to_params = to.params
        result = await _dispatch(server, to, to_params, meta, sink, principal, headers, watch)
        return finish_result(server, to.method, result)

    return dump_result(await run_chain(server.middleware, ctx, inner))


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


def request_scope(
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
    """The scope of a request whose envelope passed `check_envelope`.

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
        server=server,
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
