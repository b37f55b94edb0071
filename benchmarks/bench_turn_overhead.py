"""Turn overhead: the candidate's submit to the first streamed token of the follow-up, minus the model's own time.

The model is the stand-in OpenAI-compatible server (interviewer/llm/standin.py) with a fixed first-token delay.
For every measured follow-up the exact prompt the app sent is replayed straight to the same server with the bare
OpenAI client, right after, and its first-token time is subtracted: the machine's noise cancels, what is left is
what the app adds (storing the answer, building the prompt, LangChain and the client, Gradio's queue and SSE).

- engine: Interview.submit + Interview.advance in this process (retrieval off: its latency is bench_retrieval's)
- UI:     gradio_client streaming /send against ``interviewer serve`` (a subprocess, started as the README does)
- cold start of ``interviewer serve``: spawn to the page answering, and to a first /start answered
- peak RSS (VmHWM over the process tree) of the app, and of the embedded model server (SmolLM2, if installed)

Targets: overhead < 50 ms median at the engine, < 100 ms through the UI server.
Run: .venv/bin/python benchmarks/bench_turn_overhead.py [--turns 20] [--ui-questions 4] [--no-embedded]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import openai  # noqa: E402

from interviewer.config import load_settings  # noqa: E402
from interviewer.content import Bank, load_bank  # noqa: E402
from interviewer.llm.client import ChatPort, build_port  # noqa: E402
from interviewer.llm.standin import Behaviour, StandinServer  # noqa: E402
from interviewer.session import Interview, Ports  # noqa: E402
from interviewer.store import SessionStore  # noqa: E402
from tests.support.app_process import AppProcess, free_port, tree_rss_mb  # noqa: E402
from tests.support.candidates import pct, text_of  # noqa: E402

FIRST_TOKEN_DELAY = 0.08  # a fast GPU server's first token; subtracted anyway


def raw_first_token(base_url: str, messages: list[dict[str, Any]]) -> float:
    """Seconds from request to the first content chunk, bare OpenAI client, same server, same prompt."""
    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    t = time.perf_counter()
    stream = client.chat.completions.create(model="standin", messages=messages, stream=True, max_tokens=160)
    try:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                return time.perf_counter() - t
    finally:
        stream.close()
    raise RuntimeError("no content streamed")


def _as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[m.type], "content": m.content} for m in messages]


def engine_over(srv: StandinServer) -> tuple[Bank, ChatPort]:
    """The bank and a model port on the stand-in server, as the engine benchmarks use them."""
    settings = load_settings(base_url=srv.base_url)
    return load_bank(settings.content_dir), build_port(settings, base_url=srv.base_url, model="standin")


def send_and_stream(it: Interview, answer: str) -> tuple[float, list[tuple[float, str]]]:
    """Send ``answer`` and stream the interviewer's next message to its end: seconds from Send to the answer
    stored (read by the listener), and each streamed snapshot of the next message (seconds from Send, text)."""
    t = time.perf_counter()
    it.submit(answer)
    stored = time.perf_counter() - t
    return stored, [(time.perf_counter() - t, text) for text in it.advance()]


def send_to_first_token(it: Interview, answer: str) -> tuple[float, float]:
    """Seconds from Send to the answer stored, and to the first streamed text of the interviewer's next message."""
    stored, snapshots = send_and_stream(it, answer)
    return stored, snapshots[0][0] if snapshots else stored


def engine_overhead(srv: StandinServer, turns: int) -> tuple[list[float], int]:
    bank, port = engine_over(srv)
    out: list[float] = []
    rejected = 0
    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(Path(d) / "s.sqlite3")
        ports = Ports(bank=bank, store=store, model=port, owner="bench")
        while len(out) < turns:
            it = Interview.start(ports, ["phone-screen"], per_round=3)
            it.advance_all()
            for level in (1, 2):
                _, first = send_to_first_token(
                    it,
                    f"Answer at level {level - 1}: the serial part and memory bandwidth bound the speedup.",
                )
                rejected += it.state.turns[-1].meta.get("source") != "model"  # timed all the same
                q = it.question
                assert q is not None
                # Replay the prompt the engine just sent (rebuilt the same way, before the follow-up was asked).
                msgs = srv.stats.prompts[-1]
                raw = raw_first_token(srv.base_url, msgs)
                out.append(first - raw)
        store.close()
    return out, rejected


def ui_overhead(srv: StandinServer, questions: int) -> tuple[list[float], dict[str, float]]:
    from gradio_client import Client

    extra = {"INTERVIEWER_RETRIEVAL": "false"}  # no minutes-long index build
    with tempfile.TemporaryDirectory() as d:
        app = AppProcess(Path(d), srv.base_url, extra_env=extra)
        app.start(timeout=300)
        figures = {"cold start to page (s)": app.ready_s}
        try:
            client = Client(app.url, verbose=False)
            t = time.perf_counter()
            _chat, owner, _status, *_ = client.predict(
                "phone-screen", questions, False, None, api_name="/start"
            )
            figures["cold start to first /start answered (s)"] = time.perf_counter() - app.started_at
            figures["first /start (s)"] = time.perf_counter() - t
            out: list[float] = []
            for _q in range(questions):
                for level in (1, 2):
                    n_prompts = len(srv.stats.prompts)
                    answer = f"UI answer, level {level - 1}: bandwidth bound."
                    t = time.perf_counter()
                    job = client.submit(answer, owner, api_name="/send")
                    first = None
                    for update in job:
                        chat = update[0]
                        # The first streamed token: any follow-up text right after the answer just sent.
                        if (
                            len(chat) >= 2
                            and chat[-1]["role"] == "assistant"
                            and text_of(chat[-1]).strip()
                            and text_of(chat[-2]) == answer
                        ):
                            first = time.perf_counter() - t
                            break
                    job.result()
                    if first is None or len(srv.stats.prompts) == n_prompts:
                        raise RuntimeError(f"no model follow-up streamed (status: {job.result()[2]})")
                    out.append(first - raw_first_token(srv.base_url, srv.stats.prompts[-1]))
                client.predict(
                    "Level 2 answer: measure first.", owner, api_name="/send"
                )  # scored; next question
            figures["app peak RSS (MiB)"] = app.rss_mb(peak=True)
            figures["app RSS now (MiB)"] = app.rss_mb()
        finally:
            app.stop()
    return out, figures


def gradio_floor(n: int = 15) -> list[float]:
    """What Gradio and gradio_client alone add: a bare two-yield generator, streamed the same way (seconds)."""
    import gradio as gr
    from gradio_client import Client

    pause = FIRST_TOKEN_DELAY

    def gen(x: str) -> Any:
        yield "a"
        time.sleep(pause)  # stands in for the model's first token
        yield "b"

    with gr.Blocks() as demo:
        box, out, button = gr.Textbox(), gr.Textbox(), gr.Button()
        button.click(gen, box, out, api_name="gen")
    demo.queue(default_concurrency_limit=16)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(demo.local_url, verbose=False)
        out_s: list[float] = []
        for _ in range(n + 3):
            t = time.perf_counter()
            first = None
            job = client.submit("x", api_name="/gen")
            for update in job:
                if update == "b" and first is None:
                    first = time.perf_counter() - t
            job.result()
            out_s.append((first or 0.0) - pause)
        return out_s[3:]  # the first requests warm up
    finally:
        demo.close()


def embedded_rss() -> str:
    """Peak RSS of the embedded model server (SmolLM2-135M, the CI model) after one reply."""
    try:
        from interviewer.llm.embedded import EmbeddedServer

        with tempfile.TemporaryDirectory() as d:
            settings = load_settings(embedded_model="smollm2-135m", data_dir=d)
            server = EmbeddedServer(settings)
            url = server.start()
            with contextlib.suppress(Exception):
                raw_first_token(url, [{"role": "user", "content": "Say hello in five words."}])
            pid = server.pid
            rss = tree_rss_mb(pid, peak=True) if pid else 0.0
            server.stop()
            return f"{rss:.0f}"
    except Exception as e:
        return f"n/a ({type(e).__name__}: {str(e)[:80]})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=20, help="engine follow-ups to measure")
    ap.add_argument("--ui-questions", type=int, default=4, help="UI questions (two follow-ups each)")
    ap.add_argument("--no-embedded", action="store_true", help="skip the embedded model's RSS")
    args = ap.parse_args()
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    rows: list[tuple[str, str, str]] = []
    with StandinServer(behaviour=Behaviour(first_token_delay=FIRST_TOKEN_DELAY)) as srv:
        eng, rejected = engine_overhead(srv, args.turns)
        ui, figures = ui_overhead(srv, args.ui_questions)
    ms = [x * 1000 for x in eng]
    rows.append(("engine overhead p50 (ms)", f"{statistics.median(ms):.1f}", "< 50"))
    rows.append(("engine overhead p95 (ms)", f"{pct(ms, 95):.1f}", ""))
    ms = [x * 1000 for x in ui]
    rows.append(("UI overhead p50 (ms)", f"{statistics.median(ms):.1f}", "< 100"))
    rows.append(("UI overhead p95 (ms)", f"{pct(ms, 95):.1f}", ""))
    floor = statistics.median(gradio_floor()) * 1000
    rows.append(("bare Gradio generator via gradio_client p50 (ms)", f"{floor:.1f}", ""))
    rows.append(("UI overhead / bare Gradio floor", f"{statistics.median(ms) / floor:.2f}", ""))
    rows += [(k, f"{v:.1f}" if "(s)" in k else f"{v:.0f}", "") for k, v in figures.items()]
    if not args.no_embedded:
        rows.append(("embedded server peak RSS, SmolLM2-135M (MiB)", embedded_rss(), ""))
    print(
        f"\nengine: {len(eng)} follow-ups ({rejected} rejected by validation, timed too); UI: {len(ui)} follow-ups; stand-in first token {FIRST_TOKEN_DELAY}s"
    )
    print(f"| {'metric':<50} | {'value':>10} | {'target':>6} |")
    print(f"|{'-' * 52}|{'-' * 12}|{'-' * 8}|")
    for name, value, target in rows:
        print(f"| {name:<50} | {value:>10} | {target:>6} |")
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
