"""Median "Run tests" latency of the Python coding tasks, per task kind, through the real strict sandbox.

Usage: .venv/bin/python benchmarks/bench_checker.py [--runs 7] [--think 8]

Each run is one `interviewer.checker.check(task, reference_solution)` call, timed end to end (box set-up,
candidate code, hidden tests, comparison in the grader). Tasks are measured twice: "cold" (no
pre-started box: the box imports torch inside the clock) and "warm" (the UI calls `prepare(task)` when the
task is shown, and every check pre-starts the next box; `--think` seconds between runs stand for the
candidate reading the verdict). NumPy and plain-Python tasks get both modes too (3 s between warm runs). The first call of each task is a discarded warm-up (it imports the grader,
and torch in the grader process). C++ tasks have their own benchmark (benchmarks/bench_checker_cpp.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from interviewer.checker import check, default_sandbox, list_tasks, prepare

TARGETS = {"numpy": 0.5, "torch": 2.0, "python": 0.5, "numeric": 0.5}


def _reference(task_dir: Path, task: object) -> str:
    ref = getattr(task, "reference", "")
    if ref:
        return (task_dir / ref).read_text()
    answers = getattr(task, "config", {}).get("answers", [])
    return "\n".join(f"{a['name']}: {a['value']}" for a in answers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--think", type=float, default=8.0, help="seconds between warm torch runs (others: 3)")
    args = ap.parse_args()
    sb = default_sandbox()
    ok, reason = sb.status()
    print(f"sandbox: {reason if ok else 'UNAVAILABLE: ' + reason}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start\n")
    rows: list[tuple[str, str, str, list[float]]] = []
    for task in list_tasks():
        if task.kind == "cpp":
            continue
        code = _reference(task.path, task)
        modes = ["cold"] if task.kind == "numeric" else ["cold", "warm"]
        think = args.think if task.kind == "torch" else min(args.think, 3.0)
        for mode in modes:
            times: list[float] = []
            for i in range(args.runs + 1):
                if mode == "cold":
                    sb.close()  # no pre-started box: the clock includes every import in the box
                elif i == 0:
                    prepare(task.id, sandbox=sb)
                    time.sleep(think)
                start = time.monotonic()
                v = check(task.id, code, sandbox=sb)
                took = time.monotonic() - start
                if not v.passed:
                    raise SystemExit(f"reference solution failed for {task.id}:\n{v.render_text()}")
                if i > 0:
                    times.append(took)
                if mode == "warm":
                    time.sleep(think)
            sb.close()
            rows.append((task.kind, task.id, mode, times))
    print(f"{'kind':8} {'task':26} {'mode':5} {'median s':>9} {'min s':>7} {'max s':>7}  runs  target")
    for kind, tid, mode, t in rows:
        print(f"{kind:8} {tid:26} {mode:5} {statistics.median(t):9.3f} {min(t):7.3f} {max(t):7.3f}  {len(t):4}  "
              f"< {TARGETS.get(kind, 0):.1f} s")  # fmt: skip
    print("\nmedian per kind (warm where measured, else cold):")
    by_kind: dict[str, list[float]] = {}
    for kind, _tid, mode, t in rows:
        if kind != "numeric" and mode != "warm":
            continue
        by_kind.setdefault(kind, []).extend(t)
    for kind, t in by_kind.items():
        print(f"  {kind:8} {statistics.median(t):.3f} s (target < {TARGETS.get(kind, 0):.1f} s)")
    print(f"\nload average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
