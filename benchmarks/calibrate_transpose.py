"""Measure the speedups the cpp-tiled-transpose harness reports, to pick MIN_SPEEDUP and check the baselines.

Run: .venv/bin/python benchmarks/calibrate_transpose.py [runs] [--per-shape] [solution.cpp ...]
Without files it times the reference (32x32 tiles), 16x16 and 64x64 tiles, the naive loop and the
column-order naive loop. Each run is one sandboxed harness run (7 interleaved repetitions, best of each).
By default a run times the shape the grader would draw for that seed (sides 1536, 2048 or 2560); with
``--per-shape`` every pair of those sides is timed ``runs`` times (pairs the grader never draws are marked).
Besides the candidate's speedup over the faster naive loop it prints the harness's own 32x32 tiled loop's
speedup ("machine": the grader treats a run as able to judge tiling when this reaches JUDGE_AT), the
candidate's time over that tiled loop's, how many runs reached MIN_SPEEDUP alone, and how many were fast
(``Timing.fast``, the grader's test for one run: a run that can judge tiling, MIN_SPEEDUP over the naive
loop, and at most TILED_CEILING times the tiled loop's time).
"""

from __future__ import annotations

import secrets
import statistics
import sys
from pathlib import Path

import numpy as np

from interviewer.checker import channel
from interviewer.checker.cpp_tasks import transpose as T
from interviewer.checker.cpp_tasks._build import build_plugin_and_run, harness_object
from interviewer.checker.sandbox import Sandbox

TASK = Path(__file__).resolve().parents[1] / "rubrics" / "coding" / "cpp-tiled-transpose"
LOOP = "for(std::size_t ii=0;ii<r;ii+=B) for(std::size_t jj=0;jj<c;jj+=B){ std::size_t ie=ii+B<r?ii+B:r, je=jj+B<c?jj+B:c; for(std::size_t i=ii;i<ie;i++) for(std::size_t j=jj;j<je;j++) d[j*r+i]=s[i*c+j]; }"
HEAD = "#include <cstddef>\nvoid transpose(const float* s, float* d, std::size_t r, std::size_t c){"
VARIANTS = {
    "tiled 32 (reference)": (TASK / "reference.cpp").read_text(),
    "tiled 16": HEAD + "const std::size_t B=16; " + LOOP + "}",
    "tiled 64": HEAD + "const std::size_t B=64; " + LOOP + "}",
    "naive (row order)": (TASK / "starter.cpp").read_text(),
    "naive (column order)": HEAD
    + "for(std::size_t j=0;j<c;j++) for(std::size_t i=0;i<r;i++) d[j*r+i]=s[i*c+j]; }",
}


def timings(sb: Sandbox, code: str, shapes: list[tuple[int, int]]) -> list[T.Timing]:
    """One sandboxed harness run of ``code`` per shape: best CPU time of each loop."""
    obj = harness_object(sb, "transpose_harness", (TASK / "harness.cpp").read_text(), T.FLAGS)
    out = []
    for seed, shape in enumerate(shapes):
        key = channel.new_key()
        files: dict[str, str | bytes] = {
            "input.txt": T._input_text(seed, [(1, 1)], T.TIMING_REPS, shape),
            channel.KEY_FILE: f"{key} {secrets.randbits(62)}\n",
        }
        r = build_plugin_and_run(
            sb, {"solution.cpp": code}, {"harness": obj}, files, T.FLAGS, T.PLUGIN_FLAGS, ["./prog", "input.txt"],
            limits=T.RUN_LIMITS, collect=["report.txt"],
        )  # fmt: skip
        t = T._timing(T._parse_records(r.files.get("report.txt", b""), key).timings)
        if t is not None:
            out.append(t)
    return out


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.2f} - {statistics.median(values):.2f} - {max(values):.2f}"


def row(label: str, ts: list[T.Timing]) -> str:
    return (
        f"| {label} | {spread([t.ratio for t in ts])} | {spread([t.machine_ratio for t in ts])} "
        f"| {spread([t.vs_tiled for t in ts])} | {sum(t.ratio >= T.MIN_SPEEDUP for t in ts)}/{len(ts)} "
        f"| {sum(t.fast for t in ts)}/{len(ts)} |"
    )


def main() -> None:
    args = sys.argv[1:]
    per_shape = "--per-shape" in args
    args = [a for a in args if a != "--per-shape"]
    runs = int(args[0]) if args and args[0].isdigit() else 10
    files = args[1:] if args and args[0].isdigit() else args
    variants = {Path(p).name: Path(p).read_text() for p in files} or VARIANTS
    sb = Sandbox()
    print(
        f"min - median - max over {runs} run(s); a fast run has the tiled loop >= {T.JUDGE_AT}x the naive one, "
        f"yours >= {T.MIN_SPEEDUP}x the faster naive loop and <= {T.TILED_CEILING}x the tiled loop's time\n"
        "| variant, shape | yours: speedup | machine: tiled loop's speedup | your time / tiled loop's "
        f"| runs >= {T.MIN_SPEEDUP}x | fast runs |\n"
        "|---|---|---|---|---|---|"
    )
    for name, code in variants.items():
        if not per_shape:
            drawn = [T.timing_shape(np.random.default_rng(seed)) for seed in range(runs)]
            print(row(f"{name}, drawn shapes", timings(sb, code, drawn)), flush=True)
            continue
        for r in T.TIMING_SIDES:
            for c in T.TIMING_SIDES:
                mark = "" if (r, c) in T.TIMING_SHAPES else " (never drawn)"
                print(row(f"{name}, {r}x{c}{mark}", timings(sb, code, [(r, c)] * runs)), flush=True)


if __name__ == "__main__":
    main()
