"""The mcp-resolve Client: one API over memory, stdio and HTTP, on either protocol era."""

from .client import Client

__all__ = ["Client"]
