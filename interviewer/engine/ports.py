"""What the engine talks to: the model, retrieval, the scorer, the truth judge, the store and the clock.

The model port's optional powers (working ahead of the candidate: prefill, speculation, prefetch) are typed
capability protocols, checked once per interview in :class:`ModelAhead`, never probed attribute by attribute.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage

from interviewer import listen
from interviewer.content import Bank, Question
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.store import SessionStore


class ChatModel(Protocol):
    """What the engine needs from a model: a name and streamed text (errors are ModelError)."""

    name: str

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]: ...


@runtime_checkable
class Prefills(Protocol):
    """A model port that reads a prompt ahead (the session's prefill queue: latest wins per key)."""

    def prefill(self, key: str, messages: Sequence[BaseMessage]) -> None: ...


@runtime_checkable
class Speculates(Protocol):
    """A model port that starts a reply before it is asked for, and drops it when the candidate speaks on."""

    def speculate(
        self, key: str, messages: Sequence[BaseMessage], *, until: Callable[[str], bool] | None = None
    ) -> bool: ...

    def cancel_speculation(self, key: str) -> Any: ...


@runtime_checkable
class Prefetches(Protocol):
    """A model port that sends a prompt prefix once, in the background, so the server caches it."""

    def prefetch(self, messages: Sequence[BaseMessage]) -> None: ...


@dataclass(frozen=True)
class ModelAhead:
    """The capabilities of a model port for working ahead of the candidate (None: it lacks that one)."""

    prefill: Prefills | None = None
    speculate: Speculates | None = None
    prefetch: Prefetches | None = None

    @classmethod
    def of(cls, model: object | None) -> ModelAhead:
        return cls(
            prefill=model if isinstance(model, Prefills) else None,
            speculate=model if isinstance(model, Speculates) else None,
            prefetch=model if isinstance(model, Prefetches) else None,
        )


class PassageLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def source(self) -> str: ...


class Retriever(Protocol):
    def retrieve(
        self,
        query: str,
        *,
        round: str | None = None,
        topic: str | None = None,
        k: int = 4,
        kind: Literal["knowledge", "rubric"] | None = None,
    ) -> Sequence[PassageLike]: ...


class Scorer(Protocol):
    def score(
        self,
        question: Question,
        answers: list[str],
        passed: bool | None = None,
        judged: list[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
        reader: Any = None,
    ) -> QuestionScore: ...


class TruthJudge(Protocol):
    """Judges key points in the background (interviewer/scoring/background.py); ``done`` gets the verdicts."""

    def submit(
        self, key: str, question: str, answer: str, key_points: Sequence[str], done: Callable[[Any], None]
    ) -> object: ...

    def wait(
        self, keys: Any = None, *, timeout: float | None = None, progress: Callable[[int, int], None] | None
    ) -> bool: ...


@dataclass
class Ports:
    """Everything the engine talks to. Only ``bank`` and ``store`` are required."""

    bank: Bank
    store: SessionStore
    model: ChatModel | None = None
    retriever: Retriever | None = None
    scorer: Scorer | None = None
    judge: TruthJudge | None = None  # rescores each question with the truth judge, off the critical path
    clock: Callable[[], float] = time.time
    answer_seconds: int | None = None  # optional per-answer timer
    max_answer_chars: int = 20_000
    owner: str = "local"
    # Reads each answer before the follow-up (challenge, hint, redirect, clarify, go deeper); None: the two
    # authored whys, whatever was said.
    listener: listen.Listener | None = None
    # Reads the questions' probes off the answers in the judge's background rescoring (scoring.stages.Reader);
    # None: scores without findings.
    reader: Callable[[Any], Any] | None = None
    # The model port the rubric's reading probes run on while the candidate answers (its background slot; it
    # yields to live replies). The listener uses a reading only when it is ready at Send. None: no probe readings.
    reading_port: Any | None = None
    # The reading model's measured trust (scoring.stages.ReaderTrust): the listener reads (and so heeds) only
    # the probe kinds it reads well enough; a kind it would not heed costs no background request. None: never
    # measured, every kind is read.
    reading_trust: Any | None = None
