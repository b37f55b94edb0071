"""Prefill while the candidate types or speaks: keep the model server's prompt cache one step behind them.

The follow-up prompt ends with the candidate's answer and a fixed suffix, so the prompt built from the answer
so far is a prefix of the prompt that will be sent on Send. Sending it with ``max_tokens=1`` makes a
llama.cpp/vLLM-style server (prefix caching) read it now; on Send only the last few words are new work.

Rules, per model port:
- latest wins: a session has at most one prefill in flight; newer text replaces a waiting one, so superseded
  partial prompts are never sent;
- never in a reply's way: nothing is sent while a real reply streams on the port, and at most
  ``max_in_flight`` prefills run at once across all sessions (a per-port budget);
- never twice: a prompt the session's last prefill sent already is not sent again (typing inside a word does not
  change the prompt, which is cut at the last whole word). Each prefill is a live request, which pauses the
  background server, so a repeat would cost background work too;
- failures are ignored (it is an optimisation) and counted for the benchmark.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage

from interviewer.llm.speculate import Signature, signature

log = logging.getLogger(__name__)

Send = Callable[[Sequence[BaseMessage], str], None]  # (prompt, session key)
_RETRY_S = 0.25  # how often a waiting prefill looks again for a free budget and no streaming reply
_GIVE_UP_S = 5.0  # after this long without a chance, the text is dropped
_REMEMBERED = 1024  # sessions whose last prompt sent is remembered (not sent again)


@dataclass
class PrefillStats:
    """What happened to offered prefills (for tests and the benchmark)."""

    offered: int = 0
    sent: int = 0
    superseded: int = 0
    skipped_busy: int = 0
    repeated: int = 0  # the prompt the session's last prefill sent: the server holds it already
    failed: int = 0
    sent_prompts: list[str] = field(default_factory=list)  # the last human message of each one sent


class Prefiller:
    """Debounced, latest-wins, budgeted prompt prefill for one model port."""

    def __init__(
        self, send: Send, *, busy: Callable[[], bool] = lambda: False, max_in_flight: int = 1
    ) -> None:
        self._send = send
        self._busy = busy
        self._budget = threading.BoundedSemaphore(max_in_flight)
        self._lock = threading.Lock()
        self._pending: dict[str, Sequence[BaseMessage]] = {}
        self._running: set[str] = set()
        self._sent: OrderedDict[str, Signature] = OrderedDict()  # session key -> its last prompt sent
        self._idle = threading.Condition(self._lock)
        self.stats = PrefillStats()

    def offer(self, key: str, messages: Sequence[BaseMessage]) -> None:
        """Prefill ``messages`` for session ``key`` soon; returns at once."""
        with self._lock:
            self.stats.offered += 1
            if key in self._pending:
                self.stats.superseded += 1
            self._pending[key] = messages
            if key in self._running:
                return  # the worker for this session picks up the newest text when its request ends
            self._running.add(key)
        threading.Thread(target=self._work, args=(key,), name=f"prefill-{key[:8]}", daemon=True).start()

    def drop(self, key: str) -> bool:
        """Forget the text waiting for ``key`` (a speculative reply reads that prompt anyway); True if any."""
        with self._lock:
            if self._pending.pop(key, None) is None:
                return False
            self.stats.superseded += 1
            return True

    def _work(self, key: str) -> None:
        waited = 0.0
        while True:
            with self._lock:
                messages = self._pending.pop(key, None)
                if messages is None:
                    self._running.discard(key)
                    self._idle.notify_all()
                    return
                sig = signature(messages)
                if self._sent.get(key) == sig:
                    self.stats.repeated += 1
                    continue
            if self._busy() or not self._budget.acquire(timeout=_RETRY_S):
                # A reply is streaming, or other sessions' prefills use the budget: wait a little, keeping
                # this text unless newer text arrived meanwhile; give up after a while (newer text may come).
                waited += _RETRY_S
                with self._lock:
                    if waited >= _GIVE_UP_S:
                        self.stats.skipped_busy += 1
                        waited = 0.0
                    elif key not in self._pending:
                        self._pending[key] = messages
                    else:
                        self.stats.superseded += 1
                if self._busy():
                    threading.Event().wait(_RETRY_S)
                continue
            waited = 0.0
            try:
                self._send(messages, key)
                with self._lock:
                    self.stats.sent += 1
                    self._sent[key] = sig
                    self._sent.move_to_end(key)
                    while len(self._sent) > _REMEMBERED:
                        self._sent.popitem(last=False)
                    last = messages[-1].content if messages else ""
                    self.stats.sent_prompts.append(last if isinstance(last, str) else "")
            except Exception as e:  # an optimisation: never let it surface
                with self._lock:
                    self.stats.failed += 1
                log.debug("prefill failed: %s", e)
            finally:
                self._budget.release()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no prefill is waiting or running (tests, benchmarks)."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._running and not self._pending, timeout)
