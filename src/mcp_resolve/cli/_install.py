"""`mcp-resolve install TARGET FILE[:OBJECT]`: put a server into the MCP clients people use.

Each client keeps its servers in a JSON file at a documented place (Claude Desktop, Cursor,
VS Code, Gemini CLI, Claude Code's `~/.claude.json`); `install` merges one entry into it and never
clobbers: the old file is copied to a backup first, an entry of the same name that differs is
refused unless `--force`, and `--dry-run` prints the change instead of writing it. Claude Code
and Gemini CLI have their own `mcp add` command: it is run when the client is on PATH, and
otherwise the file is written and the command line it would have received is printed, so the
user can replay it.

The entry runs the server reproducibly: `/abs/uv run --no-project --with mcp-resolve==VERSION
mcp-resolve run FILE` when `uv` is present and this mcp-resolve came from the package index (uv
fetches the same version; absolute, since GUI clients lack the shell's PATH; `--no-project`, so
the client's working directory does not pick a project), else this interpreter's absolute path
(`python -m mcp_resolve run FILE`, the packages of this environment: an editable or local
install exists only here). Values given with `--env`
and `--header` may be secrets: they are written to the file but shown masked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ._target import CLIError, absolute_target, load_server, split_target

__all__ = ["TARGETS", "InstallOptions", "config_path", "install", "server_command"]

TARGETS = ("claude-desktop", "claude-code", "cursor", "vscode", "gemini-cli", "mcp-json")
HIDDEN = "<hidden>"
"""What a secret (an --env value, a --header value) reads as in anything printed."""
MAX_BACKUPS = 100


@dataclass
class InstallOptions:
    """What the command line asked for."""

    target: str
    server: str | None = None
    """`FILE[:OBJECT]`, or None with `http`."""
    name: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    env_file: str | None = None
    with_packages: list[str] = field(default_factory=list)
    python: str | None = None
    http: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    force: bool = False
    dry_run: bool = False
    user: bool = False
    """vscode: the user profile's mcp.json rather than the workspace's."""
    workspace: str | None = None


def config_path(
    target: str, *, platform: str | None = None, user: bool = False, workspace: str | None = None
) -> Path:
    """Where `target` keeps its servers on this platform (`sys.platform` values), as its docs say."""
    platform = platform or sys.platform
    home = Path.home()
    if target == "claude-desktop":
        packaged = _claude_msix(platform, home)
        return (packaged or _app_data(platform, home) / "Claude") / "claude_desktop_config.json"
    if target == "claude-code":
        return home / ".claude.json"  # the user scope of `claude mcp add --scope user`
    if target == "cursor":
        return home / ".cursor" / "mcp.json"
    if target == "gemini-cli":
        return home / ".gemini" / "settings.json"
    if target == "vscode":
        if user:
            return _app_data(platform, home) / "Code" / "User" / "mcp.json"
        return Path(workspace or os.getcwd()).resolve() / ".vscode" / "mcp.json"
    raise CLIError(f"{target} has no config file")


def _claude_msix(platform: str, home: Path) -> Path | None:
    r"""Claude Desktop installed as an MSIX package (the Windows installer's default) reads its
    config from the package's virtualised AppData, `%LOCALAPPDATA%\Packages\Claude_*\LocalCache\Roaming\Claude`:
    that folder when the package exists, else None (the classic `%APPDATA%\Claude`).
    """
    if not platform.startswith("win"):
        return None
    local = os.environ.get("LOCALAPPDATA")
    packages = (Path(local) if local else home / "AppData" / "Local") / "Packages"
    found = sorted(package for package in packages.glob("Claude_*") if package.is_dir())
    return found[0] / "LocalCache" / "Roaming" / "Claude" if found else None


def _app_data(platform: str, home: Path) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def read_env_file(path: str) -> dict[str, str]:
    """`KEY=VALUE` lines (a dotenv file): blank lines and `#` comments skipped, one pair of quotes removed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot read --env-file {path}: {exc.strerror}") from None
    env: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        if not sep or not key.strip().isidentifier():
            raise CLIError(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def pairs(values: list[str] | None, separator: str, what: str) -> dict[str, str]:
    """`KEY=VALUE` (or `Name: value`) arguments as a dict."""
    out: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition(separator)
        if not sep or not key.strip():
            raise CLIError(f"{what} expects KEY{separator}VALUE, got {value.split(separator)[0]!r}")
        out[key.strip()] = rest.strip() if separator == ":" else rest
    return out


def local_source() -> str | None:
    """Where this mcp-resolve came from when that is not the package index (an editable or local
    install, or source on `sys.path` with no installed distribution); None for a registry install.

    A registry install can be pinned and fetched again by uv; a local one exists only here, so its
    entry must run this interpreter instead.
    """
    from importlib import metadata

    try:
        distribution = metadata.distribution("mcp-resolve")
    except metadata.PackageNotFoundError:
        return "source on sys.path, not an installed distribution"
    text = distribution.read_text("direct_url.json")
    if not text:
        return None
    try:
        direct = json.loads(text)
    except ValueError:
        return "an installed distribution with an unreadable direct_url.json"
    if not isinstance(direct, dict):
        return "an installed distribution with an unreadable direct_url.json"
    url = str(direct.get("url", ""))
    editable = isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable")
    return f"{'an editable' if editable else 'a direct'} install from {url or 'a local path'}"


def server_command(options: InstallOptions) -> tuple[list[str], str]:
    """The command that runs the server, and a sentence saying how it was chosen."""
    assert options.server is not None
    path, _ = split_target(options.server)
    if not path.is_file():
        raise CLIError(f"no such file: {path}")
    target = absolute_target(options.server)
    uv = shutil.which("uv")
    local = local_source()
    if uv is not None and local is None:
        # Absolute: a GUI client does not start from the shell's PATH. `--no-project`: uv would
        # otherwise sync whatever project the client's working directory happens to be in.
        uv = str(Path(uv).resolve())
        command = [uv, "run", "--no-project", "--with", f"mcp-resolve=={__version__}"]
        for package in options.with_packages:
            command += ["--with", package]
        if options.python:
            command += ["--python", options.python]
        command += ["mcp-resolve", "run", target]
        return command, f"runs with uv ({uv}): `uv run --no-project --with mcp-resolve=={__version__}`"
    if options.with_packages:
        if uv is None:
            raise CLIError(
                "--with needs uv on PATH (https://docs.astral.sh/uv/); without it, install the packages here"
            )
        raise CLIError(
            f"--with needs mcp-resolve from the package index, and this one is {local}: "
            "install the packages into this environment instead"
        )
    python = options.python or sys.executable
    if options.python and not Path(python).is_absolute():
        found = shutil.which(python)
        if found is None:
            raise CLIError(f"--python {python}: not found on PATH")
        python = found
    why = "uv is not on PATH" if uv is None else f"this mcp-resolve is {local}, which uv cannot fetch"
    return [python, "-m", "mcp_resolve", "run", target], (
        f"{why}: runs with the interpreter {python} and the packages installed for it"
    )


def _entry(options: InstallOptions, command: list[str] | None) -> dict[str, Any]:
    """The server's entry in the target's own dialect."""
    target = options.target
    if options.http is not None:
        if target == "claude-desktop":
            raise CLIError(
                "Claude Desktop takes remote servers as connectors (Settings > Connectors), not in its config file"
            )
        key = {"gemini-cli": "httpUrl", "vscode": "url", "claude-code": "url"}.get(target, "url")
        entry: dict[str, Any] = {"type": "http"} if target in ("vscode", "claude-code") else {}
        entry[key] = options.http
        if options.headers:
            entry["headers"] = dict(options.headers)
        return entry
    assert command is not None
    entry = {"type": "stdio"} if target in ("vscode", "claude-code") else {}
    entry["command"] = command[0]
    entry["args"] = command[1:]
    if options.env:
        entry["env"] = dict(options.env)
    return entry


def _masked(entry: dict[str, Any]) -> dict[str, Any]:
    shown = dict(entry)
    for key in ("env", "headers"):
        if key in shown:
            shown[key] = dict.fromkeys(shown[key], HIDDEN)
    return shown


def _section(target: str) -> str:
    return "servers" if target == "vscode" else "mcpServers"


NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""An entry name every client takes: letters, digits, hyphens and underscores (Claude Code's rule)."""


def slug(text: str) -> str:
    """`Refund Desk` as `refund-desk`: what a client accepts as an entry name."""
    words = re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-_")
    return words[:64].strip("-_") or "server"


def _default_name(options: InstallOptions) -> str:
    if options.name is not None:
        if not NAME.fullmatch(options.name):
            raise CLIError(
                f"--name {options.name!r}: use letters, digits, hyphens and underscores (at most 64)"
            )
        return options.name
    if options.server is not None:
        path, obj = split_target(options.server)
        try:
            return slug(load_server(options.server).name)
        except Exception:  # the server's own name is a nicety: the file name serves as well
            return slug(obj or path.stem)
    from urllib.parse import urlsplit

    return slug(urlsplit(options.http or "").hostname or "server")


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        raise CLIError(
            f"{path} is not plain JSON (comments or trailing commas?): add the entry by hand, "
            "or see it with --dry-run"
        ) from None
    if not isinstance(data, dict):
        raise CLIError(f"{path} does not hold a JSON object")
    return data


def _backup(path: Path, *, secret: bool) -> Path:
    """Copy `path` beside itself as `NAME.bak` (or `.bak.1`, ...: an older backup is never overwritten).

    With `secret`, the copy is readable by its owner only, like the file it backs up is about to be.
    """
    for index in range(MAX_BACKUPS):
        backup = path.with_name(path.name + (".bak" if index == 0 else f".bak.{index}"))
        if not backup.exists():
            shutil.copy2(path, backup)
            if secret:
                backup.chmod(backup.stat().st_mode & 0o600)
            return backup
    raise CLIError(f"{path} has {MAX_BACKUPS} backups beside it already: remove some")


def _write(path: Path, data: dict[str, Any], *, secret: bool) -> None:
    """Replace the file atomically, keeping its permissions (a new one readable by its owner only).

    A symlinked config (a dotfiles manager's) is written through to its target, so the link stays.
    With `secret` (the entry carries --env or --header values), the file ends up 0600, with a
    warning when it was readable by others before. The data is on disk (fsync) before the rename,
    and the temporary file is removed when anything fails.
    """
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    if secret and mode & 0o077:
        print(
            f"mcp-resolve: {path} was readable by others (mode {mode:o}) and now holds secrets: "
            "made it readable by you only (0600)",
            file=sys.stderr,
        )
        mode = 0o600
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:  # mkstemp creates it 0600
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _inputs_for_vscode(name: str, entry: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Swap the entry's secret values for `${input:ID}` prompts (VS Code's `inputs`); their ids.

    A workspace's `.vscode/mcp.json` is usually committed: VS Code asks for each value once and
    keeps it in its own secret storage, so the value never lands in the file.
    """
    inputs = data.get("inputs", [])
    if not isinstance(inputs, list):
        raise CLIError("the file's 'inputs' is not a JSON list: add the entry by hand")
    ids: list[str] = []
    for section in ("env", "headers"):
        values = entry.get(section)
        if not values:
            continue
        for key in list(values):
            input_id = f"{name}-{slug(key)}"
            values[key] = "${input:" + input_id + "}"
            inputs = [item for item in inputs if not (isinstance(item, dict) and item.get("id") == input_id)]
            inputs.append(
                {"type": "promptString", "id": input_id, "description": f"{key} for {name}", "password": True}
            )
            ids.append(input_id)
    data["inputs"] = inputs
    return ids


def _cli_line(options: InstallOptions, name: str, command: list[str] | None, *, secrets: bool) -> list[str]:
    """What `claude mcp add` / `gemini mcp add` receives for this entry (secrets masked unless asked)."""

    def shown(value: str) -> str:
        return value if secrets else HIDDEN

    # Both CLIs read `--env` and `--header` as variadic (commander's `<env...>`, yargs' arrays):
    # a positional after their values would be swallowed as one more value. So those options
    # come first, the single-valued `--scope user` closes them, and only then NAME and the command.
    program = "claude" if options.target == "claude-code" else "gemini"
    line = [program, "mcp", "add"]
    if options.http is not None:
        for key, value in options.headers.items():
            line += ["--header", f"{key}: {shown(value)}"]
        return [*line, "--transport", "http", "--scope", "user", name, options.http]
    assert command is not None
    for key, value in options.env.items():
        line += ["--env", f"{key}={shown(value)}"]
    if program == "claude":
        return [*line, "--transport", "stdio", "--scope", "user", name, "--", *command]
    # gemini's parser would take `-m` for its own option: the server's arguments go after `--`
    # (its documented form, `gemini mcp add NAME python server.py -- --server-arg v`).
    rest = ["--", *command[1:]] if any(arg.startswith("-") for arg in command[1:]) else command[1:]
    return [*line, "--scope", "user", name, command[0], *rest]


def install(options: InstallOptions) -> int:
    """Install one server entry into `options.target`; the exit status."""
    if options.target not in TARGETS:
        raise CLIError(f"unknown target {options.target!r}: one of {', '.join(TARGETS)}")
    if (options.server is None) == (options.http is None):
        raise CLIError("give a server file, or --http URL for a remote server (not both)")
    if options.http is not None and not options.http.startswith(("http://", "https://")):
        raise CLIError(f"--http expects an http(s) URL, got {options.http!r}")
    if options.env_file:
        options.env = {**read_env_file(options.env_file), **options.env}
    if options.http is not None and options.env:
        raise CLIError("--env is for a server this machine runs; a remote server takes --header")
    command, how = server_command(options) if options.server is not None else (None, None)
    name = _default_name(options)
    entry = _entry(options, command)
    if how:
        print(how)

    if options.target == "mcp-json":
        print(json.dumps({"mcpServers": {name: entry}}, indent=2))
        return 0

    if options.target in ("claude-code", "gemini-cli"):
        program = "claude" if options.target == "claude-code" else "gemini"
        found = shutil.which(program)
        if found is not None and not options.dry_run:
            line = _cli_line(options, name, command, secrets=True)
            print(f"running: {shlex.join(_cli_line(options, name, command, secrets=False))}")
            done = subprocess.run([found, *line[1:]], check=False)
            return done.returncode

    path = config_path(options.target, user=options.user, workspace=options.workspace)
    data = _load(path)
    section = data.get(_section(options.target))
    if section is None:
        section = {}
    elif not isinstance(section, dict):
        raise CLIError(f"{path}: {_section(options.target)!r} is not a JSON object")
    secret = bool(entry.get("env") or entry.get("headers"))
    prompts: list[str] = []
    if secret and options.target == "vscode" and not options.user:
        prompts = _inputs_for_vscode(name, entry, data)
        secret = False  # the file now holds references, not values
    existing = section.get(name)
    if existing == entry:
        print(f"{name} is already installed in {path}: nothing to change")
        return 0
    if existing is not None and not options.force:
        print(
            f"mcp-resolve: {path} already has a server named {name!r} that differs:\n"
            f"  {json.dumps(_masked(existing))}\n"
            f"keep it, choose another --name, or replace it with --force",
            file=sys.stderr,
        )
        return 1

    verb = "replace" if existing is not None else "add"
    change = json.dumps({_section(options.target): {name: _masked(entry)}}, indent=2)
    if options.dry_run:
        print(f"would {verb} {name!r} in {path} (dry run: nothing written):\n{change}")
        if options.target in ("claude-code", "gemini-cli"):
            print(f"or run: {shlex.join(_cli_line(options, name, command, secrets=False))}")
        return 0
    backup = _backup(path, secret=secret) if path.exists() else None
    data[_section(options.target)] = {**section, name: entry}
    _write(path, data, secret=secret)
    print(
        f"{'replaced' if existing is not None else 'added'} {name!r} in {path}"
        + (f" (backup: {backup})" if backup else "")
    )
    if prompts:
        print(
            "the values of --env/--header are not written to the workspace file (it is often committed): "
            f"VS Code asks for them on first start ({', '.join(prompts)}) and keeps them in its secret storage"
        )
    if options.target in ("claude-code", "gemini-cli"):
        program = "claude" if options.target == "claude-code" else "gemini"
        print(
            f"{program} is not on PATH: wrote its config file; the command it would have received:\n"
            f"  {shlex.join(_cli_line(options, name, command, secrets=False))}"
        )
    print("restart the client to load it" if options.target != "vscode" else "VS Code picks it up on its own")
    return 0
