"""Trap-set benchmark (#11): how the offline scorer ranks strong, partial, wrong and off-topic answers.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_traps.py [--traps tests/data/traps] [--per-question]``.
Prints one row for every question and one for the reporting half of the question-id split
(:func:`interviewer.scoring.calibrate.held_out_half`, hash-odd ids): nothing in the scorer is tuned on trap
answers, and any threshold that ever is must be tuned on the other half only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.calibrate import TRAP_KINDS, held_out_half, read_traps, trap_figures  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--traps", type=Path, default=REPO / "tests" / "data" / "traps")
    parser.add_argument("--per-question", action="store_true", help="print every question's four scores")
    args = parser.parse_args()

    traps = read_traps(args.traps) if args.traps.is_dir() else {}
    bank = load_bank(REPO)
    known = {q: t for q, t in traps.items() if q in bank.questions}
    if not known:
        print(f"no trap answers under {args.traps} for bank questions; nothing to report")
        return 0
    scorer = RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
    t0 = time.perf_counter()
    cache: dict[tuple[str, str], float] = {}

    def score(qid: str, text: str) -> float:
        if (qid, text) not in cache:
            cache[(qid, text)] = scorer.score(bank.get(qid), [text]).overall
        return cache[(qid, text)]

    rows = [
        ("all questions", sorted(known)),
        ("held-out half", [q for q in sorted(known) if held_out_half(q)]),
    ]
    head = (
        f"{'split':<16}{'n':>4}" + "".join(f"{k:>11}" for k in TRAP_KINDS) + f"{'s>p>w':>9}{'wrong>=2.5':>12}"
    )
    print(head)
    print("-" * len(head))
    for label, ids in rows:
        fig = trap_figures(known, score, ids)
        if fig is None:
            continue
        print(
            f"{label:<16}{fig.n_questions:>4}"
            + "".join(f"{fig.means[k]:>11.2f}" for k in TRAP_KINDS)
            + f"{fig.ordered:>9.0%}{fig.wrong_high:>12.0%}"
        )
    print("targets: strong >= 3.3, wrong <= 1.5, off_topic <= 0.5, s>p>w on >= 90% of questions")
    print(f"scored {len(cache)} answers in {time.perf_counter() - t0:.0f} s (offline, MiniLM)")
    if args.per_question:
        fig = trap_figures(known, score)
        assert fig is not None
        for q, per in fig.per_question.items():
            print(f"  {q:<52}" + "".join(f"{per[k]:>7.2f}" for k in TRAP_KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
