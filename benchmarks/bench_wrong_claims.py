"""Which trap answers the scorer reads a classic wrong claim in (tests/data/traps), per answer kind and split.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_wrong_claims.py [--split dev] [--show LABEL] [--out FILE]``

``RubricScorer.wrong_claims`` (the clause reader's authored phrasings, then the paraphrase reader) over every
trap answer: what the scorer caps at 1.5 and the listener challenges. A fluent-but-wrong answer should have a
hit; a strong, partial or off-topic one should not. Thresholds are chosen on "dev" (tests/support/traps.py);
"heldout" is what we report. ``--show LABEL`` prints each hit on answers of that kind (claim and the candidate's
sentence); ``--out FILE`` writes every answer's hits as JSON, to compare two versions of the reader answer by
answer. ``--right`` also reads the two sets of right answers in ``tests/data/right`` (``answers.jsonl`` and
``corrections.jsonl``, one answer per trap question each, written from the question's text alone; about half of
the second set's answers reject a misconception): each one with a hit is a false challenge, printed with its
claim. No model: the offline scorer (MiniLM).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import Bank, load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.support.right import SETS, right_answers  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

LABELS = ("strong", "partial", "wrong", "off_topic")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    ap.add_argument("--show", choices=LABELS, default=None, help="print the hits on answers of this kind")
    ap.add_argument("--out", type=Path, default=None, help="write every answer's hits as JSON")
    ap.add_argument("--right", action="store_true", help="also read the independent right answers")
    args = ap.parse_args()
    t0 = time.perf_counter()
    bank = load_bank(REPO)
    scorer = RubricScorer(MiniLMEmbedder())
    hits: dict[str, list[tuple[str, str]]] = {}
    counts: dict[str, dict[str, int]] = {}
    for qid, trap in load_traps().items():
        split = question_split(qid)
        if args.split not in ("all", split):
            continue
        q = bank.get(qid)
        row = counts.setdefault(split, {"questions": 0} | {k: 0 for k in LABELS})
        row["questions"] += 1
        for label, text in trap.texts().items():
            found = [(h.name, h.sentence) for h in scorer.wrong_claims(q, text)]
            hits[f"{qid}|{label}"] = found
            row[label] += bool(found)
            if found and label == args.show:
                for name, sentence in found:
                    print(f"{qid} [{label}] {name}: {sentence}")
    print(f"\nanswers with a classic wrong claim read in them ({time.perf_counter() - t0:.0f} s)")
    print("| split | questions | " + " | ".join(LABELS) + " |")
    print("|---|---|" + "---|" * len(LABELS))
    for split, row in sorted(counts.items()):
        print(f"| {split} | {row['questions']} | " + " | ".join(str(row[k]) for k in LABELS) + " |")
    if args.right:
        right = counts_right(scorer, bank, args.split, hits)
        print("\nindependent right answers with a classic wrong claim read in them (false challenges)")
        print("| set | split | answers | with a hit |")
        print("|---|---|---|---|")
        for (name, split), (n, bad) in sorted(right.items()):
            print(f"| {name} | {split} | {n} | {bad} |")
    if args.out:
        args.out.write_text(json.dumps(hits, indent=0), encoding="utf-8")
    return 0


def counts_right(
    scorer: RubricScorer, bank: Bank, split: str, hits: dict[str, list[tuple[str, str]]]
) -> dict[tuple[str, str], tuple[int, int]]:
    """Per set and split: (right answers read, those with a hit); each hit is printed and kept in ``hits``."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for name in SETS:
        for qid, text in right_answers(name).items():
            where = question_split(qid)
            if split not in ("all", where):
                continue
            found = [(h.name, h.sentence) for h in scorer.wrong_claims(bank.get(qid), text)]
            hits[f"{qid}|right:{name}"] = found
            for claim, sentence in found:
                print(f"{qid} [{name}] {claim}: {sentence}")
            n, bad = out.get((name, where), (0, 0))
            out[(name, where)] = (n + 1, bad + bool(found))
    return out


if __name__ == "__main__":
    sys.exit(main())
