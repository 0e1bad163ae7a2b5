"""`MCPServer.as_proxy(target)`: serve another MCP server's tools, resources and prompts as our own.

The front is an ordinary `MCPServer`, so whatever it adds (a token verifier
or `OAuthProxy`, limits, OpenTelemetry, middleware) applies to every proxied
request. Behind it, each caller gets upstream sessions of its own (`_upstream`):
by principal when the request is authenticated, else by the handshake-era
session, else one shared anonymous caller. Tools are listed once, on the
first request that needs them (again when the target says its list changed), and registered as
bridged tools, so `hide=` can take arguments out of the model's hands;
resources, templates, prompts and completion pass through per request.

Resource subscriptions (handshake-era callers, when the target offers them):
each subscribing caller holds one upstream session of its own for them, kept
open while it holds any (at most `max_subscriptions` URIs); the target's
`notifications/resources/updated` on it is published through the front's
`notify_resource_updated`, so only sessions and listen streams that asked for
that URI hear it, once: several callers' sessions holding one URI each report
one change, and a report from another session within `_SAME_CHANGE_S` of the
last one published is taken as the same change (`_first_report`). Nothing
depends on one chosen session staying subscribed: when any session goes
quiet (unsubscribed, ended at the target), the others' reports still pass.

A question the target asks mid-call (elicitation, sampling, roots) goes to
our caller on the caller's era: mid-call on the handshake era, as an
input-required round on 2026-07-28, whose sealed `requestState` names the
parked relay (`_upstream.Relay`) that the next round resumes.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from anyio.abc import TaskGroup

from ..client import Client
from ..context import Context
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MCPError,
    ToolError,
)
from ..resolve import Resolve
from ..stores.bus import MAX_URI_LENGTH
from ._tool import BridgedTool
from ._upstream import (
    Done,
    Lane,
    LanePool,
    ProxyLimits,
    Question,
    Relay,
    UpstreamError,
    logger,
    upstream_client,
)

if TYPE_CHECKING:
    from ..auth.tokens import AuthSettings
    from ..protocol.serves import Handler
    from ..server import MCPServer

__all__ = ["Proxy", "as_proxy", "caller_of"]

_PASSED_THROUGH = (
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
)
_MODERN_ONLY_KEYS = ("ttlMs", "cacheScope")
"""Keys of a 2026-07-28 upstream result that the front's own finishing decides, not the target's."""
_RELAY_STATE = "mcp-resolve/proxy-relay"
_UPSTREAM_STATE = "mcp-resolve/upstream-state"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def caller_of(context: Context) -> str:
    """Whose upstream sessions serve this request: the principal, else the handshake session, else anonymous."""
    scope = context.request_scope
    if scope.principal:
        return f"principal {scope.principal}"
    if scope.era == "handshake":
        session = (scope.headers or {}).get("mcp-session-id")
        if session:
            return f"session {session}"
        if scope.peer:
            return f"peer {scope.peer}"
    return "anonymous"


def _target(target: MCPServer | str | Sequence[str]) -> MCPServer | str | list[str]:
    """A URL as it is; a command line (`"python server.py"`) split into its arguments; a server in memory."""
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return target
        return shlex.split(target)
    if isinstance(target, (list, tuple)):
        return [str(part) for part in target]
    return target  # type: ignore[return-value]  # an MCPServer: served in memory


class Proxy:
    """The proxy behind one front server: its lanes, and how each request reaches the target."""

    def __init__(
        self,
        server: MCPServer,
        target: MCPServer | str | Sequence[str],
        *,
        hide: Mapping[str, Resolve] | None,
        limits: ProxyLimits,
        client_options: dict[str, Any],
    ) -> None:
        self.server = server
        self.target = _target(target)
        self.hide = dict(hide or {})
        self.limits = limits
        self.client_options = client_options
        self.pool: LanePool | None = None
        self.upstream_capabilities: dict[str, Any] = {}
        self.upstream_info: dict[str, Any] | None = None
        self._proxied: set[str] = set()
        self._tg: TaskGroup | None = None
        self._discovered: anyio.Event | None = None
        self._subscribed: dict[str, tuple[Lane, set[str]]] = {}
        """Each subscribing caller's upstream session for its subscriptions, and the URIs it holds there."""
        self._subscribing = anyio.Lock()
        self._last_report: dict[str, tuple[Lane, float]] = {}
        """Per URI, the session whose report was last published and when (entries older than the window go)."""

    # -- lifecycle -----------------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the lanes while the front serves: in a host task of their own, since the front's lifespan
        may be left by another task than the one that entered it (its last user)."""
        ready = asyncio.Event()
        host = asyncio.get_running_loop().create_task(self._hold(ready))
        await ready.wait()
        try:
            if self.pool is None:
                await host  # the host failed before it was ready: its exception says why
            self._discovered = None
            yield  # the target is listed on first use (`discovered`): serving starts without waiting for it
        finally:
            with anyio.CancelScope(shield=True):
                if self.pool is not None:
                    self.pool.close_all()  # each session closes its client itself: stdio targets stopped
                    with anyio.move_on_after(_CLOSE_GRACE):
                        while self.pool.lanes():
                            await anyio.sleep(0.05)
                if self._tg is not None:
                    self._tg.cancel_scope.cancel()
                await asyncio.gather(host, return_exceptions=True)

    async def discovered(self) -> None:
        """Wait until the target's tools are listed (the first caller lists them; a failure is retried)."""
        done = self._discovered
        if done is None:
            done = self._discovered = anyio.Event()
            try:
                await self._discover()
            except UpstreamError as exc:
                self._discovered = None
                done.set()
                raise MCPError(INTERNAL_ERROR, str(exc)) from None
            except BaseException:
                self._discovered = None
                done.set()
                raise
            done.set()
            return
        await done.wait()
        if self._discovered is not done:  # the lister failed: this caller tries again
            await self.discovered()

    async def _hold(self, ready: asyncio.Event) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self.pool = LanePool(tg, self.limits, self._client)
                ready.set()
                await anyio.sleep_forever()
        finally:
            if self.pool is not None:
                self.pool.close_all()
            self._tg = None
            ready.set()

    def _client(self, lane: Lane) -> Any:
        notified = None
        options = dict(self.client_options)
        if lane.caller == _DISCOVERY:
            notified = partial(self._upstream_notified, lane)
        elif lane.caller.startswith(_SUBSCRIBER):
            notified = partial(self._resource_updated, lane)
            if options.get("mode") == "auto":  # `resources/subscribe` is a handshake-era method
                options["mode"] = "legacy"
        return upstream_client(lane, self.target, notification_handler=notified, options=options)

    async def _discover(self) -> None:
        """List the target's tools (and learn what it offers) through a lane of the proxy's own."""
        assert self.pool is not None
        deadline = anyio.current_time() + self.limits.connect_timeout
        lane = await self.pool.lease(_DISCOVERY, deadline)
        assert lane.client is not None
        self.upstream_capabilities = dict(lane.client.server_capabilities)
        self.upstream_info = lane.client.server_info
        await self._refresh_tools(lane)  # the lane stays leased to the proxy: it hears list changes
        self.pool.on_connect = self._prepare
        if lane.client.is_modern and self._tg is not None:
            self._tg.start_soon(self._listen, lane)
        resources = self.upstream_capabilities.get("resources")
        if not (isinstance(resources, dict) and resources.get("subscribe")):
            self.server.offers_resource_subscriptions = False  # declared until the target was known not to
        if "completions" not in self.upstream_capabilities:
            self.server.registry.completer = None  # declared until the target was known not to complete

    async def _refresh_tools(self, lane: Lane) -> None:
        assert lane.client is not None
        tools: list[dict[str, Any]] = []
        cursor = None
        with anyio.fail_after(self.limits.timeout):
            while True:
                page = await lane.client.request("tools/list", {} if cursor is None else {"cursor": cursor})
                tools.extend(t for t in page.get("tools") or () if isinstance(t, dict))
                cursor = page.get("nextCursor")
                if not cursor:
                    break
        registry = self.server.registry
        for name in self._proxied:  # replaced below, or gone from the target
            if registry.tool(name) is not None:
                registry.remove_tool(name)
        self._proxied = set()
        for definition in tools:
            tool = self._bridged(definition)
            if tool is not None:
                registry.add_tool(tool)
                tool.use_overrides(self.server.dependency_overrides)
                self._proxied.add(tool.name)

    def _bridged(self, definition: dict[str, Any]) -> BridgedTool | None:
        name = definition.get("name")
        schema = definition.get("inputSchema")
        if not isinstance(name, str) or not isinstance(schema, dict):
            return None
        properties = schema.get("properties") or {}
        hide = {key: marker for key, marker in self.hide.items() if key in properties}
        return BridgedTool(
            name,
            schema,
            partial(self._call_tool, name),
            hide=hide,
            title=definition.get("title"),
            description=definition.get("description"),
            output_schema=definition.get("outputSchema"),
            annotations=definition.get("annotations"),
            meta=definition.get("_meta"),
            icons=definition.get("icons"),
        )

    async def _upstream_notified(self, lane: Lane, method: str, params: dict[str, Any]) -> None:
        """The discovery session hears the target's list changes, re-lists, and tells our callers."""
        if method == "notifications/tools/list_changed" and self._tg is not None:
            self._tg.start_soon(self._tools_changed, lane)  # not here: this runs in the session's reader
        elif method == "notifications/resources/list_changed":
            await self.server.notify_list_changed("resources")
        elif method == "notifications/prompts/list_changed":
            await self.server.notify_list_changed("prompts")

    async def _prepare(self, client: Client) -> None:
        """A new 2026-07-28 session mirrors tool arguments into headers (`x-mcp-header`) once it has listed them."""
        if not client.is_modern or not any(
            tool.param_headers for name, tool in self.server.registry.tools.items() if name in self._proxied
        ):
            return
        cursor = None
        with anyio.fail_after(self.limits.connect_timeout):
            while True:
                page = await client.request("tools/list", {} if cursor is None else {"cursor": cursor})
                cursor = page.get("nextCursor")
                if not cursor:
                    return

    async def _listen(self, lane: Lane) -> None:
        """Hear a 2026-07-28 target's list changes on `subscriptions/listen`, listening again when it ends."""
        assert lane.client is not None
        wanted = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
        while not lane.dead:
            try:
                await lane.client.request("subscriptions/listen", {"notifications": wanted})
            except MCPError as exc:
                logger.info("the proxied server does not stream its list changes: %s", exc.message)
                return
            except Exception as exc:
                if lane.dead:
                    return
                logger.warning("listening to the proxied server failed: %s", type(exc).__name__)
            await anyio.sleep(1.0)

    async def _tools_changed(self, lane: Lane) -> None:
        try:
            await self._refresh_tools(lane)
        except Exception as exc:
            logger.warning("could not list the proxied server's tools again: %s", type(exc).__name__)
            return
        await self.server.notify_list_changed("tools")

    # -- resource subscriptions ----------------------------------------------------------
    async def subscribe(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """`resources/subscribe`, on this caller's subscription session upstream (opened on its first)."""
        uri = await self._subscription_uri(params)
        caller = caller_of(context)
        async with self._subscribing:
            lane, uris = self._subscribed.get(caller, (None, set()))
            if lane is not None and not lane.dead and uri in uris:
                return {}
            if uri not in uris and len(uris) >= self.limits.max_subscriptions:
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid params: at most {self.limits.max_subscriptions} resource subscriptions per "
                    "caller through this proxy; unsubscribe from one first",
                )
            if lane is None or lane.dead:  # first, or the session ended: the others are renewed on a new one
                assert self.pool is not None
                self._prune()
                if caller not in self._subscribed and len(self._subscribed) >= _subscription_sessions(
                    self.limits
                ):
                    raise MCPError(
                        INTERNAL_ERROR,
                        "too many callers hold resource subscriptions through this proxy; try again later",
                    )
                deadline = anyio.current_time() + self.limits.connect_timeout
                try:
                    lane = await self.pool.lease(_SUBSCRIBER + caller, deadline)  # kept leased while in use
                except UpstreamError as exc:
                    raise MCPError(INTERNAL_ERROR, str(exc)) from None
                renewed: set[str] = set()  # a URI counts as held once the target accepted it again
                self._subscribed[caller] = (lane, renewed)
                for held in list(uris):
                    await self._subscription_request(lane, "resources/subscribe", held)
                    renewed.add(held)
                uris = renewed
            await self._subscription_request(lane, "resources/subscribe", uri)
            uris.add(uri)
        return {}

    def _prune(self) -> None:
        """Close the subscription sessions of callers that are gone: no front session holds any of their URIs."""
        held: set[str] = set()
        for connection in list(self.server.connections):
            if connection.handshake is not None:
                held |= connection.handshake.subscriptions
        for caller, (lane, uris) in list(self._subscribed.items()):
            if not uris & held:
                del self._subscribed[caller]
                lane.close()

    async def unsubscribe(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """`resources/unsubscribe` upstream; the caller's last one closes its subscription session."""
        uri = await self._subscription_uri(params)
        async with self._subscribing:
            caller = caller_of(context)
            lane, uris = self._subscribed.get(caller, (None, set()))
            if lane is None or uri not in uris:
                return {}
            uris.discard(uri)
            if self._last_report.get(uri, (None, 0.0))[0] is lane:
                del self._last_report[uri]  # the others' next report is a new change, not this one's echo
            try:
                if not lane.dead:
                    await self._subscription_request(lane, "resources/unsubscribe", uri)
            finally:
                if not uris:
                    del self._subscribed[caller]
                    lane.close()  # the upstream session ends (any subscription left goes with it)
        return {}

    async def _subscription_uri(self, params: dict[str, Any]) -> str:
        await self.discovered()
        if not self.server.offers_resource_subscriptions:
            raise MCPError(
                METHOD_NOT_FOUND, "Method not found: the proxied server does not offer resource subscriptions"
            )
        uri = params.get("uri")
        if not isinstance(uri, str) or not 0 < len(uri) <= MAX_URI_LENGTH:
            raise MCPError(INVALID_PARAMS, "Invalid params: 'uri' must be a non-empty string")
        return uri

    async def _subscription_request(self, lane: Lane, method: str, uri: str) -> None:
        assert lane.client is not None
        try:
            with anyio.fail_after(self.limits.timeout):
                await lane.client.request(method, {"uri": uri})
        except MCPError:
            raise
        except Exception as exc:
            lane.close()
            raise MCPError(
                INTERNAL_ERROR, f"the proxied server failed {method} ({type(exc).__name__})"
            ) from None

    async def _resource_updated(self, lane: Lane, method: str, params: dict[str, Any]) -> None:
        """The target's `notifications/resources/updated` for a URI this caller subscribed to, published."""
        uri = params.get("uri")
        if method != "notifications/resources/updated" or not isinstance(uri, str):
            return
        if self._first_report(uri, lane):
            await self.server.notify_resource_updated(uri)

    def _first_report(self, uri: str, lane: Lane) -> bool:
        """Whether this report of `uri` is a change not yet published, rather than another session's copy.

        Every caller subscribed to `uri` holds it on a session of its own, so the
        target reports one change on each of them within moments, while the front
        publishes by URI to every session and listen stream that asked for it:
        publishing each report would repeat the change once per caller. A report
        is a copy when another open session's report of the URI was published
        less than `_SAME_CHANGE_S` ago; a session's own reports always pass (a
        second change it sees is a new one), and so does any report once the
        last publisher is closed or the window has passed. A copy dropped costs
        nothing: `resources/updated` only says "read it again", and the
        subscriber was just told so.
        """
        now = anyio.current_time()
        last = self._last_report.get(uri)
        if last is not None and last[0] is not lane and not last[0].dead and now - last[1] < _SAME_CHANGE_S:
            return False
        if len(self._last_report) >= _LAST_REPORTS:  # bounded: entries past the window decide nothing
            for stale in [key for key, (_, at) in self._last_report.items() if now - at >= _SAME_CHANGE_S]:
                del self._last_report[stale]
            if len(self._last_report) >= _LAST_REPORTS:
                self._last_report.clear()
        self._last_report[uri] = (lane, now)
        return True

    # -- requests ------------------------------------------------------------------------
    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        try:
            result = await self.forward(context, "tools/call", {"name": name, "arguments": arguments})
        except UpstreamError as exc:
            raise ToolError(str(exc)) from None
        return result

    async def passthrough(self, method: str, params: dict[str, Any], context: Context) -> dict[str, Any]:
        try:
            return await self.forward(context, method, params)
        except UpstreamError as exc:
            raise MCPError(INTERNAL_ERROR, str(exc)) from None

    async def forward(self, context: Context, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`method` sent to the target for this caller; its result, or an input-required round of ours."""
        assert self.pool is not None, "the proxy serves only while its server runs"
        await self.discovered()  # before any session of a caller opens: each is prepared alike (`_prepare`)
        state = _opened_state(context)
        relay = self._resumed(context, state)
        if relay is None:
            caller = caller_of(context)
            # Waiting for a free session and opening one have their own bound; the call's deadline starts after.
            lane = await self.pool.lease(caller, anyio.current_time() + self.limits.connect_timeout)
            relay = Relay(
                caller,
                context.request_scope.principal,
                anyio.current_time() + self.limits.timeout,
                self.limits,
            )
            upstream = {k: v for k, v in params.items() if k not in _UPSTREAM_OWN}
            assert lane.client is not None
            if context.is_modern and lane.client.is_modern:
                # Both sides speak 2026-07-28: the target's rounds pass through, its requestState sealed
                # inside ours, and the target hears the caller's own capabilities.
                relay.rounds = False
                upstream["_meta"] = {CLIENT_CAPABILITIES: context.client_capabilities_dict}
                if state is not None and state.get(_UPSTREAM_STATE) is not None:
                    upstream["requestState"] = state[_UPSTREAM_STATE]
                answers = context.request_scope.input_responses  # as the client wrote them, for the target
                if answers:  # whether answers without a round count is the target's policy
                    upstream["inputResponses"] = answers
            lane.start(relay, method, upstream)
        relay.context = context
        try:
            result = await self._drive(relay, context)
        except BaseException:
            if relay.context is context and not relay.finished:
                relay.scope.cancel()  # the caller is gone (cancelled, or its answer could not be read)
            raise
        if not relay.rounds and result.get("resultType") == "input_required":
            result = {**result, "requestState": json.dumps({_UPSTREAM_STATE: result.get("requestState")})}
        return result

    def _resumed(self, context: Context, state: dict[str, Any] | None) -> Relay | None:
        """The parked relay a 2026-07-28 round resumes, given the answers it brings; None on a first round."""
        relay_id = None if state is None else state.get(_RELAY_STATE)
        if not isinstance(relay_id, str):
            return None
        assert self.pool is not None
        relay = self.pool.unpark(relay_id, context.request_scope.principal)
        if relay is None:
            raise UpstreamError("this call waited too long for its answers and was ended; call again")
        responses = context.request_scope.input_responses  # wire dicts, as the target reads them
        for key, question in list(relay.open.items()):
            answer = responses.get(key)
            if isinstance(answer, dict):
                question.settle(answer)
                del relay.open[key]
        return relay

    async def _drive(self, relay: Relay, context: Context) -> dict[str, Any]:
        send = None if context.is_modern else context.request_scope.send_request
        while True:
            if relay.open and send is None:  # a 2026-07-28 round still unanswered: ask again
                return self._park(relay)
            event = await self._next(relay)
            if isinstance(event, Done):
                if event.error is not None:
                    raise event.error
                assert event.result is not None
                return _front_result(event.result)
            if _refused(event, context):
                continue
            if send is not None:
                try:
                    event.settle(await send(event.method, event.params))
                except MCPError as exc:
                    event.settle(error=exc)
                continue
            relay.open[relay.question_key()] = event
            while True:  # the other questions already asked go in the same round
                try:
                    more = relay.events.receive_nowait()
                except anyio.WouldBlock:
                    break
                if isinstance(more, Done):
                    relay.open.clear()
                    if more.error is not None:
                        raise more.error
                    assert more.result is not None
                    return _front_result(more.result)
                if not _refused(more, context):
                    relay.open[relay.question_key()] = more
            if not relay.open:
                continue

    async def _next(self, relay: Relay) -> Question | Done:
        with anyio.move_on_after(relay.remaining() + 1.0):  # the lane's own deadline ends it first
            return await relay.events.receive()
        raise UpstreamError(f"the proxied server did not answer within {self.limits.timeout:g}s")

    def _park(self, relay: Relay) -> dict[str, Any]:
        assert self.pool is not None
        self.pool.park(relay)
        return {
            "resultType": "input_required",
            "inputRequests": {key: {"method": q.method, "params": q.params} for key, q in relay.open.items()},
            "requestState": json.dumps({_RELAY_STATE: relay.id}),
        }


_DISCOVERY = "proxy discovery"
_SUBSCRIBER = "subscriptions of "
"""The caller key of a caller's subscription session: apart from its request sessions."""
_SAME_CHANGE_S = 0.5  # copies of one change arrive on the callers' sessions within milliseconds of each other
_LAST_REPORTS = 4096  # URIs remembered at once for telling a copy from a change


def _subscription_sessions(limits: ProxyLimits) -> int:
    """Subscription sessions the proxy holds at most: half of `max_lanes`, so requests always have room."""
    return max(1, limits.max_lanes // 2)


_CLOSE_GRACE = 10.0
"""Seconds the proxy waits at shutdown for its sessions to close; our Client gives a stdio target
5 s to exit once its stdin closes, then 2 s to terminate, before it kills it."""
_UPSTREAM_OWN = frozenset({"_meta", "requestState", "inputResponses"})
"""Params the front's caller sent for the front: the upstream session sets its own."""


_CAPABILITY_OF = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


def _refused(question: Question, context: Context) -> bool:
    """Answer the target with an error, now, when our caller did not declare what the question needs."""
    needed = _CAPABILITY_OF.get(question.method)
    if needed is None or needed in (context.client_capabilities_dict or {}):
        return False
    question.settle(
        error=MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"the proxy's caller did not declare the {needed} capability",
            {"requiredCapabilities": {needed: {}}},
        )
    )
    return True


def _opened_state(context: Context) -> dict[str, Any] | None:
    """The requestState of ours this 2026-07-28 round echoes (already unsealed and checked), or None."""
    if not context.is_modern or context.request_state is None:
        return None
    try:
        state = json.loads(context.request_state)
    except ValueError:
        return None
    return state if isinstance(state, dict) else None


def _front_result(result: dict[str, Any]) -> dict[str, Any]:
    if any(key in result for key in _MODERN_ONLY_KEYS) or result.get("resultType") == "complete":
        return {
            key: value
            for key, value in result.items()
            if key not in _MODERN_ONLY_KEYS and key != "resultType"
        }
    return result


async def _never_called(ref: dict[str, Any], argument: dict[str, Any], context: Context) -> None:
    """The registered completer: it makes the front declare `completions`; the method itself passes through."""
    return None


def as_proxy(
    target: MCPServer | str | Sequence[str],
    *,
    hide: Mapping[str, Resolve] | None = None,
    auth: httpx.Auth | str | None = None,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    mode: str = "auto",
    limits: ProxyLimits | None = None,
    name: str | None = None,
    auth_settings: AuthSettings | None = None,
    **server_options: Any,
) -> MCPServer:
    """An `MCPServer` serving what `target` serves (see `MCPServer.as_proxy`)."""
    from ..server import MCPServer

    limits = limits or ProxyLimits()
    client_options: dict[str, Any] = {"mode": mode}
    if auth is not None:
        client_options["auth"] = auth
    if headers is not None:
        client_options["headers"] = headers
    if env is not None:
        client_options["env"] = env
    if cwd is not None:
        client_options["cwd"] = cwd
    if (
        auth_settings is not None
    ):  # `auth=` is the upstream's credential here: the front's settings take this name
        server_options["auth"] = auth_settings
    their_lifespan = server_options.pop("lifespan", None)
    proxy: Proxy | None = None

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[Any]:
        assert proxy is not None
        async with proxy.running():
            if their_lifespan is None:
                yield None
            else:
                async with their_lifespan(server) as state:
                    yield state

    server = MCPServer(name or "mcp-resolve-proxy", lifespan=lifespan, **server_options)
    proxy = Proxy(server, target, hide=hide, limits=limits, client_options=client_options)
    for method in _PASSED_THROUGH:
        server.add_method(method, partial(proxy.passthrough, method), replace=True)
    server.add_method("resources/subscribe", proxy.subscribe, replace=True)
    server.add_method("resources/unsubscribe", proxy.unsubscribe, replace=True)
    for method in ("tools/list", "tools/call"):
        server.add_method(method, _after_discovery(proxy, server.handler(method)), replace=True)
    server.completion()(_never_called)  # `completions` declared, until the target turns out not to offer it
    return server


def _after_discovery(proxy: Proxy, handler: Handler) -> Handler:
    async def gated(params: dict[str, Any], context: Context) -> dict[str, Any]:
        await proxy.discovered()
        return await handler(params, context)

    return gated
