"""Child process that runs xllamacpp's OpenAI-compatible server; started by :class:`EmbeddedServer`.

Protocol: once the model is loaded it prints one JSON line ``{"address": ..., "model_id": ...}`` on stdout,
then serves until its stdin reaches EOF (the parent closed it or died) or it gets SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to kill us when the parent goes, so no orphan keeps ~2 GB of weights in RAM."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        # SIGKILL, not SIGTERM: the server's native threads must not get a chance to keep the process alive.
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            print(f"prctl(PR_SET_PDEATHSIG) failed: errno {ctypes.get_errno()}", file=sys.stderr)
    # The parent may have died before prctl took effect: then we were re-parented already.
    if os.getppid() != parent_pid:
        os._exit(0)


def _run_idle() -> None:
    """Ask the OS to run this process only when nothing else wants the CPU (before any thread is created).

    Linux applies the policy per thread and every thread inherits its creator's, so setting it here, before
    xllamacpp starts its compute and HTTP threads, covers them all. Elsewhere the lowest nice value is the
    nearest thing.
    """
    with contextlib.suppress(OSError):
        os.nice(19)  # also where SCHED_IDLE exists: it is what ps and top show
    idle = getattr(os, "SCHED_IDLE", None)
    if idle is not None and hasattr(os, "sched_setscheduler"):
        try:
            os.sched_setscheduler(0, idle, os.sched_param(0))
        except OSError as e:
            print(f"sched_setscheduler(SCHED_IDLE) failed: {e}", file=sys.stderr)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="path of the GGUF file (already verified by the parent)")
    ap.add_argument("--alias", required=True, help="the model id /v1/models reports")
    ap.add_argument("--ctx", type=int, required=True, help="total context, split evenly across the slots")
    ap.add_argument("--parallel", type=int, default=4, help="concurrent conversations (slots)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: the OS picks a free port")
    ap.add_argument("--parent-pid", type=int, default=None)
    ap.add_argument("--batch", type=int, default=0, help="prompt tokens per step (0: llama.cpp's default)")
    ap.add_argument("--cache-ram-mib", type=int, default=1024, help="host RAM for idle slots' prompts")
    ap.add_argument("--idle", action="store_true", help="run at the OS's idle priority (background work)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.parent_pid is not None:
        _die_with_parent(args.parent_pid)
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.idle:
        _run_idle()

    import xllamacpp as xlc  # imported late: it is heavy, and --help should not need it

    p = xlc.CommonParams()
    p.model.path = args.model
    p.model_alias = {args.alias}
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    if args.batch > 0:
        # The server reads a prompt in steps of this many tokens and starts another request's work only
        # between steps: a smaller step lets a request that arrives mid-prompt in sooner.
        p.n_batch = p.n_ubatch = args.batch
    p.offline = True  # never reach for Hugging Face or any network
    p.ui = False
    # Each streaming reply holds an HTTP thread for its whole length: one per slot, plus two so /health and
    # /v1/models still answer while every slot streams. (Explicit, so it does not depend on the core count.)
    p.n_threads_http = args.parallel + 2
    # The app calls the server from Python, never from a browser page: send no CORS allowance, so a web page
    # the user happens to visit cannot read replies from this loopback port.
    p.cors_origins = ""
    p.cors_origins_explicit = True
    # Prompt caching is the point: a follow-up shares its long prefix (instructions, rubric, retrieved
    # material) with the previous turn, and the server reuses that slot's KV cache instead of recomputing it.
    # cache_prompt is the server-side default for requests; cache_ram_mib keeps idle slots' prefixes in host
    # RAM so another tab's request does not throw them away. Both are llama.cpp's defaults; set them
    # explicitly so a library default change cannot silently disable reuse.
    p.cache_prompt = True
    p.cache_idle_slots = True
    p.cache_ram_mib = args.cache_ram_mib
    try:
        server = xlc.Server(p)
    except Exception as e:
        print(f"the server failed to start: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    print(json.dumps({"address": server.listening_address, "model_id": args.alias}), flush=True)
    # The parent stops reading stdout after that line; anything native code printed later would fill the
    # pipe and block the server, so from here on stdout goes to the log with stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        sys.stdin.buffer.read()  # blocks until the parent closes the pipe or dies
    finally:
        # Skip interpreter teardown: native server threads can make a normal exit slow.
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
