"""Runs INSIDE the sandbox: import the candidate's solution.py, call it on each case, hand back data only.

Two processes. The candidate's code runs in a child forked from this one; the child sends every case's
result (a JSON record, arrays as ``.npz`` bytes) through a pipe, in size-capped frames. This parent never
runs candidate code: it reads the per-run key (``.key``) only after the child exists and deletes it before
the child may start, is not dumpable (the child cannot read its memory through /proc), and writes each
record to ``results.jsonl`` signed with the key, arrays to ``a<seq>.npz`` with their SHA-256 in the signed
record. So the candidate can neither reach the results handle nor forge a line in the results file; the
grader outside verifies every line and compares the values with the ones it computed itself.

With ``"policy": "numpy"`` in the spec the child also installs an audit hook before the solution runs:
no new code with loops at run time (compile/eval/exec of strings, marshal), no imports beyond NumPy and
the standard library, no code loaded with marshal, no subprocesses or ctypes.
"""

import ast
import hashlib
import hmac
import importlib
import importlib.machinery
import io
import json
import os
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

KEY_FILE = ".key"
MAX_RECORD = 1 << 20  # bytes of one JSON record from the child
MAX_ARRAYS = 16 << 20  # bytes of one case's .npz from the child
MAX_FRAMES = 1000  # frames from the child in one run (a few per case)


def _short_tb(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("solution.py")]
    where = f" (solution.py line {frames[-1].lineno})" if frames else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:800] + where


def _to_numpy(x: Any, torch: Any) -> np.ndarray:
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            x = x.float()
        x = x.numpy()
    a = np.asarray(x)
    if a.dtype.kind not in "biufc":
        raise TypeError(f"returned {type(x).__name__} with dtype {a.dtype}; expected a numeric array")
    return np.ascontiguousarray(a)


def _jsonable(x: Any, depth: int = 0) -> Any:
    if depth > 32:
        raise ValueError("the returned value is nested more than 32 levels deep")
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    raise TypeError(f"returned a {type(x).__name__}; expected lists of numbers")


def _inputs_after(kwargs: dict[str, Any], names: list[str]) -> Any:
    """The list/number arguments as they are after the call, for the grader to compare with what it sent."""
    try:
        return {k: _jsonable(kwargs[k]) for k in names}
    except (TypeError, ValueError) as e:
        return f"the arguments are no longer plain data after the call ({e})"


def wait_for_go() -> None:
    """Slow imports happen before this: a pre-started box waits here until the grader says go."""
    while not os.path.exists(".go"):
        time.sleep(0.002)


def _not_dumpable() -> None:
    """Keep a same-uid child out of this process's memory and fds (/proc/PID/mem, /proc/PID/fd)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


# ------------------------------------------------------------------------------------------ the child
def _send(fd: int, kind: bytes, payload: bytes) -> None:
    data = kind + len(payload).to_bytes(8, "big") + payload
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


send = _send  # for the training harness, which imports this file as ``relay``

_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_HIDDEN = {"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "map", "fromiter"}


def _loop_in(tree: ast.AST) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS):
            return type(node).__name__
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _HIDDEN:
                return f"{name}()"
    return None


def _install_numpy_policy(fd: int) -> None:
    """The NumPy-only rule at run time: refuse (and report) what the syntax-tree check cannot see.

    Code with loops compiled at run time, code loaded with marshal except a .pyc of the Python installation
    the import system has just opened, new code objects, ctypes and new processes are refused and reported
    on the pipe (so catching the error does not hide it); imports beyond NumPy and the standard library are
    refused with an ImportError (library code probes optional modules inside try/except).
    """
    # Loaded now: importing them lazily later would go through marshal.
    for name in ("numpy.lib.stride_tricks", "numpy.linalg", "numpy.fft"):
        importlib.import_module(name)

    trusted = tuple(
        os.path.realpath(p) + os.sep
        for p in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(np.__file__))}
    )
    pipe_id = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
    allowed_top = set(sys.stdlib_module_names) | {"numpy", "solution"}
    denied_events = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                     "subprocess.Popen", "pty.spawn", "code.__new__", "ctypes.", "sys.setprofile",
                     "sys.settrace", "cpython.run_", "sys.remote_exec")  # fmt: skip
    state: dict[str, Any] = {"busy": False, "pyc": None}

    def refuse(why: str) -> None:
        msg = f"numpy-conv2d runs NumPy code only: {why}"
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != pipe_id:
                os._exit(97)  # the report channel was replaced: nothing from this run counts
            _send(fd, b"V", msg.encode())
        except OSError:
            os._exit(97)
        raise PermissionError(msg)

    stdlib_dirs = tuple(os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib"))

    def in_stdlib(top: str) -> bool:
        """A private helper of the standard library (e.g. ``_sysconfigdata_*``), not a site package."""
        spec = importlib.machinery.PathFinder.find_spec(top)
        origin = os.path.realpath(spec.origin) if spec and spec.origin else ""
        return origin.startswith(stdlib_dirs) and "site-packages" not in origin

    def is_trusted(path: object) -> bool:
        if isinstance(path, int):
            return True  # an fd this process already holds
        try:
            real = os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return real.startswith(trusted)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if state["busy"]:
            return
        state["busy"] = True
        try:
            if event == "compile":
                src = args[0]
                if not isinstance(src, (str, bytes)):
                    refuse("compiling a syntax tree or code object at run time is not allowed")
                try:
                    tree = ast.parse(src)
                except (SyntaxError, ValueError):
                    return  # compile() itself will raise
                loop = _loop_in(tree)
                if loop:
                    refuse(f"code compiled at run time (exec/eval/compile) contains a loop ({loop})")
            elif event == "import":
                top = str(args[0]).partition(".")[0]
                if top not in allowed_top and not in_stdlib(top):
                    # Refused, not reported: library code tries optional imports inside try/except.
                    raise ImportError(
                        f"numpy-conv2d runs NumPy code only: importing {args[0]!r} is not allowed"
                    )
            elif event == "open":
                path = args[0]
                if isinstance(path, (str, bytes)) and os.fsdecode(path).endswith(".pyc"):
                    state["pyc"] = os.fsdecode(path) if is_trusted(path) else None
            elif event in ("marshal.loads", "marshal.load"):
                # Only the import system loading a trusted .pyc it has just opened: the bytes must match.
                pyc, state["pyc"] = state["pyc"], None
                data = bytes(args[0]) if event == "marshal.loads" else b""
                ok = False
                if pyc:
                    with open(pyc, "rb") as fh:
                        ok = fh.read()[16:] == data
                if not ok:
                    refuse("loading code with marshal is not allowed")
            elif event.startswith(denied_events):
                refuse(f"{event} is not allowed")
        finally:
            state["busy"] = False

    sys.addaudithook(hook)


def _load(path: str, policy: str | None, fd: int) -> ModuleType:
    with open(path, encoding="utf-8") as fh:
        code = compile(fh.read(), path, "exec")  # checked by the grader before the box started
    if policy == "numpy":
        _install_numpy_policy(fd)
    mod = ModuleType("solution")
    mod.__file__ = path
    sys.modules["solution"] = mod
    exec(code, mod.__dict__)
    return mod


def child(spec: dict[str, Any], inputs: Any, fd: int, torch: Any) -> None:
    """Import the solution and run every case; results go to the parent through ``fd`` only."""

    def record(d: dict[str, Any]) -> None:
        try:
            payload = json.dumps(d).encode()
        except (ValueError, TypeError, RecursionError) as e:
            why = f"the returned value cannot be sent ({e})"[:800]
            payload = json.dumps({"case": d.get("case"), "error": why}).encode()
        _send(fd, b"R", payload)

    arrays_in = {k: np.array(inputs[k]) for k in inputs.files}
    try:
        mod = _load(os.path.abspath("solution.py"), spec.get("policy"), fd)
    except BaseException as e:
        record({"case": "__import__", "error": _short_tb(e)})
        return
    for case in spec["cases"]:
        kwargs = dict(case.get("scalars", {}))
        for arg in case.get("arrays", []):
            a = arrays_in[f"{case['name']}__{arg}"]
            kwargs[arg] = torch.from_numpy(a) if torch is not None and case.get("as_tensor", True) else a
        try:
            fn = getattr(mod, case["func"])
            t0 = time.process_time()
            out = fn(**kwargs)
            cpu = time.process_time() - t0  # data for a complexity note on a slow run, never a verdict
            if case.get("json"):
                rec = {"case": case["name"], "value": _jsonable(out), "cpu_seconds": cpu}
                if case.get("check_inputs"):
                    rec["inputs_after"] = _inputs_after(kwargs, list(case.get("scalars", {})))
                record(rec)
                continue
            outs = out if isinstance(out, tuple) else (out,)
            arrays = {f"r{j}": _to_numpy(o, torch) for j, o in enumerate(outs)}
            buf = io.BytesIO()
            np.savez(buf, **arrays)  # type: ignore[arg-type]
            _send(fd, b"A", buf.getvalue())
            record({"case": case["name"], "n": len(arrays), "cpu_seconds": cpu})
        except BaseException as e:
            record({"case": case["name"], "error": _short_tb(e)})


# ----------------------------------------------------------------------------------------- the parent
def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def parent(fd: int, key: bytes, pid: int, res: Any) -> int:
    """Relay the child's frames into signed lines; returns the exit status to report (the child's)."""

    def emit(d: dict[str, Any]) -> None:
        payload = json.dumps(d).encode()
        tag = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
        res.write(tag + b" " + payload + b"\n")
        res.flush()

    seq = frames = 0
    pending: str | None = None
    digest = ""
    while True:
        head = _read_exact(fd, 9)
        if head is None:
            break
        kind, size = head[:1], int.from_bytes(head[1:], "big")
        cap = MAX_ARRAYS if kind == b"A" else MAX_RECORD
        frames += 1
        if frames > MAX_FRAMES:
            emit({"seq": seq, "oversize": f"more than {MAX_FRAMES} results were sent in one run"})
            os.kill(pid, 9)
            break
        if kind not in (b"A", b"R", b"V") or size > cap:
            what = "returned arrays" if kind == b"A" else "returned value"
            emit({"seq": seq, "oversize": f"the {what} took {size} bytes; the limit is {cap} bytes"})
            os.kill(pid, 9)
            break
        payload = _read_exact(fd, size)
        if payload is None:
            break
        if kind == b"A":
            pending = f"a{seq}.npz"
            with open(pending, "wb") as fh:
                fh.write(payload)
            digest = hashlib.sha256(payload).hexdigest()
            continue
        msg = payload.decode("utf-8", "replace")
        if kind == b"V":
            emit({"seq": seq, "violation": msg})
        else:
            emit({"seq": seq, "msg": msg, **({"npz": pending, "sha256": digest} if pending else {})})
            pending = None
        seq += 1
    res.close()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def run_relayed(work: Callable[[int], None]) -> int:
    """Run ``work(fd)`` (the candidate's part) in a forked child whose results reach the grader only as
    frames on ``fd``, relayed and signed by this process; returns the exit status to report.

    Call after the slow imports and after ``.go``. Also used by the training task's harness (train_box.py).
    """
    _not_dumpable()
    go_r, go_w = os.pipe()
    data_r, data_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        os.close(data_r)
        os.read(go_r, 1)  # the parent has read and deleted the key by now
        os.close(go_r)
        try:
            work(data_w)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    os.close(go_r)
    os.close(data_w)
    try:
        with open(KEY_FILE) as fh:
            key = bytes.fromhex(fh.read().strip())
        os.unlink(KEY_FILE)
    except (OSError, ValueError):
        os.kill(pid, 9)
        return 2
    # Append mode: whatever else lands in the file stays there for the grader to see (and reject).
    res = open("results.jsonl", "ab")  # noqa: SIM115 - opened before the child runs, flushed per line
    os.write(go_w, b"g")
    os.close(go_w)
    return parent(data_r, key, pid, res)


def main() -> int:
    torch: Any = None
    if "--torch" in sys.argv:
        import torch

        torch.set_num_threads(1)  # tiny tensors: threads only add contention on 2 cores
    wait_for_go()
    with open("spec.json") as fh:
        spec = json.load(fh)
    inputs = np.load("inputs.npz", allow_pickle=False)
    return run_relayed(lambda fd: child(spec, inputs, fd, torch))


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)  # skip interpreter teardown: with torch loaded it costs seconds, and every file is closed
