"""The reader on the embedded model: agreement with hand labels per probe kind, cost per answer, live delay.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_reader.py [--mode each|joint|both] [--splits dev,heldout]
[--live-trials 6]`` (needs the model extra; ``--model smollm2-135m`` for a quick plumbing run).

1. Reads every answer of ``tests/data/reader/probe_set.yaml`` (dev and held-out halves) with the probes and
   compares each probe's finding (stated / contradicted / not stated) with its hand label: a table per probe
   kind and split, and the wall time per answer (all probes of one answer, option probes asked twice).
2. ``--live-trials``: the time to the first token of a live follow-up (its prompt prefilled up to the last few
   words, as while typing) alone, and while the reader runs on the background slot of the same server, started
   at varied offsets into a reading. ``--no-yield`` adds the same with a reader that does not yield.

Prints ``uptime`` first: figures from a loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from benchmarks._embedded import embedded_port  # noqa: E402
from interviewer.config import Settings  # noqa: E402
from interviewer.llm.client import ChatPort  # noqa: E402
from interviewer.scoring.reader import ReadingCancelled, read_answer  # noqa: E402
from interviewer.scoring.reader_trust import evaluate, load_probe_set  # noqa: E402

LIVE_SYSTEM = (
    "You are a technical interviewer for ML engineering roles. Ask one short follow-up question that probes why "
    "the candidate's answer holds; never reveal the rubric; never grade out loud. "
    + "Keep the conversation on inference performance: memory bandwidth, batching, caching, and latency. "
    * 6
)
LIVE_ANSWER = (
    "Decode reads every weight once per generated token, so at batch one it is limited by memory bandwidth. "
    "Batching several requests shares that weight read, which raises throughput until compute becomes the limit. "
    "The KV cache grows with sequence length and batch size, and that memory caps how many requests fit at once."
)


class NoYield:
    """The port's model and background slot without the port's live-stream signals: a reader that never yields."""

    def __init__(self, port: ChatPort) -> None:
        self.model, self.base_url, self._port = port.model, port.base_url, port

    def slot(self, key: str | None) -> int | None:
        return self._port.slot(key)


def live_prompt(i: int) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The prompt prefilled while typing, and the one sent on Send (a few new words, different per trial)."""
    typed = [SystemMessage(content=LIVE_SYSTEM), HumanMessage(content=LIVE_ANSWER)]
    sent = [
        SystemMessage(content=LIVE_SYSTEM),
        HumanMessage(content=f"{LIVE_ANSWER} I would check that with a profiler, run {i}."),
    ]
    return typed, sent


def first_token(port: ChatPort, i: int) -> float:
    typed, sent = live_prompt(i)
    port._send_one_token(typed, "live")  # what prefill did while the candidate typed
    t0 = time.perf_counter()
    stream = port.stream(sent, key="live")
    try:
        next(iter(stream))
        return time.perf_counter() - t0
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def live_delay(
    port: ChatPort, reader_port: Any, items: list[Any], trials: int, pieces: int | None = None
) -> tuple[list[float], list[float]]:
    alone = [first_token(port, 1000 + i) for i in range(trials)]
    busy: list[float] = []
    answers = [(it, a) for it in items for a in it.answers]
    for i in range(trials):
        stop = threading.Event()

        def run(k: int = i, stop: threading.Event = stop) -> None:
            item, ans = answers[k % len(answers)]
            with contextlib.suppress(ReadingCancelled):
                read_answer(
                    reader_port, item.question, ans.text, item.probes, cancel=stop, piece_words=pieces
                )

        t = threading.Thread(target=run, daemon=True)
        t.start()
        time.sleep(
            (0.5, 3.0, 8.0, 15.0)[i % 4]
        )  # at varied points of the reading: prompt pieces, then probes
        busy.append(first_token(port, 2000 + i))
        stop.set()
        t.join(timeout=600)
    return alone, busy


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--mode", choices=["each", "joint", "both"], default="each")
    ap.add_argument("--splits", default="dev,heldout")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions per split (0: all)")
    ap.add_argument("--live-trials", type=int, default=0)
    ap.add_argument("--no-eval", action="store_true", help="skip the agreement table (live timing only)")
    ap.add_argument(
        "--no-yield", action="store_true", help="also time a live reply beside a reader that never yields"
    )
    ap.add_argument("--misses", action="store_true", help="print every disagreement with the labels")
    ap.add_argument(
        "--claims", action="store_true", help="replies spell a claim out instead of naming its letter"
    )
    ap.add_argument(
        "--pieces",
        type=int,
        default=None,
        help="prompt words per piece read ahead (0: none; default: the reader's)",
    )
    ap.add_argument(
        "--no-logprobs",
        action="store_true",
        help="each mode: option askings reply in JSON instead of one letter read with its probabilities",
    )
    ap.add_argument(
        "--combine",
        choices=["agree", "mean"],
        default=None,
        help="how the orders decide (default: the reader's)",
    )
    ap.add_argument("--orders", type=int, default=None, help="orders an option probe is asked in")
    ap.add_argument("--focus", type=int, default=None, help="sentences repeated next to an option's claims")
    ap.add_argument(
        "--base-url",
        default=None,
        help="read with an embedded server that is already running at this URL (its slots: --slots)",
    )
    ap.add_argument("--slots", type=int, default=2, help="slots of the server at --base-url")
    ap.add_argument(
        "--skip-slots",
        type=int,
        default=0,
        help="leave this many slots to other sessions (two benchmark runs side by side on one server)",
    )
    args = ap.parse_args()
    print("uptime:", os.popen("uptime").read().strip())
    settings = Settings(timeout=900.0, embedded_model=args.model)
    items = load_probe_set()
    splits = [s for s in args.splits.split(",") if s]
    if args.limit:
        items = [i for s in splits for i in [x for x in items if x.split == s][: args.limit]]
    # --base-url: many runs against one server, with no start and no weight check each time
    started = embedded_port(settings, n_parallel=2, base_url=args.base_url or None, slots=args.slots)
    with started as (server, port):
        for i in range(args.skip_slots):
            port.slot(f"elsewhere-{i}")
        modes = [] if args.no_eval else ["each", "joint"] if args.mode == "both" else [args.mode]
        # only what was asked for: the reader's defaults otherwise
        read: dict[str, Any] = {
            **({"logprobs": False} if args.no_logprobs else {}),
            **({"combine": args.combine} if args.combine else {}),
            **({"orders": args.orders} if args.orders else {}),
            **({"focus": args.focus} if args.focus is not None else {}),
        }
        for mode in modes:
            t0 = time.perf_counter()
            ev = evaluate(
                port,
                items,
                splits=splits,
                mode=mode,  # type: ignore[arg-type]
                piece_words=args.pieces,
                letters=not args.claims,
                **read,
                on_answer=lambda it, a, r: print(
                    f"  {it.question_id} [{a.kind}] {r.cost.seconds:.1f} s, {r.cost.calls} requests + "
                    f"{r.cost.warm_calls} pieces, {r.cost.prompt_tokens - r.cost.cached_tokens} new prompt tokens, "
                    f"{r.cost.completion_tokens} generated: " + ", ".join(p.finding for p in r.probes),
                    flush=True,
                ),
            )
            what = f"mode {mode}, " + ("claims" if args.claims else "letters")
            print(f"\n== {server.model_name}, {what} ({time.perf_counter() - t0:.0f} s)")
            print(ev.table())
            if args.misses:
                print("\n".join(ev.misses))
        if args.live_trials:
            dev = [i for i in items if i.split == "dev"] or items
            alone, busy = live_delay(port, port, dev, args.live_trials, args.pieces)
            print(
                f"\nlive first token alone: median {statistics.median(alone):.2f} s, max {max(alone):.2f} s"
            )
            print(
                f"live first token, reader yielding: median {statistics.median(busy):.2f} s, max {max(busy):.2f} s "
                f"(median delay {statistics.median(busy) - statistics.median(alone):+.2f} s)"
            )
            if args.no_yield:
                _, rude = live_delay(port, NoYield(port), dev, args.live_trials, 0)
                print(
                    f"live first token, reader not yielding: median {statistics.median(rude):.2f} s, max "
                    f"{max(rude):.2f} s (median delay {statistics.median(rude) - statistics.median(alone):+.2f} s)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
