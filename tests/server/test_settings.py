"""Operator settings (`MCP_RESOLVE_*`): real servers started with them, precedence, hostile values, secrets.

The servers here are real processes (`mcp-resolve run`, and a script calling
`mcp.run(...)`) started with environment variables, probed over real HTTP and
stdio: a setting that did not take effect would leave the port closed, a Host
refused or a log line missing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from conftest import PYTHON, REFUND_DESK, initialize_request
from http_helpers import free_port, serving
from mcp_resolve import Client, MCPServer
from mcp_resolve.sealing import RequestStateSecurity
from mcp_resolve.settings import ENV_PREFIX, InvalidSetting, Settings, load_settings

CLI = [PYTHON, "-m", "mcp_resolve"]
KEY = "settings-test-STATE-KEY-" + "s" * 40
PING = initialize_request({})  # what a client sends first; 200 when the Host and Origin pass


def clean_environment(**variables: str) -> dict[str, str]:
    """This process's environment without any MCP_RESOLVE_* of its own, plus `variables`."""
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith(ENV_PREFIX)}
    return {**base, **variables}


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    return monkeypatch


# -- the model: precedence and parsing ------------------------------------------------------
def test_defaults_without_environment(no_settings: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (settings.host, settings.port, settings.path) == ("127.0.0.1", 8000, "/mcp")
    assert settings.allowed_hosts is None and settings.allowed_origins is None
    assert settings.log_level is None and settings.state_key_ring() is None and settings.redis() is None


def test_environment_beats_defaults_and_arguments_beat_environment(no_settings: pytest.MonkeyPatch) -> None:
    no_settings.setenv("MCP_RESOLVE_PORT", "9100")
    no_settings.setenv("MCP_RESOLVE_LOG_LEVEL", "warning")
    no_settings.setenv("MCP_RESOLVE_ALLOWED_HOSTS", " a.example.test, b.example.test:8443 ,,")
    from_env = load_settings()
    assert from_env.port == 9100 and from_env.log_level == "WARNING"
    assert from_env.allowed_hosts == ["a.example.test", "b.example.test:8443"]
    given = load_settings(port=9200, log_level="DEBUG", allowed_hosts=None)  # None: not given
    assert given.port == 9200 and given.log_level == "DEBUG"
    assert given.allowed_hosts == ["a.example.test", "b.example.test:8443"]
    assert Settings(port=9300).port == 9300  # the pydantic-settings constructor, same order


def test_empty_variables_count_as_unset(no_settings: pytest.MonkeyPatch) -> None:
    for field in ("HOST", "PORT", "PATH", "ALLOWED_HOSTS", "ALLOWED_ORIGINS", "LOG_LEVEL", "REDIS_URL"):
        no_settings.setenv(ENV_PREFIX + field, "")
    assert load_settings() == Settings.model_construct()


def test_existing_variable_names_keep_working(no_settings: pytest.MonkeyPatch) -> None:
    """MCP_RESOLVE_STATE_KEYS and MCP_RESOLVE_REDIS_URL predate the model: same names, same meaning."""
    other = "another-key-of-forty-bytes-" + "o" * 20
    no_settings.setenv("MCP_RESOLVE_STATE_KEYS", f"{KEY}, {other}")
    assert load_settings().state_key_ring() == [KEY, other]
    security = MCPServer("Keys").request_state_security
    assert not security.is_ephemeral
    assert not RequestStateSecurity.from_env().is_ephemeral
    no_settings.setenv("MCP_RESOLVE_REDIS_URL", "redis://127.0.0.1:1/0")
    assert load_settings().redis() == "redis://127.0.0.1:1/0"


# -- hostile and invalid values -------------------------------------------------------------
INVALID = [
    ("PORT", "abc", "must be a whole number from 1 to 65535"),
    ("PORT", "70000", "must be a whole number from 1 to 65535"),
    ("PORT", "-1", "must be a whole number from 1 to 65535"),
    ("PORT", "8000; rm -rf /", "must be a whole number"),
    ("HOST", "bad host", "must be an IP address or a host name"),
    ("HOST", "evil\r\nX-Injected: 1", "must be an IP address or a host name"),
    ("PATH", "mcp", "must start with /"),
    ("PATH", "/mcp\x1b[2J", "must start with /"),
    ("LOG_LEVEL", "chatty\x1b[31m", "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
    ("ALLOWED_HOSTS", "good.example,evil.example\r\nX: 1", "each entry must be a host name"),
    ("ALLOWED_HOSTS", "a b", "each entry must be a host name"),
    ("ALLOWED_ORIGINS", "javascript:alert(1)", "each entry must be scheme://host[:port] or *"),
    ("ALLOWED_ORIGINS", "https://app.example/path", "each entry must be scheme://host[:port] or *"),
]


@pytest.mark.parametrize(("field", "value", "reason"), INVALID, ids=[f"{f}={v!r}" for f, v, _ in INVALID])
def test_invalid_value_is_one_line_naming_the_variable(
    no_settings: pytest.MonkeyPatch, field: str, value: str, reason: str
) -> None:
    no_settings.setenv(ENV_PREFIX + field, value)
    with pytest.raises(InvalidSetting) as info:
        load_settings()
    message = str(info.value)
    assert message.startswith(f"{ENV_PREFIX}{field}=")
    assert reason in message
    assert "\n" not in message and "\r" not in message and "\x1b" not in message and "\x00" not in message


def test_a_long_value_is_cut_short_in_the_message(no_settings: pytest.MonkeyPatch) -> None:
    no_settings.setenv("MCP_RESOLVE_PORT", "9" * 10_000)
    with pytest.raises(InvalidSetting) as info:
        load_settings()
    message = str(info.value)
    assert len(message) < 200 and message.startswith("MCP_RESOLVE_PORT='999")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "is set but holds no keys"),
        (" , ,", "is set but holds no keys"),
        (f"{KEY},short-SECRET-key", "key #1 is under 32 bytes"),
    ],
)
def test_bad_state_keys_are_refused_without_showing_them(
    no_settings: pytest.MonkeyPatch, value: str, reason: str
) -> None:
    no_settings.setenv("MCP_RESOLVE_STATE_KEYS", value)
    for attempt in (load_settings, lambda: MCPServer("Keys"), RequestStateSecurity.from_env):
        with pytest.raises(InvalidSetting) as info:
            attempt()
        message = str(info.value)
        assert message.startswith("MCP_RESOLVE_STATE_KEYS: ") and reason in message
        assert "SECRET" not in message and KEY not in message and "value not shown" in message


def test_secrets_never_appear_in_repr_or_the_description(no_settings: pytest.MonkeyPatch) -> None:
    no_settings.setenv("MCP_RESOLVE_STATE_KEYS", KEY)
    no_settings.setenv("MCP_RESOLVE_REDIS_URL", "redis://:hunter2-PASSWORD@127.0.0.1:1/0")
    settings = load_settings()
    for text in (repr(settings), str(settings), settings.described(), settings.model_dump_json()):
        assert KEY not in text and "hunter2" not in text
    assert "state_keys=1 set" in settings.described() and "redis_url=set" in settings.described()


def test_a_given_value_is_named_as_the_argument(no_settings: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidSetting, match=r"^log_level='loud': must be one of"):
        load_settings(log_level="loud")


# -- real servers started with the environment ----------------------------------------------
@contextmanager
def process(
    argv: list[str], env: dict[str, str], log: Path, port: int | None
) -> Iterator[subprocess.Popen[bytes]]:
    """Start `argv` with stderr to `log`; wait for `port` to accept connections (when given); stop it after."""
    with log.open("wb") as sink:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink)
    try:
        if port is not None:
            deadline = time.monotonic() + 60
            while True:
                assert child.poll() is None, f"the server exited: {log.read_text()}"
                try:
                    httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the server never listened"
                    time.sleep(0.05)
        yield child
    finally:
        child.terminate()
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()


def post_ping(port: int, *, host: str | None = None, origin: str | None = None, path: str = "/mcp") -> int:
    headers = {"Accept": "application/json, text/event-stream"}
    if host is not None:
        headers["Host"] = host
    if origin is not None:
        headers["Origin"] = origin
    return httpx.post(f"http://127.0.0.1:{port}{path}", json=PING, headers=headers, timeout=10).status_code


@pytest.mark.slow
def test_cli_serves_where_the_environment_says(tmp_path: Path) -> None:
    port = free_port()
    env = clean_environment(
        MCP_RESOLVE_HOST="127.0.0.1",
        MCP_RESOLVE_PORT=str(port),
        MCP_RESOLVE_PATH="/tools",
        MCP_RESOLVE_ALLOWED_HOSTS="desk.example.test",
        MCP_RESOLVE_ALLOWED_ORIGINS="https://app.example.test",
    )
    log = tmp_path / "stderr.log"
    with process([*CLI, "run", str(REFUND_DESK), "--http"], env, log, port):
        assert post_ping(port, host="desk.example.test", path="/tools") == 200
        assert post_ping(port, host="elsewhere.example.test", path="/tools") == 403
        assert (
            post_ping(port, host="127.0.0.1", path="/tools") == 403
        )  # the list replaces the loopback default
        assert (
            post_ping(port, host="desk.example.test", origin="https://app.example.test", path="/tools") == 200
        )
        assert (
            post_ping(port, host="desk.example.test", origin="https://evil.example.test", path="/tools")
            == 403
        )
        assert post_ping(port, host="desk.example.test") == 404  # /mcp is not the path any more
    assert f"MCP endpoint: http://127.0.0.1:{port}/tools" in log.read_text()


@pytest.mark.slow
def test_command_line_beats_the_environment(tmp_path: Path) -> None:
    env_port, cli_port = free_port(), free_port()
    env = clean_environment(MCP_RESOLVE_PORT=str(env_port), MCP_RESOLVE_ALLOWED_HOSTS="env.example.test")
    argv = [
        *CLI,
        "run",
        str(REFUND_DESK),
        "--http",
        "--port",
        str(cli_port),
        "--allowed-host",
        "cli.example.test",
    ]
    with process(argv, env, tmp_path / "stderr.log", cli_port):
        assert post_ping(cli_port, host="cli.example.test") == 200
        assert post_ping(cli_port, host="env.example.test") == 403
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{env_port}/health", timeout=2)


SCRIPT = """
    from mcp_resolve import MCPServer

    mcp = MCPServer("Scripted")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    mcp.run(transport="streamable-http"{arguments})
"""


@pytest.mark.slow
def test_mcp_run_reads_the_environment_and_its_arguments_win(tmp_path: Path) -> None:
    """`python server.py` calling `mcp.run(transport="streamable-http")`: no CLI involved."""
    env_port, arg_port = free_port(), free_port()
    env = clean_environment(MCP_RESOLVE_PORT=str(env_port), MCP_RESOLVE_ALLOWED_HOSTS="script.example.test")
    plain = tmp_path / "plain.py"
    plain.write_text(textwrap.dedent(SCRIPT.format(arguments="")))
    with process([PYTHON, str(plain)], env, tmp_path / "plain.log", env_port):
        assert post_ping(env_port, host="script.example.test") == 200
        assert post_ping(env_port) == 403
    explicit = tmp_path / "explicit.py"
    explicit.write_text(
        textwrap.dedent(SCRIPT.format(arguments=f", port={arg_port}, allowed_hosts=['arg.test']"))
    )
    with process([PYTHON, str(explicit)], env, tmp_path / "explicit.log", arg_port):
        assert post_ping(arg_port, host="arg.test") == 200
        assert post_ping(arg_port, host="script.example.test") == 403


@pytest.mark.slow
def test_an_app_served_by_any_asgi_server_honours_the_allowed_hosts(no_settings: pytest.MonkeyPatch) -> None:
    no_settings.setenv("MCP_RESOLVE_ALLOWED_HOSTS", "app.example.test")
    no_settings.setenv("MCP_RESOLVE_ALLOWED_ORIGINS", "https://ui.example.test")
    app = MCPServer("Mounted").streamable_http_app()
    explicit = MCPServer("Mounted").streamable_http_app(allowed_hosts=["127.0.0.1"])
    headers = {"Accept": "application/json, text/event-stream"}
    with serving(app) as url, serving(explicit) as explicit_url:
        assert (
            httpx.post(f"{url}/mcp", json=PING, headers={**headers, "Host": "app.example.test"}).status_code
            == 200
        )
        assert httpx.post(f"{url}/mcp", json=PING, headers=headers).status_code == 403  # Host 127.0.0.1:port
        foreign = {**headers, "Host": "app.example.test", "Origin": "https://app.example.test"}
        assert httpx.post(f"{url}/mcp", json=PING, headers=foreign).status_code == 403
        ui = {**headers, "Host": "app.example.test", "Origin": "https://ui.example.test"}
        assert httpx.post(f"{url}/mcp", json=PING, headers=ui).status_code == 200
        assert httpx.post(f"{explicit_url}/mcp", json=PING, headers=headers).status_code == 200


# -- log level ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_level", "cli_level", "debug", "warning", "info"),
    [
        ("DEBUG", None, True, True, True),
        ("warning", None, False, True, False),
        ("ERROR", None, False, False, False),
        ("DEBUG", "ERROR", False, False, False),  # --log-level beats the environment
        (None, None, False, True, True),  # the default: INFO
    ],
)
def test_log_level_takes_effect_on_a_real_server(
    tmp_path: Path, env_level: str | None, cli_level: str | None, debug: bool, warning: bool, info: bool
) -> None:
    port = free_port()
    env = clean_environment(MCP_RESOLVE_PORT=str(port), MCP_RESOLVE_STATE_KEYS=KEY)
    if env_level is not None:
        env["MCP_RESOLVE_LOG_LEVEL"] = env_level
    argv = [*CLI, "run", str(REFUND_DESK), "--http", *(["--log-level", cli_level] if cli_level else [])]
    log = tmp_path / "stderr.log"
    with process(argv, env, log, port):
        assert post_ping(port, host="rebinding.example.test") == 403  # logged at WARNING by mcp_resolve.http
    text = log.read_text()
    assert ("DEBUG mcp_resolve.http: settings: " in text) is debug
    assert (
        "WARNING mcp_resolve.http: refused a request for Host 'rebinding.example.test'" in text
    ) is warning
    assert ("Uvicorn running on" in text) is info  # uvicorn's own loggers follow the same level
    assert KEY not in text


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize(("level", "debug"), [("debug", True), (None, False)])
async def test_stdio_log_level_and_the_key_never_logged(
    tmp_path: Path, level: str | None, debug: bool
) -> None:
    """A whole refund over stdio (requestState sealed every round), its stderr kept: the key never shows."""
    log = tmp_path / "stderr.log"
    answers = iter([{"action": "accept", "content": {"full": True}}, {"action": "decline"}])

    async def person(params: object) -> dict[str, object]:
        return next(answers)

    server = shlex.join([*CLI, "run", str(REFUND_DESK)])
    variables = {"MCP_RESOLVE_STATE_KEYS": KEY, **({"MCP_RESOLVE_LOG_LEVEL": level} if level else {})}
    async with Client(
        ["sh", "-c", f"exec {server} 2>{shlex.quote(str(log))}"],
        env=clean_environment(**variables),
        mode="2026-07-28",
        elicitation_handler=person,
    ) as client:
        result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "settings"})
    assert result.structured_content is not None and result.structured_content["cents"] == 4800
    text = log.read_text()
    assert ("DEBUG mcp_resolve.stdio: settings: " in text and "state_keys=1 set" in text) is debug
    assert KEY not in text


# -- the command line refuses bad settings in one line -------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        (
            {"MCP_RESOLVE_PORT": "abc"},
            "mcp-resolve: MCP_RESOLVE_PORT='abc': must be a whole number from 1 to 65535",
        ),
        (
            {"MCP_RESOLVE_LOG_LEVEL": "loud"},
            "mcp-resolve: MCP_RESOLVE_LOG_LEVEL='loud': must be one of DEBUG",
        ),
        ({"MCP_RESOLVE_ALLOWED_HOSTS": "a\tb"}, "mcp-resolve: MCP_RESOLVE_ALLOWED_HOSTS='a\\tb': each entry"),
        (
            {"MCP_RESOLVE_STATE_KEYS": "SECRET-but-short"},
            "mcp-resolve: MCP_RESOLVE_STATE_KEYS: key #0 is under",
        ),
    ],
)
@pytest.mark.parametrize("command", [["run", "--http"], ["run"], ["check"]])
def test_cli_reports_a_bad_setting_in_one_line(
    variables: dict[str, str], expected: str, command: list[str]
) -> None:
    argv = [*CLI, command[0], str(REFUND_DESK), *command[1:]]
    done = subprocess.run(
        argv, env=clean_environment(**variables), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "SECRET" not in done.stderr


QUIET_SERVER = """
    from mcp_resolve import MCPServer

    mcp = MCPServer("Quiet", log_level="ERROR")
"""


@pytest.mark.slow
@pytest.mark.parametrize(("cli_level", "debug"), [(None, False), ("DEBUG", True)])
def test_log_level_in_code_beats_the_environment_and_the_command_line_beats_both(
    tmp_path: Path, cli_level: str | None, debug: bool
) -> None:
    server = tmp_path / "quiet.py"
    server.write_text(textwrap.dedent(QUIET_SERVER))
    port = free_port()
    env = clean_environment(MCP_RESOLVE_PORT=str(port), MCP_RESOLVE_LOG_LEVEL="DEBUG")
    argv = [*CLI, "run", str(server), "--http", *(["--log-level", cli_level] if cli_level else [])]
    log = tmp_path / "stderr.log"
    with process(argv, env, log, port):
        assert post_ping(port, host="rebinding.example.test") == 403
    text = log.read_text()
    assert (
        "settings: host=127.0.0.1" in text
    ) is debug  # basicConfig's format: the server's log_level set it up
    assert ("refused a request for Host 'rebinding.example.test'" in text) is debug  # a WARNING, under ERROR


@pytest.mark.slow
def test_a_redis_password_never_reaches_the_log(tmp_path: Path) -> None:
    """Redis down (nothing listens on port 1): the outage is logged at WARNING, with the password masked."""
    port = free_port()
    env = clean_environment(
        MCP_RESOLVE_PORT=str(port),
        MCP_RESOLVE_LOG_LEVEL="DEBUG",
        MCP_RESOLVE_REDIS_URL="redis://:hunter2-PASSWORD@127.0.0.1:1/0",
        MCP_RESOLVE_STATE_KEYS=KEY,
    )
    log = tmp_path / "stderr.log"
    with process([*CLI, "run", str(REFUND_DESK), "--http"], env, log, port):
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 503
    text = log.read_text()
    assert "redis_url=set" in text and "Redis at redis://:***@127.0.0.1:1/0 failed" in text
    assert "hunter2" not in text and KEY not in text


_IDLE_SERVER = """
import sys
from mcp_resolve import MCPServer

mcp = MCPServer("idle")
mcp.run()  # stdio; stdin is empty: serves nothing, then ends
print("pydantic_settings" in sys.modules, file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize("configured", [False, True])
def test_the_settings_model_loads_only_when_a_variable_is_set(configured: bool) -> None:
    """With no MCP_RESOLVE_* variable every setting is its default: an idle stdio server does not
    load pydantic-settings (about 1 MB); with one set, it reads (and checks) them all."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(ENV_PREFIX)}
    if configured:
        env["MCP_RESOLVE_LOG_LEVEL"] = "warning"
    done = subprocess.run([PYTHON, "-c", _IDLE_SERVER], input=b"", capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode().strip().splitlines()[-1] == str(configured)
    env["MCP_RESOLVE_PORT"] = "abc"  # and a bad value is still caught whenever one is set
    failed = subprocess.run([PYTHON, "-c", _IDLE_SERVER], input=b"", capture_output=True, env=env, timeout=60)
    assert failed.returncode != 0 and b"MCP_RESOLVE_PORT='abc'" in failed.stderr


_ASGI_APP = """
import sys
from mcp_resolve import MCPServer

app = MCPServer("idle").streamable_http_app()  # what `uvicorn module:app` imports
print("pydantic_settings" in sys.modules, file=sys.stderr)
"""


@pytest.mark.slow
@pytest.mark.parametrize("configured", [False, True])
def test_an_asgi_app_loads_the_settings_model_only_when_a_variable_is_set(configured: bool) -> None:
    """The app that an ASGI server imports reads MCP_RESOLVE_ALLOWED_HOSTS/ORIGINS when set, and
    otherwise leaves pydantic-settings unloaded, as the stdio server does (part of its idle memory)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(ENV_PREFIX)}
    if configured:
        env["MCP_RESOLVE_ALLOWED_HOSTS"] = "mcp.example.com"
    done = subprocess.run([PYTHON, "-c", _ASGI_APP], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode().strip().splitlines()[-1] == str(configured)
    env["MCP_RESOLVE_PORT"] = "abc"
    failed = subprocess.run([PYTHON, "-c", _ASGI_APP], capture_output=True, env=env, timeout=60)
    assert failed.returncode != 0 and b"MCP_RESOLVE_PORT='abc'" in failed.stderr
