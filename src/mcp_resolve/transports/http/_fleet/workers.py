"""How many processes serve this app's listening socket: one, or a fleet of workers.

`uvicorn app:app --workers 2`, gunicorn and hypercorn all start workers the
same way: the supervisor binds the listening socket and every worker inherits
it. The app is imported in each worker and never told how many there are, yet
with per-process requestState keys a fleet rejects most retries at random, so
the app must find out for itself and refuse to start.

The signal (Linux): a sibling process (same parent) holding one of our
server sockets (bound, no peer). Only workers forked or spawned by one
supervisor share such a socket's inode; independent servers started side by side bind their
own sockets and are not counted, nor is uvicorn's `--reload` child, whose only
sibling is multiprocessing's resource tracker. A worker that looks before its
siblings exist counts itself alone, but they see it, and one worker failing
to start stops the whole fleet on uvicorn and gunicorn.

The worker-count environment variable (`WEB_CONCURRENCY`) is deliberately not
read: a single `python server.py` on a platform that sets it would be refused.
Where /proc cannot be read (another OS, a hardened /proc) the answer is 1.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["serving_processes"]

_PROC = Path("/proc")


def serving_processes(proc: Path = _PROC) -> int:
    """The number of processes serving this app (1 when alone, or when it cannot be told)."""
    try:
        serving = _server_sockets(proc)
        if not serving:
            return 1
        me, parent = os.getpid(), os.getppid()
        sharing = 1
        for pid in _children_of(proc, parent):
            if pid != me and _socket_inodes(proc / str(pid)) & serving:
                sharing += 1
        return sharing
    except OSError:
        return 1


def _server_sockets(proc: Path) -> set[str]:
    """Inodes of our stream sockets that are bound to an address and have no peer: listeners.

    Read from the sockets themselves rather than from /proc/net: a supervisor
    binds the socket but the workers call listen() only once their startup is
    done, so at startup a sibling's shared socket is not listening yet.
    """
    inodes: set[str] = set()
    for descriptor, inode in _sockets_of(proc / "self"):
        try:
            probe = socket.socket(fileno=os.dup(descriptor))
        except OSError:  # closed meanwhile, or not a socket Python can wrap
            continue
        with probe:
            if probe.type == socket.SOCK_STREAM and _bound_without_peer(probe):
                inodes.add(inode)
    return inodes


def _bound_without_peer(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
        return False  # connected (a client connection, a socketpair)
    except OSError:
        pass
    try:
        name = sock.getsockname()
    except OSError:
        return False
    if isinstance(name, tuple):  # IPv4 / IPv6: bound once it has a port
        return len(name) >= 2 and name[1] != 0
    return bool(name)  # a Unix socket: bound once it has a path


def _socket_inodes(process: Path) -> set[str]:
    """The inodes of the sockets a process holds (empty if its descriptors cannot be read)."""
    return {inode for _, inode in _sockets_of(process)}


def _sockets_of(process: Path) -> list[tuple[int, str]]:
    sockets: list[tuple[int, str]] = []
    try:
        descriptors = list((process / "fd").iterdir())
    except OSError:
        return sockets
    for descriptor in descriptors:
        try:
            target = os.readlink(descriptor)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and descriptor.name.isdigit():
            sockets.append((int(descriptor.name), target[8:-1]))
    return sockets


def _children_of(proc: Path, parent: int) -> list[int]:
    children = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # The command name (field 2) may hold spaces and parentheses: the fields after it are safe.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(parent):
            children.append(int(entry.name))
    return children
