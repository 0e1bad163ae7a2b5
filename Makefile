# Two commands on a fresh machine: `make demo` and `make test` (`make test-fast` while you work).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed
NODE_STAMP := conformance/node_modules/.installed
CLIENTS_NODE_STAMP := tests/node/node_modules/.installed
SYSTEM_STAMP := $(VENV)/.installed-system
SYSTEM_PACKAGES := redis-server nginx-light graphviz chromium
BENCH_SYSTEM_STAMP := $(VENV)/.installed-bench-system

.PHONY: venv install install-test test test-fast lint typecheck docs pictures pytest demo view conformance conformance-proxy bench bench-production soak clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(DEMO_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[auth]'
	touch $(DEMO_STAMP)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP) $(DEMO_STAMP)

$(NODE_STAMP): conformance/package.json conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# The Node clients the interop tests drive (TypeScript client 2.x, MCP Inspector CLI, Node 22), and the
# identity provider (oidc-provider) the OAuth proxy's tests and `make demo` sign in at, and Mermaid (with
# jsdom for its DOMPurify) that parses `graph --format mermaid` in tests/cli/test_cli_graph.py.
$(CLIENTS_NODE_STAMP): tests/node/package.json tests/node/package-lock.json
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error
	touch $(CLIENTS_NODE_STAMP)

# The real Redis and nginx the fleet tests start, Graphviz for `make pictures` and the tests of
# `graph --format svg`, and the Chromium the browser tests drive through Playwright
# (tests/browser_helpers.py; Playwright's own browser download is not used), all Debian's packages,
# installed where missing: from the package lists the machine has, else after refreshing them. As
# root, or through sudo. Checked again when this file changes.
$(SYSTEM_STAMP): Makefile | $(PY)
	@if ! command -v redis-server >/dev/null 2>&1 || ! { command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx; } \
	  || ! command -v dot >/dev/null 2>&1 || ! test -x /usr/bin/chromium; then \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  echo "installing $(SYSTEM_PACKAGES) (Debian packages) for the fleet, browser and picture tests"; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(SYSTEM_PACKAGES) \
	  || { $$SUDO apt-get update -q; $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(SYSTEM_PACKAGES); }; \
	fi
	touch $@

# wrk, the HTTP load generator of `make bench-production`'s fleet leg (Debian's package; not needed by
# `make test`), installed where missing the same way.
$(BENCH_SYSTEM_STAMP): Makefile | $(PY)
	@if ! command -v wrk >/dev/null 2>&1; then \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  echo "installing wrk (Debian package) for the fleet leg of bench-production"; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wrk \
	  || { $$SUDO apt-get update -q; $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends wrk; }; \
	fi
	touch $@

venv: $(PY)

install: $(DEMO_STAMP)

install-test: $(STAMP)

# The refund-desk story over stdio, HTTP (2026-07-28 rounds) and HTTP legacy (mid-call questions),
# then protected by bearer tokens: turned away without one, and refused another customer's order;
# then behind an OAuthProxy: the person signs in once at a headless identity provider (oidc-provider
# on the Node 22 of tests/node, hence npm) and is the customer.
demo: $(DEMO_STAMP) $(CLIENTS_NODE_STAMP)
	$(PY) examples/refund_desk/client.py
	$(PY) examples/refund_desk/client.py --http
	$(PY) examples/refund_desk/client.py --http --legacy
	$(PY) examples/refund_desk/client.py --auth
	$(PY) examples/refund_desk/client.py --proxy
	@echo "The refund desk's receipt view (MCP Apps): run 'make view', then open $(VIEW_URL)"

# The refund desk's receipt view in a local MCP Apps host page (`mcp-resolve dev --apps`), until Ctrl-C.
# From tests/node, whose node_modules has the esbuild and ext-apps that bundle the view's script.
VIEW_PORT ?= 8000
VIEW_URL := http://127.0.0.1:$(VIEW_PORT)/host/?tool=refund_order&args=%7B%22order_id%22%3A%22ORD-7002%22%2C%22reason%22%3A%22too%20small%22%7D&answers=%7B%22full%22%3Atrue%7D
view: $(DEMO_STAMP) $(CLIENTS_NODE_STAMP)
	@echo "Open $(VIEW_URL)"
	cd tests/node && $(abspath $(PY)) -m mcp_resolve dev $(abspath examples/refund_desk/server.py) --apps --port $(VIEW_PORT)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests examples benchmarks docs/pictures
	$(VENV)/bin/ruff format --check src

# Also as Python 3.10, the oldest we support (requires-python), so a 3.11-only import fails here.
typecheck: $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --python-version 3.10

# The documentation site (mkdocs.yml): docs/ and the API reference from the docstrings, into site/.
# --strict, so a broken link, a missing page or an unresolvable reference fails (not --quiet: it
# hides the warnings --strict counts, and the build passes).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

# The pictures in docs/pictures/, made again from the code and drawn with Graphviz's dot; commit
# what changes (tests/docs/test_docs_pictures.py fails while a committed picture is stale).
pictures: $(STAMP) $(SYSTEM_STAMP)
	$(PY) docs/pictures/generate.py

# The whole suite, in PYTEST_WORKERS processes (pytest-xdist), each test module kept on one worker
# (its module-scoped servers start once). PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= 2
pytest: $(STAMP) $(CLIENTS_NODE_STAMP) $(SYSTEM_STAMP)
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

# The unit and in-memory tests: everything not marked slow, so no process, no server, no Node, no
# Redis (tests/conftest.py fails an unmarked test that starts one). Under a minute; `make test` is
# the gate.
test-fast: $(STAMP)
	$(VENV)/bin/pytest -q -n 2 -m "not slow"

# The official MCP conformance harness against examples/everything, both wires.
conformance: $(STAMP) $(NODE_STAMP)
	$(PY) conformance/run.py

# The same harness's --suite all legs at `mcp-resolve proxy` in front of the everything server.
conformance-proxy: $(STAMP) $(NODE_STAMP)
	$(PY) conformance/run.py --proxied

# About fourteen minutes; prints every figure and a verdict per target (benchmarks/README.md).
# Pass options with BENCH_ARGS, e.g. `make bench BENCH_ARGS="--transports http --reps 1"`.
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH_ARGS)
	$(PY) benchmarks/dpop.py
	$(PY) benchmarks/proxy.py

# The production legs (about ten minutes, needs redis-server, nginx and wrk): a JWT on every request,
# Redis stores, tracing, both event loops and both resolver styles, each beside the official SDK and
# the bare app; idle streams; a fleet behind nginx driven by wrk.
# Options with PRODUCTION_ARGS, e.g. `make bench-production PRODUCTION_ARGS="--legs jwt redis"`.
bench-production: $(STAMP) $(SYSTEM_STAMP) $(BENCH_SYSTEM_STAMP)
	$(PY) benchmarks/production.py $(PRODUCTION_ARGS)

# Mixed refund load with dropped clients, in two legs of 90 s (about four minutes in all): two HTTP
# workers, one killed and restarted; then nginx, three workers and Redis, with workers SIGKILLed and
# Redis stopped and paused. Fails on a lost or doubled refund. Not part of `make test`.
# Pass options with SOAK_ARGS, e.g. `make soak SOAK_ARGS="--fleet --seconds 60"`.
soak: $(STAMP) $(SYSTEM_STAMP)
	$(PY) benchmarks/soak.py $(SOAK_ARGS)

# The gate: its legs are independent, so they run side by side (the longest, pytest, sets the time),
# and each leg's output is printed whole when that leg ends; a failed leg ends with make's
# `*** [Makefile:NN: leg] Error` line under its own log. Every leg runs to its end (--keep-going).
TEST_LEGS := lint typecheck docs pytest conformance conformance-proxy
test: $(STAMP)
	@echo "make test: $(TEST_LEGS) side by side; each leg's output appears when it ends"
	@$(MAKE) --no-print-directory --jobs=$(words $(TEST_LEGS)) --keep-going --output-sync=target $(TEST_LEGS)

clean:
	rm -rf $(VENV) build dist site *.egg-info conformance/node_modules
