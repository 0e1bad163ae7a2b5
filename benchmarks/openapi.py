"""The OpenAPI leg of `make bench`: a large public description turned into tools, ours and FastMCP's.

The description is Twilio's Conversations API (tests/bridges/data/, MIT,
103 operations, OpenAPI 3.0 with form bodies). Each sample is a fresh
process that has already imported its framework and parsed the JSON: it
times `from_openapi` alone (CPU and wall), then counts the tools and the
bytes of their definitions as `tools/list` would send them. No calls are
made: the API's host is never reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import harness

__all__ = ["DESCRIPTION", "measure_conversion"]

DESCRIPTION = (
    Path(__file__).resolve().parent.parent / "tests" / "bridges" / "data" / "twilio_conversations_v1.json"
)

_CONVERT = {
    "ours": """
from mcp_resolve import MCPServer
cpu, wall = time.process_time(), time.perf_counter()
server = MCPServer.from_openapi(spec, client)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
definitions = [tool.definition() for tool in server.registry.tools.values()]
""",
    "fastmcp": """
import asyncio
from fastmcp import FastMCP
cpu, wall = time.process_time(), time.perf_counter()
server = FastMCP.from_openapi(spec, client=client)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
tools = asyncio.run(server.list_tools())
definitions = [tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
""",
}


def measure_conversion(frameworks: Sequence[str], reps: int) -> dict[str, Any]:
    """Per framework (those of ours/fastmcp asked for), one sample per repetition."""
    samples: dict[str, list[dict[str, float]]] = {}
    for _ in range(reps):
        for name in frameworks:
            if name not in _CONVERT:
                continue
            code = f"""
import json, logging, time
import httpx
logging.disable(logging.WARNING)
spec = json.loads(open({str(DESCRIPTION)!r}).read())
client = httpx.AsyncClient(base_url="http://127.0.0.1:9")
{_CONVERT[name]}
print(json.dumps({{"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "tools": len(definitions),
                  "list_bytes": len(json.dumps(definitions, separators=(",", ":")))}}))
"""
            samples.setdefault(name, []).append(harness.subprocess_json(code))
    return {"description": DESCRIPTION.name, "samples": samples}
