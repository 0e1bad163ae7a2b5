"""`ctx.session`: the parts of the official SDK's `ServerSession` that tool code calls, over this request.

Servers written for the official SDK reach past the Context to its session
for a few things: telling the client a list changed, sampling its LLM,
asking for its roots, saying a URL-mode question was completed. Here each is
a thin facade over what the Context already does for the request it serves:

- On the handshake era (2025-11-25 and before) notifications go to the
  client on this request's channel, and requests (`create_message`,
  `list_roots`) are sent mid-call, as `ctx.sample()` and `ctx.list_roots()`
  send them.
- On 2026-07-28 there is no session: a request cannot call the client
  mid-call, so `create_message` and `list_roots` raise (use a `Sample` or
  `ListRoots` resolver, which asks on either era), and the notifications are
  not sent, as the official's are not; `await mcp.notify_list_changed(...)`
  reaches the clients listening on `subscriptions/listen`.

New code has better spellings (resolvers, `mcp.notify_list_changed`); this
is for code that ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from mcp_types import (
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitResult,
    ListRootsResult,
    ModelPreferences,
    SamplingMessage,
    Tool,
    ToolChoice,
)

from .errors import MidCallQuestionUnavailable
from .resolve.markers import Sample
from .resolve.questions import render_question

if TYPE_CHECKING:
    from .context import Context, RequestScope

__all__ = ["RequestSession"]


class RequestSession:
    """The official `ServerSession` methods a tool body uses, for the request `context` serves."""

    __slots__ = ("_context", "_scope")

    def __init__(self, context: Context, scope: RequestScope) -> None:
        self._context = context
        self._scope = scope

    # -- notifications -------------------------------------------------------------------
    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        if self._scope.era == "modern":  # no session to tell on 2026-07-28
            return
        await self._scope.send_notification(method, params)

    async def send_resource_list_changed(self) -> None:
        """Tell the client the resource list changed (handshake era)."""
        await self._notify("notifications/resources/list_changed", {})

    async def send_tool_list_changed(self) -> None:
        """Tell the client the tool list changed (handshake era)."""
        await self._notify("notifications/tools/list_changed", {})

    async def send_prompt_list_changed(self) -> None:
        """Tell the client the prompt list changed (handshake era)."""
        await self._notify("notifications/prompts/list_changed", {})

    async def send_elicit_complete(self, elicitation_id: str, related_request_id: Any = None) -> None:
        """Tell the client a URL-mode question was completed out of band, so it may retry (handshake era)."""
        await self._notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    # -- requests to the client (handshake era) ------------------------------------------
    async def create_message(
        self,
        messages: Sequence[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | None = None,
        tools: Sequence[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        related_request_id: Any = None,
    ) -> CreateMessageResult | CreateMessageResultWithTools:
        """Sample the client's LLM mid-call (handshake era): a `CreateMessageResultWithTools` when
        tools are offered, else a `CreateMessageResult`. On 2026-07-28 it raises: use a `Sample` resolver.
        """
        send = self._scope.send_request
        if self._scope.era == "modern" or send is None:
            raise MidCallQuestionUnavailable(
                "ctx.session.create_message() cannot ask the client mid-call on protocol "
                f"{self._scope.protocol_version}: declare a resolver that returns Sample(...) and annotate "
                "the parameter with Annotated[T, Resolve(resolver)]; the framework then asks on either era"
            )
        marker = Sample(
            list(messages),
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            include_context=include_context,
            temperature=temperature,
            stop_sequences=stop_sequences,
            metadata=metadata,
            model_preferences=model_preferences,
            tools=tools,
            tool_choice=tool_choice,
        )
        question = render_question(marker)
        answer = await send(question["method"], question["params"])
        if marker.uses_tools:
            return CreateMessageResultWithTools.model_validate(answer)
        return CreateMessageResult.model_validate(answer)

    async def list_roots(self) -> ListRootsResult:
        """Ask the client for its roots mid-call (handshake era); on 2026-07-28 it raises."""
        return await self._context.list_roots()

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, related_request_id: Any = None
    ) -> ElicitResult:
        """Send the person to `url` mid-call (handshake era), answered as the client's `ElicitResult`.

        The official `ServerSession.elicit_url`; `ctx.elicit_url()` gives the same answer as an
        outcome. On 2026-07-28 it raises -32600 (raise `UrlElicitationRequiredError` instead).
        """
        send = self._scope.send_request
        if self._scope.era == "modern" or send is None:
            raise MidCallQuestionUnavailable(
                "ctx.session.elicit_url() cannot ask the client mid-call on protocol "
                f"{self._scope.protocol_version}: raise UrlElicitationRequiredError([ElicitRequestURLParams(...)]) "
                "instead, and the client retries once the person has visited the URL"
            )
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return ElicitResult.model_validate(await send("elicitation/create", params))
