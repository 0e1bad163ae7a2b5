"""Where the client keeps what an authorization produced: tokens and client registrations.

A store is a small async key-value interface of JSON objects, so putting
tokens in a keyring, a database or a secrets manager is a few lines. Two
kinds of record are kept:

* `tokens <server url>`: the token set for one MCP endpoint (access token,
  refresh token, expiry, scopes, and the issuer that minted them);
* `client <issuer>`: a dynamic client registration, keyed by the
  authorization server that issued it (the spec forbids using one server's
  client credentials at another).

`MemoryTokenStorage` (the default) forgets everything with the process;
`FileTokenStorage` keeps one JSON file readable only by its owner, for
command-line tools that should not ask the person to log in every run.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio

__all__ = ["FileTokenStorage", "MemoryTokenStorage", "TokenStorage"]


@runtime_checkable
class TokenStorage(Protocol):
    """Async key-value storage of JSON objects; values contain secrets, so store them as such."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def set(self, key: str, value: dict[str, Any]) -> None: ...

    async def delete(self, key: str) -> None: ...


class MemoryTokenStorage:
    """Kept in this process only: every new process logs in again."""

    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        value = self._items.get(key)
        return dict(value) if value is not None else None

    async def set(self, key: str, value: dict[str, Any]) -> None:
        self._items[key] = dict(value)

    async def delete(self, key: str) -> None:
        self._items.pop(key, None)


class FileTokenStorage:
    """One JSON file, mode 0600 in a 0700 directory, replaced atomically on every write.

    Refresh tokens are long-lived credentials (the spec asks clients to keep
    them confidential at rest): the file is created readable by its owner
    only, and a file that others can read is refused rather than used.
    Writes go to a temporary file in the same directory and are renamed over
    the old one, so a crash never leaves half a file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = anyio.Lock()

    async def get(self, key: str) -> dict[str, Any] | None:
        async with self._lock:
            value = (await anyio.to_thread.run_sync(self._read)).get(key)
        return value if isinstance(value, dict) else None

    async def set(self, key: str, value: dict[str, Any]) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._update, key, value)

    async def delete(self, key: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._update, key, None)

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as file:
                if os.name == "posix" and os.fstat(file.fileno()).st_mode & 0o077:
                    raise PermissionError(
                        f"{self.path} is readable by other users; refusing to use the tokens in it "
                        "(chmod 600 it, or delete it to log in again)"
                    )
                data = json.load(file)
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError:
            return {}  # a damaged file means logging in again, never a crash
        return data if isinstance(data, dict) else {}

    def _update(self, key: str, value: dict[str, Any] | None) -> None:
        data = self._read()
        if value is None:
            if data.pop(key, None) is None:
                return
        else:
            data[key] = value
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:  # mkstemp creates it 0600
                json.dump(data, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
