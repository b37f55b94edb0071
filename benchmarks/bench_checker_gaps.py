"""How often wrong submissions slip through the hidden cases, over many random draws (no sandbox).

Usage: .venv/bin/python benchmarks/bench_checker_gaps.py [--draws 3000]

Each draw is one seed of a grader's ``make_cases``; the wrong function runs in this process and is judged the
way the grader judges it. "Before" keeps only the cases the grader had before the fixed ones were added
(numpy-conv2d draws them from the random stream exactly as it did, so its rate is the old grader's).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

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
    print(
        f"{args.draws} draws per row; a wrong submission's pass rate with the cases before and after the fix\n"
    )
    print("| task | wrong submission | passed before | passed now |")
    print("| --- | --- | --- | --- |")
    for task, label, b, a in rows:
        print(f"| {task} | {label} | {b} ({b / args.draws:.2%}) | {a} ({a / args.draws:.2%}) |")


if __name__ == "__main__":
    main()
