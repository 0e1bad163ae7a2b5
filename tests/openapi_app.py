"""A real FastAPI application for the OpenAPI bridge tests: an order desk behind a bearer token.

Its description (FastAPI writes it, OpenAPI 3.1) has path, query, header and
body parameters, `$ref`s to nested and recursive models, array and object
answers, and errors: 401 without the token, 404, 422 from validation, a 500
whose body echoes the caller's Authorization header (a careless API), an
answer bigger than the bridge accepts, and one that never comes.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Cookie, Depends, FastAPI, Header, HTTPException, Query
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field

__all__ = ["TOKEN", "build_app"]

TOKEN = "s3cret-token-for-tests"


class Address(BaseModel):
    street: str
    city: str


class Customer(BaseModel):
    id: str
    name: str
    address: Address | None = None


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=1)


class Order(BaseModel):
    id: int
    customer: Customer
    items: list[Item]
    status: str
    note: str | None = None


class OrderIn(BaseModel):
    customer_id: str
    items: list[Item]
    note: str | None = None


class NoteIn(BaseModel):
    order_id: str
    """Collides with the path parameter of the same name."""
    text: str


class Category(BaseModel):
    name: str
    children: list[Category] = []


def build_app() -> FastAPI:
    app = FastAPI(title="Order desk", version="1.0")
    customers = {"cust-42": Customer(id="cust-42", name="Ada", address=Address(street="1 Loop", city="Here"))}
    customers["cust-7"] = Customer(id="cust-7", name="Bob")
    orders: dict[int, Order] = {
        1: Order(id=1, customer=customers["cust-42"], items=[Item(sku="tea", quantity=2)], status="open"),
        2: Order(id=2, customer=customers["cust-42"], items=[Item(sku="cup", quantity=1)], status="paid"),
        3: Order(id=3, customer=customers["cust-7"], items=[Item(sku="pot", quantity=1)], status="open"),
    }

    def bearer(authorization: Annotated[str | None, Header()] = None) -> None:
        if authorization != f"Bearer {TOKEN}":
            raise HTTPException(401, detail="missing or wrong bearer token")

    guarded = [Depends(bearer)]

    @app.get(
        "/customers/{customer_id}/orders", operation_id="list_orders", tags=["orders"], dependencies=guarded
    )
    async def list_orders(
        customer_id: str, status: str | None = None, limit: Annotated[int, Query(ge=1, le=50)] = 10
    ) -> list[Order]:
        """The orders of one customer, newest first."""
        found = [o for o in orders.values() if o.customer.id == customer_id and status in (None, o.status)]
        return sorted(found, key=lambda o: -o.id)[:limit]

    @app.get("/orders/{order_id}", operation_id="get_order", tags=["orders"], dependencies=guarded)
    async def get_order(order_id: int, x_request_id: Annotated[str | None, Header()] = None) -> Order:
        if order_id not in orders:
            raise HTTPException(404, detail=f"no order {order_id}")
        order = orders[order_id]
        return order.model_copy(update={"note": f"request {x_request_id}"}) if x_request_id else order

    @app.post("/orders", operation_id="create_order", tags=["orders"], status_code=201, dependencies=guarded)
    async def create_order(order: OrderIn) -> Order:
        if order.customer_id not in customers:
            raise HTTPException(404, detail=f"no customer {order.customer_id}")
        created = Order(
            id=max(orders) + 1,
            customer=customers[order.customer_id],
            items=order.items,
            status="open",
            note=order.note,
        )
        orders[created.id] = created
        return created

    @app.post("/orders/{order_id}/notes", operation_id="add_note", tags=["orders"], dependencies=guarded)
    async def add_note(order_id: int, note: NoteIn) -> dict[str, str]:
        return {"path_order_id": str(order_id), "body_order_id": note.order_id, "text": note.text}

    @app.delete("/orders/{order_id}", operation_id="delete_order", tags=["admin"], dependencies=guarded)
    async def delete_order(order_id: int) -> dict[str, bool]:
        return {"deleted": orders.pop(order_id, None) is not None}

    @app.get("/categories", operation_id="category_tree", tags=["catalog"])
    async def category_tree() -> Category:
        return Category(name="all", children=[Category(name="tea", children=[Category(name="green")])])

    @app.get("/echo", operation_id="echo", tags=["ops"])
    async def echo(
        tag: Annotated[list[str], Query()], session: Annotated[str | None, Cookie()] = None
    ) -> dict[str, list[str] | str | None]:
        """What arrived: a repeated query key and a cookie."""
        return {"tag": tag, "session": session}

    @app.get("/health", operation_id="health", tags=["ops"])
    async def health() -> PlainTextResponse:
        return PlainTextResponse("ok")

    @app.get("/crash", operation_id="crash", tags=["ops"])
    async def crash(authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
        # A careless API: its error page repeats the request's credentials, at length.
        return JSONResponse(
            {"error": "boom", "auth_seen": authorization, "trace": "x" * 5000}, status_code=500
        )

    @app.get("/big", operation_id="big", tags=["ops"])
    async def big(kib: int = 8192) -> PlainTextResponse:
        return PlainTextResponse("y" * (kib * 1024))

    @app.get("/slow", operation_id="slow", tags=["ops"])
    async def slow() -> dict[str, bool]:
        await asyncio.sleep(30)
        return {"late": True}

    return app
