"""The authorization server's endpoints, on the MCP server's own origin."""
