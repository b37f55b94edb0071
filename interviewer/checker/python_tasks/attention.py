"""Grader for attention-distance-bias: the expected values are computed here in float64 NumPy."""

from __future__ import annotations

import math
import time

import numpy as np

from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.checker.python_tasks.common import (
    Case,
    compare_array,
    prewarm_harness,
    run_cases,
    run_error,
    syntax_error,
    verdict,
)
from interviewer.checker.sandbox import Sandbox


def expected_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    alpha: float = 1.0,
    *,
    bias_sign: float = -1.0,
    softmax_axis: int = -1,
) -> tuple[np.ndarray, np.ndarray]:
    """The specified attention; ``bias_sign`` / ``softmax_axis`` only build diagnostics for common mistakes."""
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    lq, lk = q.shape[-2], k.shape[-2]
    s = (1.0 / math.sqrt(q.shape[-1]) if scale is None else scale) * (q64 @ np.swapaxes(k64, -1, -2))
    s = s + alpha * bias_sign * np.abs(np.arange(lq)[:, None] - np.arange(lk)[None, :])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):  # a diagnostic variant may mask a whole column
        s = s - np.max(s, axis=softmax_axis, keepdims=True)
        e = np.exp(s)
        w = e / np.sum(e, axis=softmax_axis, keepdims=True)
    w = np.nan_to_num(w)
    return (w @ v64).astype(q.dtype), w.astype(q.dtype)


def make_cases(rng: np.random.Generator) -> list[Case]:
    """Fresh random tensors each run, covering masks, scale, alpha and cross-attention."""
    cases: list[Case] = []

    def add(
        name: str, b: int, lq: int, lk: int, d: int, dv: int, dt: type = np.float32, **kw: object
    ) -> None:
        arrays: dict[str, np.ndarray] = {
            "q": rng.standard_normal((b, lq, d)).astype(dt),
            "k": rng.standard_normal((b, lk, d)).astype(dt),
            "v": rng.standard_normal((b, lk, dv)).astype(dt),
        }
        m = kw.pop("mask", None)
        if isinstance(m, np.ndarray):
            arrays["mask"] = m
        cases.append(Case(name=name, func="attention", arrays=arrays, scalars=dict(kw)))

    add("no mask, default scale", 2, 6, 6, 8, 5)
    add("cross-attention Lq != Lk", 2, 4, 9, 8, 3)
    n = 7
    add("causal mask", 2, n, n, 4, 4, mask=np.tril(np.ones((n, n), dtype=bool)))
    pad = rng.random((3, 5, 8)) < 0.6
    pad[:, :, 0] = True  # every query row keeps at least one key
    add("padding mask per batch (B, Lq, Lk)", 3, 5, 8, 6, 6, mask=pad)
    add("explicit scale 0.1", 1, 5, 5, 16, 4, scale=0.1)
    add("alpha 0.25", 2, 6, 6, 8, 8, alpha=0.25)
    add("strong bias alpha 3, float64", 1, 10, 10, 4, 2, dt=np.float64, alpha=3.0)
    return cases


def _hint(case: Case, got_w: np.ndarray) -> str:
    """Name a classic mistake when the weights match it."""
    a = case.arrays
    args = (
        a["q"],
        a["k"],
        a["v"],
        a.get("mask"),
        case.scalars.get("scale"),
        float(case.scalars.get("alpha", 1.0)),
    )
    variants = {
        "softmax is taken over the queries (dim -2); it must be over the keys (dim -1)": {"softmax_axis": -2},
        "the bias has the wrong sign: it must be -|i - j| (farther keys get less weight)": {"bias_sign": 1.0},
    }
    for text, kw in variants.items():
        _, w = expected_attention(*args, **kw)  # type: ignore[arg-type]
        if w.shape == got_w.shape and np.allclose(got_w, w, rtol=1e-4, atol=1e-5):
            return f"; likely cause: {text}"
    if got_w.ndim == 3 and not np.allclose(got_w.astype(np.float64).sum(-1), 1.0, atol=1e-4):
        return "; the weights of a query do not sum to 1 over the keys"
    return ""


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the hidden tests and compare both outputs with the float64 expectation."""
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    cases = make_cases(np.random.default_rng())
    outputs, run = run_cases(sandbox, code, cases, task.limits.to_limits(), torch=True)
    tests: list[TestResult] = []
    for c in cases:
        out = outputs[c.name]
        if out.error is not None:
            tests.append(TestResult(name=c.name, passed=False, message=out.error))
            continue
        assert out.arrays is not None
        if len(out.arrays) != 2:
            tests.append(TestResult(name=c.name, passed=False, message=f"returned {len(out.arrays)} value(s); expected (out, weights)"))  # fmt: skip
            continue
        a = c.arrays
        e_out, e_w = expected_attention(
            a["q"], a["k"], a["v"], a.get("mask"), c.scalars.get("scale"), float(c.scalars.get("alpha", 1.0))
        )
        tol = 1e-4 if e_out.dtype == np.float32 else 1e-9
        msg = compare_array(out.arrays[1], e_w, c, rtol=tol, atol=tol, what="weights:")
        if msg:
            msg += _hint(c, out.arrays[1])
        else:
            msg = compare_array(out.arrays[0], e_out, c, rtol=tol, atol=tol, what="out:")
        if msg is None and out.arrays[0].dtype != e_out.dtype:
            msg = f"out dtype {out.arrays[0].dtype}, expected {e_out.dtype} (keep the input dtype)"
        tests.append(TestResult(name=c.name, passed=msg is None, message=msg or ""))
    return verdict(task, tests, start, error=run_error(run))


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with torch imported, so the next "Run tests" skips the import."""
    prewarm_harness(sandbox, task.limits.to_limits(), torch=True)
