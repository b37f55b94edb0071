"""A real browser against the real app: ``interviewer serve`` in a subprocess, a stand-in OpenAI server, Chromium.

One candidate's path, with a screenshot per step in ``test-artifacts/e2e/``: pick the ML coding round, answer,
get both why-levels from the model, run the coding task's hidden tests with a wrong then the reference solution,
end the round, open the report and download it as HTML. The answer carries ``<script>`` and ``<img onerror>``:
it must show as text in the chat, the report and the downloaded file, and never run.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.llm.standin import StandinServer
from tests.support.app_process import REPO, AppProcess

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts" / "e2e"
XSS = '<script>alert("xss-script")</script> <img src=x onerror="alert(\'xss-img\')">'
ANSWER = f"I would vectorise it with a sliding window and one einsum. {XSS}"
SLOW = 120_000  # ms: the first scored answer loads the embedding model on a busy 2-core machine


@pytest.fixture(scope="module")
def standin() -> Iterator[StandinServer]:
    with StandinServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def app(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    # The Chroma index would take minutes to build on first start; retrieval has its own tests.
    proc = AppProcess(
        tmp_path_factory.mktemp("e2e-data"),
        standin.base_url,
        # Scripted placeholder answers: the authored whys, in order (the listening interviewer is tested in
        # tests/test_listen.py and tests/test_ui.py).
        extra_env={"INTERVIEWER_RETRIEVAL": "false", "INTERVIEWER_LISTEN": "false"},
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
        print("\n".join(proc.output().splitlines()[-80:]))  # pytest shows it when a test here failed


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: run scripts/system-deps.sh (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield b
        finally:
            b.close()


# The stand-in model's follow-up, complete: streamed text is checked only once its closing "?" has arrived.
FOLLOW_UP = re.compile(r"Walk me through this: .+\?\s*$", re.S)


def _shot(page: object, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def _code_task(page: object) -> str | None:
    """The task id shown in the code panel, or None when the open question has no coding task."""
    panel = page.locator("#code-statement")  # type: ignore[attr-defined]
    if not panel.is_visible():
        return None
    m = re.search(r"\(([a-z0-9-]+)\)", panel.inner_text())
    return m.group(1) if m else None


def _set_code(page: object, code: str) -> None:
    editor = page.locator("#code .cm-content")  # type: ignore[attr-defined]
    editor.click()
    page.keyboard.press("Control+A")  # type: ignore[attr-defined]
    page.keyboard.press("Delete")  # type: ignore[attr-defined]
    page.keyboard.insert_text(code)  # type: ignore[attr-defined]  # no key events: no auto-indent


def _expect_status(page: object, text: str, timeout: int) -> None:
    """Wait for ``text`` in the status line; on failure, say what the page's toasts said meanwhile."""
    status = page.locator("#status")  # type: ignore[attr-defined]
    seen: list[str] = []
    deadline = time.monotonic() + timeout / 1000
    while time.monotonic() < deadline:
        if text in status.inner_text():
            return
        for toast in page.locator(".toast-body").all_inner_texts():  # type: ignore[attr-defined]
            if toast not in seen:  # toasts close themselves after a few seconds: note them now
                seen.append(toast)
        page.wait_for_timeout(200)  # type: ignore[attr-defined]
    raise AssertionError(f"status never showed {text!r}; it shows {status.inner_text()!r}; toasts: {seen}")


def _send(page: object, text: str, expect_status: str, timeout: int = 60_000) -> None:
    page.locator("#answer textarea").fill(text)  # type: ignore[attr-defined]
    page.locator("#send").click()  # type: ignore[attr-defined]
    _expect_status(page, expect_status, timeout)


def test_candidate_round_in_a_real_browser(app: AppProcess, standin: StandinServer, browser: object) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(accept_downloads=True)  # type: ignore[attr-defined]
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(app.url)
    expect(page.locator("#start")).to_be_visible(timeout=30_000)
    _shot(page, "01-page")

    # Pick the ML coding round; the engine draws questions at random, so start again until the first
    # question carries a sandboxed coding task (8 of its 12 questions do).
    page.locator("#round input").click()
    page.get_by_role("option", name="ML coding").click()
    task = None
    for _attempt in range(12):
        page.locator("#start").click()
        expect(page.locator("#status")).to_contain_text("ML coding", timeout=30_000)
        expect(page.locator("#status")).to_contain_text("main question", timeout=30_000)
        # The code panel is the last output of /start and can trail the status on a loaded machine: look for
        # it for a few seconds before taking the question for one without a coding task.
        for _poll in range(25):
            task = _code_task(page)
            if task:
                break
            page.wait_for_timeout(200)
        if task:
            break
    assert task, "no coding question came up in 12 starts of the ML coding round"
    _shot(page, "02-round-started")

    # The answer, with markup in it, then the level-1 follow-up streamed from the model.
    bots_before = page.locator('#chat [data-testid="bot"]').count()
    _send(page, ANSWER, "why, level 1")
    user_msg = page.locator('#chat [data-testid="user"]').last
    expect(user_msg).to_contain_text('<script>alert("xss-script")</script>')
    expect(user_msg).to_contain_text("<img src=x onerror=")
    expect(page.locator('#chat [data-testid="bot"]')).to_have_count(bots_before + 1)
    last_bot = page.locator('#chat [data-testid="bot"]').last
    expect(last_bot).to_have_text(FOLLOW_UP)  # the model's whole follow-up (not the fallback), not a prefix
    level1 = last_bot.inner_text()
    _shot(page, "03-why-level-1")

    # The coding task: the starter (which raises NotImplementedError) fails, the reference passes.
    expect(page.locator("#code .cm-content")).to_be_visible()
    starter = (REPO / "rubrics" / "coding" / task / "starter.py").read_text()
    _set_code(page, starter)
    page.locator("#run-tests").click()
    expect(page.locator("#verdict")).to_contain_text("some tests failed", timeout=90_000)
    _shot(page, "04-tests-fail")
    _set_code(page, (REPO / "rubrics" / "coding" / task / "reference.py").read_text())
    page.locator("#run-tests").click()
    expect(page.locator("#verdict")).to_contain_text("all tests passed", timeout=90_000)
    _shot(page, "05-tests-pass")

    _send(page, "Memory: the window view is free but the einsum materialises the product.", "why, level 2")
    expect(page.locator('#chat [data-testid="bot"]')).to_have_count(bots_before + 2)
    # After "Run tests" the next follow-up is the one the last run led to, written from the code-follow-up
    # prompt (its verdict and the code), not the why prompt.
    expect(last_bot).to_have_text(re.compile(r".+\?\s*$", re.S))
    expect(last_bot).not_to_have_text(FOLLOW_UP)
    assert page.locator('#chat [data-testid="bot"]').last.inner_text() != level1
    _shot(page, "06-why-level-2")

    # The next question shows at once; the last answer is scored behind it (the first score may load the
    # embedding model), and End round waits for that scoring before it ends the round.
    _send(page, "A direct method wins when the kernel is large and memory is tight.", "Question 2/", SLOW)
    _shot(page, "07-next-question")
    page.locator("#end").click()
    _expect_status(page, "Round ended", SLOW)
    _shot(page, "08-round-ended")

    # The report, on screen and downloaded as HTML.
    page.get_by_role("tab", name="Report").click()
    page.locator("#show-report").click()
    report = page.locator("#report")
    expect(report).to_contain_text("Feedback report", timeout=SLOW)
    expect(report).to_contain_text("hidden tests: all passed")  # the sandbox verdict is in the report
    expect(report).to_contain_text("Test runs")  # each run, with the follow-up it led to
    expect(report).to_contain_text("passed (all)")  # the second run
    _shot(page, "09-report")
    link = page.locator('#report-files a[href*=".html"]').first
    with page.expect_download() as dl:
        link.click()
    saved = ARTIFACTS / "report.html"
    dl.value.save_as(saved)
    html = saved.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(" in html and "<script>alert(" not in html
    assert "<img src=x onerror" not in html and "&lt;img src=x onerror=" in html
    assert "Feedback report" in html

    # Open the exported report itself: the markup is text there too, and nothing runs.
    report_page = context.new_page()
    report_page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    report_page.goto(saved.as_uri())
    expect(report_page.locator("body")).to_contain_text('<script>alert("xss-script")</script>')
    report_page.wait_for_timeout(500)
    _shot(report_page, "10-downloaded-report")

    assert dialogs == [], f"candidate markup ran in the browser: {dialogs}"
    assert page.evaluate("document.querySelectorAll('#chat img[src=\"x\"]').length") == 0
    assert standin.stats.requests >= 2  # both follow-ups came over the real OpenAI client path
    context.close()


def test_gpu_kernel_round_racy_then_right_in_a_real_browser(app: AppProcess, browser: object) -> None:
    """The GPU kernels round in the page: a racy kernel fails with the race named, the reference passes."""
    from playwright.sync_api import expect

    from tests.checker.test_gpu_tasks import RACY

    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(app.url)
    expect(page.locator("#start")).to_be_visible(timeout=30_000)
    page.locator("#round input").click()
    page.get_by_role("option", name="GPU kernels").click()
    task = None
    for _attempt in range(40):  # 6 of the round's 22 questions carry a kernel task; draws are random
        page.locator("#start").click()
        expect(page.locator("#status")).to_contain_text("GPU kernels", timeout=30_000)
        expect(page.locator("#status")).to_contain_text("main question", timeout=30_000)
        page.wait_for_timeout(300)
        task = _code_task(page)
        if task:
            break
    assert task in RACY, f"no kernel task came up in 40 starts of the GPU kernels round (got {task})"
    starter = page.locator("#code .cm-content")
    expect(starter).to_contain_text("@cuda.jit")  # the starter shows the kernel signature and a launch
    _shot(page, "gpu-01-task")

    ref = (REPO / "rubrics" / "coding" / task / "reference.py").read_text()
    old, new = RACY[task]
    _set_code(page, ref.replace(old, new, 1))
    page.locator("#run-tests").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("some tests failed", timeout=120_000)
    expect(verdict).to_contain_text("race on shared array")
    expect(verdict).to_contain_text("no barrier in between")
    _shot(page, "gpu-02-racy-fails")

    _set_code(page, ref)
    page.locator("#run-tests").click()
    expect(verdict).to_contain_text("all tests passed", timeout=120_000)
    expect(verdict).to_contain_text("no data races")
    _shot(page, "gpu-03-right-passes")
    context.close()
