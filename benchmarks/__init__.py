"""Benchmarks against the official MCP SDK and FastMCP; run with `make bench` (see README.md)."""
