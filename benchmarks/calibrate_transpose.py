"""Measure the naive/candidate speedup the cpp-tiled-transpose harness reports, to pick MIN_SPEEDUP.

Run: .venv/bin/python benchmarks/calibrate_transpose.py [runs] [solution.cpp ...]
Without files it times the reference (32x32 tiles), 16x16 and 64x64 tiles, the naive loop and the
column-order naive loop. Each run is one sandboxed harness run (7 interleaved repetitions, best of each) on
the timed shape the grader would draw for that seed (sides 1536, 2048 or 2560).
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


def ratios(sb: Sandbox, code: str, runs: int) -> tuple[list[float], list[float]]:
    """Speedups of ``code`` in ``runs`` sandboxed runs: ratio of the bests, and median of paired ratios."""
    obj = harness_object(sb, "transpose_harness", (TASK / "harness.cpp").read_text(), T.FLAGS)
    out, paired = [], []
    for seed in range(runs):
        key = channel.new_key()
        files: dict[str, str | bytes] = {
            "input.txt": T._input_text(
                seed, [(1, 1)], T.TIMING_REPS, T.timing_shape(np.random.default_rng(seed))
            ),
            channel.KEY_FILE: f"{key} {secrets.randbits(62)}\n",
        }
        r = build_plugin_and_run(
            sb, {"solution.cpp": code}, {"harness": obj}, files, T.FLAGS, T.PLUGIN_FLAGS, ["./prog", "input.txt"],
            limits=T.RUN_LIMITS, collect=["report.txt"],
        )  # fmt: skip
        pairs = T._parse_records(r.files.get("report.txt", b""), key).timings
        t = T._timing(pairs)
        if t is not None:
            out.append(t.ratio)
            paired.append(statistics.median(min(a, b) / c for a, b, c in pairs))
    return out, paired


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    variants = {Path(p).name: Path(p).read_text() for p in sys.argv[2:]} or VARIANTS
    sb = Sandbox()
    print(f"speedup best-naive/candidate, {runs} runs each, need >= {T.MIN_SPEEDUP}")
    for name, code in variants.items():
        rs, ps = ratios(sb, code, runs)
        print(
            f"{name:24s} best/best: min {min(rs):.2f} median {statistics.median(rs):.2f} max {max(rs):.2f}"
            f" | paired median: min {min(ps):.2f} median {statistics.median(ps):.2f} max {max(ps):.2f}"
        )


if __name__ == "__main__":
    main()
