"""One stop-word list (interviewer/text.py): every reader of text builds on it."""

from __future__ import annotations

from interviewer import clarify, embeddings, hybrid, listen
from interviewer.engine import followups
from interviewer.scoring import coverage
from interviewer.text import CORE_STOP_WORDS, STOP_WORDS


def test_every_reader_uses_the_one_list_and_its_core() -> None:
    assert coverage.STOPWORDS is STOP_WORDS  # the list the coverage model was calibrated with
    assert CORE_STOP_WORDS < STOP_WORDS and embeddings._STOP is CORE_STOP_WORDS
    assert STOP_WORDS < hybrid._STOP
    for words in (clarify._STOP, listen._STOP, followups._STOP):
        assert words > CORE_STOP_WORDS and len(words & STOP_WORDS) > len(STOP_WORDS) / 2
    for words in (clarify._STOP, hybrid._STOP, listen._STOP, followups._STOP, STOP_WORDS):
        assert all(w == w.lower().strip() and " " not in w for w in words)
