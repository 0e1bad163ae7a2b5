"""Request headers as the endpoint reads them, and the 2026-07-28 request-metadata headers.

`RequestHeaders` decodes a request's headers only as far as they are read.
The metadata headers are the mirrored protocol version, method and name.

Streamable HTTP copies body fields into headers so gateways can route without
parsing JSON. Once something routes on a header and we execute the body, the
two must be proven equal, or `Mcp-Name: read_only_tool` could carry a body
calling another tool. (A tool's `Mcp-Param-*` headers are checked where the
tool is known: `protocol.param_headers`, from `MCPServer`'s tools/call.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ....errors import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, MCPError
from ....protocol.http_names import METHOD_HEADER, NAME_FIELDS, NAME_HEADER, PROTOCOL_VERSION_HEADER
from ....protocol.jsonrpc import IncomingRequest
from ....protocol.param_headers import decode_header_value

__all__ = [
    "RequestHeaders",
    "check_standard_headers",
    "modern_rejection",
]

_VERSION, _METHOD, _NAME = (name.encode() for name in (PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER))
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


class RequestHeaders(Mapping[str, str]):
    """A request's headers as text, decoded only as far as they are read.

    ASGI gives headers as a list of (lower-case name, value) byte pairs.
    Decoding every pair up front cost a request more than all the checks
    made on them; the endpoint reads the few it needs by byte name, and the
    rest are decoded (latin-1) the first time a tool looks at `ctx.headers`.
    Of repeated names the first wins, as with Starlette's `Headers.get`;
    Starlette's `Headers` itself scans and decodes the list on every read,
    which for the endpoint's seven reads costs more than decoding it all.
    """

    __slots__ = ("_pairs", "_text", "raw")

    def __init__(self, pairs: list[tuple[bytes, bytes]]) -> None:
        self._pairs = pairs
        self.raw = dict(reversed(pairs))  # reversed, so the first of repeated names is the one kept
        """Each header's value by lower-case byte name, undecoded (read-only)."""
        self._text: dict[str, str] | None = None

    def value(self, name: bytes) -> str | None:
        """The header named `name` (lower-case bytes), or None."""
        raw = self.raw.get(name)
        return None if raw is None else raw.decode("latin-1")

    def get(self, key: str, default: Any = None) -> Any:
        try:
            raw = self.raw.get(key.encode("latin-1"))
        except UnicodeEncodeError:  # no header has such a name
            return default
        return default if raw is None else raw.decode("latin-1")

    def _decoded(self) -> dict[str, str]:
        if self._text is None:
            text: dict[str, str] = {}
            for name, value in self._pairs:
                text.setdefault(name.decode("latin-1"), value.decode("latin-1"))
            self._text = text
        return self._text

    def __getitem__(self, key: str) -> str:
        return self._decoded()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._decoded()

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self.raw)

    def __repr__(self) -> str:
        # A logged Context or headers map must not leak a credential.
        shown = {k: "<redacted>" if k in _SECRET_HEADERS else v for k, v in self._decoded().items()}
        return f"RequestHeaders({shown!r})"


def check_standard_headers(method: str, params: Mapping[str, Any], headers: RequestHeaders) -> str | None:
    """Why `Mcp-Method`/`Mcp-Name` disagree with the body, or None when they agree."""
    sent_method = headers.value(_METHOD)
    if sent_method is None:
        return "Header mismatch: the Mcp-Method header is required"
    if sent_method.strip(" \t") != method:
        return f"Header mismatch: Mcp-Method header {sent_method!r} does not match body method {method!r}"
    field = NAME_FIELDS.get(method)
    if field is None:
        return None
    body_value = params.get(field)
    if not isinstance(body_value, str):
        return None  # a body without the name is the handler's invalid-params error to report
    raw = headers.value(_NAME)
    if raw is None:
        return f"Header mismatch: the Mcp-Name header is required for {method}"
    try:
        sent = decode_header_value(raw)
    except ValueError:
        return "Header mismatch: the Mcp-Name header holds malformed base64"
    if sent != body_value:
        return f"Header mismatch: Mcp-Name header value {sent!r} does not match body value {body_value!r}"
    return None


def modern_rejection(message: IncomingRequest, headers: RequestHeaders) -> MCPError | None:
    """The transport-level checks of a 2026-07-28 request, first failure wins.

    The order is the one the spec's reference clients expect: the `_meta`
    envelope, then the version header against it, then the version itself,
    then the mirrored method and name headers.
    """
    meta = message.params.get("_meta")
    if not (
        isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta and CLIENT_CAPABILITIES_META_KEY in meta
    ):
        required = (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY)
        missing = [key for key in required if not isinstance(meta, dict) or key not in meta]
        return MCPError(INVALID_PARAMS, f"Invalid params: _meta is missing {', '.join(missing)}")
    version, header = meta[PROTOCOL_VERSION_META_KEY], headers.value(_VERSION)
    if header is None:
        return MCPError(HEADER_MISMATCH, "Header mismatch: the MCP-Protocol-Version header is required")
    if header != version:
        return MCPError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version header {header!r} does not match _meta version {version!r}",
        )
    if version not in MODERN_PROTOCOL_VERSIONS:
        data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": str(version)}
        return MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
    mismatch = check_standard_headers(message.method, message.params, headers)
    return None if mismatch is None else MCPError(HEADER_MISMATCH, mismatch)
