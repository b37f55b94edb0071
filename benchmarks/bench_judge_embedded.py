"""The LLM grading methods on the embedded Qwen2.5-Coder-1.5B: quote extraction and the rubric judge.

Run: ``.venv/bin/python benchmarks/bench_judge_embedded.py`` (needs the model extra installed). Prints, for
fixed strong / partial / wrong answers, the verified quotes per key point, rejected quotes, the judge's
sampled levels and the combined score, with wall time per call.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.config import Settings  # noqa: E402
from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.llm.client import build_chat_model  # noqa: E402
from interviewer.llm.embedded import EmbeddedServer  # noqa: E402
from interviewer.scoring.judge import extract_quotes, run_judge  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.scoring_samples import ANSWERS, DECODE_ID  # noqa: E402


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--answers", default="strong,partial,wrong_topical")
    parser.add_argument("--judge-samples", type=int, default=3, help="0: quote extraction only")
    args = parser.parse_args()
    settings = Settings(timeout=900.0)  # a loaded 2-core machine can take minutes per constrained reply
    q = load_bank(REPO).get(DECODE_ID)
    offline = RubricScorer(MiniLMEmbedder())
    with EmbeddedServer(settings, n_parallel=1) as server:
        base_url = server.start(progress=print)
        model = build_chat_model(settings, base_url=base_url, model=server.served_model_id, temperature=0.0)
        for kind in args.answers.split(","):
            answer = ANSWERS[DECODE_ID][kind]
            t = time.perf_counter()
            quotes = extract_quotes(model, q.question, answer, q.key_points)
            print(f"\n== {kind}: offline overall {offline.score(q, [answer]).overall:.2f}")
            print(
                f"quote extraction ({time.perf_counter() - t:.1f} s): {len(quotes.covered)}/{len(q.key_points)} "
                f"verified, {len(quotes.rejected)} rejected"
            )
            for kp, quote in quotes.quotes.items():
                print(f"   [{'x' if quote else ' '}] {kp[:60]!r} <- {quote!r}")
            for kp, bad in quotes.rejected.items():
                print(f"   rejected for {kp[:40]!r}: {bad!r}")
            if args.judge_samples <= 0:
                continue
            t = time.perf_counter()
            judged = run_judge(
                model, q.question, answer, q.criteria, q.key_points, samples=args.judge_samples
            )
            levels = ", ".join(f"{c.criterion}={c.samples}" for c in judged.criteria)
            print(f"judge ({time.perf_counter() - t:.1f} s, {args.judge_samples} samples): {levels}")
            scorer = RubricScorer(
                MiniLMEmbedder(), judge_model=model, use_judge=True, judge_samples=args.judge_samples
            )
            combined = scorer.score(q, [answer])
            print(f"with LLM methods {combined.overall:.2f}; notes: " + "; ".join(combined.notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
