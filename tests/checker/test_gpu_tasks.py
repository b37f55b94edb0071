"""GPU kernel tasks: each reference passes; racy, off-by-one, unstable and forged submissions fail, and say why.

The kernels run in Numba's CUDA simulator inside the real strict sandbox. Each wrong submission is the
reference with one realistic mistake (or a forgery); the test names the message a candidate would act on.
"""

from __future__ import annotations

import pytest

from interviewer.checker import check
from interviewer.checker.gpu_tasks import policy

from .conftest import reference


def _mutate(task_id: str, old: str, new: str) -> str:
    code = reference(task_id)
    assert old in code, f"mutation anchor missing in {task_id}: {old!r}"
    return code.replace(old, new, 1)


def _failed(task_id: str, code: str) -> str:
    """Run the hidden tests; the verdict must fail. Returns every failure message, for matching."""
    v = check(task_id, code, prewarm=False)
    assert not v.passed, f"{task_id}: a wrong submission passed:\n{v.render_text()}"
    return v.render_text()


RACY_TREE = ("            s[t] += s[t + step]\n        cuda.syncthreads()", "            s[t] += s[t + step]")
HOST_NUMPY = """import numpy as np
from numba import cuda

@cuda.jit
def noop(x):
    pass

def reduce_sum(x, out):
    noop[1, 32](x)
    total = np.float32(np.asarray(x).sum())   # compute on the host instead of on the GPU
    out.copy_to_device(np.array([total], dtype=np.float32))
"""
HOST_COPY = HOST_NUMPY.replace("np.asarray(x).sum()", "x.copy_to_host().sum()")
ONE_THREAD = """from numba import cuda

@cuda.jit
def serial(x, out):
    if cuda.grid(1) == 0:
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
        out[0] = acc

def reduce_sum(x, out):
    serial[1, 1](x, out)
"""
ATOMIC_PER_ELEMENT = """import math
from numba import cuda

@cuda.jit
def zero(out):
    if cuda.grid(1) == 0:
        out[0] = 0.0

@cuda.jit
def add_all(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])

def reduce_sum(x, out):
    zero[1, 32](out)
    if x.shape[0]:
        add_all[math.ceil(x.shape[0] / 128), 128](x, out)
"""

# One racy version of each reference (a barrier removed or an increment made non-atomic), for the browser test too.
RACY: dict[str, tuple[str, str]] = {
    "gpu-reduce-sum": RACY_TREE,
    "gpu-online-softmax": ("            ss[t] = s2\n        cuda.syncthreads()", "            ss[t] = s2"),
    "gpu-tiled-matmul": (
        "            acc += sa[ty, kk] * sb[kk, tx]\n        cuda.syncthreads()",
        "            acc += sa[ty, kk] * sb[kk, tx]",
    ),
    "gpu-layernorm": ("    total = s[0]\n    cuda.syncthreads()", "    total = s[0]"),
    "gpu-histogram": ("cuda.atomic.add(h, x[i], 1)", "h[x[i]] += 1"),
    "gpu-transpose": ("    cuda.syncthreads()\n", ""),
}

CASES: dict[str, list[tuple[str, str]]] = {
    "gpu-reduce-sum": [
        (_mutate("gpu-reduce-sum", *RACY_TREE), "race on shared array `s`"),
        (
            _mutate(
                "gpu-reduce-sum",
                "    acc = float32(0.0)\n",
                "    if i >= x.shape[0]:\n        return\n    acc = float32(0.0)\n",
            ),
            "barrier divergence",
        ),
        (_mutate("gpu-reduce-sum", "while i < x.shape[0]:", "while i < x.shape[0] - 1:"), "out[0] is"),
        (
            _mutate("gpu-reduce-sum", "    zero[1, 32](out)\n    if n == 0:\n        return\n", ""),
            "invalid configuration",
        ),
        (HOST_NUMPY, "device array `x` on the host"),
        (HOST_COPY, "copy_to_host of device array `x`"),
        (ONE_THREAD, "one thread loaded"),
        (ATOMIC_PER_ELEMENT, "atomics from"),
    ],
    "gpu-online-softmax": [
        (
            _mutate(
                "gpu-online-softmax",
                "out[row, j] = math.exp(x[row, j] - row_max) / row_sum",
                "out[row, j] = math.exp(x[row, j]) / (row_sum * math.exp(row_max))",
            ),
            "huge logits",
        ),  # exp of the raw logit: overflows near 800
        (
            _mutate(
                "gpu-online-softmax",
                "            sm[t] = m2\n            ss[t] = s2\n        cuda.syncthreads()",
                "            sm[t] = m2\n            ss[t] = s2",
            ),
            "race on shared array",
        ),
        (
            _mutate(
                "gpu-online-softmax",
                "        if v > m:\n            s = s * math.exp(m - v) + 1.0\n            m = v\n"
                "        elif m != -math.inf:\n            s += math.exp(v - m)",
                "        m = max(m, v)\n    for j in range(t, cols, TPB):\n        v = x[row, j]\n"
                "        if m != -math.inf:\n            s += math.exp(v - m)",
            ),
            "read 3.00 times per element",
        ),  # a correct three-pass softmax: not online
        (
            _mutate(
                "gpu-online-softmax",
                "for j in range(t, cols, TPB):\n        out",
                "for j in range(t, cols - 1, TPB):\n        out",
            ),
            "never written",
        ),  # off by one at the end of each row
    ],
    "gpu-tiled-matmul": [
        (
            _mutate(
                "gpu-tiled-matmul",
                "            acc += sa[ty, kk] * sb[kk, tx]\n        cuda.syncthreads()",
                "            acc += sa[ty, kk] * sb[kk, tx]",
            ),
            "race on shared array",
        ),  # the second barrier: the next tile overwrites sa/sb while others still read
        (
            _mutate(
                "gpu-tiled-matmul", "if row < m and col < n:\n        c[row, col] = acc", "c[row, col] = acc"
            ),
            "out-of-bounds access `c`",
        ),
        (
            """import math
from numba import cuda, float32

@cuda.jit
def naive(a, b, c):
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc

def matmul(a, b, c):
    m, n = c.shape[0], c.shape[1]
    naive[(math.ceil(m / 16), math.ceil(n / 16)), (16, 16)](a, b, c)
""",
            "(1.0x below naive",
        ),
    ],
    "gpu-layernorm": [
        (
            """import math
from numba import cuda, float32

TPB = 64

@cuda.jit
def ln(x, gamma, beta, out, eps):
    s1 = cuda.shared.array(TPB, float32)
    s2 = cuda.shared.array(TPB, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    a = 0.0
    b = 0.0
    for j in range(t, cols, TPB):
        v = x[row, j]
        a += v
        b += v * v
    s1[t] = a
    s2[t] = b
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            s1[t] += s1[t + step]
            s2[t] += s2[t + step]
        cuda.syncthreads()
        step //= 2
    mean = s1[0] / cols
    var = s2[0] / cols - mean * mean   # E[x^2] - E[x]^2 in float32 shared memory
    inv = 1.0 / math.sqrt(max(var, 0.0) + eps)
    for j in range(t, cols, TPB):
        out[row, j] = (x[row, j] - mean) * inv * gamma[j] + beta[j]

def layernorm(x, gamma, beta, out, eps):
    ln[x.shape[0], TPB](x, gamma, beta, out, eps)
""",
            "values far from zero",
        ),
        (
            _mutate("gpu-layernorm", "block_sum(s, t) / cols + eps", "block_sum(s, t) / (cols - 1) + eps"),
            "rows shorter",
        ),
        (
            _mutate("gpu-layernorm", "    total = s[0]\n    cuda.syncthreads()", "    total = s[0]"),
            "race on shared array `s`",
        ),
    ],
    "gpu-histogram": [
        (_mutate("gpu-histogram", "cuda.atomic.add(h, x[i], 1)", "h[x[i]] += 1"), "race on shared array `h`"),
        (_mutate("gpu-histogram", "    zero[math.ceil(nbins / TPB), TPB](hist)\n", ""), "garbage"),
        (
            _mutate(
                "gpu-histogram",
                "    for b in range(t, nbins, TPB):  # more bins",
                "    if t < nbins:  # more bins",
            ).replace("        h[b] = 0\n", "        h[t] = 0\n", 1),
            "uninitialised shared memory",
        ),  # clears only the first TPB bins
        (
            """import math
from numba import cuda

@cuda.jit
def zero(hist):
    i = cuda.grid(1)
    if i < hist.shape[0]:
        hist[i] = 0

@cuda.jit
def count(x, hist):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(hist, x[i], 1)

def histogram(x, hist):
    zero[math.ceil(hist.shape[0] / 128), 128](hist)
    if x.shape[0]:
        count[math.ceil(x.shape[0] / 128), 128](x, hist)
""",
            "global atomics on hist",
        ),
    ],
    "gpu-transpose": [
        (
            _mutate("gpu-transpose", "(TILE, TILE + 1), float32", "(TILE, TILE), float32"),
            "32-way bank conflict on `tile`",
        ),
        (_mutate("gpu-transpose", "    cuda.syncthreads()\n", ""), "race on shared array `tile`"),
        (
            """import math
from numba import cuda

@cuda.jit
def naive(a, out):
    x, y = cuda.grid(2)
    if y < a.shape[0] and x < a.shape[1]:
        out[x, y] = a[y, x]

def transpose(a, out):
    naive[(math.ceil(a.shape[1] / 32), math.ceil(a.shape[0] / 8)), (32, 8)](a, out)
""",
            "stores of `out` touch",
        ),
    ],
}


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(CASES))
def test_reference_passes_and_wrong_kernels_fail_with_the_reason(task_id: str) -> None:
    v = check(task_id, reference(task_id), prewarm=False)
    assert v.passed, v.render_text()
    assert len(v.tests) >= 10 and v.error is None
    for code, needle in CASES[task_id]:
        text = _failed(task_id, code)
        assert needle in text, f"{task_id}: expected {needle!r} in:\n{text}"


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(RACY))
def test_removing_a_barrier_or_an_atomic_is_a_race(task_id: str) -> None:
    text = _failed(task_id, _mutate(task_id, *RACY[task_id]))
    assert "race on shared array" in text, text


@pytest.mark.sandbox
def test_a_race_names_the_array_both_threads_their_lines_and_the_fix() -> None:
    text = _failed("gpu-reduce-sum", _mutate("gpu-reduce-sum", *RACY_TREE))
    race = next(line for line in text.splitlines() if "race on shared array" in line)
    assert "`s` element" in race and "thread (0,0)" in race and "thread (1,0)" in race
    line = reference("gpu-reduce-sum").splitlines().index("            s[t] += s[t + step]") + 1
    assert f" read at line {line}" in race and f" write at line {line}" in race  # the tree step's own line
    assert "missing cuda.syncthreads()?" in race


@pytest.mark.sandbox
def test_starters_show_a_launch_and_fail_cleanly() -> None:
    from interviewer.checker import get_task

    for task_id in CASES:
        task = get_task(task_id)
        assert "@cuda.jit" in task.starter_code and "](" in task.starter_code, (
            task_id
        )  # a kernel and a launch
        assert not policy.check(task.starter_code), task_id
    v = check("gpu-histogram", get_task("gpu-histogram").starter_code, prewarm=False)
    assert not v.passed and v.error is None and "hist arrives holding garbage" in v.render_text()


FORGERIES = {
    "reads the simulator's private state": ("def reduce_sum(x, out):\n    v = x._a.sum()\n", "underscore"),
    "imports sys to walk frames": ("import sys\n", "`import sys` is not allowed"),
    "getattr with a string": ("def reduce_sum(x, out):\n    getattr(x, 'copy_to_host')()\n", "`getattr`"),
    "rewrites the scheduler": (
        "def reduce_sum(x, out):\n    cuda.simulator.kernel.BlockManager = None\n",
        "assigning or deleting attributes",
    ),
    "a kernel that smuggles data into a module-level array": (
        "import numpy as np\nBUF = np.zeros(4)\n@cuda.jit\ndef leak(x):\n    BUF[0] = x[0]\n",
        "kernels see module globals as compile-time constants",
    ),
    "numpy inside a kernel": (
        "import numpy as np\n@cuda.jit\ndef k(x, out):\n    out[0] = np.sum(x)\n",
        "`np.sum`",
    ),
    "catching kernel faults to read data out of the messages": (
        "def reduce_sum(x, out):\n    try:\n        pass\n    except Exception:\n        pass\n",
        "try/except",
    ),
    "format strings reach attributes": ("def reduce_sum(x, out):\n    '{0._a}'.format(x)\n", "`.format`"),
    "a generator frame walk": ("def g():\n    yield 1\n", "generators"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forgery_routes_are_refused_before_anything_runs(name: str) -> None:
    snippet, needle = FORGERIES[name]
    code = "from numba import cuda\n\n@cuda.jit\ndef kernel(x):\n    pass\n\n" + snippet
    problems = "; ".join(policy.check(code))
    assert needle in problems, f"{name}: {problems}"


def test_policy_accepts_every_reference_and_needs_a_kernel() -> None:
    for task_id in CASES:
        assert policy.check(reference(task_id)) == [], task_id
    assert any(
        "no CUDA kernel" in p for p in policy.check("from numba import cuda\n\ndef f(x, out):\n    pass\n")
    )


@pytest.mark.sandbox
def test_a_policy_violation_is_a_verdict_error_and_nothing_runs() -> None:
    v = check("gpu-reduce-sum", "import os\n" + reference("gpu-reduce-sum"), prewarm=False)
    assert not v.passed and v.tests == []
    assert v.error and "not run" in v.error and "`import os` is not allowed" in v.error
