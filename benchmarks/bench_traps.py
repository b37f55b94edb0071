"""The scorer on our own trap set (tests/data/traps): strong / partial / fluent-but-wrong / off-topic answers.

Run: ``.venv/bin/python benchmarks/bench_traps.py [--round inference-case]``

Prints per-label means and the share of questions ordered strong > partial > wrong, per split (the split is by
question id, tests/support/traps.py: thresholds are tuned on "dev" only; "heldout" is what we report), and per
question. Offline scorer (MiniLM, checks, contradictions, relevance against the whole bank); no model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

LABELS = ("strong", "partial", "wrong", "off_topic")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round", default=None, help="one round's traps (default: all)")
    ap.add_argument("--per-question", action="store_true")
    args = ap.parse_args()
    bank = load_bank(REPO)
    scorer = RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
    traps = load_traps(args.round)
    rows: dict[str, dict[str, float]] = {}
    for qid, t in traps.items():
        q = bank.get(qid)
        rows[qid] = {label: scorer.score(q, [text]).overall for label, text in t.texts().items()}
        if args.per_question:
            print(f"{qid:<50}" + "".join(f"{rows[qid][k]:>9.2f}" for k in LABELS))
    print(f"\n{len(rows)} questions with traps")
    print(
        f"{'split':<10}{'n':>4}" + "".join(f"{k:>10}" for k in LABELS) + f"{'ordered':>10}{'wrong<=1.5':>12}"
    )
    for split in ("dev", "heldout", "all"):
        sel = [r for qid, r in rows.items() if split == "all" or question_split(qid) == split]
        if not sel:
            continue
        means = [statistics.fmean(r[k] for r in sel) for k in LABELS]
        ordered = sum(r["strong"] > r["partial"] > r["wrong"] for r in sel) / len(sel)
        low_wrong = sum(r["wrong"] <= 1.5 for r in sel) / len(sel)
        print(
            f"{split:<10}{len(sel):>4}"
            + "".join(f"{m:>10.2f}" for m in means)
            + f"{ordered:>10.0%}{low_wrong:>12.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
