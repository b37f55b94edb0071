"""Grader for ``cpp-tiled-transpose``: correct on every shape, and measurably faster than the naive loop.

The box returns the raw destination buffers (with guard zones) and process CPU times; this module rebuilds
every input from the seed, checks the buffers against ``A.T`` with NumPy, and judges the timing ratio.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from interviewer.checker.cpp_tasks._build import (
    BoxRun,
    Check,
    SandboxLike,
    build_separately_and_run,
    check_source,
    compile_summary,
    describe_failure,
    harness_object,
    tail,
    to_verdict,
)
from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.sandbox import Limits, Sandbox

FLAGS = ("-O2",)
GUARD = 64
GUARD_VALUE = np.float32(-7.0)
CHECK_WEIGHT = 2654435761
UNWRITTEN = np.float32(-1.0)
# Fixed edge shapes, plus two random ones per run (see _shapes).
EDGE_SHAPES: tuple[tuple[int, int], ...] = (
    (1, 1), (1, 37), (37, 1), (2, 3), (31, 33), (32, 32), (33, 31), (64, 64),
    (65, 129), (100, 7), (7, 100), (257, 300), (1000, 3), (3, 1000),
)  # fmt: skip
# 2048 x 2048 floats is 16 MiB per matrix: source plus destination fill the 32 MiB L3 of this machine and
# dwarf its 2 MiB L2s; the power-of-two stride makes the naive column walk thrash the same cache sets.
# Each run times a shape drawn from the grader's seed among sides that are multiples of 512 floats (so the
# naive walk still thrashes): code that recognises "the timing shape" has nothing fixed to recognise.
TIMING_SHAPE = (2048, 2048)
TIMING_SIDES = (1536, 2048, 2560)
TIMING_REPS = 7
SPEED_TEST = "faster than naive (large matrix)"
# Required speedup: best CPU time of the faster naive loop order / best CPU time of the candidate, 7
# interleaved repetitions per run. Measured here with benchmarks/calibrate_transpose.py, 2 x 12 runs per
# variant at load average 7-13 from other work (see README.md): 32x32 tiles 1.58-1.95, 16x16 1.30-1.74,
# 64x64 1.11-1.96 (their 64 rows at a 8 KiB stride share L1 sets); the row-order naive loop 0.92-1.10,
# the column-order one 0.75-0.95. 1.2 keeps the naive loops out with margin; retries keep 64x64 in.
MIN_SPEEDUP = 1.2
# A ratio in [RETRY_ABOVE, MIN_SPEEDUP) may be noise from other load: up to RETRIES more runs, best counts.
RETRY_ABOVE = 1.0
RETRIES = 2
RUN_LIMITS = Limits(cpu_seconds=10.0, wall_seconds=20.0, memory_mb=1024)


@dataclass(frozen=True)
class Timing:
    """Best process CPU time (ns) of each loop from one run; the baseline is the faster of the two naive loop orders."""

    rows_first: int
    cols_first: int
    cand: int
    reps: int

    @property
    def naive(self) -> int:
        return min(self.rows_first, self.cols_first)

    @property
    def ratio(self) -> float:
        return self.naive / self.cand if self.cand else float("inf")


def _mix(seed: int, n: int) -> np.ndarray:
    """The harness's splitmix64 stream for indices 0..n-1 (uint64 arithmetic wraps, as in C++)."""
    k = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def source_matrix(seed: int, rows: int, cols: int) -> np.ndarray:
    """The matrix the harness builds for ``seed``: integers below 2^16 stored exactly as float32."""
    return (_mix(seed, rows * cols) & np.uint64(0xFFFF)).astype(np.float32).reshape(rows, cols)


def checksum(values: np.ndarray) -> int:
    """The harness's position-weighted checksum of a flat float32 buffer (used by the tests)."""
    k = np.arange(values.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        w = k * np.uint64(CHECK_WEIGHT) + np.uint64(1)
        return int(np.sum(values.astype(np.uint64) * w, dtype=np.uint64))


def timing_keys(rng: np.random.Generator, rows: int, cols: int) -> tuple[list[int], list[int]]:
    """Two permutations: the timing matrix is ``src[i][j] = row_key[i] * cols + col_key[j]``."""
    return [int(x) for x in rng.permutation(rows)], [int(x) for x in rng.permutation(cols)]


def expected_checksum(row_key: list[int], col_key: list[int]) -> int:
    """The checksum of the correct transpose of the timing matrix, in closed form: O(rows + cols).

    The destination holds ``v = row_key[i] * cols + col_key[j]`` at ``k = j * rows + i`` with weight
    ``K * k + 1``; summing over j for each i, and over i for each j, separates the two keys.
    """
    n, m, big = len(row_key), len(col_key), CHECK_WEIGHT
    sum_j, sum_i = m * (m - 1) // 2, n * (n - 1) // 2
    total = sum(r * m * (big * n * sum_j + m * (big * i + 1)) for i, r in enumerate(row_key))
    total += sum(c * (big * n * n * j + n + big * sum_i) for j, c in enumerate(col_key))
    return total % (1 << 64)


def timing_shape(rng: np.random.Generator) -> tuple[int, int]:
    """The large shape timed in this run, drawn from the grader's seed."""
    return int(rng.choice(TIMING_SIDES)), int(rng.choice(TIMING_SIDES))


def _shapes(rng: np.random.Generator) -> list[tuple[int, int]]:
    extra = [(int(rng.integers(1, 300)), int(rng.integers(1, 300))) for _ in range(2)]
    return [*EDGE_SHAPES, *extra]


def _input_text(
    seed: int, shapes: list[tuple[int, int]], reps: int, keys: tuple[list[int], list[int]]
) -> str:
    lines = [f"{seed} {len(shapes)}", *(f"{r} {c}" for r, c in shapes)]
    lines.append(f"{len(keys[0])} {len(keys[1])} {reps}")
    lines += [" ".join(map(str, keys[0])), " ".join(map(str, keys[1]))]
    return "\n".join(lines) + "\n"


def _check_shape(seed: int, index: int, rows: int, cols: int, got: np.ndarray) -> str | None:
    """None when ``got`` (destination with guards) is exactly the transpose, else what is wrong."""
    n = rows * cols
    before, body, after = got[:GUARD], got[GUARD : GUARD + n], got[GUARD + n :]
    if np.any(before != GUARD_VALUE):
        k = GUARD - int(np.flatnonzero(before != GUARD_VALUE)[0])
        return f"wrote {k} float(s) before the start of dst (out-of-bounds write)"
    if np.any(after != GUARD_VALUE):
        k = int(np.flatnonzero(after != GUARD_VALUE)[-1]) + 1
        return f"wrote past the end of dst (up to {k} float(s) beyond it): check the tile bounds at the edges"
    want = source_matrix(seed + index, rows, cols).T.reshape(-1)
    bad = np.flatnonzero(body != want)
    if bad.size == 0:
        return None
    first = int(bad[0])
    j, i = divmod(first, rows)  # dst is cols x rows
    never = int(np.count_nonzero(body[bad] == UNWRITTEN))
    hint = f"; {never} of the {bad.size} wrong element(s) were never written" if never else ""
    return (
        f"{bad.size} of {n} elements wrong; first at dst[{j}][{i}] (should be src[{i}][{j}] = "
        f"{want[first]:g}), got {body[first]:g}{hint}"
    )


def _parse_report(text: str) -> tuple[int, list[tuple[int, int, int]], list[int]]:
    """Shapes finished, (rows-first, cols-first, candidate) CPU-nanosecond triples, and the checksum of the
    candidate's result after each timed call, from report.txt."""
    done, pairs, sums = 0, [], []
    for line in text.splitlines():
        parts = line.split()
        try:
            if parts[:1] == ["shape"] and parts[2:] == ["done"]:
                done = max(done, int(parts[1]) + 1)
            elif parts[:1] == ["timing"] and len(parts) == 5:
                pairs.append((int(parts[1]), int(parts[2]), int(parts[3])))
                sums.append(int(parts[4]))
        except ValueError:
            continue
    return done, pairs, sums


def _timing(rows: list[tuple[int, int, int]]) -> Timing | None:
    if not rows:
        return None
    a, b, c = (min(r[k] for r in rows) for k in range(3))
    return Timing(rows_first=a, cols_first=b, cand=c, reps=len(rows))


def grade_checks(
    task_dir: Path, code: str, sandbox: SandboxLike, seed: int | None = None, limits: Limits = RUN_LIMITS
) -> list[Check]:
    """Every check of the task, in order; the caller wraps them into the public verdict."""
    check_source(code)
    harness_src = (task_dir / "harness.cpp").read_text(encoding="utf-8")
    obj = harness_object(sandbox, "transpose_harness", harness_src, FLAGS)
    seed = secrets.randbits(62) if seed is None else seed
    rng = np.random.default_rng(seed)
    shapes = _shapes(rng)
    keys = timing_keys(rng, *timing_shape(rng))

    def run(reps: int) -> BoxRun:
        # The candidate's unit is compiled alone (nothing hidden in that box), then linked with the harness.
        return build_separately_and_run(
            sandbox, {"solution.cpp": code}, {"harness": obj},
            {"input.txt": _input_text(seed, shapes, reps, keys)}, FLAGS, ["./prog", "input.txt"],
            limits=limits, collect=["out.bin", "report.txt"],
        )  # fmt: skip

    first = run(TIMING_REPS)
    if not first.built:
        return [Check("compiles", False, "compile error:\n" + compile_summary(first.build_log))]
    checks = [Check("compiles", True, "compiled with g++ -std=c++17 -O2")]
    report = first.files.get("report.txt", b"").decode("utf-8", "replace")
    done, pairs, sums = _parse_report(report)
    out = np.frombuffer(first.files.get("out.bin", b"")[: _out_bytes(shapes)], dtype=np.float32)
    offset = 0
    for idx, (rows, cols) in enumerate(shapes):
        name = f"shape {rows}x{cols}"
        size = rows * cols + 2 * GUARD
        if idx >= done or offset + size > out.size:
            why = describe_failure(first) if first.crashed else "the harness stopped early"
            err = tail(first.result.stderr, 5)
            checks.append(
                Check(
                    name,
                    False,
                    f"{why} while transposing a {rows}x{cols} matrix" + (f"\n{err}" if err else ""),
                )
            )
            return checks
        problem = _check_shape(seed, idx, rows, cols, out[offset : offset + size])
        checks.append(
            Check(name, problem is None, problem or "exact transpose, nothing written out of bounds")
        )
        offset += size
    if any(not c.passed for c in checks):
        checks.append(Check(SPEED_TEST, False, "not timed: fix the wrong shapes first"))
        return checks
    checks.append(_speed_check(expected_checksum(*keys), first, pairs, sums, run, keys))
    return checks


def _out_bytes(shapes: list[tuple[int, int]]) -> int:
    return sum((r * c + 2 * GUARD) * 4 for r, c in shapes)


def _speed_check(
    want: int,
    first: BoxRun,
    pairs: list[tuple[int, int, int]],
    sums: list[int],
    run: Callable[[int], BoxRun],
    keys: tuple[list[int], list[int]],
) -> Check:
    rows, cols = len(keys[0]), len(keys[1])
    name = SPEED_TEST
    if first.crashed or len(pairs) < TIMING_REPS:
        return Check(name, False, describe_failure(first) + f" during the {rows}x{cols} timing run")
    bad = [k + 1 for k, s in enumerate(sums) if s != want]
    if bad or len(sums) != len(pairs):
        return Check(
            name,
            False,
            f"the {rows}x{cols} result of timed call(s) {bad} is wrong (checksum mismatch): every timed call "
            "must transpose the whole matrix, so it was not timed",
        )
    timings = [t for t in [_timing(pairs)] if t is not None]
    for _ in range(RETRIES):
        if not RETRY_ABOVE <= max(t.ratio for t in timings) < MIN_SPEEDUP:
            break
        again = run(TIMING_REPS)
        _, pairs2, sums2 = _parse_report(again.files.get("report.txt", b"").decode("utf-8", "replace"))
        t2 = _timing(pairs2)
        if again.crashed or any(s != want for s in sums2) or t2 is None or len(pairs2) < TIMING_REPS:
            break
        timings.append(t2)
    best = max(timings, key=lambda t: t.ratio)
    ratios = ", ".join(f"{t.ratio:.2f}" for t in timings)
    detail = (
        f"{rows}x{cols} matrix, best CPU time of {best.reps} interleaved runs: naive row-order {best.rows_first / 1e6:.1f} ms, "
        f"column-order {best.cols_first / 1e6:.1f} ms, yours {best.cand / 1e6:.1f} ms; speedup "
        f"over the faster naive loop {best.ratio:.2f}x (run(s): {ratios}; need {MIN_SPEEDUP:.2f}x)"
    )
    if best.ratio >= MIN_SPEEDUP:
        return Check(name, True, detail)
    return Check(
        name,
        False,
        "correct, but not measurably faster than the naive transpose: " + detail + ". Walk the matrix in "
        "square tiles (e.g. 32x32) so each tile of src and dst stays in cache while it is copied.",
    )


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Compile the hidden harness ahead of the first check."""
    harness_object(
        sandbox, "transpose_harness", (task.path / "harness.cpp").read_text(encoding="utf-8"), FLAGS
    )


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """The runner entry point (see interviewer/checker/README.md)."""
    start = time.monotonic()
    checks = grade_checks(task.path, code, sandbox, limits=task.limits.to_limits())
    return to_verdict(task.id, checks, time.monotonic() - start)
