"""Reading the trap set and summarising how the scorer ranks it (the figures `calibrate` prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interviewer.errors import InputError
from interviewer.scoring.calibrate import held_out_half, read_traps, trap_figures

TRAP = """\
question: {qid}
answers:
  strong: right and complete {qid}
  partial: right but thin {qid}
  wrong:
    kind: wrong-number
    claim: the wrong number
    text: confidently wrong {qid}
  off_topic: about something else {qid}
"""


def _write(root: Path, qid: str, body: str | None = None) -> None:
    (root / "r").mkdir(parents=True, exist_ok=True)
    (root / "r" / f"{qid}.yaml").write_text(body if body is not None else TRAP.format(qid=qid))


def test_read_traps_takes_complete_files_only(tmp_path: Path) -> None:
    _write(tmp_path, "q1")
    _write(tmp_path, "q2", "question: q2\nanswers:\n  strong: only one\n")
    traps = read_traps(tmp_path)
    assert list(traps) == ["q1"]
    assert traps["q1"]["wrong"] == "confidently wrong q1"
    assert set(traps["q1"]) == {"strong", "partial", "wrong", "off_topic"}
    _write(tmp_path, "bad", "question: [unclosed\n")
    with pytest.raises(InputError, match=r"bad\.yaml"):
        read_traps(tmp_path)


def test_trap_figures_means_and_ordering(tmp_path: Path) -> None:
    for q in ("q1", "q2"):
        _write(tmp_path, q)
    traps = read_traps(tmp_path)
    levels = {
        "right and complete": 3.5,
        "right but thin": 2.0,
        "confidently wrong": 1.0,
        "about something": 0.0,
    }

    def score(qid: str, text: str) -> float:
        base = next(v for k, v in levels.items() if text.startswith(k))
        return 3.0 if (qid == "q2" and base == 1.0) else base  # q2's wrong answer outscores its partial one

    fig = trap_figures(traps, score)
    assert fig is not None and fig.n_questions == 2
    assert fig.means == {"strong": 3.5, "partial": 2.0, "wrong": 2.0, "off_topic": 0.0}
    assert fig.ordered == 0.5 and fig.wrong_high == 0.5
    assert "strong > partial > wrong on 50%" in fig.lines()[0]
    assert trap_figures(traps, score, ids=["nope"]) is None
    assert trap_figures({}, score) is None


def test_the_question_split_is_stable_and_splits() -> None:
    ids = [f"round.q{i}" for i in range(40)]
    half = [held_out_half(i) for i in ids]
    assert half == [held_out_half(i) for i in ids]
    assert 10 <= sum(half) <= 30


def test_calibrate_says_when_there_is_no_trap_set(tmp_path: Path) -> None:
    from interviewer.cli import _trap_lines

    line = _trap_lines(tmp_path)
    assert line.startswith("trap set: none found") and "skipped" in line


def test_the_split_is_the_trap_loaders_split() -> None:
    from tests.support.traps import load_traps, question_split

    for qid in load_traps():
        assert held_out_half(qid) == (question_split(qid) == "heldout")
