"""Speculative follow-ups: start the interviewer's reply at a pause, before the turn is known to end.

A spoken answer's last phrase is transcribed at its pause (250 ms of silence), so the transcript is usually
final some 450 ms before the end of the turn is detected (700 ms of silence). At each pause the engine builds
the exact follow-up prompt that will be sent if the turn ends there, and the model port starts generating it
in the background (:class:`Speculation`); the reply is buffered. When the turn really ends on that transcript,
the port's ``stream`` hands out the buffered chunks and then the rest as they come, instead of sending a new
request. When the candidate speaks again, or the final prompt differs, the speculation is cancelled: its HTTP
stream is closed at the next chunk the server sends, so the server stops generating.

Only the exact prompt is ever used (compared message by message, role and text): a speculation never changes
what the candidate is asked, only when it is ready.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

log = logging.getLogger(__name__)

Signature = tuple[tuple[str, str], ...]
Opener = Callable[[Sequence[BaseMessage], str], Iterator[str]]  # (prompt, session key) -> text chunks


def signature(messages: Sequence[BaseMessage]) -> Signature:
    """What makes two prompts the same request: each message's role and text."""
    return tuple((m.type, m.content if isinstance(m.content, str) else repr(m.content)) for m in messages)


@dataclass
class SpeculationStats:
    """What happened to speculations on one port (for tests and the benchmark)."""

    started: int = 0
    used: int = 0  # a real reply attached to it
    cancelled: int = 0  # dropped before use: the candidate spoke again, newer text, or a prefill
    discarded: int = 0  # the real reply's prompt differed: it was sent afresh
    skipped: int = 0  # not started: a reply was streaming on the port, or this prompt was already answered
    failed: int = 0  # used, but it had failed before its first chunk: the reply was requested afresh


class Speculation:
    """One reply generated ahead on its own thread; its chunks are kept until a reader follows them."""

    def __init__(
        self,
        key: str,
        messages: Sequence[BaseMessage],
        open_stream: Opener,
        *,
        until: Callable[[str], bool] | None = None,
    ) -> None:
        self.key = key
        self._until = until  # the reply so far -> is that all the reader takes? (then the stream is closed)
        self.signature = signature(messages)
        self.chunks: list[str] = []
        self.error: Exception | None = None
        self.done = False  # the stream ended (finished, failed or closed after a cancel)
        self._cancelled = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(
            target=self._run, args=(list(messages), open_stream), name=f"speculate-{key[:8]}", daemon=True
        )

    def start(self) -> Speculation:
        self._thread.start()
        return self

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop reading: the stream is closed at its next chunk (closing the connection stops the server)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the background stream to end; True when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def follow(self) -> Iterator[str]:
        """The chunks so far, then each new one as it arrives, until the stream ends."""
        given = 0
        while True:
            with self._cond:
                while len(self.chunks) == given and not self.done:
                    self._cond.wait()
                new, finished = self.chunks[given:], self.done  # nothing is added once done
            for text in new:
                given += 1
                yield text
            if finished:
                return

    def _run(self, messages: list[BaseMessage], open_stream: Opener) -> None:
        stream: Iterator[str] | None = None
        try:
            if self._cancelled:
                return
            stream = open_stream(messages, self.key)
            reply = ""
            for text in stream:
                with self._cond:
                    if self._cancelled:
                        break
                    self.chunks.append(text)
                    self._cond.notify_all()
                reply += text
                if self._until is not None and self._until(reply):
                    break  # all the reader will take: generating more is wasted
        except Exception as e:  # kept for the reader: it asks afresh, or reports it like its own request
            log.debug("speculative reply failed: %s", e)
            with self._cond:
                self.error = e
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()  # closes the HTTP response: the server stops generating
            with self._cond:
                self.done = True
                self._cond.notify_all()
