"""The refund desk: the model names the order and the reason; the amount comes from our records.

`refund_order(order_id, reason)` is all the model sees. `cents` and `restock`
are filled by resolvers: the amount from the order record (and, for a
multi-line order, the person's choice of scope), the restock decision from a
question to the person. The model cannot supply or inflate the amount.

    current_customer -> load_order -> refund_scope -> refund_amount  (cents, unwrapped: declining aborts)
                                                   -> ask_restock    (restock, full outcome: declining still refunds)
                                   -> returnable     (skus: what `restock` puts back, from the record)

In a host with MCP Apps the receipt renders as a view (`receipt.html`, `ui://refund-desk/receipt.html`).
Two tools only the view sees (visibility ["app"]), whose order and SKUs are resolved here like any
other call's: `receipt_lines`, read-only, which the view calls on opening to show the order's lines,
and `restock`, which its switch calls. The model still gets the receipt as text.

The customer is a resolver too: whoever the request's access token names, so
the model can no more refund someone else's order than it can raise an amount.

Run it: `python examples/refund_desk/server.py` (stdio) or add `--http --port 8000`;
`--http --auth --public-key FILE` serves only callers whose bearer token that key signed
(`client.py --auth` mints one with a key of its own). `--http --proxy` signs people in with the
identity provider they already have (any OpenID provider by its discovery URL, GitHub or Google)
through an `OAuthProxy`: the customer is then the person the provider signed in
(`client.py --proxy` runs a headless provider on loopback for it).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcp_resolve import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    ToolError,
)
from mcp_resolve.apps import Apps
from mcp_resolve.resources import Resource

apps = Apps()
"""MCP Apps: the receipt view and the tools bound to it (given to `mcp` below)."""


@dataclass(frozen=True)
class Line:
    sku: str
    cents: int
    restockable: bool


ORDERS: dict[str, tuple[Line, ...]] = {
    "ORD-7001": (Line("ebook-dune", 999, restockable=False),),
    "ORD-7002": (Line("trail-boots", 2400, restockable=True), Line("wool-socks", 2400, restockable=True)),
    "ORD-8001": (Line("rain-jacket", 8900, restockable=True),),
}
OWNERS = {"ORD-7001": "alice", "ORD-7002": "alice", "ORD-8001": "bob"}
UPSTREAM_CUSTOMERS = {("oidc", "alice"): "alice", ("github", "1001"): "alice", ("github", "1002"): "bob"}
"""Behind --proxy, which identity provider account is which customer: (provider, its user id).
Never the login or e-mail, which can change hands; your account-linking table in real life."""
LOCAL_CUSTOMER = "alice"
"""Who the desk serves when no token says (stdio, or HTTP open to all): the person at this machine."""
ISSUER = "https://auth.refund-desk.example"
"""The authorization server --auth trusts (a name only: client.py signs the tokens itself)."""
REFUNDS = "refunds:write"
"""The scope every caller's token must carry (--auth and --proxy)."""
RECEIPT_VIEW = "ui://refund-desk/receipt.html"
VIEW_HTML = Path(__file__).with_name("receipt.html")
"""The receipt view. Its script imports the ext-apps `App`; serve it bundled into this one file
(esbuild, vite-plugin-singlefile): a host loads a view with no network of its own."""
RESTOCKED: dict[str, list[str]] = {}
"""Which SKUs of each order went back into stock: your inventory in real life."""


class Order(BaseModel):
    order_id: str
    lines: list[Line]


class Scope(BaseModel):
    full: bool = Field(description="Refund the whole order? Say no to refund a single item.")
    sku: str = Field(default="", description="If not the whole order: the SKU of the item to refund.")


class Restock(BaseModel):
    restock: bool = Field(description="Put the returned items back into stock?")


class Restocking(BaseModel):
    order_id: str
    lines: list[Line]
    in_stock: list[str] = Field(description="The order's SKUs that are back in stock now.")


class Receipt(BaseModel):
    order_id: str
    reason: str
    cents: int
    restocked: bool


async def current_customer(ctx: Context) -> str:
    """The customer is whoever the access token names: never an argument, so never the model's choice.

    Behind --proxy the desk signed the person in at their identity provider itself: the customer
    is the one linked to that provider's user id (`UPSTREAM_CUSTOMERS`).
    """
    token = ctx.access_token
    if token is None:
        return LOCAL_CUSTOMER
    if mcp.auth_server_provider is not None:  # --proxy
        from mcp_resolve.auth.proxy import upstream_identity  # the mcp-resolve[auth] extra

        who = await upstream_identity(token)
        customer = UPSTREAM_CUSTOMERS.get((who.provider, who.subject))
        if customer is None:
            raise ToolError(f"{who.login or who.subject} at {who.provider} is not a customer of this desk")
        return customer
    if not token.subject:
        raise ToolError("the access token names no customer")
    return token.subject


async def load_order(order_id: str, customer: Annotated[str, Resolve(current_customer)]) -> Order:
    lines = ORDERS.get(order_id)
    if lines is None or OWNERS.get(order_id) != customer:  # someone else's order is as good as none
        raise ToolError(f"unknown order {order_id!r}")
    return Order(order_id=order_id, lines=list(lines))


async def refund_scope(order: Annotated[Order, Resolve(load_order)]) -> Scope | Elicit[Scope]:
    if len(order.lines) == 1:
        return Scope(full=True)  # nothing to choose: no question
    skus = ", ".join(line.sku for line in order.lines)
    return Elicit(f"Order {order.order_id} has several items ({skus}). Refund the whole order?", Scope)


def _scoped(order: Order, scope: Scope) -> list[Line]:
    """The lines a scope covers; the SKU is human-typed, so check it against the order."""
    if scope.full:
        return order.lines
    chosen = [line for line in order.lines if line.sku == scope.sku.strip()]
    if not chosen:
        raise ToolError(f"order has no item {scope.sku!r}")
    return chosen


async def refund_amount(
    order: Annotated[Order, Resolve(load_order)],
    scope: Annotated[Scope, Resolve(refund_scope)],
) -> int:
    return sum(line.cents for line in _scoped(order, scope))


async def ask_restock(
    order: Annotated[Order, Resolve(load_order)],
    scope: Annotated[Scope, Resolve(refund_scope)],
) -> Restock | Elicit[Restock]:
    lines = _scoped(order, scope)
    if not any(line.restockable for line in lines):
        return Restock(restock=False)  # nothing physical came back: no question
    return Elicit(f"Restock {', '.join(line.sku for line in lines)}?", Restock)


def receipt_view() -> str:
    return VIEW_HTML.read_text(encoding="utf-8")


apps.add_resource(Resource.from_function(receipt_view, RECEIPT_VIEW, meta={"ui": {"prefersBorder": True}}))


@apps.tool(resource_uri=RECEIPT_VIEW, single_use=True)
async def refund_order(
    order_id: str,
    reason: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    """Refund an order. The amount comes from the order record, never from the caller."""
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


async def returnable(order: Annotated[Order, Resolve(load_order)]) -> list[str]:
    return [line.sku for line in order.lines if line.restockable]


@apps.tool(resource_uri=RECEIPT_VIEW, visibility=["app"])
async def receipt_lines(order_id: str, order: Annotated[Order, Resolve(load_order)]) -> Restocking:
    """The order's lines and which are back in stock: what the view shows on opening. Changes nothing."""
    return Restocking(order_id=order_id, lines=order.lines, in_stock=RESTOCKED.get(order_id, []))


@apps.tool(resource_uri=RECEIPT_VIEW, visibility=["app"])
async def restock(
    order_id: str,
    on: bool,
    order: Annotated[Order, Resolve(load_order)],
    skus: Annotated[list[str], Resolve(returnable)],
) -> Restocking:
    """Put the order's returnable items back into stock (on) or take them out again (the view's switch)."""
    if on:
        RESTOCKED[order_id] = skus
    else:
        RESTOCKED.pop(order_id, None)
    return Restocking(order_id=order_id, lines=order.lines, in_stock=RESTOCKED.get(order_id, []))


mcp = MCPServer(
    "Refund Desk",
    instructions="Refunds follow the order record; the desk asks the person what it needs.",
    extensions=[apps],
)


def require_tokens(public_key: bytes, url: str) -> None:
    """--auth: serve only callers whose token `public_key` signed, for this desk's URL, with refunds:write."""
    from mcp_resolve.auth import AuthSettings, JWTVerifier

    mcp.token_verifier = JWTVerifier(public_key=public_key)
    mcp.auth = AuthSettings(issuer_url=ISSUER, resource_server_url=url, required_scopes=[REFUNDS])


def sign_in_with(
    upstream: str,
    *,
    base_url: str,
    client_id: str,
    client_secret: str,
    discovery_url: str | None = None,
    upstream_options: dict[str, Any] | None = None,
) -> None:
    """--proxy: the desk becomes its clients' authorization server and sends each person to `upstream`.

    `upstream` is "github", "google" or "oidc" (any OpenID provider, from `discovery_url`);
    `client_id` and `client_secret` are the desk's at that provider (its console gives them);
    `base_url` is where clients and browsers reach the desk. Clients register themselves here,
    the person approves them on the desk's consent page and signs in upstream, and the desk
    issues its own tokens for `refunds:write`.
    """
    from mcp_resolve.auth.proxy import GitHubProvider, GoogleProvider, OAuthProxy, OIDCProxy

    settings: dict[str, Any] = {
        "client_id": client_id,
        "client_secret": client_secret,
        "base_url": base_url,
        "scopes": [REFUNDS],
        "required_scopes": [REFUNDS],
        "upstream_options": dict(upstream_options or {}),
    }
    proxy: OAuthProxy
    if upstream == "github":
        proxy = GitHubProvider(**settings)
    elif upstream == "google":
        proxy = GoogleProvider(**settings)
    elif upstream == "oidc" and discovery_url:
        # client.py's headless provider answers on plain HTTP on loopback; any other must be https.
        loopback = discovery_url.startswith("http://127.0.0.1:")
        settings["upstream_options"].setdefault("allow_http_loopback", loopback)
        proxy = OIDCProxy(discovery_url=discovery_url, **settings)
    else:
        raise ValueError(f"upstream {upstream!r}: github, google, or oidc with its discovery URL")
    mcp.auth_server_provider = proxy
    mcp.token_verifier, mcp.auth = proxy.protection()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The refund desk, on stdio or HTTP.")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--auth", action="store_true", help="require bearer tokens (HTTP only)")
    parser.add_argument("--public-key", type=Path, help="PEM public key whose tokens --auth accepts")
    parser.add_argument(
        "--proxy", action="store_true", help="sign people in at their identity provider (HTTP only)"
    )
    parser.add_argument(
        "--upstream", choices=["oidc", "github", "google"], default="oidc", help="--proxy: where to sign in"
    )
    parser.add_argument(
        "--discovery-url",
        default=os.environ.get("REFUND_DESK_DISCOVERY_URL"),
        help="--upstream oidc: the provider's OpenID discovery URL (or REFUND_DESK_DISCOVERY_URL)",
    )
    parser.add_argument(
        "--client-id",
        default=os.environ.get("REFUND_DESK_CLIENT_ID"),
        help="--proxy: the desk's client id at the provider (or REFUND_DESK_CLIENT_ID); "
        "its secret is read from REFUND_DESK_CLIENT_SECRET",
    )
    parser.add_argument(
        "--base-url", help="--proxy: where clients and browsers reach it (default http://127.0.0.1:PORT)"
    )
    args = parser.parse_args()
    if args.auth and args.proxy:
        parser.error("--auth or --proxy, not both")
    if args.auth:
        if not args.http or args.public_key is None:
            parser.error("--auth needs --http and --public-key FILE")
        require_tokens(args.public_key.read_bytes(), f"http://127.0.0.1:{args.port}/mcp")
    if args.proxy:
        # The secret only from the environment: a command line is visible to every user of the host.
        secret = os.environ.get("REFUND_DESK_CLIENT_SECRET")
        if not args.http or not args.client_id or not secret:
            parser.error("--proxy needs --http, --client-id, and REFUND_DESK_CLIENT_SECRET set")
        if args.upstream == "oidc" and not args.discovery_url:
            parser.error("--upstream oidc needs --discovery-url (or REFUND_DESK_DISCOVERY_URL)")
        base_url = args.base_url or f"http://127.0.0.1:{args.port}"
        sign_in_with(
            args.upstream,
            base_url=base_url,
            client_id=args.client_id,
            client_secret=secret,
            discovery_url=args.discovery_url,
        )
    if args.http:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=args.port)
    else:
        mcp.run()
