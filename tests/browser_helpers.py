"""A real browser for tests: Debian's Chromium, headless, driven by Playwright for Python.

Playwright's own browser download is not used (`make` installs Debian's `chromium` package and
Playwright from PyPI); `chromium_browser()` launches /usr/bin/chromium through `executable_path`,
with a fresh profile and the background traffic (updates, sync, QUIC probes) turned off, so a test
talks to nothing but its own loopback servers. A machine without Chromium or Playwright skips the
browser tests with the reason; `make pytest` installs both, so the gate runs them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium_browser", "new_context", "require_chromium"]

CHROMIUM = os.environ.get("MCP_RESOLVE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def require_chromium() -> None:
    """Skip the calling test unless Chromium and Playwright for Python are installed."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(
            f"Chromium is not installed at {CHROMIUM}: `make pytest` installs Debian's chromium package"
        )
    try:
        import playwright.async_api  # noqa: F401
    except ModuleNotFoundError:
        pytest.skip("Playwright for Python is not installed: pip install -e '.[test]'")


@asynccontextmanager
async def chromium_browser() -> AsyncIterator[Browser]:
    """A headless Chromium with a fresh profile, closed (and the profile removed) when the block ends.

    Each `browser.new_context()` is a separate browser as far as a site can tell: its own cookies.
    """
    require_chromium()
    from playwright.async_api import async_playwright

    # `launch` gives the browser a fresh temporary profile (user-data dir) and removes it on close.
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def new_context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh context of `browser` (its own cookies and storage), closed when the block ends."""
    context = await browser.new_context()
    try:
        yield context
    finally:
        await context.close()
