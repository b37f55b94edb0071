"""How much of a candidate's typing time the background server is paused for prefill, on the embedded model.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_typing_pauses.py [--interval 0.2] [--model smollm2-135m]``

Every prefill is a live request (``ChatPort.on_live``): the background server (the reader, the truth judge) is
paused for its duration, and runs again between prefills. This types a ~200-character answer into an interview
one keystroke every ``--interval`` seconds (0.2: about 60 words a minute), offering the text so far on each
keystroke as the page does, and sums the time a live request was in flight, which is the time the background
server is paused. ``--resend`` sends a prompt again even when the session's last prefill sent it already (as
before prefill remembered it): typing inside a word leaves the prompt, cut at the last whole word, unchanged.
The listener and the judge are off, so nothing else runs on the live server.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.config import load_settings  # noqa: E402
from interviewer.runtime import Runtime  # noqa: E402
from interviewer.session import Interview  # noqa: E402

ANSWER = (
    "Decode is limited by memory bandwidth, because every weight is read once per generated token. "
    "Prefill multiplies whole prompt matrices, so it is bound by compute. Batching raises decode's intensity."
)


class _Forgets(dict[str, object]):
    """A memory of prompts sent that keeps nothing (``--resend``)."""

    def __setitem__(self, key: str, value: object) -> None:
        pass

    def move_to_end(self, key: str) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", choices=["qwen2.5-coder-1.5b", "smollm2-135m"])
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between keystrokes")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--resend", action="store_true", help="send a prompt again though it was just sent")
    args = ap.parse_args()
    data = Path(os.environ.get("INTERVIEWER_DATA_DIR") or tempfile.mkdtemp(prefix="bench-typing-"))
    settings = load_settings(
        data_dir=data, embedded_model=args.model, retrieval=False, listen=False, judge=False, max_tokens=48
    )
    rt = Runtime(settings)
    port = rt.model()
    assert port.prefiller is not None
    spans: list[float] = []
    since: list[float] = []
    lock = threading.Lock()

    def heard(live: bool) -> None:
        with lock:
            if live:
                since[:] = [time.monotonic()]
            elif since:
                spans.append(time.monotonic() - since.pop())

    port.on_live(heard)
    print(f"model: {port.name}; load average before: {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for rep in range(args.reps):
        it = Interview.start(rt.ports(f"typist-{rep}"), ["inference-deep-dive"], per_round=1)
        it.advance_all()
        port.prefiller.wait_idle(60)  # the question's prefetch is in
        if args.resend:
            port.prefiller._sent = _Forgets()  # type: ignore[assignment]
        spans.clear()
        sent, repeated = port.prefiller.stats.sent, port.prefiller.stats.repeated
        t0 = time.monotonic()
        for i in range(len(ANSWER)):
            it.prefill(ANSWER[: i + 1])
            time.sleep(args.interval)
        typing = time.monotonic() - t0
        port.prefiller.wait_idle(60)
        stats = port.prefiller.stats
        rows.append(
            (typing, sum(spans), max(spans, default=0.0), stats.sent - sent, stats.repeated - repeated)
        )
        print(f"rep {rep + 1}: {rows[-1]}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    label = "resent" if args.resend else "shipped"
    print(
        "| prefill | keystrokes | typing (s) | paused (s) | paused share | longest pause (s) | sent | not resent |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for typing, paused, longest, sent, repeated in rows:
        print(
            f"| {label} | {len(ANSWER)} | {typing:.1f} | {paused:.1f} | {paused / typing:.0%} | {longest:.2f} "
            f"| {sent} | {repeated} |"
        )
    rt.close()


if __name__ == "__main__":
    main()
