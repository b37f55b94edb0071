"""Speedups on the timed shapes drawn per run: reference and naive starter through the real grader.

Run: PYTHONPATH=. .venv/bin/python benchmarks/calibrate_transpose_drawn.py [seeds]   (default 8)

For each seed both solutions go through ``transpose.grade_checks`` (strict sandbox, retries included), so the
shape is the one a check with that seed would time; prints shape, speedup and pass/fail of the speed test.
"""

from __future__ import annotations

import re
import sys

from interviewer.checker import get_task
from interviewer.checker.cpp_tasks import transpose as T
from interviewer.checker.sandbox import Sandbox

PATTERN = re.compile(r"(\d+x\d+) matrix.*speedup over the faster naive loop ([0-9.]+|inf)x")


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    sb = Sandbox()
    task = get_task("cpp-tiled-transpose")
    print(
        f"| seed | shape | reference (32x32 tiles) | naive starter |  (need >= {T.MIN_SPEEDUP}x)\n|---|---|---|---|"
    )
    for seed in range(seeds):
        cells, shape = [], "?"
        for code in (task.reference_code(), task.starter_code):
            speed = next(c for c in T.grade_checks(task.path, code, sb, seed=seed) if c.name == T.SPEED_TEST)
            m = PATTERN.search(speed.message)
            shape = m.group(1) if m else shape
            cells.append(f"{m.group(2) if m else '?'}x {'pass' if speed.passed else 'fail'}")
        print(f"| {seed} | {shape} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
