"""Helpers a tool or prompt returns: `Image`, `Audio` and prompt messages, named as in the official SDK.

A tool returning `Image(...)` or `Audio(...)` (alone or in a list) answers with
an `ImageContent`/`AudioContent` block; a prompt returning `UserMessage(...)`
or `AssistantMessage(...)` answers with messages in those roles.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Any, Literal

from mcp_types import AudioContent, ContentBlock, Icon, ImageContent, PromptMessage, TextContent

__all__ = ["AssistantMessage", "Audio", "Icon", "Image", "Message", "UserMessage"]

_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
_AUDIO_TYPES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".aac": "audio/aac",
    ".m4a": "audio/mp4",
}


class _Media:
    """Bytes from a file or in memory, sent base64-encoded with a MIME type."""

    _kind: str
    _default: str
    _by_suffix: dict[str, str]

    def __init__(
        self, path: str | Path | None = None, data: bytes | None = None, format: str | None = None
    ) -> None:
        if (path is None) == (data is None):
            raise ValueError(f"{type(self).__name__} takes exactly one of path or data")
        self.path = Path(path) if path is not None else None
        self.data = data
        self.mime_type = self._mime(format)

    def _mime(self, format: str | None) -> str:
        if format:
            return f"{self._kind}/{format.lower()}"
        if self.path is None:
            return self._default
        suffix = self.path.suffix.lower()
        return (
            self._by_suffix.get(suffix)
            or mimetypes.guess_type(self.path.name)[0]
            or "application/octet-stream"
        )

    def _base64(self) -> str:
        raw = self.path.read_bytes() if self.path is not None else self.data
        assert raw is not None
        return base64.b64encode(raw).decode("ascii")


class Image(_Media):
    """An image a tool returns (or a prompt message carries): `Image(path=...)` or `Image(data=..., format="png")`."""

    _kind, _default, _by_suffix = "image", "image/png", _IMAGE_TYPES

    def to_image_content(self) -> ImageContent:
        return ImageContent(type="image", data=self._base64(), mime_type=self.mime_type)

    def to_content_block(self) -> ImageContent:
        return self.to_image_content()


class Audio(_Media):
    """Audio a tool returns (or a prompt message carries): `Audio(path=...)` or `Audio(data=..., format="wav")`."""

    _kind, _default, _by_suffix = "audio", "audio/wav", _AUDIO_TYPES

    def to_audio_content(self) -> AudioContent:
        return AudioContent(type="audio", data=self._base64(), mime_type=self.mime_type)

    def to_content_block(self) -> AudioContent:
        return self.to_audio_content()


def _block(content: str | ContentBlock | Image | Audio) -> ContentBlock:
    if isinstance(content, str):
        return TextContent(type="text", text=content)
    if isinstance(content, (Image, Audio)):
        return content.to_content_block()
    return content


class Message(PromptMessage):
    """One prompt message; `content` may be text, an `Image`/`Audio` or any content block."""

    def __init__(self, content: str | ContentBlock | Image | Audio, **fields: Any) -> None:
        super().__init__(content=_block(content), **fields)


class UserMessage(Message):
    """A prompt message in the user's role."""

    role: Literal["user", "assistant"] = "user"


class AssistantMessage(Message):
    """A prompt message in the assistant's role."""

    role: Literal["user", "assistant"] = "assistant"
