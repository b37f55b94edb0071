"""Mohler end to end, as a user runs it: the CSV as JSONL, `interviewer grade`, then agreement with the graders.

    python benchmarks/bench_mohler_e2e.py                   # grade all 2,273 answers (about 50 min on 2 cores)
    python benchmarks/bench_mohler_e2e.py --graded OUT.jsonl  # only the figures, from an earlier output

Prints Pearson r between the score (0-4) and the graders' average (0-5), the mean score, and how many
answers scored <= 0.5 although the graders gave them >= 2.5/5 (a real answer called off-topic or empty), for
all answers and for two halves of the questions (ids in numeric order, alternating: "A" the 1st, 3rd, ...
question, "B" the others), so that a threshold chosen on one half can be reported on the other.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CSV = REPO / "data" / "mohler" / "answers.csv"


def prepare(csv_path: Path, out: Path) -> int:
    """One JSONL line per answer: question, reference answer, the answer, and the graders' average."""
    n = 0
    with csv_path.open(newline="", encoding="utf-8") as f, out.open("w", encoding="utf-8") as w:
        for row in csv.DictReader(f):
            item = {
                "id": row["question_id"],
                "question": row["question"],
                "reference_answer": row["reference_answer"],
                "answer": row["student_answer"],
                "human": float(row["score_avg"]),
            }
            w.write(json.dumps(item) + "\n")
            n += 1
    return n


def halves(rows: list[dict]) -> dict[str, list[dict]]:
    """All rows, and the rows of every other question (numeric id order) as half A and the rest as half B."""
    ids = sorted({str(r["id"]) for r in rows}, key=lambda q: [int(p) for p in q.split(".") if p.isdigit()])
    a = set(ids[::2])
    return {
        "all": rows,
        "half A": [r for r in rows if str(r["id"]) in a],
        "half B": [r for r in rows if str(r["id"]) not in a],
    }


def figures(rows: list[dict]) -> dict[str, float]:
    scores = [float(r["score"]) for r in rows]
    human = [float(r["human"]) for r in rows]
    good = [s for s, h in zip(scores, human, strict=True) if h >= 2.5]
    return {
        "n": len(rows),
        "pearson_r": statistics.correlation(scores, human),
        "mean_score": statistics.fmean(scores),
        "low_of_good": sum(s <= 0.5 for s in good),
        "good": len(good),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graded", type=Path, help="an earlier `interviewer grade` output to read instead")
    ap.add_argument("--limit", type=int, default=0, help="grade only the first N answers (a quick check)")
    args = ap.parse_args()
    graded = args.graded
    if graded is None:
        tmp = Path(tempfile.mkdtemp(prefix="mohler-"))
        src, graded = tmp / "mohler.jsonl", tmp / "graded.jsonl"
        prepare(CSV, src)
        if args.limit:
            lines = src.read_text(encoding="utf-8").splitlines()[: args.limit]
            src.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "interviewer.cli", "grade", "--input", str(src), "--output", str(graded)]
        subprocess.run(cmd, check=True, cwd=REPO)
    rows = [json.loads(line) for line in graded.read_text(encoding="utf-8").splitlines() if line.strip()]
    print("| questions | answers | Pearson r | mean score (0-4) | scored <= 0.5 of those graded >= 2.5/5 |")
    print("|---|---|---|---|---|")
    for name, part in halves(rows).items():
        if len(part) < 2:
            continue
        f = figures(part)
        share = f["low_of_good"] / f["good"] if f["good"] else 0.0
        print(
            f"| {name} | {f['n']:.0f} | {f['pearson_r']:.4f} | {f['mean_score']:.2f} | "
            f"{f['low_of_good']:.0f} of {f['good']:.0f} ({share:.1%}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
