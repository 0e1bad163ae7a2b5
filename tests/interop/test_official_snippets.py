"""The official SDK's own example servers, ported by rewriting only their import lines.

Each file under tests/official_snippets/ is the official python-sdk's
`examples/snippets/servers/<name>.py`, kept verbatim (README.md there names
the commit). Every test here serves a snippet twice over stdio: as written,
on the official `mcp` 2.3.0 (the reference), and with its imports rewritten
by `port()` below, on mcp-resolve. The official client then lists everything
each server offers, calls every tool, reads every resource and template,
gets every prompt and asks for completions with the same sample arguments,
records what the server asked of it (elicitation, sampling) and told it
(logs, progress, notifications), and the two records must be equal, on both
protocol eras. For a subset, our own `mcp_resolve.Client` drives our port
too and must get the official server's answers. `dump()` and `listing()`
name the only normalisations.

All observations run in one batch per module, a few servers at a time: each
is a subprocess start, mostly spent importing.

A snippet that does not port yet is an expected failure (`xfail`, strict:
the day it ports the test fails until the mark is removed), with the reason
naming what is missing; docs/porting.md lists the same ones.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client import session as official_session
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

import mcp_resolve
from conftest import TESTS

pytestmark = pytest.mark.slow

HERE = TESTS
SNIPPETS = HERE / "official_snippets"
RUNNER = HERE / "servers" / "snippet_runner.py"

# --- the port: import lines only ---------------------------------------------------------
# `from <official module> import ...` becomes `from <ours> import ...`, names unchanged.
MODULES = {
    "mcp.server.mcpserver": "mcp_resolve",
    "mcp.server": "mcp_resolve",
    "mcp.server.mcpserver.exceptions": "mcp_resolve.exceptions",
    "mcp.shared.exceptions": "mcp_resolve.exceptions",
    # The official `mcp.types` is a mirror of `mcp_types` (the same objects), which we depend on too.
    "mcp.types": "mcp_types",
}
# Whole import lines with no `from X import name` counterpart. `base` is a module
# whose `Message`, `UserMessage` and `AssistantMessage` we export at the top level.
LINES = {
    "from mcp.server.mcpserver.prompts import base": "import mcp_resolve as base",
}
_FROM = re.compile(r"from (mcp(?:\.\w+)*) import ")


def port(source: str) -> str:
    """The snippet with its `mcp` imports pointed at mcp-resolve; every other line as it was."""
    out: list[str] = []
    for line in source.splitlines(keepends=True):
        text = line.rstrip("\n")
        if text in LINES:
            out.append(LINES[text] + "\n")
            continue
        match = _FROM.match(line)
        if match is not None:
            if match.group(1) not in MODULES:
                raise AssertionError(f"no rewrite for {match.group(1)}: add it to MODULES")
            line = f"from {MODULES[match.group(1)]} import {line[match.end() :]}"
        elif re.match(r"import mcp\b", line):
            raise AssertionError(f"no rewrite for {text!r}")
        out.append(line)
    return "".join(out)


# --- what each snippet is asked ------------------------------------------------------------
@dataclass
class Plan:
    """Sample calls for one snippet. Every listed tool, template and prompt must have one."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    templates: dict[str, list[str]] = field(default_factory=dict)  # uriTemplate -> URIs to read
    prompts: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    completions: list[tuple[dict[str, Any], dict[str, str], dict[str, str] | None]] = field(
        default_factory=list
    )
    xfail: str | None = None  # why it does not port yet: the missing name or behaviour
    modes: tuple[str, ...] = ("auto", "legacy")  # the client's `mode=`: 2026-07-28 and 2025-11-25
    envelope_only: tuple[str, ...] = ()  # modes comparing an error by its code, not its message


PLANS: dict[str, Plan] = {
    "basic_tool": Plan(
        calls=[
            ("sum", {"a": 1, "b": 2}),
            ("get_weather", {"city": "London"}),
            ("get_weather", {"city": "Oslo", "unit": "fahrenheit"}),
        ]
    ),
    "basic_resource": Plan(
        templates={"file://documents/{name}": ["file://documents/readme"]},
    ),
    "basic_prompt": Plan(
        prompts=[("review_code", {"code": "print(1)"}), ("debug_error", {"error": "KeyError: 'x'"})],
    ),
    "tool_progress": Plan(calls=[("long_running_task", {"task_name": "build", "steps": 3})]),
    "notifications": Plan(
        calls=[("process_data", {"data": "abc"})],
    ),
    "lifespan_example": Plan(calls=[("query_db", {})]),
    "images": Plan(calls=[("create_thumbnail", {"image_path": "<png>"})]),
    "structured_output": Plan(
        calls=[
            ("get_weather", {"city": "London"}),
            ("get_location", {"address": "10 Downing St"}),
            ("get_statistics", {"data_type": "sales"}),
            ("get_user", {"user_id": "1"}),
            ("get_config", {}),
            ("list_cities", {}),
            ("get_temperature", {"city": "Paris"}),
        ],
    ),
    "completion": Plan(
        templates={"github://repos/{owner}/{repo}": ["github://repos/modelcontextprotocol/python-sdk"]},
        prompts=[("review_code", {"language": "python", "code": "x = 1"})],
        completions=[
            ({"type": "ref/prompt", "name": "review_code"}, {"name": "language", "value": "py"}, None),
            ({"type": "ref/prompt", "name": "review_code"}, {"name": "language", "value": ""}, None),
            (
                {"type": "ref/resource", "uri": "github://repos/{owner}/{repo}"},
                {"name": "repo", "value": ""},
                {"owner": "modelcontextprotocol"},
            ),
            (
                {"type": "ref/resource", "uri": "github://repos/{owner}/{repo}"},
                {"name": "repo", "value": ""},
                {"owner": "someone-else"},
            ),
        ],
    ),
    "elicitation": Plan(
        calls=[
            ("book_table", {"date": "2024-12-25", "time": "19:00", "party_size": 4}),
            ("book_table", {"date": "2024-12-24", "time": "19:00", "party_size": 2}),
            ("secure_payment", {"amount": 12.5}),
            ("connect_service", {"service_name": "github"}),
        ],
        # On 2026-07-28 the official server itself refuses `ctx.elicit` mid-call (no back-channel)
        # with -32600; ours answers the same envelope with a message naming the resolver to use, so
        # there only the error's code is compared (docs/porting.md).
        envelope_only=("auto",),
    ),
    "sampling": Plan(
        calls=[("generate_poem", {"topic": "owls"})],
        # As for elicitation: the official refuses `ctx.session.create_message` on 2026-07-28.
        envelope_only=("auto",),
    ),
    "mcpserver_quickstart": Plan(
        calls=[("add", {"a": 40, "b": 2})],
        templates={"greeting://{name}": ["greeting://Ada"]},
        prompts=[("greet_user", {"name": "Ada"}), ("greet_user", {"name": "Ada", "style": "formal"})],
    ),
    "direct_call_tool_result": Plan(
        calls=[("advanced_tool", {}), ("validated_tool", {}), ("empty_result_tool", {})],
    ),
    "direct_execution": Plan(calls=[("hello", {}), ("hello", {"name": "Ada"})]),
}


# --- normalisations: each names what legitimately differs ------------------------------------
# Fresh per run, so two runs of the same server differ too: the elicitation snippet's
# `uuid.uuid4()` ids, and the memory address in a default object repr (`<X object at 0x7f..>`).
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ADDRESS = re.compile(r" object at 0x[0-9a-f]+>")
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def dump(value: Any) -> Any:
    """A wire model as JSON data, normalised where the two servers legitimately differ.

    Normalised, and nothing else:
    - the per-run values above (UUIDs, object addresses);
    - `serverInfo.version`, at the top level and in a 2026-07-28 result's `_meta`: an
      unversioned official server says "", ours "0.1.0" (docs/porting.md, constructor table).
    """
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, dict):
        data = {k: dump(v) for k, v in value.items()}
        if isinstance(data.get("_meta"), dict) and isinstance(data["_meta"].get(SERVER_INFO_META), dict):
            data["_meta"][SERVER_INFO_META].pop("version", None)
        return data
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, str):
        return _ADDRESS.sub(" object at 0x…>", _UUID.sub("<uuid>", value))
    return value


def envelope(value: Any) -> Any:
    """A record with each JSON-RPC error's message blanked: its code (the envelope) still compared.

    Normalised: the -32600 text where ours names the resolver to use instead (docs/porting.md).
    """
    if isinstance(value, dict):
        if set(value) == {"error"} and isinstance(value["error"], dict) and "code" in value["error"]:
            return {"error": {**value["error"], "message": "<message>"}}
        return {k: envelope(v) for k, v in value.items()}
    if isinstance(value, list):
        return [envelope(v) for v in value]
    return value


def listing(items: list[Any]) -> list[Any]:
    """A list result's items, with each `description` compared as `inspect.cleandoc` leaves it.

    Normalised: a multi-line docstring's indentation. The official sends the
    docstring as written in the source; ours dedents it (docs/porting.md).
    """
    data = dump(items)
    for item in data:
        if isinstance(item.get("description"), str):
            item["description"] = inspect.cleandoc(item["description"])
    return data


def server_info(info: types.Implementation | None) -> dict[str, Any]:
    """`serverInfo` less `version` (see `dump`)."""
    data = dump(info) if info is not None else {}
    data.pop("version", None)
    return data


def differences(official: Any, ours: Any, path: str = "") -> list[str]:
    """Where two records differ, one line each: the assertion message names the exact field."""
    if isinstance(official, dict) and isinstance(ours, dict):
        lines = []
        for key in [*official, *(k for k in ours if k not in official)]:
            where = f"{path}/{key}"
            if key not in ours:
                lines.append(f"{where}: official {json.dumps(official[key])[:300]}, ours missing")
            elif key not in official:
                lines.append(f"{where}: official missing, ours {json.dumps(ours[key])[:300]}")
            else:
                lines += differences(official[key], ours[key], where)
        return lines
    if isinstance(official, list) and isinstance(ours, list) and len(official) == len(ours):
        return [
            line
            for i, (a, b) in enumerate(zip(official, ours, strict=True))
            for line in differences(a, b, f"{path}[{i}]")
        ]
    if official != ours:
        return [f"{path}: official {json.dumps(official)[:300]}, ours {json.dumps(ours)[:300]}"]
    return []


# --- driving a server with the official client ---------------------------------------------
class Recorder:
    """The official client's callbacks: answer what the server asks, keep what it asked and told."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.events.append({"elicit": dump(params)})
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(
            action="accept", content={"checkAlternative": True, "alternativeDate": "2025-01-02"}
        )

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.events.append({"sample": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Owls at dusk, soft wings"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.events.append({"log": dump(params)})

    async def notified(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.events.append({"transport_error": type(message).__name__})
        elif not isinstance(message, (types.LoggingMessageNotification, types.ProgressNotification)):
            self.events.append({"notified": message.method})

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append({"progress": [progress, total, message]})

    def take(self) -> list[Any]:
        events, self.events = self.events, []
        return events


PROBE_WINDOW = 50.0
"""How long either client waits for `server/discover` before taking the server for a legacy one.

Both clients default to 10 s, counted from the moment they spawn the server:
with six servers importing at once on a small, busy machine, a start-up can
take longer, and the client then speaks 2025-11-25 to a 2026-07-28 server
(one flaky `protocol` difference in a full run). The servers here all speak
2026-07-28 and answer as soon as they are up, so a longer window costs nothing.
"""


def environment() -> dict[str, str]:
    """What the server subprocess needs to import the same mcp_resolve and mcp as this process."""
    return {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PATH": os.environ.get("PATH", "")}


async def outcome(call: Awaitable[Any]) -> Any:
    """A result as data, or the JSON-RPC error the client raised for it (either client's `MCPError`)."""
    try:
        return dump(await call)
    except (MCPError, mcp_resolve.MCPError) as exc:
        return {"error": {"code": exc.code, "message": dump(exc.message)}}


def arguments_for(arguments: dict[str, Any], png: Path) -> dict[str, Any]:
    return {k: str(png) if v == "<png>" else v for k, v in arguments.items()}


async def observe(script: Path, plan: Plan, mode: str, png: Path) -> dict[str, Any]:
    """Everything the official client sees of one server, as comparable data."""
    recorder = Recorder()
    params = StdioServerParameters(command=sys.executable, args=[str(RUNNER), str(script)], env=environment())
    client = OfficialClient(
        params,
        mode=mode,
        cache=None,
        elicitation_callback=recorder.elicit,
        sampling_callback=recorder.sample,
        logging_callback=recorder.log,
        message_handler=recorder.notified,
    )
    seen: dict[str, Any] = {}
    async with client:
        seen["protocol"] = client.protocol_version
        seen["served_by"] = client.server_info.version if client.server_info else None
        seen["server_info"] = server_info(client.server_info)
        seen["instructions"] = client.instructions
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
        seen["tools"] = listing(tools)
        seen["resources"] = listing(resources)
        seen["templates"] = listing(templates)
        seen["prompts"] = listing(prompts)
        assert {t.name for t in tools} == {name for name, _ in plan.calls}, "a tool without a sample call"
        assert {t.uri_template for t in templates} == set(plan.templates), "a template without a sample"
        assert {p.name for p in prompts} == {name for name, _ in plan.prompts}, "a prompt without a sample"
        recorder.take()
        for name, arguments in plan.calls:
            arguments = arguments_for(arguments, png)
            result = await outcome(client.call_tool(name, arguments, progress_callback=recorder.progress))
            seen[f"call {name} {arguments}"] = {"result": result, "events": recorder.take()}
        for uri in [str(r.uri) for r in resources] + [u for uris in plan.templates.values() for u in uris]:
            seen[f"read {uri}"] = await outcome(client.read_resource(uri))
        for name, arguments in plan.prompts:
            seen[f"prompt {name} {arguments}"] = await outcome(client.get_prompt(name, arguments))
        for ref, argument, context in plan.completions:
            reference = (
                types.PromptReference.model_validate(ref)
                if ref["type"] == "ref/prompt"
                else types.ResourceTemplateReference.model_validate(ref)
            )
            seen[f"complete {ref} {argument} {context}"] = await outcome(
                client.complete(reference, argument, context)
            )
    return seen


async def observe_with_our_client(script: Path, plan: Plan, mode: str, png: Path) -> dict[str, Any]:
    """What our `mcp_resolve.Client` sees of our server: the protocol, tools, calls, reads and prompts."""
    recorder = Recorder()

    async def sample(params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return await recorder.sample(None, params)

    async def progress(params: types.ProgressNotificationParams) -> None:
        await recorder.progress(params.progress, params.total, params.message)

    client = mcp_resolve.Client(
        [sys.executable, str(RUNNER), str(script)],
        mode=mode,
        env=environment(),
        probe_timeout=PROBE_WINDOW,
        sampling_handler=sample,
        progress_handler=progress,
        # The official client asks for no log level: a 2026-07-28 server then sends no log, a
        # 2025-11-25 one sends every level. Ours asks for `debug` whenever it has a log handler,
        # so it gets one only on 2025-11-25, where that asks for what the official client gets.
        log_handler=recorder.log if mode == "legacy" else None,
    )
    seen: dict[str, Any] = {}
    async with client:
        seen["protocol"] = client.protocol_version
        seen["served_by"] = client.server_info["version"] if client.server_info else None
        seen["tools"] = listing((await client.list_tools()).tools)
        for name, arguments in plan.calls:
            arguments = arguments_for(arguments, png)
            result = await outcome(client.call_tool(name, arguments))
            seen[f"call {name} {arguments}"] = {"result": result, "events": recorder.take()}
        resources = (await client.list_resources()).resources
        for uri in [str(r.uri) for r in resources] + [u for uris in plan.templates.values() for u in uris]:
            seen[f"read {uri}"] = await outcome(client.read_resource(uri))
        for name, arguments in plan.prompts:
            seen[f"prompt {name} {arguments}"] = await outcome(client.get_prompt(name, arguments))
    return seen


# --- one concurrent batch for the module ------------------------------------------------------
# Official reference, our server under the official client, our server under our client.
OBSERVERS = {"official": observe, "ours": observe, "our_client": observe_with_our_client}
# Our client drives ours for these (the official client drives every snippet), with the reason
# when it is expected to fail. It compares no listing but the tools'.
OUR_CLIENT: dict[str, str | None] = {
    "basic_tool": None,
    "tool_progress": None,
    "images": None,
    "direct_execution": None,
    "mcpserver_quickstart": None,
    "sampling": None,
}
Key = tuple[str, str, str]  # (snippet, mode, observer)


def _wanted(items: list[pytest.Item]) -> set[Key]:
    """The observations the selected tests of this module need (so `-k basic_tool` starts 4 servers)."""
    keys: set[Key] = set()
    for item in items:
        if item.module is not sys.modules[__name__] or not hasattr(item, "callspec"):
            continue
        name, mode = item.callspec.params["name"], item.callspec.params["mode"]
        if item.originalname == "test_our_client_gets_the_official_answers_from_our_port":
            keys |= {(name, mode, "official"), (name, mode, "our_client")}
        else:
            keys |= {(name, mode, "official"), (name, mode, "ours")}
    return keys


@pytest.fixture(scope="module")
def records(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[Key, Any]:
    """Every observation the selected tests need, taken a few at a time in parallel (each is a
    subprocess start, mostly spent importing): a record, or the exception that stopped it.
    """
    from PIL import Image as PILImage

    folder = tmp_path_factory.mktemp("snippets")
    png = folder / "photo.png"  # the picture the images snippet thumbnails, made here: no binary committed
    PILImage.new("RGB", (300, 200), (200, 40, 40)).save(png, format="PNG")
    for name in PLANS:
        (folder / f"{name}.py").write_text(port((SNIPPETS / f"{name}.py").read_text()))
    results: dict[Key, Any] = {}
    limiter = anyio.CapacityLimiter(6)

    async def take(key: Key) -> None:
        name, mode, observer = key
        script = SNIPPETS / f"{name}.py" if observer == "official" else folder / f"{name}.py"
        async with limiter:
            try:
                with anyio.fail_after(60):
                    results[key] = await OBSERVERS[observer](script, PLANS[name], mode, png)
            except Exception as exc:  # kept for the test that needs it, which raises it there
                results[key] = exc

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for key in sorted(_wanted(request.session.items)):
                group.start_soon(take, key)

    with pytest.MonkeyPatch.context() as patch:  # the official client's window is a module constant
        patch.setattr(official_session, "DISCOVER_TIMEOUT_SECONDS", PROBE_WINDOW)
        anyio.run(main)
    return results


# The unversioned server's `serverInfo.version` tells who answered (and is not compared):
# so a port that silently kept the official imports could not pass as ours.
SERVED_BY = {"official": "", "ours": "0.1.0", "our_client": "0.1.0"}


def record(records: dict[Key, Any], key: Key) -> dict[str, Any]:
    """One observation, less the `served_by` check; the exception that stopped it, raised."""
    value = records[key]
    if isinstance(value, BaseException):
        raise value
    assert isinstance(value, dict)
    found = dict(value)
    assert found.pop("served_by") == SERVED_BY[key[2]], f"{key} was not served by the expected SDK"
    return found


def _cases(reasons: dict[str, str | None]) -> list[Any]:
    """One case per snippet and era; a snippet that does not port yet is a strict expected failure."""
    cases = []
    for name, reason in reasons.items():
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        cases += [pytest.param(name, mode, marks=marks, id=f"{name}-{mode}") for mode in PLANS[name].modes]
    return cases


@pytest.mark.parametrize(("name", "mode"), _cases({name: plan.xfail for name, plan in PLANS.items()}))
def test_snippet_ported_by_its_imports_answers_as_the_official_server(
    name: str, mode: str, records: dict[Key, Any]
) -> None:
    official = record(records, (name, mode, "official"))
    assert official["tools"] or official["resources"] or official["prompts"]  # it served something
    ours = record(records, (name, mode, "ours"))
    if mode in PLANS[name].envelope_only:
        official, ours = envelope(official), envelope(ours)
    found = differences(official, ours)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("name", "mode"), _cases(OUR_CLIENT))
def test_our_client_gets_the_official_answers_from_our_port(
    name: str, mode: str, records: dict[Key, Any]
) -> None:
    official = record(records, (name, mode, "official"))
    ours = record(records, (name, mode, "our_client"))
    assert any(key.startswith("call ") for key in ours)
    if mode in PLANS[name].envelope_only:
        official, ours = envelope(official), envelope(ours)
    found = differences({key: official[key] for key in ours}, ours)
    assert not found, "\n".join(found)


def test_port_rewrites_import_lines_only() -> None:
    for path in sorted(SNIPPETS.glob("*.py")):
        source = path.read_text()
        ported = port(source)
        changed = [(a, b) for a, b in zip(source.splitlines(), ported.splitlines(), strict=True) if a != b]
        assert changed, f"{path.name} imports nothing from mcp?"
        for before, after in changed:
            assert before.startswith(("from mcp", "import mcp")), before
            assert after.startswith(("from mcp_resolve", "from mcp_types", "import mcp_resolve")), after
        assert "from mcp." not in ported and "import mcp." not in ported
    assert {path.stem for path in SNIPPETS.glob("*.py")} == set(PLANS)  # every committed snippet is tested
