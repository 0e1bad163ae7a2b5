"""Parity with the official SDK's `MCPServer`: constructor arguments and helper names a port keeps.

Each server here is written once and built twice, on the official
`mcp.server.MCPServer` and on ours, so what the official client sees from the
two can be compared.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server import mcpserver as official

import mcp_resolve
from http_helpers import http_server
from mcp_resolve import AssistantMessage, Audio, Icon, Image, MCPServer, Message, UserMessage
from mcp_resolve.exceptions import InvalidSignature, ToolError

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\nfake"
IDENTITY: dict[str, Any] = {
    "title": "Parity Server",
    "description": "Built on both SDKs",
    "website_url": "https://example.com/parity",
    "icons": [Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=["48x48"])],
}


def define(mcp: Any, image: Any, audio: Any, user: Any, assistant: Any) -> Any:
    """The same tools and prompt on either SDK's server, with that SDK's helpers."""

    @mcp.tool()
    def picture():  # type: ignore[no-untyped-def]  # unannotated: content, not structured output
        """An image."""
        return image(data=PNG, format="png")

    @mcp.tool()
    def media():  # type: ignore[no-untyped-def]
        """Text, an image and a sound."""
        return ["both", image(data=PNG), audio(data=b"RIFF", format="wav")]

    @mcp.prompt()
    def chat(topic: str):  # type: ignore[no-untyped-def]
        """A short exchange."""
        return [user(f"Tell me about {topic}"), assistant("Gladly."), user(image(data=PNG))]

    return mcp


async def _observe(client: Any) -> dict[str, Any]:
    info = client.server_info
    pictured = await client.call_tool("picture", {})
    mixed = await client.call_tool("media", {})
    prompt = await client.get_prompt("chat", {"topic": "owls"})
    dump = lambda m: m.model_dump(by_alias=True, exclude_none=True, mode="json")  # noqa: E731
    return {
        "info": {k: v for k, v in dump(info).items() if k != "version"},
        "picture": [dump(b) for b in pictured.content],
        "media": [dump(b) for b in mixed.content],
        "prompt": [dump(m) for m in prompt.messages],
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_sees_the_same_identity_media_and_messages_from_both_servers(mode: str) -> None:
    theirs = define(
        OfficialServer("parity", **IDENTITY),
        official.Image,
        official.Audio,
        official.UserMessage,
        official.AssistantMessage,
    )
    ours = define(MCPServer("parity", **IDENTITY), Image, Audio, UserMessage, AssistantMessage)
    async with OfficialClient(theirs, mode=mode) as client:
        expected = await _observe(client)
    async with (
        http_server(ours.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode) as client,
    ):
        got = await _observe(client)
    assert got == expected
    assert got["info"]["websiteUrl"] == "https://example.com/parity"
    assert got["info"]["icons"] == [
        {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}
    ]
    assert got["picture"] == [
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}
    ]
    assert [b["type"] for b in got["media"]] == ["text", "image", "audio"]
    assert [m["role"] for m in got["prompt"]] == ["user", "assistant", "user"]


async def test_our_client_reads_identity_and_media_in_memory() -> None:
    server = define(MCPServer("parity", **IDENTITY), Image, Audio, UserMessage, AssistantMessage)
    async with mcp_resolve.Client(server) as client:
        assert client.server_info is not None
        assert client.server_info["title"] == "Parity Server"
        assert client.server_info["description"] == "Built on both SDKs"
        result = await client.call_tool("media", {})
        audio = result.content[2]
        assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"


def test_image_and_audio_from_a_path_guess_the_mime_type(tmp_path: Any) -> None:
    (tmp_path / "a.jpg").write_bytes(b"jpg")
    (tmp_path / "b.mp3").write_bytes(b"mp3")
    image = Image(path=tmp_path / "a.jpg").to_image_content()
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/jpeg", b"jpg")
    assert Audio(path=str(tmp_path / "b.mp3")).to_audio_content().mime_type == "audio/mpeg"
    with pytest.raises(ValueError):
        Image()
    with pytest.raises(ValueError):
        Audio(path="x.wav", data=b"x")


def test_message_takes_text_media_or_a_block_and_a_role() -> None:
    assert Message("hi", role="assistant").content == types.TextContent(type="text", text="hi")
    assert UserMessage(Audio(data=b"x")).content.type == "audio"
    block = types.TextContent(type="text", text="as is")
    assert AssistantMessage(block).model_dump(by_alias=True, exclude_none=True) == {
        "role": "assistant",
        "content": {"type": "text", "text": "as is"},
    }


def test_duplicate_registrations_warn_unless_told_not_to(caplog: pytest.LogCaptureFixture) -> None:
    def build(**flags: bool) -> MCPServer:
        mcp = MCPServer("dupes", **flags)
        for _ in range(2):
            mcp.tool(name="same")(lambda: "x")
            mcp.resource("note://same")(lambda: "x")
            mcp.resource("note://{name}")(lambda name: name)
            mcp.prompt(name="same")(lambda: "x")
        return mcp

    with caplog.at_level(logging.WARNING, logger="mcp_resolve"):
        build()
    warned = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("Tool already exists: same") for m in warned)
    assert sum(m.startswith("Resource already exists") for m in warned) == 2
    assert any(m.startswith("Prompt already exists: same") for m in warned)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mcp_resolve"):
        build(
            warn_on_duplicate_tools=False, warn_on_duplicate_resources=False, warn_on_duplicate_prompts=False
        )
    assert caplog.records == []


def test_debug_log_level_and_dependencies() -> None:
    quiet = logging.getLogger("mcp_resolve").level
    try:
        mcp = MCPServer("flags", debug=True, log_level="DEBUG", dependencies=["pandas"])
        assert logging.getLogger("mcp_resolve").level == logging.DEBUG
    finally:
        logging.getLogger("mcp_resolve").setLevel(quiet)
    assert mcp.dependencies == ["pandas"]
    assert mcp.streamable_http_app().debug is True
    assert MCPServer("plain").streamable_http_app().debug is False
    assert MCPServer("plain").server_info() == {"name": "plain", "version": "0.1.0"}


def test_exceptions_module_names_match_the_official_ones_that_map() -> None:
    from mcp.server.mcpserver import exceptions as theirs

    assert ToolError is mcp_resolve.ToolError and InvalidSignature is mcp_resolve.InvalidSignature
    assert hasattr(theirs, "ToolError") and hasattr(theirs, "InvalidSignature")
    for name in ("Image", "Audio", "Icon", "UserMessage", "AssistantMessage", "Message"):
        assert name in mcp_resolve.__all__ and name in official.__all__


async def test_a_tool_annotated_to_return_image_sends_image_content() -> None:
    mcp = MCPServer("typed")

    @mcp.tool()
    def snap() -> Image:
        return Image(data=PNG)

    async with mcp_resolve.Client(mcp) as client:
        result = await client.call_tool("snap", {})
        assert result.structured_content is None
        assert isinstance(result.content[0], types.ImageContent)
