"""`mcp-resolve install`: real config files in a temporary home, for every client it knows.

Each test points HOME (and the XDG/APPDATA folders) at a temporary directory and PATH at a
folder of its own, so which of `uv`, `claude` and `gemini` exist is the test's choice.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REFUND_DESK
from mcp_resolve import __version__
from mcp_resolve.cli import _install, main
from mcp_resolve.cli._install import config_path
from oidc_helpers import NODE_DIR

SERVER = str(REFUND_DESK)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.chdir(tmp_path)
    return home


def executable(home: Path, name: str, body: str = "exit 0") -> Path:
    path = home.parent / "bin" / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def run(*argv: str) -> int:
    return main(["install", *argv])


def entries(path: Path, section: str = "mcpServers") -> dict:
    return json.loads(path.read_text())[section]


CONFIGS = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers"),
    "claude-code": (".claude.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", "mcpServers"),
    "gemini-cli": (".gemini/settings.json", "mcpServers"),
}


@pytest.mark.parametrize("target", sorted(CONFIGS))
def test_writes_merges_and_backs_up_each_clients_config(
    target: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    relative, section = CONFIGS[target]
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "dark", section: {"other": {"command": "other-server"}}}))

    assert run(target, SERVER, "--name", "desk", "--env", "API_KEY=s3cret") == 0

    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data[section]["other"] == {"command": "other-server"}
    entry = data[section]["desk"]
    assert entry["command"] == sys.executable  # no uv on PATH: this interpreter, absolute
    assert entry["args"] == ["-m", "mcp_resolve", "run", str(REFUND_DESK)]
    assert entry["env"] == {"API_KEY": "s3cret"}
    backup = path.with_name(path.name + ".bak")
    assert json.loads(backup.read_text()) == {
        "theme": "dark",
        section: {"other": {"command": "other-server"}},
    }
    out = capsys.readouterr().out
    assert "uv is not on PATH" in out and sys.executable in out
    assert "s3cret" not in out


def test_vscode_workspace_and_user_profile(home: Path, tmp_path: Path) -> None:
    assert run("vscode", SERVER, "--name", "desk") == 0
    workspace = entries(tmp_path / ".vscode" / "mcp.json", "servers")
    assert workspace["desk"]["type"] == "stdio" and workspace["desk"]["command"] == sys.executable

    assert run("vscode", SERVER, "--name", "desk", "--user") == 0
    user = entries(home / ".config" / "Code" / "User" / "mcp.json", "servers")
    assert user["desk"] == workspace["desk"]


def test_a_new_config_file_is_readable_by_its_owner_only(home: Path) -> None:
    assert run("cursor", SERVER, "--name", "desk") == 0
    path = home / ".cursor" / "mcp.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name("mcp.json.bak").exists()  # nothing to back up


def test_a_conflicting_entry_is_refused_unless_forced(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {"desk": {"command": "theirs", "env": {"TOKEN": "keep-me"}}}}))

    assert run("cursor", SERVER, "--name", "desk") == 1
    err = capsys.readouterr().err
    assert "already has a server named 'desk'" in err and "--force" in err
    assert "keep-me" not in err  # the existing entry's secrets are shown masked
    assert entries(path)["desk"]["command"] == "theirs"

    assert run("cursor", SERVER, "--name", "desk", "--force") == 0
    assert entries(path)["desk"]["command"] == sys.executable
    assert entries(path.with_name("mcp.json.bak"))["desk"]["command"] == "theirs"

    # the same entry again changes nothing and writes no second backup
    assert run("cursor", SERVER, "--name", "desk") == 0
    assert "nothing to change" in capsys.readouterr().out
    assert not path.with_name("mcp.json.bak.1").exists()


def test_dry_run_shows_the_change_and_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    assert run("claude-desktop", SERVER, "--name", "desk", "--env", "API_KEY=s3cret", "--dry-run") == 0
    out = capsys.readouterr().out
    assert not path.exists()
    assert "would add 'desk'" in out and str(path) in out
    shown = json.loads(out[out.index("{") :])
    assert shown["mcpServers"]["desk"]["env"] == {"API_KEY": "<hidden>"}
    assert "s3cret" not in out


def test_prefers_uv_pinned_absolute_and_outside_any_project(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = executable(home, "uv")
    # As if installed from the package index (this checkout's own install is editable).
    monkeypatch.setattr(_install, "local_source", lambda: None)
    assert run("cursor", SERVER, "--name", "desk", "--with", "httpx", "--python", "3.12") == 0
    entry = entries(home / ".cursor" / "mcp.json")["desk"]
    assert entry["command"] == str(uv.resolve())  # GUI clients lack the shell's PATH
    assert entry["args"] == [
        "run", "--no-project", "--with", f"mcp-resolve=={__version__}", "--with", "httpx",
        "--python", "3.12", "mcp-resolve", "run", str(REFUND_DESK),
    ]  # fmt: skip
    assert "runs with uv" in capsys.readouterr().out


def test_an_editable_install_runs_this_interpreter_even_with_uv(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    executable(home, "uv")
    local = _install.local_source()
    assert local is not None and "editable" in local  # this checkout: `pip install -e .`
    assert run("cursor", SERVER, "--name", "desk") == 0
    entry = entries(home / ".cursor" / "mcp.json")["desk"]
    assert entry == {"command": sys.executable, "args": ["-m", "mcp_resolve", "run", str(REFUND_DESK)]}
    out = capsys.readouterr().out
    assert "which uv cannot fetch" in out and "editable" in out
    assert run("cursor", SERVER, "--name", "other", "--with", "httpx") == 1
    assert "package index" in capsys.readouterr().err


def test_with_needs_uv(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("cursor", SERVER, "--with", "httpx") == 1
    assert "--with needs uv" in capsys.readouterr().err


def test_env_file_and_default_name(home: Path, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# secrets\nAPI_KEY='from file'\n\nexport REGION=eu\n")
    assert run("cursor", SERVER, "--env-file", str(env_file), "--env", "REGION=us") == 0
    entry = entries(home / ".cursor" / "mcp.json")["refund-desk"]  # the server's own name, as a slug
    assert entry["env"] == {"API_KEY": "from file", "REGION": "us"}  # --env wins over the file


def test_mcp_json_prints_the_standard_entry(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("mcp-json", SERVER, "--name", "desk") == 0
    out = capsys.readouterr().out
    printed = json.loads(out[out.index("{") :])
    assert printed == {
        "mcpServers": {
            "desk": {"command": sys.executable, "args": ["-m", "mcp_resolve", "run", str(REFUND_DESK)]}
        }
    }
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("claude-code", "claude mcp add --env 'API_KEY=<hidden>' --transport stdio --scope user desk -- "),
        ("gemini-cli", "gemini mcp add --env 'API_KEY=<hidden>' --scope user desk "),
    ],
)
def test_without_the_clients_cli_its_command_line_is_recorded(
    target: str, expected: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(target, SERVER, "--name", "desk", "--env", "API_KEY=s3cret") == 0
    out = capsys.readouterr().out
    assert "is not on PATH" in out
    line = next(
        text.strip() for text in out.splitlines() if text.strip().startswith(expected.split()[0] + " mcp")
    )
    separator = "-- " if target == "gemini-cli" else ""  # gemini: flag-like arguments after `--`
    assert line == expected + f"{sys.executable} {separator}-m mcp_resolve run {REFUND_DESK}"


@pytest.mark.parametrize(
    ("target", "relative", "entry"),
    [
        ("claude-code", ".claude.json", {"type": "http", "url": "https://desk.example/mcp"}),
        ("cursor", ".cursor/mcp.json", {"url": "https://desk.example/mcp"}),
        ("gemini-cli", ".gemini/settings.json", {"httpUrl": "https://desk.example/mcp"}),
    ],
)
def test_a_remote_server_with_its_auth_header(target: str, relative: str, entry: dict, home: Path) -> None:
    assert (
        run(
            target,
            "--http",
            "https://desk.example/mcp",
            "--name",
            "desk",
            "--header",
            "Authorization: Bearer t0k",
        )
        == 0
    )
    written = entries(home / relative)["desk"]
    assert written == {**entry, "headers": {"Authorization": "Bearer t0k"}}


def test_claude_desktop_refuses_a_remote_server(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("claude-desktop", "--http", "https://desk.example/mcp") == 1
    assert "Connectors" in capsys.readouterr().err


def test_a_config_with_comments_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{\n  // mine\n  "theme": "dark",\n}\n')
    assert run("gemini-cli", SERVER, "--name", "desk") == 1
    assert "not plain JSON" in capsys.readouterr().err
    assert path.read_text() == '{\n  // mine\n  "theme": "dark",\n}\n'


@pytest.mark.slow
@pytest.mark.parametrize("target", ["claude-code", "gemini-cli"])
def test_the_clients_own_cli_is_run_when_on_path(target: str, home: Path, tmp_path: Path) -> None:
    record = tmp_path / "argv.txt"
    program = "claude" if target == "claude-code" else "gemini"
    executable(home, program, f'printf "%s\\n" "$@" > {record}')
    assert run(target, SERVER, "--name", "desk", "--env", "API_KEY=s3cret") == 0
    argv = record.read_text().splitlines()
    assert argv[:3] == ["mcp", "add", "--env"]
    assert "API_KEY=s3cret" in argv  # the client itself gets the real value
    assert [arg for arg in argv if arg != "--"][-5:] == [
        sys.executable,
        "-m",
        "mcp_resolve",
        "run",
        str(REFUND_DESK),
    ]
    assert not (home / ".claude.json").exists() and not (home / ".gemini").exists()


@pytest.mark.parametrize(
    ("platform", "appdata", "expected"),
    [
        ("darwin", None, "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "AppData/Roaming", "AppData/Roaming/Claude/claude_desktop_config.json"),
        ("linux", None, ".config/Claude/claude_desktop_config.json"),
    ],
)
def test_claude_desktop_config_location_per_platform(
    platform: str, appdata: str | None, expected: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if appdata:
        monkeypatch.setenv("APPDATA", str(home / appdata))
    assert config_path("claude-desktop", platform=platform) == home / expected
    user_code = config_path("vscode", platform=platform, user=True)
    assert user_code == home / expected.replace("Claude/claude_desktop_config.json", "Code/User/mcp.json")
    assert os.fspath(config_path("cursor", platform=platform)).endswith(".cursor/mcp.json")


@pytest.mark.slow
@pytest.mark.parametrize("remote", [False, True])
def test_claudes_variadic_options_do_not_swallow_the_name(remote: bool, home: Path, tmp_path: Path) -> None:
    """The recorded argv, parsed by commander declared as `claude mcp add` declares its options."""
    record = tmp_path / "argv.txt"
    executable(home, "claude", f'printf "%s\\n" "$@" > {record}')
    if remote:
        extra = [
            "--http",
            "https://desk.example/mcp",
            "--header",
            "Authorization: Bearer t",
            "--header",
            "X-A: 1",
        ]
    else:
        extra = [SERVER, "--env", "API_KEY=s3cret", "--env", "REGION=eu"]
    assert run("claude-code", *extra, "--name", "desk") == 0
    argv = record.read_text().splitlines()
    assert argv[:2] == ["mcp", "add"]
    node = NODE_DIR / "node_modules" / ".bin" / "node"
    parsed = subprocess.run(
        [str(node), str(NODE_DIR / "claude_mcp_add.mjs"), *argv[1:]],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    understood = json.loads(parsed)
    assert understood["name"] == "desk"
    assert understood["options"]["scope"] == "user"
    if remote:
        assert understood["commandOrUrl"] == "https://desk.example/mcp"
        assert understood["options"]["header"] == ["Authorization: Bearer t", "X-A: 1"]
    else:
        assert [understood["commandOrUrl"], *understood["args"]] == [
            sys.executable, "-m", "mcp_resolve", "run", str(REFUND_DESK)
        ]  # fmt: skip
        assert understood["options"]["env"] == ["API_KEY=s3cret", "REGION=eu"]


def test_names_are_slugs(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _install.slug("Refund Desk") == "refund-desk"
    assert _install.slug("  ~~  ") == "server"
    for bad in ("desk -e", "a/b", "", "x" * 65):
        assert run("cursor", SERVER, "--name", bad) == 1
        assert "--name" in capsys.readouterr().err
    assert not (home / ".cursor").exists()


def test_secrets_tighten_a_world_readable_config(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"other": {"command": "x"}}}')
    path.chmod(0o644)
    assert run("cursor", SERVER, "--name", "plain") == 0  # no secret: the mode is the user's choice
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert run("cursor", SERVER, "--name", "desk", "--env", "API_KEY=s3cret") == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "readable by others (mode 644)" in capsys.readouterr().err
    backups = sorted(path.parent.glob("mcp.json.bak*"))
    assert len(backups) == 2 and stat.S_IMODE(backups[-1].stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json", "mcp.json.bak", "mcp.json.bak.1"]


def test_a_symlinked_config_is_written_through(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "gemini.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = home / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert run("gemini-cli", SERVER, "--name", "desk") == 0
    assert link.is_symlink()
    assert "desk" in json.loads(target.read_text())["mcpServers"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "mcp.json"
    with pytest.raises(TypeError):
        _install._write(path, {"x": object()}, secret=False)
    assert list(path.parent.iterdir()) == []


def test_vscode_workspace_gets_input_prompts_not_secret_values(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    args = ("vscode", SERVER, "--name", "desk", "--workspace", str(workspace), "--env", "API_KEY=s3cret")
    assert run(*args) == 0
    path = workspace / ".vscode" / "mcp.json"
    text = path.read_text()
    assert "s3cret" not in text
    data = json.loads(text)
    assert data["servers"]["desk"]["env"] == {"API_KEY": "${input:desk-api_key}"}
    assert data["inputs"] == [
        {"type": "promptString", "id": "desk-api_key", "description": "API_KEY for desk", "password": True}
    ]
    assert "VS Code asks for them" in capsys.readouterr().out
    assert run(*args) == 0  # the same again: nothing to change, one prompt still
    assert len(json.loads(path.read_text())["inputs"]) == 1
    assert run("vscode", SERVER, "--name", "desk", "--user", "--env", "API_KEY=s3cret") == 0
    user = config_path("vscode", user=True)
    assert "s3cret" in user.read_text() and stat.S_IMODE(user.stat().st_mode) == 0o600


def test_claude_desktop_from_the_windows_store_package(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.setenv("LOCALAPPDATA", str(home / "AppData" / "Local"))
    classic = home / "AppData" / "Roaming" / "Claude" / "claude_desktop_config.json"
    assert config_path("claude-desktop", platform="win32") == classic  # no package folder
    package = home / "AppData" / "Local" / "Packages" / "Claude_pzs8sxrjxfjjc"
    package.mkdir(parents=True)
    expected = package / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json"
    assert config_path("claude-desktop", platform="win32") == expected
    assert config_path("claude-desktop", platform="linux") != expected
