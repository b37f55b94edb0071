"""Each Python task: the reference passes, realistic wrong solutions fail with the right message."""

from __future__ import annotations

import pytest

from interviewer.checker import check
from interviewer.checker.sandbox import Sandbox

from .conftest import reference

pytestmark = pytest.mark.sandbox


def _mutate(task_id: str, old: str, new: str) -> str:
    code = reference(task_id)
    assert old in code, f"mutation anchor missing in {task_id}: {old!r}"
    return code.replace(old, new)


CONV_LOOP = """import numpy as np

def conv2d(x, w, stride=1, padding=0):
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    n, c, h, wd = xp.shape
    o, _, kh, kw = w.shape
    ho, wo = (h - kh) // sh + 1, (wd - kw) // sw + 1
    y = np.zeros((n, o, ho, wo), dtype=x.dtype)
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            y[:, :, i, j] = np.einsum("ncij,ocij->no", patch, w)
    return y
"""

CASES = {
    "numpy-conv2d": [
        (_mutate("numpy-conv2d", "(ph, ph), (pw, pw)", "(ph + 1, ph + 1), (pw + 1, pw + 1)"), "shape"),
        (_mutate("numpy-conv2d", "[:, :, ::sh, ::sw]", ""), "shape"),  # stride ignored
        (
            _mutate(
                "numpy-conv2d", '"nchwij,ocij->nohw", win, w', '"nchwij,ocij->nohw", win, w[:, :, ::-1, ::-1]'
            ),
            "max abs error",
        ),  # a flipped kernel: true convolution, not cross-correlation
        (CONV_LOOP, "Python loop found at line 11: for loop"),
    ],
    "attention-distance-bias": [
        (_mutate("attention-distance-bias", "dim=-1)", "dim=-2)"), "softmax is taken over the queries"),
        (_mutate("attention-distance-bias", "bias = -(i - j).abs()", "bias = (i - j).abs()"), "wrong sign"),
        (
            _mutate(
                "attention-distance-bias", 'scores = scores.masked_fill(~mask.bool(), float("-inf"))', "pass"
            ),
            "max abs error",
        ),  # the mask is ignored
    ],
    "attention-train": [
        (
            _mutate(
                "attention-train",
                "    optimizer.zero_grad()  # gradients accumulate in .grad unless cleared\n",
                "",
            ),
            "call optimizer.zero_grad() in every step",
        ),
        (
            _mutate(
                "attention-train",
                "    loss.backward()\n    optimizer.step()",
                "    optimizer.step()\n    loss.backward()",
            ),
            "did not change after one step",
        ),
        (
            _mutate(
                "attention-train",
                "loss = loss_fn(model(x), y)\n",
                "loss = loss_fn(model(x), y)\n    out = loss\n",
            ).replace(
                "return loss.item()", "with torch.no_grad():\n        return loss_fn(model(x), y).item()"
            ),
            "returned",
        ),  # returns the loss after the update
    ],
    "int8-quantize": [
        (
            _mutate("int8-quantize", "lo = np.minimum(np.min(x, axis=red), 0.0)", "lo = np.min(x, axis=red)")
            .replace("hi = np.maximum(np.max(x, axis=red), 0.0)", "hi = np.max(x, axis=red)")
            .replace(
                "zp = np.clip(np.round(-128.0 - lo / scale), -128, 127).astype(np.int32)",
                "zp = np.round(-128.0 - lo / scale).astype(np.int32)",
            ),
            "overflows int8",
        ),
        (
            _mutate(
                "int8-quantize",
                "np.clip(np.round(x / _expand(scale, x.ndim, axis)), -127, 127)",
                "np.trunc(x / _expand(scale, x.ndim, axis))",
            ),
            "round (not truncate)",
        ),
        (_mutate("int8-quantize", "scale = (amax / 127.0)", "scale = (amax / 255.0)"), "round-trip error"),
        (
            _mutate(
                "int8-quantize",
                "        scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)\n        zp = np.clip",
                "        zp = np.clip",
            ),
            "a zero range needs scale 1.0",
        ),
        (
            _mutate(
                "int8-quantize", "return q.astype(np.int8), scale, zp", "return q.astype(np.int16), scale, zp"
            ),
            "expected int8",
        ),
    ],
    "unique-triplets": [
        (
            _mutate(
                "unique-triplets",
                "        if i > 0 and a[i] == a[i - 1]:\n            continue  # same first value: same triplets\n",
                "",
            ),
            "appears",
        ),  # duplicates not skipped
        (
            "import itertools\n\ndef three_sum(nums, target):\n    return [list(t) for t in sorted({tuple(sorted(c)) for c in "
            "itertools.combinations(nums, 3) if sum(c) == target})]\n",
            "your solution looks O(n^3)",
        ),  # O(n^3)
        (
            _mutate(
                "unique-triplets", "out.append([a[i], a[lo], a[hi]])", "out.append([a[hi], a[lo], a[i]])"
            ),
            "not sorted",
        ),
    ],
    "merge-intervals": [
        (
            _mutate("merge-intervals", "if out and s <= out[-1][1]:", "if out and s < out[-1][1]:"),
            "expected",
        ),  # touching
        (
            _mutate("merge-intervals", "while i < len(a) or j < len(b):", "while i < len(a) and j < len(b):"),
            "missing",
        ),
        (
            _mutate("merge-intervals", "out[-1][1] = max(out[-1][1], e)", "out[-1][1] = e"),
            "expected",
        ),  # nested
    ],
}


@pytest.mark.parametrize("task_id", sorted(CASES))
def test_reference_passes(task_id: str, sandbox: Sandbox) -> None:
    v = check(task_id, reference(task_id), sandbox=sandbox)
    assert v.passed, v.render_text()
    assert not v.warnings


@pytest.mark.parametrize(
    ("task_id", "idx"), [(t, i) for t, wrongs in sorted(CASES.items()) for i in range(len(wrongs))]
)
def test_wrong_solution_fails_with_the_right_message(task_id: str, idx: int, sandbox: Sandbox) -> None:
    code, message = CASES[task_id][idx]
    v = check(task_id, code, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert message in text, text
