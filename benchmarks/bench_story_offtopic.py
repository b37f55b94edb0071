"""Story-round answers called off-topic, by the report and by the interviewer (tests/data/stories).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_story_offtopic.py [--set a|b|c] [--show genuine|off-topic]``

Every answer of ``tests/data/stories/answers.jsonl`` (behavioral and recruiter-screen questions, answers written
from the question text alone) is scored as a first answer by the offline scorer (``RubricScorer.score``: what
the report shows) and read by its off-topic check (``RubricScorer.off_topic``: what the interviewer redirects).
A genuine answer should be neither called off-topic nor scored at most 0.5; an answer about something else
should be. ``--show KIND`` prints the answers of that kind on which the two disagree with what they should say.
No model: MiniLM only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402

DATA = REPO / "tests" / "data" / "stories" / "answers.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=["a", "b", "c"], default=None, help="one set only (default: all)")
    ap.add_argument("--show", choices=["genuine", "off-topic"], default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    bank = load_bank(REPO)
    scorer = RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    # (round, set, kind) -> [answers, report off-topic, interviewer off-topic, both agree, sum of scores]
    table: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for row in rows:
        if args.set and row["set"] != args.set:
            continue
        q = bank.get(row["id"])
        got = scorer.score(q, [row["text"]])
        report = any(n.startswith("off-topic") for n in got.notes)
        listener = scorer.off_topic(q, row["text"]) is not None
        cell = table[(q.round.value, row["set"], row["kind"])]
        cell[0] += 1
        cell[1] += report
        cell[2] += listener
        cell[3] += report == listener
        cell[4] += got.overall
        wanted = row["kind"] == "off-topic"
        if args.show == row["kind"] and (report != wanted or listener != wanted):
            print(
                f"{row['id']} [{row['set']}] report {report} interviewer {listener} {got.overall:.2f}: {row['text']}"
            )
    print(f"\nstory-round answers called off-topic ({time.perf_counter() - t0:.0f} s)")
    print(
        "| round | set | kind | answers | report: off-topic | interviewer: redirects | agree | mean score |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (rnd, s, kind), (n, rep, lis, agree, total) in sorted(table.items()):
        print(f"| {rnd} | {s} | {kind} | {n} | {rep} | {lis} | {agree} | {total / n:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
