"""Compile and run C++ inside the sandbox: the shared plumbing of the C++ graders.

Everything that touches candidate code (the compiler included: an ``#include`` of a hidden path would leak
it through the error message) runs in the box. Harness sources and unchanged project files are compiled in a
box where only the compiler runs, once per process, and their object files reused by later checks.
"""

from __future__ import annotations

import hashlib
import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from interviewer.checker.models import TestResult, Verdict
from interviewer.checker.sandbox import Limits, RunResult
from interviewer.errors import CheckerError, InputError

CXX = "g++"
BASE_FLAGS = ("-std=c++17", "-pipe")
MAX_SOURCE_BYTES = 200_000
BUILD_OK = "built.ok"
BUILD_LOG = "build.log"
# Compiling is trusted work but still runs in the box: give it room, it is not what we are timing.
COMPILE_LIMITS = Limits(cpu_seconds=30.0, wall_seconds=60.0, memory_mb=1536)

SeccompKind = Literal["strict", "sanitizer"]


class SandboxLike(Protocol):
    """The part of :class:`interviewer.checker.sandbox.Sandbox` the C++ graders use."""

    def run(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits = ...,
        collect: Sequence[str] = (),
        seccomp: SeccompKind = "strict",
    ) -> RunResult: ...


@dataclass(frozen=True)
class BoxRun:
    """One build-then-run in the box: whether the build succeeded, its log, and the run's data."""

    built: bool
    build_log: str
    result: RunResult
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def crashed(self) -> bool:
        """The program did not exit normally with 0."""
        r = self.result
        return r.timed_out or r.killed_reason is not None or r.returncode != 0


def check_source(code: str, what: str = "your code") -> str:
    """Reject empty or oversized submissions before they reach the box."""
    if not code.strip():
        raise InputError(f"{what} is empty: paste your C++ solution and run the tests again")
    if len(code.encode()) > MAX_SOURCE_BYTES:
        raise InputError(f"{what} is over {MAX_SOURCE_BYTES // 1000} kB: submit only the solution")
    return code


_obj_lock = threading.Lock()


def harness_object(sandbox: SandboxLike, name: str, source: str, flags: Sequence[str]) -> bytes:
    """A trusted harness compiled to an object file in the box, cached per process by source and flags."""
    objects, log = compile_units(sandbox, {f"{name}.cpp": source}, {}, flags)
    if not objects:
        raise CheckerError(
            f"the hidden test harness '{name}' did not compile in the sandbox: {log.strip()[:800]}; "
            "check that g++ 12 is installed (`apt-get install -y g++`)"
        )
    return objects[f"{name}.cpp"]


def build_and_run(
    sandbox: SandboxLike,
    files: Mapping[str, bytes | str],
    compile_args: Sequence[str],
    run_argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
    collect: Sequence[str] = (),
    seccomp: SeccompKind = "strict",
    output: str = "prog",
) -> BoxRun:
    """Compile with ``g++ <compile_args> -o <output>`` and, if that worked, run ``run_argv``, in one box.

    The build writes a marker file only on success, so a compile error is told apart from a program
    that fails at run time without trusting anything the program prints.
    """
    build = shlex.join([CXX, *BASE_FLAGS, *compile_args, "-o", output])
    env_prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    run = f"{env_prefix} exec {shlex.join(run_argv)}".strip()
    script = f"if {build} >{BUILD_LOG} 2>&1; then : >{BUILD_OK}; else exit 0; fi\n{run}\n"
    res = sandbox.run(
        files, ["/bin/sh", "-c", script], limits, collect=[BUILD_OK, BUILD_LOG, *collect], seccomp=seccomp
    )
    built = BUILD_OK in res.files
    log = res.files.get(BUILD_LOG, b"").decode("utf-8", "replace")
    if not built and res.timed_out:
        log += f"\n(the build was stopped: {res.killed_reason})"
    return BoxRun(built=built, build_log=log, result=res, files=res.files)


def compile_summary(log: str, max_lines: int = 25) -> str:
    """The first errors of a g++ log, trimmed so the candidate sees what to fix first."""
    lines = [ln for ln in log.splitlines() if ln.strip()]
    errors = [i for i, ln in enumerate(lines) if " error: " in ln or "undefined reference" in ln]
    start = max(0, errors[0] - 2) if errors else 0
    shown = lines[start : start + max_lines]
    more = len(lines) - start - len(shown)
    text = "\n".join(shown)
    if more > 0:
        text += f"\n... ({more} more lines)"
    return text or "(the compiler printed nothing)"


def describe_failure(run: BoxRun, what: str = "your program") -> str:
    """One sentence on how a run ended badly: time limit, signal, sanitizer, or exit status."""
    r = run.result
    if r.timed_out:
        return f"{what} did not finish: stopped at the {r.killed_reason} (an infinite loop or a deadlock?)"
    if r.killed_reason:
        return f"{what} was stopped: {r.killed_reason}"
    rc = r.returncode
    if rc is None:
        return f"{what} did not report an exit status"
    sig = -rc if rc < 0 else rc - 128 if rc > 128 else None
    if sig is not None:
        names = {6: "SIGABRT (abort, e.g. a failed assert or std::terminate)", 8: "SIGFPE (division by zero?)",
                 11: "SIGSEGV (invalid memory access)", 7: "SIGBUS (misaligned or out-of-range access)"}  # fmt: skip
        return f"{what} crashed with {names.get(sig, f'signal {sig}')}"
    return f"{what} exited with status {rc}"


def tail(text: str, max_lines: int = 20, max_chars: int = 2000) -> str:
    """The last lines of a stream, for a message."""
    lines = text.strip().splitlines()[-max_lines:]
    return "\n".join(lines)[-max_chars:]


@dataclass(frozen=True)
class Check:
    """One named test and its outcome; converted to the checker's public verdict type in one place."""

    name: str
    passed: bool
    message: str
    warning: str | None = None  # shown on the verdict even when the test passed


@dataclass(frozen=True)
class Unit:
    """One compiled translation unit: its object file and its symbol table (``nm -P``, read in the box);
    with ``preprocess``, also the unit's own lines after macro expansion (system headers left out)."""

    obj: bytes
    symbols: str
    expanded: str = ""
    sections: str = ""  # with ``preprocess``: ``readelf -SW`` of the unit compiled without instrumentation


def own_lines(preprocessed: str) -> str:
    """The lines of ``g++ -E`` output that come from the box's own files, not from system headers or the
    compiler: what the submission's text turns into once every macro is expanded and pasted."""
    out: list[str] = []
    keep = True
    for line in preprocessed.splitlines():
        if line.startswith("# ") and '"' in line:
            name = line.split('"', 2)[1]
            keep = not name.startswith(("/", "<"))
            continue
        if keep and line.strip():
            out.append(line)
    return "\n".join(out)


_unit_cache: dict[str, Unit] = {}
_UNIT_CACHE_MAX = 128


def compile_units(
    sandbox: SandboxLike,
    sources: Mapping[str, str],
    headers: Mapping[str, str],
    flags: Sequence[str],
    jobs: int = 2,
) -> tuple[dict[str, bytes], str]:
    """Compile each source to an object (see :func:`compile_units_full`); ``(objects, log)``."""
    units, log = compile_units_full(sandbox, sources, headers, flags, jobs)
    return {n: u.obj for n, u in units.items()}, log


def compile_units_full(
    sandbox: SandboxLike,
    sources: Mapping[str, str],
    headers: Mapping[str, str],
    flags: Sequence[str],
    jobs: int = 2,
    *,
    preprocess: bool = False,
) -> tuple[dict[str, Unit], str]:
    """Compile each source to an object in a box of its own (``jobs`` at a time); ``(units, log)``.

    ``preprocess``: also run ``g++ -E`` and keep each unit's own lines after macro expansion
    (:attr:`Unit.expanded`), for checks a pasted or macro-built spelling must not slip past.

    The box holds exactly ``sources`` and ``headers``: never put a hidden file (a driver) in the same call
    as candidate code, since ``asm(".incbin ...")`` or ``#include`` would embed it. Nothing but the
    compiler and ``nm`` runs there, so the objects it returns are exactly what the sources compile to, and
    are cached by sources, headers and flags: a resubmission recompiles only what changed. An empty
    result means the build failed; ``log`` has the errors in source order.
    """
    header_key = "\0".join(f"{k}\0{v}" for k, v in sorted(headers.items()))
    keys = {
        name: hashlib.sha256(
            "\0".join([name, text, header_key, *flags, "E" if preprocess else ""]).encode()
        ).hexdigest()
        for name, text in sources.items()
    }
    with _obj_lock:
        units = {n: _unit_cache[keys[n]] for n in sources if keys[n] in _unit_cache}
    todo = [n for n in sources if n not in units]
    if not todo:
        return units, ""
    lines: list[str] = []
    for k, src in enumerate(todo):
        cmd = shlex.join([CXX, *BASE_FLAGS, *flags, "-c", "-o", f"{src}.o", src])
        q = shlex.quote(src)
        pre = ""
        if preprocess:
            pre = (
                " && " + shlex.join([CXX, *BASE_FLAGS, *flags, "-E", "-o", f"{src}.ii", src]) + f" 2>>{q}.log"
                # The sections of the same preprocessed text compiled without instrumentation: the
                # sanitizers add constructors of their own to every instrumented object.
                f" && {shlex.join([CXX, *BASE_FLAGS, *flags, '-fno-sanitize=all', '-c', '-o', f'{src}.plain.o', f'{src}.ii'])}"
                f" 2>>{q}.log && readelf -SW {q}.plain.o >{q}.sec 2>>{q}.log"
            )
        lines.append(f"({cmd} >{q}.log 2>&1 && nm -P {q}.o >{q}.nm 2>>{q}.log{pre}) &")
        if (k + 1) % jobs == 0:
            lines.append("wait")
    lines.append("wait")
    files: dict[str, bytes | str] = {**headers, **{n: sources[n] for n in todo}}
    exts = ("o", "log", "nm", "ii", "sec") if preprocess else ("o", "log", "nm")
    collect = [f"{n}.{ext}" for n in todo for ext in exts]
    res = sandbox.run(files, ["/bin/sh", "-c", "\n".join(lines)], COMPILE_LIMITS, collect=collect)
    log = "".join(res.files.get(f"{n}.log", b"").decode("utf-8", "replace") for n in todo)
    if res.timed_out:
        log += f"\n(the build was stopped: {res.killed_reason})"
    if any(any(f"{n}.{e}" not in res.files for e in exts if e != "log") for n in todo):
        return {}, log or f"the compiler failed without a message (exit {res.returncode})"
    with _obj_lock:
        for n in todo:
            expanded = own_lines(res.files[f"{n}.ii"].decode("utf-8", "replace")) if preprocess else ""
            sections = res.files[f"{n}.sec"].decode("utf-8", "replace") if preprocess else ""
            unit = Unit(
                res.files[f"{n}.o"], res.files[f"{n}.nm"].decode("utf-8", "replace"), expanded, sections
            )
            units[n] = _unit_cache[keys[n]] = unit
        while len(_unit_cache) > _UNIT_CACHE_MAX:
            _unit_cache.pop(next(iter(_unit_cache)))
    return units, log


def link_and_run(
    sandbox: SandboxLike,
    objects: Mapping[str, bytes],
    files: Mapping[str, bytes | str],
    flags: Sequence[str],
    run_argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
    collect: Sequence[str] = (),
    seccomp: SeccompKind = "strict",
) -> BoxRun:
    """Link ``objects`` (name -> bytes) into ``prog`` and run ``run_argv``, in one box.

    No source is compiled here, and the objects are deleted before the program starts.
    """
    names = [f"{n}.o" if not n.endswith(".o") else n for n in objects]
    all_files: dict[str, bytes | str] = {**files, **dict(zip(names, objects.values(), strict=True))}
    link = shlex.join([CXX, *flags, "-o", "prog", *names])
    env_prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    run = f"{env_prefix} exec {shlex.join(run_argv)}".strip()
    script = (
        f"if {link} >{BUILD_LOG} 2>&1; then : >{BUILD_OK}; else exit 0; fi\n"
        f"rm -f -- {shlex.join(names)}\n{run}\n"
    )
    res = sandbox.run(
        all_files, ["/bin/sh", "-c", script], limits, collect=[BUILD_OK, BUILD_LOG, *collect], seccomp=seccomp
    )
    built = BUILD_OK in res.files
    log = res.files.get(BUILD_LOG, b"").decode("utf-8", "replace")
    return BoxRun(built=built, build_log=log, result=res, files=res.files)


def build_separately_and_run(
    sandbox: SandboxLike,
    candidate: Mapping[str, str],
    hidden: Mapping[str, bytes],
    files: Mapping[str, bytes | str],
    flags: Sequence[str],
    run_argv: Sequence[str],
    *,
    headers: Mapping[str, str] | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
    collect: Sequence[str] = (),
) -> BoxRun:
    """Compile the candidate's sources in a box holding nothing hidden, then link them with the trusted
    objects (``hidden``: name -> object bytes) and run, in a second box."""
    objects, log = compile_units(sandbox, candidate, headers or {}, flags)
    if not objects:
        return BoxRun(built=False, build_log=log, result=RunResult(None, "", "", False, None, 0.0))
    return link_and_run(
        sandbox, {**hidden, **objects}, files, flags, run_argv, limits=limits, collect=collect
    )


def build_plugin_and_run(
    sandbox: SandboxLike,
    candidate: Mapping[str, str],
    host: Mapping[str, bytes],
    files: Mapping[str, bytes | str],
    flags: Sequence[str],
    plugin_flags: Sequence[str],
    run_argv: Sequence[str],
    *,
    plugin: str = "solution.so",
    limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
    collect: Sequence[str] = (),
) -> BoxRun:
    """Compile the candidate's sources alone (``plugin_flags``, position-independent), then, in a second box,
    link the trusted ``host`` objects into ``prog`` and the candidate's into the shared library ``plugin``,
    and run. The host decides when (and in which process) the plugin is loaded: candidate code never runs
    in a process that has not loaded it."""
    objects, log = compile_units(sandbox, candidate, {}, plugin_flags)
    if not objects:
        return BoxRun(built=False, build_log=log, result=RunResult(None, "", "", False, None, 0.0))
    host_names = [n if n.endswith(".o") else f"{n}.o" for n in host]
    cand_names = [n if n.endswith(".o") else f"{n}.o" for n in objects]
    all_files: dict[str, bytes | str] = {
        **files,
        **dict(zip(host_names, host.values(), strict=True)),
        **dict(zip(cand_names, objects.values(), strict=True)),
    }
    link_host = shlex.join([CXX, *flags, "-o", "prog", *host_names, "-ldl"])
    link_plugin = shlex.join([CXX, *plugin_flags, "-shared", "-o", plugin, *cand_names])
    script = (
        f"if {link_host} >{BUILD_LOG} 2>&1 && {link_plugin} >>{BUILD_LOG} 2>&1; then : >{BUILD_OK}; "
        f"else exit 0; fi\nrm -f -- {shlex.join(host_names + cand_names)}\nexec {shlex.join(run_argv)}\n"
    )
    res = sandbox.run(all_files, ["/bin/sh", "-c", script], limits, collect=[BUILD_OK, BUILD_LOG, *collect])
    built = BUILD_OK in res.files
    log = res.files.get(BUILD_LOG, b"").decode("utf-8", "replace")
    return BoxRun(built=built, build_log=log, result=res, files=res.files)


def to_verdict(task_id: str, checks: Sequence[Check], seconds: float) -> Verdict:
    """The public verdict: a failed build is an error (the code could not run), the rest are tests."""
    if checks and checks[0].name == "compiles" and not checks[0].passed:
        return Verdict(task_id=task_id, error=checks[0].message, seconds=seconds)
    tests = [
        TestResult(name=c.name, passed=c.passed, message=c.message) for c in checks if c.name != "compiles"
    ]
    warnings = [f"{c.name}: {c.warning}" for c in checks if c.warning]
    return Verdict(task_id=task_id, tests=tests, seconds=seconds, warnings=warnings)
