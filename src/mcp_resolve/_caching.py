"""Per-method freshness hints for the results clients may cache (2026-07-28).

On 2026-07-28 the results of the list methods, `resources/read` and
`server/discover` carry `ttlMs` (how long a client may treat the answer as
fresh) and `cacheScope` (`"public"`: shareable between callers; `"private"`:
only for the caller it was made for). `MCPServer(cache_hints={method:
CacheHint(...)})` sets them per method, as the official SDK's does; a field a
handler's result already carries wins over the hint. Handshake-era answers
carry neither.

Without a hint for a method, `cache_ttl_ms=` applies as it always has: that
TTL and `"public"` for the list methods and `server/discover`, and `0`,
`"private"` for `resources/read`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = ["CACHEABLE_METHODS", "CacheHint", "CacheableMethod", "checked_cache_hints"]

# mcp_types.methods has the same two names, but importing it builds every method's models, a cost
# `import mcp_resolve` should not pay for six strings. tests/server/test_porting_constructor.py holds them equal.
CacheableMethod = Literal[
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "tools/list",
]
CACHEABLE_METHODS: frozenset[str] = frozenset(get_args(CacheableMethod))


@dataclass(frozen=True, slots=True)
class CacheHint:
    """`ttlMs` and `cacheScope` for one method's results.

    `ttl_ms=0` means stale at once (ask again every time). `scope="private"`
    (the default) keeps a cached answer to the caller it was made for; only
    mark a method `"public"` when its answer is the same for every caller.
    """

    ttl_ms: int = 0
    scope: Literal["public", "private"] = "private"

    def __post_init__(self) -> None:
        if isinstance(self.ttl_ms, bool) or not isinstance(self.ttl_ms, int) or self.ttl_ms < 0:
            raise ValueError(
                f"CacheHint ttl_ms must be a whole number of milliseconds >= 0, not {self.ttl_ms!r}"
            )
        if self.scope not in ("public", "private"):
            raise ValueError(f"CacheHint scope must be 'public' or 'private', not {self.scope!r}")


def checked_cache_hints(cache_hints: Mapping[Any, Any] | None) -> dict[str, CacheHint]:
    """The `cache_hints` argument as a plain dict, refused at construction when it names the wrong things.

    Typed callers are held to `CacheableMethod` keys by the signature; this
    catches the rest (a mapping read from configuration) before the first
    request rather than on it.
    """
    if cache_hints is None:
        return {}
    unknown = sorted(repr(method) for method in cache_hints if method not in CACHEABLE_METHODS)
    if unknown:
        raise ValueError(
            f"cache_hints keys must be cacheable methods ({', '.join(sorted(CACHEABLE_METHODS))}); "
            f"got {', '.join(unknown)}"
        )
    for method, hint in cache_hints.items():
        if not isinstance(hint, CacheHint):
            raise TypeError(f"cache_hints[{method!r}] must be a CacheHint, not {type(hint).__name__}")
    return dict(cache_hints)
