"""RFC 6570 URI templates, read backwards: which variables a concrete URI gives a resource template.

RFC 6570 defines only expansion (variables to URI); a server needs the
inverse, to route `resources/read` to the template that serves a URI. The
forms accepted, and what each matches, are the official SDK's, plus
FastMCP's `{name*}`:

| Form | Matches | Value |
|---|---|---|
| `{name}`, `{a,b}` | one piece with no `/ ? # & ,` (may be empty) | `str` |
| `{+path}`, FastMCP's `{path*}` | any run without `?` or `#`, so `/` too | `str` |
| `{#frag}` | `#` and the rest of the URI | `str` |
| `{.ext}`, `{/seg}`, `{;key}` | that operator's lead character and one piece | `str` |
| `{/path*}`, `{.parts*}`, `{;key*}` | zero or more such pieces | `list[str]` |
| `{?a,b}`, `{&c}` | query parameters, in any order, each optional, others ignored | `str` |

Each value is percent-decoded after it is cut out, so `%2F` inside `{name}`
decodes to `/` but never splits it. Refused at registration, with
`InvalidUriTemplate`: an unclosed or empty `{}`, a bad name, a name used
twice, the prefix modifier `{name:3}`, an exploded query `{?name*}`, more than
one multi-segment variable (which would get the extra segment?), and two
variables with no literal between them (`{a}{b}`; an operator's own lead
character counts, so `{+path}{.ext}` is fine).

Matching never backtracks: the pieces before the one multi-segment variable
are cut from the left (each bounded variable ending at the first occurrence
of the literal after it), the pieces after it from the right (each starting
after the last occurrence of the literal before it), and the variable takes
what is left; a template with no such variable is cut from the right. So a
hostile URI costs time linear in its length times the number of variables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from .errors import InvalidUriTemplate

__all__ = ["UriTemplate"]

_NAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")
_STOPS = {"": "/?#&,", "+": "?#", "#": "", ".": "./?#", "/": "/?#", ";": ";/?#"}
"""What ends a value of each operator (`?`/`&` are read as a query instead)."""
_PREFIXES = {"": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";"}
_SEPARATORS = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&"}
MAX_TEMPLATE_LENGTH = 8_192
MAX_VARIABLES = 64


@dataclass(frozen=True)
class _Capture:
    name: str
    operator: str
    explode: bool = False
    multi: bool = False  # takes several segments (`{+x}`, `{#x}`, `{x*}`, `{/x*}`...)

    def value(self, text: str) -> str | list[str] | None:
        """The decoded value cut out as `text`, or None when `text` cannot be this variable's."""
        if self.multi and self.operator != "#" and ("?" in text or "#" in text):
            return None
        if self.explode and self.operator in (
            ".",
            "/",
            ";",
        ):  # `/a/b`, `.a.b`, `;k=a;k=b`: a list, empty when absent
            if text and not text.startswith(self.operator):
                return None
            pieces = text.split(self.operator)[1:] if text else []
            if self.operator == ";":  # each `name=value`, or bare `name` for an empty value
                pairs = [piece.partition("=") for piece in pieces]
                if any(key != self.name for key, _, _ in pairs):
                    return None
                pieces = [value for _, _, value in pairs]
            return [unquote(piece) for piece in pieces]
        if self.operator == ";":  # after the literal `;name`: `=value`, or nothing for an empty value
            if text and not text.startswith("="):
                return None
            text = text[1:]
        if not self.multi and any(stop in text for stop in _STOPS[self.operator]):
            return None
        return unquote(text)


_Atom = str | _Capture


class UriTemplate:
    """A parsed resource URI template: its variables, and `match(uri)`."""

    def __init__(self, template: str) -> None:
        if len(template) > MAX_TEMPLATE_LENGTH:
            raise InvalidUriTemplate(f"URI template longer than {MAX_TEMPLATE_LENGTH} characters", template)
        self.template = template
        self._atoms: list[_Atom] = []
        self._query: list[str] = []
        self._parse()
        names = [a.name for a in self._atoms if isinstance(a, _Capture)] + self._query
        self.variables: tuple[str, ...] = tuple(names)
        """Every variable's name, in template order (query variables last)."""
        multi = [a for a in self._atoms if isinstance(a, _Capture) and a.multi]
        if len(multi) > 1:
            raise self._invalid(
                "more than one multi-segment variable ({+x}, {#x}, {x*}); matching is ambiguous"
            )
        self._multi = self._atoms.index(multi[0]) if multi else None

    def _invalid(self, message: str) -> InvalidUriTemplate:
        return InvalidUriTemplate(f"invalid URI template {self.template!r}: {message}", self.template)

    def _parse(self) -> None:
        seen: set[str] = set()
        position = 0
        template = self.template
        while position < len(template):
            start = template.find("{", position)
            if start < 0:
                self._literal(template[position:])
                break
            self._literal(template[position:start])
            end = template.find("}", start)
            if end < 0 or "{" in template[start + 1 : end]:
                raise self._invalid(f"Unclosed expression at position {start}")  # the official's words
            self._expression(template[start + 1 : end], seen)
            position = end + 1
        if len(seen) > MAX_VARIABLES:
            raise self._invalid(f"more than {MAX_VARIABLES} variables")

    def _literal(self, text: str) -> None:
        if not text:
            return
        if self._query:
            raise self._invalid("a query expression ({?x}, {&x}) must come last")
        if self._atoms and isinstance(self._atoms[-1], str):
            self._atoms[-1] += text
        else:
            self._atoms.append(text)

    def _expression(self, body: str, seen: set[str]) -> None:
        if not body:
            raise self._invalid("empty expression {}")
        operator = body[0] if body[0] in "+#./;?&" else ""
        specs = body[len(operator) :].split(",")
        for index, spec in enumerate(specs):
            explode = spec.endswith("*")
            name = spec[:-1] if explode else spec
            if ":" in name:
                raise self._invalid(f"the prefix modifier {{{spec}}} is not supported")
            if not _NAME.fullmatch(name):
                raise self._invalid(f"invalid variable name {name!r}")
            if name in seen:
                raise self._invalid(f"variable {name!r} appears more than once")
            seen.add(name)
            if operator in ("?", "&"):
                if explode:
                    raise self._invalid(f"an exploded query variable {{{operator}{spec}}} is not supported")
                self._query.append(name)
                continue
            if self._query:
                raise self._invalid("a query expression ({?x}, {&x}) must come last")
            lead = _PREFIXES[operator] if index == 0 else _SEPARATORS[operator]
            if operator == ";" and not explode:
                lead += name
            if not (
                explode and operator in (".", "/", ";")
            ):  # else the lead belongs to the value: the list may be empty
                self._literal(lead)
            capture = _Capture(name, operator, explode, multi=explode or operator in ("+", "#"))
            if self._atoms and isinstance(self._atoms[-1], _Capture):
                raise self._invalid(
                    f"variables {self._atoms[-1].name!r} and {name!r} have no literal between them, "
                    "so a match cannot tell where one ends"
                )
            self._atoms.append(capture)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The decoded variables `uri` gives this template, or None when it does not match."""
        path, query = uri, ""
        if self._query:
            path, _, query = uri.partition("?")
        found: dict[str, str | list[str]] = {}
        atoms = self._atoms
        split = len(atoms) if self._multi is None else self._multi
        # From the left, up to the multi-segment variable: bounded values end at their next literal.
        left = 0
        for index in range(split if self._multi is not None else 0):
            atom = atoms[index]
            if isinstance(atom, str):
                if not path.startswith(atom, left):
                    return None
                left += len(atom)
                continue
            following = atoms[index + 1] if index + 1 < len(atoms) else ""
            assert isinstance(following, str)  # never two captures in a row, and the multi one follows
            end = path.find(following, left) if following else len(path)
            if end < 0 or not self._take(atom, path[left:end], found):
                return None
            left = end
        # From the right, back to the multi-segment variable (or to the start).
        right = len(path)
        stop = self._multi if self._multi is not None else -1
        for index in range(len(atoms) - 1, stop, -1):
            atom = atoms[index]
            if isinstance(atom, str):
                if right - len(atom) < left or not path.startswith(atom, right - len(atom)):
                    return None
                right -= len(atom)
                continue
            before = atoms[index - 1] if index > 0 else ""
            assert isinstance(before, str)
            begin = left
            if before:
                at = path.rfind(before, left, right)
                if at < 0:
                    return None
                begin = at + len(before)
            if not self._take(atom, path[begin:right], found):
                return None
            right = begin
        if self._multi is not None:
            middle = atoms[self._multi]
            assert isinstance(middle, _Capture)
            if not self._take(middle, path[left:right], found):
                return None
        elif right != 0:
            return None
        if self._query:
            found.update(self._query_values(query))
        return found

    @staticmethod
    def _take(capture: _Capture, text: str, found: dict[str, str | list[str]]) -> bool:
        value = capture.value(text)
        if value is None:
            return False
        found[capture.name] = value
        return True

    def _query_values(self, query: str) -> dict[str, str]:
        """The query's values for this template's query variables: any order, the first of a repeat."""
        values: dict[str, str] = {}
        for pair in query.split("&") if query else []:
            key, _, value = pair.partition("=")
            name = unquote(key)
            if name in self._query and name not in values:
                values[name] = unquote(value)
        return values
