"""One OpenAPI operation called over HTTP: arguments placed where the operation wants them.

Path values are percent-encoded whole (a `/` in an id cannot reach another
route) and never empty, `.` or `..` (dot segments a URL normalises away),
query arrays repeat their key (the `form` style OpenAPI defaults to),
headers and cookies are strings, a header value printable ASCII (no CR/LF
to split it). The call has ONE deadline, covering connect,
upload and the whole download, and reads at most `max_response_bytes`.
An error status becomes a `ToolError` with the status and the start of the
body, the client's own credentials (headers, credential query parameters,
URL userinfo) blanked out anywhere in the body before it is cut.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, quote_plus

import anyio
import httpx

from ..errors import ToolError

__all__ = ["Argument", "CallLimits", "Operation", "Response", "ResponseTooLarge", "capped_asgi_app", "send"]

ERROR_BODY_CHARS = 500
"""How much of an error response's body a tool error quotes."""
_COOKIE_SAFE = "!#$&'()*+/:<=>?@[]^`{|}"
"""RFC 6265 cookie octets, sent as they are; the rest (`;`, `,`, space, quotes, `%`) percent-encoded."""
_DOT_SEGMENTS = ("", ".", "..")
"""Path values refused: URL normalisation would drop or climb them, leaving the operation's route."""
_SECRET_HEADERS = ("authorization", "cookie", "proxy-authorization")
_SECRET_WORDS = ("token", "key", "secret", "auth", "password")


@dataclass(frozen=True)
class Argument:
    """Where one tool argument goes: `location` (path, query, header, cookie, body) under `wire` name."""

    location: Literal["path", "query", "header", "cookie", "body", "whole-body"]
    wire: str


@dataclass(frozen=True)
class CallLimits:
    timeout: float
    """Seconds for the whole exchange."""
    max_response_bytes: int
    forward_headers: tuple[str, ...] = ()
    """Incoming HTTP request headers (lower-case) copied onto the upstream request."""


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    arguments: Mapping[str, Argument]
    body_type: str | None = None
    """The request body's media type (JSON, form or another), None without a body."""
    label: str = field(default="")
    """`GET /pets/{id}`: what error messages name (never the filled URL, which may hold secrets)."""


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The parsed body, or raises ValueError when it is not JSON."""
        return json.loads(self.body)

    @property
    def is_json(self) -> bool:
        kind = self.content_type.split(";", 1)[0].strip().lower()
        return kind == "application/json" or kind.endswith("+json")


class ResponseTooLarge(Exception):
    """An in-process app's answer passed the cap (`capped_asgi_app`): the call stops there."""


def capped_asgi_app(app: Any, max_response_bytes: int) -> Any:
    """`app` (ASGI) whose response body stops past `max_response_bytes`, raising `ResponseTooLarge`.

    `httpx.ASGITransport` collects an app's whole answer before the caller reads a
    byte, so a cap checked while reading bounds nothing in memory: this one is
    checked as the app writes.
    """

    async def capped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        size = 0

        async def counted(message: Any) -> None:
            nonlocal size
            if message.get("type") == "http.response.body":
                size += len(message.get("body", b""))
                if size > max_response_bytes:
                    raise ResponseTooLarge
            await send(message)

        await app(scope, receive, counted)

    return capped


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, (dict,)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _request(
    operation: Operation, arguments: Mapping[str, Any], incoming: Mapping[str, str] | None, limits: CallLimits
) -> dict[str, Any]:
    path = operation.path
    params: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    cookies: list[str] = []
    body: dict[str, Any] = {}
    whole: Any = None
    has_whole = False
    for name, value in arguments.items():
        where = operation.arguments.get(name)
        if where is None:
            continue  # not an argument of this operation: dropped, never sent
        if where.location == "path":
            text = _text(value)
            if text in _DOT_SEGMENTS:
                raise ToolError(f"{operation.label}: path parameter {where.wire!r} cannot be {text!r}")
            path = path.replace("{" + where.wire + "}", quote(text, safe=""))
        elif where.location == "query":
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            params.extend((where.wire, _text(v)) for v in values)
        elif value is None and where.location in ("header", "cookie"):
            continue
        elif where.location == "header":
            text = _text(value)
            if not _header_safe(text):
                raise ToolError(
                    f"{operation.label}: header parameter {where.wire!r} must be printable ASCII "
                    "without line breaks"
                )
            headers[where.wire] = text
        elif where.location == "cookie":
            cookies.append(f"{quote(where.wire, safe='')}={quote(_text(value), safe=_COOKIE_SAFE)}")
        elif where.location == "body":
            body[where.wire] = value
        else:
            whole, has_whole = value, True
    if "{" in path:
        raise ToolError(f"{operation.label}: a path parameter has no value")
    if incoming:
        for name in limits.forward_headers:
            if name in incoming and name not in {k.lower() for k in headers}:
                headers[name] = incoming[name]
    if cookies:
        headers["cookie"] = "; ".join(cookies)
    request: dict[str, Any] = {"params": params, "headers": headers}
    if operation.body_type is not None and (body or has_whole):
        payload = whole if has_whole else body
        kind = operation.body_type
        if kind == "application/json" or kind.endswith("+json"):
            request["json"] = payload
        elif kind == "application/x-www-form-urlencoded" and isinstance(payload, Mapping):
            request["data"] = {k: _text(v) for k, v in payload.items()}
        else:
            request["content"] = payload.encode() if isinstance(payload, str) else _text(payload).encode()
            headers["content-type"] = kind
    request["url"] = path
    return request


def _header_safe(text: str) -> bool:
    """Visible ASCII, spaces and tabs only: no CR/LF to split the header, nothing httpx cannot encode."""
    return all(c == "\t" or " " <= c <= "~" for c in text)


async def send(
    client: httpx.AsyncClient,
    operation: Operation,
    arguments: Mapping[str, Any],
    incoming: Mapping[str, str] | None,
    limits: CallLimits,
) -> Response:
    """Call the operation; a transport failure, the deadline or an oversized answer raises ToolError."""
    request = _request(operation, arguments, incoming, limits)
    url = request.pop("url")
    try:
        with anyio.fail_after(limits.timeout):
            async with client.stream(operation.method, url, **request) as reply:
                chunks: list[bytes] = []
                size = 0
                async for chunk in reply.aiter_bytes():
                    size += len(chunk)
                    if size > limits.max_response_bytes:
                        raise ToolError(
                            f"{operation.label}: the response is larger than {limits.max_response_bytes} bytes"
                        )
                    chunks.append(chunk)
                response = Response(
                    reply.status_code, reply.headers.get("content-type", ""), b"".join(chunks)
                )
                # with what `auth=` added: blanked from error pages
                sent = list(reply.request.headers.items())
                url = reply.request.url
    except TimeoutError:
        raise ToolError(f"{operation.label}: no complete answer within {limits.timeout:g} s") from None
    except ResponseTooLarge:
        raise ToolError(
            f"{operation.label}: the response is larger than {limits.max_response_bytes} bytes"
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(f"{operation.label}: the request failed ({type(exc).__name__})") from None
    if response.status >= 400:
        secrets = _secrets([*client.headers.items(), *sent], [*client.params.multi_items()], url)
        raise ToolError(_error_message(operation, response, secrets))
    return response


def _is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _SECRET_HEADERS or any(word in lowered for word in _SECRET_WORDS)


def _secrets(headers: list[tuple[str, str]], params: list[tuple[str, str]], url: httpx.URL) -> list[str]:
    """The credential values the request carried, longest first: credential headers (and the token
    of a `Bearer <token>`), query parameters named like credentials (`api_key=`), the URL's userinfo;
    each also as it looks percent-encoded, the way an API echoing the URL writes it."""
    found = []
    for name, value in headers:
        if _is_secret_name(name):
            found.append(value)
            if " " in value:
                found.append(value.split(" ", 1)[1])
    found.extend(value for name, value in [*params, *url.params.multi_items()] if _is_secret_name(name))
    found.extend((url.username, url.password))
    found.extend([quote(value, safe="") for value in found] + [quote_plus(value) for value in found])
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def _error_message(operation: Operation, response: Response, secrets: list[str]) -> str:
    """The status and the start of the body: the whole body redacted first, then cut."""
    text = response.body.decode("utf-8", errors="replace")
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    if len(text) > ERROR_BODY_CHARS:
        text = text[:ERROR_BODY_CHARS] + f"... ({len(response.body)} bytes in all)"
    text = "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)
    reason = httpx.codes.get_reason_phrase(response.status)
    return f"{operation.label} answered HTTP {response.status} {reason}: {text}".rstrip(": ")
