"""The mcp-resolve Client: one API over memory, stdio and HTTP, on either protocol era."""

from .client import Client
from .pipes import StdioServerParameters

__all__ = ["Client", "StdioServerParameters"]
