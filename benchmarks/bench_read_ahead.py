"""What reading a growing answer ahead costs the background server: a fresh fence per reading, or one per answer.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_read_ahead.py [--model smollm2-135m] [--reps 3]``

The listener reads the answer so far at each sentence end (``interviewer/engine/probing.py``). Each reading's
prompt fences the answer in tags with an id the candidate cannot guess. A fresh random id per reading makes the
prompt differ right after the id, so a prompt-caching server reads the whole answer again each time; one id per
answer (an HMAC of the question and part under a per-process secret) keeps the earlier reading's prompt as the
prefix of the next, and the server reads only the words added. On a server shaped like the background one (one
slot, a small host-RAM prompt cache), each rep reads a ~60-word answer and then the same answer grown by one
sentence, first with fresh ids and then with one id, and prints the prompt tokens the server had to read (prompt
tokens minus those it reports as cached) and the seconds of each reading, with medians over the reps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._embedded import chat_port  # noqa: E402
from interviewer.config import Settings  # noqa: E402
from interviewer.content.models import Probe, Question  # noqa: E402
from interviewer.engine.probing import read_with_probes  # noqa: E402
from interviewer.llm.embedded import EmbeddedServer  # noqa: E402
from interviewer.scoring.reader import read_answer  # noqa: E402

QUESTION = "Size the KV cache of a 32-layer FP16 model with 32 heads of 128. Why does decode slow down?"
PHASE = Probe(
    point="main.0",
    kind="option",
    ask="Which phase does the candidate say is limited by memory bandwidth?",
    options=["decode", "prefill", "both phases"],
    true="decode",
    wrong=["prefill", "both phases"],
)
SO_FAR = (
    "Decode is limited by memory bandwidth, because every weight is read once per generated token while the "
    "arithmetic per weight stays tiny at batch one. Prefill instead multiplies whole prompt matrices, so it keeps "
    "the cores busy and is bound by compute. The KV cache grows with the context length."
)
GROWN = SO_FAR + " Batching more requests raises the arithmetic intensity of decode."
ROWS = (
    "fresh fence: answer so far",
    "fresh fence: grown answer",
    "one fence: answer so far",
    "one fence: grown answer",
)


def _cost(got: dict[str, Any]) -> tuple[int, float]:
    c = got["main"]["cost"]
    return int(c["prompt_tokens"]) - int(c["cached_tokens"]), float(c["seconds"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", choices=["qwen2.5-coder-1.5b", "smollm2-135m"])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    data = Path(os.environ.get("INTERVIEWER_DATA_DIR") or tempfile.mkdtemp(prefix="bench-read-ahead-"))
    settings = Settings(data_dir=data, embedded_model=args.model, embedded_ctx=2048)
    question = Question.model_construct(id="q", question=QUESTION, probes=[PHASE])
    got: dict[str, list[tuple[int, float]]] = {row: [] for row in ROWS}
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    with EmbeddedServer(settings, n_parallel=1, cache_ram_mib=256) as server:
        port = chat_port(settings, server, server.start())
        for rep in range(args.reps):
            readings = (
                {"main": read_answer(port, QUESTION, SO_FAR, [PHASE]).to_json()},
                {"main": read_answer(port, QUESTION, GROWN, [PHASE]).to_json()},
                read_with_probes(port, question, 0, SO_FAR, threading.Event()),
                read_with_probes(port, question, 0, GROWN, threading.Event()),
            )
            for row, reading in zip(ROWS, readings, strict=True):
                got[row].append(_cost(reading))
                tokens, seconds = got[row][-1]
                print(f"rep {rep + 1} {row}: {tokens} new prompt tokens, {seconds:.2f} s", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    print(f"| reading ({server.model_name}) | new prompt tokens (median) | seconds (median) |")
    print("|---|---|---|")
    for row in ROWS:
        median_tokens = statistics.median(t for t, _ in got[row])
        median_seconds = statistics.median(s for _, s in got[row])
        print(f"| {row} | {median_tokens:.0f} | {median_seconds:.2f} |")


if __name__ == "__main__":
    main()
