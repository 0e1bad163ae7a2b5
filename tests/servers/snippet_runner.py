"""Serve one example-server file over stdio: `python snippet_runner.py PATH`.

The official SDK's documentation snippets define a server object named `mcp`
and most never call `run()` themselves (their docs start them with the
official CLI), and one calls `run(transport="streamable-http")` under
`__main__`. So the file is imported under a name other than `__main__` and
its `mcp` is served on stdio with `mcp.run()`, which both SDKs' servers take
to mean stdio. Works the same for a snippet as written (the official server)
and for its import-rewritten copy (ours).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> None:
    path = Path(sys.argv[1]).resolve()
    spec = importlib.util.spec_from_file_location("snippet", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["snippet"] = module  # dataclasses and pydantic look their defining module up here
    spec.loader.exec_module(module)
    module.mcp.run()


if __name__ == "__main__":
    main()
