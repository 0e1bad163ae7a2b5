"""A certified OpenID provider as the authorization server, and a proxy that drops chosen connections.

`oidc_provider(resource, issuer)` runs `oidc-provider` 9.x (tests/node/oidc_server.mjs, on the
repo-local Node 22) on a free loopback port: dynamic registration, PKCE, resource indicators with
JWT access tokens for `resource`, refresh tokens, and a scripted person (alice) who logs in and
consents as soon as the interaction page is fetched, so an HTTP client that follows redirects and
keeps cookies (`HeadlessBrowser`) completes the login.

`DroppingProxy` stands in front of it on the issuer's URL and passes every request through, one
request per connection, except the ones a test asks it to drop: the connection is closed without an
answer, either before the request reaches the provider or after the provider has handled it (the
answer is lost on the way back). Both are real TCP connections on loopback; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.abc
import pytest

__all__ = ["NODE", "NODE_DIR", "DroppingProxy", "node_installed", "node_script", "oidc_provider"]

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"
LAUNCHER = NODE_DIR / "oidc_server.mjs"
PACKAGE = NODE_DIR / "node_modules" / "oidc-provider" / "package.json"
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
MAX_RESPONSE_BYTES = 4 * 1024 * 1024

When = Literal["before", "after"]
"""Drop the connection before the request reaches the provider, or after it answered (the answer is lost)."""


def node_installed() -> None:
    """The repo-local Node 22 and oidc-provider, installed with `npm ci` when missing (skip without npm)."""
    if NODE.exists() and PACKAGE.exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot install tests/node (oidc-provider, Node 22)")
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True, timeout=300
    )


@asynccontextmanager
async def oidc_provider(
    resource: str, issuer: str | None = None, *, scopes: str = "mcp:read mcp:write", dpop_nonces: bool = False
) -> AsyncIterator[tuple[str, int]]:
    """oidc-provider for `resource` until the block ends; yields (its issuer, the port it listens on).

    `issuer` is the URL it announces when it is reached through a proxy (default: its own);
    `scopes` are all it will grant for `resource` (a scope outside them is left out of a grant);
    `dpop_nonces` makes its token endpoint demand a DPoP nonce (DPoP itself is on in oidc-provider 9).
    """
    node_installed()
    command = [str(NODE), str(LAUNCHER), resource, *([issuer] if issuer else [])]
    env = {**os.environ, "RESOURCE_SCOPES": scopes, "DPOP_NONCES": "1" if dpop_nonces else "0"}
    async with node_script(command, env, "oidc-provider") as ready:
        yield str(ready["issuer"]), int(ready["port"])


@asynccontextmanager
async def node_script(command: list[str], env: dict[str, str], what: str) -> AsyncIterator[dict[str, Any]]:
    """Run a Node script of tests/node until the block ends; yields the JSON line it prints once ready.

    It is stopped with SIGTERM (then killed after 5 s) whatever happens; a script that prints no
    line within 30 s is an error carrying its standard error.
    """
    with tempfile.TemporaryFile() as stderr:
        process = await anyio.open_process(
            command, cwd=NODE_DIR, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        try:
            assert process.stdout is not None
            line = b""
            with anyio.move_on_after(30):
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive(4096)
            if not line.endswith(b"\n"):
                stderr.seek(0)
                raise RuntimeError(f"{what} did not start: {stderr.read().decode(errors='replace')}")
            yield dict(json.loads(line))
        finally:
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(5, shield=True):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    with anyio.CancelScope(shield=True):
                        await process.wait()
            await process.aclose()


@dataclass
class DroppingProxy:
    """An HTTP pass-through on loopback that closes chosen connections without answering.

    Each request is sent upstream on a connection of its own with `Connection: close`, so the
    client never reuses a connection either, and each request is seen (and can be dropped) alone.
    """

    upstream_port: int | None = None
    url: str = ""
    """`http://127.0.0.1:PORT` while it serves."""
    seen: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of every request that arrived, in order."""
    dropped: list[tuple[str, str, When]] = field(default_factory=list)
    _plan: list[tuple[str, str, When]] = field(default_factory=list)

    def drop_next(self, method: str, path: str, when: When) -> None:
        """Drop the next request for `method` `path` (once)."""
        self._plan.append((method, path, when))

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Listen until the block ends; yields `http://127.0.0.1:PORT`."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, self._handle)
            self.url = f"http://127.0.0.1:{port}"
            try:
                yield self.url
            finally:
                group.cancel_scope.cancel()

    def _take(self, method: str, path: str) -> When | None:
        for index, (m, p, when) in enumerate(self._plan):
            if (m, p) == (method, path):
                del self._plan[index]
                self.dropped.append((method, path, when))
                return when
        return None

    async def _handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            with anyio.move_on_after(30):
                request = await _read_request(client)
                if request is None:
                    return
                method, target, head, body = request
                path = urlsplit(target).path
                self.seen.append((method, path))
                when = self._take(method, path)
                if when == "before":
                    return  # closed: the provider never sees this request
                assert self.upstream_port is not None, "the proxy has nowhere to send requests yet"
                async with await anyio.connect_tcp("127.0.0.1", self.upstream_port) as upstream:
                    await upstream.send(_closing(head) + body)
                    response = await _read_to_end(upstream)
                if when == "after":
                    return  # the provider handled it; its answer is lost on the way back
                await client.send(response)


async def _read_request(stream: anyio.abc.SocketStream) -> tuple[str, str, bytes, bytes] | None:
    """One request (its head and a Content-Length body), or None when the client sent none."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            data += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
        if len(data) > MAX_HEAD_BYTES:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length > MAX_BODY_BYTES:
        return None
    while len(body) < length:
        try:
            body += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    return method, target, head + b"\r\n\r\n", body


def _closing(head: bytes) -> bytes:
    """The request head with `Connection: close` instead of whatever the client said."""
    lines = [
        line
        for line in head.rstrip(b"\r\n").split(b"\r\n")
        if not line.lower().startswith((b"connection:", b"keep-alive:"))
    ]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n"


async def _read_to_end(stream: anyio.abc.SocketStream) -> bytes:
    """Everything the upstream sends until it closes (it answers `Connection: close`)."""
    data = b""
    while len(data) <= MAX_RESPONSE_BYTES:
        try:
            data += await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            break
    return data
