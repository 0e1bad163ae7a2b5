"""Media types: whether a POST's body is JSON, and whether its client takes JSON, an SSE stream, or both."""

from __future__ import annotations

from functools import lru_cache

from .hosts import PARSED_HEADERS as _PARSED_HEADERS

__all__ = ["accepted_media", "is_json_content", "post_media"]


@lru_cache(maxsize=_PARSED_HEADERS)
def accepted_media(accept: str | None) -> tuple[bool, bool]:
    """Whether the client takes (JSON, an SSE stream), from its Accept header; wildcards count."""
    json_ok = sse_ok = False
    for part in (accept or "").split(","):
        media, *params = part.split(";")
        media = media.strip().lower()
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 1.0
        if quality <= 0:
            continue
        json_ok = json_ok or media in ("application/json", "application/*", "*/*")
        sse_ok = sse_ok or media in ("text/event-stream", "text/*", "*/*")
    return json_ok, sse_ok


def is_json_content(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "application/json"


@lru_cache(maxsize=_PARSED_HEADERS)
def post_media(content_type: bytes | None, accept: bytes | None) -> tuple[bool, bool, bool]:
    """(the body is JSON, the client takes JSON, the client takes SSE) from a POST's raw headers."""
    json_ok, sse_ok = accepted_media(None if accept is None else accept.decode("latin-1"))
    return is_json_content(None if content_type is None else content_type.decode("latin-1")), json_ok, sse_ok
