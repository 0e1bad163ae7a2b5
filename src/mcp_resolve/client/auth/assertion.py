"""Where a signed assertion comes from: a string, a file read afresh on each use, or a function.

The workload identity grant and enterprise sign-in both present a JWT some
other system issued (a Kubernetes service-account token, a cloud metadata
token, an enterprise ID token). Such tokens rotate under the client: a
projected service-account token file is rewritten every hour or so, so a
file is read again every time a token is obtained, never once at start. A
function is called each time too (it may fetch from a metadata server), and
must answer within the flow's deadline, like any fetch.

Whatever comes back is bounded and must look like a compact JWS before it
is sent anywhere; it never appears in a log line or an error message.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Union

import anyio

from .errors import AuthorizationError

__all__ = ["JWT_BEARER", "MAX_ASSERTION_CHARS", "AssertionSource", "read_assertion"]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""The JWT bearer grant type (RFC 7523 §2.1): both workload identity and enterprise sign-in end with it."""

AssertionSource = Union[str, "os.PathLike[str]", Callable[[], Union[str, Awaitable[str]]]]
"""A JWT as a string, a path to a file holding one (re-read on each use), or a function returning one."""

MAX_ASSERTION_CHARS = 16 * 1024
"""Far above any identity token in use; a file bigger than this is not one."""


async def read_assertion(source: AssertionSource, what: str, deadline: float) -> str:
    """The assertion `source` holds now, checked to be a compact JWT (an AuthorizationError if not).

    `what` names it in errors ("the workload assertion"); the value itself never does. A function
    (which may fetch from a metadata server) must answer within `deadline` seconds.
    """
    if isinstance(source, str):
        value: object = source
    elif isinstance(source, os.PathLike):
        value = await _read_file(Path(source), what)
    elif callable(source):
        try:
            with anyio.fail_after(deadline):
                value = source()
                if inspect.isawaitable(value):
                    value = await value
        except AuthorizationError:
            raise
        except TimeoutError:
            raise AuthorizationError(
                "assertion_unavailable", f"the function giving {what} did not answer within {deadline:g} s"
            ) from None
        except Exception as exc:
            raise AuthorizationError(
                "assertion_unavailable", f"the function giving {what} raised {type(exc).__name__}"
            ) from None
    else:
        raise TypeError(f"{what} must be a string, a path or a function, not {type(source).__name__}")
    if not isinstance(value, str):
        raise AuthorizationError("assertion_unavailable", f"{what} is not a string")
    token = value.strip()
    if not token or len(token) > MAX_ASSERTION_CHARS or not _looks_like_jwt(token):
        raise AuthorizationError("assertion_unavailable", f"{what} is not a compact JWT")
    return token


async def _read_file(path: Path, what: str) -> str:
    try:
        data = await anyio.to_thread.run_sync(_read_bounded, path)
    except OSError as exc:
        raise AuthorizationError(
            "assertion_unavailable",
            f"could not read {what} from {path}: {exc.strerror or type(exc).__name__}",
        ) from None
    if data is None:
        raise AuthorizationError("assertion_unavailable", f"{what} in {path} is larger than any JWT")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise AuthorizationError("assertion_unavailable", f"{what} in {path} is not a compact JWT") from None


def _read_bounded(path: Path) -> bytes | None:
    with path.open("rb") as file:
        data = file.read(MAX_ASSERTION_CHARS + 2)  # a trailing newline is allowed
    return None if len(data) > MAX_ASSERTION_CHARS + 1 else data


def _looks_like_jwt(token: str) -> bool:
    """Three base64url parts separated by dots (a JWS); nothing else is sent as an assertion."""
    parts = token.split(".")
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    return len(parts) == 3 and all(part and set(part) <= allowed for part in parts)
