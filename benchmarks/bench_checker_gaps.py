"""How often wrong submissions slip through the hidden cases, over many random draws (no sandbox).

Usage: .venv/bin/python benchmarks/bench_checker_gaps.py [--draws 3000]

Each draw is one seed of a grader's ``make_cases``; the wrong function runs in this process and is judged the
way the grader judges it. "Before" keeps only the cases the grader had before the fixed ones were added
(numpy-conv2d draws them from the random stream exactly as it did, so its rate is the old grader's).

GPU kernel tasks: the wrong kernel is emulated in NumPy (its output, or the measurements the simulator
would report for it) and judged by the grader's own checkers and efficiency tests. "Before" is the old
grader: the reduction's sizes as it drew them, LayerNorm without its variance-near-eps row, and the
load-count / coalescing tests measured only at the one fixed size (32x32x32, 64x64).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from interviewer.checker.gpu_tasks import common as gpu
from interviewer.checker.gpu_tasks import layernorm, matmul, reduce, transpose
from interviewer.checker.python_tasks import conv2d, int8_quantize
from interviewer.checker.python_tasks.common import Case, compare_array

NEW_CONV = "%"  # only the fixed-remainder cases have it in their names


def _conv(ho_rule: Callable[[int, int, int], int]) -> Callable[..., np.ndarray]:
    def fn(x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int]) -> np.ndarray:
        (sh, sw), (ph, pw) = stride, padding
        xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        kh, kw = w.shape[2], w.shape[3]
        ho, wo = ho_rule(xp.shape[2], kh, sh), ho_rule(xp.shape[3], kw, sw)
        rows = (np.arange(ho) * sh)[:, None] + np.arange(kh)[None, :]
        cols = (np.arange(wo) * sw)[:, None] + np.arange(kw)[None, :]
        patches = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]
        return np.einsum("ncijab,ocab->noij", patches, w).astype(x.dtype)

    return fn


def _pair(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _conv_ok(fn: Callable[..., np.ndarray], c: Case) -> bool:
    stride, padding = _pair(c.scalars["stride"]), _pair(c.scalars["padding"])
    exp = conv2d.expected_conv2d(c.arrays["x"], c.arrays["w"], stride, padding)
    try:
        got = fn(c.arrays["x"], c.arrays["w"], stride, padding)
    except IndexError:  # an output larger than the input allows: the case fails with the error
        return False
    return compare_array(got, exp, c, rtol=1e-4, atol=1e-4) is None


def _int8_sym_from_max(x: np.ndarray, mode: str, axis: int | None) -> tuple[np.ndarray, ...]:
    """max(x) / 127 instead of max|x| / 127 (the asymmetric path is right)."""
    red = None if axis is None else tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    scale, zp = int8_quantize.expected_params(x, mode, axis)
    if mode == "symmetric":
        scale = np.asarray(np.max(x.astype(np.float64), axis=red) / 127.0)
        scale = np.where(scale > 0, scale, 1.0)
    s = (
        scale
        if axis is None
        else np.expand_dims(scale, tuple(i for i in range(x.ndim) if i != axis % x.ndim))
    )
    z = zp if axis is None else np.expand_dims(zp, tuple(i for i in range(x.ndim) if i != axis % x.ndim))
    lo = -127 if mode == "symmetric" else -128
    q = np.clip(np.round(x / s) + z, lo, 127).astype(np.int8)
    return q, scale.astype(np.float32), zp


def _pow2_only_ok(n: int, block: int = 128) -> bool:
    """A tree that halves n each step inside one block: right for n = 0, a power of two, or a full block."""
    return n == 0 or n >= block or not n & (n - 1)


def _pow2_only_sum(x: np.ndarray) -> float:
    n = x.size
    if _pow2_only_ok(n):
        return float(x.astype(np.float64).sum())
    return float(x[: 1 << (n.bit_length() - 1)].astype(np.float64).sum())  # the odd tail is dropped


def _old_reduce_sizes(rng: np.random.Generator) -> list[int]:
    """The sizes the reduction grader drew before (default_rng(), no seed logged)."""
    small = int(rng.integers(20, 60))
    odd = 32 * int(rng.integers(28, 36)) + int(rng.integers(1, 32))
    return [0, 1, small, odd, 4096]


def _eps_outside(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    return ((x64 - mean) / (np.sqrt(var) + eps) * gamma + beta).astype(np.float32)


def _kresult(case: gpu.KCase, arrays: dict[str, dict[str, int]]) -> gpu.KResult:
    return gpu.KResult(case, outputs={}, report={"arrays": arrays})


def _matmul_special(case: gpu.KCase) -> gpu.KResult:
    """Tiled (16 x 16) at 32x32x32 only, naive elsewhere: the loads the simulator counts for each."""
    (m, k), n = case.inputs["a"].shape, case.inputs["b"].shape[1]
    if (m, k, n) == (32, 32, 32):
        la, lb = m * k * -(-n // 16), k * n * -(-m // 16)
    else:
        la = lb = m * n * k
    return _kresult(case, {"a": {"loads": la}, "b": {"loads": lb}})


def _transpose_special(case: gpu.KCase) -> gpu.KResult:
    """Coalesced through a tile at 64x64 only, naive elsewhere (a warp's strided stores: 32 sectors)."""
    coalesced = case.inputs["a"].shape == (64, 64)
    store = 4 if coalesced else 32
    return _kresult(
        case,
        {"a": {"load_requests": 1, "load_sectors": 4}, "out": {"store_requests": 1, "store_sectors": store}},
    )


def gpu_rows(draws: int) -> list[tuple[str, str, int, int]]:
    rows = []
    before = after = 0
    for seed in range(draws):
        before += all(_pow2_only_ok(n) for n in _old_reduce_sizes(np.random.default_rng(seed)))
        cases = reduce.make_cases(np.random.default_rng(seed))
        after += all(
            reduce._check_sum(c)({"out": np.array([_pow2_only_sum(c.inputs["x"])], np.float32)}) is None
            for _, c in cases
        )
    rows.append(("gpu-reduce-sum", "tree that assumes n is a power of two below one block", before, after))
    before = after = 0
    for seed in range(draws):
        ok = {}
        for label, c, chk in layernorm.make_cases(np.random.default_rng(seed)):
            ok[label] = chk({"out": _eps_outside(**c.inputs, eps=c.scalars["eps"])}) is None
        before += all(v for label, v in ok.items() if "variance near eps" not in label)
        after += all(ok.values())
    rows.append(("gpu-layernorm", "eps outside the square root: 1 / (sqrt(var) + eps)", before, after))
    for task, mod, fake, test, fixed in (
        ("gpu-tiled-matmul", matmul, _matmul_special, matmul.reuse_test, (32, 32)),
        ("gpu-transpose", transpose, _transpose_special, transpose.coalescing_test, (64, 64)),
    ):
        before = after = 0
        for seed in range(draws):
            results = [fake(c) for _, c, _ in mod.make_cases(np.random.default_rng(seed))]
            # The old grader measured one fixed size; at that size this kernel is the efficient one.
            fixed_case = gpu.KCase(
                "fixed", "f", {"a": np.zeros(fixed, np.float32), "b": np.zeros((32, 32), np.float32)}, {}
            )
            before += test([fake(fixed_case)]).passed
            after += test(results).passed
        what = "load-count" if mod is matmul else "coalescing"
        rows.append(
            (task, f"efficient only at the size the old {what} test used, naive elsewhere", before, after)
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=3000)
    args = ap.parse_args()
    rows: list[tuple[str, str, int, int]] = []
    rules = {
        "conv2d H_out = (L - K + 1) // s": lambda n, k, s: (n - k + 1) // s,
        "conv2d H_out = ceil((L - K) / s) + 1": lambda n, k, s: -(-(n - k) // s) + 1,
    }
    for label, rule in rules.items():
        fn = _conv(rule)
        before = after = 0
        for seed in range(args.draws):
            ok = {c.name: _conv_ok(fn, c) for c in conv2d.make_cases(np.random.default_rng(seed))}
            before += all(v for n, v in ok.items() if NEW_CONV not in n)
            after += all(ok.values())
        rows.append(("numpy-conv2d", label, before, after))
    before = after = 0
    for seed in range(args.draws):
        ok = {}
        for c in int8_quantize.make_cases(np.random.default_rng(seed)):
            if c.func == "quantize":
                outs = list(_int8_sym_from_max(c.arrays["x"], c.scalars["mode"], c.scalars["axis"]))
                ok[c.name] = int8_quantize._check_quantize(c, outs) is None
        before += all(v for n, v in ok.items() if n != "symmetric, the minimum has the largest magnitude")
        after += all(ok.values())
    rows.append(("int8-quantize", "symmetric scale = max(x) / 127 (not max|x|)", before, after))
    rows += gpu_rows(args.draws)
    print(
        f"{args.draws} draws per row; a wrong submission's pass rate with the cases before and after the fix\n"
    )
    print("| task | wrong submission | passed before | passed now |")
    print("| --- | --- | --- | --- |")
    for task, label, b, a in rows:
        print(f"| {task} | {label} | {b} ({b / args.draws:.2%}) | {a} ({a / args.draws:.2%}) |")


if __name__ == "__main__":
    main()
