"""Every code block in README.md and docs/ runs, so the documentation cannot drift from the code.

- ```python blocks run in page order in one fresh module per page (a reader follows a page top
  to bottom), in a temporary working directory, with the environment restored afterwards. A
  python block whose first line is `# save as NAME` is a file the reader saves: it is written to
  NAME in that directory (where the page's later blocks run it), not run in the page's module.
- ```output blocks are what the reader should see: exactly what the python block just before
  printed.
- ```console blocks are sessions: each `$ mcp-resolve ...` or `$ python ...` line is run and its
  output must be exactly the lines that follow it. A docs/ page's sessions run in a temporary
  directory holding only the files the page saves, as a reader with the installed package has;
  README.md's and the examples' run from the repository root, as in a checkout.
- ```json blocks must parse.
- ```sh, ```text and ```mermaid blocks are shown, not run (set-up commands, sketches); a block with
  no language at all is an error, so nothing escapes by accident.

Runnable blocks on docs/ pages never reach into a checkout (examples/, tests/, a path found from
`mcp_resolve.__file__`): the docs are followed from `pip install`, and the wheel ships none of it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import EXAMPLES, PYTHON, ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), EXAMPLES / "refund_desk" / "README.md"]
FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SHOWN = {"sh", "text", "mermaid"}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
SAVE_AS = re.compile(r"\A# save as ([\w.-]+)\n")
CHECKOUT_ONLY = ("examples/", "tests/", "__file__", "parents[")


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, code, line of the first code line) for each fenced block."""
    text = page.read_text()
    return [
        (match.group(1), match.group(2), text.count("\n", 0, match.start(2)) + 1)
        for match in FENCE.finditer(text)
    ]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_is_labelled(page: Path) -> None:
    found = blocks(page)
    assert found, f"{page_id(page)} has no code blocks"
    for language, _code, line in found:
        assert language in {"python", "output", "console", "json", *SHOWN}, (
            f"{page_id(page)}:{line}: ```{language}"
        )


def saved_files(page: Path) -> dict[str, str]:
    """The files a page asks the reader to save (`# save as NAME` blocks), by name."""
    found: dict[str, str] = {}
    for language, code, line in blocks(page):
        match = SAVE_AS.match(code) if language == "python" else None
        if match:
            assert match.group(1) not in found, f"{page_id(page)}:{line}: {match.group(1)} saved twice"
            found[match.group(1)] = code
    return found


DOCS_PAGES = sorted((ROOT / "docs").glob("*.md"))


def test_a_file_saved_on_several_pages_is_the_same_file() -> None:
    """A reader may save refund_desk.py from any page that shows it: it must be one file."""
    first: dict[str, tuple[str, str]] = {}
    for page in DOCS_PAGES:
        for name, code in saved_files(page).items():
            seen = first.setdefault(name, (page_id(page), code))
            assert seen[1] == code, f"{page_id(page)} saves a different {name} from {seen[0]}"


@pytest.mark.parametrize("page", DOCS_PAGES, ids=page_id)
def test_docs_run_from_the_installed_package_not_a_checkout(page: Path) -> None:
    for language, code, line in blocks(page):
        if language in {"python", "console", "json", "sh"}:
            for sign in CHECKOUT_ONLY:
                assert sign not in code, f"{page_id(page)}:{line}: a reader with only the wheel has no {sign}"


# The pages whose Python starts a server process or serves HTTP: `slow` (tests/README.md).
STARTS_SERVERS = {"docs/bridges.md", "docs/interop.md", "docs/pydantic-ai.md", "docs/tasks.md", "docs/tasks-clients.md", "docs/transports.md"}
WITH_PYTHON = [
    pytest.param(page, marks=pytest.mark.slow) if page_id(page) in STARTS_SERVERS else page
    for page in PAGES
    if any(language == "python" for language, _, _ in blocks(page))
]


@pytest.mark.parametrize("page", WITH_PYTHON, ids=page_id)
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "docs_" + re.sub(r"\W", "_", page_id(page))
    module = types.ModuleType(name)
    module.__file__ = str(tmp_path / f"{name}.py")
    monkeypatch.setitem(sys.modules, name, module)  # pydantic resolves a model's annotations here
    monkeypatch.chdir(tmp_path)
    saved_environment = dict(os.environ)
    printed: str | None = None
    try:
        for language, code, line in blocks(page):
            saved = SAVE_AS.match(code) if language == "python" else None
            if saved:
                (tmp_path / saved.group(1)).write_text(code)
                printed = None
            elif language == "python":
                # Leading newlines make tracebacks point at the line in the Markdown file.
                compiled = compile("\n" * (line - 1) + code, str(page), "exec")
                with contextlib.redirect_stdout(io.StringIO()) as out:
                    exec(compiled, module.__dict__)
                printed = out.getvalue()
            elif language == "output":
                assert printed is not None, f"{page_id(page)}:{line}: output of what?"
                seen = [text.rstrip() for text in printed.splitlines()]
                assert seen == [text.rstrip() for text in code.splitlines()], f"{page_id(page)}:{line}"
            if language != "python":
                printed = None  # an output block shows the python block right before it, no other
    finally:
        os.environ.clear()
        os.environ.update(saved_environment)


def console_sessions(page: Path) -> list[tuple[str, list[str], int]]:
    """(command, expected output lines, line number) for each `$ ` line of the page's console blocks."""
    sessions: list[tuple[str, list[str], int]] = []
    for language, code, first in blocks(page):
        if language != "console":
            continue
        for offset, text in enumerate(code.splitlines()):
            if text.startswith("$ "):
                sessions.append((text[2:], [], first + offset))
            else:
                assert sessions, f"{page_id(page)}:{first}: console output before any command"
                sessions[-1][1].append(text)
    return sessions


CONSOLE = [(page, session) for page in PAGES for session in console_sessions(page)]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "session"), CONSOLE, ids=[f"{page_id(p)}:{s[2]}" for p, s in CONSOLE])
def test_console_sessions_print_what_the_page_shows(
    page: Path, session: tuple[str, list[str], int], tmp_path: Path
) -> None:
    command, expected, line = session
    where = ROOT
    if page.parent == ROOT / "docs":  # a reader with the package installed, and the page's files
        where = tmp_path
        for name, code in saved_files(page).items():
            (tmp_path / name).write_text(code)
    argv = shlex.split(command)
    if argv[0] == "mcp-resolve":
        argv = [PYTHON, "-m", "mcp_resolve", *argv[1:]]
    elif argv[0] == "python":
        argv = [PYTHON, *argv[1:]]
    else:
        pytest.fail(f"{page_id(page)}:{line}: console blocks may only run mcp-resolve or python: {command}")
    done = subprocess.run(argv, cwd=where, capture_output=True, text=True, timeout=120)
    output = [text.rstrip() for text in (done.stdout + done.stderr).splitlines()]
    assert output == [text.rstrip() for text in expected], f"{page_id(page)}:{line}: {command}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_json_blocks_parse(page: Path) -> None:
    for language, code, line in blocks(page):
        if language == "json":
            try:
                json.loads(code)
            except ValueError as error:
                pytest.fail(f"{page_id(page)}:{line}: {error}")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_resolve(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).exists(), f"{page_id(page)} links to missing {target}"


def test_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"
