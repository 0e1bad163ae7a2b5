"""Byte movers: stdio, in-memory and Streamable HTTP. Only this package knows about bytes."""
