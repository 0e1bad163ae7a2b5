"""`python -m mcp_resolve`: the `mcp-resolve` command, for when the script is not on PATH."""

from .cli import main

raise SystemExit(main())
