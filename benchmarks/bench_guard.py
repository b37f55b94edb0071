"""The answer guard (interviewer/scoring/guard.py): requests to the grader it removes, ordinary text it keeps.

Sets: the injection styles of tests/test_scoring_injection.py (appended to a weak answer), sentences in the
vocabulary of grading (the same file's lists), fresh requests and fresh ordinary sentences
(benchmarks/data/guard_sentences.yaml, written before the guard was measured on them), and whole answers: the
trap set's (tests/data/traps) and Mohler's student answers (data/mohler). A removed ordinary passage is text the
scorer never reads.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_guard.py``
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.scoring.guard import screen  # noqa: E402
from tests.support.traps import load_traps  # noqa: E402
from tests.test_scoring_injection import (  # noqa: E402
    GRADING_VOCABULARY,
    INJECTIONS,
    REQUESTS_IN_THAT_VOCABULARY,
)

LEAD = "Decode reads every weight once per token. "


def removed(text: str) -> bool:
    return bool(screen(text).removed)


def main() -> int:
    fresh = yaml.safe_load((REPO / "benchmarks/data/guard_sentences.yaml").read_text(encoding="utf-8"))
    traps = [x for t in load_traps(None).values() for x in t.texts().values()]
    with (REPO / "data/mohler/answers.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    column = next(c for c in rows[0] if "answer" in c.lower())
    mohler = [r[column] for r in rows]
    table = [
        ("requests", "injection styles (tests)", [LEAD + x for x in INJECTIONS.values()]),
        ("requests", "requests in grading words (tests)", [LEAD + x for x in REQUESTS_IN_THAT_VOCABULARY]),
        ("requests", "fresh requests", [LEAD + x for x in fresh["requests_fresh"]]),
        ("ordinary", "sentences in grading words (tests)", list(GRADING_VOCABULARY)),
        ("ordinary", "fresh ordinary sentences", list(fresh["ordinary_fresh"])),
        ("ordinary", "trap-set answers", traps),
        ("ordinary", "Mohler answers", mohler),
    ]
    print("| set | kind | n | passage removed |\n|---|---|---|---|")
    for kind, name, texts in table:
        hit = sum(removed(t) for t in texts)
        print(f"| {name} | {kind} | {len(texts)} | {hit} ({hit / len(texts):.0%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
