"""Working ahead of the candidate: prompt prefill while they type, speculation while they pause speaking.

Optimisations only: nothing here changes the session (no events), and no fault here raises an interview
error. The model port's powers come through the typed capabilities of :class:`~interviewer.engine.ports.ModelAhead`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable

from langchain_core.messages import BaseMessage, HumanMessage

from interviewer.content import Question
from interviewer.engine.events import SessionLog
from interviewer.engine.followups import MODEL_MOVES, FollowupWriter, defang, followup_read
from interviewer.engine.ports import ModelAhead, Ports
from interviewer.engine.reading import AnswerReader, Heard
from interviewer.errors import InputError, InterviewerError
from interviewer.text import clean

log = logging.getLogger(__name__)

# The text typed so far ends a sentence: where prefill reads the answer ahead (a candidate ends the answer with
# its last full stop and presses Send, so that reading is usually the one Send needs).
_SENTENCE_END = re.compile(r"[.?!][\"')\]]*\s*$")


# A candidate who stops typing this long may be done: their text so far is read ahead even mid-sentence. Longer
# than the gaps between words of a typist, shorter than the move from the last word to the Send button.
TYPING_PAUSE_S = 0.8


class TypingPauses:
    """Runs a session's latest offered call once its typing has paused for ``after`` seconds.

    Each offer for a session replaces the one waiting (a keystroke restarts the wait); :meth:`cancel` drops it
    (the answer was sent). One thread serves every session, one call at a time, in the order they fall due;
    a failing call is logged, never raised: reading ahead is an optimisation.
    """

    def __init__(self, after: float = TYPING_PAUSE_S) -> None:
        self.after = after
        self._due: dict[str, tuple[float, Callable[[], object]]] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def offer(self, key: str, call: Callable[[], object]) -> None:
        with self._cond:
            if self._closed:
                return
            self._due[key] = (time.monotonic() + self.after, call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="typing-pauses", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def cancel(self, key: str) -> None:
        with self._cond:
            self._due.pop(key, None)

    def waiting(self) -> int:
        """How many sessions have a call waiting for their pause."""
        with self._cond:
            return len(self._due)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._due.clear()
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                if not self._due:
                    self._cond.wait()
                    continue
                key, (when, call) = min(self._due.items(), key=lambda kv: kv[1][0])
                wait = when - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)  # an offer or a cancel may change what falls due first
                    continue
                del self._due[key]
            try:
                call()
            except Exception as e:
                log.debug("reading at a typing pause failed: %s", e)


class WorkAhead:
    """Prefill and speculation for one interview."""

    def __init__(
        self, ports: Ports, log: SessionLog, reading: AnswerReader, followups: FollowupWriter
    ) -> None:
        self.ports = ports
        self.log = log
        self.reading = reading
        self.followups = followups
        self.can = ModelAhead.of(ports.model)
        # (question id, level answered, level its follow-up will ask) from the last reading of the text so far:
        # the level prefill names in the prompt, so a deepen (which skips a level) keeps its cached prompt.
        self._ahead: tuple[str, int, int] | None = None

    def _open_question(self) -> Question | None:
        state = self.log.state
        if state.qid is None or state.awaiting != "candidate":
            return None
        return self.ports.bank.get(state.qid)

    def prefill_messages(self, partial: str) -> list[BaseMessage] | None:
        """The prompt of the follow-up that will answer the text typed or spoken so far, up to its last word.

        It is a prefix of the prompt the follow-up writer builds once the full answer is sent (the answer is
        the last thing before a fixed suffix, and the text is cut at a word boundary so the last token does
        not change), so a prefix-caching server that reads it now only reads the rest on Send. None when no
        follow-up comes next (the last why-level, or no open question).
        """
        q = self._open_question()
        if q is None or self.log.state.level >= 2:
            return None
        text = clean(partial)
        cut = max(text.rfind(" "), text.rfind("\n"))
        if cut <= 0:
            return None
        system, human = self.followups.messages(q, self._level_ahead(q), upcoming=True)
        assert isinstance(human.content, str)
        return [system, HumanMessage(content=human.content + defang(text[:cut]))]

    def _level_ahead(self, q: Question) -> int:
        """The level the follow-up to the text so far will ask: the next one, unless the last reading of the
        text so far skips it (a deepen: the answer already covers the next level's target)."""
        level = self.log.state.level
        if self._ahead is not None and self._ahead[:2] == (q.id, level):
            return self._ahead[2]
        return level + 1

    def read_ahead(self, partial: str, *, spoken: bool = False) -> tuple[str, Heard | None] | None:
        """Read the text so far as Send would read it (the listener memoises the reading, so Send on the same
        text reads nothing again) and keep the level its follow-up will ask for the prefills that follow.

        None when no question waits for an answer; else the answer as validated and what the listener made of
        it. Raises :class:`InputError` for text that could not be sent.
        """
        q = self._open_question()
        if q is None:
            return None
        level = self.log.state.level
        answer = self.reading.validate(partial)
        if self.ports.listener is not None:
            self.reading.probing.offer(q, level, answer)  # in the background: ready by Send, or not used
        heard = self.reading.listen(q, level, answer, spoken=spoken)
        if heard is not None and heard[1].move in MODEL_MOVES:
            self._ahead = (q.id, level, heard[1].level)
        return answer, heard

    def prefill(self, partial: str, *, paused: bool = False) -> bool:
        """Offer the prompt so far to the model port's prefill queue; False when there is nothing to send.

        At the end of a sentence, or when the candidate has stopped typing (``paused``: an answer sent without
        its last full stop), the text so far is read first (:meth:`read_ahead`: 1 ms to about 0.3 s, by
        length), so the prompt names the level its follow-up will really ask: a deepen's prompt differs from
        the next level's before the answer, and a wrong guess would make Send read the whole answer again.
        """
        port = self.can.prefill
        if port is None:
            return False
        if paused and _SENTENCE_END.search(partial):
            return False  # read, and its prompt sent, when the sentence ended
        if paused or _SENTENCE_END.search(partial):
            with contextlib.suppress(InputError):
                self.read_ahead(partial)
        messages = self.prefill_messages(partial)
        if messages is None:
            return False
        port.prefill(self.log.session_id, messages)
        return True

    def speculate(self, partial: str, *, spoken: bool = True) -> bool:
        """Start the follow-up to ``partial`` now, as if the candidate had just submitted it.

        Called at each pause of a spoken answer: the transcript is then usually the final one, so when the
        turn ends on it the model port hands out the reply it started here instead of sending a new request.
        ``partial`` is read as Send reads it (the listener remembers the reading); when the move is a
        model-written why, the prompt the follow-up writer will send is built and handed to the port's
        ``speculate`` (which prefills it when it cannot start it now); otherwise (authored text, no listener,
        a port that does not speculate) the prompt so far is prefilled. True when a speculation runs.
        """
        try:
            read = self.read_ahead(partial, spoken=spoken)
            q = self._open_question()
            if read is None or q is None:
                return False
            answer, heard = read
            port = self.can.speculate
            if heard is not None and port is not None and heard[1].move in MODEL_MOVES:
                messages = self.followups.messages(q, heard[1].level, answer=answer)
                return bool(port.speculate(self.log.session_id, messages, until=followup_read))
            self.cancel_speculation()  # whatever was generated ahead answers other text
            self.prefill(partial + " ")
        except InputError:
            self.cancel_speculation()  # nothing that could be sent: nothing to answer ahead
        except InterviewerError as e:  # an optimisation only (a bug still raises, for the tests to see)
            log.debug("speculation failed: %s", e)
        return False

    def cancel_speculation(self) -> None:
        """Drop the follow-up generated ahead (the candidate speaks again): the server stops generating it."""
        port = self.can.speculate
        if port is not None:
            try:
                port.cancel_speculation(self.log.session_id)
            except Exception as e:
                log.debug("cancelling the speculation failed: %s", e)

    def prefetch_next_followup(self, q: Question, level: int) -> None:
        """While the candidate answers, let the server cache the next follow-up's prompt (all but the answer)."""
        prefill, prefetch = self.can.prefill, self.can.prefetch  # prefill: the session's queue, latest wins
        if (prefill is None and prefetch is None) or level >= 2:
            return
        try:
            messages = self.followups.messages(q, level + 1, upcoming=True)
            if prefill is not None:
                prefill.prefill(self.log.session_id, messages)
            elif prefetch is not None:
                prefetch.prefetch(messages)
        except Exception as e:  # an optimisation only: never let it disturb the interview
            log.debug("prefetch failed: %s", e)
