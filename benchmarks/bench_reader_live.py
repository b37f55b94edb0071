"""A live follow-up's first token while the previous answer is read in the background, on the embedded model.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_reader_live.py --design idle-freeze --trials 8``
(``--design`` shared | shared-noyield | idle | idle-freeze | idle-yield | normal; ``--model smollm2-135m`` for a plumbing run).

The candidate pastes a ~160-word answer and presses Send at once: the follow-up's prompt (the app's own system
and follow-up templates over a bank question) is not prefilled, and a tag at its start keeps the server from
reusing any cached prefix (the worst case: the whole prompt is read after Send). Meanwhile the reader reads the
previous answer (another bank question's strong answer, ~125-200 words, with all its probes), started at varied
offsets before Send. Trials come in pairs, the same live prompt timed alone and beside a reading, so a change
of load between trials hits both. For the designs with a server of their own, it also prints the CPU time the
background server used from the reading's start to Send ("before": it was reading) and from Send to the first
token ("during": what it could take from the live reply), a figure other programs' load does not change.
Designs:

- ``shared``: the reader on the live server's background slot, stepping aside between streamed chunks (what a
  remote server gets); ``shared-noyield``: the same without stepping aside.
- ``idle``: the reader on a second embedded server at the OS's idle priority, sharing the mmapped weights;
  ``idle-freeze``: the same, its process also paused while a live reply streams (the app's default on the
  embedded model); ``idle-yield``: idle, the reader also stepping aside; ``normal``: the second server at
  normal priority (shows what the priority does).

``--batch N`` sets the live server's prompt step (tokens), ``--pieces W`` reads the reader's prompt ahead in
pieces. Prints the load, the servers' memory (RSS and PSS: the weights' pages are shared), per-trial times and
a table of medians with the delay, absolute and as a ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from benchmarks._embedded import chat_port  # noqa: E402
from interviewer import prompts  # noqa: E402
from interviewer.config import Settings  # noqa: E402
from interviewer.content import load_bank  # noqa: E402
from interviewer.content.models import Question  # noqa: E402
from interviewer.engine.followups import intent  # noqa: E402
from interviewer.llm.background import BackgroundPort  # noqa: E402
from interviewer.llm.client import ChatPort  # noqa: E402
from interviewer.llm.embedded import EmbeddedServer  # noqa: E402
from interviewer.scoring.reader import ReadingCancelled, read_answer  # noqa: E402
from interviewer.scoring.reader_trust import load_probe_set  # noqa: E402

OFFSETS = (0.5, 2.0, 4.0, 7.0, 1.0, 3.0, 10.0, 5.0)  # seconds from the reading's start to Send
LIVE_KEY = "candidate"


def live_messages(q: Question, answer: str, nonce: int) -> list[BaseMessage]:
    """The app's why-follow-up prompt for ``q`` (no retrieval), new from its first token on (``nonce``)."""
    system = f"[{nonce}] " + prompts.render(
        "system",
        round_style=prompts.round_style(q.round.value),
        question=q.question,
        why1_intent=intent(q, 1),
        why2_intent=intent(q, 2),
        reference="(none)",
    )
    human = prompts.render(
        "followup", answer=answer, history=f"Interviewer: {q.question}", level="1", intent=intent(q, 1)
    )
    return [SystemMessage(content=system), HumanMessage(content=human)]


def port_over(settings: Settings, server: EmbeddedServer, base_url: str) -> ChatPort:
    # the settings' temperature: this port also streams the live replies
    return chat_port(settings, server, base_url, temperature=None)


def memory(pid: int | None) -> str:
    if pid is None:
        return "-"
    fields: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1]) // 1024
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return f"RSS {fields.get('Rss', 0)} MB, PSS {fields.get('Pss', 0)} MB, private {private} MB"


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) a process has used so far, from /proc."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_token(port: ChatPort, sent: list[BaseMessage], watch: int | None = None) -> tuple[float, float]:
    """Seconds from Send to the first token, and the CPU seconds process ``watch`` used meanwhile."""
    stream = port.stream(sent, key=LIVE_KEY)
    t0 = time.perf_counter()
    c0 = cpu_seconds(watch)
    try:
        next(iter(stream))
        return time.perf_counter() - t0, cpu_seconds(watch) - c0
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument(
        "--design",
        choices=["shared", "shared-noyield", "idle", "idle-freeze", "idle-yield", "normal"],
        default="idle",
    )
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument(
        "--offsets",
        default=",".join(f"{o:g}" for o in OFFSETS),
        help="seconds from a reading's start to Send, cycled over the trials",
    )
    ap.add_argument(
        "--batch", type=int, default=0, help="the live server's prompt step in tokens (0: default)"
    )
    ap.add_argument("--pieces", type=int, default=None, help="reader prompt words per piece read ahead")
    args = ap.parse_args()
    offsets = [float(o) for o in args.offsets.split(",") if o.strip()]
    load0 = os.getloadavg()
    print("uptime:", os.popen("uptime").read().strip(), flush=True)

    data = Path(os.environ.get("INTERVIEWER_DATA_DIR") or tempfile.mkdtemp(prefix="bench-reader-live-"))
    settings = Settings(data_dir=data, embedded_model=args.model, timeout=900.0, max_tokens=64)
    bank = load_bank(settings.content_dir)
    items = [it for it in load_probe_set()]
    reads = [(it, next(a for a in it.answers if a.kind == "strong")) for it in items]
    lives = [
        (bank.questions[it.question_id], next(a for a in it.answers if a.kind == "strong").text)
        for it in reversed(items)
        if it.question_id in bank.questions
    ]

    live_server = EmbeddedServer(settings, batch=args.batch)  # the app's: 4 slots
    bg_server: EmbeddedServer | None = None
    if args.design in ("idle", "idle-freeze", "idle-yield", "normal"):
        bg_server = EmbeddedServer(settings, n_parallel=1, idle=args.design != "normal")
    try:
        t0 = time.perf_counter()
        live = port_over(settings, live_server, live_server.start(progress=print))
        reader: Any
        if bg_server is None:
            reader = BackgroundPort(live, yield_to_live=args.design == "shared")
        else:
            reader = BackgroundPort(
                live,
                bg_server,
                lambda s, url: port_over(settings, s, url),
                yield_to_live=args.design == "idle-yield",
                freeze=args.design == "idle-freeze",
            )
            assert reader.port is not live  # started now, not inside the first timed trial
        print(f"servers ready in {time.perf_counter() - t0:.0f} s", flush=True)
        print(
            f"memory: live server {memory(live_server.pid)}; background server "
            f"{memory(bg_server.pid if bg_server else None)}",
            flush=True,
        )

        alone: list[float] = []
        busy: list[float] = []
        during: list[float] = []  # the background server's CPU seconds from Send to the first token
        print(
            f"\n{'trial':>5} {'live question':<36} {'offset':>7} {'alone':>7} {'busy':>7} {'delay':>7} "
            f"{'bg cpu before':>13} {'bg cpu during':>13}"
        )
        for i in range(args.trials):
            q, text = lives[i % len(lives)]
            item, ans = reads[(i + 3) % len(reads)]
            if item.question_id == q.id:
                item, ans = reads[(i + 4) % len(reads)]
            a, _ = first_token(live, live_messages(q, text, 2 * i))
            stop = threading.Event()
            started = threading.Event()

            def run(
                item: Any = item,
                ans: Any = ans,
                stop: threading.Event = stop,
                started: threading.Event = started,
            ) -> None:
                started.set()
                with contextlib.suppress(ReadingCancelled):
                    read_answer(
                        reader, item.question, ans.text, item.probes, cancel=stop, piece_words=args.pieces
                    )

            worker = threading.Thread(target=run, daemon=True)
            worker.start()
            started.wait()
            c_start = cpu_seconds(bg_server.pid if bg_server else None)
            offset = offsets[i % len(offsets)]
            time.sleep(offset)
            b, cpu = first_token(
                live, live_messages(q, text, 2 * i + 1), bg_server.pid if bg_server else None
            )
            c_reading = cpu_seconds(bg_server.pid if bg_server else None) - c_start
            stop.set()
            worker.join(timeout=600)
            alone.append(a)
            busy.append(b)
            during.append(cpu)
            print(
                f"{i + 1:>5} {q.id[:36]:<36} {offset:>6.1f}s {a:>6.2f}s {b:>6.2f}s {b - a:>+6.2f}s "
                + (f"{c_reading - cpu:>12.2f}s {cpu:>12.2f}s" if bg_server else f"{'-':>13} {'-':>13}"),
                flush=True,
            )

        print(
            f"\nmemory after: live server {memory(live_server.pid)}; background server "
            f"{memory(bg_server.pid if bg_server else None)}"
        )
        ma, mb = statistics.median(alone), statistics.median(busy)
        deltas = [b - a for a, b in zip(alone, busy, strict=True)]
        ratios = [b / a for a, b in zip(alone, busy, strict=True)]
        print(
            f"\ndesign {args.design}, live batch {args.batch or 'default'}, pieces {args.pieces or 0}, "
            f"{args.trials} pairs; load average {load0[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end"
        )
        print(
            f"{'first token, alone':<34} median {ma:6.2f} s   min {min(alone):6.2f}   max {max(alone):6.2f}"
        )
        print(
            f"{'first token, beside a reading':<34} median {mb:6.2f} s   min {min(busy):6.2f}   max {max(busy):6.2f}"
        )
        print(
            f"{'delay (busy - alone, per pair)':<34} median {statistics.median(deltas):+6.2f} s   "
            f"min {min(deltas):+6.2f}   max {max(deltas):+6.2f}"
        )
        print(
            f"{'ratio (busy / alone, per pair)':<34} median {statistics.median(ratios):6.2f} x   "
            f"min {min(ratios):6.2f}   max {max(ratios):6.2f}"
        )
        print(f"{'medians: busy - alone':<34} {mb - ma:+6.2f} s ({mb / ma:.2f} x)")
        if bg_server is not None:
            print(
                f"{'background CPU from Send to token':<34} median {statistics.median(during):6.2f} s   "
                f"max {max(during):6.2f}"
            )
    finally:
        if bg_server is not None:
            bg_server.stop()
        live_server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
