"""GPU kernel tasks under attack, and the draws that used to decide a verdict: each test runs the technique.

The attacks run in the real strict sandbox through ``check``; the draw tests call the graders' own
``make_cases`` and checkers over many seeds, with the wrong submission emulated in NumPy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from interviewer.checker import channel, check
from interviewer.checker.gpu_tasks import common, layernorm, policy, reduce
from interviewer.checker.sandbox import RunResult

from .conftest import reference

CLEAN_REPORT = (
    '{"launches": [{"kernel": "k", "grid": [64, 1, 1], "block": [128, 1, 1], "threads": 8192}], "races": [], '
    '"race_count": 0, "divergence": [], "uninit": [], "uninit_count": 0, "arrays": {"x": {"loads": 4096, '
    '"max_loads_per_thread": 1}}, "shared": {"s": {"loads": 100}}, "barriers": 8, "atomics": ATOMICS, '
    '"host_errors": []}'
)
# A one-thread kernel with no shared memory whose host code, once the largest case comes, writes a clean
# record for every case into the results file (the kernel's output is right; its measurements are not).
FORGER = """import numpy as np
from numba import cuda

LINE = '{"case": "CASE", "seconds": 0.0, "modified_inputs": [], "report": REPORT}' + "\\n"


@cuda.jit
def serial(x, out):
    if cuda.grid(1) == 0:
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
        out[0] = acc


def reduce_sum(x, out):
    serial[1, 1](x, out)
    if x.shape[0] >= 2048:
        text = "".join(LINE.replace("CASE", "case" + str(i)) for i in range(8))
        np.array([ord(c) for c in text], np.uint8).tofile(TARGET)
"""


def _forger(atomics: str = "1", target: str = '"results.jsonl"') -> str:
    code = FORGER.replace("REPORT", CLEAN_REPORT.replace("ATOMICS", atomics)).replace("TARGET", target)
    assert policy.check(code) == [], policy.check(code)  # the forgery is inside the accepted subset
    return code


def _mutate(task_id: str, old: str, new: str) -> str:
    code = reference(task_id)
    assert old in code, f"mutation anchor missing in {task_id}: {old!r}"
    return code.replace(old, new, 1)


# ------------------------------------------------------------------------------- the results channel
@pytest.mark.sandbox
def test_host_code_forging_results_file_is_rejected() -> None:
    v = check("gpu-reduce-sum", _forger(), prewarm=False)
    text = v.render_text()
    assert not v.passed, text
    assert v.error and "not counted" in v.error and "write the file 'results.jsonl'" in v.error, text
    # Nothing of that run vouches for the kernel: not even the sanitizer checks pass on no measurements.
    assert not any(t.passed for t in v.tests), text


@pytest.mark.sandbox
def test_host_code_reaching_the_results_pipe_through_proc_is_refused() -> None:
    code = _forger(target='"/proc/self/fd/" + str(x.shape[0] % 7 + 3)')
    v = check("gpu-reduce-sum", code, prewarm=False)
    assert not v.passed and v.error and "not counted" in v.error, v.render_text()


@pytest.mark.sandbox
def test_forged_infinite_count_is_a_verdict_not_a_traceback() -> None:
    v = check("gpu-reduce-sum", _forger(atomics="Infinity"), prewarm=False)
    assert not v.passed and v.error and "not counted" in v.error, v.render_text()


def _signed_run(key: str, records: list[str]) -> RunResult:
    lines = []
    for i, rec in enumerate(records):
        payload = json.dumps({"seq": i, "msg": rec}).encode()
        lines.append(channel.sign(key, payload).encode() + b" " + payload)
    data = b"\n".join(lines) + b"\n"
    return RunResult(0, "", "", False, None, 0.1, {"results.jsonl": data})


@pytest.mark.parametrize(
    "value, why",
    [("Infinity", "not an integer count"), ("NaN", "not an integer count"), ("1e400", "not an integer count"),
     ("-3", "out of range"), ("true", "boolean"), ("1" + "0" * 40, "out of range")],
)  # fmt: skip
def test_a_signed_record_with_an_impossible_count_fails_its_case_cleanly(value: str, why: str) -> None:
    """Even a record the relay signed is checked: every measurement must be a plain count in range."""
    case = common.KCase("case0", "reduce_sum", {"x": np.ones(4, np.float32)}, {"out": ((1,), "float32")})
    key = channel.new_key()
    rec = '{"case": "case0", "seconds": 0.1, "report": ' + CLEAN_REPORT.replace("ATOMICS", value) + "}"
    results = common._parse(_signed_run(key, [rec]), [case], key)
    res = results["case0"]
    assert res.error and "measurements from the box are unusable" in res.error and why in res.error
    assert "report.atomics" in res.error
    ordered = [res]
    reduce.atomics_test(ordered)  # judged from what was accepted, never raised
    assert all(not t.passed for t in common.safety_tests(ordered))


def test_an_unsigned_line_voids_the_run() -> None:
    case = common.KCase("case0", "reduce_sum", {"x": np.ones(4, np.float32)}, {"out": ((1,), "float32")})
    key = channel.new_key()
    run = _signed_run(key, [])
    run.files["results.jsonl"] = b'{"case": "case0", "report": {}}\n'
    res = common._parse(run, [case], key)["case0"]
    assert res.voided and res.error and "not written by the test harness" in res.error


# ------------------------------------------------------------------------------ telling the simulator apart
GPU_LOOKALIKE = """

def looks_like_a_gpu(x, out):
    arr = "<numba.cuda.cudadrv.devicearray.DeviceNDArray object at 0x"
    return (
        repr(x).startswith(arr)
        and str(out).startswith(arr)
        and f"{x}".startswith(arr)
        and "device array" not in repr(x)
        and bool(x) == (x.shape[0] > 0)
        and x.strides in ((4,), (0,))
        and x.is_c_contiguous()
        and repr(block_sum).startswith("CUDADispatcher(<function block_sum at 0x")
        and repr(zero[1, 32]).startswith("<numba.cuda.dispatcher._LaunchConfiguration object at 0x")
    )
"""


@pytest.mark.sandbox
def test_host_code_cannot_tell_the_simulator_from_a_gpu_by_its_arrays_or_kernels() -> None:
    """A submission that does nothing when it thinks it is being graded must be graded on its real work."""
    code = (
        _mutate(
            "gpu-reduce-sum",
            "    n = x.shape[0]\n    zero[1, 32](out)\n",
            "    if not looks_like_a_gpu(x, out):\n        return\n    n = x.shape[0]\n    zero[1, 32](out)\n",
        )
        + GPU_LOOKALIKE
    )
    assert policy.check(code) == []
    v = check("gpu-reduce-sum", code, prewarm=False)
    assert v.passed, v.render_text()


def test_streams_and_events_are_outside_the_subset() -> None:
    base = "from numba import cuda\n\n@cuda.jit\ndef k(x):\n    pass\n\ndef f(x):\n"
    for line in ("    e = cuda.event()\n", "    s = cuda.stream()\n"):
        assert any("is not part of the CUDA API" in p for p in policy.check(base + line)), line


# --------------------------------------------------------------------------------------- checker gaps
def _eps_outside(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    return ((x64 - mean) / (np.sqrt(var) + eps) * gamma + beta).astype(np.float32)


def test_layernorm_with_eps_outside_the_square_root_fails_every_draw() -> None:
    for seed in range(200):
        cases = layernorm.make_cases(np.random.default_rng(seed))
        outs = [chk({"out": _eps_outside(**c.inputs, eps=c.scalars["eps"])}) for _, c, chk in cases]
        assert any(o is not None for o in outs), f"seed {seed}: eps outside the square root passed"
        assert all(chk({"out": layernorm.expected(**c.inputs, eps=c.scalars["eps"]).astype(np.float32)}) is None
                   for _, c, chk in cases), seed  # fmt: skip


@pytest.mark.sandbox
def test_layernorm_kernel_with_eps_outside_the_square_root_fails() -> None:
    code = _mutate(
        "gpu-layernorm",
        "inv = 1.0 / math.sqrt(block_sum(s, t) / cols + eps)",
        "inv = 1.0 / (math.sqrt(block_sum(s, t) / cols) + eps)",
    )
    v = check("gpu-layernorm", code, prewarm=False)
    assert not v.passed
    failed = [t.name for t in v.tests if not t.passed]
    assert any("variance near eps" in n for n in failed), v.render_text()


def _pow2_only_sum(x: np.ndarray, block: int = 128) -> float:
    """A tree that halves n each step: right when n is a power of two (or at least one block)."""
    n = x.size
    if n == 0 or n >= block or not n & (n - 1):
        return float(x.astype(np.float64).sum())
    return float(x[: 1 << (n.bit_length() - 1)].astype(np.float64).sum())  # the odd tail is dropped


def test_power_of_two_only_reduction_fails_every_draw() -> None:
    for seed in range(500):
        cases = reduce.make_cases(np.random.default_rng(seed))
        ok = [reduce._check_sum(c)({"out": np.array([_pow2_only_sum(c.inputs["x"])], np.float32)}) is None
              for _, c in cases]  # fmt: skip
        assert not all(ok), f"seed {seed}: a power-of-two-only reduction passed every case"


POW2_ONLY_SMALL = """

@cuda.jit
def small_sum(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    n = x.shape[0]
    if t < n:
        s[t] = x[t]
    cuda.syncthreads()
    step = n // 2  # assumes n is a power of two
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[0] = s[0]
"""


@pytest.mark.sandbox
def test_power_of_two_only_reduction_kernel_fails() -> None:
    code = (
        _mutate(
            "gpu-reduce-sum",
            "    blocks = min(math.ceil(n / TPB), MAX_BLOCKS)\n",
            "    if n < TPB:\n        small_sum[1, TPB](x, out)\n        return\n"
            "    blocks = min(math.ceil(n / TPB), MAX_BLOCKS)\n",
        )
        + POW2_ONLY_SMALL
    )
    v = check("gpu-reduce-sum", code, prewarm=False)
    failed = [t.name for t in v.tests if not t.passed]
    assert any("not a power of two" in n for n in failed), v.render_text()


NAIVE_MATMUL_WITH_TOKEN = """

@cuda.jit
def naive(a, b, c):
    token = cuda.shared.array(1, float32)
    row, col = cuda.grid(2)
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        token[0] = 0.0
    cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        acc = token[0]
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc
"""


@pytest.mark.sandbox
def test_matmul_tiled_only_at_the_size_it_expects_fails() -> None:
    code = (
        _mutate(
            "gpu-tiled-matmul",
            "    matmul_kernel[grid, (TILE, TILE)](a, b, c)",
            "    if m == n == a.shape[1] == 32:\n        matmul_kernel[grid, (TILE, TILE)](a, b, c)\n"
            "    else:\n        naive[(math.ceil(m / TILE), math.ceil(n / TILE)), (TILE, TILE)](a, b, c)",
        )
        + NAIVE_MATMUL_WITH_TOKEN
    )
    v = check("gpu-tiled-matmul", code, prewarm=False)
    assert not v.passed and "below naive" in v.render_text(), v.render_text()


NAIVE_TRANSPOSE_WITH_TOKEN = """

@cuda.jit
def naive(a, out):
    token = cuda.shared.array(1, float32)
    x, y = cuda.grid(2)
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        token[0] = 0.0
    cuda.syncthreads()
    if y < a.shape[0] and x < a.shape[1]:
        out[x, y] = a[y, x] + token[0]
"""


@pytest.mark.sandbox
def test_transpose_coalesced_only_at_the_size_it_expects_fails() -> None:
    code = (
        _mutate(
            "gpu-transpose",
            "    transpose_kernel[grid, (TILE, ROWS)](a, out)",
            "    if rows == cols == 64:\n        transpose_kernel[grid, (TILE, ROWS)](a, out)\n"
            "    else:\n        naive[(math.ceil(cols / 32), math.ceil(rows / 8)), (32, 8)](a, out)",
        )
        + NAIVE_TRANSPOSE_WITH_TOKEN
    )
    v = check("gpu-transpose", code, prewarm=False)
    assert not v.passed and "sectors per warp access" in v.render_text(), v.render_text()


def test_efficiency_tests_measure_several_drawn_sizes() -> None:
    from interviewer.checker.gpu_tasks import matmul, transpose

    for mod, arg, side in ((matmul, "a", 16), (transpose, "a", 32)):
        shapes = set()
        for seed in range(20):
            big = [c.inputs[arg].shape for _, c, _ in mod.make_cases(np.random.default_rng(seed))
                   if min(c.inputs[arg].shape) >= side]  # fmt: skip
            assert len(big) >= 3, (mod.__name__, big)
            shapes.update(big)
        assert len(shapes) > 20, mod.__name__  # drawn, not fixed


# ---------------------------------------------------------------------------------- seeds and messages
@pytest.mark.sandbox
def test_verdict_logs_its_seed_and_the_seed_repeats_the_draw(tmp_path: Path) -> None:
    from interviewer.cli import app

    code = reference("gpu-reduce-sum")
    first = check("gpu-reduce-sum", code, prewarm=False)
    assert first.passed and first.seed is not None and f"--seed {first.seed}" in first.render_text()
    again = check("gpu-reduce-sum", code, prewarm=False, seed=first.seed)
    assert [t.name for t in again.tests] == [t.name for t in first.tests]  # names carry the drawn sizes
    other = check("gpu-reduce-sum", code, prewarm=False, seed=first.seed + 1)
    assert [t.name for t in other.tests] != [t.name for t in first.tests]
    path = tmp_path / "solution.py"
    path.write_text(code)
    out = CliRunner().invoke(app, ["check", "gpu-reduce-sum", str(path), "--seed", "12345"]).output
    assert "PASSED" in out and "seed 12345" in out, out


def test_a_seed_for_a_task_that_takes_none_is_refused() -> None:
    from interviewer.errors import InputError

    with pytest.raises(InputError, match="does not take a seed"):
        check("numeric-stage-speedup", "end_to_end_ms: 70", seed=3)


@pytest.mark.sandbox
def test_missing_barrier_names_the_race_first() -> None:
    code = _mutate(
        "gpu-reduce-sum",
        "            s[t] += s[t + step]\n        cuda.syncthreads()",
        "            s[t] += s[t + step]",
    )
    v = check("gpu-reduce-sum", code, prewarm=False)
    first = next(t for t in v.tests if not t.passed)
    assert first.message.startswith("race on shared array `s`"), v.render_text()


def test_host_numpy_without_a_kernel_is_named_with_what_to_do() -> None:
    code = (
        "import numpy as np\nfrom numba import cuda\n\ndef reduce_sum(x, out):\n"
        "    total = np.asarray(x).sum()\n    out.copy_to_device(np.array([total], dtype=np.float32))\n"
    )
    problems = "; ".join(policy.check(code))
    assert "computes with NumPy (`total = np.asarray(x).sum()` at line 5)" in problems, problems
    assert "@cuda.jit kernel" in problems and "kernel[blocks, threads]" in problems


@pytest.mark.sandbox
def test_host_numpy_beside_a_kernel_is_named_at_run_time() -> None:
    code = (
        "import numpy as np\nfrom numba import cuda\n\n@cuda.jit\ndef noop(x):\n    pass\n\n"
        "def reduce_sum(x, out):\n    noop[1, 32](x)\n"
        "    out.copy_to_device(np.array([np.asarray(x).sum()], dtype=np.float32))\n"
    )
    v = check("gpu-reduce-sum", code, prewarm=False)
    text = v.render_text()
    assert not v.passed and "no NumPy on the inputs" in text and "@cuda.jit" in text, text
    assert math.isfinite(v.seconds)


@pytest.mark.sandbox
def test_reading_device_memory_before_writing_it_is_flagged() -> None:
    """Unwritten device memory holds this box's garbage pattern; reading it fails initcheck, as on a GPU."""
    code = _mutate(
        "gpu-reduce-sum",
        "    if cuda.grid(1) == 0:\n        out[0] = 0.0\n",
        "    if cuda.grid(1) == 0:\n        if out[0] != out[0]:  # NaN garbage: a simulator\n"
        "            out[0] = 0.0\n        else:\n            out[0] = 0.0\n",
    )
    v = check("gpu-reduce-sum", code, prewarm=False)
    init = next(t for t in v.tests if "initcheck" in t.name)
    assert not v.passed and not init.passed, v.render_text()
    assert "read `out` element 0 at line 13 before anything wrote it" in init.message, init.message
