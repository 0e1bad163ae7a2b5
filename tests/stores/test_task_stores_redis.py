"""The task stores' contract (tests/stores/test_task_stores.py) run against `RedisTaskStore` on a real redis-server.

The contract's tests are imported as they are; this module's `store` fixture
gives them a Redis store (a fresh namespace each), and two more tests check
what only a shared store must do: two workers (two connections) see one
another's writes and can never both win a compare-and-set.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from mcp_resolve.stores._redis.connection import RedisConnection
from mcp_resolve.stores._redis.tasks import RedisTaskStore
from redis_helpers import RedisServer
from test_task_stores import (  # noqa: F401 (collected here, with this module's store fixture)
    OPEN,
    record,
    test_a_growing_replace_is_bounded_when_asked_and_a_refusal_writes_nothing,
    test_a_record_comes_back_as_it_went_in_and_as_a_copy,
    test_a_record_written_before_meta_was_kept_still_loads,
    test_concurrent_writers_never_lose_an_update,
    test_create_bounds_the_live_tasks_of_one_holder,
    test_create_bounds_the_tasks_and_bytes_of_one_holder_finished_ones_included,
    test_create_bounds_the_whole_store,
    test_expired_tasks_make_room_and_unexpired_ones_are_never_evicted,
    test_purge_deletes_only_what_expired,
    test_purged_and_rewritten_records_give_their_bytes_back,
    test_replace_is_compare_and_set,
    test_the_same_id_is_never_created_twice,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def store(redis: RedisServer) -> AsyncIterator[RedisTaskStore]:
    """A store in a fresh namespace; its pool is closed on the test's loop when the test ends."""
    connection = RedisConnection(redis.url, prefix=f"tasks-{secrets.token_hex(4)}")
    try:
        yield RedisTaskStore(connection)
    finally:
        await connection.aclose()


async def test_two_workers_share_records_and_only_one_wins_a_write(store: RedisTaskStore) -> None:
    connection = RedisConnection(store.redis._url, prefix=store.redis.prefix)
    try:
        await _two_workers(store, RedisTaskStore(connection))
    finally:
        await connection.aclose()


async def _two_workers(store: RedisTaskStore, other: RedisTaskStore) -> None:
    assert await store.create(record(), limits=OPEN, now=1000.0)
    mine, theirs = await store.get("t1"), await other.get("t1")
    assert mine is not None and theirs is not None
    mine.status_message, theirs.status_message = "mine", "theirs"
    results = []

    async def write(who: RedisTaskStore, what: object) -> None:
        results.append(await who.replace(what))  # type: ignore[arg-type]

    async with anyio.create_task_group() as group:
        group.start_soon(write, store, mine)
        group.start_soon(write, other, theirs)
    assert sorted(results) == [False, True]
    final = await other.get("t1")
    assert final is not None and final.version == 1
    assert not await other.create(record(), limits=OPEN, now=1000.0)
