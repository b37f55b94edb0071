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
    """The exception and its last line in solution.py, printed by the interpreter's C code: reading
    ``tb_frame`` from Python is refused under the NumPy-only policy (frames lead to the hook's state)."""
    buf = io.StringIO()
    old = sys.stderr
    sys.stderr = buf
    try:
        sys.__excepthook__(type(exc), exc, exc.__traceback__)
    finally:
        sys.stderr = old
    lines = buf.getvalue().splitlines()
    spots = [ln for ln in lines if ln.strip().startswith("File ") and "solution.py" in ln]
    where = ""
    if spots:
        line_no = spots[-1].split(", line ")[-1].split(",")[0]
        where = f" (solution.py line {line_no})"
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

# ------------------------------------------------------------------ the NumPy-only rule on a syntax tree
# Shared by the grader (common.py, on the submission) and the run-time hook below (on every string compiled
# at run time), so code that reaches exec() some other way meets the same rule.
LOOP_NODES: dict[type, str] = {
    ast.For: "for loop",
    ast.AsyncFor: "async for loop",
    ast.While: "while loop",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
}
# Calling Python once per element: any reference counts (an alias, an import under another name, a default
# argument), not only a call spelled with this name.
HIDDEN_LOOPS = frozenset({"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "fromiter"})
LOOPING_BUILTINS = frozenset({"map", "filter"})  # as bare names: `.map` of some object is not the builtin
KEY_CALLBACKS = frozenset({"sorted", "min", "max", "sort"})  # with key=: one Python call per element
# Names that reach the interpreter's internals (the object graph, frames, closures, other modules), through
# which code can find and change the run-time hook's state, or run code the syntax tree does not show.
INTERNALS = frozenset({
    "gc", "sys", "builtins", "modules", "importlib", "import_module", "threading", "inspect", "ctypes",
    "get_objects", "get_referrers", "get_referents", "exc_info", "last_traceback",
    "tb_frame", "tb_next", "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "gi_frame", "gi_code",
    "cr_frame", "ag_frame", "cell_contents", "co_code", "co_consts", "exec", "eval", "compile",
    "addaudithook", "audit", "setprofile", "getprofile", "settrace", "system", "popen", "spawn", "fork",
    # Modules NumPy's own modules hold as globals, and string-keyed attribute access (attrgetter & co.),
    # which would reach everything above by a name the tree never shows.
    "os", "operator", "attrgetter", "methodcaller", "functools", "itertools", "pickle", "types", "weakref",
    "warnings", "contextlib",
})  # fmt: skip


def _name_of(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def recursion_in(tree: ast.AST) -> list[tuple[int, str]]:
    """Functions that can reach themselves by name (directly or through others): a loop spelled as calls.

    Conservative: a function that merely mentions itself or a function that mentions it counts.
    """
    funcs: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and isinstance(
            node.value, ast.Lambda
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    funcs.setdefault(t.id, []).append(node.value)
    edges = {
        name: {_name_of(n) for body in nodes for n in ast.walk(body) if _name_of(n) in funcs}
        for name, nodes in funcs.items()
    }
    found = []
    for name in funcs:
        seen: set[str] = set()
        stack = list(edges[name])
        while stack:
            cur = stack.pop()
            if cur == name:
                line = min(getattr(n, "lineno", 0) for n in funcs[name])
                found.append((line, f"recursion: {name}() can call itself (a Python-level loop)"))
                break
            if cur not in seen:
                seen.add(cur)
                stack.extend(edges[cur])
    return found


def loop_problems(tree: ast.AST) -> list[tuple[int, str]]:
    """Python-level loops: statements, comprehensions, np.vectorize & co. however named, recursion."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        kind = LOOP_NODES.get(type(node))
        if kind:
            found.append((line, kind))
        elif isinstance(node, (ast.Name, ast.Attribute)) and _name_of(node) in HIDDEN_LOOPS:
            found.append((line, f"{_name_of(node)} (a Python-level loop)"))
        elif isinstance(node, ast.Name) and node.id in LOOPING_BUILTINS:
            found.append((line, f"{node.id}() (a Python-level loop)"))
        elif isinstance(node, ast.alias) and node.name.rpartition(".")[2] in HIDDEN_LOOPS:
            found.append((line, f"import of {node.name} (a Python-level loop)"))
        elif isinstance(node, ast.Call):
            name = _name_of(node.func)
            if name in KEY_CALLBACKS and any(k.arg == "key" for k in node.keywords):
                found.append((line, f"{name}(key=...) (a Python call per element)"))
            elif name == "iter" and len(node.args) == 2:
                found.append((line, "iter(callable, sentinel) (a Python-level loop)"))
    return sorted(found + recursion_in(tree))


def internals_problems(tree: ast.AST) -> list[tuple[int, str]]:
    """References to the interpreter's internals and private attributes (see INTERNALS)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        name = _name_of(node)
        if name in INTERNALS:
            found.append(
                (getattr(node, "lineno", 0), f"use of {name!r} (reaches the interpreter's internals)")
            )
        elif isinstance(node, ast.Attribute) and name.startswith("_"):
            found.append((node.lineno, f"private attribute .{name}"))
    return sorted(found)


def _install_numpy_policy(fd: int) -> None:
    """The NumPy-only rule at run time: refuse (and report) what the syntax-tree check cannot see.

    Refused and reported on the pipe (so catching the error does not hide it): code compiled at run time
    that breaks the syntax-tree rule (loops, np.vectorize however named, recursion, the interpreter's
    internals), a function of the solution entered again while it is still running (recursion however it
    was arranged), code loaded with marshal except a .pyc of the Python installation the import system has
    just opened, new code objects, ctypes, new processes, and every way to reach the object graph or a
    frame (``gc.get_objects``/``get_referrers``, ``tb_frame``, ``gi_frame``..., and ``sys._getframe`` called
    from code that is not library code), through which code could find this hook's state. Imports beyond NumPy and the standard library are refused with
    an ImportError (library code probes optional modules inside try/except).

    The hook keeps no "busy" flag that code could set to switch it off: the only event it lets through
    unchecked is the compile of its own parse, recognised by a file name drawn here and held only in this
    closure, which nothing can reach once the object graph and frames are refused.
    """
    import threading

    # Loaded now: importing them lazily later would go through marshal.
    for name in ("numpy.lib.stride_tricks", "numpy.linalg", "numpy.fft"):
        importlib.import_module(name)

    trusted = tuple(
        os.path.realpath(p) + os.sep
        for p in {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(np.__file__))}
    )
    pipe_id = (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
    allowed_top = frozenset(sys.stdlib_module_names) | {"numpy", "solution"}
    denied_events = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                     "subprocess.Popen", "pty.spawn", "code.__new__", "ctypes.", "sys.setprofile",
                     "sys.settrace", "cpython.run_", "sys.remote_exec", "gc.get_objects", "gc.get_referrers",
                     "gc.get_referents", "sys._current_frames", "sys._current_exceptions",
                     "function.__new__")  # fmt: skip
    # Library code asks for its caller's frame (typing, enum, namedtuple at import time); code that is not
    # library code may not (a frame leads up the stack, into this hook when it runs code of the solution).
    frame_getters = (sys._getframe,)
    frame_attrs = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
    own_parse = f"<policy-{os.urandom(16).hex()}>"
    pyc_opened: list[str] = []
    library = (*trusted, "<frozen ")  # code of the installation (the import system included) may recurse

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
        if event == "compile":
            src, filename = args[0], args[1]
            # Only exact str/bytes, compared or decoded: a method of an object of the solution (__eq__,
            # __fspath__, __str__) called from here would run its code inside this hook, and could answer
            # "equal" to skip the check.
            if type(filename) is str and filename == own_parse:
                return
            name = (
                filename
                if type(filename) is str
                else filename.decode("utf-8", "replace")
                if type(filename) is bytes
                else ""
            )
            if name.startswith(library):
                refuse(f"compiling code under a library's file name ({name[:200]}) is not allowed")
            if type(src) not in (str, bytes):
                refuse("compiling a syntax tree or code object at run time is not allowed")
            try:
                tree = ast.parse(src, filename=own_parse)
            except (SyntaxError, ValueError):
                return  # compile() itself will raise
            problems = loop_problems(tree) + internals_problems(tree)
            if problems:
                refuse(f"code compiled at run time (exec/eval/compile) breaks the rule: {problems[0][1]}")
        elif event == "import":
            if type(args[0]) is not str:
                raise ImportError("numpy-conv2d runs NumPy code only: a module name must be a plain str")
            top = args[0].partition(".")[0]
            if top not in allowed_top and not in_stdlib(top):
                # Refused, not reported: library code tries optional imports inside try/except.
                raise ImportError(f"numpy-conv2d runs NumPy code only: importing {args[0]!r} is not allowed")
        elif event == "object.__getattr__":
            if len(args) > 1 and args[1] in frame_attrs:
                refuse(f"reading .{args[1]} (a frame) is not allowed")
        elif event == "open":
            path = args[0]
            if type(path) in (str, bytes) and os.fsdecode(path).endswith(".pyc"):
                pyc_opened[:] = [os.fsdecode(path)] if is_trusted(path) else []
        elif event in ("marshal.loads", "marshal.load"):
            # Only the import system loading a trusted .pyc it has just opened: the bytes must match.
            pyc = pyc_opened.pop() if pyc_opened else None
            data = bytes(args[0]) if event == "marshal.loads" else b""
            ok = False
            if pyc:
                with open(pyc, "rb") as fh:
                    ok = fh.read()[16:] == data
                pyc_opened.clear()
            if not ok:
                refuse("loading code with marshal is not allowed")
        elif event.startswith(denied_events):
            refuse(f"{event} is not allowed")

    def on_call(frame: Any, event: str, arg: Any) -> None:
        # Recursion however arranged (a function passed itself, a lambda in a list...): a function that is
        # not library code entered again while it is still on the stack.
        if event == "c_call":
            if arg in frame_getters and not str(frame.f_code.co_filename).startswith(library):
                refuse("sys._getframe is not allowed (a frame reaches the checker's own state)")
            return
        if event != "call":
            return
        code = frame.f_code
        if str(code.co_filename).startswith(library):
            return
        f = frame.f_back
        while f is not None:
            if f.f_code is code:
                refuse(
                    f"recursion: {code.co_name}() was called again while it was running (a Python-level loop)"
                )
            f = f.f_back

    # Profiling first: once the hook is in, sys.setprofile is refused (to the solution as to anyone).
    threading.setprofile(on_call)
    sys.setprofile(on_call)
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
