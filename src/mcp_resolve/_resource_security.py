"""Path-safety checks on the values a resource template pulls out of a URI.

A template such as `file://docs/{name}` hands `name` to code that very often
joins it onto a directory. The URI arrives from the client, percent-decoded
before the function sees it, so `..%2F..%2Fetc%2Fpasswd` is `../../etc/passwd`
by then. These checks run on the decoded values, before the function runs,
and a value that fails makes the URI unknown: the client gets the same
not-found answer as for a URI no template matches, and the function never
runs. Matching stops there, so a later, laxer template never sees the URI.

Same names, defaults and verdicts as the official SDK's `ResourceSecurity`;
the checks are string checks and know nothing of the file system, so code that
opens files should still confine them (`Path.resolve()` and `is_relative_to`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_RESOURCE_SECURITY",
    "ResourceSecurity",
    "contains_path_traversal",
    "is_absolute_path",
]


def contains_path_traversal(value: str) -> bool:
    """Whether `value`, read as a relative path, climbs above where it starts.

    `..` counts only as a whole path segment (so `1.0..2.0` is fine), `/` and
    `\\` both separate segments (a Windows server would honour either), and
    `a/../b` is fine because it never leaves its start.
    """
    depth = 0
    for segment in value.replace("\\", "/").split("/"):
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment not in ("", "."):
            depth += 1
    return False


def is_absolute_path(value: str) -> bool:
    """Whether `value` is absolute on some platform: `/x`, `\\x`, `\\\\host\\share`, `C:\\x` or `C:x`.

    Joined onto a base directory, an absolute right-hand side replaces the base
    (`Path("/data") / "/etc/passwd"` is `/etc/passwd`), which is why it is refused.
    A drive-relative `C:x` is included: on Windows it discards the base too.
    """
    if not value:
        return False
    if value[0] in "/\\":
        return True
    return len(value) >= 2 and value[1] == ":" and value[0] in string.ascii_letters


@dataclass(frozen=True)
class ResourceSecurity:
    """Which checks a resource template's extracted values must pass.

    All on by default (`DEFAULT_RESOURCE_SECURITY`). Give a server-wide policy
    with `MCPServer(resource_security=...)`, or one template's with
    `@mcp.resource(uri, security=...)`; `exempt_params` names parameters that
    legitimately hold such values (a git range `a..b`, say) and skip every check.
    """

    reject_path_traversal: bool = True
    """Refuse a value whose `..` segments climb above its start (`../x`, `a/../../x`)."""

    reject_absolute_paths: bool = True
    """Refuse a value that is an absolute path on POSIX or Windows (see `is_absolute_path`)."""

    reject_null_bytes: bool = True
    """Refuse a value holding NUL: C code and system calls stop reading there, Python does not."""

    exempt_params: Set[str] = field(default_factory=frozenset)
    """Parameter names no check applies to."""

    def validate(self, params: Mapping[str, str | list[str]]) -> str | None:
        """The name of the first parameter whose value fails a check, or None when all pass.

        A list value (an exploded variable) fails when any element does.
        """
        for name, value in params.items():
            if name in self.exempt_params:
                continue
            for item in value if isinstance(value, list) else (value,):
                if self.refuses(item):
                    return name
        return None

    def refuses(self, value: str) -> bool:
        """Whether one value fails any check this policy turns on."""
        return (
            (self.reject_null_bytes and "\0" in value)
            or (self.reject_path_traversal and contains_path_traversal(value))
            or (self.reject_absolute_paths and is_absolute_path(value))
        )


DEFAULT_RESOURCE_SECURITY = ResourceSecurity()
"""Every check on: traversal, absolute paths and NUL bytes are refused."""
