"""Grader for int8-quantize: checks properties (dtype, range, round-trip bound, exact zero) and the scales."""

from __future__ import annotations

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


def expected_params(x: np.ndarray, mode: str, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point as the statement defines them (float64 here, compared with a tolerance)."""
    red = None if axis is None else tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    x64 = x.astype(np.float64)
    if mode == "symmetric":
        scale = np.max(np.abs(x64), axis=red) / 127.0
        scale = np.where(scale > 0, scale, 1.0)
        return scale, np.zeros_like(scale, dtype=np.int64)
    lo = np.minimum(np.min(x64, axis=red), 0.0)
    hi = np.maximum(np.max(x64, axis=red), 0.0)
    scale = (hi - lo) / 255.0
    scale = np.where(scale > 0, scale, 1.0)
    zp = np.clip(np.round(-128.0 - lo / scale), -128, 127).astype(np.int64)
    return scale, zp


def _bcast(v: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    if axis is None or v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def make_cases(rng: np.random.Generator) -> list[Case]:
    """Fresh tensors each run; names say which property or edge case each one probes."""

    def with_zeros(x: np.ndarray) -> np.ndarray:
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, size=max(1, flat.size // 10), replace=False)] = 0.0
        return x

    f32 = np.float32
    per_ch = rng.standard_normal((8, 32)) * rng.uniform(0.01, 10.0, size=(8, 1))
    const_ch = rng.standard_normal((4, 6, 5)).astype(f32)
    const_ch[:, 2, :] = 0.0  # one channel is all zeros: its range is 0
    outliers = np.concatenate([rng.standard_normal(200), [50.0, -50.0, 49.99]]).astype(f32)
    neg_big = rng.standard_normal((5, 8)).astype(f32)  # its most negative value has the largest magnitude
    neg_big.reshape(-1)[rng.integers(neg_big.size)] = -(np.abs(neg_big).max() + rng.uniform(0.5, 2.0))
    specs: list[tuple[str, np.ndarray, str, int | None]] = [
        ("symmetric per-tensor", with_zeros(rng.standard_normal((4, 16)).astype(f32)), "symmetric", None),
        (
            "asymmetric per-tensor, skewed range",
            with_zeros(rng.uniform(-1, 3, (6, 10)).astype(f32)),
            "asymmetric",
            None,
        ),
        (
            "symmetric per-channel (axis 0), very different ranges",
            with_zeros(per_ch.astype(f32)),
            "symmetric",
            0,
        ),
        (
            "asymmetric per-channel (axis 1)",
            with_zeros(rng.uniform(-2, 5, (16, 6, 5)).astype(f32)),
            "asymmetric",
            1,
        ),
        ("asymmetric, all-negative tensor", rng.uniform(-5, -1, (7, 9)).astype(f32), "asymmetric", None),
        ("asymmetric, all-positive tensor", rng.uniform(1, 4, (7, 9)).astype(f32), "asymmetric", None),
        (
            "constant tensor (asymmetric)",
            np.full((5, 7), rng.uniform(0.5, 3)).astype(f32),
            "asymmetric",
            None,
        ),
        ("all-zero tensor (symmetric)", np.zeros((3, 4), dtype=f32), "symmetric", None),
        ("per-channel with an all-zero channel (asymmetric, axis 1)", const_ch, "asymmetric", 1),
        ("range ends: large outliers clip, no int8 wrap-around", outliers, "asymmetric", None),
        ("symmetric, the minimum has the largest magnitude", neg_big, "symmetric", None),
        (
            "symmetric, extremes map to +-127",
            np.array([-3.0, -1.5, 0.0, 1.5, 3.0, 2.99], dtype=f32),
            "symmetric",
            None,
        ),
    ]
    cases = [
        Case(name=n, func="quantize", arrays={"x": x}, scalars={"mode": m, "axis": a}) for n, x, m, a in specs
    ]
    q = rng.integers(-128, 128, size=(5, 4, 3)).astype(np.int8)
    q = rng.integers(-128, 128, size=(5, 4, 3)).astype(np.int8)
    deq_ch: dict[str, np.ndarray] = {
        "q": q,
        "scale": rng.uniform(0.01, 0.5, 4).astype(f32),
        "zero_point": rng.integers(-20, 20, 4).astype(np.int32),
    }
    cases.append(
        Case(name="dequantize per-channel (axis 1)", func="dequantize", arrays=deq_ch, scalars={"axis": 1})
    )
    deq_t: dict[str, np.ndarray] = {
        "q": rng.integers(-128, 128, size=(6, 6)).astype(np.int8),
        "scale": np.array(0.05, dtype=f32),
        "zero_point": np.array(-7, dtype=np.int32),
    }
    cases.append(Case(name="dequantize per-tensor", func="dequantize", arrays=deq_t, scalars={"axis": None}))
    return cases


def expected_range(x: np.ndarray, mode: str, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The range [lo, hi] the scale must cover, per tensor or per channel (float64)."""
    red = None if axis is None else tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    x64 = x.astype(np.float64)
    if mode == "symmetric":
        amax = np.max(np.abs(x64), axis=red)
        return -amax, amax
    return np.minimum(np.min(x64, axis=red), 0.0), np.maximum(np.max(x64, axis=red), 0.0)


def _round_trip_hint(
    x: np.ndarray,
    q: np.ndarray,
    scale: np.ndarray,
    zp: np.ndarray,
    idx: tuple[int, ...],
    mode: str,
    axis: int | None,
    lo_q: int,
) -> str:
    """Why one element does not round-trip: which end of the range the scale misses, a wrap, or truncation.

    A value outside what (scale, zero_point) can represent was clipped: the fix is the range, not the rounding.
    """
    ch = () if axis is None or scale.ndim == 0 else (idx[axis % x.ndim],)
    s, z = float(scale[ch]), int(zp[ch])
    lo_all, hi_all = expected_range(x, mode, axis)
    lo, hi = float(lo_all[ch]), float(hi_all[ch])
    rep_lo, rep_hi = (lo_q - z) * s, (127 - z) * s  # the values q in [lo_q, 127] stand for
    v = float(x[idx])
    if rep_lo - s / 2 <= v <= rep_hi + s / 2:
        q_raw = int(np.round(v / s)) + z
        got = int(q[idx])
        if abs(got - q_raw) <= 1:
            return "round (not truncate) x / scale to the nearest integer"
        want = min(max(q_raw, lo_q), 127)
        wrapped = " (it wrapped around: clip to the int8 range before casting)" if want != q_raw else ""
        return f"with your scale and zero point, q should be round(x / scale) + zero_point = {want}{wrapped}"
    below = v < rep_lo
    where = f" of channel {ch[0]}" if ch else ""
    msg = (
        f"x is {'below the smallest' if below else 'above the largest'} value your scale and zero point can "
        f"represent (({lo_q if below else 127} - zero_point) * scale = {rep_lo if below else rep_hi:.4g}), so "
        "it was clipped: (scale, zero_point) do not cover the range, rounding is not the problem; "
    )
    x_max = float(np.max(np.take(x, ch[0], axis=axis) if ch and axis is not None else x))  # in this channel
    if mode == "symmetric":
        from_max = max(x_max, 0.0) / 127.0
        if x_max < hi and abs(s - from_max) <= 1e-4 * hi:
            msg += f"your scale is x.max() / 127 = {from_max:.4g}, which ignores the minimum; "
        return msg + (
            f"symmetric scale = max|x| / 127 covers [-max|x|, max|x|] = [{lo:.4g}, {hi:.4g}]{where}, and max|x| "
            "counts the most negative value too"
        )
    from_max = hi / 255.0
    if lo < 0 and abs(s - from_max) <= 1e-4 * (hi - lo):
        msg += f"your scale is max(x, 0) / 255 = {from_max:.4g}, which ignores the minimum {lo:.4g}; "
    return msg + (
        f"(scale, zero_point) must cover [lo, hi] = [min(x.min(), 0), max(x.max(), 0)] = [{lo:.4g}, {hi:.4g}]"
        f"{where}, so scale = (hi - lo) / 255 and zero_point = round(-128 - lo / scale)"
    )


def _check_quantize(case: Case, outs: list[np.ndarray]) -> str | None:
    x = case.arrays["x"]
    mode, axis = case.scalars["mode"], case.scalars["axis"]
    if len(outs) != 3:
        return f"returned {len(outs)} value(s); expected (q, scale, zero_point)"
    q, scale, zp = outs
    if q.dtype != np.int8:
        return f"q has dtype {q.dtype}; expected int8"
    if q.shape != x.shape:
        return f"q has shape {q.shape}; expected {x.shape} like x"
    exp_scale, exp_zp = expected_params(x, mode, axis)
    if scale.size != exp_scale.size or zp.size != exp_scale.size:
        return f"scale has shape {scale.shape} and zero_point {zp.shape}; expected {exp_scale.shape} (one per channel along axis {axis})"  # fmt: skip
    scale = scale.reshape(exp_scale.shape).astype(np.float64)
    zp = zp.reshape(exp_scale.shape)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        return f"scale contains {scale[~np.isfinite(scale) | (scale <= 0)][:3]}: a zero range needs scale 1.0, never 0, NaN or inf"  # fmt: skip
    if zp.dtype.kind not in "iu" and not np.all(zp == np.round(zp)):
        return f"zero_point must be an integer; got {zp.dtype} values like {zp.reshape(-1)[:3]}"
    zp = zp.astype(np.int64)
    if np.any(zp < -128) or np.any(zp > 127):
        bad = zp[(zp < -128) | (zp > 127)].reshape(-1)[0]
        return (
            f"zero_point {bad} is outside [-128, 127]: it overflows int8 (include 0 in the range and clip it)"
        )
    if mode == "symmetric" and np.any(zp != 0):
        return f"symmetric quantization needs zero_point 0; got {zp.reshape(-1)[:3]}"
    lo_q = -127 if mode == "symmetric" else -128
    if int(q.min()) < lo_q:
        return f"q contains {int(q.min())}; symmetric int8 uses [-127, 127]"
    s_b, z_b = _bcast(scale, x.ndim, axis), _bcast(zp, x.ndim, axis)
    x_hat = (q.astype(np.int64) - z_b) * s_b
    err = np.abs(x_hat - x.astype(np.float64))
    bound = np.broadcast_to(s_b / 2, x.shape) * (1 + 1e-4) + 1e-7
    if np.any(err > bound):
        idx = tuple(int(i) for i in np.argwhere(err > bound)[0])
        return (
            f"round-trip error {err[idx]:.4g} > scale/2 = {bound[idx]:.4g} at index {idx} (x={x[idx]:.6g}, "
            f"q={int(q[idx])}, dequantized {x_hat[idx]:.6g}): "
            + _round_trip_hint(x, q, scale, zp, idx, mode, axis, lo_q)
        )
    zeros = x == 0
    if np.any(zeros) and np.any(x_hat[zeros] != 0):
        idx = tuple(int(i) for i in np.argwhere(zeros & (x_hat != 0))[0])
        return f"0.0 at index {idx} came back as {x_hat[idx]:.6g}: 0 must be exactly representable (q == zero_point)"
    msg = compare_array(scale, exp_scale, case, rtol=1e-5, atol=1e-12, what="scale:")
    if msg:
        rule = (
            "symmetric scale = max|x| / 127, the largest magnitude at either end"
            if mode == "symmetric"
            else "asymmetric scale = (hi - lo) / 255 over [lo, hi] = [min(x.min(), 0), max(x.max(), 0)]"
        )
        return f"{msg} ({rule}; a zero range gets scale 1.0)"
    if np.any(np.abs(zp - exp_zp) > 1):
        return f"zero_point {zp.reshape(-1)[:4]} differs from round(-128 - lo / scale) = {exp_zp.reshape(-1)[:4]}"
    return None


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """Run the hidden tests; every property is checked here on the returned arrays."""
    start = time.monotonic()
    err = syntax_error(code)
    if err:
        return verdict(task, [], start, error=err)
    cases = make_cases(np.random.default_rng())
    outputs, run = run_cases(sandbox, code, cases, task.limits.to_limits())
    tests: list[TestResult] = []
    for c in cases:
        out = outputs[c.name]
        if out.error is not None:
            msg: str | None = out.error
        elif c.func == "quantize":
            assert out.arrays is not None
            msg = _check_quantize(c, out.arrays)
        else:
            assert out.arrays is not None
            q, s, z = (c.arrays[k] for k in ("q", "scale", "zero_point"))
            axis = c.scalars["axis"]
            exp = (q.astype(np.int64) - _bcast(z, q.ndim, axis)) * _bcast(s.astype(np.float64), q.ndim, axis)
            msg = compare_array(out.arrays[0], exp, c, rtol=1e-6, atol=1e-7)
            if msg is None and out.arrays[0].dtype != np.float32:
                msg = f"dtype {out.arrays[0].dtype}; expected float32"
        tests.append(TestResult(name=c.name, passed=msg is None, message=msg or ""))
    return verdict(task, tests, start, error=run_error(run))


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Pre-start a box with NumPy imported, so the next "Run tests" starts warm."""
    prewarm_harness(sandbox, task.limits.to_limits(), torch=False)
