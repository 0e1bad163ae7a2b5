"""One bounded JSON exchange with an authorization server (its JWKS, its introspection endpoint).

Verifiers fail closed: whatever goes wrong here (no route, a timeout, a
redirect, a 500, an oversized or non-JSON body) becomes `Unreachable` with a
reason fit for the server log, and the token at hand is refused. The reason
names the URL and what happened, never a request body (it may hold a token)
and never a stack trace.
"""

from __future__ import annotations

from typing import Any

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
    """The decoded JSON body of a 200 answer of at most `limit` bytes; `Unreachable` otherwise.

    With no `client`, a short-lived one is used (and closed). Redirects are
    never followed: an endpoint that moved is a configuration to fix, not a
    hop to take with a credential in hand.
    """
    owned = client is None
    http = client or httpx.AsyncClient(timeout=timeout, follow_redirects=False)
    try:
        async with http.stream(method, url, timeout=timeout, follow_redirects=False, **request) as response:
            if response.status_code != 200:
                raise Unreachable(f"{url} answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise Unreachable(f"{url} sent more than {limit} bytes")
    except httpx.TimeoutException:
        raise Unreachable(f"{url} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise Unreachable(f"{url} could not be reached ({type(exc).__name__})") from None
    finally:
        if owned:
            await http.aclose()
    try:
        return pydantic_core.from_json(bytes(body))
    except ValueError:
        raise Unreachable(f"{url} sent a body that is not JSON") from None
