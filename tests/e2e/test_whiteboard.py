"""The design whiteboard in a real Chromium: a Mermaid panel rendered live beside the text, and a follow-up
about the part the diagram leaves out.

A small Blocks app wired the way the interview panel is (a text box, a Markdown panel re-rendered on every
change, a "Send diagram" button whose handler compares the diagram with the question's rubric), so the
rendering and the follow-up are checked in a browser against the real functions and the real rubric.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interviewer.content import Question, load_question
from interviewer.errors import InputError
from interviewer.whiteboard import compare, next_question, parse, render_markdown
from tests.support.app_process import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts" / "e2e"
QUESTION = REPO / "rubrics" / "system-design" / "design.fraud-scoring.yaml"
MISSING = "rules engine"
INJECTION = "Monitoring <script>alert('x')</script>"


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


def _build(question: Question) -> Any:
    import gradio as gr

    def send(text: str, asked: list[str]) -> tuple[str, str, list[str]]:
        try:
            diagram = parse(text)
        except InputError as e:
            raise gr.Error(str(e)) from e
        review = compare(diagram, question)
        follow = next_question(review, question, asked)
        if follow is None:
            return "Nothing more to ask about the diagram.", "", asked
        missing = "\n".join(f"- missing: {m}" for m in review.missing)
        return follow.text, missing, [*asked, follow.about]

    with gr.Blocks() as demo:
        asked = gr.State([])
        with gr.Row():
            text = gr.Textbox(label="Your design (Mermaid flowchart)", lines=12, elem_id="diagram")
            board = gr.Markdown(render_markdown(""), elem_id="board")
        button = gr.Button("Send diagram", elem_id="send-diagram")
        follow_up = gr.Markdown(elem_id="follow-up")
        review = gr.Markdown(elem_id="board-review")
        text.change(render_markdown, text, board)
        button.click(send, [text, asked], [follow_up, review, asked])
    return demo


@pytest.fixture(scope="module")
def question() -> Question:
    return load_question(QUESTION)


@pytest.fixture(scope="module")
def app(question: Question) -> Iterator[Any]:
    demo = _build(question)
    demo.queue()
    demo.launch(
        server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, ssr_mode=False
    )
    try:
        yield demo
    finally:
        demo.close()


def test_a_drawn_diagram_renders_and_the_follow_up_asks_about_the_missing_part(
    app: Any, question: Question
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: run scripts/system-deps.sh (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    expected = next(c for c in question.components if c.name == MISSING)
    assert [c.ask for c in question.components].count(expected.ask) == 1  # the text identifies the component

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page()
            requests: list[str] = []
            dialogs: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(app.local_url)
            expect(page.locator("#board")).to_contain_text("Write your design", timeout=30_000)

            text, boxes = diagram_without(question, MISSING)
            page.locator("#diagram textarea").fill(text)
            # Drawn live from the text: Mermaid's SVG, with the candidate's labels as text in it.
            svg = page.locator("#board svg").first
            expect(svg).to_be_visible(timeout=30_000)
            expect(page.locator("#board")).to_contain_text("model server")
            expect(page.locator("#board")).to_contain_text("async decision log")
            expect(page.locator("#board g.node")).to_have_count(boxes)  # one box per node in the text
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "whiteboard-drawn.png"), full_page=True)

            page.get_by_role("button", name="Send diagram").click()
            follow = page.locator("#follow-up")
            expect(follow).to_contain_text(expected.ask, timeout=30_000)
            expect(page.locator("#board-review")).to_contain_text(f"missing: {MISSING}")
            page.screenshot(path=str(ARTIFACTS / "whiteboard-follow-up.png"), full_page=True)

            # The next send asks about something else: a follow-up is not repeated.
            page.get_by_role("button", name="Send diagram").click()
            expect(follow).not_to_contain_text(expected.ask, timeout=30_000)

            # Editing the text redraws the panel; unreadable text says what to fix instead of drawing.
            page.locator("#diagram textarea").fill("flowchart LR\n  a[Gateway] -> b[Scorer]")
            expect(page.locator("#board")).to_contain_text("write --> for an arrow", timeout=30_000)
            expect(page.locator("#board svg")).to_have_count(0)

            assert dialogs == []  # the <script> in a label never ran
            mermaid = [u for u in requests if "mermaid" in u]
            assert mermaid, "the Mermaid renderer was never loaded"
            assert all(u.startswith(app.local_url) for u in mermaid), mermaid  # served by the app, not a CDN
        finally:
            browser.close()
