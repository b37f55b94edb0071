"""The live microphone in a real browser: how much of a spoken answer reaches the server, and what is sent.

Run: ``.venv/bin/python benchmarks/bench_speech_browser.py [--stream-seconds 30]``

Chromium with a fake microphone that plays a piper-voiced answer (then silence) records into the app's
streaming microphone with "send spoken answers at once" on, against a scripted model. Printed: the seconds of
audio the page's stream events delivered to the server against the seconds recorded (Gradio drops a chunk that
arrives while the previous stream event is still in flight), the transcript that was sent, and whether the
follow-up came and was voiced. Load matters a great deal here: state ``uptime`` beside the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interviewer.config import load_settings
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.runtime import ModelChoice, Runtime
from interviewer.speech import PiperTTS, load_audio
from tests.conftest import FIXTURE_CONTENT
from ui import app as ui_app

ANSWER = "The speedup is about four point seven times because the serial part limits it."
FOLLOW_UP = "Which assumption about perfect scaling does that rely on, in your view?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--stream-seconds", type=float, default=120.0, help="how long to wait for the reply at most"
    )
    args = ap.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    work = Path(tempfile.mkdtemp(prefix="bench-speech-browser-"))
    speech = load_audio(
        PiperTTS(noise_scale=0.0, noise_w_scale=0.0).synthesize(ANSWER, work / "a.wav")
    ).samples
    mic = np.concatenate([np.zeros(8000, np.float32), speech, np.zeros(16000 * 20, np.float32)])
    with wave.open(str(work / "mic.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((mic * 32767).astype("<i2").tobytes())

    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=work / "data", retrieval=False))
    rt.set_model(
        ChatPort(ScriptedChatModel().queue(FOLLOW_UP), name="scripted"),
        ModelChoice("http://127.0.0.1:1/v1", "s", "scripted", False),
    )
    received: list[float] = []
    apps: list[ui_app.App] = []
    original = ui_app.App.listen

    def counting(self, chunk, *a, **k):  # type: ignore[no-untyped-def]
        if chunk is not None:
            received.append(len(chunk[1]) / chunk[0])
            apps[:] = [self]
        return original(self, chunk, *a, **k)

    ui_app.App.listen = counting  # type: ignore[method-assign]
    demo = ui_app.build(rt)
    demo.queue()
    demo.launch(
        server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, ssr_mode=False
    )
    from playwright.sync_api import sync_playwright

    print(f"# live microphone in Chromium (load average at start {os.getloadavg()[0]:.1f})")
    print("$ .venv/bin/python benchmarks/bench_speech_browser.py " + " ".join(sys.argv[1:]))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium,
                args=[
                    "--use-fake-ui-for-media-stream",
                    "--use-fake-device-for-media-stream",
                    f"--use-file-for-fake-audio-capture={work / 'mic.wav'}",
                    "--autoplay-policy=no-user-gesture-required",
                ],
            )
            page = browser.new_context(permissions=["microphone"]).new_page()
            page.goto(demo.local_url)
            page.locator("#start").click()
            page.locator("#chat").get_by_text("What speedup").wait_for(timeout=60_000)
            page.locator("#auto-send input").check()
            page.locator("#voice-on input").check()
            page.locator("#mic button").filter(has_text="Record").first.click()
            started = time.perf_counter()
            replied = None
            while time.perf_counter() - started < args.stream_seconds:
                page.wait_for_timeout(250)
                if (
                    "why, level 1" in page.locator("#status").inner_text()
                ):  # the spoken answer went, a reply came
                    replied = time.perf_counter() - started
                    break
            recorded = time.perf_counter() - started
            page.wait_for_timeout(3000)
            played = page.evaluate("() => (window.__interviewerVoice || {}).played || []")
            chat = page.locator("#chat").inner_text()
            box = page.locator("#answer textarea").input_value()
            browser.close()
    finally:
        demo.close()
        rt.close()
    for sid, listening in apps[0]._spoken.items() if apps else []:
        bg = listening.answer
        print(
            f"still listening to {sid[:8]}: heard {bg.seconds:.1f} s, error {bg.error}, transcript {bg.feed.__self__._transcript!r}"
        )
    lines = [line.strip() for line in chat.splitlines() if line.strip()]
    print(
        f"recorded {recorded:.1f} s; audio that reached the server: {sum(received):.2f} s in {len(received)} chunks"
    )
    print(
        f"follow-up shown: {f'after {replied:.1f} s' if replied else 'no'}; voice pieces played: {len(played)}"
    )
    print(f"chat at the end (last 2 lines): {lines[-2:]}")
    print(f"answer box at the end: {box!r}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
