"""Run untrusted candidate code in layered isolation and hand back only data.

Layers (all together: no single one stopped every attack tried; interviewer/checker/README.md, "The sandbox"):
a separate process in its own session, killed as a group by a wall-clock timer on the grader's side;
an unprivileged uid (``setpriv``) when the grader runs as root; ``bwrap`` with every namespace unshared
(no network), a read-only view of the system dirs and the Python installation, and a private ``/box``;
rlimits (CPU, file size, open files, processes, core, address space as a backstop only); a memory and pids
cgroup where one can be created; a seccomp filter (``pyseccomp``) without network sockets or ptrace; and caps
on stdout/stderr and on the files read back. The grader, outside, decides what the data means.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import importlib.util
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from interviewer.errors import CheckerError, SandboxUnavailable

BOX = "/box"
# Each box runs as its own unused uid from this range: RLIMIT_NPROC counts per uid, so a fork bomb in one
# box must not exhaust the process budget of every other box (as a shared "nobody" would).
_UID_BASE, _UID_SPAN = 200_000, 60_000


def _fresh_uid() -> int:
    """A uid no account on this machine uses (checked against the passwd database)."""
    import pwd
    import secrets

    for _ in range(100):
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise SandboxUnavailable("no free uid found for the sandbox in 200000-259999; free some of that range")


_MiB = 1024 * 1024
# Enough for torch's import (it maps far more than it touches) and a few GiB of slack; the cgroup is the
# real memory limit, this only stops a runaway allocation where no cgroup can be created.
_AS_FLOOR_MB = 6144

# Syscalls the strict filter refuses with EPERM: debugging/inspecting other processes, namespace and mount
# games, kernel keyrings, BPF, perf, io_uring (it bypasses seccomp), module loading, and the like.
_DENY_STRICT = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "open_by_handle_at",
    "name_to_handle_at",
    "syslog",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "personality",
)
_AF_UNIX = 1


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run."""

    cpu_seconds: float = 10.0
    wall_seconds: float = 20.0
    memory_mb: int = 1024
    processes: int = 64
    file_size_mb: int = 16
    output_bytes: int = 256_000
    # AddressSanitizer and ThreadSanitizer reserve terabytes of shadow memory and abort under any RLIMIT_AS;
    # sanitizer runs set this False and rely on the memory cgroup (and the CPU/wall limits) instead.
    address_space_limit: bool = True


@dataclass(frozen=True)
class RunResult:
    """What came back from the box: data only, never a verdict."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    killed_reason: str | None  # e.g. "wall-clock limit 20 s", "CPU limit", "memory limit", "output limit"
    wall_seconds: float
    files: dict[str, bytes] = field(default_factory=dict)  # the `collect` files (size-capped, regular only)


def _safe_relpath(name: str) -> PurePosixPath:
    """A relative path inside the box, or CheckerError."""
    p = PurePosixPath(name)
    if not name or p.is_absolute() or any(part in ("..", "") for part in p.parts) or "\0" in name:
        raise CheckerError(f"sandbox file name {name!r} must be a relative path inside the box")
    return p


@functools.lru_cache(maxsize=1)
def _seccomp_available() -> str | None:
    """None when pyseccomp and libseccomp load, else the reason."""
    try:
        import pyseccomp

        pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    except Exception as e:  # ImportError, OSError from a missing libseccomp.so
        return f"pyseccomp/libseccomp is unusable ({e}); install libseccomp2 and `pip install pyseccomp`"
    return None


def _seccomp_fd(kind: Literal["strict", "sanitizer"]) -> int:
    """A memfd holding the compiled BPF filter, ready to hand to ``bwrap --seccomp``."""
    import pyseccomp as sc

    f = sc.SyscallFilter(sc.ALLOW)
    # Only local sockets: no IP, raw, packet or netlink sockets even if a network namespace leaked.
    f.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket", sc.Arg(0, sc.NE, _AF_UNIX))
    if kind == "strict":
        for name in _DENY_STRICT:
            with contextlib.suppress(Exception):  # a syscall this kernel/arch does not know
                f.add_rule(sc.ERRNO(errno.EPERM), name)
    fd = os.memfd_create("interviewer-seccomp", 0)
    with os.fdopen(os.dup(fd), "wb") as fh:
        f.export_bpf(fh)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _own_cgroup_dirs() -> dict[str, Path]:
    """Writable cgroup dirs (ours) under which a child with memory/pids limits can be made: v1 or v2."""
    out: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    root = Path("/sys/fs/cgroup")
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if hid == "0" and controllers == "":
            base = root / rel if (root / "cgroup.controllers").exists() else root / "unified" / rel
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "memory" in enabled or "pids" in enabled:
                out.setdefault("v2", base)
            continue
        for c in controllers.split(","):
            if c in ("memory", "pids") and (root / c / rel).is_dir():
                out[c] = root / c / rel
    if "memory" in out or "pids" in out:
        out.pop("v2", None)  # v1 controllers are in use; the unified tree has none of them
    return {k: v for k, v in out.items() if os.access(v, os.W_OK)}


class _Cgroup:
    """A per-run child cgroup with memory and pids limits; removed after the run."""

    def __init__(self, limits: Limits) -> None:
        self.dirs: list[Path] = []
        self.memory_dir: Path | None = None
        name = f"interviewer-sbx-{uuid.uuid4().hex[:12]}"
        for kind, parent in _own_cgroup_dirs().items():
            d = parent / name
            try:
                d.mkdir()
            except OSError:
                continue
            self.dirs.append(d)
            mem = str(limits.memory_mb * _MiB)
            settings = {
                "memory": [("memory.limit_in_bytes", mem), ("memory.memsw.limit_in_bytes", mem)],
                "pids": [("pids.max", str(limits.processes))],
                "v2": [("memory.max", mem), ("memory.swap.max", "0"), ("pids.max", str(limits.processes))],
            }[kind]
            for fname, value in settings:
                with contextlib.suppress(OSError):
                    (d / fname).write_text(value)
            if kind in ("memory", "v2"):
                self.memory_dir = d

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def oom_killed(self) -> bool:
        """Did the memory limit kill something in this run?"""
        d = self.memory_dir
        if d is None:
            return False
        for fname, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill")):
            with contextlib.suppress(OSError, ValueError):
                for line in (d / fname).read_text().splitlines():
                    k, _, v = line.partition(" ")
                    if k == key and int(v) > 0:
                        return True
        with contextlib.suppress(OSError, ValueError):
            return int((d / "memory.failcnt").read_text()) > 0
        return False

    def kill_all_and_remove(self) -> None:
        """SIGKILL whatever is left in the group (orphans), then remove the group."""
        for _ in range(50):
            pids: set[int] = set()
            for pf in self.procs_files():
                with contextlib.suppress(OSError, ValueError):
                    pids |= {int(x) for x in Path(pf).read_text().split()}
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last killed task is being reaped
                    time.sleep(0.02)
        self.dirs = []


def _ro_bind_sources() -> list[str]:
    """System dirs and the Python installation, bound read-only at the same paths inside."""
    paths = ["/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"]
    paths += ["/etc/localtime", "/etc/os-release"]
    for p in (sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(p)
        if not real.startswith("/usr/"):
            paths.append(real)
            if real != p:
                paths.append(p)
    seen: list[str] = []
    for p in paths:
        if os.path.exists(p) and p not in seen:
            seen.append(p)
    return seen


def _masked_paths(sources: Sequence[str]) -> list[str]:
    """Installed copies of this package under a bound dir (hidden graders, reference solutions): hidden."""
    found: set[str] = set()
    spec = importlib.util.find_spec("interviewer")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found.add(os.path.realpath(loc))
        found.add(os.path.abspath(loc))
    # An editable install leaves packaged content (rubrics with reference solutions) in site-packages too.
    for entry in sys.path:
        for name in ("interviewer", "ui"):
            cand = os.path.join(entry or ".", name)
            if os.path.isdir(cand):
                found.add(os.path.abspath(cand))
                found.add(os.path.realpath(cand))
    out = []
    for p in sorted(found):
        if os.path.isdir(p) and any(p == s or p.startswith(s.rstrip("/") + "/") for s in sources):
            out.append(p)
    return out


class _StrictBox:
    """One strict box: staged and started, then released (remaining files + ``.go``) and supervised to the end."""

    def __init__(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits,
        seccomp: Literal["strict", "sanitizer"],
        cpu_allowance: float,
    ) -> None:
        self.limits = limits
        self.initial = {k: (v.encode() if isinstance(v, str) else v) for k, v in files.items()}
        self._stack = contextlib.ExitStack()
        self._closed = False
        self._close_lock = threading.Lock()
        self.as_root = os.geteuid() == 0
        self.start = time.monotonic()
        try:
            self.uid = _fresh_uid() if self.as_root else os.geteuid()
            self.box, binds, self.capped = self._stack.enter_context(_staging(limits, self.as_root, self.uid))
            self.owner = self.uid if self.as_root else None
            _write_files(self.box, files, self.owner)
            seccomp_fd = _seccomp_fd(seccomp)
            os.set_inheritable(seccomp_fd, True)
            cmd = _bwrap_cmd(binds, self.box, str(seccomp_fd), argv, self.uid if self.as_root else None)
            self.cgroup = _Cgroup(limits)
            self._stack.callback(self.cgroup.kill_all_and_remove)
            try:
                # bwrap itself, the box's pid 1, starts with a minimal environment: `--clearenv` only clears
                # the child, and /proc/1/environ inside the box would show the grader's (API keys included).
                self.proc = _start(
                    cmd, limits, [seccomp_fd], self.cgroup, None, _launcher_env(), cpu_allowance
                )
            finally:
                os.close(seccomp_fd)  # the child holds its own copy
            self._stack.callback(self._kill)
        except BaseException:
            self._stack.close()
            raise

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()

    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def usable_for(self, files: Mapping[str, bytes | str]) -> bool:
        """Still running, and started with the same content for every file it was given."""
        if not self.alive():
            return False
        for k, v in self.initial.items():
            got = files.get(k)
            if got is None or (got.encode() if isinstance(got, str) else got) != v:
                return False
        return True

    def release(self, files: Mapping[str, bytes | str]) -> None:
        """Write the remaining files, then ``.go``; the wall clock starts now."""
        _write_files(self.box, {k: v for k, v in files.items() if k not in self.initial}, self.owner)
        _write_files(self.box, {".go": b""}, self.owner)
        self.start = time.monotonic()

    def finish(self, collect: Sequence[str]) -> RunResult:
        try:
            watch = None if self.capped else self.box  # a size-capped tmpfs needs no watching
            result = _wait(self.proc, self.limits, self.cgroup, self.start, disk_watch=watch)
            files_out = _collect(self.box, collect, self.limits)
        finally:
            self.close()
        return _with_files(result, files_out)

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._stack.close()
        _LIVE_BOXES.discard(self)


_LIVE_BOXES: set[_StrictBox] = set()


@atexit.register
def _close_live_boxes() -> None:
    """Pre-started boxes hold mounts and processes: release them when the interpreter exits."""
    for box in list(_LIVE_BOXES):
        with contextlib.suppress(Exception):
            box.close()


def _bwrap_cmd(
    binds: list[tuple[str, str]], box: str, seccomp_fd: str, argv: Sequence[str], drop_to: int | None
) -> list[str]:
    """The bwrap command line for one box, behind ``setpriv`` to uid ``drop_to`` when we are root."""
    cmd = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    cmd += ["--disable-userns"] if _bwrap_has("--disable-userns") else []
    # /tmp first: a checkout or venv that lives under /tmp (CI clones often do) is bound on top of it below,
    # instead of being hidden by it.
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", str(64 * _MiB), "--tmpfs", "/tmp"]
    for src, dest in binds:
        cmd += ["--ro-bind", src, dest]
    for hidden in _masked_paths([dest for _, dest in binds]):
        cmd += ["--tmpfs", hidden, "--remount-ro", hidden]
    for link, target in (
        ("/bin", "usr/bin"),
        ("/sbin", "usr/sbin"),
        ("/lib", "usr/lib"),
        ("/lib64", "usr/lib64"),
    ):
        if os.path.islink(link):
            cmd += ["--symlink", target, link]
    cmd += ["--bind", box, BOX, "--chdir", BOX, "--hostname", "box"]
    cmd += ["--clearenv", *_env_args()]
    cmd += ["--seccomp", seccomp_fd, "--", *argv]
    if drop_to is not None:
        drop = [
            f"--reuid={drop_to}",
            f"--regid={drop_to}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]
        cmd = ["setpriv", *drop, "--", *cmd]
    return cmd


class Sandbox:
    """Runs argv over a set of files in a fresh private box; strict isolation or an explicit weak mode."""

    def __init__(self, mode: Literal["strict", "weak"] = "strict") -> None:
        self.mode: Literal["strict", "weak"] = mode
        self._status: tuple[bool, str] | None = None
        self._lock = threading.Lock()  # guards the warm boxes
        self._status_lock = threading.Lock()
        self._warm: dict[tuple[object, ...], _StrictBox] = {}

    # ----------------------------------------------------------------------------------------- status
    def status(self) -> tuple[bool, str]:
        """Can strict isolation be set up here? ``(ok, reason)``; probes once and caches."""
        with self._status_lock:
            if self._status is None:
                self._status = self._probe()
            return self._status

    def _probe(self) -> tuple[bool, str]:
        if not sys.platform.startswith("linux"):
            return False, "strict isolation needs Linux (bubblewrap, seccomp, rlimits)"
        if shutil.which("bwrap") is None:
            return False, "bubblewrap is not installed: `apt-get install -y bubblewrap`"
        if os.geteuid() == 0 and shutil.which("setpriv") is None:
            return (
                False,
                "setpriv is missing (Debian package util-linux); it drops root to an unprivileged uid",
            )
        reason = _seccomp_available()
        if reason:
            return False, reason
        try:
            res = self._run_strict({}, ["/usr/bin/true"], Limits(wall_seconds=10), (), "strict")
        except SandboxUnavailable as e:
            return False, str(e)
        if res.returncode != 0:
            detail = res.stderr.strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            return False, (
                f"bubblewrap cannot create its namespaces here ({detail[0]}); enable unprivileged user "
                "namespaces (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces>0) or set "
                "INTERVIEWER_SANDBOX=weak to run code with weaker isolation at your own risk"
            )
        how = "root->fresh unprivileged uid per box, " if os.geteuid() == 0 else ""
        cg = "cgroup memory/pids" if _own_cgroup_dirs() else "no cgroup (rlimits only)"
        return True, f"strict: {how}bwrap (all namespaces), seccomp, rlimits, {cg}"

    # -------------------------------------------------------------------------------------------- run
    def run(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits = Limits(),
        collect: Sequence[str] = (),
        seccomp: Literal["strict", "sanitizer"] = "strict",
    ) -> RunResult:
        """Write ``files`` into a fresh box, run ``argv`` there (cwd ``/box``), return output and ``collect``."""
        if not argv:
            raise CheckerError("sandbox argv is empty")
        for name in [*files, *collect]:
            _safe_relpath(name)
        ok, reason = self.status()
        if ok:
            return self._run_strict(files, argv, limits, collect, seccomp)
        if self.mode == "weak":
            return self._run_weak(files, argv, limits, collect)
        raise SandboxUnavailable(
            f"refusing to run candidate code: {reason}. Fix that, or opt into a weaker local mode with "
            "INTERVIEWER_SANDBOX=weak (the code then runs as you, without namespaces)"
        )

    # ---------------------------------------------------------------------------------------- strict
    def _run_strict(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits,
        collect: Sequence[str],
        seccomp: Literal["strict", "sanitizer"],
    ) -> RunResult:
        key = (tuple(argv), limits, seccomp)
        with self._lock:
            warm = self._warm.pop(key, None)
        if warm is not None and warm.usable_for(files):
            warm.release(files)
            return warm.finish(collect)
        if warm is not None:
            warm.close()
        box = _StrictBox(files, argv, limits, seccomp, cpu_allowance=0.0)
        box.release({})
        return box.finish(collect)

    # ------------------------------------------------------------------------------------------ warm
    def prewarm(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits = Limits(),
        seccomp: Literal["strict", "sanitizer"] = "strict",
        *,
        idle_seconds: float = 600.0,
        cpu_allowance: float = 30.0,
    ) -> bool:
        """Start a single-use box now, so a later ``run`` with the same argv/limits/seccomp starts warm.

        The program starts with ``files`` only and may do slow set-up (e.g. ``import torch``), then must
        wait for the file ``.go`` in its cwd: ``run`` writes its remaining files, then ``.go``. The wall
        clock starts at ``.go``; ``cpu_allowance`` extra CPU seconds cover the set-up. Unused boxes die after
        ``idle_seconds``. Returns False (and does nothing) when strict isolation is unavailable.
        """
        for name in files:
            _safe_relpath(name)
        if not self.status()[0]:
            return False
        key = (tuple(argv), limits, seccomp)
        with self._lock:
            if key in self._warm and self._warm[key].alive():
                return True
        box = _StrictBox(files, argv, limits, seccomp, cpu_allowance=cpu_allowance)
        timer = threading.Timer(idle_seconds, self._expire, args=(key, box))
        timer.daemon = True
        timer.start()
        with self._lock:
            old = self._warm.pop(key, None)
            self._warm[key] = box
        if old is not None:
            old.close()
        _LIVE_BOXES.add(box)
        return True

    def _expire(self, key: tuple[object, ...], box: _StrictBox) -> None:
        with self._lock:
            if self._warm.get(key) is box:
                del self._warm[key]
            else:
                return
        box.close()

    def close(self) -> None:
        """Kill any pre-started boxes."""
        with self._lock:
            boxes, self._warm = list(self._warm.values()), {}
        for b in boxes:
            b.close()

    # ------------------------------------------------------------------------------------------ weak
    def _run_weak(
        self,
        files: Mapping[str, bytes | str],
        argv: Sequence[str],
        limits: Limits,
        collect: Sequence[str],
    ) -> RunResult:
        _shield_grader_process()
        with tempfile.TemporaryDirectory(prefix="interviewer-weak-") as box:
            _write_files(box, {**files, ".go": b""}, None)
            env = _weak_env(box)
            result = _supervise(_weak_argv(argv), limits, [], None, cwd=box, env=env)
            files_out = _collect(box, collect, limits)
        return _with_files(result, files_out)


# ----------------------------------------------------------------------------------------------- helpers
@functools.lru_cache(maxsize=8)
def _bwrap_has(flag: str) -> bool:
    try:
        out = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return flag in out.stdout + out.stderr


# What candidate code sees in either mode besides paths: no bytecode files, a fixed hash seed, two BLAS threads.
_BOX_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
}


def _env_args() -> list[str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": BOX,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        **_BOX_ENV,
    }
    args: list[str] = []
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _launcher_env() -> dict[str, str]:
    """The environment of the processes that start the strict box (prlimit, bwrap): a search path only."""
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _weak_env(box: str) -> dict[str, str]:
    """The weak box's environment: the tools' search paths, never the host's secrets (API keys, tokens)."""
    keep = ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return env | {"HOME": box, "TMPDIR": box, **_BOX_ENV}


@functools.lru_cache(maxsize=1)
def _shield_grader_process() -> None:
    """Make this (the grader's) process non-dumpable, once and for good, before any weak-mode code runs.

    Weak mode runs candidate code as this user, and ``/proc/<grader pid>/environ`` holds the environment
    this process was started with (API keys), whatever ``os.environ`` holds now. A non-dumpable process's
    ``/proc`` files belong to root and need CAP_SYS_PTRACE to open, which same-user code (and root code
    without capabilities, see ``_weak_argv``) lacks. For good, not per run: weak mode does not contain
    daemonised children, and one that outlived its run could read the file once it was readable again.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE = 4
        raise SandboxUnavailable(
            f"weak mode cannot hide this process's environment from the code (prctl: errno {ctypes.get_errno()})"
        )


def _weak_argv(argv: Sequence[str]) -> list[str]:
    """As root, weak-mode code keeps uid 0 (a Python under /root stays usable) but gets no capabilities:
    without CAP_SYS_PTRACE it cannot open a non-dumpable process's ``/proc`` files, without
    CAP_DAC_OVERRIDE it cannot read other users' files, and ``no_new_privs`` stops setuid binaries."""
    if os.geteuid() != 0:
        return list(argv)
    if shutil.which("setpriv") is None:
        raise SandboxUnavailable(
            "weak mode as root needs setpriv (Debian package util-linux) to drop root's capabilities"
        )
    drop = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return ["setpriv", *drop, "--", *argv]


def _nobody_can_reach(path: str) -> bool:
    """Can an unprivileged uid traverse to ``path``? (bwrap resolves bind sources as that uid)."""
    p = Path(path)
    for d in [*reversed(p.parents), p]:
        try:
            st = d.stat()
        except OSError:
            return False
        if d != p and not st.st_mode & stat.S_IXOTH:
            return False
    return True


def _mount(*args: str) -> None:
    r = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise SandboxUnavailable(
            f"cannot set up the sandbox mounts (mount {' '.join(args)}): {r.stderr.strip()}"
        )


@functools.lru_cache(maxsize=1)
def _sweep_stale_boxes() -> int:
    """Once per process: unmount and remove boxes left by graders that were killed (no atexit ran)."""
    tmp = tempfile.gettempdir()
    swept = 0
    try:
        names = os.listdir(tmp)
    except OSError:
        return 0
    mounts = []
    with contextlib.suppress(OSError):
        mounts = [
            ln.split()[1] for ln in Path("/proc/self/mounts").read_text().splitlines() if len(ln.split()) > 1
        ]
    for name in names:
        parts = name.split("-")
        if not name.startswith("interviewer-box-") or len(parts) < 4 or not parts[2].isdigit():
            continue
        if os.path.exists(f"/proc/{parts[2]}"):
            continue  # its grader is alive (or the pid was reused): leave it
        root = os.path.join(tmp, name)
        for m in sorted((m for m in mounts if m.startswith(root + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=10)
        shutil.rmtree(root, ignore_errors=True)
        swept += 1
    # Empty per-run cgroups older than ten minutes (a fresh one may be about to be joined).
    for parent in _own_cgroup_dirs().values():
        with contextlib.suppress(OSError):
            for d in parent.glob("interviewer-sbx-*"):
                with contextlib.suppress(OSError):
                    if time.time() - d.stat().st_mtime > 600:
                        d.rmdir()
    return swept


@contextlib.contextmanager
def _staging(limits: Limits, as_root: bool, uid: int) -> Iterator[tuple[str, list[tuple[str, str]], bool]]:
    """A private box dir and the read-only binds ``(source, dest)``.

    As root, the box is a size-capped tmpfs (filling it cannot fill the host disk), and sources the
    unprivileged uid cannot traverse to (e.g. a Python under /root) are bind-mounted into a reachable
    staging dir for the duration of the run.
    """
    if as_root:
        _sweep_stale_boxes()
    parent = tempfile.mkdtemp(prefix=f"interviewer-box-{os.getpid()}-")
    box = os.path.join(parent, "box")
    os.mkdir(box, 0o700)
    mounts: list[str] = []
    try:
        binds: list[tuple[str, str]] = []
        if as_root:
            os.chmod(parent, 0o711)  # the unprivileged uid must reach the box and staged mounts through it
            size = box_quota_mb(limits)
            opts = f"size={size}m,mode=0700,uid={uid},gid={uid},nodev,nosuid"
            try:
                _mount("-t", "tmpfs", "-o", opts, "interviewer-box", box)
                mounts.append(box)
            except SandboxUnavailable:
                # No mount rights (e.g. an unprivileged container): the box is then a watched plain dir.
                os.chown(box, uid, uid)
        for i, src in enumerate(_ro_bind_sources()):
            if not as_root or _nobody_can_reach(src):
                binds.append((src, src))
                continue
            staged = os.path.join(parent, f"ro{i}")
            if os.path.isdir(src):
                os.mkdir(staged)
            else:
                Path(staged).touch()
            _mount("--bind", src, staged)
            mounts.append(staged)
            binds.append((staged, src))
        yield box, binds, bool(mounts) and mounts[0] == box
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=10)
        shutil.rmtree(parent, ignore_errors=True)


def _write_files(box: str, files: Mapping[str, bytes | str], owner: int | None) -> None:
    for name, content in files.items():
        rel = _safe_relpath(name)
        path = os.path.join(box, *rel.parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        with open(path, "wb") as fh:
            fh.write(data)
        if owner is not None:
            d = os.path.dirname(path)
            while os.path.abspath(d) != os.path.abspath(box):
                os.chown(d, owner, owner)
                d = os.path.dirname(d)
            os.chown(path, owner, owner)


def _collect(box: str, collect: Sequence[str], limits: Limits) -> dict[str, bytes]:
    """Read back regular files without following links (the box is hostile); skip what is missing."""
    out: dict[str, bytes] = {}
    cap = limits.file_size_mb * _MiB
    for name in collect:
        parts = _safe_relpath(name).parts
        dir_fd = os.open(box, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = nxt
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError:
            continue
        finally:
            os.close(dir_fd)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_size <= cap:
                with os.fdopen(fd, "rb") as fh:
                    fd = -1
                    out[name] = fh.read(cap + 1)[:cap]
        finally:
            if fd >= 0:
                os.close(fd)
    return out


def _with_files(r: RunResult, files: dict[str, bytes]) -> RunResult:
    return RunResult(r.returncode, r.stdout, r.stderr, r.timed_out, r.killed_reason, r.wall_seconds, files)


def _rlimit_args(limits: Limits, cpu_allowance: float = 0.0) -> list[str]:
    """``prlimit`` options: the limits apply from the first exec and are inherited by everything below."""
    cpu = max(1, int(limits.cpu_seconds + cpu_allowance + 0.999))
    fsize = limits.file_size_mb * _MiB
    as_bytes = max(limits.memory_mb * 4, _AS_FLOOR_MB) * _MiB
    nproc = limits.processes
    return [
        f"--cpu={cpu}:{cpu + 1}", f"--fsize={fsize}", "--nofile=256", f"--nproc={nproc}", "--core=0",
        *([f"--as={as_bytes}"] if limits.address_space_limit else []), "--stack=67108864",
    ]  # fmt: skip


def _start(
    cmd: list[str],
    limits: Limits,
    pass_fds: list[int],
    cgroup: _Cgroup | None,
    cwd: str | None,
    env: dict[str, str] | None,
    cpu_allowance: float = 0.0,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session under rlimits, inside the cgroup from its first instruction."""
    full = ["prlimit", *_rlimit_args(limits, cpu_allowance), "--", *cmd]
    if cgroup is not None and cgroup.active:
        # Join the cgroup before anything forks: `sh` writes its own pid, then execs the rest.
        joins = " && ".join(f'echo $$ > "{p}"' for p in cgroup.procs_files())
        full = ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *full]
    try:
        return subprocess.Popen(
            full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,
            cwd=cwd,
            env=env,
        )
    except OSError as e:
        raise SandboxUnavailable(f"cannot start the sandbox ({e}); is util-linux installed?") from e


def _supervise(
    cmd: list[str],
    limits: Limits,
    pass_fds: list[int],
    cgroup: _Cgroup | None,
    cwd: str | None,
    env: dict[str, str] | None,
) -> RunResult:
    """Start ``cmd`` and wait for it under the wall-clock and output limits."""
    start = time.monotonic()
    return _wait(_start(cmd, limits, pass_fds, cgroup, cwd, env), limits, cgroup, start, disk_watch=cwd)


def box_quota_mb(limits: Limits) -> int:
    """How much the box may hold in total (its tmpfs size, or the watched cap without one)."""
    return max(limits.file_size_mb * 4, 64)


def _disk_usage(path: str, max_entries: int) -> tuple[int, int]:
    """Bytes allocated and entries under ``path`` (links not followed; stops counting past max_entries)."""
    total, entries = 0, 0
    stack = [path]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    entries += 1
                    st = e.stat(follow_symlinks=False)
                    total += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            continue
    return total, entries


def _kill_session(proc: subprocess.Popen[bytes], cgroup: _Cgroup | None) -> None:
    """SIGKILL the box's process group, then whatever of it the cgroup still holds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if cgroup is not None:
        cgroup.kill_all_and_remove()


def _exit_by(proc: subprocess.Popen[bytes], cgroup: _Cgroup | None, deadline: float) -> bool:
    """Wait for the process to exit; kill its session at the deadline. True when the deadline was hit."""
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            _kill_session(proc, cgroup)
            return True
        time.sleep(0.005)
    return False


def _wait(
    proc: subprocess.Popen[bytes],
    limits: Limits,
    cgroup: _Cgroup | None,
    start: float,
    disk_watch: str | None = None,
) -> RunResult:
    """Drain output under caps; kill the whole session (and cgroup) at the wall-clock deadline.

    ``disk_watch``: a box dir without a size-capped tmpfs (non-root or weak mode), polled every 0.1 s.
    """
    quota = box_quota_mb(limits) * _MiB
    next_disk_check = 0.0
    bufs: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
    killed: str | None = None
    timed_out = False
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    deadline = start + limits.wall_seconds
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out, killed = True, f"wall-clock limit {limits.wall_seconds:g} s"
                _kill_session(proc, cgroup)
                break
            if disk_watch is not None and time.monotonic() >= next_disk_check:
                used, entries = _disk_usage(disk_watch, 10_000)
                if used > quota or entries > 10_000:
                    killed = f"disk limit {box_quota_mb(limits)} MiB / 10000 files in the box"
                    _kill_session(proc, cgroup)
                    break
                next_disk_check = time.monotonic() + 0.1
            for key, _ in sel.select(timeout=min(remaining, 0.1 if disk_watch else 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = bufs[key.data]
                buf += chunk
                if len(buf) > limits.output_bytes:
                    del buf[limits.output_bytes :]
                    killed = "output limit"
            if killed:
                _kill_session(proc, cgroup)
                break
        # Pipes closed (or we killed): the process itself must still exit within the deadline.
        if _exit_by(proc, cgroup, deadline):
            timed_out, killed = True, killed or f"wall-clock limit {limits.wall_seconds:g} s"
        proc.wait()
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        # The session may hold orphans that closed their pipes; the pid namespace and cgroup catch the rest.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    wall = time.monotonic() - start
    rc = proc.returncode
    if killed is None:
        killed = _classify(rc, cgroup, limits)
    return RunResult(
        returncode=rc,
        stdout=bytes(bufs["stdout"]).decode("utf-8", "replace"),
        stderr=bytes(bufs["stderr"]).decode("utf-8", "replace"),
        timed_out=timed_out,
        killed_reason=killed,
        wall_seconds=wall,
    )


def _classify(rc: int | None, cgroup: _Cgroup | None, limits: Limits) -> str | None:
    """Name the limit behind a death by signal (bwrap reports a child's signal N as 128+N)."""
    if rc is None or rc == 0:
        return None
    sig = -rc if rc < 0 else rc - 128 if rc > 128 else None
    if sig is None:
        return None
    if cgroup is not None and cgroup.oom_killed():
        return f"memory limit {limits.memory_mb} MiB"
    if sig == signal.SIGXCPU:
        return f"CPU limit {limits.cpu_seconds:g} s"
    if sig == signal.SIGXFSZ:
        return f"file size limit {limits.file_size_mb} MiB"
    if sig == signal.SIGKILL:
        return "killed (SIGKILL)"
    return None
