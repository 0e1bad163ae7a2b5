"""Rotating the proxy's encryption key: what the old key sealed still opens, so nobody is signed out."""

from __future__ import annotations

import time

import pytest

from mcp_resolve.auth.proxy import OAuthProxy
from mcp_resolve.auth.proxy._grants import Grant
from mcp_resolve.stores import MemoryKeyValueStore
from proxy_helpers import CORP

pytestmark = pytest.mark.anyio

OLD, NEW = "o" * 40, "n" * 40


def _proxy(store: MemoryKeyValueStore, key: str, *previous: str) -> OAuthProxy:
    return OAuthProxy(
        upstream=CORP,
        base_url="https://desk.example.com",
        store=store,
        encryption_key=key,
        previous_encryption_keys=previous,
    )


async def _signed_in(proxy: OAuthProxy) -> tuple[str, str]:
    grant = Grant(
        grant_id="g1",
        client_id="c1",
        subject="alice",
        scopes=("desk",),
        resource=proxy.resource,
        claims={"upstream": "corp", "upstream_sub": "alice"},
        expires_at=time.time() + 3600,
    )
    await proxy.grants.create(grant)
    tokens = await proxy.grants.issue("g1")
    assert tokens.refresh_token is not None
    return tokens.access_token, tokens.refresh_token


async def test_tokens_issued_under_the_old_key_work_after_the_rotation() -> None:
    store = MemoryKeyValueStore()
    access, refresh = await _signed_in(_proxy(store, OLD))
    rotated = _proxy(store, NEW, OLD)
    verified = await rotated.load_access_token(access)
    assert verified is not None and verified.subject == "alice"
    fresh = await rotated.grants.refresh("c1", refresh, ["desk"])
    assert await rotated.load_access_token(fresh.access_token) is not None


async def test_without_the_previous_key_the_old_state_is_unreadable() -> None:
    store = MemoryKeyValueStore()
    access, _refresh = await _signed_in(_proxy(store, OLD))
    assert await _proxy(store, NEW).load_access_token(access) is None
