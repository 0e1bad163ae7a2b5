"""The everything server: each tool, resource, template and prompt the official MCP conformance harness calls.

It is an ordinary mcp-resolve server, written the way we recommend: tools
that need something from the client declare it with a resolver
(`Annotated[T, Resolve(ask_...)]`, see `questions.py`), so one body serves
both wires, mid-call questions on 2025-11-25 and `input_required` rounds on
2026-07-28. Names, texts and payloads are the harness's.

    python examples/everything/server.py --port 8000    # http://127.0.0.1:8000/mcp
    python examples/everything/server.py                # stdio
"""

from __future__ import annotations

import argparse
import base64
import json
from typing import Annotated, Any

import anyio
from mcp_types import (
    AudioContent,
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    ListRootsResult,
    PromptMessage,
    TextContent,
    TextResourceContents,
)
from payloads import COMPLETIONS, JSON_SCHEMA_2020_12, RED_PIXEL_PNG, SILENT_WAV
from pydantic import Field
from questions import (
    Choices,
    Color,
    Confirmation,
    Name,
    Profile,
    PromptContext,
    UserInfo,
    ask_capital,
    ask_choices,
    ask_confirmation,
    ask_greeting,
    ask_llm,
    ask_name,
    ask_name_if_possible,
    ask_opinion,
    ask_profile,
    ask_prompt_context,
    ask_roots,
    ask_step1,
    ask_step2,
    ask_user_info,
)
from task_tools import register as register_task_tools

from mcp_resolve import Context, ElicitationResult, MCPServer, Resolve, ToolError

mcp = MCPServer(
    "mcp-resolve-everything",
    version="1.0.0",
    instructions="Fixtures for the MCP conformance harness: every kind of tool, resource and prompt.",
    # The harness's `input-required-result-ignore-extra-params` scenario (check
    # `sep-2322-ignore-unexpected-params`) answers `test_input_required_result_elicitation` in its very
    # first request, with no requestState, and expects it to complete. Off by default; see
    # docs/multi-round-trip.md. No tool here is single_use.
    first_round_answers=True,
)


def _image() -> ImageContent:
    return ImageContent(type="image", data=RED_PIXEL_PNG, mimeType="image/png")


def _text_of(sampled: CreateMessageResult) -> str:
    content = sampled.content
    return content.text if isinstance(content, TextContent) else json.dumps(content.model_dump(mode="json"))


def _outcome(result: Any) -> str:
    """`action=accept, content={...}` for any elicitation outcome."""
    content = result.data.model_dump(mode="json") if hasattr(result, "data") else None
    return f"action={result.action}, content={json.dumps(content)}"


# -- content of every kind ------------------------------------------------------------------
@mcp.tool()
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@mcp.tool()
def test_image_content() -> ImageContent:
    """Returns a 1x1 red PNG."""
    return _image()


@mcp.tool()
def test_audio_content() -> AudioContent:
    """Returns a short silent WAV."""
    return AudioContent(type="audio", data=SILENT_WAV, mimeType="audio/wav")


@mcp.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns a text resource embedded in the result."""
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mimeType="text/plain",
            text="This is an embedded resource content.",
        ),
    )


@mcp.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns text, an image and an embedded resource together."""
    resource = TextResourceContents(
        uri="test://mixed-content-resource",
        mimeType="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return [
        TextContent(type="text", text="Multiple content types test:"),
        _image(),
        EmbeddedResource(type="resource", resource=resource),
    ]


@mcp.tool()
def test_error_handling() -> str:
    """Always fails, as a tool error the model can read."""
    raise ToolError("This tool intentionally returns an error for testing")


# -- side channels ---------------------------------------------------------------------------
@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three messages while it works (sent only at or above the client's log level)."""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Logging test completed"


@mcp.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs one message; on 2026-07-28 only a request that set a log level receives it."""
    await ctx.info("test_logging_tool ran")
    return "Logging tool completed"


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 when the client sent a progress token."""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await anyio.sleep(0.05)
        await ctx.report_progress(progress, 100)
    return "Progress test completed"


@mcp.tool()
def test_reconnection() -> str:
    """The SSE-polling scenario's tool (SEP-1699): answers straight away, on the stream of its request."""
    return "Reconnection test completed successfully"


# -- questions to the client (handshake era: mid-call; 2026-07-28: input_required) ---------
@mcp.tool()
def test_sampling(prompt: str, reply: Annotated[CreateMessageResult, Resolve(ask_llm)]) -> str:
    """Samples the client's LLM with the given prompt."""
    return f"LLM response: {_text_of(reply)}"


@mcp.tool()
def test_elicitation(
    message: str, answer: Annotated[ElicitationResult[UserInfo], Resolve(ask_user_info)]
) -> str:
    """Asks the person for a username and an email address, with the given message."""
    return f"User response: <{_outcome(answer)}>"


@mcp.tool()
def test_elicitation_sep1034_defaults(
    answer: Annotated[ElicitationResult[Profile], Resolve(ask_profile)],
) -> str:
    """Asks a form whose every field has a default (SEP-1034)."""
    return f"Elicitation completed: {_outcome(answer)}"


@mcp.tool()
def test_elicitation_sep1330_enums(
    answer: Annotated[ElicitationResult[Choices], Resolve(ask_choices)],
) -> str:
    """Asks a form with every kind of enum: untitled, titled, legacy, single and multi (SEP-1330)."""
    return f"Elicitation completed: {_outcome(answer)}"


@mcp.tool()
def test_input_required_result_elicitation(person: Annotated[Name, Resolve(ask_name)]) -> str:
    """Asks the person's name, then greets them."""
    return f"Hello, {person.name}!"


@mcp.tool()
def test_streaming_elicitation(person: Annotated[Name, Resolve(ask_name)]) -> str:
    """Asks a question; on 2026-07-28 that is a result, never a request on the response stream."""
    return f"Hello, {person.name}!"


@mcp.tool()
def test_input_required_result_sampling(reply: Annotated[CreateMessageResult, Resolve(ask_capital)]) -> str:
    """Asks the client's LLM for the capital of France."""
    return f"The model says: {_text_of(reply)}"


@mcp.tool()
def test_input_required_result_list_roots(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """Asks for the client's roots and lists them back."""
    return "Client roots: " + ", ".join(str(root.uri) for root in roots.roots)


@mcp.tool()
def test_input_required_result_request_state(
    confirmed: Annotated[Confirmation, Resolve(ask_confirmation)],
) -> str:
    """Asks for a confirmation; the answer survives the round trip in the sealed requestState."""
    return f"state-ok: confirmed={confirmed.ok}"


@mcp.tool()
def test_input_required_result_tampered_state(
    confirmed: Annotated[Confirmation, Resolve(ask_confirmation)],
) -> str:
    """As test_input_required_result_request_state; a tampered requestState is refused."""
    return f"state-ok: confirmed={confirmed.ok}"


@mcp.tool()
def test_input_required_result_multiple_inputs(
    person: Annotated[Name, Resolve(ask_name)],
    greeting: Annotated[CreateMessageResult, Resolve(ask_greeting)],
    roots: Annotated[ListRootsResult, Resolve(ask_roots)],
) -> str:
    """Asks three independent questions at once: a form, the LLM and the roots."""
    return f"{_text_of(greeting)} {person.name}, your roots: {', '.join(str(r.uri) for r in roots.roots)}"


@mcp.tool()
def test_input_required_result_multi_round(
    person: Annotated[Name, Resolve(ask_step1)], color: Annotated[Color, Resolve(ask_step2)]
) -> str:
    """Asks a name, then (one round later, since it depends on the name) a favourite colour."""
    return f"{person.name} likes {color.color}"


@mcp.tool()
def test_input_required_result_capabilities(
    reply: Annotated[CreateMessageResult, Resolve(ask_capital)],
    person: Annotated[Name | None, Resolve(ask_name_if_possible)],
) -> str:
    """Asks only what the client declared it can answer: the LLM always, a form only if supported."""
    who = person.name if person is not None else "someone without forms"
    return f"{who}: {_text_of(reply)}"


@mcp.tool()
def test_missing_capability(reply: Annotated[CreateMessageResult, Resolve(ask_opinion)]) -> str:
    """Needs sampling: a client that did not declare it gets a missing-capability error."""
    return _text_of(reply)


# -- schemas ---------------------------------------------------------------------------------
@mcp.tool(description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    return f"Contact {name or 'anonymous'} by {contactMethod or 'any means'}"


@mcp.tool()
def test_header_region(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Echoes the region, which HTTP clients also send as the Mcp-Param-Region header."""
    return f"Region: {region}"


@mcp.tool()
async def test_trigger_tool_change() -> str:
    """Change the tool list (a tool added at run time) and tell every listener: the harness's listen probe."""
    if "test_dynamic_tool" not in {tool.name for tool in mcp.components()}:
        mcp.add_tool(lambda: "dynamic", name="test_dynamic_tool", description="Added at run time")
    await mcp.notify_list_changed("tools")
    return "tools changed"


@mcp.tool()
async def test_trigger_prompt_change() -> str:
    """Tell every listener the prompt list changed: the harness's listen probe for prompts."""
    await mcp.notify_list_changed("prompts")
    return "prompts changed"


# The tasks extension's fixtures (greet, slow_compute, failing_job, confirm_delete, ...): task_tools.py.
register_task_tools(mcp)


# -- resources -------------------------------------------------------------------------------
@mcp.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return base64.b64decode(RED_PIXEL_PNG)


@mcp.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content."


@mcp.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """Data for any ID, from a URI template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# -- prompts ---------------------------------------------------------------------------------
@mcp.prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[PromptMessage]:
    """A prompt that embeds a resource."""
    resource = TextResourceContents(
        uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing."
    )
    return [
        PromptMessage(role="user", content=EmbeddedResource(type="resource", resource=resource)),
        PromptMessage(
            role="user", content=TextContent(type="text", text="Please process the embedded resource above.")
        ),
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that carries an image."""
    return [
        PromptMessage(role="user", content=_image()),
        PromptMessage(role="user", content=TextContent(type="text", text="Please analyze the image above.")),
    ]


@mcp.prompt()
def test_input_required_result_prompt(answer: Annotated[PromptContext, Resolve(ask_prompt_context)]) -> str:
    """A prompt that first asks which context to use."""
    return f"Use this context: {answer.context}"


@mcp.completion()
async def complete(ref: dict[str, Any], argument: dict[str, Any], context: Context) -> list[str]:
    """Suggestions for any argument: the fixed words that start with what was typed so far."""
    typed = str(argument.get("value", "")).lower()
    return [word for word in COMPLETIONS if word.startswith(typed)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--port", type=int, help="serve Streamable HTTP at http://HOST:PORT/mcp (default: stdio)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    options = parser.parse_args()
    if options.port is None:
        mcp.run()
    else:
        mcp.run(transport="streamable-http", host=options.host, port=options.port)


if __name__ == "__main__":
    main()
