"""Hypothesis strategies for hostile MCP traffic: any JSON, JSON-RPC shapes with weird parts, and headers.

The strategies lean toward messages that get past the first checks (a known
method, a usable `_meta` envelope, the refund desk's tool and orders) so the
fuzzing reaches the handlers, and mix in the malformed parts one or a few at
a time: ids of every JSON type, params of the wrong type, garbage `_meta`,
`requestState` and `inputResponses`, notifications whose fields are anything,
responses to requests nobody sent, raw bytes that are not JSON at all.

What a strategy cannot know in advance (the refund desk's question keys, a
real sealed state, an HTTP session id) comes from a `Known` built by the test
from a live server; the session id is a placeholder the driver fills in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

__all__ = [
    "HANDSHAKE",
    "MODERN",
    "SESSION",
    "Known",
    "attack_settings",
    "correct_headers",
    "http_requests",
    "initialize_params",
    "json_values",
    "messages",
]

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
SESSION = b"\x00session\x00"
"""Placeholder for the real `Mcp-Session-Id`, replaced by the HTTP driver when it sends."""

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", HANDSHAKE, MODERN, "2099-01-01", "", "DRAFT-2026-v1"]
REQUEST_METHODS = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/result",
    "elicitation/create",
    "sampling/createMessage",
    "roots/list",
]
NOTIFICATION_METHODS = [
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/message",
    "notifications/elicitation/complete",
]
ORDERS = ["ORD-7001", "ORD-7002", "ORD-9999", ""]
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
MULTI_ROUND = frozenset(NAMED)

HUGE_INTS = st.sampled_from([2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**40, -(10**40)])
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | HUGE_INTS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
valid_ids = st.integers(min_value=0, max_value=10**6) | st.text(max_size=12) | st.integers() | HUGE_INTS
"""JSON-RPC ids as MCP allows them: strings, and integers of any size."""
invalid_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=4), scalars, max_size=2),
)
request_ids = valid_ids | invalid_ids
"""Ids of every JSON type, for the fields that name a request (`requestId`, a response's `id`)."""

NASTY_BODIES = [
    b"",
    b"   ",
    b"null",
    b"[]",
    b"[{}]",
    b"NaN",
    b"1e999999",
    b"\xef\xbb\xbf{}",
    b"\xff\xfe\x00",
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing',
    b'{"jsonrpc":"2.0","id":1,"id":[2],"method":"ping"}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\u0000"}',
    b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":-0,"method":"ping"}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}',
]
"""Bodies a generator rarely builds by chance: deep nesting, lone surrogates, duplicate keys, and the
notification that used to kill a stdio server (issue 22, item 1)."""


def initialize_params(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """A handshake-era `initialize` as a correct client sends it."""
    return {
        "protocolVersion": HANDSHAKE,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "attack", "version": "0"},
    }


@dataclass(frozen=True)
class Known:
    """What the fuzzer may aim at on the live server: its tool, question keys, and real sealed states."""

    tool: str = "refund_order"
    question_keys: tuple[str, ...] = ()
    states: tuple[str, ...] = ()


def _weighted(common: Any, *rare: Any, times: int = 3) -> st.SearchStrategy[Any]:
    """`common` `times` times as likely as each of `rare`.

    Hypothesis has no weights of its own, and `one_of` counts a strategy
    object given twice only once; `sampled_from` draws by index, so it does.
    """
    return st.sampled_from([common] * times + list(rare)).flatmap(lambda strategy: strategy)


# -- params ------------------------------------------------------------------------------------
capabilities = st.sampled_from(
    [{}, {"elicitation": {"form": {}}}, {"elicitation": {}, "sampling": {}, "roots": {}}]
)


@st.composite
def modern_meta(draw: st.DrawFn) -> dict[str, Any]:
    """A valid 2026-07-28 `_meta` envelope, with the optional parts a client may add."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: draw(capabilities),
    }
    if draw(st.booleans()):
        meta[CLIENT_INFO_META_KEY] = {"name": "fuzz", "version": "0"}
    if draw(st.integers(0, 3)) == 0:
        meta[LOG_LEVEL_META_KEY] = draw(st.sampled_from(["debug", "emergency"]))
    if draw(st.integers(0, 3)) == 0:
        meta["progressToken"] = draw(valid_ids)
    return meta


META_PARTS = [
    PROTOCOL_VERSION_META_KEY,
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    "progressToken",
    "drop",
    "extra",
    "junk",
]


@st.composite
def broken_meta(draw: st.DrawFn) -> Any:
    """An envelope with a part missing, of the wrong type or naming another version; or not an object."""
    meta = draw(modern_meta())
    part = draw(st.sampled_from(META_PARTS))
    if part == "junk":
        return draw(json_values)
    if part == "drop":
        del meta[draw(st.sampled_from(sorted(meta)))]
    elif part == "extra":
        meta.update(draw(st.dictionaries(st.text(max_size=10), json_values, min_size=1, max_size=3)))
    elif part == PROTOCOL_VERSION_META_KEY:
        meta[part] = draw(st.sampled_from(VERSIONS) | json_values)
    else:
        meta[part] = draw(json_values)
    return meta


def baseline_meta(era: str) -> st.SearchStrategy[Any]:
    """The `_meta` a correct client of `era` sends: the envelope, or on the handshake era little or none."""
    if era == MODERN:
        return modern_meta()
    return st.none() | st.fixed_dictionaries({"progressToken": valid_ids})


@st.composite
def request_states(draw: st.DrawFn, known: Known) -> Any:
    """A `requestState`: junk, text, a real sealed state, or a real one with a character changed."""
    kinds = ["junk", "text"] + (["real", "mutated", "mutated"] if known.states else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "junk":
        return draw(json_values)
    if kind == "text":
        return draw(st.text(max_size=80))
    token = draw(st.sampled_from(known.states))
    if kind == "real":
        return token
    at = draw(st.integers(0, len(token) - 1))
    return token[:at] + draw(st.text(min_size=0, max_size=3)) + token[at + 1 :]


@st.composite
def input_responses(draw: st.DrawFn, known: Known) -> Any:
    """`inputResponses`: junk, or a map under real or invented keys of answers of any shape."""
    if draw(st.integers(0, 3)) == 0:
        return draw(json_values)
    keys = st.sampled_from(known.question_keys) | st.text(max_size=12) if known.question_keys else st.text()
    content = st.one_of(
        st.fixed_dictionaries({"full": st.booleans()}, optional={"sku": st.text(max_size=12)}),
        st.fixed_dictionaries({"restock": st.booleans()}),
        json_values,
    )
    answer = st.one_of(
        st.fixed_dictionaries(
            {"action": st.sampled_from(["accept", "decline", "cancel"]) | json_values},
            optional={"content": content},
        ),
        json_values,
    )
    return draw(st.dictionaries(keys, answer, max_size=3))


def tool_arguments() -> st.SearchStrategy[dict[str, Any]]:
    """Refund arguments, well-typed or not, sometimes carrying the resolved parameters a client may not set."""
    return st.fixed_dictionaries(
        {},
        optional={
            "order_id": _weighted(st.sampled_from(ORDERS), json_values),
            "reason": _weighted(st.text(max_size=20), json_values),
            "cents": json_values,
            "restock": json_values,
        },
    )


@st.composite
def params_for(draw: st.DrawFn, method: str, era: str, known: Known) -> dict[str, Any]:
    """`params` for `method` in the shape it expects; the values may still be anything a field can hold."""
    params: dict[str, Any] = {}
    if method == "tools/call":
        params["name"] = draw(_weighted(st.just(known.tool), st.text(max_size=12)))
        params["arguments"] = draw(tool_arguments())
        if draw(st.booleans()):
            params["requestState"] = draw(request_states(known))
        if draw(st.booleans()):
            params["inputResponses"] = draw(input_responses(known))
    elif method == "initialize":
        params = {
            "protocolVersion": draw(st.sampled_from(VERSIONS)),
            "capabilities": draw(capabilities),
            "clientInfo": {"name": "fuzz", "version": "0"},
        }
    elif method in ("prompts/get", "resources/read", "resources/subscribe", "resources/unsubscribe"):
        params["name" if method == "prompts/get" else "uri"] = draw(st.text(max_size=20))
        if method == "prompts/get":
            params["arguments"] = draw(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=2))
        if method in MULTI_ROUND and draw(st.booleans()):
            params["requestState"] = draw(request_states(known))
            params["inputResponses"] = draw(input_responses(known))
    elif method == "logging/setLevel":
        params["level"] = draw(st.sampled_from(["debug", "info", "emergency", "loud"]))
    elif method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        if draw(st.booleans()):
            params["cursor"] = draw(st.text(max_size=12))
    else:
        params = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
    meta = draw(baseline_meta(era))
    if meta is not None:
        params["_meta"] = meta
    return params


# -- messages ----------------------------------------------------------------------------------
DEFECTS = ["id", "no id", "method", "jsonrpc", "params", "meta", "field", "extra"]


@st.composite
def requests(draw: st.DrawFn, era: str, known: Known) -> dict[str, Any]:
    """A request a correct client could send, then up to two defects, each in one part of it.

    Starting from a well-formed request lets many of them reach the handlers
    with odd but typed values (a foreign requestState, answers under real
    question keys), while the defects probe each check on the way in.
    """
    method = draw(st.sampled_from([*REQUEST_METHODS, *["tools/call"] * 4]))
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": draw(valid_ids),
        "method": method,
        "params": draw(params_for(method, era, known)),
    }
    for defect in draw(st.lists(st.sampled_from(DEFECTS), max_size=2)):
        params = message.get("params")
        if defect == "id":
            message["id"] = draw(invalid_ids)
        elif defect == "no id":
            message.pop("id", None)
        elif defect == "method":
            message["method"] = draw(st.text(max_size=30) | json_values)
        elif defect == "jsonrpc":
            message["jsonrpc"] = draw(json_values)
        elif defect == "params":
            message["params"] = draw(json_values)
        elif defect == "meta" and isinstance(params, dict):
            params["_meta"] = draw(
                broken_meta() if era == MODERN else _weighted(broken_meta(), modern_meta())
            )
        elif defect == "field" and isinstance(params, dict) and params:
            params[draw(st.sampled_from(sorted(params)))] = draw(json_values)
        elif defect == "extra":
            extra = st.dictionaries(st.sampled_from(["result", "error", "x"]), json_values, min_size=1)
            message.update(draw(extra))
    return message


@st.composite
def notifications(draw: st.DrawFn) -> dict[str, Any]:
    """Notifications, known or not, whose fields may be anything (a `requestId` of every JSON type)."""
    method = draw(
        _weighted(st.just("notifications/cancelled"), st.sampled_from(NOTIFICATION_METHODS), st.text())
    )
    if method == "notifications/cancelled":
        params: Any = draw(
            _weighted(
                st.fixed_dictionaries(
                    {"requestId": request_ids | json_values}, optional={"reason": json_values}
                ),
                json_values,
            )
        )
    elif method == "notifications/progress":
        params = draw(
            st.fixed_dictionaries({"progressToken": request_ids, "progress": json_values}) | json_values
        )
    else:
        params = draw(st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3) | json_values)
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    """Answers to requests the server never sent (or sent long ago), under ids of any type."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(request_ids)}
    parts = draw(st.sampled_from([("result",), ("error",), ("result", "error"), ()]))
    for part in parts:
        message[part] = draw(
            st.fixed_dictionaries({"code": json_values, "message": json_values}) | json_values
            if part == "error"
            else st.just({"action": "accept", "content": {}}) | json_values
        )
    return message


def message_values(era: str, known: Known) -> st.SearchStrategy[Any]:
    """One JSON message (as a Python value): mostly requests, else any of the shapes above or any JSON."""
    return _weighted(requests(era, known), notifications(), responses(), json_values, times=5)


@st.composite
def encoded(draw: st.DrawFn, value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=draw(st.booleans())).encode()


def raw_bodies() -> st.SearchStrategy[bytes]:
    return st.sampled_from(NASTY_BODIES) | st.binary(max_size=48)


def messages(era: str, known: Known) -> st.SearchStrategy[bytes]:
    """One message as the bytes a transport carries (a stdio line without its newline, an HTTP body)."""
    return _weighted(message_values(era, known).flatmap(encoded), raw_bodies())


# -- HTTP --------------------------------------------------------------------------------------
_HEADER_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_categories=("Cc",))
header_values = st.text(_HEADER_CHARS, max_size=40).map(lambda text: text.strip(" \t").encode("latin-1"))
"""Any value HTTP/1.1 lets a client send (no control characters, no edge whitespace), in latin-1."""
CONTENT_TYPES = [b"application/json", b"application/json; charset=utf-8", b"APPLICATION/JSON", b"text/plain"]
ACCEPTS = [
    b"application/json, text/event-stream",
    b"application/json",
    b"text/event-stream",
    b"*/*",
    b"application/*;q=0.5, text/*",
    b"application/json;q=0, text/event-stream;q=nan",
    b"text/html",
]


PLAUSIBLE: dict[bytes, list[bytes]] = {
    b"content-type": CONTENT_TYPES,
    b"accept": ACCEPTS,
    b"mcp-protocol-version": [version.encode() for version in VERSIONS],
    b"mcp-session-id": [SESSION, b"0" * 32],
    b"mcp-name": [b"=?base64?cmVmdW5kX29yZGVy?=", b"=?base64?!!?="],
    b"origin": [b"http://127.0.0.1", b"http://evil.example", b"null"],
}
"""Wrong values a confused client might send for each header (the right value for another request)."""


def _mirrored_name(value: Any) -> bytes | None:
    """A body field as `Mcp-Method`/`Mcp-Name` carry it, when it fits in a header as is."""
    if not isinstance(value, str) or not value.isprintable() or value != value.strip(" \t"):
        return None
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return None


def correct_headers(era: str, value: Any) -> dict[bytes, bytes]:
    """The headers a correct client sends with the body `value` on `era`."""
    headers = {b"content-type": b"application/json", b"accept": b"application/json, text/event-stream"}
    headers[b"mcp-protocol-version"] = (HANDSHAKE if era == HANDSHAKE else MODERN).encode()
    if era == HANDSHAKE:
        headers[b"mcp-session-id"] = SESSION
    method = value.get("method") if isinstance(value, dict) else None
    params = value.get("params") if isinstance(value, dict) else None
    mirrored = _mirrored_name(method)
    if mirrored is not None:
        headers[b"mcp-method"] = mirrored
    if isinstance(params, dict) and isinstance(method, str) and method in NAMED:
        name = _mirrored_name(params.get(NAMED[method]))
        if name is not None:
            headers[b"mcp-name"] = name
    return headers


extra_header_names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12).map(
    lambda name: (b"x-" if len(name) % 2 else b"mcp-param-") + name.encode()
)


@st.composite
def http_requests(draw: st.DrawFn, era: str, known: Known) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A POST body and its headers; on the handshake era `SESSION` stands for the session's id.

    The headers start as a correct client would send them for this body and
    era, then up to two are dropped, given a plausible wrong value, or given
    anything, and unknown ones may be added. Host is left to the HTTP
    client, so it stays allowed.
    """
    value = draw(_weighted(message_values(era, known), st.none()))
    body = draw(raw_bodies()) if value is None else draw(encoded(value))
    headers = correct_headers(era, value)
    for name in draw(st.lists(st.sampled_from(sorted({*headers, *PLAUSIBLE})), max_size=2)):
        change = draw(st.sampled_from(["drop", "plausible", "anything"]))
        if change == "drop":
            headers.pop(name, None)
        elif change == "plausible" and name in PLAUSIBLE:
            headers[name] = draw(st.sampled_from(PLAUSIBLE[name]))
        else:
            headers[name] = draw(header_values)
    extra = draw(st.lists(st.tuples(extra_header_names, header_values), max_size=2))
    return body, [*headers.items(), *extra]


def attack_settings(max_examples: int) -> settings:
    """Bounded runs for `make test`: no per-example deadline (a real server answers), no size checks."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
