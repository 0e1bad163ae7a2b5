"""MCP Apps in a real browser: our server, a host page with the ext-apps `AppBridge`, and the view's `App`.

Debian's Chromium, headless, driven by Playwright, opens a minimal host page
(tests/node/apps_host: `host.mjs`, bundled here with esbuild) that talks to the
server under uvicorn with the TypeScript SDK's Streamable HTTP client. The
view runs in the spec's double-iframe sandbox: the sandbox proxy page is served
from another loopback origin (`localhost` against the host's `127.0.0.1`), and
holds the view in an inner sandboxed iframe under the CSP it builds from the
resource's `_meta.ui`. The refund desk's receipt view (examples/refund_desk/
receipt.html, its `App` import bundled in) shows the refund and the order's lines (the
read-only app-only `receipt_lines` tool), and its restock switch calls the app-only `restock`
tool, whose SKUs a resolver computes.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.staticfiles import StaticFiles

from browser_helpers import chromium_browser, new_context
from conftest import NODE_DIR, REFUND_DESK, load_module
from http_helpers import serving
from mcp_resolve import MCPServer
from mcp_resolve.apps import Apps, ResourceCsp

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HOST_PAGES = NODE_DIR / "apps_host"
ESBUILD = NODE_DIR / "node_modules" / ".bin" / "esbuild"
VIEW_SCRIPT = re.compile(r'<script type="module">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped, so the one browser below is shared by the module's tests."""
    return "asyncio"


def esbuild(*args: str, source: str | None = None) -> str:
    """Run the repo-local esbuild from tests/node (so bare imports resolve in its node_modules)."""
    if not ESBUILD.exists():
        pytest.skip("esbuild is not installed: `make pytest` runs npm ci in tests/node")
    done = subprocess.run(
        [str(ESBUILD), "--bundle", "--format=esm", "--platform=browser", "--log-level=warning", *args],
        cwd=NODE_DIR,
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def bundled_view(html: str) -> str:
    """`html` with its module script's imports bundled in: one file, no network, as a host loads it."""
    match = VIEW_SCRIPT.search(html)
    assert match, "the view has no <script type=module>"
    script = esbuild("--minify", source=match.group(1)).replace("</script", "<\\/script")
    return html[: match.start(1)] + script + html[match.end(1) :]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The host page, its bundled script and the sandbox proxy page, in one directory."""
    out = tmp_path_factory.mktemp("apps_host")
    esbuild(str(HOST_PAGES / "host.mjs"), f"--outfile={out / 'host.js'}")
    for name in ("host.html", "sandbox.html"):
        (out / name).write_text((HOST_PAGES / name).read_text(encoding="utf-8"), encoding="utf-8")
    return out


def with_host_pages(mcp_app: Any, pages: Path) -> Any:
    """The MCP app, plus the host pages under /host/: one uvicorn, reached as two origins."""
    static = StaticFiles(directory=pages)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/host/"):
            await static({**scope, "path": scope["path"][len("/host") :], "root_path": ""}, receive, send)
        else:
            await mcp_app(scope, receive, send)

    return app


@dataclass
class Host:
    base: str  # http://127.0.0.1:PORT: the host page and the MCP endpoint
    sandbox: str  # http://localhost:PORT: the sandbox proxy, another origin

    def page(self, tool: str, args: dict[str, Any], answers: dict[str, Any] | None = None) -> str:
        query = {
            "server": f"{self.base}/mcp",
            "sandbox": f"{self.sandbox}/host/sandbox.html",
            "tool": tool,
            "args": json.dumps(args),
            "answers": json.dumps(answers or {}),
        }
        return f"{self.base}/host/host.html?{urlencode(query)}"


@contextmanager
def served(mcp_app: Any, pages: Path) -> Iterator[Host]:
    with serving(with_host_pages(mcp_app, pages)) as base:
        yield Host(base=base, sandbox=base.replace("127.0.0.1", "localhost"))


@pytest.fixture(scope="module")
def desk(pages: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Host]]:
    """The refund desk example under uvicorn, serving its receipt view bundled."""
    module = load_module(REFUND_DESK)
    view = tmp_path_factory.mktemp("view") / "receipt.html"
    view.write_text(bundled_view(module.VIEW_HTML.read_text(encoding="utf-8")), encoding="utf-8")
    module.VIEW_HTML = view
    with served(module.mcp.streamable_http_app(), pages) as host:
        yield module, host


@pytest.fixture(scope="module")
def hits() -> Iterator[tuple[str, list[str]]]:
    """A server that records each path asked of it: where a view's fetch would land."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(Request(scope).url.path)
            response = PlainTextResponse("ok", headers={"access-control-allow-origin": "*"})
            await response(scope, receive, send)

    with serving(app) as base:
        yield base, seen


PROBE_VIEW = """<!doctype html>
<html><head><meta charset="utf-8"></head><body>
<p id="declared">...</p><p id="undeclared">...</p><p id="violations"></p>
<script>
  const violations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    violations.push(`${event.effectiveDirective} ${event.blockedURI}`);
    document.getElementById("violations").textContent = violations.join("; ");
  });
  for (const [id, url] of [["declared", "DECLARED/declared"], ["undeclared", "UNDECLARED/undeclared"]]) {
    fetch(url, { mode: "no-cors" }).then(
      () => { document.getElementById(id).textContent = "reached"; },
      () => { document.getElementById(id).textContent = "blocked"; },
    );
  }
</script></body></html>
"""


def probe_server(declared: str, undeclared: str) -> MCPServer:
    """A view that fetches one origin its `_meta.ui.csp` declares and one it does not."""
    apps = Apps()
    uri = "ui://probe/fetch.html"
    html = PROBE_VIEW.replace("UNDECLARED", undeclared).replace("DECLARED", declared)
    apps.add_html_resource(uri, html, csp=ResourceCsp(connect_domains=[declared]))

    @apps.tool(resource_uri=uri)
    def probe() -> str:
        """Open the probe view."""
        return "probing"

    return MCPServer("probe", extensions=[apps])


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    async with chromium_browser() as launched:
        yield launched


@asynccontextmanager
async def open_host(browser: Any, url: str) -> AsyncIterator[Any]:
    async with new_context(browser) as context:
        page = await context.new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        await page.goto(url)
        try:
            yield page
        except BaseException:
            print(
                "host error:",
                await page.locator("#error").text_content(),
                await page.locator("#result").text_content(),
                "console:",
                *console,
                sep="\n",
            )
            raise


async def test_the_receipt_view_renders_the_refund_and_its_switch_restocks_server_side(
    desk: tuple[Any, Host], browser: Any
) -> None:
    from playwright.async_api import expect

    module, host = desk
    # The person says yes to restocking: a view that restocked on opening would act on it at once.
    url = host.page(
        "refund_order", {"order_id": "ORD-7002", "reason": "too small"}, {"full": True, "restock": True}
    )
    async with open_host(browser, url) as page:
        view = page.frame_locator("#sandbox").frame_locator("iframe")
        await expect(view.locator("#amount")).to_have_text("$48.00", timeout=15_000)
        await expect(view.locator("#order")).to_have_text("ORD-7002")
        await expect(view.locator("#lines li")).to_have_text(
            ["trail-boots: $24.00 (returnable)", "wool-socks: $24.00 (returnable)"]
        )
        # The model would see refund_order only, and its receipt as text; the view sees restock too.
        assert json.loads(await page.locator("#model-tools").text_content() or "") == ["refund_order"]
        assert json.loads(await page.locator("#app-tools").text_content() or "") == ["receipt_lines", "restock"]
        text = json.loads(await page.locator("#text").text_content() or "")
        assert json.loads(text[0]) == {
            "order_id": "ORD-7002",
            "reason": "too small",
            "cents": 4800,
            "restocked": True,
        }
        assert len(json.loads(await page.locator("#questions").text_content() or "")) == 2
        # Opening the view read the lines (receipt_lines) and changed nothing: no restock until the click.
        await expect(view.locator("#status")).to_have_text("Nothing in stock")
        await expect(view.locator("#restock")).not_to_be_checked()
        assert module.RESTOCKED == {}

        await view.locator("#restock").click()
        await expect(view.locator("#status")).to_have_text("Restocked: trail-boots, wool-socks")
        await expect(view.locator("#lines li").first).to_have_text("trail-boots: $24.00 (back in stock)")
        # The SKUs came from the order record through the `returnable` resolver, not from the view.
        assert module.RESTOCKED == {"ORD-7002": ["trail-boots", "wool-socks"]}

        await view.locator("#restock").click()
        await expect(view.locator("#status")).to_have_text("Nothing in stock")
        assert module.RESTOCKED == {}
        assert await page.locator("#error").text_content() == ""


async def test_a_view_reaches_only_the_origins_its_csp_declares(
    pages: Path, hits: tuple[str, list[str]], browser: Any
) -> None:
    from playwright.async_api import expect

    declared, seen = hits
    undeclared = declared.replace("127.0.0.1", "localhost")  # the same server, an origin not declared
    with served(probe_server(declared, undeclared).streamable_http_app(), pages) as host:
        async with open_host(browser, host.page("probe", {})) as page:
            view = page.frame_locator("#sandbox").frame_locator("iframe")
            await expect(view.locator("#declared")).to_have_text("reached", timeout=15_000)
            await expect(view.locator("#undeclared")).to_have_text("blocked")
            await expect(view.locator("#violations")).to_have_text(f"connect-src {undeclared}/undeclared")
    assert seen == ["/declared"]
