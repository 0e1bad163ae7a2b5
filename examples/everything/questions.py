"""The questions the everything server asks, one resolver per question.

A resolver only describes its question (`Elicit`, `Sample`, `ListRoots`); the
framework asks it mid-call on 2025-11-25 and batches it into an
`input_required` round on 2026-07-28. The `key=` values are the question names
the conformance harness looks for in `inputRequests`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp_resolve import Context, Elicit, ListRoots, Resolve, Sample
from mcp_resolve.elicitation import titled_choices


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Profile(BaseModel):
    """Every field has a default the client should offer (SEP-1034)."""

    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


class Choices(BaseModel):
    """The five enum shapes of SEP-1330; field names are the harness's."""

    untitledSingle: Literal["option1", "option2", "option3"]
    titledSingle: Annotated[
        Literal["value1", "value2", "value3"],
        titled_choices({"value1": "First Option", "value2": "Second Option", "value3": "Third Option"}),
    ]
    legacyEnum: Annotated[
        Literal["opt1", "opt2", "opt3"],
        Field(json_schema_extra={"enumNames": ["Option One", "Option Two", "Option Three"]}),
    ]
    untitledMulti: list[Literal["option1", "option2", "option3"]]
    titledMulti: Annotated[
        list[Literal["value1", "value2", "value3"]],
        titled_choices(
            {"value1": "First Choice", "value2": "Second Choice", "value3": "Third Choice"}, multiple=True
        ),
    ]


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Confirmation(BaseModel):
    ok: bool


class PromptContext(BaseModel):
    context: str


async def ask_user_info(message: str) -> Elicit[UserInfo]:
    """The tool's `message` argument is the question's wording."""
    return Elicit(message, UserInfo)


async def ask_llm(prompt: str) -> Sample:
    return Sample(prompt, max_tokens=100)


async def ask_profile() -> Elicit[Profile]:
    return Elicit("Please review your profile; every field has a default", Profile)


async def ask_choices() -> Elicit[Choices]:
    return Elicit("Pick from each kind of list", Choices)


async def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name, key="user_name")


async def ask_name_if_possible(ctx: Context) -> Name | Elicit[Name] | None:
    """Ask only a client that can show a form; the call then goes on without the name."""
    if "elicitation" not in ctx.client_capabilities_dict:
        return None
    return Elicit("What is your name?", Name, key="user_name")


async def ask_capital() -> Sample:
    return Sample("What is the capital of France?", max_tokens=100, key="capital_question")


async def ask_greeting() -> Sample:
    return Sample("Generate a greeting", max_tokens=50, key="greeting")


async def ask_opinion() -> Sample:
    return Sample("Say something about the weather", max_tokens=50, key="opinion")


async def ask_roots() -> ListRoots:
    return ListRoots(key="client_roots")


async def ask_confirmation() -> Elicit[Confirmation]:
    return Elicit("Please confirm", Confirmation, key="confirm")


async def ask_step1() -> Elicit[Name]:
    return Elicit("Step 1: What is your name?", Name, key="step1")


async def ask_step2(name: Annotated[Name, Resolve(ask_step1)]) -> Elicit[Color]:
    """Depends on step 1's answer, so the framework asks it in the round after."""
    return Elicit(f"Step 2: What is your favorite color, {name.name}?", Color, key="step2")


async def ask_prompt_context() -> Elicit[PromptContext]:
    return Elicit("What context should the prompt use?", PromptContext, key="user_context")
