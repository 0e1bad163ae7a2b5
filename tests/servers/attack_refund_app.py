"""The refund desk as an ASGI app for uvicorn, configured from the environment like state_server's refund app.

`python -m uvicorn --app-dir tests/servers attack_refund_app:app` serves it,
with the key ring, replay store and events file the environment names (see
state_server.py). The attack suite runs two such processes on one SQLite
replay store, as two workers of one deployment.
"""

import os

from state_server import build_refund_desk

app = build_refund_desk(os.environ).streamable_http_app()
