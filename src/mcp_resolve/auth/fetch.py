"""One bounded JSON exchange with an authorization server (its JWKS, its introspection endpoint).

Bounded in time as a whole: one deadline covers connecting, the headers and
every byte of the body, so a server that trickles a byte a second is cut off
at the deadline like one that never answers (httpx's own timeouts bound each
read, which such a server never trips). Bounded in size: a declared length
over the limit is refused unread, and a body is read no further than the limit.

Verifiers fail closed: whatever goes wrong here (no route, the deadline, a
redirect, a 500, an oversized or non-JSON body) becomes `Unreachable` with a
reason fit for the server log, and the token at hand is refused. The reason
names the URL and what happened, never a request body (it may hold a token)
and never a stack trace.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pydantic_core

__all__ = ["Unreachable", "fetch_json"]


class Unreachable(Exception):
    """The authorization server could not give a usable answer; `str()` says why, safely."""


async def fetch_json(
    client: httpx.AsyncClient | None,
    method: str,
    url: str,
    *,
    limit: int,
    timeout: float,
    **request: Any,
) -> Any:
    """The decoded JSON body of a 200 answer of at most `limit` bytes, all of it within `timeout` seconds.

    `Unreachable` otherwise. With no `client`, a short-lived one is used (and
    closed). Redirects are never followed: an endpoint that moved is a
    configuration to fix, not a hop to take with a credential in hand.
    """
    owned = client is None
    http = client or httpx.AsyncClient(timeout=timeout, follow_redirects=False)
    try:
        with anyio.fail_after(timeout):
            async with http.stream(
                method, url, timeout=timeout, follow_redirects=False, **request
            ) as response:
                if response.status_code != 200:
                    raise Unreachable(f"{url} answered HTTP {response.status_code}")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise Unreachable(f"{url} sent more than {limit} bytes")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > limit:
                        raise Unreachable(f"{url} sent more than {limit} bytes")
    except (TimeoutError, httpx.TimeoutException):
        raise Unreachable(f"{url} did not answer in full within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise Unreachable(f"{url} could not be reached ({type(exc).__name__})") from None
    finally:
        if owned:
            await http.aclose()
    try:
        return pydantic_core.from_json(bytes(body))
    except ValueError:
        raise Unreachable(f"{url} sent a body that is not JSON") from None
