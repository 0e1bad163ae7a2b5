"""Reading a request body within a size limit, draining the excess so the refusal arrives cleanly."""

from __future__ import annotations

from starlette.types import Receive

__all__ = ["DRAIN_LIMIT", "ClientGone", "read_body"]

DRAIN_LIMIT = 64 * 1024 * 1024  # an oversized body is read and dropped up to here, so the 413 arrives cleanly


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


async def read_body(receive: Receive, limit: int, content_length: bytes | None) -> bytes | None:
    """The whole body, or None when it exceeds `limit`.

    The excess is read and dropped (up to DRAIN_LIMIT past the limit) rather
    than left in the socket: a client still uploading when we answer would see
    a reset, not our 413. A body declared larger than that is refused after
    its first chunk. A body that arrives whole (the usual JSON-RPC message)
    needs no declared length: its size is known.
    """
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):  # all in one message
        whole: bytes = message.get("body", b"")
        return whole if len(whole) <= limit else None
    ceiling = limit + DRAIN_LIMIT
    try:
        declared = int(content_length) if content_length is not None else None
    except ValueError:
        declared = None
    if declared is not None and declared > ceiling:
        return None
    chunks: list[bytes] | None = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise ClientGone
        body = message.get("body", b"")
        size += len(body)
        if chunks is not None:
            chunks.append(body)
            if size > limit:
                chunks = None
        if not message.get("more_body", False) or size > ceiling:
            break
        message = await receive()
    return None if chunks is None else b"".join(chunks)
