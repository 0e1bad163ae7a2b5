"""The person at the terminal answers the server: elicitation forms, sampling, and the output of `list`/`call`.

A form is rendered from its JSON Schema, one field at a time: the type, an enum's choices, a
default and whether it is required are shown, and an answer that does not fit (not a number, not
a choice, too short, missing) is explained and asked again. Before the fields the person picks
accept, decline or cancel. Sampling is answered by typing the model's reply, or by a pydantic-ai
model (`--sampling-model`). Questions are written to stderr and read from stdin: when either is
not a terminal there is no one to ask, so every form is declined (and said so on stderr) and
sampling fails unless a model answers it.

Prompts and colour come from `rich` (the `mcp-resolve[cli]` extra), imported on first use: it
reads a line at a time, so it works in any terminal, over ssh and under a pseudo-terminal.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import TYPE_CHECKING, Any

import anyio
from mcp_types import CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams, TextContent

from ..errors import INVALID_REQUEST, MCPError
from ._target import CLIError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Terminal", "console", "parse_value", "require_rich", "safe"]

ACTIONS = {
    "a": "accept",
    "accept": "accept",
    "d": "decline",
    "decline": "decline",
    "c": "cancel",
    "cancel": "cancel",
}


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, *, multiline: bool = False) -> str:
    """Text a server sent, made harmless to print: control characters shown, never obeyed.

    ESC (CSI, OSC: cursor moves, screen clears, window titles, hyperlinks), the other C0 and C1
    controls, DEL and the bidirectional overrides are written as `\\x1b`, `\\u202e`, ... so a
    hostile name or message cannot redraw the terminal or fake a prompt. Tabs are kept; newlines
    only with `multiline` (a one-line field such as a name cannot add lines of its own).
    """
    pattern = _CONTROL if multiline else _CONTROL_OR_LINE
    return pattern.sub(_escaped, str(text))


def require_rich() -> None:
    """Fail with one clear line when the `cli` extra is not installed."""
    try:
        import rich  # noqa: F401
    except ImportError:
        raise CLIError(
            "`mcp-resolve list` and `call` need the cli extra: pip install 'mcp-resolve[cli]'"
        ) from None


def console(*, stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


class Cancelled(Exception):
    """The person cancelled a form (or closed stdin)."""


def parse_value(text: str, spec: dict[str, Any]) -> Any:
    """One typed answer checked against one property schema; ValueError says what is wrong."""
    kind = spec.get("type")
    choices = _choices(spec)
    if kind == "array":
        items = spec.get("items", {})
        values = [part.strip() for part in text.split(",") if part.strip()]
        allowed = _choices(items)
        for value in values:
            if allowed and value not in allowed:
                raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        for bound, check in (("minItems", lambda n, b: n >= b), ("maxItems", lambda n, b: n <= b)):
            if bound in spec and not check(len(values), spec[bound]):
                raise ValueError(f"{bound} is {spec[bound]}")
        return values
    if choices:
        if text not in choices:
            raise ValueError(f"choose one of {', '.join(choices)}")
        return text
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            number: float | int = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ValueError(f"enter {'a whole number' if kind == 'integer' else 'a number'}") from None
        if not math.isfinite(number):  # nan compares false with every bound, and is not JSON
            raise ValueError("enter a finite number")
        if "minimum" in spec and number < spec["minimum"]:
            raise ValueError(f"the minimum is {spec['minimum']}")
        if "maximum" in spec and number > spec["maximum"]:
            raise ValueError(f"the maximum is {spec['maximum']}")
        return number
    if "minLength" in spec and len(text) < spec["minLength"]:
        raise ValueError(f"at least {spec['minLength']} characters")
    if "maxLength" in spec and len(text) > spec["maxLength"]:
        raise ValueError(f"at most {spec['maxLength']} characters")
    if spec.get("format") == "email" and ("@" not in text or text.startswith("@") or text.endswith("@")):
        raise ValueError("enter an e-mail address")
    return text


def _choices(spec: dict[str, Any]) -> list[str]:
    if "enum" in spec:
        return [str(value) for value in spec["enum"]]
    options = spec.get("oneOf") or spec.get("anyOf") or []
    return [str(option["const"]) for option in options if isinstance(option, dict) and "const" in option]


def _hint(spec: dict[str, Any], required: bool) -> str:
    kind = spec.get("type", "string")
    choices = _choices(spec) or _choices(spec.get("items", {}))
    parts = ["/".join(choices) if choices else ("y/n" if kind == "boolean" else kind)]
    if kind == "array":
        parts.append("comma-separated")
    if "default" in spec:
        default = spec["default"]
        parts.append(f"default {_shown(default)}")
    elif not required:
        parts.append("optional")
    return ", ".join(parts)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value) if value != "" else '""'


class Terminal:
    """Answers the server's questions at this terminal (or declines them all when there is none)."""

    def __init__(self, *, sampling_model: str | None = None) -> None:
        self.interactive = sys.stdin.isatty() and sys.stderr.isatty()
        """Questions are asked on stderr and read from stdin: with either redirected, no one can answer."""
        self.out = console(stderr=True)
        self.sampling_model = sampling_model
        self.prompting = False
        """Whether a prompt is waiting for a line: Ctrl-C must then break `input()` itself."""
        self.interrupted = False
        self.scope: anyio.CancelScope | None = None
        """The command's work: Ctrl-C cancels it, so the connection closes as it should."""

    def interrupt(self) -> None:
        """Ctrl-C: stop the command. The question being asked is answered with an error, never an answer."""
        self.interrupted = True
        if self.scope is not None:
            self.scope.cancel()

    def _read(self, prompt: str) -> str:
        self.prompting = True
        try:
            return self.out.input(prompt, markup=False)
        except EOFError:
            raise Cancelled from None
        except KeyboardInterrupt:
            self.interrupt()
            raise MCPError(INVALID_REQUEST, "the person interrupted the command") from None
        finally:
            self.prompting = False

    async def elicit(self, form: ElicitRequestFormParams) -> dict[str, Any]:
        """One form: accept with its content, decline, or cancel."""
        from rich.markup import escape

        requested: Any = form.requested_schema
        schema: dict[str, Any] = (
            requested.model_dump(by_alias=True, exclude_none=True, mode="json")
            if hasattr(requested, "model_dump")
            else dict(requested)
        )
        if not self.interactive:
            self.out.print(f"declined (no terminal to ask): {escape(safe(form.message, multiline=True))}")
            return {"action": "decline"}
        self.out.print(f"\n[bold cyan]?[/] [bold]{escape(safe(form.message, multiline=True))}[/]")
        try:
            while True:
                choice = self._read("  [a]ccept, [d]ecline or [c]ancel? [a] ").strip().lower() or "a"
                if choice in ACTIONS:
                    break
                self.out.print("  [red]type a, d or c[/]")
            if ACTIONS[choice] != "accept":
                return {"action": ACTIONS[choice]}
            return {"action": "accept", "content": self._fields(schema)}
        except Cancelled:
            return {"action": "cancel"}

    def _fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        from rich.markup import escape

        required = set(schema.get("required", []))
        content: dict[str, Any] = {}
        for name, spec in schema.get("properties", {}).items():
            label = name
            about = spec.get("description")
            if about:
                self.out.print(f"  [dim]{escape(safe(about, multiline=True))}[/]")
            while True:
                text = self._read(f"  {safe(label)} ({safe(_hint(spec, name in required))}): ").strip()
                if not text:
                    if "default" in spec:
                        content[name] = spec["default"]
                        break
                    if name not in required:
                        break
                    self.out.print("  [red]required[/]")
                    continue
                try:
                    content[name] = parse_value(text, spec)
                    break
                except ValueError as exc:
                    self.out.print(f"  [red]{escape(safe(exc))}[/]: try again")
        return content

    async def sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        """The server asks an LLM: a pydantic-ai model answers, or the person types the reply."""
        if self.sampling_model is not None:
            return await self._model_sample(params)
        from rich.markup import escape

        if not self.interactive:
            raise MCPError(INVALID_REQUEST, "no terminal to answer sampling; give --sampling-model")
        self.out.print("\n[bold magenta]?[/] [bold]the server asks for a completion[/]")
        if params.system_prompt:
            self.out.print(f"  [dim]system:[/] {escape(safe(params.system_prompt, multiline=True))}")
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            for block in blocks:
                text = getattr(block, "text", None) or f"<{getattr(block, 'type', 'content')}>"
                self.out.print(f"  [dim]{safe(message.role)}:[/] {escape(safe(text, multiline=True))}")
        try:
            reply = self._read("  your reply, as the model: ")
        except Cancelled:
            raise MCPError(INVALID_REQUEST, "the person declined to answer") from None
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=reply),
            model="person-at-terminal",
            stop_reason="endTurn",
        )

    async def _model_sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        try:
            from pydantic_ai.models import infer_model

            from ..pydantic_ai.sampling import sampling_handler_for
        except ImportError:
            raise CLIError(
                "--sampling-model needs pydantic-ai: pip install 'mcp-resolve[pydantic-ai]'"
            ) from None
        handler = sampling_handler_for(infer_model(self.sampling_model or ""))
        result: Any = handler(params.messages, params, None)  # type: ignore[arg-type]
        result = await result
        assert isinstance(result, CreateMessageResult)
        return result


def pretty(value: Any, *, ascii_only: bool = False) -> str:
    """Indented JSON; `ascii_only` for a terminal (C1 controls and bidi overrides as `\\uXXXX`)."""
    return json.dumps(value, indent=2, ensure_ascii=ascii_only)
