"""The CUDA-Python subset a kernel task accepts, checked on the syntax tree before anything runs.

Two jobs. First, keep submissions to what Numba compiles for a real GPU (kernels use indices, arithmetic,
``math``, ``cuda.*``, device arrays and module-level constants), so a passing solution runs unchanged with
Numba's CUDA target. Second, keep the box's instruments out of reach: the simulator runs in the same Python
process as the candidate's code, so names and attributes that lead to interpreter internals (anything
starting with ``_``, ``getattr``, frames, ``gc``, ``sys``...) are refused here, where the candidate cannot
change the check. Together with device arrays that the host cannot read, this is what stops a "solution"
that computes on the host with NumPy, or rewrites the race detector's records.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

NUMBA_TYPES = {
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "boolean", "void",
}  # fmt: skip
NUMPY_HOST = NUMBA_TYPES - {"boolean", "void"} | {
    "zeros", "ones", "empty", "full", "arange", "array", "asarray", "zeros_like", "ones_like", "empty_like",
    "full_like", "dtype", "inf", "nan", "pi", "e", "bool_", "intp", "ceil", "floor", "sqrt", "exp", "log",
    "maximum", "minimum", "finfo", "iinfo",
}  # fmt: skip
NUMPY_DEVICE = NUMBA_TYPES - {"boolean", "void"} | {"inf", "nan", "pi", "e"}
CUDA_TOP = {
    "jit", "grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim", "shared", "local", "const",
    "atomic", "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "threadfence",
    "threadfence_block", "threadfence_system", "warpsize", "laneid", "popc", "brev", "clz", "ffs", "fma",
    "cbrt", "selp", "device_array", "device_array_like", "to_device", "synchronize",
}  # fmt: skip
# Streams and events are left out: launches here are synchronous, and an event's elapsed time (0 in a
# simulator) would let code tell the grader from a GPU.
CUDA_HOST_ONLY = {"jit", "device_array", "device_array_like", "to_device", "synchronize"}
CUDA_SUB = {
    "threadIdx": {"x", "y", "z"}, "blockIdx": {"x", "y", "z"}, "blockDim": {"x", "y", "z"},
    "gridDim": {"x", "y", "z"}, "shared": {"array"}, "local": {"array"}, "const": {"array_like"},
    "atomic": {"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
               "compare_and_swap", "cas"},
}  # fmt: skip
BANNED_BUILTINS = {
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars",
    "dir", "type", "object", "super", "id", "input", "breakpoint", "help", "memoryview", "exit", "quit",
    "classmethod", "staticmethod", "property", "issubclass", "copyright", "credits", "license",
}  # fmt: skip
BANNED_ATTRS = {
    "format", "format_map", "ctypes", "mro", "gi_frame", "gi_code", "cr_frame", "ag_frame", "f_back",
    "f_globals", "f_locals", "f_builtins", "tb_frame", "tb_next", "base",
}  # fmt: skip
DEVICE_BUILTINS = {"range", "min", "max", "abs", "float", "int", "bool", "round", "len", "print"}
ALLOWED_MODULES = {"numpy", "math"}
_NO_KERNEL = {
    ast.Try: "try/except", ast.Raise: "raise", ast.Assert: "assert", ast.With: "with", ast.Global: "global",
    ast.Nonlocal: "nonlocal", ast.Lambda: "lambda", ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression", ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set",
    ast.FunctionDef: "a nested function", ast.Import: "import", ast.ImportFrom: "import",
    ast.Delete: "del", ast.JoinedStr: "an f-string",
}  # fmt: skip
_NOWHERE = {
    ast.Try: "try/except (errors in a kernel must fail the run, not be caught)",
    ast.ClassDef: "class definitions", ast.Yield: "generators", ast.YieldFrom: "generators",
    ast.AsyncFunctionDef: "async code", ast.Await: "async code", ast.AsyncFor: "async code",
    ast.AsyncWith: "async code",
}  # fmt: skip
if hasattr(ast, "TryStar"):
    _NOWHERE[ast.TryStar] = "try/except"


@dataclass
class Module:
    """What the module defines at top level: aliases of the allowed modules, kernels, constants."""

    cuda: set[str] = field(default_factory=set)
    numpy: set[str] = field(default_factory=set)
    math: set[str] = field(default_factory=set)
    numba_types: set[str] = field(default_factory=set)
    math_names: set[str] = field(default_factory=set)
    kernels: dict[str, ast.FunctionDef] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    constants: set[str] = field(default_factory=set)
    assigned: dict[str, int] = field(default_factory=dict)


def _is_cuda_jit(dec: ast.expr, mod: Module) -> bool:
    node = dec.func if isinstance(dec, ast.Call) else dec
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "jit"
        and isinstance(node.value, ast.Name)
        and node.value.id in mod.cuda
    )


def _constant_expr(node: ast.expr, mod: Module) -> bool:
    """Numbers and arithmetic over numbers and other constants (what Numba freezes into a kernel)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool)) and not isinstance(node.value, complex)
    if isinstance(node, ast.UnaryOp):
        return _constant_expr(node.operand, mod)
    if isinstance(node, ast.BinOp):
        return _constant_expr(node.left, mod) and _constant_expr(node.right, mod)
    if isinstance(node, ast.Name):
        return node.id in mod.constants
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        f = node.func
        typed = (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in mod.numpy
                 and f.attr in NUMPY_DEVICE) or (isinstance(f, ast.Name) and f.id in mod.numba_types | {"int", "float"})  # fmt: skip
        return typed and _constant_expr(node.args[0], mod)
    return False


def _scan_module(tree: ast.Module, problems: list[str]) -> Module:
    mod = Module()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                alias = a.asname or a.name
                if a.name == "numpy":
                    mod.numpy.add(alias)
                elif a.name == "math":
                    mod.math.add(alias)
                else:
                    problems.append(
                        f"line {node.lineno}: `import {a.name}` is not allowed; use `import numpy as np`, "
                        "`import math` and `from numba import cuda, float32`"
                    )
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                alias = a.asname or a.name
                if node.module == "numba" and a.name == "cuda":
                    mod.cuda.add(alias)
                elif node.module == "numba" and a.name in NUMBA_TYPES:
                    mod.numba_types.add(alias)
                elif node.module == "math" and a.name != "*":
                    mod.math_names.add(alias)
                else:
                    problems.append(
                        f"line {node.lineno}: `from {node.module} import {a.name}` is not allowed; the task "
                        "accepts `from numba import cuda` and Numba's scalar types (float32, int32, ...)"
                    )
        elif isinstance(node, ast.FunctionDef):
            if any(_is_cuda_jit(d, mod) for d in node.decorator_list):
                mod.kernels[node.name] = node
            mod.functions.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        mod.assigned[n.id] = mod.assigned.get(n.id, 0) + 1
            value = node.value
            if (
                value is not None
                and all(isinstance(t, ast.Name) for t in targets)
                and _constant_expr(value, mod)
            ):
                for t in targets:
                    assert isinstance(t, ast.Name)
                    mod.constants.add(t.id)
    mod.constants = {c for c in mod.constants if mod.assigned.get(c, 0) == 1}
    return mod


def _attr_chain(node: ast.Attribute) -> tuple[str | None, list[str]]:
    """``cuda.shared.array`` -> ("cuda", ["shared", "array"]); None as root for non-name roots."""
    parts: list[str] = []
    cur: ast.expr = node
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    parts.reverse()
    return (cur.id if isinstance(cur, ast.Name) else None), parts


def _check_attribute(node: ast.Attribute, mod: Module, in_kernel: bool, problems: list[str]) -> None:
    root, parts = _attr_chain(node)
    line = node.lineno
    if root in mod.cuda:
        top = parts[0]
        if top not in CUDA_TOP:
            problems.append(
                f"line {line}: `cuda.{'.'.join(parts)}` is not part of the CUDA API this task allows"
            )
        elif in_kernel and top in CUDA_HOST_ONLY:
            problems.append(f"line {line}: `cuda.{top}` is host-side API; it cannot be used inside a kernel")
        elif len(parts) > 1 and (top not in CUDA_SUB or parts[1] not in CUDA_SUB[top] or len(parts) > 2):
            problems.append(
                f"line {line}: `cuda.{'.'.join(parts)}` is not part of the CUDA API this task allows"
            )
    elif root in mod.numpy:
        allowed = NUMPY_DEVICE if in_kernel else NUMPY_HOST
        if parts[0] not in allowed:
            where = (
                "inside a kernel (only scalar types such as np.float32(x) and constants such as np.inf)"
                if in_kernel
                else "here (allocate with cuda.device_array / cuda.to_device; compute in kernels)"
            )
            problems.append(f"line {line}: `np.{'.'.join(parts)}` is not allowed {where}")


def _body_nodes(fn: ast.FunctionDef) -> list[ast.AST]:
    """The kernel's own nodes: its arguments and body, not its decorators."""
    return [n for part in [fn.args, *fn.body] for n in ast.walk(part)]


def _kernel_locals(fn: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    for n in _body_nodes(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
    return names


def _check_kernel(fn: ast.FunctionDef, mod: Module, problems: list[str]) -> None:
    local = _kernel_locals(fn)
    allowed_globals = (
        mod.cuda | mod.numpy | mod.math | mod.numba_types | mod.math_names | mod.constants | set(mod.kernels)
    )
    for node in _body_nodes(fn):
        kind = _NO_KERNEL.get(type(node))
        if kind:
            problems.append(f"line {node.lineno}: {kind} is not supported inside a CUDA kernel (`{fn.name}`)")  # type: ignore[attr-defined]
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            n = node.id
            if n in local or n in allowed_globals or n in DEVICE_BUILTINS or n in ("True", "False", "None"):
                continue
            if n in mod.functions:
                problems.append(
                    f"line {node.lineno}: kernel `{fn.name}` calls `{n}`, a host function; device functions "
                    "need @cuda.jit(device=True)"
                )
            elif n in mod.assigned:
                problems.append(
                    f"line {node.lineno}: kernel `{fn.name}` reads the module-level name `{n}`, which is not a "
                    "number assigned once; kernels see module globals as compile-time constants, so pass "
                    "arrays as arguments"
                )
            else:
                problems.append(
                    f"line {node.lineno}: `{n}` is not available inside a CUDA kernel (`{fn.name}`)"
                )
        elif isinstance(node, ast.Attribute):
            _check_attribute(node, mod, True, problems)


# Array methods and NumPy functions that compute (not allocate): signs of a host-side solution.
_HOST_MATH = {
    "sum", "mean", "max", "min", "prod", "cumsum", "dot", "matmul", "argmax", "argmin", "std", "var", "exp",
    "log", "sqrt", "transpose", "T", "bincount", "histogram", "einsum", "copy_to_host", "tolist", "maximum",
    "minimum", "ceil", "floor", "asarray", "array",
}  # fmt: skip


def _host_numpy(tree: ast.Module, code: str, mod: Module) -> str | None:
    """The first line with a host-side NumPy computation, as ``source`` at line N (None when there is none)."""
    lines = code.splitlines()
    found = []
    for node in ast.walk(tree):
        hit = isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)
        if isinstance(node, ast.Attribute) and node.attr in _HOST_MATH:
            root, _ = _attr_chain(node)
            hit = root not in mod.cuda
        if hit:
            found.append(node.lineno)  # type: ignore[attr-defined]
    if not found:
        return None
    line = min(found)
    text = lines[line - 1].strip() if line <= len(lines) else ""
    return f"`{text[:80]}` at line {line}"


def check(code: str) -> list[str]:
    """Every violation of the kernel-task subset, with its line; empty when the code may run."""
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        return [f"syntax error at line {e.lineno}: {e.msg}"]
    problems: list[str] = []
    mod = _scan_module(tree, problems)
    in_kernels = {id(n) for fn in mod.kernels.values() for n in _body_nodes(fn)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        what = _NOWHERE.get(type(node))
        if what:
            problems.append(f"line {line}: {what} is not allowed in this task")
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in tree.body:
            problems.append(f"line {line}: import at the top of the file only")
        names: list[str] = []
        if isinstance(node, ast.Name):
            names.append(node.id)
            if node.id in BANNED_BUILTINS:
                problems.append(f"line {line}: `{node.id}` is not allowed in this task")
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            if node.attr in BANNED_ATTRS:
                problems.append(f"line {line}: the attribute `.{node.attr}` is not allowed in this task")
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                problems.append(f"line {line}: assigning or deleting attributes is not allowed in this task")
            elif id(node) not in in_kernels:
                _check_attribute(node, mod, False, problems)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.arg, ast.keyword)):
            names.append(node.arg or "")
        elif isinstance(node, ast.alias):
            names += [node.name.split(".")[0], node.asname or ""]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.append(node.name)
        for n in names:
            if n.startswith("_") and n != "_":
                problems.append(
                    f"line {line}: names starting with an underscore (`{n}`) are not allowed in this task"
                )
    for fn in mod.kernels.values():
        _check_kernel(fn, mod, problems)
    if not mod.kernels:
        host = _host_numpy(tree, code, mod)
        if host:
            problems.append(
                f"no CUDA kernel found, and the host code computes with NumPy ({host}): here the device arrays "
                "cannot be read on the host, so the result must come from the GPU; write the computation as "
                "a @cuda.jit kernel that writes the output array, and launch it as kernel[blocks, threads](...)"
            )
        else:
            problems.append(
                "no CUDA kernel found: decorate a top-level function with @cuda.jit and launch it"
            )
    if not mod.cuda:
        problems.append("import the device API with `from numba import cuda`")
    return list(dict.fromkeys(problems))  # unique, in order
