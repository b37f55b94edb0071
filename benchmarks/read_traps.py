"""Read the trap answers with the reader on the embedded model once, and keep the readings for the benchmarks.

Run: ``nice -n 10 .venv/bin/python benchmarks/read_traps.py --split heldout [--every 3 [--offset 1]] [--out FILE]``

Every answer of ``tests/data/traps`` (strong, partial, wrong, off-topic) of the chosen split is read with its
question's main-answer probes (:func:`interviewer.scoring.reader.read_question`), and with its why-1 probes as
``why1@main`` (does the first answer already state the why-1 target?), and one JSON line per answer is
appended to ``--out`` (default ``test-artifacts/readings/traps-<split>.jsonl``): question id, answer kind, the
answer's sha256, the reader's version (a hash of the reader module and the question's probes) and the readings.
The run resumes: an answer already read by the same reader version is skipped. ``bench_traps.py --readings``
and ``bench_listen_traps.py --readings`` score and listen with these readings instead of re-reading, so one
model pass serves both. ``--every K`` reads every K-th question of the split (sorted by id) when an idle
machine's hour is not available for the whole split; ``--offset N`` starts at its N-th question, so another
sample of the same size never overlaps the first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks._embedded import embedded_port  # noqa: E402
from interviewer.config import Settings  # noqa: E402
from interviewer.content import load_bank  # noqa: E402
from interviewer.content.models import Question  # noqa: E402
from interviewer.scoring import reader  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

LABELS = ("strong", "partial", "wrong", "off_topic")


def reader_version(question: Question) -> str:
    """What the readings of one question depend on: the reader's code and the question's probes."""
    h = hashlib.sha256(Path(reader.__file__).read_bytes())
    h.update(json.dumps([p.model_dump(mode="json", by_alias=True) for p in question.probes]).encode())
    return h.hexdigest()[:16]


def rejudged(
    readings: dict[str, Any],
    question: Question,
    text: str,
    acts_on: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """A stored reading (``Readings.to_json()`` per part) with its option probes judged again by today's rules
    (:meth:`interviewer.scoring.reader.Readings.from_json` with ``rejudge_text``), so a change to the
    deterministic side is measured without asking the model again. A part read with probes that changed since
    is left out.

    ``acts_on``: keep only the probes of the kinds it lets act (the reading model's trust) and decide each key
    point from them, as if only those had been read (the listener reads no other kind). None: every kind.
    """
    out: dict[str, Any] = {}
    for part, got in readings.items():
        again = reader.Readings.from_json(got, question, rejudge_text=text)
        if again is None:
            continue
        if acts_on is not None:
            kept = [f for f in again.probes if acts_on(f.probe.kind)]
            again = reader.Readings(kept, reader.aggregate(kept), again.cost, again.mode)
        out[part] = again.to_json()
    return out


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def done_keys(path: Path) -> set[tuple[str, str, str, str]]:
    keys: set[tuple[str, str, str, str]] = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                keys.add((r["question"], r["kind"], r["sha"], r["reader"]))
    return keys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "heldout"], required=True)
    ap.add_argument("--every", type=int, default=1, help="read every K-th question of the split (by id)")
    ap.add_argument("--offset", type=int, default=0, help="start at the split's N-th question (by id)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = ap.parse_args()
    out = args.out or REPO / "test-artifacts" / "readings" / f"traps-{args.split}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    print("uptime:", os.popen("uptime").read().strip(), flush=True)
    bank = load_bank(REPO)
    traps = load_traps()
    qids = sorted(q for q in traps if question_split(q) == args.split)[args.offset :: max(1, args.every)]
    done = done_keys(out)
    settings = Settings(timeout=900.0, embedded_model=args.model)
    with embedded_port(settings, n_parallel=2) as (server, port):
        t0, n = time.perf_counter(), 0
        for i, qid in enumerate(qids, 1):
            q = bank.get(qid)
            version = reader_version(q)
            for kind, text in traps[qid].texts().items():
                key = (qid, kind, text_sha(text), version)
                if key in done:
                    continue
                got = reader.read_question(port, q, {"main": text})
                ahead = reader.probes_for(q, "why1")
                if ahead:  # does the first answer already state the why-1 target? (the listener asks)
                    got["why1@main"] = reader.read_answer(port, q.question, text, ahead)
                row = {
                    "question": qid,
                    "kind": kind,
                    "split": args.split,
                    "sha": key[2],
                    "reader": version,
                    "model": server.model_name,
                    "readings": {part: r.to_json() for part, r in got.items()},
                }
                with out.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
                n += 1
                secs = sum(r.cost.seconds for r in got.values())
                print(f"[{i}/{len(qids)}] {qid} {kind}: {secs:.1f} s", flush=True)
        print(f"read {n} answers in {time.perf_counter() - t0:.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
