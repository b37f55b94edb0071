"""Hostile submissions: each is stopped with a clear verdict, and the host is left untouched."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import threading
import uuid
from pathlib import Path

import pytest

from interviewer.checker import check
from interviewer.checker.sandbox import Limits, Sandbox

pytestmark = pytest.mark.sandbox

MERGE_OK = """
def merge_intervals(a, b):
    out = []
    for s, e in sorted([*a, *b]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
"""


def _cmdlines_with(token: str) -> list[int]:
    """Host pids whose command line carries ``token`` (a process that escaped the box would)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if token.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def _box_leftovers() -> list[str]:
    """This process's box dirs (other processes may be running their own boxes meanwhile)."""
    return [p for p in os.listdir("/tmp") if p.startswith(f"interviewer-box-{os.getpid()}-")]


@pytest.fixture
def host_snapshot(sandbox: Sandbox):
    """No box dirs, mounts or cgroups may outlive a run."""
    from interviewer.checker.sandbox import _LIVE_BOXES

    before = set(_box_leftovers())
    yield
    warm = {Path(b.box).parent.name for b in _LIVE_BOXES}  # pre-started boxes for the next run may stay
    assert set(_box_leftovers()) <= before | warm, "a box dir was left in /tmp"
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if f"interviewer-box-{os.getpid()}-" in line:
            assert any(w in line for w in warm), f"a box mount was left behind: {line}"


def test_infinite_loop_is_stopped(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    v = check("merge-intervals", "while True:\n    pass\n", sandbox=sandbox)
    assert not v.passed
    assert v.error and ("CPU limit" in v.error or "wall-clock limit" in v.error), v.render_text()


def test_sleep_hits_the_wall_clock(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    v = check("merge-intervals", "import time\ntime.sleep(60)\n" + MERGE_OK, sandbox=sandbox)
    assert not v.passed and v.error and "wall-clock limit 4 s" in v.error, v.render_text()
    assert v.seconds < 15


def test_huge_allocation_fails_cleanly(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    v = check("merge-intervals", "x = bytearray(30 * 1024**3)\n" + MERGE_OK, sandbox=sandbox)
    assert not v.passed and "MemoryError" in v.render_text(), v.render_text()
    touched = "chunks = [bytearray(64 * 1024**2) for _ in range(64)]\n" + MERGE_OK  # 4 GiB, really touched
    v = check("merge-intervals", touched, sandbox=sandbox)
    assert not v.passed
    assert "memory limit" in v.render_text() or "MemoryError" in v.render_text(), v.render_text()


def test_fork_bomb_is_contained(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    token = uuid.uuid4().hex
    code = f"import os, sys\nsys.argv[0] = '{token}'\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    v = check("merge-intervals", code, sandbox=sandbox)
    assert not v.passed and v.error and "limit" in v.error, v.render_text()
    assert _cmdlines_with(token) == []


def test_network_is_unreachable(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(6)
    port = srv.getsockname()[1]
    hits: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            hits.append(srv.accept())

    t = threading.Thread(target=accept)
    t.start()
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n" + MERGE_OK
    v = check("merge-intervals", code, sandbox=sandbox)
    t.join()
    srv.close()
    assert hits == [], "the box reached a host socket"
    assert not v.passed and "importing your code failed" in v.render_text(), v.render_text()
    r = sandbox.run(
        {"a.py": "import socket\ntry:\n    socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\nexcept OSError as e:\n"
                 "    print('blocked', e.errno)\n"},
        [sys.executable, "a.py"],
    )  # fmt: skip
    assert "blocked" in r.stdout


def test_hidden_tests_and_reference_are_invisible(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    import interviewer.checker.python_tasks.intervals as grader

    probe = f"""
import os
paths = [{str(Path(grader.__file__))!r}, {str(fast_content / "rubrics/coding/merge-intervals/reference.py")!r},
         {str(Path(grader.__file__).parents[3] / "rubrics")!r}]
seen = [p for p in paths if os.path.exists(p)]
import glob, sys
for entry in sys.path:
    seen += glob.glob(entry + "/interviewer/*") + glob.glob(entry + "/*/_content/rubrics")
try:
    import interviewer.checker.python_tasks.intervals
    seen.append("grader importable")
except ImportError:
    pass
if seen:
    raise SystemExit("LEAK " + repr(seen))
raise RuntimeError("nothing visible")
"""
    v = check("merge-intervals", probe, sandbox=sandbox)
    text = v.render_text()
    assert "LEAK" not in text and "nothing visible" in text, text


def test_writes_outside_the_box_do_not_reach_the_host(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    token = uuid.uuid4().hex
    targets = [f"/tmp/{token}", f"/usr/{token}", f"/work/{token}", f"/root/{token}", f"/etc/{token}"]
    code = (
        "import os\n"
        + "".join(f"try:\n    open({t!r}, 'w').write('x')\nexcept OSError:\n    pass\n" for t in targets)
        + MERGE_OK
    )
    check("merge-intervals", code, sandbox=sandbox)
    for t in targets:
        assert not os.path.exists(t), f"the box wrote {t} on the host"


def test_filling_the_disk_hits_the_box_quota(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    free_before = shutil.disk_usage("/tmp").free
    code = (
        "import os\nerr = None\ni = 0\nwhile err is None:\n    try:\n"
        "        with open(f'fill{i}', 'wb') as f:\n            f.write(b'x' * (8 << 20))\n        i += 1\n"
        "    except OSError as e:\n        err = e\nraise SystemExit(f'stopped after {i} files: {err}')\n"
    )
    v = check("merge-intervals", code, sandbox=sandbox)
    assert not v.passed and "No space left on device" in v.render_text(), v.render_text()
    assert shutil.disk_usage("/tmp").free > free_before - (256 << 20)


def test_stdout_flood_is_cut(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    v = check(
        "merge-intervals", "import sys\nwhile True:\n    sys.stdout.write('A' * 65536)\n", sandbox=sandbox
    )
    assert not v.passed and v.error and "output limit" in v.error, v.render_text()


def test_orphaned_children_do_not_survive(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    token = uuid.uuid4().hex
    code = (
        "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', '{token}'])\n"
        "    os._exit(0)\n" + MERGE_OK
    )
    v = check("merge-intervals", code, sandbox=sandbox)
    assert v.passed, v.render_text()  # the solution itself is right; the point is what is left behind
    assert _cmdlines_with(token) == [], "a daemonised child outlived the box"


FORGERIES = {
    "patched comparison (__eq__ always True)": (
        "merge-intervals",
        "class Always(list):\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
        "def merge_intervals(a, b):\n    return Always()\n",
        "expected",
    ),
    "array-like that claims equality": (
        "numpy-conv2d",
        "import numpy as np\nclass Fake(np.ndarray):\n    def __eq__(self, o):\n        return True\n"
        "def conv2d(x, w, stride=1, padding=0):\n    return np.zeros((1, 1, 1, 1)).view(Fake)\n",
        "shape",
    ),
    "fake output files then exit 0": (
        "merge-intervals",
        "import json, os\nimport numpy as np\nwith open('results.jsonl', 'w') as f:\n"
        "    for n in range(20):\n        f.write(json.dumps({'case': 'x', 'passed': True}) + '\\n')\n"
        "for i in range(20):\n    np.savez(f'out{i}.npz', r0=np.zeros(3))\nos._exit(0)\n",
        "not written by the test harness",
    ),
    "early exit 0 at import": ("merge-intervals", "import os\nos._exit(0)\n", "exited before this case ran"),
    "sys.exit(0) at import": ("merge-intervals", "import sys\nsys.exit(0)\n", "importing your code failed"),
    "monkeypatched numpy comparisons": (
        "numpy-conv2d",
        "import numpy as np\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"
        "def conv2d(x, w, stride=1, padding=0):\n    return np.zeros((x.shape[0], w.shape[0], 1, 1))\n",
        "shape",
    ),
    "symlinked result file pointing at host secrets": (
        "merge-intervals",
        "import os\nos.remove('results.jsonl')\nos.symlink('/etc/shadow', 'results.jsonl')\nos._exit(0)\n",
        "exited before this case ran",
    ),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forged_passes_fail(name: str, fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    task_id, code, message = FORGERIES[name]
    v = check(task_id, code, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert message in text, text


def test_limits_are_reported_by_name(sandbox: Sandbox) -> None:
    r = sandbox.run({"a.py": "x = 1\nwhile True:\n    x += 1\n"}, [sys.executable, "a.py"],
                    Limits(cpu_seconds=1, wall_seconds=20))  # fmt: skip
    assert r.killed_reason and ("CPU limit" in r.killed_reason or "wall-clock" in r.killed_reason)
    r = sandbox.run({"a.py": "import os\nprint(os.getuid())\n"}, [sys.executable, "a.py"])
    assert r.stdout.strip() != "0", "the box ran as root"
    r = sandbox.run(
        {"a.py": "import ctypes\nprint(ctypes.CDLL(None).ptrace(0, 0, 0, 0))\n"}, [sys.executable, "a.py"]
    )
    assert r.stdout.strip() == "-1", "ptrace is allowed under the strict filter"


def test_prewarmed_box_is_single_use_and_content_checked(sandbox: Sandbox) -> None:
    prog = "import os, time\nwhile not os.path.exists('.go'):\n    time.sleep(0.002)\nprint(open('data.txt').read())\n"
    argv = [sys.executable, "a.py"]
    lim = Limits(wall_seconds=10)
    assert sandbox.prewarm({"a.py": prog}, argv, lim)
    r1 = sandbox.run({"a.py": prog, "data.txt": "first"}, argv, lim)
    r2 = sandbox.run({"a.py": prog, "data.txt": "second"}, argv, lim)  # no warm box left: a cold one
    assert (r1.stdout.strip(), r2.stdout.strip()) == ("first", "second")
    assert sandbox.prewarm({"a.py": prog}, argv, lim)
    other = prog.replace("print(", "print('changed', ")
    r3 = sandbox.run({"a.py": other, "data.txt": "third"}, argv, lim)  # different program: never the warm box
    assert r3.stdout.strip() == "changed third"
    sandbox.close()


def test_a_fork_bomb_does_not_starve_a_concurrent_box(sandbox: Sandbox) -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    done: list[object] = []
    t = threading.Thread(
        target=lambda: done.append(
            sandbox.run({"b.py": bomb}, [sys.executable, "b.py"], Limits(wall_seconds=5))
        )
    )
    t.start()
    import time

    time.sleep(1.5)  # the bomb is at its process limit by now
    r = sandbox.run({"a.py": "print('still fine')\n"}, [sys.executable, "a.py"], Limits(wall_seconds=20))
    t.join()
    assert r.stdout.strip() == "still fine", r
    assert done and getattr(done[0], "killed_reason", None)


def test_boxes_of_a_killed_grader_are_swept(sandbox: Sandbox) -> None:
    import subprocess
    import tempfile

    from interviewer.checker.sandbox import _sweep_stale_boxes

    if os.geteuid() != 0:
        pytest.skip("boxes are tmpfs mounts only as root")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    root = Path(tempfile.mkdtemp(prefix=f"interviewer-box-{pid}-"))
    (root / "box").mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "interviewer-box", str(root / "box")], check=True
    )
    assert _sweep_stale_boxes.__wrapped__() >= 1
    assert not root.exists()
    assert str(root) not in Path("/proc/self/mounts").read_text()


CANARY = "sk-canary-" + uuid.uuid4().hex

PROC_ENV_PY = """
import os
seen = []
for pid in ["1", "self", str(os.getppid())]:
    try:
        seen.append(open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
    except OSError:
        pass
print("\\n".join(seen) + "\\n" + repr(dict(os.environ)))
"""

PROC_ENV_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
struct Spy {
    Spy() {
        const char* paths[] = {"/proc/1/environ", "/proc/self/environ"};
        for (const char* p : paths) {
            FILE* f = std::fopen(p, "rb");
            if (!f) continue;
            int c;
            while ((c = std::fgetc(f)) != EOF) std::fputc(c ? c : '\n', stdout);
            std::fclose(f);
        }
        const char* k = std::getenv("OPENAI_API_KEY");
        if (k) std::printf("getenv:%s\n", k);
    }
} spy;
int main() { return 0; }
"""


def test_the_hosts_secrets_are_not_in_any_process_of_the_box(
    sandbox: Sandbox, host_snapshot: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#15 item 1: bwrap's pid 1 used to keep the grader's environment (API keys) in /proc/1/environ."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("INTERVIEWER_API_KEY", CANARY)
    r = sandbox.run({"a.py": PROC_ENV_PY}, [sys.executable, "a.py"], Limits(wall_seconds=20))
    assert r.returncode == 0, r
    assert "PATH" in r.stdout, r.stdout  # the program did read an environment
    assert CANARY not in r.stdout and CANARY not in r.stderr, "the host's API key is visible inside the box"

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.fail("g++ is needed for the C++ half of this test (the cpp tasks need it too)")
    exe = tmp_path / "spy"
    src = tmp_path / "spy.cpp"
    src.write_text(PROC_ENV_CPP)
    import subprocess

    subprocess.run([gxx, "-O0", "-o", str(exe), str(src)], check=True, timeout=120)
    r = sandbox.run(
        {"spy": exe.read_bytes()}, ["/bin/sh", "-c", "chmod +x spy && ./spy"], Limits(wall_seconds=20)
    )
    assert r.returncode == 0, r
    assert "PATH=" in r.stdout, r.stdout
    assert CANARY not in r.stdout and "getenv:" not in r.stdout, (
        "a C++ static constructor read the host's key"
    )


# ------------------------------------------------------------------ #15 item 2: NumPy-only, really
CONV_LOOPS = (
    "def conv2d(x, w, stride=1, padding=0):\n"
    "    import numpy as np\n"
    "    sh, sw = (stride, stride) if isinstance(stride, int) else stride\n"
    "    ph, pw = (padding, padding) if isinstance(padding, int) else padding\n"
    "    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))\n"
    "    kh, kw = w.shape[2], w.shape[3]\n"
    "    ho, wo = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1\n"
    "    y = np.zeros((x.shape[0], w.shape[0], ho, wo), dtype=x.dtype)\n"
    "    for i in range(ho):\n"
    "        for j in range(wo):\n"
    "            y[:, :, i, j] = np.einsum('ncij,ocij->no', xp[:, :, i*sh:i*sh+kh, j*sw:j*sw+kw], w)\n"
    "    return y\n"
)

NUMPY_ONLY_ATTACKS = {
    "loops hidden in exec()": f"import numpy as np\nexec({CONV_LOOPS!r})\n",
    "loops hidden in eval(compile())": f"ns = {{}}\neval(compile({CONV_LOOPS!r}, 's', 'exec'), ns)\nconv2d = ns['conv2d']\n",
    "torch.nn.functional.conv2d": (
        "import numpy as np\nimport torch\n"
        "def conv2d(x, w, stride=1, padding=0):\n"
        "    y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,\n"
        "                                   padding=padding)\n"
        "    return y.numpy()\n"
    ),
    "torch through __import__": (
        "def conv2d(x, w, stride=1, padding=0):\n"
        "    F = __import__('torch').nn.functional\n"
        "    t = __import__('torch')\n"
        "    return F.conv2d(t.from_numpy(x), t.from_numpy(w), stride=stride, padding=padding).numpy()\n"
    ),
    "np.vectorize through getattr": (
        "import numpy as np\nvec = getattr(np, 'vector' + 'ize')\n"
        "def conv2d(x, w, stride=1, padding=0):\n    return vec(lambda v: v)(x)\n"
    ),
    "importlib.import_module('torch')": (
        "import importlib\ntorch = importlib.import_module('tor' + 'ch')\n"
        "def conv2d(x, w, stride=1, padding=0):\n"
        "    return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,\n"
        "                                      padding=padding).numpy()\n"
    ),
}


@pytest.mark.parametrize("name", list(NUMPY_ONLY_ATTACKS))
def test_numpy_only_task_refuses_hidden_loops_and_other_libraries(
    name: str, fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    v = check("numpy-conv2d", NUMPY_ONLY_ATTACKS[name], sandbox=sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert "[FAIL] NumPy only" in text, text


# The loops live in a bytes literal run by the C API through NumPy's own ctypes module. The syntax-tree check
# refuses the name `ctypes`; the run-time hook must refuse the call on its own, so it is run here past the
# tree check, straight through the harness.
CTYPES_GADGET = (
    "import numpy as np\n"
    f"np.ctypeslib.ctypes.pythonapi.PyRun_SimpleString(b'import builtins\\n' + {CONV_LOOPS.encode()!r}"
    " + b'builtins.cv = conv2d\\n')\n"
    "def conv2d(x, w, stride=1, padding=0):\n"
    "    return cv(x, w, stride, padding)\n"
)


def _run_past_the_tree_check(code: str, sandbox: Sandbox, limits: Limits | None = None) -> str:
    """numpy-conv2d's hidden cases run on ``code`` under the run-time policy alone; every case's outcome."""
    import numpy as np

    from interviewer.checker.python_tasks.common import run_cases
    from interviewer.checker.python_tasks.conv2d import expected_conv2d, make_cases

    cases = make_cases(np.random.default_rng())
    limits = limits or Limits(cpu_seconds=5, wall_seconds=10)
    outputs, _ = run_cases(sandbox, code, cases, limits, policy="numpy")
    lines = []
    for c in cases:
        out = outputs[c.name]
        if out.error is not None:
            lines.append(f"FAIL {c.name}: {out.error}")
            continue
        want = expected_conv2d(c.arrays["x"], c.arrays["w"], *(
            tuple(v) if isinstance(v, list) else v for v in (c.scalars["stride"], c.scalars["padding"])
        ))  # fmt: skip
        ok = out.arrays is not None and np.allclose(out.arrays[0], want, rtol=1e-4, atol=1e-4)
        lines.append(f"{'ok' if ok else 'FAIL'} {c.name}")
    return "\n".join(lines)


def test_numpy_only_is_enforced_at_run_time_too(sandbox: Sandbox, host_snapshot: None) -> None:
    from interviewer.checker.python_tasks.common import numpy_only_problems

    assert numpy_only_problems(CTYPES_GADGET), "the tree check no longer sees ctypes"
    text = _run_past_the_tree_check(CTYPES_GADGET, sandbox)
    assert "ok " not in text, text
    assert "NumPy code only" in text and "ctypes" in text, text


# ------------------------------------------------------------------ #15 item 4: the results channel
FORGE_RESULTS = """
import glob, hmac, hashlib, json, os
def _right(a, b):
    out = []
    for s, e in sorted([*a, *b]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out
spec = json.load(open("spec.json"))
lines = []
for c in spec["cases"]:
    rec = json.dumps({"case": c["name"], "value": _right(**c["scalars"])})
    lines.append(rec)  # the format of a harness without signatures
    msg = json.dumps({"seq": 0, "msg": rec})
    for key in (b"", b"0" * 32):  # a guessed key, signed the harness's way
        lines.append(hmac.new(key, msg.encode(), hashlib.sha256).hexdigest() + " " + msg)
data = ("\\n".join(lines) + "\\n").encode()
targets = glob.glob("/proc/self/fd/*") + glob.glob(f"/proc/{os.getppid()}/fd/*")
for t in targets:
    try:
        if os.readlink(t).endswith("results.jsonl"):
            os.write(os.open(t, os.O_WRONLY), data)
    except OSError:
        pass
import gc, io
for o in gc.get_objects():  # the harness's own open handle, if this process has one
    if isinstance(o, (io.BufferedWriter, io.TextIOWrapper)) and str(getattr(o, "name", "")).endswith("results.jsonl"):
        o.write(data if isinstance(o, io.BufferedWriter) else data.decode())
        o.flush()
with open("results.jsonl", "ab") as f:
    f.write(data)
def merge_intervals(a, b):
    return []  # wrong: the records above are the only right answers
"""


def test_the_results_channel_cannot_be_forged(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    """#15 item 4: candidate code wrote the right answers into the harness's own results handle."""
    v = check("merge-intervals", FORGE_RESULTS, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert "not written by the test harness" in text, text


HOSTILE_VALUES = {
    "deep JSON": ("x = []\nfor _ in range(100000):\n    x = [x]\n", "nested more than 32 levels"),
    "5,000-digit int": ("x = [[10 ** 5000, 1]]\n", "cannot be sent"),
    "15 MB value": ("x = [['A' * (15 << 20), 1]]\n", "the limit is 1048576 bytes"),
}


@pytest.mark.parametrize("name", list(HOSTILE_VALUES))
def test_hostile_result_values_fail_cleanly(
    name: str, fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    """#15 item 4: deep JSON, huge ints and 15 MB values crashed the grader or were stored whole."""
    body, message = HOSTILE_VALUES[name]
    code = (
        "def merge_intervals(a, b):\n" + "".join(f"    {ln}\n" for ln in body.splitlines()) + "    return x\n"
    )
    v = check("merge-intervals", code, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed and message in text, text
    assert len(v.model_dump_json()) < 100_000, "a huge value reached the verdict"
    # The same values written straight into the results file (the old way to reach the grader's parser).
    line = {"deep JSON": "'[' * 100000 + ']' * 100000", "5,000-digit int": "'1' * 5000"}.get(
        name, "'A' * (15 << 20)"
    )
    direct = f"with open('results.jsonl', 'a') as f:\n    f.write({line} + '\\n')\n" + MERGE_OK
    v = check("merge-intervals", direct, sandbox=sandbox)
    assert not v.passed and "not written by the test harness" in v.render_text(), v.render_text()
    assert len(v.model_dump_json()) < 100_000


# ------------------------------------------------------------------ #15 item 2: forged C++ passes
def _cpp_task(task_id: str, code: str, sandbox: Sandbox):
    return check(task_id, code, sandbox=sandbox, prewarm=False)


EARLY_RETURN = """#include <cstddef>
// Honest on the small shapes; on the timed matrix it does the work only on every 7th call.
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    static int n = 0;
    if (rows >= 1024 && cols >= 1024 && ++n % 7) return;
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}
"""


def test_transpose_that_skips_timed_calls_fails(sandbox: Sandbox, host_snapshot: None) -> None:
    """#15 item 2: a naive loop returning early on the timed size passed the speed test."""
    from interviewer.checker.cpp_tasks import transpose as T

    v = _cpp_task("cpp-tiled-transpose", EARLY_RETURN, sandbox)
    text = v.render_text()
    assert not v.passed, text
    speed = next(t for t in v.tests if t.name == T.SPEED_TEST)
    assert not speed.passed and "checksum mismatch" in speed.message, text
    assert all(t.passed for t in v.tests if t.name.startswith("shape")), text


def test_transpose_timing_shape_is_drawn_per_run() -> None:
    import numpy as np

    from interviewer.checker.cpp_tasks import transpose as T

    shapes = {T.timing_shape(np.random.default_rng(seed)) for seed in range(40)}
    assert len(shapes) > 3 and all(r % 512 == 0 and c % 512 == 0 for r, c in shapes)


HOOK_SPELLINGS = {
    "asm label": 'extern "C" const char* not_a_hook() asm("__ts" "an_default_suppr" "essions");\n'
    'const char* not_a_hook() { return "race:*\\n"; }\n',
    "macro-pasted name": "#define CAT(a, b) a##b\n"
    'extern "C" const char* CAT(__ls, an_default_suppressions)() { return "leak:*\\n"; }\n',
    "options via asm label": 'extern "C" const char* opts() asm("__as" "an_default_opt" "ions");\n'
    'const char* opts() { return "detect_leaks=0"; }\n',
    "call through asm label": 'extern "C" void off() asm("__ls" "an_dis" "able");\n'
    "struct Off { Off() { off(); } } off_at_start;\n",
}


@pytest.mark.parametrize("name", list(HOOK_SPELLINGS))
def test_debug_project_refuses_sanitizer_hooks_however_spelled(
    name: str, sandbox: Sandbox, host_snapshot: None
) -> None:
    """#15 item 2: suppression hooks defined through asm labels hid the race and the leak."""
    from interviewer.checker import get_task
    from interviewer.checker.cpp_tasks import debug_project as D

    task = get_task("cpp-debug-project")
    files = D.shipped_files(task.path)
    files["stats.cpp"] += "\n" + HOOK_SPELLINGS[name]
    assert D.FORBIDDEN.search(HOOK_SPELLINGS[name]) is None, "the text filter alone would catch this one"
    v = _cpp_task("cpp-debug-project", D.join_files(files), sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert "[FAIL] no sanitizer hooks" in text and "Nothing was run" in text, text


# ------------------------------------------------------------------ #15 item 3: .incbin of hidden files
def _incbin(path: str) -> str:
    """C++ that embeds ``path`` at assembly time and prints its start from a static constructor."""
    return (
        "#include <cstdio>\n#include <cstdlib>\n"
        f'asm(".section .rodata\\n.global leak_start\\nleak_start:\\n.incbin \\"{path}\\"\\n.byte 0\\n.text");\n'
        'extern "C" const char leak_start[];\n'
        'struct Leak { Leak() { std::fprintf(stderr, "%.300s\\n", leak_start); std::fprintf(stdout, "%.300s\\n", leak_start); std::abort(); } } leak_now;\n'
    )


INCBIN_TARGETS = {
    "cpp-debug-project": ("main.cpp", "Hidden driver for cpp-debug-project"),
    "cpp-dependency-graph": ("harness.cpp", "Hidden driver for cpp-dependency-graph"),
    "cpp-tiled-transpose": ("harness.o", "naive_rows"),
}


@pytest.mark.parametrize("task_id", list(INCBIN_TARGETS))
def test_incbin_cannot_embed_the_hidden_drivers(task_id: str, sandbox: Sandbox, host_snapshot: None) -> None:
    """#15 item 3: `.incbin "main.cpp"` compiled the hidden driver into the candidate's program."""
    from interviewer.checker import get_task
    from interviewer.checker.cpp_tasks import _build
    from interviewer.checker.cpp_tasks import debug_project as D

    target, secret = INCBIN_TARGETS[task_id]
    task = get_task(task_id)
    _build._unit_cache.clear()  # a first check in a fresh process: the driver is compiled now, not reused
    if task_id == "cpp-debug-project":
        files = D.shipped_files(task.path)
        files["stats.cpp"] += "\n" + _incbin(target)
        code = D.join_files(files)
    else:
        code = task.starter_code + _incbin(target)
    v = _cpp_task(task_id, code, sandbox)
    assert not v.passed, v.render_text()
    assert secret not in v.model_dump_json(), f"{task_id}: the hidden driver leaked into the verdict"
    assert v.error is not None and "compile error" in v.error, v.render_text()
    assert "file not found" in v.error, v.render_text()


def test_deep_json_in_the_training_tasks_results_does_not_crash_the_grader(
    sandbox: Sandbox, host_snapshot: None
) -> None:
    """#15 item 4: attention-train's results file is signed and parsed with limits (it raised RecursionError)."""
    from .conftest import reference

    junk = (
        "with open('results.jsonl', 'a') as f:\n"
        "    f.write('[' * 100000 + ']' * 100000 + '\\n')\n"
        "    f.write('{\"case\": \"two\", \"losses\": [' + '9' * 5000 + ']}\\n')\n"
    )
    v = check("attention-train", junk + reference("attention-train"), sandbox=sandbox, prewarm=False)
    assert not v.passed and v.error and "not written by the test harness" in v.error, v.render_text()
    assert len(v.model_dump_json()) < 100_000


KEY_HUNT = """
import os
found = []
if os.path.exists(".key"):
    found.append("key file")
ppid = os.getppid()
for path in (f"/proc/{ppid}/mem", f"/proc/{ppid}/environ", f"/proc/{ppid}/fd/3", f"/proc/{ppid}/maps"):
    try:
        with open(path, "rb") as f:
            f.read(16)
        found.append(path)
    except OSError:
        pass
try:
    found += [f"fd {n}" for n in os.listdir(f"/proc/{ppid}/fd")]
except OSError:
    pass
raise RuntimeError("reachable: " + repr(found))
"""


def test_the_signing_key_and_the_harness_are_out_of_reach(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    """#15 item 4: the key file is gone and the relaying parent's memory and fds cannot be opened."""
    v = check("merge-intervals", KEY_HUNT, sandbox=sandbox)
    assert "reachable: []" in v.render_text(), v.render_text()


def test_a_flood_of_result_frames_is_cut(fast_content: Path, sandbox: Sandbox, host_snapshot: None) -> None:
    """#15 item 4: the child may write to its own pipe, but the relay caps how much it takes."""
    code = (
        "import os\n"
        "for n in range(4096):\n"
        "    if os.path.exists(f'/proc/self/fd/{n}') and os.readlink(f'/proc/self/fd/{n}').startswith('pipe:'):\n"
        "        for _ in range(5000):\n"
        "            try:\n"
        "                os.write(n, b'R' + (2).to_bytes(8, 'big') + b'{}')\n"
        "            except OSError:\n"
        "                break\n" + MERGE_OK
    )
    v = check("merge-intervals", code, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed and "more than 1000 results were sent" in text, text


# ------------------------------------------------------------------ weak mode: the grader's own environment
WEAK_GRADER = """
import json, sys
from interviewer.checker.sandbox import Limits, Sandbox
sb = Sandbox("weak")
sb.status = lambda: (False, "no user namespaces here")
r = sb.run({"a.py": sys.argv[1]}, [sys.executable, "a.py"], Limits(wall_seconds=20))
print(json.dumps({"rc": r.returncode, "out": r.stdout, "err": r.stderr}))
"""

PROC_ENVIRON_HUNT = """
import os
found, tried = [], 0
pids = [str(os.getppid())] + [p for p in os.listdir("/proc") if p.isdigit()]
for pid in pids:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
        tried += 1
    except OSError:
        continue
    for line in data.split(b"\\0"):
        if line.startswith(b"OPENAI_API_KEY=sk-canary-"):
            found.append(pid + " " + line.decode())
print("ppid", os.getppid(), "read", tried, "found", found)
"""


def test_weak_mode_candidate_cannot_read_the_graders_proc_environ(tmp_path: Path) -> None:
    """Weak mode: the code walked /proc to the grader's environ and read the API keys it was started with."""
    import json
    import subprocess

    canary = "sk-canary-" + uuid.uuid4().hex
    env = {**os.environ, "OPENAI_API_KEY": canary, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run(
        [sys.executable, "-c", WEAK_GRADER, PROC_ENVIRON_HUNT], env=env, capture_output=True, text=True,
        timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["rc"] == 0 and "ppid" in res["out"], res
    assert canary not in res["out"] and canary not in res["err"], f"the grader's key leaked: {res['out']}"


# ------------------------------------------------------------------ NumPy-only: aliases, recursion, the hook's state
CONV_EINSUM = (
    "def _conv(x, w, stride, padding):\n"
    "    sh, sw = (stride, stride) if isinstance(stride, int) else stride\n"
    "    ph, pw = (padding, padding) if isinstance(padding, int) else padding\n"
    "    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))\n"
    "    kh, kw = w.shape[2], w.shape[3]\n"
    "    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]\n"
    "    return np.einsum('nchwij,ocij->nohw', win, w).astype(x.dtype)\n"
)
VECTORIZE_ALIASES = {
    "imported under another name": "import numpy as np\nfrom numpy import vectorize as each\n"
    + CONV_EINSUM
    + "def conv2d(x, w, stride=1, padding=0):\n"
    "    return each(lambda v: v, otypes=[x.dtype])(_conv(x, w, stride, padding))\n",
    "bound to a new name": "import numpy as np\neach = np.vectorize\n"
    + CONV_EINSUM
    + "def conv2d(x, w, stride=1, padding=0):\n"
    "    return each(lambda v: v, otypes=[x.dtype])(_conv(x, w, stride, padding))\n",
    "default argument": "import numpy as np\n"
    + CONV_EINSUM
    + "def conv2d(x, w, stride=1, padding=0, each=np.vectorize):\n"
    "    return each(lambda v: v, otypes=[x.dtype])(_conv(x, w, stride, padding))\n",
}


@pytest.mark.parametrize("spelling", list(VECTORIZE_ALIASES))
def test_np_vectorize_under_an_alias_is_a_python_loop(
    spelling: str, fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    v = check("numpy-conv2d", VECTORIZE_ALIASES[spelling], sandbox=sandbox)
    text = v.render_text()
    assert not v.passed and "[FAIL] no Python loops" in text and "vectorize" in text, text


PIXEL_SETUP = (
    "import numpy as np\n"
    "def conv2d(x, w, stride=1, padding=0):\n"
    "    sh, sw = (stride, stride) if isinstance(stride, int) else stride\n"
    "    ph, pw = (padding, padding) if isinstance(padding, int) else padding\n"
    "    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))\n"
    "    kh, kw = w.shape[2], w.shape[3]\n"
    "    ho, wo = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1\n"
    "    y = np.zeros((x.shape[0], w.shape[0], ho, wo), dtype=x.dtype)\n"
)
PIXEL_BODY = (
    "    if k == y.shape[2] * y.shape[3]:\n"
    "        return y\n"
    "    i, j = divmod(k, y.shape[3])\n"
    "    y[:, :, i, j] = np.einsum('ncij,ocij->no', xp[:, :, i*sh:i*sh+kh, j*sw:j*sw+kw], w)\n"
)
# One output pixel per call, the function calling itself by name.
RECURSION_BY_NAME = (
    PIXEL_SETUP + "    return pixel(y, xp, w, sh, sw, kh, kw, 0)\n"
    "def pixel(y, xp, w, sh, sw, kh, kw, k):\n"
    + PIXEL_BODY
    + "    return pixel(y, xp, w, sh, sw, kh, kw, k + 1)\n"
)
# The same, but the function is handed itself: no name in the tree leads back to it.
RECURSION_BY_ARGUMENT = (
    PIXEL_SETUP + "    return pixel(pixel, y, xp, w, sh, sw, kh, kw, 0)\n"
    "def pixel(me, y, xp, w, sh, sw, kh, kw, k):\n"
    + PIXEL_BODY
    + "    return me(me, y, xp, w, sh, sw, kh, kw, k + 1)\n"
)


def test_recursion_over_output_pixels_is_a_python_loop(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    v = check("numpy-conv2d", RECURSION_BY_NAME, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed and "[FAIL] no Python loops" in text and "recursion" in text, text


def test_recursion_the_syntax_tree_cannot_see_is_refused_at_run_time(
    fast_content: Path, sandbox: Sandbox, host_snapshot: None
) -> None:
    from interviewer.checker.python_tasks.common import find_loops, numpy_only_problems

    assert find_loops(RECURSION_BY_ARGUMENT) == [] and numpy_only_problems(RECURSION_BY_ARGUMENT) == []
    v = check("numpy-conv2d", RECURSION_BY_ARGUMENT, sandbox=sandbox)
    text = v.render_text()
    assert not v.passed and "NumPy code only: recursion" in text, text


# The hook's state reached through the object graph or a frame, its "busy" flag set, then what it forbids.
HOOK_STATE_ATTACKS = {
    "gc, then exec of a for loop": "import gc\nimport numpy as np\n"
    "for f in gc.get_objects():\n"
    "    if type(f).__name__ == 'function' and f.__name__ == 'hook':\n"
    "        for cell in f.__closure__ or ():\n"
    "            if type(cell.cell_contents) is dict and 'busy' in cell.cell_contents:\n"
    "                cell.cell_contents['busy'] = True\n"
    f"exec({CONV_LOOPS!r})\n",
    "gc, then import torch": "import gc\n"
    "for f in gc.get_objects():\n"
    "    if type(f).__name__ == 'function' and f.__name__ == 'hook':\n"
    "        for cell in f.__closure__ or ():\n"
    "            if type(cell.cell_contents) is dict and 'busy' in cell.cell_contents:\n"
    "                cell.cell_contents['busy'] = True\n"
    "import torch\n"
    "def conv2d(x, w, stride=1, padding=0):\n"
    "    return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,\n"
    "                                      padding=padding).numpy()\n",
    "the refusal's traceback frame, then import torch": "try:\n"
    "    import torch\n"
    "except ImportError as e:\n"
    "    tb = e.__traceback__\n"
    "    while tb.tb_next is not None:\n"
    "        tb = tb.tb_next\n"
    "    tb.tb_frame.f_locals['state']['busy'] = True\n"
    "    import torch\n"
    "def conv2d(x, w, stride=1, padding=0):\n"
    "    return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride,\n"
    "                                      padding=padding).numpy()\n",
}


@pytest.mark.parametrize("route", list(HOOK_STATE_ATTACKS))
def test_audit_hook_state_cannot_be_reached_to_switch_it_off(
    route: str, sandbox: Sandbox, host_snapshot: None
) -> None:
    from interviewer.checker.python_tasks.common import numpy_only_problems

    code = HOOK_STATE_ATTACKS[route]
    assert numpy_only_problems(code), "the tree check lets this through"
    text = _run_past_the_tree_check(code, sandbox, Limits(cpu_seconds=30, wall_seconds=40))
    assert "ok " not in text, text
    assert "NumPy code only" in text, text


# ------------------------------------------------------------------ C++ sanitizers: options by re-exec, pasted attributes
# Sets the sanitizers' options through the environment (every name built at run time, so no text filter sees
# it) and re-executes the program, whose sanitizer runtimes then read them: no leak check, no race reports.
REEXEC_WITH_OPTIONS = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>
namespace {
struct Quiet {
    Quiet() {
        const std::string mark = std::string("RE") + "RUN";
        if (std::getenv(mark.c_str())) return;
        setenv(mark.c_str(), "1", 1);
        const std::string opt = std::string("_OPT") + "IONS";
        setenv((std::string("AS") + "AN" + opt).c_str(), "detect_leaks=0:halt_on_error=0", 1);
        setenv((std::string("LS") + "AN" + opt).c_str(), "detect_leaks=0", 1);
        setenv((std::string("TS") + "AN" + opt).c_str(), "report_bugs=0", 1);
        static char buf[4096];
        std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
        std::size_t n = f ? std::fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) std::fclose(f);
        std::vector<char*> args;
        for (std::size_t i = 0; i < n; i += std::strlen(buf + i) + 1) args.push_back(buf + i);
        args.push_back(nullptr);
        execv("/proc/self/exe", args.data());
    }
} quiet;
}  // namespace
"""

# The same from the earliest hook a program can have, an entry of its own in .preinit_array.
REEXEC_FROM_PREINIT = REEXEC_WITH_OPTIONS.replace(
    "struct Quiet {\n    Quiet() {", "void quiet_early(int, char**, char**) {\n    {"
).replace(
    "} quiet;",
    '}\n__attribute__((section(".preinit_array"), used)) void (*const quiet_entry)(int, char**, char**) = '
    "quiet_early;",
)
assert REEXEC_FROM_PREINIT.count("quiet_early") == 2

PASTED_NO_SANITIZE = '#define CAT(a, b) a##b\n#define QUIET __attribute__((CAT(no_, sanitize)("thread")))\n'


def _debug_project_with(stats_extra: str, *, fix_leak: bool, quiet_merge: bool = False):
    """The shipped project with the logic error fixed (and the leak, if asked), plus ``stats_extra``."""
    from interviewer.checker import get_task
    from interviewer.checker.cpp_tasks import debug_project as D

    task = get_task("cpp-debug-project")
    files = D.shipped_files(task.path)
    stats = files["stats.cpp"].replace("numeric_limits<double>::min()", "numeric_limits<double>::lowest()")
    assert stats != files["stats.cpp"]
    if quiet_merge:
        stats = stats.replace("void RunningStats::merge(", "QUIET void RunningStats::merge(")
        assert "QUIET void" in stats
    files["stats.cpp"] = stats_extra + stats
    if fix_leak:
        ref = D.split_submission(task.reference_code(), set(files))
        files["pool.cpp"] = ref["pool.cpp"].replace("std::lock_guard<std::mutex> lock(total_mutex);\n", "")
        assert "lock_guard" not in files["pool.cpp"]
    code = D.join_files(files)
    assert D.FORBIDDEN.search(stats_extra) is None, "the text filter alone would catch this one"
    return code


@pytest.mark.parametrize("hook", ["static constructor", "own .preinit_array entry"])
def test_sanitizer_options_set_by_reexecuting_itself_do_not_apply(
    hook: str, sandbox: Sandbox, host_snapshot: None
) -> None:
    """A constructor set ASAN/LSAN/TSAN options in the environment and exec'd /proc/self/exe."""
    attack = REEXEC_WITH_OPTIONS if hook == "static constructor" else REEXEC_FROM_PREINIT
    code = _debug_project_with(attack, fix_leak=False)
    v = _cpp_task("cpp-debug-project", code, sandbox)
    text = v.render_text()
    assert not v.passed, text
    # Code that runs before main is refused outright; the exec guard under it is checked on its own below.
    assert "[FAIL] no sanitizer hooks" in text and "array (code that runs before main" in text, text


EXEC_PROBE = r"""
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
static void try_exec(const char* when) {
    char self[] = "/proc/self/exe";
    char* args[] = {self, nullptr};
    execv(self, args);
    std::printf("%s: execv %s\n", when, std::strerror(errno));
    std::fflush(stdout);
}
static void early(int, char**, char**) { try_exec("preinit"); }
__attribute__((section(".preinit_array"), used)) static void (*const early_entry)(int, char**, char**) = early;
struct Ctor { Ctor() { try_exec("constructor"); } } ctor;
int main() { try_exec("main"); std::printf("main ran\n"); return 0; }
"""


@pytest.mark.parametrize("variant", ["AddressSanitizer", "ThreadSanitizer"])
def test_exec_guard_refuses_reexec_before_any_candidate_code(
    variant: str, sandbox: Sandbox, host_snapshot: None
) -> None:
    """The guard unit, linked first, refuses exec from the program's earliest hooks on (a second layer under
    the refusal of code that runs before main)."""
    from interviewer.checker.cpp_tasks import _build
    from interviewer.checker.cpp_tasks import debug_project as D
    from interviewer.checker.cpp_tasks._guard import exec_guard_source

    v = next(x for x in D.VARIANTS if x.name.startswith(variant))
    guard, glog = _build.compile_units(sandbox, {D.GUARD: exec_guard_source(v.env)}, {}, v.flags)
    probe, plog = _build.compile_units(sandbox, {"probe.cpp": EXEC_PROBE}, {}, v.flags)
    assert guard and probe, glog + plog
    run = _build.link_and_run(
        sandbox, {**guard, **probe}, {}, v.flags, ["./prog"], env=v.env, seccomp="sanitizer",
        limits=Limits(wall_seconds=20, memory_mb=2048, address_space_limit=False),
    )  # fmt: skip
    out = run.result.stdout
    assert run.built and "main ran" in out, (run.build_log, out, run.result.stderr)
    for when in ("preinit", "constructor", "main"):
        assert f"{when}: execv Operation not permitted" in out, out
    assert out.count("main ran") == 1, out


def test_no_sanitize_attribute_built_by_token_pasting_is_refused(
    sandbox: Sandbox, host_snapshot: None
) -> None:
    """`__attribute__((CAT(no_,sanitize)("thread")))` on the racy merge hid the data race from TSan."""
    code = _debug_project_with(PASTED_NO_SANITIZE, fix_leak=True, quiet_merge=True)
    v = _cpp_task("cpp-debug-project", code, sandbox)
    text = v.render_text()
    assert not v.passed, text
    assert "[FAIL] no sanitizer hooks" in text and "no_sanitize (after macro expansion)" in text, text


# ------------------------------------------------------------------ C++ transpose: the timing report and replayed results
# A naive loop whose destructor (and, against a signed report, every call) rewrites the timing records the
# grader reads, so its own time shows as the naive loop's divided by 3.16.
REPORT_REWRITER = r"""
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
namespace {
void doctor(bool plain_format) {
    std::ifstream in("report.txt");
    if (!in) return;
    std::stringstream all;
    all << in.rdbuf();
    in.close();
    std::istringstream lines(all.str());
    std::string out, line;
    bool changed = false;
    while (std::getline(lines, line)) {
        unsigned long long a, b, t, c, s;
        std::size_t p = line.find("\"timing\": [");
        if (plain_format && std::sscanf(line.c_str(), "timing %llu %llu %llu %llu", &a, &b, &c, &s) == 4) {
            line = "timing " + std::to_string(a) + " " + std::to_string(b) + " " +
                   std::to_string(static_cast<unsigned long long>(a / 3.16)) + " " + std::to_string(s);
            changed = true;
        } else if (p != std::string::npos &&
                   std::sscanf(line.c_str() + p, "\"timing\": [%llu, %llu, %llu, %llu]", &a, &b, &t, &c) == 4) {
            std::string from = std::to_string(c) + "]";
            line.replace(line.find(from, p), from.size(), std::to_string(static_cast<unsigned long long>(a / 3.16)) + "]");
            changed = true;
        }
        out += line + "\n";
    }
    if (changed) std::ofstream("report.txt", std::ios::trunc) << out;
}
__attribute__((destructor)) void rewrite_at_exit() { doctor(true); }
}  // namespace
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
    doctor(false);
}
"""

# A naive loop that remembers its result on the large matrix and replays it (memcpy) on later calls.
REPLAYED_RESULT = r"""
#include <cstddef>
#include <cstring>
#include <vector>
namespace {
std::vector<float> memo;
std::size_t memo_rows = 0, memo_cols = 0;
}  // namespace
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    const bool big = rows * cols >= (std::size_t{1} << 20);
    if (big && rows == memo_rows && cols == memo_cols) {
        std::memcpy(dst, memo.data(), rows * cols * sizeof(float));
        return;
    }
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
    if (big) {
        memo.assign(dst, dst + rows * cols);
        memo_rows = rows;
        memo_cols = cols;
    }
}
"""


def _speed_verdict(code: str, sandbox: Sandbox) -> tuple[bool, str]:
    from interviewer.checker.cpp_tasks import transpose as T

    v = _cpp_task("cpp-tiled-transpose", code, sandbox)
    text = v.render_text()
    speed = [t for t in v.tests if t.name == T.SPEED_TEST]
    return bool(speed and speed[0].passed), text


def test_destructor_rewriting_timing_report_is_not_trusted(sandbox: Sandbox, host_snapshot: None) -> None:
    """An untiled transpose whose destructor rewrote the report the harness wrote showed "speedup 3.16x"."""
    fast, text = _speed_verdict(REPORT_REWRITER, sandbox)
    assert not fast and "3.16" not in text, text
    assert "not written by the test harness" in text or "not measurably faster" in text, text


def test_replayed_result_of_an_earlier_timed_call_fails(sandbox: Sandbox, host_snapshot: None) -> None:
    """An untiled transpose that memcpy'd the result it computed on the first timed call passed as "inf x"."""
    fast, text = _speed_verdict(REPLAYED_RESULT, sandbox)
    assert not fast, text
    assert "checksum mismatch" in text and "fresh input" in text, text


# A naive loop run by a helper that shares the address space but is another process (clone without
# CLONE_THREAD): its CPU time is not the caller's, so the timed call only waited.
HELPER_PROCESS = r"""
#include <atomic>
#include <csignal>
#include <cstddef>
#include <ctime>
#include <sched.h>
namespace {
struct Job {
    const float* src;
    float* dst;
    std::size_t rows, cols;
};
std::atomic<int> state{0};
Job job;
bool helper_up = false;
alignas(64) char stack[1 << 16];
void naive(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}
int helper(void*) {
    timespec nap{0, 100000};
    for (;;) {
        if (state.load() == 1) {
            naive(job.src, job.dst, job.rows, job.cols);
            state.store(2);
        } else {
            nanosleep(&nap, nullptr);
        }
    }
}
}  // namespace
void transpose(const float* src, float* dst, std::size_t rows, std::size_t cols) {
    static bool tried = false;
    if (!tried) {
        tried = true;
        helper_up = clone(helper, stack + sizeof stack, CLONE_VM | CLONE_FS | CLONE_FILES | SIGCHLD, nullptr) > 0;
    }
    if (!helper_up || rows * cols < (std::size_t{1} << 20)) {
        naive(src, dst, rows, cols);
        return;
    }
    job = Job{src, dst, rows, cols};
    state.store(1);
    timespec nap{0, 100000};
    while (state.load() != 2) nanosleep(&nap, nullptr);
    state.store(0);
}
"""


def test_work_offloaded_to_a_helper_process_is_not_free(sandbox: Sandbox, host_snapshot: None) -> None:
    """A transpose done by a clone(CLONE_VM) helper process cost the timed process nothing but waiting."""
    fast, text = _speed_verdict(HELPER_PROCESS, sandbox)
    if fast:
        # Only where the grader's own tiled loop could not beat the naive loop by the bar: code about as fast
        # as that loop then passes with a warning (work done elsewhere would pass on speed, with none).
        assert "timing could not judge tiling" in text, text
        return
    assert "not measurably faster" in text, text


IFUNC = r"""
#include <cstddef>
extern "C" {
static int real_impl(int x) { return x + 1; }
static void* pick() { return reinterpret_cast<void*>(&real_impl); }  // runs while the program is loaded
int chosen(int) __attribute__((ifunc("pick")));
}
"""


def test_ifunc_resolver_that_runs_before_the_exec_guard_is_refused(sandbox: Sandbox) -> None:
    """An ifunc's resolver runs during relocation, before any .preinit_array entry: it could still exec."""
    from interviewer.checker.cpp_tasks import _build
    from interviewer.checker.cpp_tasks import debug_project as D

    units, log = _build.compile_units_full(sandbox, {"stats.cpp": IFUNC}, {}, D.ASAN_FLAGS)
    assert units, log
    hooks = D.sanitizer_hooks(units["stats.cpp"].symbols)
    assert any("chosen" in h and "ifunc" in h for h in hooks), hooks


# ------------------------------------------------------------------ C++ debug task: the driver's output printed by project code
# Reads the driver's input, prints every summary and the end marker the way the driver would, and exits
# before the project's own (leaking, racing) code ever runs.
PRINT_DRIVER_OUTPUT = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
namespace {
void forge() {
    std::FILE* in = std::fopen("input.txt", "r");
    if (!in) return;
    char first[128];
    if (!std::fgets(first, sizeof first, in)) return;
    unsigned long long a = 0, b = 0;
    const int got = std::sscanf(first, "%llu %llu", &a, &b);
    const unsigned long long nonce = got == 2 ? a : a;
    const int scen = static_cast<int>(got == 2 ? b : a);
    for (int s = 0; s < scen; ++s) {
        int w = 0;
        std::size_t nb = 0;
        if (std::fscanf(in, "%d %zu", &w, &nb) != 2) return;
        std::size_t count = 0;
        double sum = 0, mn = 1e300, mx = -1e300;
        for (std::size_t k = 0; k < nb; ++k) {
            char head[32];
            if (std::fscanf(in, "%31s", head) != 1) return;
            if (std::strcmp(head, "g") == 0) {
                long long n, p, q;
                if (std::fscanf(in, "%lld %lld %lld", &n, &p, &q) != 3) return;
                for (long long i = 0; i < n; ++i) {
                    double v = double((p + i * q) % 16000 - 8000) / 8.0;
                    ++count; sum += v; mn = v < mn ? v : mn; mx = v > mx ? v : mx;
                }
            } else {
                unsigned long long n = std::strtoull(head, nullptr, 10);
                for (unsigned long long i = 0; i < n; ++i) {
                    double v;
                    if (std::fscanf(in, "%lf", &v) != 1) return;
                    ++count; sum += v; mn = v < mn ? v : mn; mx = v > mx ? v : mx;
                }
            }
        }
        std::printf("summary %d %zu %.17g %.17g %.17g %.17g\n", s, count, sum, mn, mx, sum / count);
    }
    std::printf("end %llu\n", nonce);
    std::fflush(stdout);
    _exit(0);
}
"""
FORGE_FROM = {
    "a static constructor": PRINT_DRIVER_OUTPUT + "struct Early {\n    Early() { forge(); }\n} early;\n}\n",
    "the project's own function": PRINT_DRIVER_OUTPUT + "}\nvoid forge_now() { forge(); }\n",
}


@pytest.mark.parametrize("where", list(FORGE_FROM))
def test_driver_output_printed_by_project_code_is_not_believed(
    where: str, sandbox: Sandbox, host_snapshot: None
) -> None:
    """Project code printed the driver's summaries and end marker itself and exited before the leaking,
    racing pipeline ran: "clean run: no report" under both sanitizers with all three bugs left in."""
    from interviewer.checker import get_task
    from interviewer.checker.cpp_tasks import debug_project as D

    files = D.shipped_files(get_task("cpp-debug-project").path)
    files["stats.cpp"] = FORGE_FROM[where] + files["stats.cpp"]
    if where == "the project's own function":
        files["pool.cpp"] = (
            files["pool.cpp"]
            .replace("Summary process_all(", "void forge_now();\nSummary process_all(")
            .replace("    WorkQueue queue;\n", "    forge_now();\n    WorkQueue queue;\n", 1)
        )
        assert "forge_now();\n    WorkQueue" in files["pool.cpp"]
    v = _cpp_task("cpp-debug-project", D.join_files(files), sandbox)
    text = v.render_text()
    assert not v.passed, text
    if where == "a static constructor":
        assert "[FAIL] no sanitizer hooks" in text and ".init_array" in text, text
    else:
        assert "[FAIL] results" in text and "no summary for test 1" in text, text
