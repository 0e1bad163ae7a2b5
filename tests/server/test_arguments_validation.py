"""A call's arguments are validated straight to a dict by the arguments model's field validator.

The model stays the source of the schema; validation skips building an
instance. These tests hold that shortcut to the model's own verdicts: the
same values (defaults, coercions, nested models) and the same errors, for
every shape of argument list, including field types that share models (a
`definitions` schema) and recursive ones.

No `from __future__ import annotations`: the handlers are local functions.
"""

from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field, ValidationError

from mcp_resolve import Client, Context, MCPServer, Resolve
from mcp_resolve._signature import ArgumentError, HandlerSignature, Overrides, _describe


class Address(BaseModel):
    city: str
    zip_code: str = Field(pattern=r"^\d{5}$")


class Node(BaseModel):
    label: str
    child: Optional["Node"] = None


async def shared_models(home: Address, work: Address, note: str = "none") -> str:
    return note


async def recursive_model(tree: Node, depth: Annotated[int, Field(ge=0, le=5)] = 2) -> str:
    return tree.label


async def scalars(
    count: int,
    ratio: float = 0.5,
    tags: list[str] = Field(default_factory=list),
    mode: Literal["fast", "safe"] = "safe",
) -> str:
    return mode


async def found(title: str) -> int:
    return len(title)


async def with_context_and_resolver(
    title: str, ctx: Context, stock: Annotated[int, Resolve(found)], limit: int = 3
) -> str:
    return title


CASES: list[tuple[Any, list[dict[str, Any]]]] = [
    (
        shared_models,
        [
            {"home": {"city": "Oslo", "zip_code": "01234"}, "work": {"city": "Bergen", "zip_code": "05000"}},
            {"home": {"city": "Oslo", "zip_code": "1234"}, "work": {"city": "Bergen", "zip_code": "05000"}},
            {"home": {"city": "Oslo", "zip_code": "01234"}},
            {"home": "Oslo", "work": {"city": 5, "zip_code": "05000"}, "note": "x", "extra": 1},
        ],
    ),
    (
        recursive_model,
        [
            {"tree": {"label": "a", "child": {"label": "b", "child": {"label": "c"}}}},
            {"tree": {"label": "a", "child": {"child": None}}, "depth": 9},
            {"tree": {"label": "a"}, "depth": "4"},
        ],
    ),
    (
        scalars,
        [
            {"count": "7"},
            {"count": 1, "ratio": 2, "tags": ["a", "b"], "mode": "fast"},
            {"count": 1.5, "mode": "slow"},
            {},
        ],
    ),
    (
        with_context_and_resolver,
        [
            {"title": "Dune"},
            {"title": "Dune", "stock": 99, "ctx": "forged", "limit": "8"},
            {"limit": "many"},
        ],
    ),
]


def _by_model(signature: HandlerSignature, arguments: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return dict(signature.arguments_model.model_validate(arguments).__dict__)
    except ValidationError as exc:
        return _describe(exc)


def _by_signature(signature: HandlerSignature, arguments: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return signature.validate(arguments)
    except ArgumentError as exc:
        return str(exc)


@pytest.mark.parametrize(("fn", "calls"), CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_field_validation_gives_the_models_values_and_errors(fn: Any, calls: list[dict[str, Any]]) -> None:
    signature = HandlerSignature.analyse(fn, fn.__name__, Overrides(), model_suffix="Arguments")
    assert signature._fields_validator is not None  # the shortcut is taken for this shape
    outcomes = [_by_signature(signature, arguments) for arguments in calls]
    assert outcomes == [_by_model(signature, arguments) for arguments in calls]
    assert any(isinstance(o, dict) for o in outcomes) and any(isinstance(o, str) for o in outcomes)


def test_values_are_the_declared_fields_in_order_with_defaults_and_nothing_else() -> None:
    signature = HandlerSignature.analyse(
        with_context_and_resolver, "w", Overrides(), model_suffix="Arguments"
    )
    values = signature.validate({"title": "Dune", "stock": 99, "ctx": "forged"})
    assert list(values) == ["title", "limit"] and values == {"title": "Dune", "limit": 3}
    nested = HandlerSignature.analyse(shared_models, "s", Overrides(), model_suffix="Arguments").validate(
        {"home": {"city": "Oslo", "zip_code": "01234"}, "work": {"city": "Bergen", "zip_code": "05000"}}
    )
    assert isinstance(nested["home"], Address) and nested["work"].city == "Bergen"


@pytest.mark.anyio
async def test_a_tool_with_shared_models_validates_over_the_wire() -> None:
    mcp = MCPServer("args")
    mcp.tool()(shared_models)
    async with Client(mcp) as client:
        good = await client.call_tool(
            "shared_models",
            {
                "home": {"city": "Oslo", "zip_code": "01234"},
                "work": {"city": "B", "zip_code": "05000"},
                "note": "n",
            },
        )
        bad = await client.call_tool("shared_models", {"home": {"city": "Oslo", "zip_code": "12"}})
    assert good.is_error is False and good.structured_content == {"result": "n"}
    assert bad.is_error is True
    text = bad.content[0].text  # type: ignore[union-attr]
    assert "home.zip_code: String should match pattern" in text and "work: Field required" in text
