"""`@mcp.completion()`: the official SDK's form (the protocol's models), the earlier dict form, and failures.

Served in memory and asked through our Client (a JSON round trip): each
handler records what it was given, so a handler that got dicts where it
wanted models (or the reverse) fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from mcp_resolve import Client, Context, MCPError, MCPServer

pytestmark = pytest.mark.anyio

PROMPT = {"type": "ref/prompt", "name": "review"}
TEMPLATE = {"type": "ref/resource", "uri": "repos://{owner}/{repo}"}


async def test_an_unannotated_handler_gets_the_models_as_in_the_official_sdk() -> None:
    mcp = MCPServer("models")
    seen: list[Any] = []

    @mcp.completion()
    async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
        seen.append((ref, argument, context))
        if isinstance(ref, ResourceTemplateReference) and context and context.arguments:
            return Completion(values=[f"{context.arguments['owner']}-sdk"], has_more=False)
        return None

    async with Client(mcp) as client:
        none = await client.complete(PROMPT, {"name": "language", "value": "py"})
        found = await client.complete(TEMPLATE, {"name": "repo", "value": ""}, {"owner": "acme"})
    assert none.completion.model_dump(by_alias=True, exclude_none=True) == {"values": []}
    assert found.completion.values == ["acme-sdk"] and found.completion.has_more is False
    assert found.completion.total is None
    (ref, argument, context), (ref2, _, context2) = seen
    assert ref == PromptReference(type="ref/prompt", name="review")
    assert argument == CompletionArgument(name="language", value="py") and context is None
    assert isinstance(ref2, ResourceTemplateReference) and ref2.uri == TEMPLATE["uri"]
    assert context2 == CompletionContext(arguments={"owner": "acme"})


async def test_a_handler_annotated_with_the_models_and_sync_gets_them_too() -> None:
    mcp = MCPServer("sync models")

    @mcp.completion()
    def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> list[str]:
        assert isinstance(ref, PromptReference) and isinstance(argument, CompletionArgument)
        return [f"{argument.value}{n}" for n in range(150)]

    async with Client(mcp) as client:
        answer = await client.complete(PROMPT, {"name": "language", "value": "v"})
    # A list answers its first 100 values with the total.
    assert answer.completion.values[:2] == ["v0", "v1"] and len(answer.completion.values) == 100
    assert (answer.completion.total, answer.completion.has_more) == (150, True)


async def test_the_dict_form_keeps_getting_dicts_and_the_context() -> None:
    mcp = MCPServer("dicts")
    seen: list[Any] = []

    @mcp.completion()
    async def complete(ref: dict[str, Any], argument: dict[str, Any], context: Context) -> list[str]:
        seen.append((ref, argument, context))
        return ["python", "perl"]

    async with Client(mcp) as client:
        answer = await client.complete(PROMPT, {"name": "language", "value": "p"})
    assert answer.completion.values == ["python", "perl"]
    ((ref, argument, context),) = seen
    assert ref == PROMPT and argument == {"name": "language", "value": "p"}
    assert isinstance(context, Context)


async def test_a_crash_answers_the_official_internal_error_and_keeps_its_text_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp = MCPServer("crash")

    @mcp.completion()
    async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
        raise RuntimeError("secret-dsn://user:pw@db")

    async with Client(mcp) as client:
        with pytest.raises(MCPError) as failed:
            await client.complete(PROMPT, {"name": "language", "value": "p"})
    assert (failed.value.code, failed.value.message) == (-32603, "Error completing argument language")
    assert "secret-dsn" not in str(failed.value.data)
    assert "secret-dsn" in caplog.text


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/nothing"}, "argument": {"name": "a", "value": ""}},
        {"ref": PROMPT, "argument": {"name": "a"}},
        {"ref": PROMPT},
        {"ref": "review", "argument": "a"},
    ],
)
async def test_a_malformed_request_is_invalid_params_and_never_reaches_the_handler(
    params: dict[str, Any],
) -> None:
    mcp = MCPServer("hostile")
    called: list[Any] = []

    @mcp.completion()
    async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
        called.append(ref)
        return None

    async with Client(mcp) as client:
        with pytest.raises(MCPError) as refused:
            await client.request("completion/complete", params)
    assert refused.value.code == -32602 and called == []
