"""Native model calls on worker threads do not abort the process at exit (interviewer/native.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from .conftest import REPO

# A worker thread embedding in a loop while the main thread exits: before native.py this aborted every time
# ("terminate called without an active exception", exit status 134), as test runs and the app on Ctrl-C did.
EXIT_WHILE_EMBEDDING = textwrap.dedent(
    """
    import threading, time
    from interviewer.embeddings import MiniLMEmbedder

    e = MiniLMEmbedder()
    e.load()
    calls = []

    def loop():
        while True:
            e.embed(["a sentence about memory bandwidth and batching " * 8] * 16)
            calls.append(1)

    threading.Thread(target=loop, daemon=True).start()
    while not calls:
        time.sleep(0.05)
    print("main exits", flush=True)
    """
)


def test_the_process_exits_cleanly_while_a_worker_thread_embeds() -> None:
    for _ in range(2):
        run = subprocess.run(
            [sys.executable, "-c", EXIT_WHILE_EMBEDDING],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "main exits" in run.stdout, run.stderr[-2000:]
        assert run.returncode == 0 and "terminate called" not in run.stderr, run.stderr[-2000:]


def test_drain_waits_for_calls_in_flight_and_parks_new_ones() -> None:
    """In a child process (drain is for good): a call in flight finishes; one started after drain never runs."""
    script = textwrap.dedent(
        """
        import threading, time
        from interviewer import native

        log = []
        started = threading.Event()

        def slow():
            with native.native_call():
                started.set()
                time.sleep(0.5)
                log.append("slow done")

        def late():
            time.sleep(0.2)  # drain has begun by now
            with native.native_call():
                log.append("late ran")

        threading.Thread(target=slow, daemon=True).start()
        started.wait()
        threading.Thread(target=late, daemon=True).start()
        t = time.perf_counter()
        assert native.drain(timeout=10)
        print("drained", round(time.perf_counter() - t, 2), log, native.in_flight())
        time.sleep(0.3)
        print("after", log)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    drained, after = run.stdout.strip().splitlines()
    assert drained.startswith("drained") and "['slow done'] 0" in drained
    assert float(drained.split()[1]) >= 0.2  # it waited for the slow call
    assert after == "after ['slow done']"  # the call started after drain was parked, never run


def test_nested_and_main_thread_calls_are_counted() -> None:
    from interviewer import native

    assert native.in_flight() == 0
    seen: list[int] = []
    with native.native_call(), native.native_call():
        seen.append(native.in_flight())
    done = threading.Event()

    def worker() -> None:
        with native.native_call():
            seen.append(native.in_flight())
            time.sleep(0.05)
        done.set()

    threading.Thread(target=worker).start()
    assert done.wait(5)
    assert seen == [2, 1] and native.in_flight() == 0
