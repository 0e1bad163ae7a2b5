"""`mcp-resolve dev FILE --apps`: the refund desk's receipt view in the local host page, in a real browser.

The command runs as a user runs it (a subprocess on a free loopback port);
Debian's Chromium, driven by Playwright, opens the page it prints. The view's
`App` import is bundled by the command with esbuild from tests/node's
node_modules (the working directory); without one, it says what to install.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from browser_helpers import chromium_browser, new_context
from conftest import NODE_DIR, PYTHON, REFUND_DESK
from http_helpers import free_port

pytestmark = [pytest.mark.slow]

HOST_LINE = re.compile(r"MCP Apps host page for .*: (http://127\.0\.0\.1:\d+/host/)")


@contextmanager
def dev_apps(cwd: Path, log: Path, target: Path = REFUND_DESK) -> Iterator[str]:
    """`mcp-resolve dev TARGET --apps` in `cwd`; yields the host page's URL, once it answers."""
    port = free_port()
    with log.open("w") as sink:
        process = subprocess.Popen(
            [PYTHON, "-m", "mcp_resolve", "dev", str(target), "--apps", "--port", str(port)],
            cwd=cwd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/host/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        match = HOST_LINE.search(log.read_text())
        assert match, log.read_text()
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def api(page: str, method: str, params: dict[str, object]) -> dict[str, object]:
    origin = page.removesuffix("/host/")
    body = {"method": method, "params": params}
    answer = httpx.post(f"{page}api", json=body, headers={"origin": origin}, timeout=60)
    assert answer.status_code == 200
    body: dict[str, object] = answer.json()
    return body


@pytest.mark.anyio
async def test_dev_apps_renders_the_receipt_view_and_its_switch_calls_the_server(tmp_path: Path) -> None:
    from playwright.async_api import expect

    if not (NODE_DIR / "node_modules" / ".bin" / "esbuild").exists():
        pytest.skip("esbuild is not installed: `make pytest` runs npm ci in tests/node")
    with dev_apps(NODE_DIR, tmp_path / "dev.log") as page_url:
        query = {
            "tool": "refund_order",
            "args": json.dumps({"order_id": "ORD-7002", "reason": "too small"}),
            "answers": json.dumps({"full": True, "restock": False}),
        }
        async with chromium_browser() as browser, new_context(browser) as context:
            page = await context.new_page()
            await page.goto(f"{page_url}?{urlencode(query)}")
            view = page.frame_locator("#view-frame")
            await expect(view.locator("#amount")).to_have_text("$48.00", timeout=20_000)
            await expect(view.locator("#lines li")).to_have_text(
                ["trail-boots: $24.00 (returnable)", "wool-socks: $24.00 (returnable)"]
            )
            await expect(view.locator("#status")).to_have_text("Nothing in stock")
            # The page offers the tool that links a view, not the app-only ones.
            assert await page.locator("#tool option").all_text_contents() == ["refund_order"]
            assert len(json.loads(await page.locator("#questions").text_content() or "[]")) == 2
            text = json.loads(await page.locator("#text").text_content() or "[]")
            assert json.loads(text[0])["cents"] == 4800

            await view.locator("#restock").click()
            await expect(view.locator("#status")).to_have_text("Restocked: trail-boots, wool-socks")
            await expect(view.locator("#lines li").first).to_have_text("trail-boots: $24.00 (back in stock)")
            assert await page.locator("#error").text_content() == ""
            log = await page.locator("#log").text_content() or ""
            assert "view -> host: ui/initialize" in log and "view -> host: tools/call" in log
        # The server really changed: a read in a new connection sees the order back in stock.
        lines = api(page_url, "tools/call", {"name": "receipt_lines", "arguments": {"order_id": "ORD-7002"}})
        assert lines["result"]["structuredContent"]["in_stock"] == ["trail-boots", "wool-socks"]  # type: ignore[index]


def test_dev_apps_without_esbuild_says_what_to_install(tmp_path: Path) -> None:
    with dev_apps(tmp_path, tmp_path / "dev.log") as page_url:  # no node_modules here or above the example
        read = api(page_url, "resources/read", {"uri": "ui://refund-desk/receipt.html"})
    error = str(read["error"])
    assert "imports @modelcontextprotocol/ext-apps by name" in error
    assert "npm install esbuild @modelcontextprotocol/ext-apps" in error


def test_dev_apps_serves_its_api_to_its_own_page_only(tmp_path: Path) -> None:
    """Another site the developer visits may not call tools through the page's API (CSRF, DNS rebinding)."""
    with dev_apps(tmp_path, tmp_path / "dev.log") as page_url:
        origin = page_url.removesuffix("/host/")
        listing = json.dumps({"method": "tools/list"})
        tries = {
            "no origin": {"content-type": "application/json"},
            "another site": {"origin": "https://evil.example", "content-type": "application/json"},
            "a rebound name": {"origin": origin, "host": "evil.example", "content-type": "application/json"},
            "a form's text/plain": {"origin": origin, "content-type": "text/plain"},
        }
        statuses = {
            name: httpx.post(f"{page_url}api", content=listing, headers=headers, timeout=10).status_code
            for name, headers in tries.items()
        }
        assert statuses == {
            "no origin": 403,
            "another site": 403,
            "a rebound name": 403,
            "a form's text/plain": 415,
        }
        ours = {"origin": origin, "content-type": "application/json"}
        assert (
            "tools"
            in httpx.post(f"{page_url}api", content=listing, headers=ours, timeout=10).json()["result"]
        )


PROBE_VIEW = """<!doctype html><html><head><title>probe</title></head><body>
<!-- <head> in a comment, and a <header>: neither may carry the policy out of the real head -->
<header>probe</header><p id="out">waiting</p>
<script>
const out = document.getElementById("out");
fetch("http://localhost:PORT/undeclared").then(() => { out.textContent = "reached"; },
                                               () => { out.textContent = "blocked"; });
window.addEventListener("message", (event) => {
  if (event.data && event.data.id === 1) document.title = event.data.error ? "refused" : "called";
});
window.parent.postMessage({jsonrpc: "2.0", id: 1, method: "tools/call",
                           params: {name: "model_only", arguments: {}}}, "*");
</script></body></html>"""

PROBE_SERVER = """
from pathlib import Path

from mcp_resolve import MCPServer
from mcp_resolve.apps import Apps

apps = Apps()


@apps.tool(resource_uri="ui://probe/view.html")
def show() -> str:
    return "shown"


def model_only() -> str:
    return "the model's"


apps.add_html_resource("ui://probe/view.html", (Path(__file__).parent / "probe.html").read_text())
mcp = MCPServer("probe", extensions=[apps])
mcp.tool(meta={"ui": {"visibility": ["model"]}})(model_only)
"""


@pytest.mark.anyio
async def test_dev_apps_holds_a_view_to_its_csp_and_to_the_tools_it_may_call(tmp_path: Path) -> None:
    """The policy reaches the view's real head even when its HTML says `<header>` (a text match would
    have put it in the body, where browsers ignore it), and a view cannot call a model-only tool."""
    from playwright.async_api import expect

    (tmp_path / "probe.html").write_text(PROBE_VIEW.replace("PORT", str(free_port())))
    target = tmp_path / "probe.py"
    target.write_text(PROBE_SERVER)
    with dev_apps(tmp_path, tmp_path / "dev.log", target) as page_url:
        async with chromium_browser() as browser, new_context(browser) as context:
            page = await context.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            await page.goto(f"{page_url}?{urlencode({'tool': 'show', 'args': '{}', 'answers': '{}'})}")
            view = page.frame_locator("#view-frame")
            await expect(view.locator("#out")).to_have_text("blocked", timeout=20_000)
            frame = next(f for f in page.frames if f != page.main_frame)
            for _ in range(100):
                if await frame.title() != "probe":
                    break
                await page.wait_for_timeout(100)
            assert await frame.title() == "refused"
    assert not any("outside the document's <head>" in line for line in console), console
    assert any("Content Security Policy" in line and "localhost" in line for line in console), console
