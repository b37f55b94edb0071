"""Warm "Run tests" time of each GPU kernel task (Numba CUDA simulator in the strict sandbox).

For each task: pre-start its box (as the UI does when the task is shown), then grade the reference; repeat and
take the median. Also the in-box simulation time (sum over cases) and, for comparison, one cold run. Prints a
Markdown table and the load average. Run: .venv/bin/python benchmarks/bench_gpu_kernels.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from interviewer.checker import check, get_task, list_tasks, prepare
from interviewer.checker.sandbox import Sandbox


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sb = Sandbox("strict")
    ok, reason = sb.status()
    if not ok:
        raise SystemExit(f"strict sandbox unavailable: {reason}")
    load0 = os.getloadavg()
    rows = []
    for task in [t for t in list_tasks() if t.kind == "cuda"]:
        code = get_task(task.id).reference_code()
        t0 = time.monotonic()
        cold = check(task.id, code, sandbox=sb, prewarm=False)
        cold_s = time.monotonic() - t0
        warm: list[float] = []
        for _ in range(args.repeat):
            prepare(task.id, sandbox=sb)
            time.sleep(1.0)  # the box imports numba and waits, as while a candidate reads the task
            t0 = time.monotonic()
            v = check(task.id, code, sandbox=sb, prewarm=False)
            warm.append(time.monotonic() - t0)
            assert v.passed, v.render_text()
        rows.append((task.id, statistics.median(warm), min(warm), cold_s, len(cold.tests)))
    sb.close()
    load1 = os.getloadavg()
    print("| task | warm Run tests median (s) | warm min (s) | cold (s) | tests |")
    print("|---|---|---|---|---|")
    for tid, med, mn, cold_s, n in rows:
        print(f"| {tid} | {med:.2f} | {mn:.2f} | {cold_s:.2f} | {n} |")
    print(f"\nload average before {load0[0]:.2f}, after {load1[0]:.2f} (2 cores); repeat={args.repeat}")


if __name__ == "__main__":
    main()
