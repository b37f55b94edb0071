"""Grader for ``cpp-debug-project``: a small thread-pool project with a logic error, a leak and a race.

The candidate submits the files they changed, each after a ``// === file: NAME ===`` line; files they do
not submit keep the shipped version. The project is built twice in the box, with AddressSanitizer +
UndefinedBehaviorSanitizer (LeakSanitizer included) and with ThreadSanitizer, and both builds run the hidden
driver on fresh random batches. The grader recomputes every summary itself and reads the sanitizers'
reports; a run passes only if it finished (the driver's end marker carries a fresh nonce), its summaries
are right, and no sanitizer spoke.
"""

from __future__ import annotations

import dataclasses
import hmac
import re
import secrets
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from interviewer.checker import channel
from interviewer.checker.cpp_tasks._build import (
    BoxRun,
    Check,
    SandboxLike,
    compile_summary,
    compile_units,
    compile_units_full,
    describe_failure,
    link_and_run,
    tail,
    to_verdict,
)
from interviewer.checker.cpp_tasks._guard import exec_guard_source
from interviewer.checker.models import TaskInfo, Verdict
from interviewer.checker.sandbox import Limits, RunResult, Sandbox
from interviewer.errors import CheckerError, InputError

MARKER = re.compile(r"^[ \t]*//[ \t]*===[ \t]*file:[ \t]*(?P<name>[^\s=]+)[ \t]*===[ \t]*$", re.MULTILINE)
HARNESS = "main.cpp"
GUARD = "exec_guard.cpp"
# Sanitizer runtimes read these hooks and attributes; a submission must not switch its own checks off.
FORBIDDEN = re.compile(
    r"__(?:asan|lsan|tsan|ubsan|msan|sanitizer)\w*|no_sanitize\w*|_default_options|"
    r"no_sanitize_address|no_sanitize_thread|disable_sanitizer_instrumentation|no_address_safety_analysis|"
    r"ASAN_OPTIONS|LSAN_OPTIONS|TSAN_OPTIONS|UBSAN_OPTIONS"
)
COMMON = ("-O1", "-g", "-fno-omit-frame-pointer")
ASAN_FLAGS = (*COMMON, "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
TSAN_FLAGS = (*COMMON, "-fsanitize=thread")
# Environment options win over anything compiled in; exit codes tell the grader which tool fired.
# Every option the grader relies on is spelled out, suppression files included (none), so nothing compiled
# into the program decides them; *_default_suppressions hooks are refused by name (see sanitizer_hooks).
ASAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:exitcode=86:abort_on_error=0:allocator_may_return_null=1:"
    "suppressions=:print_suppressions=1",
    "LSAN_OPTIONS": "detect_leaks=1:exitcode=87:suppressions=:print_suppressions=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=88:suppressions=",
}
TSAN_ENV = {
    "TSAN_OPTIONS": "halt_on_error=1:exitcode=89:second_deadlock_stack=1:report_bugs=1:suppressions=:"
    "print_suppressions=1"
}
LONG_BATCHES = 16
LONG_BATCH = 60_000
RUN_LIMITS = Limits(cpu_seconds=10.0, wall_seconds=20.0, memory_mb=2048, address_space_limit=False)


@dataclass(frozen=True)
class Variant:
    """One sanitizer build of the project."""

    name: str
    flags: tuple[str, ...]
    env: Mapping[str, str]


VARIANTS = (
    Variant("AddressSanitizer + LeakSanitizer + UBSan", ASAN_FLAGS, ASAN_ENV),
    Variant("ThreadSanitizer", TSAN_FLAGS, TSAN_ENV),
)
_REPORT = re.compile(
    r"ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|ThreadSanitizer: "
)


def shipped_files(task_dir: Path) -> dict[str, str]:
    """The project as shipped (with its bugs), by file name."""
    return {
        p.name: p.read_text(encoding="utf-8") for p in sorted((task_dir / "project").iterdir()) if p.is_file()
    }


def starter_text(task_dir: Path) -> str:
    """All shipped files in the submission format: what the candidate starts editing."""
    return join_files(shipped_files(task_dir))


def join_files(files: Mapping[str, str]) -> str:
    """Files in the submission format, one ``// === file: NAME ===`` line before each."""
    return "".join(f"// === file: {name} ===\n{text.rstrip()}\n\n" for name, text in files.items())


def split_submission(code: str, allowed: set[str]) -> dict[str, str]:
    """The submitted files by name.

    Raises:
        InputError: no marker, text before the first marker, an unknown or repeated file name.
    """
    marks = list(MARKER.finditer(code))
    if not marks:
        raise InputError(
            "no file markers found: put a line `// === file: NAME ===` before each file you changed "
            f"(files: {', '.join(sorted(allowed))})"
        )
    if code[: marks[0].start()].strip():
        raise InputError("there is text before the first `// === file: NAME ===` line: move it into a file")
    out: dict[str, str] = {}
    for k, m in enumerate(marks):
        name = m.group("name")
        if name == HARNESS:
            raise InputError(f"{HARNESS} is the hidden test driver: submit only the project files")
        if name not in allowed:
            raise InputError(f"unknown file {name!r}: the project files are {', '.join(sorted(allowed))}")
        if name in out:
            raise InputError(f"{name} is submitted twice: keep one copy")
        end = marks[k + 1].start() if k + 1 < len(marks) else len(code)
        out[name] = code[m.end() : end].strip("\n") + "\n"
    return out


# Long batches are expanded by the driver (a few numbers on the input line instead of a megabyte of text):
# value i is ((a + i*b) mod GEN_MOD - GEN_MOD/2) / 8, a multiple of 1/8 in [-1000, 1000).
GEN_MOD = 16000


@dataclass(frozen=True)
class Generated:
    """A batch of ``n`` values the driver generates from ``a`` and ``b`` (see GEN_MOD)."""

    n: int
    a: int
    b: int

    def values(self) -> np.ndarray:
        i = np.arange(self.n, dtype=np.int64)
        return ((self.a + i * self.b) % GEN_MOD - GEN_MOD // 2) / 8.0


Batch = list[float] | Generated
Scenario = tuple[int, list[Batch]]


def _batches(rng: np.random.Generator) -> list[Scenario]:
    """Scenarios (workers, batches). Values are multiples of 1/8, so every sum is exact in any order."""

    def batch(lo: int, hi: int, n: int) -> list[float]:
        return [float(v) / 8 for v in rng.integers(lo * 8, hi * 8, size=n)]

    def generated(n: int) -> Generated:
        return Generated(n, int(rng.integers(0, GEN_MOD)), int(rng.integers(1, GEN_MOD)))

    many: list[Batch] = [batch(-1000, 1000, int(rng.integers(0, 40))) for _ in range(300)]
    many[int(rng.integers(0, 300))] = batch(1, 5, 3)  # at least one non-empty batch
    return [
        (1, [batch(1, 100, 20)]),  # one positive batch, one worker
        (2, [batch(-500, -1, 30) for _ in range(6)]),  # all negative: the maximum is negative
        (4, many),  # many small batches, some empty, over four workers
        (3, [*(batch(-50, 50, 1) for _ in range(40)), []]),
        # Long batches keep the workers busy for many scheduler time slices, so even on a loaded machine
        # the workers are preempted mid-batch and ThreadSanitizer sees their unsynchronised merges overlap.
        (4, [generated(LONG_BATCH) for _ in range(LONG_BATCHES)]),
    ]


def expected(batches: list[Batch]) -> tuple[int, float, float, float, float]:
    """count, sum, min, max, mean as the project should report them."""
    parts = [b.values() if isinstance(b, Generated) else np.asarray(b, dtype=np.float64) for b in batches]
    values = np.concatenate(parts) if parts else np.zeros(0)
    total = float(values.sum())  # exact: every partial sum is a multiple of 1/8 far below 2**50
    return len(values), total, float(values.min()), float(values.max()), total / len(values)


def _batch_line(b: Batch) -> str:
    if isinstance(b, Generated):
        return f"g {b.n} {b.a} {b.b}"
    return " ".join([str(len(b)), *(repr(v) for v in b)])


def _input(scenarios: list[Scenario]) -> str:
    lines = [f"{len(scenarios)}"]
    for workers, batches in scenarios:
        lines.append(f"{workers} {len(batches)}")
        lines += [_batch_line(b) for b in batches]
    return "\n".join(lines) + "\n"


def driver_lines(stdout: str, key: str) -> list[str]:
    """The lines the driver signed with the run's key (``<tag> <line>``); anything else is ignored: project
    code may print, but cannot print a summary or the end marker the grader believes."""
    out = []
    for raw in stdout.splitlines():
        tag, _, line = raw.partition(" ")
        if len(tag) == 64 and hmac.compare_digest(tag, channel.sign(key, line.encode())):
            out.append(line)
    return out


def _check_summaries(
    stdout: str, key: str, scenarios: list[Scenario], stopped_by: str | None = None
) -> str | None:
    """None when every summary is right and the run reached its end marker, else the first problem.

    ``stopped_by`` names the sanitizer that ended the run: missing summaries are then blamed on it, and
    the end marker is not required (the leak check runs just before it).
    """
    got: dict[int, list[str]] = {}
    finished = False
    for line in driver_lines(stdout, key):
        parts = line.split()
        if parts[:1] == ["summary"] and len(parts) == 7 and parts[1].isdigit():
            got.setdefault(int(parts[1]), parts[2:])
        elif parts == ["end", str(len(scenarios))]:
            finished = True
    names = ("count", "sum", "min", "max", "mean")
    for s, (workers, batches) in enumerate(scenarios):
        if s not in got:
            if stopped_by:
                return f"not all tests ran: {stopped_by} stopped the program during test {s + 1} (see its report)"
            return f"no summary for test {s + 1} ({len(batches)} batches, {workers} workers)"
        want = expected(batches)
        try:
            have = [float(x) for x in got[s]]
        except ValueError:
            return f"test {s + 1}: unreadable summary {' '.join(got[s])!r}"
        for name, w, h in zip(names, want, have, strict=True):
            if not np.isclose(h, w, rtol=1e-12, atol=0.0):
                return (
                    f"test {s + 1} ({len(batches)} batches, {workers} workers): {name} is {h:.17g}, "
                    f"expected {w:.17g}"
                )
    if not finished and not stopped_by:
        return "the driver did not reach its end (the program exited early or hung)"
    return None


_FRAME = re.compile(
    r"#\d+ (?:0x[0-9a-f]+ in )?(?P<fn>.+?) (?:/box/)?(?P<file>[\w.+-]+\.(?:cpp|hpp)):(?P<line>\d+)"
)


_SECTION = re.compile(
    r"^\s*(?P<what>(?:Previous )?(?:atomic )?(?:[Ww]rite|[Rr]ead) of size \d+|(?:Direct|Indirect) leak of \d+ byte\(s\) "
    r"in \d+ object\(s\) allocated from|freed by thread \w+|previously allocated by thread \w+|"
    r"(?:READ|WRITE) of size \d+)(?:.*?(?P<thread>by (?:main )?thread \w+))?"
)


def _sanitizer_report(stderr: str, project: set[str]) -> str | None:
    """The report's headline, its sections (which access, which allocation) and their project frames."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if not _REPORT.search(line):
            continue
        head = re.sub(r"^==\d+==", "", line).strip()
        head = re.sub(r" on address 0x[0-9a-f]+.*| \(pid=\d+\)", "", head)
        out: list[str] = [head]
        seen: set[str] = set()
        frames_here: set[str] = set()
        for ln in lines[i + 1 : i + 120]:
            if ln.startswith("SUMMARY:") or len(out) >= 12:
                break
            sec = _SECTION.match(ln)
            if sec:
                what = sec.group("what") + (f" {sec.group('thread')}" if sec.group("thread") else "")
                if what not in seen:
                    seen.add(what)
                    out.append(f"  {what}:")
                    frames_here = set()
                continue
            m = _FRAME.search(ln)
            if not m or m.group("file") not in project:
                continue
            fn = m.group("fn").split("(")[0] or "?"
            fn = "a lambda" if fn == "operator" else fn
            entry = f"    {m.group('file')}:{m.group('line')} in {fn}"
            if entry not in frames_here:
                frames_here.add(entry)
                out.append(entry)
        # Drop section headers that ended up with no project frame under them.
        kept = [
            ln
            for k, ln in enumerate(out)
            if not ln.endswith(":") or (k + 1 < len(out) and not out[k + 1].endswith(":"))
        ]
        return "\n".join(kept)
    return None


def _run_variant(
    sandbox: SandboxLike,
    variant: Variant,
    project: Mapping[str, str],
    shipped: Mapping[str, str],
    harness: str,
    inp: str,
    key: str,
    limits: Limits,
) -> tuple[BoxRun, list[str]]:
    """Build one sanitizer variant (cached objects where nothing changed), then run the driver.

    The hidden driver is compiled against the shipped headers in a box of its own, and the candidate's units
    in another box that holds no hidden file (so ``.incbin`` or ``#include`` cannot embed the driver); only
    objects meet, at the link. Returns the run and any sanitizer symbols the candidate's objects define or
    call (read with ``nm`` in the compile box).
    """
    headers = {n: t for n, t in project.items() if not n.endswith(".cpp")}
    shipped_headers = {n: t for n, t in shipped.items() if not n.endswith(".cpp")}
    driver, dlog = compile_units(sandbox, {HARNESS: harness}, shipped_headers, variant.flags)
    guard, glog = compile_units(sandbox, {GUARD: exec_guard_source(variant.env)}, {}, variant.flags)
    if not driver or not guard:
        raise CheckerError(f"the hidden driver did not compile in the sandbox: {(dlog + glog).strip()[:800]}")
    sources = {n: t for n, t in project.items() if n.endswith(".cpp")}
    units, log = compile_units_full(sandbox, sources, headers, variant.flags, preprocess=True)
    if not units:
        return BoxRun(built=False, build_log=log, result=RunResult(None, "", "", False, None, 0.0)), []
    hooks = sorted({h for u in units.values() for h in sanitizer_hooks(u.symbols)})
    hooks += sorted(
        {
            f"{m.group(0)} (after macro expansion)"
            for u in units.values()
            for m in FORBIDDEN.finditer(u.expanded)
        }
    )
    hooks += sorted({p for u in units.values() for p in early_code(u.sections, u.symbols)})
    if hooks:
        return BoxRun(built=True, build_log=log, result=RunResult(None, "", "", False, None, 0.0)), hooks
    # The guard first: its .preinit_array entry runs before anything of the candidate's (see _guard.py).
    objects = {**guard, **driver, **{n: u.obj for n, u in units.items()}}
    run = link_and_run(
        sandbox, objects, {"input.txt": inp, channel.KEY_FILE: key}, variant.flags, ["./prog", "input.txt"],
        env=variant.env, limits=limits, seccomp="sanitizer",
    )  # fmt: skip
    return run, []


# Sanitizer runtimes look these up in the program: a definition replaces the grader's options or adds
# suppressions (the environment overrides *_default_options, but *_default_suppressions are merged in).
# Any definition in a sanitizer namespace is refused, however it was spelled (asm labels, macros, aliases).
_HOOK_DEF = re.compile(r"^(?:__(?:asan|lsan|tsan|ubsan|msan|hwasan|sanitizer)_\w*|Annotate\w*|__ubsan\w*)$")
# Calls that switch a check off at run time (instrumentation's own __asan_report_* etc. stay allowed).
_HOOK_CALL = re.compile(
    r"^(?:__lsan_(?:disable|enable|ignore_object|register_root_region|unregister_root_region)|"
    r"__sanitizer_set_report_(?:path|fd)|__asan_set_error_report_callback|__sanitizer_set_death_callback|"
    r"__tsan_(?:acquire|release|ignore_\w+|mutex_\w+)|Annotate\w+|dlsym|dlvsym|dlopen)$"
)


# Sections whose code runs outside the driver's calls: before main (and before the driver has read and
# deleted its key) or after it has printed its end marker.
_EARLY_SECTIONS = re.compile(r"^\.(?:init_array|fini_array|preinit_array|ctors|dtors|init|fini)(?:\.\d+)?$")
_SECTION_ROW = re.compile(r"\]\s+(?P<name>\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+(?P<size>[0-9a-f]+)\s")
# A definition that replaces a C library, C++ runtime or standard-library function (the program's own
# definitions come first in symbol lookup) runs project code inside the driver's calls to it.
_RUNTIME_MANGLED = re.compile(r"^_Z(?:n[wa]|d[la]|NSt|NKSt|St|N9__gnu_cxx|NK9__gnu_cxx|N10__cxxabiv1)")


def early_code(sections: str, nm_output: str) -> list[str]:
    """Ways an object runs code the driver did not call: constructors/destructors (``readelf -SW``), and
    strong definitions of C-linkage functions or of the C++ runtime's and standard library's (``nm -P``)."""
    found = []
    for line in sections.splitlines():
        m = _SECTION_ROW.search(line)
        if m and _EARLY_SECTIONS.match(m.group("name")) and int(m.group("size"), 16) > 0:
            found.append(
                f"{m.group('name')} (code that runs before main or after it: a global object with a "
                "constructor or destructor, #include <iostream>, __attribute__((constructor)); the tests run "
                "only what the driver calls)"
            )
    for line in nm_output.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[1] not in ("T", "W"):
            continue
        name = parts[0].split("@")[0]
        if not name.startswith("_Z") or (parts[1] == "T" and _RUNTIME_MANGLED.match(name)):
            found.append(f"{name} (replaces a library or runtime function of the same name)")
    return found


def sanitizer_hooks(nm_output: str) -> list[str]:
    """Symbols in ``nm -P`` output that would silence or reconfigure a sanitizer: defined or called."""
    found = []
    for line in nm_output.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0].split("@")[0], parts[1]
        if kind == "i":
            # A GNU indirect function's resolver runs while the program is being loaded, before the guard
            # that refuses exec is in place (see _guard.py).
            found.append(f"{name} (an ifunc: its resolver runs before the checks are set up)")
        elif kind in ("U", "w", "v"):
            if _HOOK_CALL.match(name):
                found.append(f"{name} (called)")
        elif _HOOK_DEF.match(name):
            found.append(f"{name} (defined)")
    return found


def grade_checks(
    task_dir: Path, code: str, sandbox: SandboxLike, seed: int | None = None, limits: Limits = RUN_LIMITS
) -> list[Check]:
    """Every check of the task, in order."""
    shipped = shipped_files(task_dir)
    submitted = split_submission(code, set(shipped))
    project = shipped | submitted
    for name, text in submitted.items():
        m = FORBIDDEN.search(text)
        if m:
            raise InputError(
                f"{name} mentions {m.group(0)!r}: sanitizer hooks and attributes are not allowed, "
                "fix the bug instead of silencing the tool"
            )
    harness = (task_dir / HARNESS).read_text(encoding="utf-8")
    seed = secrets.randbits(62) if seed is None else seed
    rng = np.random.default_rng(seed)
    scenarios = _batches(rng)
    inp = _input(scenarios)
    keys = {v.name: channel.new_key() for v in VARIANTS}

    def one(v: Variant) -> tuple[BoxRun, list[str]]:
        return _run_variant(sandbox, v, project, shipped, harness, inp, keys[v.name], limits)

    # Both builds at once: they are independent, and the machine has two cores.
    with ThreadPoolExecutor(max_workers=len(VARIANTS)) as pool:
        built = list(pool.map(one, VARIANTS))
    runs = [r for r, _ in built]
    hooks = sorted({h for _, hs in built for h in hs})
    if runs[0].built and hooks:
        return [
            Check("compiles", True, "builds with AddressSanitizer and with ThreadSanitizer"),
            Check(
                "no sanitizer hooks",
                False,
                f"your code switches sanitizer checks off or runs code before they are set up: "
                f"{', '.join(hooks)}. These silence or reconfigure the tools (suppressions, options, "
                "attributes, ignored objects); fix the bugs instead. Nothing was run.",
            ),
        ]
    if not runs[0].built:
        return [Check("compiles", False, "compile error:\n" + compile_summary(runs[0].build_log))]
    checks = [Check("compiles", True, "builds with AddressSanitizer and with ThreadSanitizer")]
    asan, tsan = runs
    names = set(project)
    report = _sanitizer_report(asan.result.stderr, names)
    stopped = "AddressSanitizer" if report else None
    problem = _check_summaries(asan.result.stdout, keys[VARIANTS[0].name], scenarios, stopped)
    if problem and report is None and asan.crashed:
        problem = f"{problem}: {describe_failure(asan)}\n{tail(asan.result.stderr, 8)}"
    checks.append(
        Check("results", problem is None, problem or "every summary matches (count, sum, min, max, mean)")
    )
    checks.append(_sanitizer_check("AddressSanitizer + LeakSanitizer + UBSan", asan, report))
    if not tsan.built:
        checks.append(
            Check(
                "ThreadSanitizer",
                False,
                "the ThreadSanitizer build failed:\n" + compile_summary(tsan.build_log),
            )
        )
    else:
        tsan_report = _sanitizer_report(tsan.result.stderr, names)
        checks.append(_sanitizer_check("ThreadSanitizer", tsan, tsan_report))
        tsan_problem = _check_summaries(
            tsan.result.stdout, keys[VARIANTS[1].name], scenarios, "ThreadSanitizer" if tsan_report else None
        )
        if tsan_problem and problem is None and tsan_report is None:
            checks.append(Check("results under ThreadSanitizer", False, tsan_problem))
    return checks


def _sanitizer_check(name: str, run: BoxRun, report: str | None) -> Check:
    if report is not None:
        return Check(name, False, f"{name} reported a problem:\n{report}")
    r = run.result
    if r.timed_out or r.killed_reason or r.returncode != 0:
        return Check(
            name, False, f"{describe_failure(run, 'the sanitized build')}\n{tail(r.stderr, 8)}".strip()
        )
    return Check(name, True, "clean run: no report")


def prepare(task: TaskInfo, sandbox: Sandbox) -> None:
    """Compile the driver and the shipped files for both sanitizer builds ahead of the first check."""
    project = shipped_files(task.path)
    driver = {HARNESS: (task.path / HARNESS).read_text(encoding="utf-8")}
    sources = {n: t for n, t in project.items() if n.endswith(".cpp")}
    headers = {n: t for n, t in project.items() if not n.endswith(".cpp")}

    def build(v: Variant) -> None:
        compile_units(sandbox, driver, headers, v.flags)
        compile_units(sandbox, {GUARD: exec_guard_source(v.env)}, {}, v.flags)
        compile_units_full(sandbox, sources, headers, v.flags, preprocess=True)

    with ThreadPoolExecutor(max_workers=len(VARIANTS)) as pool:
        list(pool.map(build, VARIANTS))


def grade(task: TaskInfo, code: str, sandbox: Sandbox) -> Verdict:
    """The runner entry point (see interviewer/checker/README.md)."""
    start = time.monotonic()
    # Sanitizers map terabytes of shadow memory: the memory cgroup, not RLIMIT_AS, caps these runs.
    limits = dataclasses.replace(task.limits.to_limits(), address_space_limit=False)
    checks = grade_checks(task.path, code, sandbox, limits=limits)
    return to_verdict(task.id, checks, time.monotonic() - start)
