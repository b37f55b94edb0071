"""Candidate text never makes the browser fetch anything: Markdown images and raw HTML in an answer show as
text in the chat (issue #15, item 10), checked in a real Chromium against the real app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM
from tests.test_privacy import _Live

PIXEL = "http://127.0.0.1:9/pixel.png"
ANSWER = f"Amdahl caps it. ![tracking pixel]({PIXEL}) <img src={PIXEL}?raw> ![ref][1]\n\n[1]: {PIXEL}?ref"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[_Live]:
    app = _Live(tmp_path)
    try:
        yield app
    finally:
        app.close()


def test_images_in_an_answer_are_never_fetched(live: _Live) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: run scripts/system-deps.sh (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            fetched: list[str] = []
            page.on("request", lambda r: fetched.append(r.url) if "pixel" in r.url else None)
            page.goto(live.demo.local_url)
            page.locator("#start").click()
            expect(page.locator("#status")).to_contain_text("main question", timeout=60_000)
            page.locator("#answer textarea").fill(ANSWER)
            page.locator("#send").click()
            expect(page.locator("#status")).to_contain_text("why, level 1", timeout=60_000)
            user_msg = page.locator("#chat .message.user").first
            expect(user_msg).to_contain_text("![tracking pixel]")  # shown as typed ...
            expect(user_msg).to_contain_text("<img src=")
            assert user_msg.locator("img").count() == 0  # ... never rendered
            # Time for any image the page would load (the 1 s timer keeps the network from going idle).
            page.wait_for_timeout(1500)
            assert fetched == []
        finally:
            browser.close()
