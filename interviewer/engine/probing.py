"""Reading the answer so far with the rubric's reading probes, in the background, while the candidate answers.

Typing and speaking give the reader time: each time the text so far ends a sentence, it is read (the answer's
own key points, to find a wrong claim worth challenging, and the next why level's, to find a target already
answered). When the candidate sends, the listener uses a reading only if it is ready and covers the answer as
sent, or nearly all of it (:data:`NEARLY`); it never waits for one. With no model, a slow reader or an error,
there is simply no reading and the listener decides as it does without one.

Only the probe kinds the reading model is trusted on are read (``ReaderTrust.acts_on`` in
:mod:`interviewer.scoring.stages`): a kind the listener would not heed costs no background request, and a
question with no probe of a trusted kind is not read at all. The prompt's shared prefix (the question and the
fenced answer) does not depend on which probes follow it, so a prompt-caching server still reads a growing answer
only from where it stopped.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from interviewer.content import Question
from interviewer.content.models import Probe
from interviewer.listen import Findings

log = logging.getLogger(__name__)

NEARLY = 0.9  # a reading of at least this share of the answer's words (its start) stands for the whole answer
_KEPT = 8  # readings kept per interview (the latest few sentences' worth)

# which probe kinds the listener heeds (ReaderTrust.acts_on); None: every kind
ActsOn = Callable[[str], bool]
# (model port, question, level, text, cancel, the probes to ask) -> Readings.to_json() per part
ReadFn = Callable[[Any, Question, int, str, threading.Event, Sequence[Probe]], dict[str, Any]]


def parts(level: int) -> tuple[str, str | None]:
    """The probes that read an answer given at ``level``: its own part's, and the next why level's."""
    own = "main" if level == 0 else f"why{level}"
    return own, (f"why{level + 1}" if level + 1 <= 2 else None)


def probes_to_read(q: Question, level: int, acts_on: ActsOn | None = None) -> list[Probe]:
    """The probes that read an answer to ``q`` given at ``level`` (:func:`parts`), of the kinds ``acts_on``
    lets act (None: every kind)."""
    from interviewer.scoring.reader import probes_for

    own, ahead = parts(level)
    probes = probes_for(q, own) + (probes_for(q, ahead) if ahead else [])
    return [p for p in probes if acts_on is None or acts_on(p.kind)]


def read_with_probes(
    port: Any,
    q: Question,
    level: int,
    text: str,
    cancel: threading.Event,
    probes: Sequence[Probe] | None = None,
) -> dict[str, Any]:
    """Read ``text`` with ``probes`` (default: its own part's and the next why level's, every kind), in one
    request over one prompt.

    With no probe, nothing is asked and the reading is empty. The key points' findings are those of the
    probes asked.
    """
    from interviewer.scoring.reader import answer_key, read_answer

    own, _ = parts(level)
    if probes is None:
        probes = probes_to_read(q, level)
    if not probes:
        return {}
    # One fence for every reading of this answer, whichever probes follow it: the server reads only the words
    # added since the last one.
    key = answer_key(q.question, own)
    return {own: read_answer(port, q.question, text, probes, cancel=cancel, fence_key=key).to_json()}


def _words(text: str) -> list[str]:
    return text.split()


class ProbeAhead:
    """One interview's background reader: the latest text offered is read next, on one worker thread."""

    def __init__(
        self,
        port: Any | None,
        read: ReadFn = read_with_probes,
        acts_on: ActsOn | None = None,
    ) -> None:
        self.port = port
        self._read = read
        # which probe kinds are read (the reading model's measured trust): the listener heeds no other kind
        self._acts_on = acts_on
        self._lock = threading.Lock()
        self._next: tuple[Question, int, str, list[Probe]] | None = None
        self._busy: tuple[str, int, str] | None = None
        self._worker: threading.Thread | None = None
        self._running = False  # set and cleared under the lock, so an offer never lands on a worker leaving
        self._cancel = threading.Event()
        self._done: OrderedDict[tuple[str, int, str], Findings] = OrderedDict()
        self.failures = 0

    def offer(self, q: Question, level: int, text: str) -> bool:
        """Read ``text`` (answering ``q`` at ``level``) when the worker is free; the latest offer wins.
        False when there is nothing to do (no model, no probe of a trusted kind, read already or being read)."""
        if self.port is None or level > 2 or not text.strip():
            return False
        probes = probes_to_read(q, level, self._acts_on)
        if not probes:
            return False
        key = (q.id, level, text)
        with self._lock:
            if key in self._done or key == self._busy:
                return False
            self._next = (q, level, text, probes)
            if not self._running:
                self._running = True
                self._worker = threading.Thread(target=self._run, name="probe-reading", daemon=True)
                self._worker.start()
        return True

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            with self._lock:
                self._running = False

    def _loop(self) -> None:
        while not self._cancel.is_set():
            with self._lock:
                job, self._next = self._next, None
                if job is None:
                    self._busy = None
                    self._running = False
                    return
                q, level, text, probes = job
                self._busy = (q.id, level, text)
            try:
                got = self._read(self.port, q, level, text, self._cancel, probes)
            except Exception as e:  # background work: a failed reading is no reading
                self.failures += 1
                log.debug("probe reading failed: %s", e)
                continue
            findings = Findings.from_json(text, got)
            with self._lock:
                self._done[(q.id, level, text)] = findings
                while len(self._done) > _KEPT:
                    self._done.popitem(last=False)

    def ready(self, q: Question, level: int, text: str) -> Findings | None:
        """The reading of ``text`` if one is ready, else of the longest start of it read so far that holds
        :data:`NEARLY` all its words; None otherwise. Never waits."""
        words = _words(text)
        if not words:
            return None
        best: Findings | None = None
        with self._lock:
            for (qid, lvl, read), findings in self._done.items():
                if qid != q.id or lvl != level:
                    continue
                have = _words(read)
                covers = have == words[: len(have)] and len(have) >= NEARLY * len(words)
                if covers and (best is None or len(_words(best.text)) < len(have)):
                    best = findings
        return best

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is being read (tests and benchmarks; the live turn never calls it)."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
            return not worker.is_alive()
        return True

    def close(self) -> None:
        self._cancel.set()
