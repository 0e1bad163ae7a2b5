"""`sampling_model`: a pydantic-ai model answers the server's `Sample` questions.

The server's sampling request (a system prompt and a conversation of text,
image and audio messages, with `maxTokens`, `temperature` and
`stopSequences`) becomes one `model_request` to the model; its text comes
back as the completion, named after the model. Tool use inside sampling
(`sampling_tools`) is not bridged: such a request fails with a clear error.
"""

from __future__ import annotations

import base64
from typing import Any

import mcp_types
from mcp_types import CreateMessageRequestParams, CreateMessageResult, SamplingMessage
from pydantic_ai import messages, models
from pydantic_ai.direct import model_request
from pydantic_ai.settings import ModelSettings

from .handlers import HandlerContext, SamplingHandler

__all__ = ["sampling_handler_for", "to_model_messages"]


def sampling_handler_for(model: models.Model) -> SamplingHandler:
    """A handler in the pydantic-ai shape that asks `model`."""

    async def handler(
        sampling_messages: list[SamplingMessage], params: CreateMessageRequestParams, context: HandlerContext
    ) -> CreateMessageResult:
        settings = ModelSettings(max_tokens=params.max_tokens)
        if params.temperature is not None:
            settings["temperature"] = params.temperature
        if params.stop_sequences:
            settings["stop_sequences"] = params.stop_sequences
        response = await model_request(model, to_model_messages(params), model_settings=settings)
        return CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text=response.text or ""),
            model=model.model_name,
            stop_reason="maxTokens" if response.finish_reason == "length" else "endTurn",
        )

    return handler


def to_model_messages(params: CreateMessageRequestParams) -> list[messages.ModelMessage]:
    """The sampling conversation as pydantic-ai messages: user turns are requests, assistant turns responses."""
    history: list[messages.ModelMessage] = []
    request: list[messages.ModelRequestPart] = []
    if params.system_prompt:
        request.append(messages.SystemPromptPart(content=params.system_prompt))
    response: list[messages.ModelResponsePart] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if message.role == "user":
            if response:
                history.append(messages.ModelResponse(parts=response))
                response = []
            request.extend(messages.UserPromptPart(content=_user_content(block)) for block in blocks)
        else:
            if request:
                history.append(messages.ModelRequest(parts=request))
                request = []
            response.extend(messages.TextPart(content=_assistant_text(block)) for block in blocks)
    if response:
        history.append(messages.ModelResponse(parts=response))
    if request:
        history.append(messages.ModelRequest(parts=request))
    return history


def _user_content(block: Any) -> str | list[messages.UserContent]:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        binary = messages.BinaryContent(data=base64.b64decode(block.data), media_type=block.mime_type)
        return [messages.BinaryContent.narrow_type(binary)]
    raise NotImplementedError(f"sampling_model does not bridge {type(block).__name__} (tool use in sampling)")


def _assistant_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    raise NotImplementedError(f"sampling_model cannot replay an assistant {type(block).__name__}")
