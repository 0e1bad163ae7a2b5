"""Structured output against the reference (mcp==2.3.0): the same tool definitions on both servers.

Each return type below is registered on the official `MCPServer` and on ours
from one definition; the listed `outputSchema` and each call's `content` and
`structuredContent` must be equal. Ours is asked through our Client in
memory (a JSON round trip), the official in process. The differences we keep
are asserted apart, each with its reason.

No `from __future__ import annotations`: the classes are local to this module
and the official SDK reads return annotations as objects.
"""

import dataclasses
import datetime
import re
import typing
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from mcp.server.mcpserver import MCPServer as OfficialServer
from mcp.server.mcpserver.exceptions import UnexpectedToolError as OfficialUnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

from mcp_resolve import Client, MCPServer

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    """Weather at a place."""

    celsius: float = Field(description="Temperature")
    wind_speed: float = Field(alias="windSpeed")


class Node(BaseModel):
    name: str
    children: list["Node"] = []


@dataclasses.dataclass
class Point:
    """A point on the plane."""

    x: int
    y: int = 0


class Location(TypedDict):  # typing.TypedDict: pydantic reads it only from Python 3.12
    latitude: float
    label: NotRequired[str]


class Profile:  # an ordinary class with annotations: read attribute by attribute
    name: str
    age: int
    email: str | None = None

    def __init__(self, name: str, age: int) -> None:
        self.name, self.age = name, age


class Untyped:  # nothing says what it holds: sent as text
    def __init__(self, setting: str) -> None:
        self.setting = setting


def weather() -> Weather:
    return Weather(celsius=21.5, windSpeed=3.0)


def tree() -> Node:
    return Node(name="root", children=[Node(name="leaf")])


def point() -> Point:
    return Point(3, 4)


def location() -> Location:
    return Location(latitude=51.5, label="London")


def profile() -> Profile:
    return Profile("Ada", 36)


def untyped() -> Untyped:
    return Untyped("on")


def stats() -> dict[str, float]:
    return {"mean": 1.5}


def by_number() -> dict[int, str]:
    return {1: "one"}


def old_dict() -> typing.Dict[str, int]:  # noqa: UP006 (typing.Dict is wrapped, dict[str, int] is not)
    return {"a": 1}


def cities() -> list[str]:
    return ["London", "Paris"]


def pair() -> tuple[int, str]:
    return (1, "one")


def temperature() -> float:
    return 22.5


def count() -> int:
    return 7


def maybe() -> str | None:
    return None


def mode() -> Literal["fast", "slow"]:
    return "fast"


def nothing() -> None:
    return None


def anything() -> Any:
    return {"a": [1, 2]}


def when() -> datetime.date:
    return datetime.date(2024, 12, 25)


def checked() -> Annotated[CallToolResult, Weather]:
    return CallToolResult(
        content=[TextContent(type="text", text="ok")],
        structured_content={"celsius": 1.0, "windSpeed": 2.0},
    )


def receipt() -> Weather | InputRequiredResult:
    return Weather(celsius=5.0, windSpeed=1.0)


TOOLS = [
    weather,
    tree,
    point,
    location,
    profile,
    untyped,
    stats,
    by_number,
    old_dict,
    cities,
    pair,
    temperature,
    count,
    maybe,
    mode,
    nothing,
    anything,
    when,
    checked,
    receipt,
]


def _servers() -> tuple[OfficialServer, MCPServer]:
    official, ours = OfficialServer("parity"), MCPServer("parity")
    for fn in TOOLS:
        official.tool()(fn)
        ours.tool()(fn)
    return official, ours


def _data(model: Any) -> Any:
    """A result as data, less `_meta` and `resultType` (the call here is in-process on the official side),
    and with the memory address a default repr names (fresh per object) blanked out."""
    data = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    data.pop("_meta", None)
    data.pop("resultType", None)
    for block in data.get("content", []):
        if "text" in block:
            block["text"] = re.sub(r" object at 0x[0-9a-f]+>", " object at 0x…>", block["text"])
    return data


async def test_every_return_type_lists_the_official_output_schema_and_answers_the_same() -> None:
    official, ours = _servers()
    expected = {tool.name: tool.output_schema for tool in await official.list_tools()}
    async with Client(ours) as client:
        listed = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
        assert listed == expected
        answers = {}
        for fn in TOOLS:
            want = _data(await official.call_tool(fn.__name__, {}))
            answers[fn.__name__] = got = _data(await client.call_tool(fn.__name__, {}))
            assert got == want, fn.__name__
    # The ones worth naming: what the snippets rely on.
    assert "structuredContent" not in answers["untyped"]
    assert answers["untyped"]["content"][0]["text"].endswith('.Untyped object at 0x…>"')
    assert answers["cities"]["content"] == [
        {"type": "text", "text": "London"},
        {"type": "text", "text": "Paris"},
    ]
    assert answers["stats"]["content"] == [{"type": "text", "text": '{\n  "mean": 1.5\n}'}]
    assert expected["untyped"] is None and expected["anything"] is None and expected["when"] is None
    assert expected["profile"] is not None and expected["location"] is not None
    assert expected["stats"]["title"] == "statsDictOutput"
    assert expected["checked"] == expected["weather"]


async def test_structured_content_that_breaks_the_annotated_model_is_a_crash_on_both() -> None:
    def broken() -> Annotated[CallToolResult, Weather]:
        return CallToolResult(content=[], structured_content={"celsius": "warm"})

    official, ours = OfficialServer("broken"), MCPServer("broken")
    official.tool()(broken)
    ours.tool()(broken)
    with pytest.raises(OfficialUnexpectedToolError):
        await official.call_tool("broken", {})
    async with Client(ours) as client:
        result = await client.call_tool("broken", {})
    assert result.is_error is True
    assert result.content[0].text == "Error executing tool broken"  # type: ignore[union-attr]
