"""One INFO line at start says where each store keeps its data, and never the Redis password.

An operator who set MCP_RESOLVE_REDIS_URL had no line in the log saying the
stores were on Redis. `check_state_keys` (every HTTP start: the CLI, `serve_http`,
each worker's lifespan) now logs it, once per server. The Redis address is `scheme://host:port/db` only. The slow test
of docs/deploy.md's commands (tests/test_deploy_commands.py) reads the same
line from real workers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_resolve import MCPServer, RequestStateSecurity, SqliteReplayStore
from mcp_resolve.server._deployment import check_state_keys
from mcp_resolve.stores.events import MemoryEventStore

KEYS = RequestStateSecurity(keys=["a-shared-secret-of-at-least-32-bytes!!"])


def stores_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "mcp_resolve.stores" and record.levelno == logging.INFO
    ]


def test_a_server_on_redis_says_so_once_without_its_credentials(caplog: pytest.LogCaptureFixture) -> None:
    url = "redis://desk-user:s3cret-PASSWORD@cache.internal:6380/2"
    server = MCPServer("Desk", redis_url=url, request_state_security=KEYS)
    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        check_state_keys(server, 1)
        check_state_keys(server, 1)  # the lifespan after the CLI, in one process: still one line
    assert stores_lines(caplog) == [
        "replay RedisReplayStore, sessions RedisSessionStore, events RedisEventStore, "
        "subscriptions RedisSubscriptionBus, tasks RedisTaskStore (Redis at redis://cache.internal:6380/2)"
    ]
    assert "s3cret" not in caplog.text and "desk-user" not in caplog.text


def test_the_redis_address_names_the_default_port_and_database(caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("Desk", redis_url="rediss://:pw@cache.internal", request_state_security=KEYS)
    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        check_state_keys(server, 1)
    (line,) = stores_lines(caplog)
    assert line.endswith("(Redis at rediss://cache.internal:6379/0)")
    assert ":pw" not in caplog.text


def test_a_server_in_one_process_says_where_its_stores_are(caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("Local")
    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        check_state_keys(server, 1)
    assert stores_lines(caplog) == [
        "replay MemoryReplayStore, sessions in this process, events none, "
        "subscriptions InMemorySubscriptionBus, tasks MemoryTaskStore"
    ]


def test_stores_passed_explicitly_are_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer(
        "Host",
        replay_store=SqliteReplayStore(tmp_path / "claims.db"),
        task_store=str(tmp_path / "tasks.db"),
        event_store=MemoryEventStore(),
    )
    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        check_state_keys(server, 1)
    assert stores_lines(caplog) == [
        "replay SqliteReplayStore, sessions in this process, events MemoryEventStore, "
        "subscriptions InMemorySubscriptionBus, tasks SqliteTaskStore"
    ]
