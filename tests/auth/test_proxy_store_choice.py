"""Where the proxy keeps its state: what `store=` names, else Redis when the fleet switch is set."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_resolve.auth.proxy import OAuthProxy
from mcp_resolve.stores import MemoryKeyValueStore, RedisKeyValueStore, SqliteKeyValueStore
from proxy_helpers import CORP

pytestmark = pytest.mark.anyio


KEY = "a-fleet-secret-of-at-least-32-bytes!"


def _proxy(base_url: str = "https://desk.example.com", **options: object) -> OAuthProxy:
    return OAuthProxy(upstream=CORP, base_url=base_url, encryption_key=KEY, **options)  # type: ignore[arg-type]


def test_memory_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_RESOLVE_REDIS_URL", raising=False)
    assert isinstance(_proxy().state.store, MemoryKeyValueStore)


async def test_a_path_is_a_sqlite_file(tmp_path: Path) -> None:
    proxy = _proxy(store=tmp_path / "proxy.sqlite3")
    assert isinstance(proxy.state.store, SqliteKeyValueStore)
    await proxy.state.put("probe", {"ok": True}, ttl=60)
    assert await _proxy(store=tmp_path / "proxy.sqlite3").state.get("probe") == {"ok": True}


@pytest.mark.slow
async def test_the_fleet_switch_puts_it_on_redis_apart_for_each_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from redis_helpers import redis_server

    with redis_server() as redis:
        monkeypatch.setenv("MCP_RESOLVE_REDIS_URL", redis.url)
        desk, other = _proxy(), _proxy("https://other.example.com")
        assert isinstance(desk.state.store, RedisKeyValueStore)
        await desk.state.put("probe", {"who": "desk"}, ttl=60)
        assert await _proxy().state.get("probe") == {"who": "desk"}  # another worker of the same desk
        assert await other.state.get("probe") is None  # another proxy on the same Redis: apart


def test_a_shared_store_needs_a_key_of_its_own(tmp_path: Path) -> None:
    """Not one derived from the upstream client secret, which the provider knows too."""
    with pytest.raises(ValueError, match="encryption_key"):
        OAuthProxy(upstream=CORP, base_url="https://desk.example.com", store=tmp_path / "p.sqlite3")
