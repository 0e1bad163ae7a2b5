"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): a tool's result rendered as a view in the host.

A tool carries `_meta.ui.resourceUri`, naming a `ui://` resource: an HTML document served as
`text/html;profile=mcp-app`, which the host renders in a sandboxed iframe. The resource's
`_meta.ui` (CSP domains, permissions, a dedicated `domain`, `prefersBorder`) is sent on the
`resources/read` content item, which is where hosts read it, and on the listing.

The official SDK's `mcp.server.apps` under the same names, so its Apps code ports by changing the
import (`mcp_resolve.server.apps` re-exports this module):

    apps = Apps()

    @apps.tool(resource_uri="ui://clock/app.html", description="Current time")
    def get_time(ctx: Context) -> str:
        return datetime.now(timezone.utc).isoformat()

    apps.add_html_resource("ui://clock/app.html", CLOCK_HTML)

    mcp = MCPServer("clock", extensions=[apps])

Unlike the official one, the extension is advertised only when it has a view or a UI tool, and a
tool naming a `ui://` resource that is not registered is refused when the server takes the
extension. An app-only tool (`visibility=["app"]`) is an ordinary tool to the server: hiding it
from the model, and enforcing the CSP, are the host's job.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..context import Context
from ..extension import Extension, ResourceBinding, ToolBinding
from ..protocol.middleware import ServerRequestContext
from ..resources import Resource

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "Apps",
    "ResourceCsp",
    "ResourcePermissions",
    "Visibility",
    "client_supports_apps",
]

EXTENSION_ID = "io.modelcontextprotocol/ui"
"""The MCP Apps extension identifier."""

APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of a `ui://` app resource; hosts render no other."""

Visibility = Literal["model", "app"]
"""Who may call a UI tool (`_meta.ui.visibility`): the model, the view, or both (the default)."""

_CallableT = TypeVar("_CallableT", bound=Callable[..., Any])


class ResourcePermissions(BaseModel):
    """The browser permissions a view asks for (`_meta.ui.permissions`); each is `{}` to ask."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    camera: dict[str, Any] | None = None
    microphone: dict[str, Any] | None = None
    geolocation: dict[str, Any] | None = None
    clipboard_write: dict[str, Any] | None = None


class ResourceCsp(BaseModel):
    """The outside origins a view may reach (`_meta.ui.csp`); none declared means none allowed."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    connect_domains: list[str] | None = None
    resource_domains: list[str] | None = None
    frame_domains: list[str] | None = None
    base_uri_domains: list[str] | None = None


class Apps(Extension):
    """The MCP Apps extension: tools bound to `ui://` views.

    Register the tools with `@apps.tool(resource_uri=...)` and their HTML with
    `add_html_resource(...)`, then pass the instance to `MCPServer(extensions=[apps])`.
    """

    identifier = EXTENSION_ID

    def __init__(self) -> None:
        self._tools: list[tuple[ToolBinding, str]] = []  # (binding, the ui:// resource it names)
        self._resources: list[ResourceBinding] = []

    def tool(
        self,
        *,
        resource_uri: str,
        visibility: Sequence[Visibility] | None = None,
        meta: dict[str, Any] | None = None,
        **tool_kwargs: Any,
    ) -> Callable[[_CallableT], _CallableT]:
        """Register a tool bound to a `ui://` view: `_meta.ui.resourceUri` (and `.visibility` when given).

        `tool_kwargs` go to `MCPServer.add_tool` (name, title, description, annotations...);
        `meta` adds `_meta` keys beside `ui`. The tool keeps everything a tool has: its
        resolvers stay hidden from its input schema and computed by the server, whoever calls it.

        Raises:
            ValueError: `resource_uri` is not `ui://`, a visibility is not "model" or "app",
                or `meta` has a "ui" key (this decorator owns `_meta.ui`).
        """
        _require_ui_scheme(resource_uri)
        if meta and "ui" in meta:
            raise ValueError(
                "Apps.tool() owns _meta['ui']; pass resource_uri=/visibility= instead of a 'ui' meta key"
            )
        ui: dict[str, Any] = {"resourceUri": resource_uri}
        if visibility is not None:
            if isinstance(visibility, str) or any(v not in ("model", "app") for v in visibility):
                raise ValueError(f"Apps tool visibility is a list of 'model' and 'app', got {visibility!r}")
            ui["visibility"] = list(visibility)

        def decorator(fn: _CallableT) -> _CallableT:
            binding = ToolBinding(fn=fn, meta={**(meta or {}), "ui": ui}, kwargs=tool_kwargs)
            self._tools.append((binding, resource_uri))
            return fn

        return decorator

    def add_html_resource(
        self,
        uri: str,
        html: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: ResourceCsp | None = None,
        permissions: ResourcePermissions | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> None:
        """Register a `ui://` view: `html` served as `text/html;profile=mcp-app`.

        `csp`, `permissions`, `domain` and `prefers_border` make its `_meta.ui`, sent on the
        listing and on the `resources/read` content item.

        Raises:
            ValueError: `uri` is not `ui://`.
        """
        _require_ui_scheme(uri)
        ui: dict[str, Any] = {}
        if csp is not None:
            ui["csp"] = csp.model_dump(by_alias=True, exclude_none=True)
        if permissions is not None:
            ui["permissions"] = permissions.model_dump(by_alias=True, exclude_none=True)
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border

        def read() -> str:
            return html

        self.add_resource(
            Resource.from_function(
                read,
                uri=uri,
                name=name or uri,
                title=title,
                description=description,
                mime_type=APP_MIME_TYPE,
                meta={"ui": ui} if ui else None,
            )
        )

    def add_resource(self, resource: Resource) -> None:
        """Register a `ui://` resource built beforehand (`Resource.from_function`, e.g. HTML read from disk).

        One without a `mime_type` is served as `text/html;profile=mcp-app`; another type is
        refused, since hosts render a view under no other.

        Raises:
            ValueError: the URI is not `ui://`, or the `mime_type` is another.
        """
        _require_ui_scheme(resource.uri)
        if resource.mime_type is None:
            resource.mime_type = APP_MIME_TYPE
        elif resource.mime_type != APP_MIME_TYPE:
            raise ValueError(
                f"MCP Apps resources are served as {APP_MIME_TYPE!r}, got {resource.mime_type!r} "
                f"for {resource.uri!r}"
            )
        self._resources.append(ResourceBinding(resource=resource))

    def advertised(self) -> bool:
        """Advertised only with at least one view or UI tool: a client is not told of views that are not there."""
        return bool(self._tools or self._resources)

    def tools(self) -> Sequence[ToolBinding]:
        """The UI tools.

        Raises:
            ValueError: a tool names a `ui://` resource this instance does not register (naming both):
                its `_meta.ui.resourceUri` would fail on `resources/read`.
        """
        registered = {binding.resource.uri for binding in self._resources}
        for tool, uri in self._tools:
            if uri not in registered:
                name = tool.kwargs.get("name") or getattr(tool.fn, "__name__", repr(tool.fn))
                raise ValueError(
                    f"Apps tool {name!r} names resource_uri {uri!r}, but no such ui:// resource is "
                    "registered; add it with add_html_resource() or add_resource()"
                )
        return [tool for tool, _ in self._tools]

    def resources(self) -> Sequence[ResourceBinding]:
        return list(self._resources)


def client_supports_apps(ctx: Context[Any, Any] | ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared MCP Apps with `text/html;profile=mcp-app` among its `mimeTypes`.

    A UI tool checks it to answer a host without Apps in text alone. From a tool's `Context`
    or an extension's `ServerRequestContext`, on either era.
    """
    if isinstance(ctx, ServerRequestContext):
        capabilities = ctx.session.client_capabilities_dict
    else:
        capabilities = ctx.client_capabilities_dict
    extensions = (capabilities or {}).get("extensions")
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def _require_ui_scheme(uri: str) -> None:
    if not uri.startswith("ui://"):
        raise ValueError(f"MCP Apps URIs use the ui:// scheme, got {uri!r}")
