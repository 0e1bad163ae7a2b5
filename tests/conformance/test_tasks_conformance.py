"""The everything server's tasks fixtures as the harness's ten `tasks-*` scenarios drive them, without Node.

`make conformance` runs the harness itself (conformance/NOTES.md §4.5); these
pin the same sequences over real HTTP so a regression names its cause: which
fixture, which request, which field.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import EXAMPLES, load_module
from http_helpers import serving
from mcp_resolve.tasks import TASKS_EXTENSION
from tasks_helpers import ALL_CAPS, accept, error, post, result

pytestmark = pytest.mark.slow  # one everything server on uvicorn for the module

EVERYTHING = EXAMPLES / "everything"
NO_EXTENSION = {"elicitation": {}, "sampling": {}}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    sys.path.insert(0, str(EVERYTHING))
    try:
        everything = load_module(EVERYTHING / "server.py")
    finally:
        sys.path.remove(str(EVERYTHING))
    with serving(everything.mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


def call(url: str, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    return result(url, "tools/call", {"name": name, "arguments": arguments or {}}, user=None, **options)


def until(url: str, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        task = result(url, "tasks/get", {"taskId": task_id}, user=None)
        if task["status"] in (status, "completed", "failed", "cancelled") or time.monotonic() > deadline:
            return task
        time.sleep(0.05)


def test_capability_negotiation(url: str) -> None:
    discover = result(url, "server/discover", {}, user=None)
    assert discover["capabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in discover["capabilities"]
    plain = call(url, "slow_compute", {"seconds": 0, "label": "no-ext"}, caps=NO_EXTENSION)
    assert plain["resultType"] == "complete" and plain["content"] and "taskId" not in plain
    opted_in = call(
        url, "slow_compute", {"seconds": 1, "label": "opt-in"}, caps={"extensions": {TASKS_EXTENSION: {}}}
    )
    assert opted_in["resultType"] == "task"
    result(url, "tasks/cancel", {"taskId": opted_in["taskId"]}, user=None)


def test_lifecycle(url: str) -> None:
    greeting = call(url, "greet", {"name": "World"})
    assert greeting["resultType"] == "complete" and greeting["content"][0]["text"] == "Hello, World!"
    task = call(url, "slow_compute", {"seconds": 0.5, "label": "lifecycle"})
    assert task["resultType"] == "task" and "result" not in task
    assert result(url, "tasks/get", {"taskId": task["taskId"]}, user=None)["taskId"] == task["taskId"]
    done = until(url, task["taskId"], "completed")
    assert done["status"] == "completed" and done["result"]["content"]
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
    tool_error = until(url, call(url, "failing_job")["taskId"], "completed")
    assert tool_error["status"] == "completed" and tool_error["result"]["isError"] is True
    failed = until(url, call(url, "protocol_error_job")["taskId"], "failed")
    assert (
        failed["status"] == "failed" and isinstance(failed["error"]["code"], int) and "result" not in failed
    )
    cancelled = call(url, "slow_compute", {"seconds": 60, "label": "cancel"})["taskId"]
    ack = result(url, "tasks/cancel", {"taskId": cancelled}, user=None)
    assert ack["resultType"] == "complete" and not {"taskId", "status", "result", "error"} & set(ack)
    assert until(url, cancelled, "cancelled")["status"] == "cancelled"
    assert result(url, "tasks/cancel", {"taskId": cancelled}, user=None)["resultType"] == "complete"


def test_required_task_tools_refuse_a_client_without_the_extension(url: str) -> None:
    _status, response = post(url, "tools/call", {"name": "failing_job", "arguments": {}}, user=None, caps={})
    assert response["error"]["code"] == -32021
    assert response["error"]["data"]["requiredCapabilities"]["extensions"] == {TASKS_EXTENSION: {}}
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        params = {"taskId": "gate-test", "inputResponses": {}}
        assert error(url, method, params, user=None, caps={})[0] == -32021


def test_input_inside_a_task(url: str) -> None:
    task_id = call(url, "confirm_delete", {"filename": "mrtr.txt"})["taskId"]
    waiting = until(url, task_id, "input_required")
    assert waiting["inputRequests"]["confirm_delete"]["method"] == "elicitation/create"
    ack = result(
        url,
        "tasks/update",
        {"taskId": task_id, "inputResponses": {"confirm_delete": accept(confirm=True)}},
        user=None,
    )
    assert ack["resultType"] == "complete"
    assert until(url, task_id, "completed")["result"]["content"][0]["text"] == "Deleted mrtr.txt"

    both = call(url, "multi_input")["taskId"]
    keys = sorted(until(url, both, "input_required")["inputRequests"])
    assert keys == ["proceed", "who"]
    answer = accept(name="partial-1", confirm=True)
    result(url, "tasks/update", {"taskId": both, "inputResponses": {"proceed": answer}}, user=None)
    assert set(result(url, "tasks/get", {"taskId": both}, user=None)["inputRequests"]) == {"who"}
    result(url, "tasks/update", {"taskId": both, "inputResponses": {"who": answer}}, user=None)
    assert until(url, both, "completed")["result"]["content"][0]["text"] == "partial-1 went ahead"


def test_questions_before_the_task_then_the_task(url: str) -> None:
    first = call(url, "test_tool_with_task", caps=ALL_CAPS)
    assert first["resultType"] == "input_required" and "taskId" not in first
    (key,) = first["inputRequests"]
    params = {"inputResponses": {key: accept(name="Alice")}, "requestState": first["requestState"]}
    task = result(url, "tools/call", {"name": "test_tool_with_task", "arguments": {}, **params}, user=None)
    assert task["resultType"] == "task" and "requestState" not in task and "inputRequests" not in task
    assert "Alice" in until(url, task["taskId"], "completed")["result"]["content"][0]["text"]


def test_a_legacy_task_param_never_makes_a_task(url: str) -> None:
    greeting = result(
        url, "tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 60000}}, user=None
    )
    assert greeting["resultType"] == "complete" and "taskId" not in greeting
    for method in ("tasks/result", "tasks/list"):
        assert error(url, method, {"taskId": "x"}, user=None)[0] == -32601
