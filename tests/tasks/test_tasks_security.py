"""Tasks against a hostile caller, over real HTTP: ids nobody can guess, tasks bound to their principal,
`tasks/update` input of every wrong kind, routing headers that must match, and a bound on live tasks.

The server is served by uvicorn; requests are raw JSON-RPC POSTs, so nothing
a well-behaved client would do for us hides a gap. Principals come from an
`X-User` header through the app's `principal` option (as an authenticating
proxy or the OAuth layer would set them).
"""

from __future__ import annotations

import string
import time
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from http_helpers import serving
from mcp_resolve import Elicit, MCPServer, Resolve
from mcp_resolve.tasks import TASKS_EXTENSION, TaskOptions
from mcp_resolve.tasks.records import new_task_id
from tasks_helpers import accept, error, post, result

NOT_FOUND = (-32602, "Failed to retrieve task: Task not found")


class Ok(BaseModel):
    ok: bool


async def ask_ok() -> Elicit[Ok]:
    return Elicit("Go?", Ok, key="ok")


def build() -> MCPServer:
    mcp = MCPServer("guarded", task_options=TaskOptions(poll_interval_ms=20, max_live_per_principal=2))

    @mcp.tool(task_support="optional")
    async def confirm(ok: Annotated[Ok, Resolve(ask_ok)], note: str = "") -> str:
        return f"ok={ok.ok}"

    @mcp.tool(task_support="optional")
    async def wait(seconds: float = 30) -> str:
        await anyio.sleep(seconds)
        return "waited"

    return mcp


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    app = build().streamable_http_app(principal=lambda request: request.headers.get("x-user"))
    with serving(app) as base:
        yield f"{base}/mcp"


def waiting_task(url: str, user: str = "alice") -> str:
    """A `confirm` task parked on its question."""
    task_id = result(url, "tools/call", {"name": "confirm", "arguments": {}}, user=user)["taskId"]
    for _ in range(250):
        if result(url, "tasks/get", {"taskId": task_id}, user=user)["status"] == "input_required":
            return str(task_id)
        time.sleep(0.02)
    raise AssertionError("the task never asked")


def test_task_ids_are_unguessable() -> None:
    ids = {new_task_id() for _ in range(2000)}
    assert len(ids) == 2000
    alphabet = set(string.ascii_letters + string.digits + "-_")
    assert all(len(task_id) == 32 and set(task_id) <= alphabet for task_id in ids)  # 192 random bits each


@pytest.mark.slow
def test_another_callers_task_is_not_found(url: str) -> None:
    task_id = waiting_task(url, "alice")
    unknown = "A" * 32
    for user in ("bob", None):
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            params = {"taskId": task_id, "inputResponses": {"ok": accept(ok=True)}}
            assert error(url, method, params, user=user) == NOT_FOUND
            assert error(url, method, {**params, "taskId": unknown}, user=user) == NOT_FOUND  # no oracle
    task = result(url, "tasks/get", {"taskId": task_id}, user="alice")
    assert task["status"] == "input_required"  # bob's update and cancel changed nothing
    result(url, "tasks/update", {"taskId": task_id, "inputResponses": {"ok": accept(ok=True)}})
    result(url, "tasks/cancel", {"taskId": task_id})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("responses", "why"),
    [
        (None, "needs an inputResponses object"),
        ([accept(ok=True)], "inputResponses"),
        ("ok", "inputResponses"),
        ({"ok": "yes"}, "inputResponses"),
        ({"ok": {"action": "maybe"}}, "not a elicitation/create result"),
        ({"ok": {"action": "accept", "content": "yes"}}, "not a elicitation/create result"),
        (
            {"ok": {"action": "accept", "content": {"ok": {"nested": True}}}},
            "not a elicitation/create result",
        ),
        ({"ok": accept(ok=True, blob="x" * 300_000)}, "larger than"),
    ],
)
def test_a_malformed_answer_is_refused_and_changes_nothing(url: str, responses: Any, why: str) -> None:
    task_id = waiting_task(url)
    params: dict[str, Any] = {"taskId": task_id}
    if responses is not None:
        params["inputResponses"] = responses
    code, message = error(url, "tasks/update", params)
    assert code == -32602 and why in message, message
    task = result(url, "tasks/get", {"taskId": task_id})
    assert task["status"] == "input_required" and set(task["inputRequests"]) == {"ok"}
    result(url, "tasks/cancel", {"taskId": task_id})


@pytest.mark.slow
def test_unknown_keys_are_ignored_however_many(url: str) -> None:
    task_id = waiting_task(url)
    flood = {f"key-{index}": accept(x=index) for index in range(5000)}
    assert (
        result(url, "tasks/update", {"taskId": task_id, "inputResponses": flood})["resultType"] == "complete"
    )
    assert result(url, "tasks/get", {"taskId": task_id})["status"] == "input_required"
    result(url, "tasks/cancel", {"taskId": task_id})


@pytest.mark.slow
@pytest.mark.parametrize("task_id", [None, 7, ["x"], {"a": 1}, "", "x" * 5000])
def test_a_task_id_that_is_not_a_short_string_is_invalid_params(url: str, task_id: Any) -> None:
    params = {} if task_id is None else {"taskId": task_id}
    code, _message = error(url, "tasks/get", params)
    assert code == -32602


@pytest.mark.slow
def test_routing_headers_must_name_the_task(url: str) -> None:
    task_id = waiting_task(url)
    assert error(url, "tasks/get", {"taskId": task_id}, headers={"Mcp-Name": "another-task"})[0] == -32020
    status, response = post(url, "tasks/cancel", {"taskId": task_id}, headers={"Mcp-Method": "tasks/get"})
    assert status == 400 and response["error"]["code"] == -32020
    assert (
        error(url, "tasks/update", {"taskId": task_id, "inputResponses": {}}, headers={"Mcp-Name": ""})[0]
        == -32020
    )
    assert result(url, "tasks/get", {"taskId": task_id}, headers={"mcp-name": task_id})["taskId"] == task_id
    result(url, "tasks/cancel", {"taskId": task_id})


@pytest.mark.slow
def test_live_tasks_are_bounded_per_principal(url: str) -> None:
    first = result(url, "tools/call", {"name": "wait", "arguments": {}}, user="carol")["taskId"]
    second = result(url, "tools/call", {"name": "wait", "arguments": {}}, user="carol")["taskId"]
    refused = result(url, "tools/call", {"name": "wait", "arguments": {}}, user="carol")
    assert refused["isError"] is True and "too many tasks in progress" in refused["content"][0]["text"]
    assert "taskId" in result(url, "tools/call", {"name": "wait", "arguments": {}}, user="dave")
    result(url, "tasks/cancel", {"taskId": first}, user="carol")
    for _ in range(250):
        if result(url, "tasks/get", {"taskId": first}, user="carol")["status"] == "cancelled":
            break
        time.sleep(0.02)
    again = result(url, "tools/call", {"name": "wait", "arguments": {}}, user="carol")
    assert "taskId" in again
    for task_id in (second, again["taskId"]):
        result(url, "tasks/cancel", {"taskId": task_id}, user="carol")


@pytest.mark.slow
def test_too_large_a_call_is_not_kept(url: str) -> None:
    refused = result(
        url, "tools/call", {"name": "confirm", "arguments": {"note": "x" * 1_100_000}}, user="erin"
    )
    assert refused["isError"] is True and "too large to run as a task" in refused["content"][0]["text"]


@pytest.mark.slow
def test_without_the_extension_nothing_about_tasks_is_served(url: str) -> None:
    task_id = waiting_task(url)
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        params = {"taskId": task_id, "inputResponses": {}}
        assert error(url, method, params, caps={"elicitation": {}})[0] == -32021
    extension_only = {"extensions": {TASKS_EXTENSION: {}}}
    assert result(url, "tasks/get", {"taskId": task_id}, caps=extension_only)["status"] == "input_required"
    result(url, "tasks/cancel", {"taskId": task_id})
