"""Grader for numpy-conv2d: fresh random shapes, strides and paddings; loops found on the syntax tree."""

from __future__ import annotations

import time

import numpy as np

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import (
    Case,
    compare_array,
    find_loops,
    prewarm_harness,
    run_cases,
    run_error,
    syntax_error,
    verdict,
)
from interviewer.checker.sandbox import Sandbox


def expected_conv2d(
    x: np.ndarray, w: np.ndarray, stride: int | tuple[int, int], padding: int | tuple[int, int]
) -> np.ndarray:
    """Independent of the reference solution: im2col by index arithmetic, float64 accumulation."""
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    n, c, h, wd = x.shape
    _, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw), dtype=np.float64)
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    ho = (h + 2 * ph - kh) // sh + 1
    wo = (wd + 2 * pw - kw) // sw + 1
    rows = (np.arange(ho) * sh)[:, None] + np.arange(kh)[None, :]  # (ho, kh)
    cols = (np.arange(wo) * sw)[:, None] + np.arange(kw)[None, :]  # (wo, kw)
    patches = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # (n, c, ho, wo, kh, kw)
    y = np.tensordot(patches, w.astype(np.float64), axes=([1, 4, 5], [1, 2, 3]))  # (n, ho, wo, o)
    return y.transpose(0, 3, 1, 2).astype(x.dtype)


def make_cases(rng: np.random.Generator) -> list[Case]:
    """Fresh inputs each run: the named situations a wrong solution tends to get wrong."""
    specs: list[tuple[str, tuple[int, int, int, int], tuple[int, int, int, int], object, object, type]] = [
        ("single channel, stride 1, no padding", (1, 1, 6, 7), (1, 1, 3, 3), 1, 0, np.float64),
        ("multi-channel in and out", (2, 3, 8, 9), (4, 3, 3, 3), 1, 0, np.float64),
        ("padding 1", (2, 2, 7, 7), (3, 2, 3, 3), 1, 1, np.float64),
        ("stride 2 with padding 2", (1, 3, 11, 10), (2, 3, 5, 5), 2, 2, np.float64),
        (
            "non-square kernel, stride (2, 1), padding (1, 2)",
            (2, 2, 9, 8),
            (3, 2, 2, 4),
            (2, 1),
            (1, 2),
            np.float64,
        ),
        ("1x1 kernel", (3, 4, 5, 5), (6, 4, 1, 1), 1, 0, np.float64),
        ("float32 input keeps float32", (2, 3, 16, 16), (8, 3, 3, 3), 1, 1, np.float32),
        ("stride larger than kernel", (1, 2, 13, 13), (2, 2, 2, 2), 3, 1, np.float64),
    ]
    # H_out = (H + 2p - K) // s + 1. Off-by-one formulas such as ceil((H + 2p - K) / s) + 1 or
    # (H + 2p - K + 1) // s agree with it for some remainders of (H + 2p - K) mod s, so the jittered cases
    # above let them pass in a few percent of draws. These fix the remainder, for H and for W apart, and
    # jitter by whole strides (which keeps it).
    by_stride = [
        ("stride 2: (H+2p-K) % 2 == 0, (W+2p-K) % 2 == 1", (1, 2, 9, 10), (2, 2, 3, 3), 2, 1, np.float64),
        ("stride 2: (H+2p-K) % 2 == 1, (W+2p-K) % 2 == 0", (1, 2, 10, 9), (2, 2, 3, 3), 2, 1, np.float64),
        ("stride 3: (H+2p-K) % 3 == 0, (W+2p-K) % 3 == 2", (1, 1, 12, 14), (2, 1, 3, 3), 3, 0, np.float64),
        ("stride 3: (H+2p-K) % 3 == 2, (W+2p-K) % 3 == 1", (1, 1, 14, 13), (2, 1, 3, 3), 3, 0, np.float64),
        (
            "stride (2, 3), padding (1, 0): (H+2p-K) % 2 == 0, (W+2p-K) % 3 == 0",
            (1, 2, 9, 12),
            (2, 2, 3, 3),
            (2, 3),
            (1, 0),
            np.float64,
        ),
        (
            "stride (3, 2), padding (1, 0): (H+2p-K) % 3 == 1, (W+2p-K) % 2 == 1",
            (1, 2, 11, 10),
            (2, 2, 3, 3),
            (3, 2),
            (1, 0),
            np.float64,
        ),
    ]
    cases = []
    for name, xs, ws, stride, padding, dt in specs + by_stride:
        # Jitter spatial sizes so hard-coded shapes cannot pass.
        sh, sw = stride if isinstance(stride, tuple) else (stride, stride)
        step_h, step_w = (sh, sw) if name in {s[0] for s in by_stride} else (1, 1)
        dh, dw = step_h * int(rng.integers(0, 3)), step_w * int(rng.integers(0, 3))
        xs = (xs[0], xs[1], xs[2] + dh, xs[3] + dw)
        x: np.ndarray = rng.standard_normal(xs).astype(dt)
        w: np.ndarray = rng.standard_normal(ws).astype(dt)
        scal = {
            "stride": list(stride) if isinstance(stride, tuple) else stride,
            "padding": list(padding) if isinstance(padding, tuple) else padding,
        }
        cases.append(Case(name=name, func="conv2d", arrays={"x": x, "w": w}, scalars=scal))
    return cases


def _tuple(v: object) -> int | tuple[int, int]:
    return (int(v[0]), int(v[1])) if isinstance(v, list) else int(v)  # type: ignore[call-overload]


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the hidden tests; the loop check is a test of its own and each loop is a warning."""
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    loops = find_loops(code)
    warnings = [f"Python loop found at line {line}: {kind}" for line, kind in loops]
    loop_test = TestResult(
        name="no Python loops",
        passed=not loops,
        message=""
        if not loops
        else "; ".join(warnings) + " (vectorize it: the task forbids Python-level loops)",
    )
    cases = make_cases(np.random.default_rng())
    outputs, run = run_cases(sandbox, code, cases, task.limits.to_limits())
    tests = [loop_test]
    for c in cases:
        out = outputs[c.name]
        if out.error is not None:
            tests.append(TestResult(name=c.name, passed=False, message=out.error))
            continue
        assert out.arrays is not None
        exp = expected_conv2d(
            c.arrays["x"], c.arrays["w"], _tuple(c.scalars["stride"]), _tuple(c.scalars["padding"])
        )
        got = out.arrays[0]
        tol = 1e-4 if exp.dtype == np.float32 else 1e-8
        msg = compare_array(got, exp, c, rtol=tol, atol=tol)
        if msg is None and got.dtype != exp.dtype:
            msg = f"dtype {got.dtype}, expected {exp.dtype} (keep the input's dtype)"
        tests.append(TestResult(name=c.name, passed=msg is None, message=msg or ""))
    return verdict(task, tests, start, warnings=warnings, error=run_error(run))


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with NumPy imported, so the next "Run tests" starts warm."""
    prewarm_harness(sandbox, task.limits.to_limits(), torch=False)
