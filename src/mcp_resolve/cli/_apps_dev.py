"""`mcp-resolve dev FILE --apps`: the server's MCP Apps views in a local host page, no chat client needed.

One uvicorn on loopback serves the server at `/mcp` (any client may connect
there too) and, under `/host/`, a small host page (`_apps_host.html`, plain
JavaScript, no bundler). The page lists the tools that link a view, calls the
one chosen, and renders its `ui://` resource in a sandboxed iframe under the
Content-Security-Policy built from the resource's `_meta.ui.csp`, speaking the
view's side of the MCP Apps postMessage JSON-RPC (`ui/initialize`, the tool's
input and result, the view's `tools/call` and `resources/read`).

The page reaches the server through `/host/api`, where this process forwards
each request with our `Client` over HTTP to `/mcp`: a fresh connection per
request, the person's answers to the server's questions given with the call.

A view's HTML must be one self-contained file, as every host loads it. A view
whose module script still imports packages by name (`import { App } from
"@modelcontextprotocol/ext-apps"`) is bundled on the fly with esbuild from a
`node_modules` beside the server file or the working directory; without one,
the page and stderr say what to install.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._target import CLIError, load_server, split_target

__all__ = ["APPS_HOST_PATH", "NO_ESBUILD", "bundle_view", "dev_apps", "find_esbuild"]

APPS_HOST_PATH = "/host/"
HOST_PAGE = Path(__file__).with_name("_apps_host.html")
APP_MIME_TYPE = "text/html;profile=mcp-app"
MAX_API_BODY = 1_000_000
"""Bytes of one request from the page: tool arguments and answers, never large."""
BUNDLE_TIMEOUT = 60.0
_MODULE_SCRIPT = re.compile(r'(<script type="module">)(.*?)(</script>)', re.S)
_BARE_IMPORT = re.compile(r"""(?:^|[\s;])(?:import|export)\b[^'"]*?\bfrom\s*['"]([^./'"][^'"]*)['"]""", re.M)
NO_ESBUILD = (
    "the view {uri} imports {names} by name; a host loads a view as one file.\n"
    "Bundle it (esbuild, vite-plugin-singlefile), or let `mcp-resolve dev --apps` do it: install Node.js\n"
    "and, beside the server file, `npm install esbuild @modelcontextprotocol/ext-apps`."
)


def find_esbuild(*starts: Path) -> Path | None:
    """The `node_modules/.bin/esbuild` nearest to one of `starts` (or their parents)."""
    for start in starts:
        for folder in (start, *start.parents):
            candidate = folder / "node_modules" / ".bin" / "esbuild"
            if candidate.exists():
                return candidate
    return None


def bundle_view(html: str, uri: str, esbuild: Path | None) -> str:
    """`html` with its module scripts' bare imports bundled in; unchanged if it has none."""
    scripts = [match for match in _MODULE_SCRIPT.finditer(html) if _BARE_IMPORT.search(match.group(2))]
    if not scripts:
        return html
    if esbuild is None:
        names = sorted({name for match in scripts for name in _BARE_IMPORT.findall(match.group(2))})
        raise CLIError(NO_ESBUILD.format(uri=uri, names=", ".join(names)))
    out = []
    last = 0
    for match in scripts:
        done = subprocess.run(
            [str(esbuild), "--bundle", "--format=esm", "--platform=browser", "--log-level=warning"],
            cwd=esbuild.parent.parent.parent,  # where its node_modules is: bare imports resolve there
            input=match.group(2),
            capture_output=True,
            text=True,
            timeout=BUNDLE_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise CLIError(f"esbuild could not bundle the view {uri}:\n{done.stderr.strip()}")
        out += [html[last : match.start(2)], done.stdout.replace("</script", "<\\/script")]
        last = match.end(2)
    return "".join([*out, html[last:]])


def _answering(answers: dict[str, Any], questions: list[str]) -> Callable[[Any], Awaitable[dict[str, Any]]]:
    """An elicitation handler: accept with the fields `answers` has, decline when it has none of them."""

    async def answer(form: Any) -> dict[str, Any]:
        questions.append(form.message)
        fields = (form.requested_schema or {}).get("properties", {})
        content = {name: answers[name] for name in fields if name in answers}
        return {"action": "accept", "content": content} if content else {"action": "decline"}

    return answer


def _dump(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def forward(url: str, request: dict[str, Any], esbuild: Path | None) -> dict[str, Any]:
    """One of the page's requests, sent to the server at `url` with our `Client`: `{result}` or `{error}`."""
    from ..client import Client

    method = request.get("method")
    params = request.get("params") or {}
    answers = request.get("answers") or {}
    if not isinstance(params, dict) or not isinstance(answers, dict):
        return {"error": "params and answers must be objects"}
    questions: list[str] = []
    extensions = {"io.modelcontextprotocol/ui": {"mimeTypes": [APP_MIME_TYPE]}}
    async with Client(
        url, elicitation_handler=_answering(answers, questions), extensions=extensions
    ) as client:
        if method == "tools/list":
            return {"result": _dump(await client.list_tools())}
        if method == "tools/call":
            result = await client.call_tool(str(params.get("name")), params.get("arguments") or {})
            return {"result": _dump(result), "questions": questions}
        if method == "resources/read":
            uri = str(params.get("uri"))
            read = _dump(await client.read_resource(uri))
            for content in read.get("contents", []):
                if content.get("mimeType") == APP_MIME_TYPE and "text" in content:
                    content["text"] = bundle_view(content["text"], uri, esbuild)
            return {"result": read}
    return {"error": f"the host page does not forward {method!r}"}


def apps_app(mcp_app: Any, url: str, esbuild: Path | None) -> Any:
    """The server's ASGI app plus the host page under `/host/` and its `/host/api`."""
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse

    page = HOST_PAGE.read_text(encoding="utf-8")

    origin = url.removesuffix("/mcp")
    hosts = {origin.removeprefix("http://"), origin.replace("127.0.0.1", "localhost").removeprefix("http://")}

    async def api(request: Request) -> JSONResponse:
        # Only this page may call: another site's form or fetch (CSRF), or a rebound DNS name, may not.
        if request.headers.get("host") not in hosts or request.headers.get("origin") not in (
            origin,
            origin.replace("127.0.0.1", "localhost"),
        ):
            return JSONResponse({"error": "only the host page may call /host/api"}, status_code=403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "application/json only"}, status_code=415)
        body = await request.body()
        if len(body) > MAX_API_BODY:
            return JSONResponse({"error": "request too large"}, status_code=413)
        try:
            asked = json.loads(body)
            if not isinstance(asked, dict):
                raise ValueError("not an object")
            return JSONResponse(await forward(url, asked, esbuild))
        except (CLIError, ValueError) as error:
            return JSONResponse({"error": str(error)})
        except Exception as error:  # the page shows what failed; the server logs its own side
            return JSONResponse({"error": f"{type(error).__name__}: {error}"})

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path == "/":
            await RedirectResponse(APPS_HOST_PATH)(scope, receive, send)
        elif scope["type"] == "http" and path == APPS_HOST_PATH:
            await HTMLResponse(page, headers={"cache-control": "no-store"})(scope, receive, send)
        elif scope["type"] == "http" and path == APPS_HOST_PATH + "api":
            if scope["method"] != "POST":
                await JSONResponse({"error": "POST only"}, status_code=405)(scope, receive, send)
            else:
                await (await api(Request(scope, receive)))(scope, receive, send)
        else:
            await mcp_app(scope, receive, send)  # /mcp, and the lifespan

    return app


def dev_apps(spec: str, *, port: int) -> int:
    """Serve `spec` and the host page on 127.0.0.1:`port` until Ctrl-C; 0 then."""
    import uvicorn

    server = load_server(spec)
    base = f"http://127.0.0.1:{port}"
    esbuild = find_esbuild(split_target(spec)[0].resolve().parent, Path.cwd())
    app = apps_app(server.streamable_http_app(), f"{base}/mcp", esbuild)
    print(
        f"MCP Apps host page for {spec}: {base}{APPS_HOST_PATH}  (the server: {base}/mcp; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    except KeyboardInterrupt:
        pass
    return 0
