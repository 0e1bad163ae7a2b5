"""`--reload`: serve a server file again whenever it, or a `.py` file beside it, changes.

Over HTTP, a supervisor process binds the port once and keeps the listening socket for its whole
life; the server itself runs in a worker process that inherits that socket. On a change the
supervisor starts a new worker, which loads the file and says so before it serves anything. A
file that does not load (a syntax error, an `InvalidSignature` from registration, any other import
error), or whose lifespan fails at startup (the worker starts it before the old one stops), is
reported by that worker, which exits, and the running worker keeps serving the last good version
until the file is fixed. A file that loads and starts replaces the running worker: the old one
stops gracefully (requests in flight finish), then the new one, already loaded, serves on the same
socket. Clients keep their URL: a connection that arrives during the swap waits in the socket's
backlog.

A fresh process per version, rather than re-importing in place behind a stable ASGI shim, is the
choice because a process loads the edited file and every module beside it afresh, with no stale
`sys.modules` entry, no half-run import and no background task of the old version left running;
and the port never closes, which is what a client needs. Old and new never serve side by side:
two processes would each keep their own sessions and single-use claims. Each worker seals
requestState with its own key unless `MCP_RESOLVE_STATE_KEYS` is set, so a 2026-07-28 round
begun before a reload is refused after it (the client starts the call again); sessions of
handshake-era (2025) clients end with the worker, and those clients initialize again.

Over stdio the client owns the pipe, and a pipe cannot be handed to a new server mid-session (the
client's initialization and whatever the old process had read would be lost). So the server runs
in a worker on the client's pipe; a change is loaded in a separate process first, a broken one
is reported on stderr while the running server keeps serving, and a good one ends the server
(status 0, after saying so on stderr): the client sees its server exit and starts it again to get
the new code (the MCP Inspector: Connect). `mcp-resolve dev --reload` serves over HTTP instead,
so the Inspector stays connected.

`watchfiles` (a maintained Rust-backed watcher, the one uvicorn's own `--reload` uses) is an
optional extra, `mcp-resolve[reload]`, imported only when `--reload` is given.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, get_args

from ._target import CLIError, absolute_target, split_target

__all__ = [
    "NO_WATCHFILES",
    "RELOAD_WORKER_ENV",
    "load_check",
    "require_watchfiles",
    "reload_http",
    "reload_stdio",
    "reload_worker",
]

RELOAD_WORKER_ENV = "MCP_RESOLVE_RELOAD_WORKER"
NO_WATCHFILES = (
    "--reload watches the server's files with watchfiles, which is not installed.\n"
    "Install it with: pip install 'mcp-resolve[reload]'   (or: pip install watchfiles)"
)
START_TIMEOUT = 60.0
"""Seconds a new worker may take to load the file and start serving before it counts as failed."""
STOP_TIMEOUT = 10.0
"""Seconds an old worker may take to finish its requests and stop before it is killed."""
GRACEFUL_SHUTDOWN = 2
"""Seconds uvicorn gives open streams (a GET stream, a long call) to end when a worker is replaced."""


def require_watchfiles() -> Any:
    """The watchfiles module; `CLIError` saying what to install when it is absent."""
    try:
        import watchfiles
    except ImportError:
        raise CLIError(NO_WATCHFILES) from None
    return watchfiles


def _watched(target: str) -> tuple[Path, Any]:
    """The folder to watch and a filter: the served file, and the `.py` files directly beside it."""
    served = split_target(target)[0].resolve()
    folder = served.parent

    def wanted(_change: Any, path: str) -> bool:
        changed = Path(path)
        return changed == served or (changed.parent == folder and changed.suffix == ".py")

    return folder, wanted


class _Changes:
    """Batches of changes to what `target` serves, watched from now on in a thread (names relative to its folder).

    Watching starts before the first server does, so no edit made while it starts is missed.
    """

    def __init__(self, target: str) -> None:
        self.folder, wanted = _watched(target)
        self.stop = threading.Event()
        self.batches: queue.Queue[list[str]] = queue.Queue()
        watching = require_watchfiles().watch(
            self.folder, watch_filter=wanted, stop_event=self.stop, recursive=False, raise_interrupt=False
        )
        self.ready = threading.Event()
        threading.Thread(target=self._run, args=(watching,), daemon=True).start()
        self.ready.wait(5)

    def _run(self, watching: Any) -> None:
        self.ready.set()
        for batch in watching:
            self.batches.put(sorted({os.path.relpath(path, self.folder) for _change, path in batch}))

    def next(self, alive: Any = None) -> list[str] | None:
        """The next batch; None once `alive()` (checked between waits) turns false."""
        while alive is None or alive():
            try:
                return self.batches.get(timeout=0.2)  # short waits: Ctrl-C and SIGTERM are seen between
            except queue.Empty:
                continue
        return None


def _say(message: str) -> None:
    print(f"mcp-resolve --reload: {message}", file=sys.stderr, flush=True)


# -- HTTP: a supervisor keeps the socket, workers come and go ----------------------------------------
def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Worker:
    """A worker process, a pipe it speaks on and a channel it is told on: it says `L` once the file is
    loaded and its lifespan started, and `1` once serving; it is told `1` (go), with the listening
    socket attached, to start serving, or sees the channel close and ends unused.

    The socket is handed over only with `go`: while a new version starts, the old worker is the only
    process holding it, so the new one's startup sees itself alone (the fleet check counts the
    processes sharing a listening socket) and a version that fails to start never touched it.
    """

    def __init__(self, sock: socket.socket, settings: dict[str, Any]) -> None:
        self.sock = sock
        self.said, ready_write = os.pipe()
        self.channel, theirs = socket.socketpair()
        handed = {**settings, "ready": ready_write, "go": theirs.fileno()}
        command = [sys.executable, "-c", "from mcp_resolve.cli._reload import reload_worker; reload_worker()"]
        try:
            self.process = subprocess.Popen(
                command,
                env={**os.environ, RELOAD_WORKER_ENV: json.dumps(handed)},
                pass_fds=(ready_write, theirs.fileno()),
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(ready_write)
            theirs.close()

    def hears(self, expected: bytes) -> bool:
        readable, _, _ = select.select([self.said], [], [], START_TIMEOUT)
        if not readable:  # neither there nor gone within the deadline
            _say(f"the server did not start within {START_TIMEOUT:.0f} s; stopping it")
            return False
        return os.read(self.said, 1) == expected

    def loaded(self) -> bool:
        """Whether the file loaded and its lifespan started (else the worker has said why, and is stopped)."""
        if self.hears(b"L"):
            return True
        self.stop()
        return False

    def serving(self) -> bool:
        """Hand the loaded worker the socket and tell it to serve; whether it is serving."""
        try:
            socket.send_fds(self.channel, [b"1"], [self.sock.fileno()])
        except OSError:  # it has gone meanwhile
            self.stop()
            return False
        if self.hears(b"1"):
            return True
        self.stop()
        return False

    def stop(self) -> None:
        try:
            os.close(self.said)
        except OSError:
            pass  # closed already
        self.channel.close()
        _stop(self.process)


def _interrupt(_signal: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def reload_http(
    target: str,
    *,
    host: str,
    port: int,
    path: str,
    hosts: list[str] | None,
    origins: list[str] | None,
    log_level: str | None,
    trusted_proxies: list[str] | None,
) -> int:
    """Serve `target` over HTTP on one socket, replacing the worker on every good change; 0 on Ctrl-C."""
    changes = _Changes(target)  # before binding anything: without watchfiles, say so and stop
    sock = _listen(host, port)
    settings = {
        "target": absolute_target(target),
        "path": path,
        "host": host,
        "hosts": hosts,
        "origins": origins,
        "log_level": log_level,
        "trusted_proxies": trusted_proxies,
    }
    signal.signal(signal.SIGTERM, _interrupt)  # stopped like Ctrl-C: the worker is stopped too
    worker: _Worker | None = None  # the one serving
    fresh: _Worker | None = None  # the one starting, stopped too if serving ends while it starts
    try:
        fresh = _Worker(sock, settings)
        worker, fresh = (fresh if fresh.loaded() and fresh.serving() else None), None
        _say(f"serving {target}" if worker else f"{target} did not start; waiting for a fix")
        while (changed := changes.next()) is not None:
            _say(f"{', '.join(changed)} changed; loading it")
            fresh = _Worker(sock, settings)
            if not fresh.loaded():
                kept = "the last good server keeps serving" if worker else "waiting for a fix"
                _say(f"the change did not load (above); {kept}")
                fresh = None
                continue
            # Loaded: the old worker stops before the new one serves, so the two never serve side by side.
            if worker is not None:
                worker.stop()
            worker, fresh = (fresh if fresh.serving() else None), None
            _say(f"reloaded {target}" if worker else f"{target} did not start; waiting for a fix")
    except KeyboardInterrupt:
        pass
    finally:
        changes.stop.set()
        for started in (fresh, worker):
            if started is not None:
                started.stop()
        sock.close()
    return 0


def _show_load_error(exc: BaseException, served: Path) -> None:
    """What failed, where in the author's files: the exception's line, and the last frame in their folder."""
    from ..errors import InvalidSignature

    if isinstance(exc, InvalidSignature):
        print(f"InvalidSignature: {exc}", file=sys.stderr)
        return
    if isinstance(exc, CLIError):
        print(f"mcp-resolve: {exc}", file=sys.stderr)
        return
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).parent == served.parent]
    if frames and not isinstance(exc, SyntaxError):
        print(f'  File "{frames[-1].filename}", line {frames[-1].lineno}', file=sys.stderr)
    print("".join(traceback.format_exception_only(type(exc), exc)).rstrip(), file=sys.stderr)


def reload_worker() -> None:
    """One `--reload` worker: load the file and say so, then, once told to, serve it on the supervisor's
    socket and say when serving."""
    import asyncio

    import uvicorn

    from .._logs import configure_logging
    from ..settings import LogLevel
    from ..transports.http import ServerLimits, default_allowed_hosts, uvicorn_options
    from ._target import load_server

    settings = json.loads(os.environ.pop(RELOAD_WORKER_ENV))
    ready, go = settings["ready"], settings["go"]
    level = configure_logging(settings["log_level"])
    try:
        server = load_server(settings["target"])
        allowed = settings["hosts"] or default_allowed_hosts(settings["host"])
        app = server.streamable_http_app(
            path=settings["path"], allowed_hosts=allowed, allowed_origins=settings["origins"]
        )
    except BaseException as exc:
        _show_load_error(exc, split_target(settings["target"])[0])
        sys.exit(1)
    config = uvicorn.Config(
        app,
        log_level=level.lower() if level in get_args(LogLevel) else "info",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
        **uvicorn_options(ServerLimits(), trusted_proxies=settings["trusted_proxies"]),
    )
    config.load()
    lifespan = config.lifespan_class(config)
    served = uvicorn.Server(config)
    channel = socket.socket(fileno=go)
    handed: list[socket.socket] = []

    def supervisor_gone() -> None:
        # The go pipe closes when the supervisor stops this worker or dies (even by SIGKILL): never
        # outlive it, holding the port.
        if not os.read(go, 1):
            asyncio.get_running_loop().remove_reader(go)
            served.should_exit = True

    def receive(said: asyncio.Future[bool]) -> None:
        if said.done():
            return
        message, fds, _flags, _address = socket.recv_fds(channel, 1, 1)
        handed.extend(socket.socket(fileno=fd) for fd in fds)
        said.set_result(message == b"1" and len(handed) == 1)

    async def told_to_go() -> bool:
        """The supervisor's go, with the listening socket; False when it closes the channel instead."""
        loop = asyncio.get_running_loop()
        said: asyncio.Future[bool] = loop.create_future()
        loop.add_reader(go, receive, said)
        try:
            return await said
        finally:
            loop.remove_reader(go)

    async def serve() -> int:
        # The server's lifespan starts while the last good worker still serves: a version whose
        # startup fails (a database it cannot reach) is reported like an import error, and the old
        # one is never stopped for it. uvicorn then serves with the lifespan already started.
        await lifespan.startup()
        if lifespan.should_exit:  # uvicorn has logged why
            return 1
        os.write(ready, b"L")
        if not await told_to_go():  # the supervisor is ending, or chose another worker
            await lifespan.shutdown()
            return 0
        config.lifespan_class = lambda _config: _Started(lifespan)
        asyncio.get_running_loop().add_reader(go, supervisor_gone)
        task = asyncio.ensure_future(served.serve(sockets=handed))
        while not served.started and not task.done():
            await asyncio.sleep(0.01)
        if served.started:
            os.write(ready, b"1")
        os.close(ready)
        await task
        return 0 if served.started else 1

    sys.exit(asyncio.run(serve()))


class _Started:
    """A lifespan uvicorn finds started already (the worker started it before serving); it ends it."""

    def __init__(self, lifespan: Any) -> None:
        self.lifespan = lifespan
        self.state = lifespan.state
        self.should_exit = False

    async def startup(self) -> None:
        return None

    async def shutdown(self) -> None:
        await self.lifespan.shutdown()


def load_check() -> None:
    """`_loads`' child: import the file named in argv and register its server; status 1, and why, if it cannot."""
    from ._target import load_server

    target = sys.argv[1]
    try:
        load_server(target)
    except BaseException as exc:
        _show_load_error(exc, split_target(target)[0])
        sys.exit(1)
    sys.exit(0)


# -- stdio: the client owns the pipe; a good change ends the server ---------------------------------
def _loads(target: str) -> bool:
    """Whether `target` loads, checked in a fresh process (why not on our stderr, never on a client's pipe)."""
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from mcp_resolve.cli._reload import load_check; load_check()",
                absolute_target(target),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sys.stderr,
            timeout=START_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _say(f"loading the change took more than {START_TIMEOUT:.0f} s; stopped it")
        return False
    return done.returncode == 0


def reload_stdio(target: str, *, log_level: str | None) -> int:
    """Serve `target` over stdio until the client ends it (its status) or a good change ends it (0)."""
    changes = _Changes(target)
    command = [sys.executable, "-m", "mcp_resolve", "run", absolute_target(target)]
    if log_level:
        command += ["--log-level", log_level]
    signal.signal(signal.SIGTERM, _interrupt)
    worker = subprocess.Popen(command)  # on the client's stdin and stdout, inherited
    try:
        while (changed := changes.next(alive=lambda: worker.poll() is None)) is not None:
            _say(f"{', '.join(changed)} changed; loading it")
            if _loads(target):
                _say("it loads: this stdio server ends, so that the client starts the new one (reconnect)")
                _stop(worker)
                return 0
            _say("the change did not load (above); the running server keeps serving")
    except KeyboardInterrupt:
        _stop(worker)
        return 0
    finally:
        changes.stop.set()
    return worker.wait()
