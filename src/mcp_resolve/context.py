"""The Context a tool, resource, prompt or resolver receives by annotating a parameter with it.

A Context is a view of one request: who asked (client info and capabilities,
protocol version, HTTP headers), what the server holds for its lifetime
(`lifespan_context`), and the side channels tied to the request (log
messages, progress). Mid-call questions (`elicit`, `sample`, `list_roots`)
exist only on the handshake era; on 2026-07-28 the server cannot call the
client mid-request, so those methods tell the author to use a resolver.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal

from mcp_types import (
    INVALID_PARAMS,
    ClientCapabilities,
    CreateMessageResult,
    Implementation,
    InputRequiredResult,
    InputResponses,
    ListRootsResult,
    LoggingLevel,
    SamplingMessage,
)
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import TypeVar  # TypeVar(default=...) (PEP 696) before Python 3.13

from ._request_session import RequestSession
from .elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    outcome_from_answer,
    url_outcome_from_answer,
)
from .errors import MCPError, MidCallQuestionUnavailable, ToolError
from .protocol.middleware import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from .resolve.markers import Elicit, ListRoots, Sample
from .resolve.questions import render_question

if TYPE_CHECKING:
    from .auth.tokens import AccessToken
    from .resolve.run import Questioner, RunObserver
    from .server import MCPServer, ReadResourceContents

__all__ = [
    "LOG_LEVELS",
    "CallNext",
    "Context",
    "HandlerResult",
    "RequestScope",
    "ServerMiddleware",
    "ServerRequestContext",
    "detached_scope",
]
# CallNext, HandlerResult, ServerMiddleware, ServerRequestContext: re-exported where the official SDK
# keeps them (`mcp.server.context`), so a port changes only the package name.

# Defaults, so a bare `ctx: Context` means Context[Any, Any] and passes `mypy --strict` (no type-arg error).
LifespanT = TypeVar("LifespanT", default=Any)
RequestT = TypeVar("RequestT", default=Any)
ModelT = TypeVar("ModelT", bound=BaseModel)

_INPUT_RESPONSES: TypeAdapter[InputResponses] = TypeAdapter(InputResponses)

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

Era = Literal["handshake", "modern"]
SendNotification = Callable[[str, dict[str, Any]], Awaitable[None]]
SendRequest = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class RequestScope:
    """What the protocol layer knows about one request; the Context reads from it."""

    request_id: Any
    method: str
    era: Era
    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: LoggingLevel | None
    progress_token: Any
    meta: dict[str, Any]
    send_notification: SendNotification
    send_request: SendRequest | None
    lifespan_context: Any = None
    headers: Mapping[str, str] | None = None
    principal: str | None = None
    access_token: AccessToken | None = None
    questioner: Questioner | None = None
    request_state: str | None = None
    input_responses: dict[str, Any] = field(default_factory=dict)
    peer: str | None = None
    """The client as its transport knows it ("address ..." over HTTP, "connection ..." on a stream): what
    per-client bounds count by when there is no principal (tasks). Not an identity: never authorises."""
    server: Any = None
    """The MCPServer serving the request (`ctx.mcp_server`); None only for a scope built by hand."""
    close_sse_stream: Callable[[], Awaitable[None]] | None = None
    """Ends the HTTP stream carrying this request's answer so the client resumes it (SEP-1699); None: no
    such stream (stdio, in memory, 2026-07-28, a server without an event store)."""


def detached_scope(server: Any, method: str = "tools/call") -> RequestScope:
    """The request a call made in this process stands for (`mcp.call_tool`, `Context(mcp_server=mcp)`).

    No client: nothing declared, log messages and progress go nowhere, and a
    mid-call question fails with a ToolError saying why.
    """
    return RequestScope(
        request_id=None,
        method=method,
        era="handshake",
        protocol_version=LATEST_HANDSHAKE_VERSION,
        client_capabilities={},
        client_info=None,
        log_level=None,
        progress_token=None,
        meta={},
        send_notification=_nowhere,
        send_request=_no_client,
        lifespan_context=None if server is None else server.lifespan_context,
        server=server,
    )


async def _nowhere(method: str, params: dict[str, Any]) -> None:
    """A detached call's log messages and progress: no client to hear them."""


async def _no_client(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`ctx.elicit()` and friends in a detached call: say why there is no answer, as a tool error."""
    raise ToolError(
        f"{method} needs a client, and a direct call (mcp.call_tool) has none; call through Client(mcp)"
    )


class _RequestContextView:
    """`ctx.request_context.lifespan_context`, the spelling the official SDK taught people."""

    __slots__ = ("_scope",)

    def __init__(self, scope: RequestScope) -> None:
        self._scope = scope

    @property
    def lifespan_context(self) -> Any:
        return self._scope.lifespan_context

    @property
    def request_id(self) -> Any:
        return self._scope.request_id

    @property
    def meta(self) -> dict[str, Any]:
        return self._scope.meta

    @property
    def headers(self) -> Mapping[str, str] | None:
        return self._scope.headers

    @property
    def access_token(self) -> AccessToken | None:
        return self._scope.access_token

    @property
    def client_capabilities_dict(self) -> dict[str, Any]:
        """What the client declared, as sent: for `require_client_extension(ctx.request_context, ...)`."""
        return self._scope.client_capabilities


class Context(Generic[LifespanT, RequestT]):
    """One request, as seen by the code that serves it.

    `LifespanT` types `lifespan_context`. `RequestT` is not used: it is there so
    that annotations written for the official SDK (`Context[Lifespan, Request]`)
    keep working unchanged. Both default to `Any`, so a bare `ctx: Context`
    type-checks under `mypy --strict`.

    Given a function instead of a RequestScope, it builds the scope the first
    time something reads it: most tools never look at their request, and the
    scope is a good share of what serving a call costs (its questioner, the
    envelope's parts, a notification sender).
    """

    __slots__ = ("_build", "_built", "observer")
    __mcp_resolve_context__ = True  # resolve.plan.CONTEXT_MARK: how the engine knows a Context parameter

    def __init__(
        self,
        scope: RequestScope | Callable[[], RequestScope] | None = None,
        observer: RunObserver | None = None,
        *,
        mcp_server: MCPServer | None = None,
    ) -> None:
        """`Context(mcp_server=mcp)`, as the official SDK spells it, is a request with no client,
        for calling a tool function directly in a test; the framework passes a `RequestScope`."""
        if scope is None:
            scope = detached_scope(mcp_server)
        elif mcp_server is not None:
            raise TypeError("Context(scope, mcp_server=...): give one of them")
        if isinstance(scope, RequestScope):
            self._built: RequestScope | None = scope
            self._build: Callable[[], RequestScope] | None = None
        else:
            self._built, self._build = None, scope
        self.observer = observer
        """What the resolver engine tells about each resolver it runs for this request (telemetry), or
        None. Held here rather than in the request scope, so that reading it never builds the scope."""

    @property
    def _scope(self) -> RequestScope:
        scope = self._built
        if scope is None:
            assert self._build is not None
            scope = self._built = self._build()
            self._build = None
        return scope

    @property
    def request_scope(self) -> RequestScope:
        """What the protocol layer knows about this request (`RequestScope`), built now if not yet.

        For the framework's own extensions (subscriptions, tasks), which need
        its parts (the caller's principal, the notification sender); a tool
        reads the properties below instead.
        """
        return self._scope

    def questioner(self) -> Questioner | None:
        """How the resolver engine asks this request's client its questions (None: it cannot).

        A method, handed to the engine uncalled: the request scope is built only
        if a resolver actually asks.
        """
        return self._scope.questioner

    # -- who is asking -------------------------------------------------------------------
    @property
    def request_id(self) -> Any:
        return self._scope.request_id

    @property
    def method(self) -> str:
        """The request's method (`tools/call`, `resources/read`, an extension's own...)."""
        return self._scope.method

    @property
    def protocol_version(self) -> str:
        return self._scope.protocol_version

    @property
    def client_capabilities(self) -> ClientCapabilities:
        return ClientCapabilities.model_validate(self._scope.client_capabilities)

    @property
    def client_capabilities_dict(self) -> dict[str, Any]:
        return self._scope.client_capabilities

    def client_supports_extension(self, identifier: str) -> bool:
        """Whether the client declared the extension `identifier` (`capabilities.extensions`).

        From `initialize` on the handshake era, from the request's own client capabilities on
        2026-07-28. A tool uses it to degrade gracefully (plain text for a client without the extension).
        """
        declared = (self._scope.client_capabilities or {}).get("extensions")
        return isinstance(declared, dict) and identifier in declared

    @property
    def client_info(self) -> Implementation | None:
        info = self._scope.client_info
        return Implementation.model_validate(info) if info else None

    @property
    def access_token(self) -> AccessToken | None:
        """The verified bearer token of this request, or None when it carries none (stdio, in memory,
        HTTP without a `token_verifier`). Put there by the transport, never by the client's arguments.
        """
        return self._scope.access_token

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers (lower-case names), or None off HTTP.

        Client-supplied: fine for a locale, never for an identity.
        """
        return self._scope.headers

    @property
    def meta(self) -> dict[str, Any]:
        return self._scope.meta

    @property
    def lifespan_context(self) -> LifespanT:
        return self._scope.lifespan_context  # type: ignore[no-any-return]

    @property
    def request_context(self) -> _RequestContextView:
        return _RequestContextView(self._scope)

    @property
    def mcp_server(self) -> MCPServer:
        """The server serving this request, as in the official SDK (ValueError for a scope built without one)."""
        server = self._scope.server
        if server is None:
            raise ValueError("Context is not available outside of a request")
        return server  # type: ignore[no-any-return]

    @property
    def session(self) -> RequestSession:
        """The official SDK's `ctx.session` methods that tool code calls, for this request (`request_session.py`)."""
        return RequestSession(self, self._scope)

    @property
    def is_modern(self) -> bool:
        return self._scope.era == "modern"

    # -- multi-round state (2026-07-28) --------------------------------------------------
    @property
    def request_state(self) -> str | None:
        """The plaintext `requestState` this round echoes, or None on a first round.

        Already unsealed and checked against this request before the handler
        runs, so a hand-written multi-round handler can trust it as its own;
        what it returns in an `InputRequiredResult` is sealed on the way out.
        """
        return self._scope.request_state

    @property
    def input_responses(self) -> InputResponses | None:
        """The client's answers to the previous round's `inputRequests`, by key, typed as the official
        SDK's are (`ElicitResult`, `CreateMessageResult`, `ListRootsResult`); None on a first round.

        Not covered by the seal: the client wrote them. One that is none of those is the request's
        error (-32602), as from the official server.
        """
        raw = self._scope.input_responses
        if not raw:
            return None
        try:
            return _INPUT_RESPONSES.validate_python(raw)
        except ValidationError:
            raise MCPError(
                INVALID_PARAMS, "Invalid params: an inputResponses entry is not a response"
            ) from None

    # -- side channels -------------------------------------------------------------------
    async def log(self, level: LoggingLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a log message to the client, if it asked for this level."""
        threshold = self._scope.log_level
        if self._scope.era == "modern" and threshold is None:
            return
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._scope.send_notification("notifications/message", params)

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("error", data, logger=logger)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress for this request; a no-op when the client gave no progress token."""
        token = self._scope.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._scope.send_notification("notifications/progress", params)

    # -- the server's own offer: read, and tell clients it changed -------------------------
    async def read_resource(self, uri: Any) -> Iterable[ReadResourceContents]:
        """Read one of this server's resources from inside a request: its contents, as `mcp.read_resource`.

        Runs as a fresh first round: the resource never sees this request's
        `input_responses` or `request_state`. A resource that asks for input
        (an `InputRequiredResult`) raises RuntimeError here; forward such a
        result with `mcp.read_resource(uri, ctx)` instead.
        """
        nested = Context(replace(self._scope, request_state=None, input_responses={}))
        result = await self.mcp_server.read_resource(str(uri), nested)
        if isinstance(result, InputRequiredResult):
            raise RuntimeError(
                "Resource returned InputRequiredResult; ctx.read_resource() only returns "
                "content: use MCPServer.read_resource(uri, context) to receive and forward it."
            )
        return result

    async def notify_tools_changed(self) -> None:
        """Tell clients the tool list changed: handshake-era sessions and 2026-07-28 listen streams."""
        await self.mcp_server.notify_list_changed("tools")

    async def notify_prompts_changed(self) -> None:
        """Tell clients the prompt list changed (both eras, as `notify_tools_changed`)."""
        await self.mcp_server.notify_list_changed("prompts")

    async def notify_resources_changed(self) -> None:
        """Tell clients the resource list changed (both eras, as `notify_tools_changed`)."""
        await self.mcp_server.notify_list_changed("resources")

    async def notify_resource_updated(self, uri: Any) -> None:
        """Tell the clients subscribed to `uri` that it changed: `resources/subscribe` sessions and
        `subscriptions/listen` streams alike (the URI is matched exactly)."""
        await self.mcp_server.notify_resource_updated(str(uri))

    # -- SSE polling (SEP-1699) ----------------------------------------------------------
    async def close_sse_stream(self) -> None:
        """End the SSE stream carrying this request's answer, so the client reconnects and resumes it.

        For long work: the client resumes with `Last-Event-ID` after the
        stream's `retry` hint and gets what was sent meanwhile. Only a
        handshake-era request on Streamable HTTP with an event store has such
        a stream; everywhere else this does nothing, as in the official SDK.
        """
        close = self._scope.close_sse_stream
        if close is not None:
            await close()

    async def close_standalone_sse_stream(self) -> None:
        """The official SDK's call to end a session's GET stream: a no-op here, as the official's is
        without an event store (its client does not reconnect to that stream). The GET stream carries
        only what belongs to no request; a long call ends its own with `close_sse_stream`."""

    # -- mid-call questions (handshake era) ----------------------------------------------
    def _mid_call(self, what: str, marker: str) -> Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]:
        send = self._scope.send_request
        if self._scope.era == "modern" or send is None:
            raise MidCallQuestionUnavailable(
                f"ctx.{what}() cannot ask the client mid-call on protocol {self._scope.protocol_version}: "
                f"declare a resolver that returns {marker} and annotate the parameter with "
                "Annotated[T, Resolve(resolver)]; the framework then asks on either protocol era"
            )
        return send

    async def elicit(
        self, message: str, schema: type[ModelT]
    ) -> AcceptedElicitation[ModelT] | DeclinedElicitation | CancelledElicitation:
        """Ask the person a form question (handshake era)."""
        send = self._mid_call("elicit", "Elicit(message, Model)")
        question = render_question(Elicit(message, schema))
        answer = await send(question["method"], question["params"])
        return outcome_from_answer(schema, answer)

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str
    ) -> AcceptedUrlElicitation | DeclinedElicitation | CancelledElicitation:
        """Ask the person to visit `url` for something that must not pass through the client (handshake era).

        URL-mode elicitation (2025-11-25): an OAuth consent, a payment, a
        secret typed into your own page. The answer is only whether they agreed
        to go; the work happens at the URL. To stop a request until it is done
        instead, raise `UrlElicitationRequiredError`, which works on either era.
        """
        send = self._scope.send_request
        if self._scope.era == "modern" or send is None:
            raise MidCallQuestionUnavailable(
                f"ctx.elicit_url() cannot ask the client mid-call on protocol {self._scope.protocol_version}: "
                "raise UrlElicitationRequiredError([ElicitRequestURLParams(...)]) instead, and the client "
                "retries once the person has visited the URL"
            )
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return url_outcome_from_answer(await send("elicitation/create", params))

    async def sample(
        self,
        messages: str | Sequence[SamplingMessage | dict[str, Any] | str],
        *,
        max_tokens: int = 1024,
        **options: Any,
    ) -> CreateMessageResult:
        """Sample the client's LLM (handshake era)."""
        send = self._mid_call("sample", "Sample(...)")
        question = render_question(Sample(messages, max_tokens=max_tokens, **options))
        return CreateMessageResult.model_validate(await send(question["method"], question["params"]))

    async def list_roots(self) -> ListRootsResult:
        """Ask the client for its roots (handshake era)."""
        send = self._mid_call("list_roots", "ListRoots()")
        question = render_question(ListRoots())
        return ListRootsResult.model_validate(await send(question["method"], question["params"]))
