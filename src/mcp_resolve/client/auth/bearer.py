"""A fixed bearer token, for `Client(url, auth="<token>")`: no flow, no refresh, no extra dependency."""

from __future__ import annotations

from collections.abc import Generator

import httpx

__all__ = ["BearerToken"]


class BearerToken(httpx.Auth):
    """Sends `Authorization: Bearer <token>` on every request (the spec wants it on every one)."""

    def __init__(self, token: str) -> None:
        if not token or any(c in token for c in "\r\n"):
            raise ValueError("a bearer token must be a non-empty single-line string")
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request

    def __repr__(self) -> str:
        return "BearerToken(<hidden>)"  # tokens never reach logs or tracebacks through repr
