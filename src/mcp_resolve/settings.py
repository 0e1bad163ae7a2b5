"""What an operator sets from the environment, in one place: `MCP_RESOLVE_*` variables read by one model.

Everything a deployment changes without touching code (where to listen, which
`Host` and `Origin` headers to accept, how much to log, the requestState keys,
the Redis URL) is a field of `Settings`, read from `MCP_RESOLVE_<FIELD>`.
Values passed in code or on the command line win over the environment, which
wins over the defaults. A value that does not parse fails with `InvalidSetting`,
one line naming the variable; the value of a secret (the state keys, the Redis
URL, which may carry a password) is never repeated, in errors or in logs.

pydantic-settings does the reading: the same validation as every other model
here, and the tool the Python ecosystem already uses for it (FastAPI's guide,
pydantic-ai). Only the environment is read: no `.env` file, no secrets
directory, so nothing surprising is picked up from the working directory.
"""

from __future__ import annotations

import ipaddress
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import SecretStr, ValidationError, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from ._environment import ENV_PREFIX
from ._state_keys import GENERATE_HINT, MIN_SECRET_BYTES

__all__ = ["ENV_PREFIX", "InvalidSetting", "LogLevel", "Settings", "load_settings", "operator_state_keys"]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

SECRET_FIELDS = frozenset({"state_keys", "redis_url"})
"""Fields whose values are never shown: not in errors, not in logs, not in `repr(settings)`."""

_HOST = re.compile(r"[A-Za-z0-9._:%-]{1,253}")
_ALLOWED_HOST = re.compile(
    r"\*|\[[0-9A-Fa-f:.%]+\](:\d{1,5})?|[A-Za-z0-9._%-]{1,253}(:\d{1,5})?|[0-9A-Fa-f:]+"
)
_ORIGIN = re.compile(r"\*|[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9._:\[\]%-]{1,260}/?")
_SHOWN_CHARS = 60
_PORT = "must be a whole number from 1 to 65535"


class InvalidSetting(ValueError):
    """A setting that does not parse: one line naming the variable (or argument) and what it needs."""


def _names(value: Any) -> Any:
    """A comma-separated variable as a list; an empty one as unset."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
        value = [part for part in value if part]
    if value is None or value == []:
        raise PydanticUseDefault()
    return value


Names = Annotated[list[str] | None, NoDecode]


class Settings(BaseSettings):
    """The operator's settings: each field is read from `MCP_RESOLVE_<FIELD>` unless passed in code.

    Build one with `load_settings()` (which turns a bad value into a one-line
    `InvalidSetting`) or `Settings(...)` directly. It is read when used (a
    server built, `run` started), not at import, so the environment at that
    moment counts.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=False,
        extra="ignore",
        validate_default=False,
        hide_input_in_errors=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment: no `.env` file and no secrets directory is ever read."""
        return init_settings, env_settings

    host: str = "127.0.0.1"
    """HTTP bind address (`mcp.run(transport="streamable-http")`, `mcp-resolve run --http`)."""
    port: int = 8000
    """HTTP port."""
    path: str = "/mcp"
    """HTTP endpoint path."""
    allowed_hosts: Names = None
    """`Host` headers to accept, comma-separated (`name`, `name:port` or `*`). Unset: loopback names,
    plus the bind address when it is a name."""
    allowed_origins: Names = None
    """`Origin` headers to accept, comma-separated (`https://app.example.com` or `*`). Unset: an origin
    whose host passes `allowed_hosts`."""
    trusted_proxies: Names = None
    """Reverse proxies whose `X-Forwarded-For` names the client, comma-separated IP addresses or
    networks (`10.0.0.5`, `10.0.0.0/8`). Unset: the header is ignored and a client is its
    connection's address."""
    log_level: LogLevel | None = None
    """Level of the `mcp_resolve` loggers (and of uvicorn's, over HTTP). Unset: INFO when mcp-resolve
    sets up logging, and logging you configured yourself is left alone."""
    state_keys: SecretStr | None = None
    """requestState keys, comma-separated, newest first; each at least 32 bytes. Secret."""
    redis_url: SecretStr | None = None
    """Put every store on this Redis (a fleet). Secret: it may carry a password."""
    telemetry: bool = True
    """OpenTelemetry spans and metrics from every server, whenever `opentelemetry-api` is installed
    (`false` turns them off; `MCPServer(telemetry=...)` wins)."""

    @field_validator("host", "path", "redis_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise PydanticUseDefault()
        return value.strip() if isinstance(value, str) else value

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                raise PydanticUseDefault()
            digits = value.strip()
            if not (digits.isascii() and digits.isdigit() and len(digits) <= 5):
                raise ValueError(_PORT)
            return int(digits)
        return value

    @field_validator("port")
    @classmethod
    def _port_range(cls, value: int) -> int:
        if not 1 <= value <= 65535:
            raise ValueError(_PORT)
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        if not _HOST.fullmatch(value):
            raise ValueError("must be an IP address or a host name (e.g. 127.0.0.1, 0.0.0.0, ::)")
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or any(c.isspace() or not c.isprintable() for c in value):
            raise ValueError("must start with / and hold no spaces or control characters")
        return value

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> Any:
        value = _names(value)
        for entry in value:
            if not isinstance(entry, str) or not _ALLOWED_HOST.fullmatch(entry):
                raise ValueError(
                    "each entry must be a host name, name:port, [IPv6]:port or *, comma-separated"
                )
        return value

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        value = _names(value)
        for entry in value:
            if not isinstance(entry, str) or not _ORIGIN.fullmatch(entry):
                raise ValueError("each entry must be scheme://host[:port] or *, comma-separated")
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: Any) -> Any:
        value = _names(value)
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except (TypeError, ValueError):
                raise ValueError(
                    "each entry must be an IP address or a network (10.0.0.0/8), comma-separated"
                ) from None
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        if isinstance(value, str):
            level = value.strip().upper()
            if not level:
                raise PydanticUseDefault()
            if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
                raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
            return level
        return value

    @field_validator("state_keys")
    @classmethod
    def _keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        keys = [part.strip() for part in value.get_secret_value().split(",") if part.strip()]
        if not keys:
            raise ValueError(f"is set but holds no keys; {GENERATE_HINT}")
        for index, key in enumerate(keys):
            if len(key.encode("utf-8", "surrogatepass")) < MIN_SECRET_BYTES:
                raise ValueError(f"key #{index} is under {MIN_SECRET_BYTES} bytes; {GENERATE_HINT}")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        problem = None if value is None else redis_url_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(problem)
        return value

    def state_key_ring(self) -> list[str] | None:
        """The requestState keys, newest first (None: not configured, so keys are per process)."""
        if self.state_keys is None:
            return None
        return [part.strip() for part in self.state_keys.get_secret_value().split(",") if part.strip()]

    def redis(self) -> str | None:
        """The Redis URL, or None. The one place the secret is read out, to connect."""
        return None if self.redis_url is None else self.redis_url.get_secret_value()

    def described(self) -> str:
        """The settings in one log line, secrets reduced to whether they are set."""
        keys = self.state_key_ring()
        return (
            f"host={self.host} port={self.port} path={self.path} "
            f"allowed_hosts={','.join(self.allowed_hosts) if self.allowed_hosts else '(default)'} "
            f"allowed_origins={','.join(self.allowed_origins) if self.allowed_origins else '(default)'} "
            f"trusted_proxies={','.join(self.trusted_proxies) if self.trusted_proxies else '(none)'} "
            f"log_level={self.log_level or '(default)'} "
            f"state_keys={f'{len(keys)} set' if keys else 'unset'} "
            f"redis_url={'set' if self.redis_url is not None else 'unset'}"
        )


def redis_url_problem(url: str) -> str | None:
    """What is wrong with a Redis URL, without repeating it (it may carry a password); None if nothing.

    Checked with the other settings, so `localhost:6379` (no scheme) stops the
    server at start with one line, not at its first use of Redis with a traceback.
    """
    shape = "as in redis://HOST:6379/0"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "holds spaces or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return f"does not parse as a URL with a host and a port from 1 to 65535, {shape}"
    if parts.scheme not in ("redis", "rediss", "unix"):
        return f"must start with redis://, rediss:// or unix://, {shape}"
    if parts.scheme == "unix":
        return None if parts.path not in ("", "/") else "names no socket path, as in unix:///run/redis.sock"
    if not parts.hostname:
        return f"names no host, {shape}"
    if port == 0:
        return "has port 0; a port is from 1 to 65535"
    if parts.path not in ("", "/") and not (parts.path[1:].isascii() and parts.path[1:].isdigit()):
        return f"has a path that is not a database number, {shape}"
    return None


def variable(field: str) -> str:
    """The environment variable of a field: `port` -> `MCP_RESOLVE_PORT`."""
    return ENV_PREFIX + field.upper()


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return repr(text[:_SHOWN_CHARS] + ("..." if len(text) > _SHOWN_CHARS else ""))


def _message(error: ValidationError, given: Mapping[str, Any]) -> str:
    """The first problem, as `MCP_RESOLVE_PORT='abc': must be a whole number ...` (secrets not shown)."""
    first = error.errors(include_input=False, include_url=False)[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    explicit = field in given
    name = field if explicit else variable(field)
    reason = first["msg"].removeprefix("Value error, ")
    if field in SECRET_FIELDS:
        return f"{name}: {reason} (value not shown)"
    if explicit:
        raw: Any = given[field]
    else:
        raw = next((v for k, v in os.environ.items() if k.upper() == variable(field)), None)
    return f"{name}={_shown(raw)}: {reason}" if raw is not None else f"{name}: {reason}"


def load_settings(**given: Any) -> Settings:
    """`Settings` from the environment with `given` on top (None means not given), or `InvalidSetting`.

    An error names the variable (`MCP_RESOLVE_PORT='abc': ...`), or the argument for a given value.
    """
    explicit = {key: value for key, value in given.items() if value is not None}
    try:
        return Settings(**explicit)
    except ValidationError as exc:
        raise InvalidSetting(_message(exc, explicit)) from None


def operator_state_keys() -> list[str] | None:
    """The requestState keys the operator set (`MCP_RESOLVE_STATE_KEYS`), newest first; None when unset.

    What `RequestStateSecurity()` and `RequestStateSecurity.from_env()` seal with. A bad value of
    any setting is `InvalidSetting`, which never repeats a key.
    """
    return load_settings().state_key_ring()
