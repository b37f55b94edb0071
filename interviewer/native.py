"""Native model calls (torch, CTranslate2, onnxruntime) kept clear of the interpreter's shutdown.

At exit CPython ends every daemon thread that tries to take the GIL back, by unwinding it with
``pthread_exit``. A worker thread coming back from torch, CTranslate2 or onnxruntime at that moment unwinds
through C++ frames that must not be unwound, and the whole process aborts ("terminate called without an active
exception", exit status 134) after a clean run: the app on Ctrl-C, a test run after every test passed. NumPy's
loops release the GIL too, so the guarded unit is the whole step a worker thread runs (embedding with its
normalisation, scoring an answer, reading a microphone chunk), not only the model call inside it: each runs
inside :func:`native_call`. At exit, :func:`drain` (an atexit hook) waits a bounded time for the steps in
flight to finish and parks every worker thread that would start a new one: a parked thread waits on a lock
without the GIL, and the process ends around it.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

DRAIN_SECONDS = 30.0  # the longest call in flight at exit that is waited for (a long Whisper window)

_cv = threading.Condition()
_in_flight = 0
_closing = False
_local = threading.local()  # this thread's depth of nested native calls


@contextmanager
def native_call() -> Iterator[None]:
    """Run native work (a model call, or a whole scoring or transcribing step that makes several); after
    :func:`drain` began, a worker thread outside any native call waits here for the process to end."""
    global _in_flight
    depth = getattr(_local, "depth", 0)
    with _cv:
        if _closing and depth == 0 and threading.current_thread() is not threading.main_thread():
            _cv.wait_for(lambda: False)  # parked for good: the interpreter is finalizing
        _in_flight += 1
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
        with _cv:
            _in_flight -= 1
            _cv.notify_all()


def in_flight() -> int:
    """Native calls running now."""
    with _cv:
        return _in_flight


def drain(timeout: float = DRAIN_SECONDS) -> bool:
    """Stop new native calls on worker threads and wait for those in flight (True when none is left)."""
    global _closing
    with _cv:
        _closing = True
        return _cv.wait_for(lambda: _in_flight == 0, timeout)


atexit.register(drain)
