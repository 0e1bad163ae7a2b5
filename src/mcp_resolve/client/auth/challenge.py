"""Reading a `WWW-Authenticate: Bearer ...` challenge (RFC 7235 §4.1, RFC 6750 §3, RFC 9728 §5.1).

A `DPoP` challenge (RFC 9449 §7.1) has the same parameters (and `algs`);
`parse_bearer_challenge(values, "dpop")` reads it.

The server says three things in it that steer the flow: where its protected
resource metadata is (`resource_metadata`), which scopes the request needs
(`scope`), and why it refused (`error`, e.g. `insufficient_scope` on a 403).
Header values come from the server, so the parser is strict about the grammar
(tokens and quoted strings only), bounded in size, and never raises: a
challenge it cannot read is treated as no challenge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["BearerChallenge", "parse_bearer_challenge"]

MAX_HEADER_CHARS = 8192
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SPACE = re.compile(r"[ \t]*")
_PADDING = re.compile(r"=*")


@dataclass(frozen=True)
class BearerChallenge:
    """The parameters of the Bearer challenge (names lower-cased; values as sent)."""

    params: dict[str, str] = field(default_factory=dict)

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")

    @property
    def scopes(self) -> list[str] | None:
        """The scopes the server asked for, or None when it named none."""
        scope = self.params.get("scope")
        return scope.split() if scope is not None and scope.strip() else None

    @property
    def error(self) -> str | None:
        return self.params.get("error")


def _challenges(text: str) -> list[tuple[str, dict[str, str]]]:
    found: list[tuple[str, dict[str, str]]] = []
    position = 0
    while position < len(text):
        position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
        if position < len(text) and text[position] == ",":
            position += 1
            continue
        token = _TOKEN.match(text, position)
        if token is None:
            break  # not the grammar: stop, keep what was read
        position = _SPACE.match(text, token.end()).end()  # type: ignore[union-attr]
        if position < len(text) and text[position] == "=" and found:
            position = _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
            quoted = _QUOTED.match(text, position)
            if quoted is not None:
                value = re.sub(r"\\(.)", r"\1", quoted.group(1))
                position = quoted.end()
            else:
                bare = _TOKEN.match(text, position)
                if bare is None:  # a token68 credential ("abc=="), not a parameter: skip its padding
                    position = _PADDING.match(text, position).end()  # type: ignore[union-attr]
                    continue
                value, position = bare.group(0), bare.end()
            found[-1][1].setdefault(token.group(0).lower(), value)  # the first of a repeated name wins
        else:
            found.append((token.group(0).lower(), {}))
    return found


def parse_bearer_challenge(values: Iterable[str], scheme: str = "bearer") -> BearerChallenge | None:
    """The Bearer (or `scheme`) challenge among the `WWW-Authenticate` header values, or None if there is none."""
    text = ", ".join(values)
    if len(text) > MAX_HEADER_CHARS:
        return None
    for found, params in _challenges(text):
        if found == scheme:
            return BearerChallenge(params)
    return None
