"""Truth judging off the candidate's critical path: one worker judges a question while the next is on screen.

The runner only runs jobs; what a job's result means (an event in the session log, a rescored question) is
the caller's ``done`` callback. A job that is cancelled, fails, or dies with the process leaves nothing behind,
so whoever stored the question's answers judges it again on resume. The queue is bounded: when it is full a
submission is refused (the caller judges that question later, e.g. before the report) rather than queued
without limit on a small machine.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

from interviewer.llm.client import BACKGROUND_KEY
from interviewer.scoring.judge import TruthJudgement, judge_truth
from interviewer.scoring.models import KeyPointVerdict

log = logging.getLogger(__name__)

JudgeFn = Callable[[str, str, Sequence[str]], TruthJudgement]  # (question, answer, key points)
Done = Callable[[list[KeyPointVerdict]], None]


class BackgroundJudge:
    """Judges answers with ``judge`` (default: :func:`judge_truth` on ``model``) on ``workers`` threads.

    One worker by default: a local server answers one request at a time best, and its prompt cache keeps one
    answer's prefix while that answer's key points are judged in a row.
    """

    def __init__(
        self,
        model: Any = None,
        *,
        judge: JudgeFn | None = None,
        workers: int = 1,
        max_pending: int = 32,
    ) -> None:
        if judge is None:
            if model is None:
                raise ValueError("give a chat model or a judge function")

            def judge(question: str, answer: str, key_points: Sequence[str]) -> TruthJudgement:
                pick = getattr(model, "slot", None)  # a ChatPort: ask for the judge's own slot
                slot = pick(BACKGROUND_KEY) if callable(pick) else None
                if slot is None:
                    return judge_truth(model, question, answer, key_points)
                return judge_truth(model, question, answer, key_points, extra_body={"id_slot": slot})

        self._judge = judge
        self._workers = max(1, workers)
        self._max_pending = max(1, max_pending)
        self._pool: ThreadPoolExecutor | None = None  # created on first use: constructors do no work
        self._futures: dict[str, Future[None]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._dropping = False  # closed with cancel: results that arrive now are not stored
        self.failures: dict[str, str] = {}  # key -> why the last attempt failed (judged again on resume)

    def submit(
        self, key: str, question: str, answer: str, key_points: Sequence[str], done: Done
    ) -> Future[None] | None:
        """Queue one answer; ``done(verdicts)`` runs on the worker once all key points are judged.

        Returns the job's future, the one already queued for ``key``, or None when the queue is full or the
        runner is closed.
        """
        with self._lock:
            running = self._futures.get(key)
            if running is not None and not running.done():
                return running
            if self._closed or self.pending_count_locked() >= self._max_pending:
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="truth-judge")
            fut = self._pool.submit(self._run, key, question, answer, list(key_points), done)
            self._futures[key] = fut
            return fut

    def _run(self, key: str, question: str, answer: str, key_points: list[str], done: Done) -> None:
        try:
            judgement = self._judge(question, answer, key_points)
            if self._dropping:
                return  # cancelled while the model was answering: store nothing, resume judges it again
            done(judgement.verdicts)
            self.failures.pop(key, None)
        except Exception as e:  # the interview goes on with the offline score; resume tries again
            self.failures[key] = f"{type(e).__name__}: {e}"
            log.warning("truth judge failed for %s: %s", key, e)

    def pending_count_locked(self) -> int:
        return sum(1 for f in self._futures.values() if not f.done())

    def pending(self, keys: Iterable[str] | None = None) -> list[str]:
        """Keys still queued or running (among ``keys`` when given)."""
        with self._lock:
            wanted = self._futures.keys() if keys is None else [k for k in keys if k in self._futures]
            return [k for k in wanted if not self._futures[k].done()]

    def wait(
        self,
        keys: Iterable[str] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> bool:
        """Block until the jobs for ``keys`` (default: all) finish; ``progress(done, total)`` as they do.

        Returns True when none is left pending (False on timeout).
        """
        with self._lock:
            names = list(self._futures) if keys is None else [k for k in keys if k in self._futures]
            futures = [self._futures[k] for k in names]
        total = len(futures)
        deadline = None if timeout is None else time.monotonic() + timeout
        left = set(futures)
        while True:
            if progress:
                progress(total - len(left), total)
            if not left:
                return True
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                return False
            finished, _ = wait_futures(left, timeout=remaining, return_when="FIRST_COMPLETED")
            if not finished:
                return False
            left -= finished

    def close(self, *, cancel: bool = True) -> None:
        """Refuse new work; with ``cancel``, drop queued jobs and the running one's result (whoever resumes
        the session judges them again), else wait for them to finish."""
        with self._lock:
            self._closed = True
            self._dropping = self._dropping or cancel
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=not cancel, cancel_futures=cancel)
