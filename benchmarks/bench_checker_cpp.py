"""Run tests" latency of the C++ tasks: the reference solution checked end to end in the strict sandbox.

Run: .venv/bin/python benchmarks/bench_checker_cpp.py [repeats]

For each task the first check in a fresh process is reported separately ("cold": it compiles the
hidden harness objects, the sanitizer builds of unchanged files and the output-prediction ground truth,
which later checks reuse); the median is over the following repeats ("warm", what a candidate sees when
pressing "Run tests" again). CPU is the user+system time of the sandboxed children (compiler included),
measured by running the same checks once more through the sandbox's weak mode (same commands, run as
direct children so their CPU time is accounted; the strict box's pid namespace hides it). Unlike wall time,
CPU time hardly grows when other work loads the machine; the load average is printed.
Target: C++ under 1.5 s.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time

from interviewer.checker import check, get_task
from interviewer.checker.sandbox import Sandbox

TASKS = ("cpp-tiled-transpose", "cpp-dependency-graph", "cpp-debug-project", "cpp-output-prediction")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(task_id: str, code: str, sb: Sandbox) -> tuple[float, float]:
    """Wall seconds and children CPU seconds of one check; the reference must pass."""
    cpu0, t0 = _children_cpu(), time.monotonic()
    v = check(task_id, code, sandbox=sb)
    wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
    if not v.passed:
        raise SystemExit(f"{task_id}: the reference did not pass:\n{v.render_text()}")
    return wall, cpu


class _CpuAccounting(Sandbox):
    """Weak mode forced on: the box commands run as direct children, so RUSAGE_CHILDREN sees them."""

    def __init__(self) -> None:
        super().__init__(mode="weak")

    def status(self) -> tuple[bool, str]:
        return False, "benchmark CPU accounting"


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sb = Sandbox()
    ok, reason = sb.status()
    if not ok:
        raise SystemExit(f"strict sandbox unavailable: {reason}")
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {repeats} warm repeats")
    print(f"{'task':24s} {'cold s':>7s} {'warm median s':>14s} {'warm min s':>11s} {'warm CPU s':>11s}")
    print("(CPU: median of up to 3 weak-mode checks, compiler included; the cold column is wall time)")
    weak = _CpuAccounting()
    for task_id in TASKS:
        code = get_task(task_id).reference_code()
        cold, _ = one(task_id, code, sb)
        walls = [one(task_id, code, sb)[0] for _ in range(repeats)]
        cpus = [one(task_id, code, weak)[1] for _ in range(min(repeats, 3))]
        print(
            f"{task_id:24s} {cold:7.2f} {statistics.median(walls):14.2f} {min(walls):11.2f} "
            f"{statistics.median(cpus):11.2f}"
        )
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
