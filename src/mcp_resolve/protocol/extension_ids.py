"""Extension identifiers (SEP-2133) and the shape of a client's `capabilities.extensions`.

Shared by the server's extension API (which checks the identifiers it
advertises) and the protocol layer (which refuses a client whose declaration
is malformed before any handler could misread it: a list where an object
belongs would otherwise make `"x/y" in declared` true).
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import INVALID_PARAMS, MCPError

__all__ = ["check_declared_extensions", "is_extension_identifier", "validate_extension_identifier"]

# A reverse-DNS prefix of dot-separated labels (a letter first, a letter or digit last, hyphens
# between), a slash, then a name that starts and ends alphanumeric with `.`, `_`, `-` between.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_IDENTIFIER = re.compile(rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}")


def is_extension_identifier(identifier: Any) -> bool:
    """Whether `identifier` is a `vendor-prefix/name` string with a reverse-DNS prefix (`com.example/search`)."""
    return isinstance(identifier, str) and _IDENTIFIER.fullmatch(identifier) is not None


def validate_extension_identifier(identifier: Any, *, owner: str) -> None:
    """Raise `TypeError` unless `identifier` is a `vendor-prefix/name` string, as the official SDK does."""
    if not is_extension_identifier(identifier):
        raise TypeError(
            f"{owner}.identifier must be a `vendor-prefix/name` string "
            f"(reverse-DNS prefix required), got {identifier!r}"
        )


def check_declared_extensions(capabilities: dict[str, Any]) -> None:
    """Refuse (-32602) a client capabilities object whose `extensions` is not a map of objects."""
    declared = capabilities.get("extensions")
    if declared is None:
        return
    if not isinstance(declared, dict) or not all(isinstance(v, dict) for v in declared.values()):
        raise MCPError(
            INVALID_PARAMS,
            "Invalid params: capabilities.extensions must map each extension identifier to an object",
        )
