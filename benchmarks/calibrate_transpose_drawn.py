"""The speed test's verdicts through the real grader: every variant of calibrate_transpose.py, per seed.

Run: PYTHONPATH=. .venv/bin/python benchmarks/calibrate_transpose_drawn.py [seeds]   (default 8)

For each seed every variant (32x32, 16x16 and 64x64 tiles, both naive loop orders) goes through
``transpose.grade_checks`` (strict sandbox, retries included), so the shape is the one a check with that seed
would time. Prints per seed the drawn shape and each variant's best speedup over the naive loop with its
verdict ("pass", "warn" for a pass the timing could not judge, "fail"), then the passes per variant: tiled
variants should pass every seed, the naive loops none.
"""

from __future__ import annotations

import re
import sys

from benchmarks.calibrate_transpose import VARIANTS
from interviewer.checker import get_task
from interviewer.checker.cpp_tasks import transpose as T
from interviewer.checker.sandbox import Sandbox

PATTERN = re.compile(r"(\d+x\d+) matrix.*speedup over the faster naive loop ([0-9.]+|inf)x")


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    sb = Sandbox()
    task = get_task("cpp-tiled-transpose")
    names = list(VARIANTS)
    print(f"| seed | shape | {' | '.join(names)} |\n|---|---|{'---|' * len(names)}")
    passed = dict.fromkeys(names, 0)
    warned = dict.fromkeys(names, 0)
    for seed in range(seeds):
        cells, shape = [], "?"
        for name, code in VARIANTS.items():
            speed = next(c for c in T.grade_checks(task.path, code, sb, seed=seed) if c.name == T.SPEED_TEST)
            m = PATTERN.search(speed.message)
            shape = m.group(1) if m else shape
            verdict = "fail" if not speed.passed else "warn" if speed.warning else "pass"
            passed[name] += speed.passed
            warned[name] += bool(speed.passed and speed.warning)
            cells.append(f"{m.group(2) if m else '?'}x {verdict}")
        print(f"| {seed} | {shape} | {' | '.join(cells)} |", flush=True)
    print("\n| variant | passed | of which not judged (warning) |\n|---|---|---|")
    for name in names:
        print(f"| {name} | {passed[name]}/{seeds} | {warned[name]} |")


if __name__ == "__main__":
    main()
