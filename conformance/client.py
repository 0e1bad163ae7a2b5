"""The conformance client: our `Client`, driven the way the official harness expects.

The harness runs `python conformance/client.py <server url>` once per client
scenario, with the scenario, the wire version and any fixture data in the
environment. The client does what an ordinary application would: connect,
list what the server offers, call every tool, read every resource, get every
prompt, and answer the server's questions (forms are accepted with each
field's default, sampling gets a canned reply, roots are one test folder).
Everything the scenarios check on the wire (headers, `_meta`, retries,
input-required rounds, reconnection, the whole OAuth flow) is the `Client`'s
own behaviour.

Like any application it is configured for authorization: OAuth with a
headless browser (the harness's authorization servers approve at once), the
client metadata URL the harness publishes for Client ID Metadata Documents,
and the credentials the scenario hands over in its context (a pre-registered
client, machine credentials for the client-credentials extension, a workload
JWT for workload identity, or an enterprise IdP and the person's ID token for
enterprise-managed authorization).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio
from mcp_types import CreateMessageRequestParams, ElicitRequestFormParams, Tool

from mcp_resolve import Client, MCPError
from mcp_resolve.client.auth import (
    AuthorizationError,
    ClientCredentials,
    EnterpriseIdP,
    HeadlessBrowser,
    OAuth,
    WorkloadIdentity,
)

logger = logging.getLogger("conformance.client")

MODERN = "2026-07-28"
CLIENT_INFO = {"name": "mcp-resolve-conformance-client", "version": "1.0.0"}
ROOTS = ["file:///test/root"]
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""Where this client's metadata document is published, for authorization servers that take one as client_id."""
_EXAMPLES: dict[str, Any] = {"string": "example", "integer": 1, "number": 1.5, "boolean": True}


def example_value(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """A plausible value for a JSON Schema: its default, a listed choice, or a typed placeholder.

    Only local `#/...` references are followed; a network `$ref` is never fetched.
    """
    if "default" in schema:
        return schema["default"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _local_ref(ref, root)
        return example_value(target, root) if target is not None else "example"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for options in ("oneOf", "anyOf"):
        if schema.get(options):
            return example_value(schema[options][0], root)
    kind = schema.get("type")
    if kind == "object":
        return example_arguments(schema, root)
    if kind == "array":
        items = schema.get("items")
        return [example_value(items, root)] if isinstance(items, Mapping) else []
    return _EXAMPLES.get(kind if isinstance(kind, str) else "string", "example")


def _local_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def example_arguments(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Values for the required properties of an object schema (a person would fill in the rest)."""
    properties = schema.get("properties") or {}
    return {
        name: example_value(properties.get(name) or {}, root or schema)
        for name in schema.get("required") or []
    }


async def answer_form(params: ElicitRequestFormParams) -> dict[str, Any]:
    """Accept the form as a person who keeps every default would."""
    schema = params.requested_schema
    if not isinstance(schema, Mapping):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    content = {name: example_value(prop, schema) for name, prop in (schema.get("properties") or {}).items()}
    return {"action": "accept", "content": content}


async def answer_sampling(params: CreateMessageRequestParams) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the conformance client."},
        "model": "conformance-client",
        "stopReason": "endTurn",
    }


def planned_calls(tools: list[Tool], context: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls an application would make: the scenario's own, else every tool once."""
    given = context.get("toolCalls")
    if isinstance(given, list):
        return [(call["name"], dict(call.get("arguments") or {})) for call in given]
    schemas = {tool.name: tool.input_schema for tool in tools}
    if "json_schema_echo" in schemas and "json_schema_2020_12_tool" in schemas:
        # The echo tool wants the other tool's schema back exactly as it was received.
        return [("json_schema_echo", {"schema": schemas["json_schema_2020_12_tool"]})]
    return [(name, example_arguments(schema)) for name, schema in schemas.items()]


async def exercise(client: Client, context: Mapping[str, Any]) -> int:
    """Use everything the server offers; the number of operations that failed."""
    failures = 0

    async def attempt(what: str, operation: Any) -> Any:
        nonlocal failures
        try:
            return await operation
        except (MCPError, ConnectionError, TimeoutError) as exc:
            failures += 1
            logger.warning("%s failed: %s", what, exc)
            return None

    capabilities = client.server_capabilities
    listed = await attempt("tools/list", client.list_tools())
    for name, arguments in planned_calls(listed.tools if listed else [], context):
        result = await attempt(f"tools/call {name}", client.call_tool(name, arguments))
        if result is not None:
            logger.info("%s -> %s", name, result.model_dump_json(by_alias=True, exclude_none=True)[:300])
    if "resources" in capabilities:
        resources = await attempt("resources/list", client.list_resources())
        for resource in resources.resources if resources else []:
            await attempt(f"resources/read {resource.uri}", client.read_resource(str(resource.uri)))
    if "prompts" in capabilities:
        prompts = await attempt("prompts/list", client.list_prompts())
        for prompt in prompts.prompts if prompts else []:
            arguments = {a.name: "example" for a in prompt.arguments or [] if a.required}
            await attempt(f"prompts/get {prompt.name}", client.get_prompt(prompt.name, arguments))
    return failures


def authorization(scenario: str, context: Mapping[str, Any]) -> OAuth | ClientCredentials | WorkloadIdentity:
    """The client's authorization: machine credentials for the client-credentials extension, the
    workload's JWT for workload identity, the enterprise IdP for enterprise-managed authorization,
    else OAuth with a browser."""
    if scenario == "auth/wif-jwt-bearer":
        return WorkloadIdentity(str(context["valid_jwt"]), client_id=context.get("client_id"))
    if scenario == "auth/enterprise-managed-authorization":
        return OAuth(
            client_id=str(context["client_id"]),
            client_secret=context.get("client_secret"),
            enterprise=EnterpriseIdP(
                str(context["idp_id_token"]),
                issuer=str(context["idp_issuer"]),
                client_id=context.get("idp_client_id"),
            ),
        )
    if scenario.startswith("auth/client-credentials"):
        return ClientCredentials(
            str(context["client_id"]),
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=str(context.get("signing_algorithm") or "ES256"),
        )
    browser = HeadlessBrowser()
    return OAuth(
        client_name="mcp-resolve conformance client",
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
        redirect_handler=browser,
        callback_handler=browser,
    )


async def run(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", MODERN)
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    logger.info("scenario %s at %s against %s", scenario or "(none)", version, url)
    client = Client(
        url,
        mode=MODERN if version == MODERN else "legacy",
        elicitation_handler=answer_form,
        sampling_handler=answer_sampling,
        roots=ROOTS,
        client_info=CLIENT_INFO,
        auth=authorization(scenario, context),
    )
    try:
        async with client:
            failures = await exercise(client, context)
    except AuthorizationError as exc:
        logger.warning("could not connect: %s", exc)  # some scenarios test exactly this refusal
        return 1
    # Mocks serve only what their scenario needs (some answer -32601 to everything else), so a failed
    # operation is logged, not fatal: the harness judges the run from the traffic it saw.
    logger.info("done; %d operation(s) failed", failures)
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    if len(sys.argv) < 2:
        print("usage: client.py SERVER_URL", file=sys.stderr)
        return 2
    return anyio.run(run, sys.argv[-1])


if __name__ == "__main__":
    sys.exit(main())
