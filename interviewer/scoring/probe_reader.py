"""The scorer's reader on a real model: :func:`interviewer.scoring.reader.read_question` as a findings stage.

:class:`ProbeReader` is a :data:`~interviewer.scoring.stages.Reader`: given the question, the candidate's answers
per part and the probes, it reads them on a chat port (the port's background slot, yielding to live replies)
and returns one :class:`~interviewer.scoring.stages.ReadingFinding` per probe. It carries the model's measured
reading agreement as ``trust`` (:func:`interviewer.scoring.reader_trust.load_trust`), which decides whether the
findings act on the score (:data:`~interviewer.scoring.stages.MIN_READER_TRUST`). A model that fails raises
:class:`~interviewer.errors.ModelError`, which the scorer turns into a note on the offline score.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interviewer.content.models import Question
from interviewer.scoring import reader
from interviewer.scoring.stages import ReaderTrust, ReadingFinding, ReadingInput, ReadingVerdict

_VERDICT: dict[str, ReadingVerdict] = {"stated": "stated", "contradicted": "contradicted"}
_NOTHING = {reader.NOT_STATED, "", "none", "null", "n/a"}


def said_nothing(replies: Sequence[object]) -> bool:
    """The reader itself answered "not stated" (or no number, no name) to every asking of a probe."""
    return all(r is None or (isinstance(r, str) and r.strip().lower() in _NOTHING) for r in replies)


def findings_of(readings: dict[str, reader.Readings]) -> list[ReadingFinding]:
    """Every part's probe findings as the scorer's (``not stated`` is ``absent``), the candidate's sentence kept."""
    out: list[ReadingFinding] = []
    for part in ("main", "why1", "why2"):
        got = readings.get(part)
        if got is None:
            continue
        for f in got.probes:
            read = f.read if isinstance(f.read, str | float) else None
            verdict = _VERDICT.get(f.finding, "absent")
            undecided = verdict == "absent" and not said_nothing(f.replies)
            out.append(ReadingFinding(f.probe, read, verdict, f.quote, undecided))
    return out


class ProbeReader:
    """Reads a question's probes off the candidate's answers with ``port`` (a ChatPort or a chat model).

    Args:
        port: the model; on a :class:`~interviewer.llm.client.ChatPort` the requests use its background slot.
        trust: the model's measured reading agreement, overall or per probe kind (None: never measured,
            findings are only noted).
        cancel: set it to stop a reading in progress (the score then keeps its offline form, with a note).
        read_kwargs: passed to :func:`~interviewer.scoring.reader.read_answer` (mode, letters, piece_words).
    """

    def __init__(
        self,
        port: Any,
        trust: float | ReaderTrust | None,
        *,
        cancel: threading.Event | None = None,
        **read_kwargs: Any,
    ) -> None:
        self.port = port
        self.trust = trust
        self.cancel = cancel
        self.read_kwargs = read_kwargs

    @classmethod
    def for_model(cls, port: Any, data_dir: Path, model_id: str, **kwargs: Any) -> ProbeReader:
        """A reader at the weight stored for ``model_id`` (``interviewer calibrate --reader``)."""
        from interviewer.scoring.reader_trust import load_trust

        return cls(port, load_trust(data_dir, model_id), **kwargs)

    def __call__(self, asked: ReadingInput) -> list[ReadingFinding]:
        # read_question needs only the question's text and probes; the rest of a bank question is not read
        question = Question.model_construct(question=asked.question, probes=list(asked.probes))
        got = reader.read_question(self.port, question, asked.answers, cancel=self.cancel, **self.read_kwargs)
        return findings_of(got)
