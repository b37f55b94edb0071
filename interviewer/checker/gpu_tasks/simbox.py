"""Runs INSIDE the sandbox: Numba's CUDA simulator with a deterministic scheduler and a memory checker.

The grader ships this file into the box with the candidate's ``solution.py``. It:

- enables Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) and keeps its device API (``cuda.jit``,
  ``cuda.grid``, ``cuda.shared.array``, ``cuda.syncthreads``, ``cuda.atomic.*``), but replaces its thread
  scheduler: the stock one runs every CUDA thread as an OS thread and busy-polls them at each barrier (slow,
  and the interleaving changes from run to run). Here each CUDA thread is a greenlet and a block runs one
  thread at a time, in a fixed order, switching at ``cuda.syncthreads()``: results are reproducible.
- wraps every device array and every shared array so that each element access from a kernel is recorded:
  who (block, thread), when (which barrier interval), what (read, write, atomic) and where (the line).
  From that it reports, like compute-sanitizer's racecheck/synccheck/initcheck/memcheck: races (two threads
  touching the same element in the same barrier interval, at least one writing, not both atomic; for global
  memory also any two blocks of one launch), barrier divergence, reads of uninitialised shared memory and
  out-of-bounds indices; and, like Nsight Compute, the number of global loads and stores, the 32-byte
  sectors each warp-wide access touches (coalescing) and shared-memory bank conflicts.
- hands the candidate's host function device arrays that cannot be read on the host (no ``copy_to_host``,
  no indexing, no ``__array__``): the result can only come from kernels. They are named, printed and
  truth-tested like Numba's ``DeviceNDArray``, and kernels like its ``CUDADispatcher``.

Nothing here decides a pass. The candidate's code, with the instruments (they must share its process),
runs in a child forked by the relay (``relay.py``, the Python tasks' ``harness_box.py``); the child may
read files but write none (an audit hook, installed before the solution is imported), and sends each
case's output arrays and measurements as frames on a pipe. The parent, which never runs candidate code,
signs each record with the per-run key it read and deleted before the child could start, into
``results.jsonl``; the grader outside accepts only signed lines and compares them with what it computed.
"""

import os

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.abspath(".numba-cache"))
os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")

import io
import json
import linecache
import re
import sys
import time
import traceback
from typing import Any

import greenlet
import numpy as np
from numba import cuda
from numba.cuda.simulator import kernel as sim_kernel
from numba.cuda.simulator import kernelapi as sim_api

SOLUTION = os.path.abspath("solution.py")
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_THREADS_PER_LAUNCH = 65_536
MAX_SHARED_BYTES = 48 * 1024
MAX_REPORTS = 5  # per kind and case: the first few are enough to act on
GARBAGE_INT = 0x5A5A5A5A  # what uninitialised device memory holds here (cudaMalloc does not zero)


class KernelError(Exception):
    """A fault the hardware would show as a crash or undefined behaviour, with the thread and line."""


class HostAccessError(Exception):
    """The host touched device memory directly."""


# ------------------------------------------------------------------------------------------ the thread state
class SimThread:
    """One simulated CUDA thread: its indices, barrier count and greenlet."""

    __slots__ = (
        "atomic",
        "bdim",
        "block",
        "blockIdx",
        "glet",
        "lane",
        "lines",
        "phase",
        "threadIdx",
        "tid",
        "value",
        "warp",
    )  # fmt: skip

    def __init__(self, block: int, block_idx: tuple[int, int, int], tidx: tuple[int, int, int],
                 bdim: tuple[int, int, int]) -> None:  # fmt: skip
        self.block = block
        self.blockIdx = sim_api.Dim3(*block_idx)
        self.threadIdx = sim_api.Dim3(*tidx)
        self.bdim = bdim
        self.tid = tidx[0] + bdim[0] * (tidx[1] + bdim[1] * tidx[2])  # linear id inside the block
        self.warp = self.tid // 32
        self.lane = self.tid % 32
        self.phase = 0  # barriers passed so far
        self.atomic = 0  # > 0 while inside cuda.atomic.*
        self.lines: dict[int, int] = {}  # line -> accesses so far (the k-th execution of that line)
        self.value: Any = None  # syncthreads_count/and/or
        self.glet: Any = None

    def name(self) -> str:
        t = self.threadIdx
        b = self.blockIdx
        return f"thread ({t.x},{t.y},{t.z}) of block ({b.x},{b.y},{b.z})"


class Launch:
    """Per-launch bookkeeping: the kernel, its configuration, and the block that is running."""

    def __init__(self, kernel: str, grid: tuple[int, ...], block: tuple[int, ...]) -> None:
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.cur: SimThread | None = None
        self.shared_sites: dict[tuple[str, int], SharedSite] = {}
        self.shared_bytes = 0
        self.block_no = -1
        self.block_threads: list[SimThread] = []


STATE: dict[str, Any] = {"launch": None}
REPORT: dict[str, Any] = {}


def new_report() -> dict[str, Any]:
    return {
        "launches": [],
        "races": [],
        "race_count": 0,
        "divergence": [],
        "uninit": [],
        "uninit_count": 0,
        "arrays": {},  # label -> global stats
        "shared": {},  # name -> shared stats
        "barriers": 0,
        "atomics": 0,
        "host_errors": [],
    }


def cur() -> SimThread:
    launch = STATE["launch"]
    if launch is None or launch.cur is None:
        raise HostAccessError("this CUDA device function can only be called from inside a kernel")
    return launch.cur


def solution_line() -> int:
    """The line of solution.py that made the current access (0 if none)."""
    f: Any = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return 0
        if f.f_code.co_filename == SOLUTION:
            return f.f_lineno
        f = f.f_back
    return 0


# --------------------------------------------------------------------------------------- tracked memory
class Tracker:
    """Access history of one array (global: per launch; shared: per block) and its counters."""

    __slots__ = ("array_name", "coalesce", "hist", "init", "label", "per_thread", "space", "stats", "written")

    def __init__(self, label: str, space: str) -> None:
        self.label = label
        self.array_name = label
        self.space = space
        self.hist: dict[int, list[tuple[str, int, int, int, int]]] = {}
        self.written: set[int] | None = set() if space == "shared" else None
        self.init: np.ndarray | None = None  # global: which elements anything has written (None: all)
        self.per_thread: dict[tuple[int, int], int] = {}  # (block, tid) -> loads
        self.coalesce: dict[tuple[int, int, int, int, str], set[int]] = {}  # (block, warp, line, k, kind)
        self.stats = REPORT_STATS(space)


def REPORT_STATS(space: str) -> dict[str, Any]:
    base: dict[str, Any] = {"loads": 0, "stores": 0, "atomics": 0, "max_loads_per_thread": 0}
    if space == "global":
        base |= {"load_requests": 0, "load_sectors": 0, "store_requests": 0, "store_sectors": 0,
                 "worst_load": None, "worst_store": None}  # fmt: skip
    else:
        base |= {"requests": 0, "wavefronts": 0, "max_ways": 1, "worst_conflict": None}
    return base


def _racecheck(tr: Tracker, flat: int, kind: str, t: SimThread, line: int) -> None:
    """Report a conflicting earlier access to the element, then keep this one in its (pruned) history."""
    blk, ph, tid = t.block, t.phase, t.tid
    hist = tr.hist.get(flat)
    if hist is None:
        tr.hist[flat] = [(kind, blk, ph, tid, line)]
    else:
        keep = []
        same = 0  # records of this (kind, block, phase); at most two distinct threads are kept
        mine = False
        for rec in hist:
            k2, b2, p2, t2, _ = rec
            if b2 == blk:
                if p2 < ph:
                    continue  # ordered by a barrier of this block: forget it
                if t2 == tid:
                    keep.append(rec)
                    if k2 == kind:
                        mine = True
                        same += 1
                    continue
                if k2 == kind and p2 == ph:
                    same += 1
            keep.append(rec)
            if k2 == kind and (kind == "r" or kind == "a"):
                continue  # two reads, or two atomics, never conflict
            if b2 != blk or p2 == ph:
                report_race(tr, flat, rec, (kind, blk, ph, tid, line), t)
        if not mine and same < 2:
            keep.append((kind, blk, ph, tid, line))
        tr.hist[flat] = keep


def record(tr: Tracker, flat: int, kind: str, itemsize: int, t: SimThread, store: bool) -> None:
    """Count the access, look for a conflicting one in the history, remember it.

    An atomic is a read and a write of the element; it is counted once, on its write.
    """
    line = solution_line()
    st = tr.stats
    init = tr.init
    if init is not None and not init[flat] and (store or kind == "r"):
        if kind != "w":  # a read, or an atomic (counted once, on its write), of garbage
            REPORT["uninit_count"] += 1
            if len(REPORT["uninit"]) < MAX_REPORTS:
                what = "updated" if kind == "a" else "read"
                REPORT["uninit"].append(
                    f"{t.name()} {what} `{tr.array_name}` element {flat} at line {line} before anything wrote it "
                    "(device memory from cuda.device_array, and the output arrays, start as garbage: write "
                    "or zero it first)"
                )
        if kind != "r":
            init[flat] = True
    if kind == "a":
        if not store:
            return
        st["atomics"] += 1
        REPORT["atomics"] += 1
    elif kind == "r":
        st["loads"] += 1
        if tr.space == "global":
            key = (t.block, t.tid)
            n = tr.per_thread.get(key, 0) + 1
            tr.per_thread[key] = n
            if n > st["max_loads_per_thread"]:
                st["max_loads_per_thread"] = n
    else:
        st["stores"] += 1
    # initcheck (shared): a read of an element no thread of this block has written
    if tr.written is not None:
        if kind == "r" and flat not in tr.written:
            REPORT["uninit_count"] += 1
            if len(REPORT["uninit"]) < MAX_REPORTS:
                REPORT["uninit"].append(
                    f"{t.name()} read `{tr.array_name}` element {flat} at line {line} before any thread of "
                    "its block wrote it (shared memory starts with garbage)"
                )
        elif kind != "r":
            tr.written.add(flat)
    _racecheck(tr, flat, kind, t, line)
    # coalescing (global) / bank conflicts (shared): group the k-th execution of a line by a warp
    k = t.lines.get(line, 0)
    t.lines[line] = k + 1
    ckey = (t.block, t.warp, line, k, kind)
    addrs = tr.coalesce.get(ckey)
    if addrs is None:
        addrs = set()
        tr.coalesce[ckey] = addrs
    addrs.add(flat * itemsize)
    if len(tr.coalesce) > 200_000:
        flush_coalescing(tr)


def thread_name(block: int, tid: int) -> str:
    launch = STATE["launch"]
    bd = launch.block
    gx, gy = launch.grid[0], launch.grid[1]
    b = (block % gx, (block // gx) % gy, block // (gx * gy))
    t = (tid % bd[0], (tid // bd[0]) % bd[1], tid // (bd[0] * bd[1]))
    short = f"({t[0]},{t[1]})" if bd[2] == 1 else f"({t[0]},{t[1]},{t[2]})"
    if launch.grid == (1, 1, 1):
        return f"thread {short}"
    return f"thread {short} of block ({b[0]},{b[1]})"


KIND = {"r": "read", "w": "write", "a": "atomic"}


def report_race(tr: Tracker, flat: int, first: tuple[str, int, int, int, int],
                second: tuple[str, int, int, int, int], t: SimThread) -> None:  # fmt: skip
    REPORT["race_count"] += 1
    if len(REPORT["races"]) >= MAX_REPORTS:
        return
    k1, b1, _, t1, l1 = first
    k2, b2, _, t2, l2 = second
    where = f"element {flat}"
    if b1 != b2:
        hint = "different blocks of one launch are not ordered: combine their results in a second launch or with atomics"
    elif tr.space == "shared":
        hint = "missing cuda.syncthreads()?"
    else:
        hint = "missing cuda.syncthreads() or an atomic?"
    space = "shared array" if tr.space == "shared" else "global array"
    msg = (
        f"race on {space} `{tr.array_name}` {where} between {thread_name(b1, t1)} {KIND[k1]} at line {l1} "
        f"and {thread_name(b2, t2)} {KIND[k2]} at line {l2} with no barrier in between, {hint}"
    )
    if msg not in REPORT["races"]:
        REPORT["races"].append(msg)


def flush_coalescing(tr: Tracker) -> None:
    """Turn the grouped warp accesses into sectors (global) or bank-conflict ways (shared)."""
    st = tr.stats
    for (_, _, line, _, kind), addrs in tr.coalesce.items():
        if tr.space == "global":
            sectors = len({a // 32 for a in addrs})
            which = "load" if kind == "r" else "store"
            st[f"{which}_requests"] += 1
            st[f"{which}_sectors"] += sectors
            worst = st[f"worst_{which}"]
            if worst is None or sectors > worst[0]:
                st[f"worst_{which}"] = [sectors, line]
        else:
            words = {a // 4 for a in addrs}
            per_bank: dict[int, int] = {}
            for w in words:
                per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
            ways = max(per_bank.values())
            st["requests"] += 1
            st["wavefronts"] += ways
            if ways > st["max_ways"]:
                st["max_ways"] = ways
                st["worst_conflict"] = [ways, line, KIND[kind]]
    tr.coalesce.clear()


def flat_index(shape: tuple[int, ...], idx: Any, name: str) -> int:
    """A row-major element number, with CUDA's rules: integers only, in bounds, no negative wrap-around."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if len(idx) != len(shape):
        raise KernelError(
            f"`{name}` has {len(shape)} dimension(s) but was indexed with {len(idx)} index(es); index every "
            "dimension with integers"
        )
    flat = 0
    for d, (i, n) in enumerate(zip(idx, shape, strict=True)):
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise KernelError(
                f"index {i!r} into `{name}` is a {type(i).__name__}; kernels index arrays with integers "
                "(no slices or float indices)"
            )
        i = int(i)
        if i < 0 or i >= n:
            t = STATE["launch"].cur if STATE["launch"] is not None else None
            who = f" by {t.name()}" if t is not None else ""
            raise KernelError(
                f"out-of-bounds access `{name}`[{', '.join(str(int(v)) for v in idx)}] (dimension {d} has size "
                f"{n}){who} at line {solution_line()}: on a GPU this reads or corrupts other memory; guard it "
                "with an index check"
            )
        flat = flat * n + i
    return flat


class KernelArray:
    """What a kernel sees for a device array argument (or a row of one): element access, recorded."""

    __slots__ = ("_a", "_base", "_isz", "_name", "_nd", "_prefix", "_tr")

    def __init__(self, a: np.ndarray, tr: Tracker, name: str, prefix: tuple[int, ...] = (), base: Any = None):
        self._a = a
        self._nd = a.ndim
        self._isz = a.itemsize
        self._tr = tr
        self._name = name
        self._prefix = prefix
        self._base = base if base is not None else a

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._a.shape)

    @property
    def size(self) -> int:
        return int(self._a.size)

    @property
    def ndim(self) -> int:
        return int(self._a.ndim)

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    def __len__(self) -> int:
        return int(self._a.shape[0])

    def _flat(self, idx: Any) -> int:
        shape = self._base.shape
        if not self._prefix:
            if type(idx) is int and len(shape) == 1:
                if 0 <= idx < shape[0]:
                    return idx
            elif type(idx) is tuple and len(idx) == 2 == len(shape):
                i, j = idx
                if type(i) is int and type(j) is int and 0 <= i < shape[0] and 0 <= j < shape[1]:
                    return i * shape[1] + j
        elif type(idx) is int and len(shape) == 2 and 0 <= idx < shape[1]:
            return self._prefix[0] * shape[1] + idx
        full = self._prefix + (idx if isinstance(idx, tuple) else (idx,))
        return flat_index(shape, full, self._name)

    def __getitem__(self, idx: Any) -> Any:
        if self._nd > 1 and (type(idx) is int or isinstance(idx, np.integer) or (type(idx) is tuple
                             and len(idx) < self._nd)):  # fmt: skip
            sub = idx if isinstance(idx, tuple) else (idx,)
            flat_index(self._a.shape[: len(sub)], sub, self._name)  # bounds of the row index
            return KernelArray(self._a[sub], self._tr, self._name, self._prefix + tuple(int(i) for i in sub),
                               self._base)  # fmt: skip
        t = cur_or_host(self._name)
        flat = self._flat(idx)
        record(self._tr, flat, "a" if t.atomic else "r", self._isz, t, False)
        return self._base.flat[flat]

    def __setitem__(self, idx: Any, value: Any) -> None:
        t = cur_or_host(self._name)
        flat = self._flat(idx)
        record(self._tr, flat, "a" if t.atomic else "w", self._isz, t, True)
        self._base.flat[flat] = value

    def __iter__(self) -> Any:
        raise KernelError(
            f"iterating over `{self._name}` is not a GPU operation: index it element by element"
        )

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise KernelError(f"`{self._name}` cannot be used as a NumPy array inside a kernel: index it")


def cur_or_host(name: str) -> SimThread:
    launch = STATE["launch"]
    if launch is None or launch.cur is None:
        raise HostAccessError(
            f"device array `{name}` was accessed outside a kernel: device memory is not readable on the host"
        )
    return launch.cur


class SharedSite:
    """One ``cuda.shared.array`` declaration of a launch: a fresh array and history for each block."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: np.dtype, line: int) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.line = line
        self.block = -1
        self.array: KernelArray | None = None
        self.stats = REPORT["shared"].setdefault(
            name, REPORT_STATS("shared") | {"shape": list(shape), "dtype": str(dtype), "line": line}
        )

    def for_block(self, block: int) -> KernelArray:
        if self.block != block or self.array is None:
            if self.array is not None:
                flush_coalescing(self.array._tr)
            a = np.empty(self.shape, self.dtype)
            a.fill(np.nan if a.dtype.kind == "f" else GARBAGE_INT % (1 << (8 * a.itemsize - 1)))
            tr = Tracker(self.name, "shared")
            tr.stats = self.stats
            self.array = KernelArray(a, tr, self.name)
            self.block = block
        return self.array


_NAME_RE = re.compile(r"(\w+)\s*(?::[^=]*)?=\s*[\w.]*shared\.array")


class SharedFactory:
    """``cuda.shared.array`` for the simulator: one tracked array per declaration and block."""

    def array(self, shape: Any, dtype: Any) -> KernelArray:
        launch: Launch = STATE["launch"]
        t = cur()
        f = sys._getframe(1)
        key = (f.f_code.co_filename, f.f_lineno)
        site = launch.shared_sites.get(key)
        if site is None:
            shp = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
            if any(s <= 0 for s in shp):
                raise KernelError(
                    f"cuda.shared.array at line {f.f_lineno} has shape {shp}: dynamic (size 0) shared memory "
                    "is not supported here; give it a static shape from a module-level constant"
                )
            dt = np.dtype(_as_np_dtype(dtype))
            m = _NAME_RE.search(linecache.getline(f.f_code.co_filename, f.f_lineno))
            name = m.group(1) if m else f"shared@line{f.f_lineno}"
            nbytes = int(np.prod(shp)) * dt.itemsize
            launch.shared_bytes += nbytes
            if launch.shared_bytes > MAX_SHARED_BYTES:
                raise KernelError(
                    f"shared memory per block is {launch.shared_bytes} bytes after `{name}` (line {f.f_lineno});"
                    f" the static limit is {MAX_SHARED_BYTES} bytes (48 KiB)"
                )
            site = SharedSite(name, shp, dt, f.f_lineno)
            launch.shared_sites[key] = site
        return site.for_block(t.block)


def _as_np_dtype(dtype: Any) -> Any:
    from numba.core import types
    from numba.np import numpy_support

    if isinstance(dtype, types.Type):
        return numpy_support.as_dtype(dtype)
    return dtype


# ------------------------------------------------------------------------------------------ the scheduler
def barrier() -> None:
    t = cur()
    parent = t.glet.parent
    parent.switch("barrier")


def _sync_reduce(value: Any, op: str) -> int:
    t = cur()
    t.value = value
    barrier()
    launch: Launch = STATE["launch"]
    vals = [th.value for th in launch.block_threads]
    barrier()
    if op == "count":
        return sum(1 for v in vals if v)
    if op == "and":
        return int(all(vals))
    return int(any(vals))


def run_block(launch: Launch, fn: Any, args: list[Any], block_no: int, bidx: tuple[int, int, int]) -> None:
    """Run one block: every thread until its next barrier, in thread order, until all have finished."""
    bd = launch.block
    threads = []
    for z in range(bd[2]):
        for y in range(bd[1]):
            for x in range(bd[0]):
                t = SimThread(block_no, bidx, (x, y, z), bd)  # type: ignore[arg-type]
                t.glet = greenlet.greenlet(lambda: fn(*args))
                threads.append(t)
    launch.block_threads = threads
    launch.block_no = block_no
    runnable = threads
    exited: list[SimThread] = []
    diverged = False
    while runnable:
        waiting = []
        for t in runnable:
            launch.cur = t
            try:
                t.glet.switch()
            except KernelError:
                raise
            except Exception as e:
                raise KernelError(f"{t.name()} raised {type(e).__name__}: {e}{_where(e)}") from None
            finally:
                launch.cur = None
            if t.glet.dead:
                exited.append(t)
            else:
                waiting.append(t)
        if waiting:
            REPORT["barriers"] += 1
            if exited and not diverged and len(REPORT["divergence"]) < MAX_REPORTS:
                diverged = True
                gone, w = exited[0], waiting[0]
                REPORT["divergence"].append(
                    f"barrier divergence in block {_fmt(w.blockIdx)}: thread {_fmt(gone.threadIdx)} exited after "
                    f"{gone.phase} cuda.syncthreads() call(s) while thread {_fmt(w.threadIdx)} waits at call "
                    f"{w.phase + 1}: every thread of a block must reach every barrier (guard the work, do not "
                    "return early before a cuda.syncthreads())"
                )
            for t in waiting:
                t.phase += 1
        runnable = waiting
    launch.block_threads = []


def _fmt(d: Any) -> str:
    return f"({d.x},{d.y},{d.z})"


def _where(e: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == SOLUTION]
    return f" at line {frames[-1].lineno}" if frames else ""


def _dims(v: Any, what: str) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (v,)
    try:
        dims = tuple(int(x) for x in v)
    except TypeError as e:
        raise KernelError(f"the {what} dimensions {v!r} must be an int or a tuple of up to 3 ints") from e
    if not 1 <= len(dims) <= 3 or any(not isinstance(x, (int, np.integer)) for x in v):
        raise KernelError(f"the {what} dimensions {v!r} must be an int or a tuple of up to 3 ints")
    if any(d <= 0 for d in dims):
        raise KernelError(
            f"launch with {what} dimensions {dims}: a zero-sized {what} is an invalid configuration "
            "(cudaErrorInvalidConfiguration); handle empty inputs before launching"
        )
    return ((*dims, 1, 1))[:3]  # type: ignore[return-value]


def launch_kernel(self: Any, *args: Any) -> None:
    """Replaces FakeCUDAKernel.__call__: check the configuration, wrap the arguments, run the blocks."""
    if self._device:
        with sim_kernel.swapped_cuda_module(self.fn, sim_kernel._get_kernel_context()):
            return self.fn(*args)
    if STATE["launch"] is not None:
        raise KernelError("a kernel was launched from inside a kernel: launch kernels from the host function")
    if self.grid_dim is None or self.block_dim is None:
        raise KernelError(
            f"kernel `{self.fn.__name__}` launched without a configuration: use kernel[blocks, threads](...)"
        )
    grid = _dims(self.grid_dim, "grid")
    block = _dims(self.block_dim, "block")
    name = self.fn.__name__
    nthreads_block = block[0] * block[1] * block[2]
    if (
        any(b > m for b, m in zip(block, MAX_BLOCK_DIM, strict=True))
        or nthreads_block > MAX_THREADS_PER_BLOCK
    ):
        raise KernelError(
            f"`{name}` launched with blocks of {block} = {nthreads_block} threads; a block holds at most 1024 "
            "threads (and z at most 64)"
        )
    total = nthreads_block * grid[0] * grid[1] * grid[2]
    if total > MAX_THREADS_PER_LAUNCH:
        raise KernelError(
            f"`{name}` launched {total} threads; this simulator runs at most {MAX_THREADS_PER_LAUNCH} per launch: "
            "size the grid from the input (blocks = ceil(n / threads)), not a fixed large number"
        )
    launch = Launch(name, grid, block)
    REPORT["launches"].append({"kernel": name, "grid": list(grid), "block": list(block), "threads": total})
    trackers: list[Tracker] = []
    kargs: list[Any] = []
    for i, a in enumerate(args):
        if isinstance(a, DeviceNDArray):
            label = a._label
            tr = Tracker(label, "global")
            tr.init = a._init
            tr.stats = REPORT["arrays"].setdefault(label, REPORT_STATS("global"))
            trackers.append(tr)
            kargs.append(KernelArray(a._a, tr, label))
        elif isinstance(a, (bool, int, float, np.bool_, np.integer, np.floating)):
            kargs.append(a)
        elif isinstance(a, np.ndarray):
            raise KernelError(
                f"argument {i + 1} of `{name}` is a host NumPy array: pass device arrays "
                "(cuda.to_device / cuda.device_array) to kernels"
            )
        else:
            raise KernelError(
                f"argument {i + 1} of `{name}` is a {type(a).__name__}: kernels take device arrays and numbers"
            )
    fake = sim_api.FakeCUDAModule(grid, block, 0)
    STATE["launch"] = launch
    try:
        with sim_kernel._push_kernel_context(fake), sim_kernel.swapped_cuda_module(self.fn, fake):
            block_no = 0
            for bz in range(grid[2]):
                for by in range(grid[1]):
                    for bx in range(grid[0]):
                        run_block(launch, self.fn, kargs, block_no, (bx, by, bz))
                        block_no += 1
                        for tr in trackers:
                            flush_coalescing(tr)
                        for site in launch.shared_sites.values():
                            if site.array is not None:
                                flush_coalescing(site.array._tr)
    finally:
        STATE["launch"] = None
    for tr in trackers:
        flush_coalescing(tr)
    return None


# Kernel-side API: what FakeCUDAModule reads from threading.current_thread() comes from the scheduler.
_KERNEL_API: dict[str, Any] = {
    "threadIdx": property(lambda self: cur().threadIdx),
    "blockIdx": property(lambda self: cur().blockIdx),
    "laneid": property(lambda self: cur().lane),
    "shared": property(lambda self: SHARED_FACTORY[0]),
    "syncthreads": lambda self: barrier(),
    "syncthreads_count": lambda self, v: _sync_reduce(v, "count"),
    "syncthreads_and": lambda self, v: _sync_reduce(v, "and"),
    "syncthreads_or": lambda self, v: _sync_reduce(v, "or"),
}
for _attr, _value in _KERNEL_API.items():
    setattr(sim_api.FakeCUDAModule, _attr, _value)


def _no_grid_sync(self: Any) -> None:
    raise KernelError("grid-wide synchronisation is not supported here: split the work into two launches")


_SIM_CONFIGURE = sim_kernel.FakeCUDAKernel.__getitem__


class LaunchConfiguration:
    """What ``kernel[grid, block]`` returns: named and printed like Numba's own (the stock simulator
    returns the kernel itself, configured for good), and the configuration holds for this call only."""

    __slots__ = ("blockdim", "dispatcher", "griddim")

    def __init__(self, dispatcher: Any, config: Any) -> None:
        self.dispatcher = dispatcher
        cfg = config if isinstance(config, tuple) else (config,)
        self.griddim = cfg[0] if cfg else None
        self.blockdim = cfg[1] if len(cfg) > 1 else None

    def __call__(self, *args: Any) -> None:
        kernel = self.dispatcher
        if self.blockdim is None:
            raise KernelError(
                f"kernel `{kernel.fn.__name__}` configured with {self.griddim!r}: use kernel[blocks, threads](...)"
            )
        _SIM_CONFIGURE(kernel, (self.griddim, self.blockdim))
        try:
            launch_kernel(kernel, *args)
        finally:
            kernel.grid_dim = kernel.block_dim = None


LaunchConfiguration.__module__ = "numba.cuda.dispatcher"
LaunchConfiguration.__name__ = LaunchConfiguration.__qualname__ = "_LaunchConfiguration"

SHARED_FACTORY: list[SharedFactory] = [SharedFactory()]
for _cls, _attr, _value in ((sim_api.GridGroup, "sync", _no_grid_sync),
                            (sim_kernel.FakeCUDAKernel, "__call__", launch_kernel),
                            (sim_kernel.FakeCUDAKernel, "__getitem__", lambda self, cfg: LaunchConfiguration(self, cfg)),
                            (sim_kernel.FakeCUDAKernel, "__repr__", lambda self: f"CUDADispatcher({self.fn!r})")):  # fmt: skip
    setattr(_cls, _attr, _value)


def _atomic(fn: Any) -> Any:
    def wrapped(self: Any, *args: Any) -> Any:
        t = cur()
        t.atomic += 1
        try:
            return fn(self, *args)
        finally:
            t.atomic -= 1

    return wrapped


for _name in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
              "compare_and_swap", "cas"):  # fmt: skip
    setattr(sim_api.FakeCUDAAtomic, _name, _atomic(getattr(sim_api.FakeCUDAAtomic, _name)))


# -------------------------------------------------------------------------------------- host-side arrays
class DeviceNDArray:
    """A device allocation as the host sees it: shape and dtype, copies in, never a read of its contents.

    Named, printed and truth-tested like Numba's own ``DeviceNDArray`` (no custom repr: the default
    ``<numba.cuda.cudadrv.devicearray.DeviceNDArray object at 0x...>``, and ``bool()`` from ``len()``), so
    host code cannot tell this box from a GPU by looking at its arguments.
    """

    __slots__ = ("_a", "_init", "_label")

    def __init__(self, a: np.ndarray, label: str, garbage: bool = False) -> None:
        self._a = a
        self._label = label
        # Which elements anything has written, for initcheck on global memory; None: all of them.
        self._init: np.ndarray | None = np.zeros(a.size, bool) if garbage else None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._a.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(self._a.strides)

    @property
    def size(self) -> int:
        return int(self._a.size)

    @property
    def ndim(self) -> int:
        return int(self._a.ndim)

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def nbytes(self) -> int:
        return int(self._a.nbytes)

    @property
    def alloc_size(self) -> int:
        return int(self._a.nbytes)

    @property
    def stream(self) -> int:
        return 0

    def is_c_contiguous(self) -> bool:
        return bool(self._a.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._a.flags.f_contiguous)

    def __len__(self) -> int:
        return int(self._a.shape[0])

    def _denied(self, what: str) -> HostAccessError:
        return HostAccessError(
            f"{what} of device array `{self._label}` on the host: this task computes on the GPU, so the host "
            "function never reads device memory (no NumPy on the inputs, no copy_to_host); write a @cuda.jit "
            "kernel that computes the result into the output array and launch it as kernel[blocks, threads](...)"
        )

    def __getitem__(self, idx: Any) -> Any:
        raise self._denied("indexing")

    def __setitem__(self, idx: Any, value: Any) -> None:
        raise self._denied("writing an element")

    def __iter__(self) -> Any:
        raise self._denied("iterating")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._denied("converting to NumPy")

    def copy_to_host(self, *args: Any, **kwargs: Any) -> Any:
        raise self._denied("copy_to_host")

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        src = ary._a if isinstance(ary, DeviceNDArray) else np.asarray(ary)
        if src.shape != self._a.shape:
            raise ValueError(
                f"copy_to_device: shape {src.shape} does not match the device array's {self._a.shape}"
            )
        np.copyto(self._a, src, casting="same_kind")
        self._init = ary._init.copy() if isinstance(ary, DeviceNDArray) and ary._init is not None else None


DeviceNDArray.__module__ = "numba.cuda.cudadrv.devicearray"


_SCRATCH = [0]


def _garbage(shape: Any, dtype: Any) -> np.ndarray:
    a = np.empty(shape, dtype=_as_np_dtype(dtype))
    if a.dtype.kind == "f":
        a.fill(np.nan)
    elif a.dtype.kind in "iu":
        a.fill(GARBAGE_INT % (1 << (8 * a.itemsize - 1)))
    return a


def _scratch_label() -> str:
    _SCRATCH[0] += 1
    return f"scratch{_SCRATCH[0]}"


def device_array(
    shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C", stream: Any = 0
) -> DeviceNDArray:
    return DeviceNDArray(_garbage(shape, dtype), _scratch_label(), garbage=True)


def device_array_like(ary: Any, stream: Any = 0) -> DeviceNDArray:
    return DeviceNDArray(_garbage(ary.shape, ary.dtype), _scratch_label(), garbage=True)


def to_device(obj: Any, stream: Any = 0, copy: bool = True, to: Any = None) -> DeviceNDArray:
    src = obj._a if isinstance(obj, DeviceNDArray) else np.asarray(obj)
    if src.dtype.kind not in "biuf":
        raise TypeError(f"cuda.to_device got dtype {src.dtype}; copy numeric arrays")
    if to is not None:
        to.copy_to_device(src)
        return to
    out = DeviceNDArray(np.array(src, copy=True), _scratch_label())
    if isinstance(obj, DeviceNDArray) and obj._init is not None:
        out._init = obj._init.copy()  # a device-to-device copy carries the garbage along
    return out


def _unsupported(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise HostAccessError(
            f"cuda.{name} is host-visible memory; this task needs device memory (cuda.device_array / to_device)"
        )

    return fn


cuda.device_array = device_array
cuda.device_array_like = device_array_like
cuda.to_device = to_device
cuda.mapped_array = _unsupported("mapped_array")
cuda.managed_array = _unsupported("managed_array")


# ---------------------------------------------------------------------------------------------- the runner
def _load() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("solution", SOLUTION)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["solution"] = mod
    spec.loader.exec_module(mod)
    return mod


def _short_tb(exc: BaseException) -> str:
    if isinstance(exc, (KernelError, HostAccessError)):
        return str(exc)[:1200]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SOLUTION]
    where = f" (solution.py line {frames[-1].lineno})" if frames else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:1000] + where


def wait_for_go() -> None:
    while not os.path.exists(".go"):
        time.sleep(0.002)


# Events that no kernel task needs and that would reach the results pipe or the harness behind it: new
# processes, signals, sockets, memory maps, ctypes, and tracing (which would see the harness's frames).
_DENIED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
    "pty.spawn", "os.kill", "os.killpg", "signal.pthread_kill", "socket.__new__", "mmap.__new__",
    "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.remote_exec",
})  # fmt: skip
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NO_READ = ("/proc", "/dev", "/sys")


def guard_files(fd: int) -> None:
    """From here on the process may read files, never write one; refusals are reported on the pipe.

    Installed in the child before the solution is imported. An audit hook cannot be removed, and kernel
    code cannot catch the error (the policy refuses try/except), so a host function that writes the
    results file, or opens ``/proc/self/fd/N`` to reach the pipe itself, stops the run. The results
    would not count anyway (the relay signs only what reaches it as frames); this names the reason.
    """
    from relay import send

    sys.dont_write_bytecode = True  # -I ignores PYTHONDONTWRITEBYTECODE; importing must write nothing
    linecache.getline(SOLUTION, 1)  # cached now: shared-array names are read from it later
    state = {"told": False}

    def refuse(why: str) -> None:
        msg = f"your code tried {why}: kernel tasks read and write device arrays only, never files"
        if not state["told"]:
            state["told"] = True
            send(fd, b"V", msg.encode())
        raise PermissionError(msg)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (*tuple(args), None, None)[:3]
            if isinstance(path, int):
                refuse(f"to open file descriptor {path}")
            try:
                real = os.path.realpath(os.fsdecode(path))
            except (TypeError, ValueError):
                refuse("to open a file by an unusual path")
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing:
                refuse(f"to write the file {os.path.basename(real)!r}")
            if real.startswith(_NO_READ):
                refuse(f"to open {real!r}")
        elif event in _DENIED_EVENTS or event.startswith("ctypes."):
            refuse(f"{event}")

    sys.addaudithook(hook)


def child(spec: dict[str, Any], inputs: Any, fd: int) -> None:
    """The candidate's process: import the solution, run each case, send arrays and reports as frames."""
    global REPORT
    from relay import send

    def emit(d: dict[str, Any]) -> None:
        try:
            payload = json.dumps(d, allow_nan=False).encode()
        except (ValueError, TypeError, RecursionError) as e:
            payload = json.dumps(
                {"case": d.get("case"), "error": f"the result cannot be sent ({e})"[:800]}
            ).encode()
        send(fd, b"R", payload)

    arrays_in = {k: np.array(inputs[k]) for k in inputs.files}
    guard_files(fd)
    try:
        mod = _load()
    except BaseException as e:
        emit({"case": "__import__", "error": _short_tb(e)})
        return
    for case in spec["cases"]:
        REPORT = new_report()
        _SCRATCH[0] = 0
        kwargs: dict[str, Any] = dict(case.get("scalars", {}))
        originals: dict[str, np.ndarray] = {}
        outs: dict[str, DeviceNDArray] = {}
        for arg in case["inputs"]:
            a = np.array(arrays_in[f"{case['name']}__{arg}"])
            originals[arg] = a.copy()
            kwargs[arg] = DeviceNDArray(a, arg)
        for arg, (shape, dtype) in case["outputs"].items():
            outs[arg] = DeviceNDArray(_garbage(tuple(shape), dtype), arg, garbage=True)
            kwargs[arg] = outs[arg]
        start = time.perf_counter()
        record_out: dict[str, Any] = {"case": case["name"]}
        try:
            fn = getattr(mod, case["func"])
            fn(**kwargs)
        except BaseException as e:
            record_out["error"] = _short_tb(e)
        record_out["seconds"] = time.perf_counter() - start
        record_out["modified_inputs"] = [
            k for k, a in originals.items() if not np.array_equal(kwargs[k]._a, a, equal_nan=True)
        ]
        record_out["report"] = REPORT
        if "error" not in record_out:
            buf = io.BytesIO()
            np.savez(buf, **{f"r{j}": outs[k]._a for j, k in enumerate(case["outputs"])})  # type: ignore[arg-type]
            send(fd, b"A", buf.getvalue())
        emit(record_out)


def main() -> int:
    # The relay (the Python tasks' harness) is shipped beside this file; -I leaves this dir off sys.path.
    sys.path.insert(0, os.getcwd())
    from relay import run_relayed

    sys.path.pop(0)
    wait_for_go()
    with open("spec.json") as fh:
        spec = json.load(fh)
    inputs = np.load("inputs.npz", allow_pickle=False)
    # The candidate's code (and the instruments, which must share its process) run in a forked child whose
    # results reach the grader only as frames on a pipe; this parent signs each record with the per-run key,
    # which it reads and deletes before the child may start (see the relay's run_relayed).
    return run_relayed(lambda fd: child(spec, inputs, fd))


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
