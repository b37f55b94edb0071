"""The design whiteboard in a real Chromium against the real app: ``interviewer serve`` with a stand-in model.

A system design round opens a question with expected components; the candidate draws every one of them but
one, the board renders the Mermaid live (an SVG drawn by the Mermaid library the app serves itself), "Send
diagram" puts the interviewer's authored question on the missing part in the chat, and the report lists it as
``missing: <name>``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.content import Question, load_question
from interviewer.llm.standin import StandinServer
from tests.support.app_process import REPO, AppProcess

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts" / "e2e"
DESIGN = REPO / "rubrics" / "system-design"
INJECTION = "Monitoring <script>alert('x')</script>"
SLOW = 180_000  # ms: the report waits for any scoring still running on a busy machine


def diagram_without(question: Question, missing: str) -> tuple[str, int]:
    """A design drawn from the rubric itself, minus one component: one box per component, labelled with its
    name (the content tests make sure a name reads as that component alone), chained so that every expected
    flow has a path. Returns the Mermaid text and the number of boxes."""
    names = [c.name for c in question.components if c.name != missing]
    lines = ["flowchart LR"]
    for i, name in enumerate(names):
        label = INJECTION if name == "monitoring" else name  # a label that tries to run in the page
        lines.append(f'  c{i}["{label}"]')
    lines += [f"  c{i} --> c{i + 1}" for i in range(len(names) - 1)]
    return "\n".join(lines) + "\n", len(names)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[*`_]", "", text).split())


def open_question(chat_text: str) -> Question:
    """The system design question the chat opened with (the round draws one at random)."""
    shown = _words(chat_text)
    found = [q for p in sorted(DESIGN.glob("*.yaml")) if _words((q := load_question(p)).question) in shown]
    assert len(found) == 1, f"the opening names {len(found)} bank questions: {chat_text[:200]!r}"
    return found[0]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    with StandinServer() as srv:
        proc = AppProcess(
            tmp_path_factory.mktemp("whiteboard-data"),
            srv.base_url,
            # This checkout's package, whichever one the virtual environment was installed from.
            extra_env={
                "INTERVIEWER_RETRIEVAL": "false",
                "INTERVIEWER_LISTEN": "false",
                "PYTHONPATH": str(REPO),
            },
        )
        proc.start()
        try:
            yield proc
        finally:
            proc.stop()
            print("\n".join(proc.output().splitlines()[-80:]))  # pytest shows it when a test here failed


def test_a_drawn_diagram_renders_and_the_follow_up_asks_about_the_missing_part(app: AppProcess) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: run scripts/system-deps.sh (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            requests: list[str] = []
            dialogs: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(app.url)
            expect(page.locator("#start")).to_be_visible(timeout=30_000)
            expect(page.locator("#diagram")).to_be_hidden()  # no whiteboard before a design question

            page.locator("#round input").click()
            page.get_by_role("option", name="ML system design").click()
            page.locator("#start").click()
            expect(page.locator("#status")).to_contain_text("ML system design", timeout=30_000)
            board = page.locator("#board")
            expect(board).to_contain_text("Write your design", timeout=30_000)
            question = open_question(page.locator('#chat [data-testid="bot"]').first.inner_text())
            missing = question.components[len(question.components) // 2]
            assert [c.ask for c in question.components].count(missing.ask) == 1  # the ask names one part

            text, boxes = diagram_without(question, missing.name)
            page.locator("#diagram textarea").fill(text)
            svg = page.locator("#board svg").first
            expect(svg).to_be_visible(timeout=30_000)
            expect(page.locator("#board g.node")).to_have_count(boxes)  # one box per node in the text
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "whiteboard-drawn.png"), full_page=True)

            bots = page.locator('#chat [data-testid="bot"]').count()
            page.locator("#send-diagram").click()
            expect(page.locator('#chat [data-testid="bot"]')).to_have_count(bots + 1, timeout=30_000)
            expect(page.locator('#chat [data-testid="bot"]').last).to_contain_text(
                _words(missing.ask), timeout=30_000
            )
            expect(page.locator("#status")).to_contain_text("main question")  # not a why level
            page.screenshot(path=str(ARTIFACTS / "whiteboard-follow-up.png"), full_page=True)

            page.get_by_role("tab", name="Report").click()
            page.locator("#show-report").click()
            report = page.locator("#report")
            expect(report).to_contain_text("Feedback report", timeout=SLOW)
            expect(report).to_contain_text(f"missing: {missing.name}")
            page.screenshot(path=str(ARTIFACTS / "whiteboard-report.png"), full_page=True)

            assert dialogs == []  # a <script> in a label never ran
            mermaid = [u for u in requests if "mermaid" in u]
            assert mermaid, "the Mermaid renderer was never loaded"
            assert all(u.startswith(app.url.rstrip("/")) for u in mermaid), mermaid  # the app's, not a CDN
        finally:
            browser.close()
