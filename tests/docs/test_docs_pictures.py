"""The pictures in docs/pictures/ are the code's: made again from it, each must match what is committed.

docs/pictures/generate.py makes every picture's DOT source from the code (the
refund desk's resolver graph, a real refund's spans, a task's states, the fleet
in docs/deploy/) and draws it with Graphviz. Here the DOT sources are made
again and compared as text with the committed ones (SVG bytes depend on the
Graphviz version, DOT does not), and each committed SVG must have been drawn
from its DOT: every node of the DOT is in it.
"""

from __future__ import annotations

import html
import re

import pytest

from conftest import ROOT, load_module

PICTURES = ROOT / "docs" / "pictures"
generate = load_module(PICTURES / "generate.py", "docs_pictures_generate")
STALE = "is stale: run `make pictures` (python docs/pictures/generate.py) and commit docs/pictures/"


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    return generate.sources()


@pytest.mark.parametrize("name", sorted(generate.SOURCES))
def test_the_committed_dot_source_is_what_the_code_makes_now(name: str, made: dict[str, str]) -> None:
    committed = PICTURES / f"{name}.dot"
    assert committed.exists(), f"docs/pictures/{name}.dot {STALE}"
    assert committed.read_text() == made[name], f"docs/pictures/{name}.dot {STALE}"


@pytest.mark.parametrize("name", sorted(generate.SOURCES))
def test_the_committed_svg_is_drawn_from_that_source(name: str) -> None:
    source = (PICTURES / f"{name}.dot").read_text()
    drawn = html.unescape((PICTURES / f"{name}.svg").read_text())
    nodes = set(re.findall(r"^\s*(\w+) \[label=", source, re.MULTILINE))
    titles = set(re.findall(r"<title>([^<]*)</title>", drawn))
    assert nodes and nodes <= titles, f"docs/pictures/{name}.svg {STALE}"
    for label in re.findall(r'label="((?:[^"\\]|\\.)*)"', source):
        for line in label.split("\\n"):
            text = line.replace('\\"', '"').replace("\\\\", "\\")
            assert not text or f">{text}</text>" in drawn, f"docs/pictures/{name}.svg lacks {text!r}: {STALE}"


def test_every_picture_is_made_and_nothing_else_is_there() -> None:
    on_disk = {path.stem for path in PICTURES.glob("*.dot")} | {path.stem for path in PICTURES.glob("*.svg")}
    assert on_disk == set(generate.SOURCES)


def test_the_task_states_are_the_task_records() -> None:
    """A status added to TaskRecord without a move into it fails the generator, not just the picture."""
    from typing import get_args, get_type_hints

    from mcp_resolve.tasks import TaskRecord

    states = set(get_args(get_type_hints(TaskRecord)["status"]))
    drawn = set(
        re.findall(r"^  (\w+) \[label=\"\1\"", (PICTURES / "task-states.dot").read_text(), re.MULTILINE)
    )
    assert drawn == states
