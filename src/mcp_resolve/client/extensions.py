"""The client extensions a `Client` declares (SEP-2133), checked once, when the Client is built.

A client declares an extension by its identifier in its capabilities,
`capabilities.extensions[identifier] = settings`, the way a server declares
its own. A server that needs one (`require_client_extension`) refuses the
request with -32021 unless it was declared; one whose declaration is not an
object of objects refuses every request with -32602. So a declaration is
checked here, where the mistake is made, rather than turned into a refusal
on the first request: identifiers by the same grammar the server side uses,
settings as JSON objects, copied so a later change to the caller's dict does
not change what the client says it supports mid-session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic_core

from ..protocol.extension_ids import is_extension_identifier
from .tasks import TASKS_EXTENSION

__all__ = ["ExtensionSettings", "declared_extensions"]

ExtensionSettings = Mapping[str, Mapping[str, Any]]
"""`{identifier: settings}`: each extension the client supports, with the settings it declares ({} for none)."""


def declared_extensions(extensions: ExtensionSettings | None) -> dict[str, dict[str, Any]]:
    """`extensions` as the client will declare them, or a `TypeError`/`ValueError` saying what is wrong."""
    if extensions is None:
        return {}
    if not isinstance(extensions, Mapping):
        raise TypeError(
            "Client(extensions=...) takes a mapping of extension identifier to settings, "
            f"e.g. {{'com.example/search': {{}}}}; got {type(extensions).__name__}"
        )
    declared: dict[str, dict[str, Any]] = {}
    for identifier, settings in extensions.items():
        if not is_extension_identifier(identifier):
            raise ValueError(
                f"Client(extensions=...): {identifier!r} is not an extension identifier; use a "
                "`vendor-prefix/name` string with a reverse-DNS prefix, e.g. 'com.example/search'"
            )
        if identifier == TASKS_EXTENSION:
            raise ValueError(
                f"Client(extensions=...): {TASKS_EXTENSION!r} is declared per call, not per client: "
                "use call_tool(..., task=True) or call_tool_task(...)"
            )
        if not isinstance(settings, Mapping):
            raise TypeError(
                f"Client(extensions=...): the settings of {identifier!r} must be a mapping "
                f"({{}} for none), got {type(settings).__name__}"
            )
        try:
            copied = pydantic_core.from_json(pydantic_core.to_json(dict(settings)))
        except (pydantic_core.PydanticSerializationError, ValueError) as exc:
            raise TypeError(
                f"Client(extensions=...): the settings of {identifier!r} are not JSON: {exc}"
            ) from None
        declared[identifier] = copied
    return declared
