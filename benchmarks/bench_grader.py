"""Grader benchmark: agreement with human grades (question-level CV) and offline scoring latency.

Run: ``.venv/bin/python benchmarks/bench_grader.py [--csv PATH] [--features-cache /tmp/mohler.npz]``.
The agreement table is the one ``python -m interviewer.scoring.calibrate`` prints; this script never rewrites
the shipped calibration.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.calibrate import _default_csv, run_calibration  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.scoring_samples import ANSWERS, DECODE_ID, LAYOUT_ID  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csv", type=Path, default=_default_csv())
    parser.add_argument("--features-cache", type=Path, default=None)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()

    embedder = MiniLMEmbedder()
    t0 = time.perf_counter()
    report = run_calibration(
        args.csv, args.folds, embedder=embedder, output=None, features_cache=args.features_cache
    )
    print(report.table())
    print(f"calibration run: {time.perf_counter() - t0:.1f} s")

    bank = load_bank(REPO)
    scorer = RubricScorer(embedder)
    print("\nfixed answers (offline, overall 0-4):")
    for qid in (DECODE_ID, LAYOUT_ID):
        q = bank.get(qid)
        cells = []
        for kind, text in ANSWERS[qid].items():
            s = scorer.score(q, [text])
            cells.append(f"{kind}={s.overall:.2f} ({len(s.key_points_covered)}/{len(q.key_points)} points)")
        print(f"  {qid}: " + ", ".join(cells))

    q = bank.get(DECODE_ID)
    times = []
    for i in range(7):
        fresh = RubricScorer(embedder)  # a new encoder cache each time: the latency a new answer sees
        text = ANSWERS[DECODE_ID]["strong"] + f" ({i})"
        t = time.perf_counter()
        fresh.score(
            q, [text, "KV cache reads dominate at long context.", "Chunked prefill keeps latency steady."]
        )
        times.append(time.perf_counter() - t)
    print(
        f"\noffline score of one question (3 answers, 5 key points), median of 7: {statistics.median(times):.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
