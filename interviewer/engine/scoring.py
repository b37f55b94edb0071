"""Scoring orchestration: when a question is scored, and the truth judge's rescoring in the background.

The engine enters the scorer (``Scorer.score``) only here: once when a question's last answer is in (after
the next question is on screen), and once more when the background truth judge's verdicts arrive. The
judge's result comes back as a "judged" event through :meth:`SessionLog.emit`, the same locked path every
live change takes; the worker thread never touches the state any other way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from interviewer.content import Question
from interviewer.engine.events import SessionLog, hinted_levels, last_code_run_passed
from interviewer.engine.ports import Ports
from interviewer.scoring.models import KeyPointVerdict, QuestionScore


@dataclass(frozen=True)
class ScoreInputs:
    """What a question's score is computed from, read from the state at one moment."""

    answers: list[str]
    passed: bool | None  # the last sandbox run (coding questions)
    hints: list[int]


class QuestionScoring:
    """Scores answered questions and queues them for the truth judge."""

    def __init__(self, ports: Ports, log: SessionLog, tell: Callable[[str], None]) -> None:
        self.ports = ports
        self.log = log
        self.tell = tell

    def inputs(self, qid: str) -> ScoreInputs:
        state = self.log.state
        return ScoreInputs(
            list(state.answers.get(qid, [])),
            last_code_run_passed(state, qid),
            hinted_levels(state.turns, qid),
        )

    def hints_used(self, qid: str) -> int:
        """Graded hints given on a question (each costs points in scoring)."""
        return len(hinted_levels(self.log.state.turns, qid))

    def _score(
        self, q: Question, inputs: ScoreInputs, judged: Sequence[KeyPointVerdict] | None = None
    ) -> QuestionScore:
        """The one call into the scorer; the rescoring with the judge's verdicts (background work) also reads
        the question's probes when there is a reader."""
        scorer = self.ports.scorer
        assert scorer is not None
        if judged is None:
            return scorer.score(q, inputs.answers, inputs.passed, hints=inputs.hints)
        if self.ports.reader is not None and q.probes:
            return scorer.score(
                q,
                inputs.answers,
                inputs.passed,
                judged=list(judged),
                hints=inputs.hints,
                reader=self.ports.reader,
            )
        return scorer.score(q, inputs.answers, inputs.passed, judged=list(judged), hints=inputs.hints)

    def score(self, q: Question) -> None:
        """Score ``q`` from its answers (once), then queue it for the truth judge."""
        if self.ports.scorer is None or q.id in self.log.state.scores:
            return
        try:
            score = self._score(q, self.inputs(q.id))
        except Exception as e:  # scoring can be redone from the log; the interview must go on
            self.tell(f"Scoring this answer failed ({type(e).__name__}); it will be scored in the report.")
            return
        self.log.emit("scored", {"qid": q.id, "score": score.model_dump(mode="json")})
        self.judge(q)

    def judge(self, q: Question) -> None:
        """Queue the truth judge for a scored question; its verdicts rescore it in one "judged" event."""
        judge, state = self.ports.judge, self.log.state
        inputs = self.inputs(q.id)
        if judge is None or self.ports.scorer is None or q.id in state.judged or not inputs.answers:
            return

        def done(verdicts: Any) -> None:  # on the judge's worker thread
            score = self._score(q, inputs, judged=verdicts)
            payload = {"verdicts": [v.model_dump(mode="json") for v in verdicts]}
            self.log.emit("judged", {"qid": q.id, **payload, "score": score.model_dump(mode="json")})

        judge.submit(self.key(q.id), q.question, inputs.answers[0], list(q.key_points), done)

    def key(self, qid: str) -> str:
        return f"{self.log.session_id}/{qid}"

    def score_pending(self) -> None:
        """After a crash between an answer and its score (or its judgement), score (judge) now."""
        state = self.log.state
        for qid in state.plan[: state.idx]:
            if qid not in self.log.state.scores and state.answers.get(qid):
                self.score(self.ports.bank.get(qid))
            elif qid in self.log.state.scores and qid not in self.log.state.judged:
                self.judge(self.ports.bank.get(qid))

    def wait_for_judge(
        self, timeout: float | None = None, progress: Callable[[int, int], None] | None = None
    ) -> bool:
        """Before the report: wait for this session's pending judgements (True when none is left)."""
        if self.ports.judge is None:
            return True
        self.score_pending()
        state = self.log.state
        unjudged = [qid for qid in state.scores if qid not in state.judged]
        for qid in unjudged:  # what a crash, a failure or a full queue left unjudged (dupes are ignored)
            self.judge(self.ports.bank.get(qid))
        return self.ports.judge.wait([self.key(qid) for qid in unjudged], timeout=timeout, progress=progress)
