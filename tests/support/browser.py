"""Debian's Chromium, driven by Playwright, for the web console's browser tests (marker
``browser``): one browser a module, a fresh context (no cookies) a page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
# Playwright fails an expectation not met within 5 s: on a busy machine a page of many AWS calls can
# take that long. The verdict is what the page shows; this bound is only ever reached by a hang.
HANG_MS = 60_000
expect.set_options(timeout=HANG_MS)


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"no browser at {CHROMIUM}: install Debian's with `make browser` (as root; otherwise "
            "sudo apt-get install -y chromium); make test does it first"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        launched.close()


@contextmanager
def fresh_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(HANG_MS)
    yield context.new_page()
    context.close()
