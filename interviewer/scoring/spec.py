"""What the scorer reads: a typed rubric spec (from a bank question or any ad-hoc rubric) and named answers.

:class:`RubricSpec` is the one shape every scoring path works on: a bank :class:`Question` gives one with its
why steps, push step and reading probes; :meth:`RubricSpec.from_rubric` normalises what ``interviewer grade``
accepts (a reference answer, a rubric as a Question, a dict, YAML/JSON text or plain text). :class:`Answers`
names the candidate's answers to one question: the initial answer, the two why levels and the push step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError

from interviewer.content.models import (
    Contradiction,
    Criterion,
    FactCheck,
    NumericCheck,
    Probe,
    Question,
    Round,
)
from interviewer.errors import InputError
from interviewer.scoring.coverage import split_sentences

ADHOC_ID = "adhoc"  # the question id of a rubric that is not in the bank
# Rounds whose answers are the candidate's own stories: no relative relevance, and no unmet-rubric rule.
STORY_ROUNDS = frozenset({Round.BEHAVIORAL, Round.RECRUITER, Round.DEEP_DIVE})
GENERIC_CRITERION = Criterion(
    name="correctness and coverage",
    levels={
        0: "Wrong or off-topic.",
        2: "Partly right; misses key points.",
        4: "Covers the key points correctly.",
    },
)


@dataclass(frozen=True)
class StepSpec:
    """A why level or the push step: what it asks and the key points a good answer to it covers."""

    ask: str
    key_points: list[str]
    kind: str = "why"  # "why" for a why level, the push step's kind otherwise


@dataclass(frozen=True)
class RubricSpec:
    """One question's rubric as the scorer reads it."""

    question_id: str
    question_text: str
    key_points: list[str]
    criteria: list[Criterion]
    numeric: list[NumericCheck] = field(default_factory=list)
    facts: list[FactCheck] = field(default_factory=list)
    contradictions: list[Contradiction] = field(default_factory=list)
    # A reference answer is what the coverage model was calibrated against; key points otherwise.
    reference: str | None = None
    why_steps: list[StepSpec] = field(default_factory=list)  # level 1, level 2
    push: StepSpec | None = None  # the first authored push step (the one the interviewer asks)
    probes: list[Probe] = field(default_factory=list)
    # Graded against a reference answer alone: its sentences are the key points, and there is no authored
    # rubric, no bank of neighbouring questions and no reading probe (``interviewer grade``'s usual input).
    reference_only: bool = False
    # A story question ("tell me about a time..."): a genuine answer tells the candidate's own story in its own
    # words, so sharing little wording with the rubric does not make it an answer about something else.
    story: bool = False
    # The question asks for one real past episode ("tell me about a time ..."): an answer that tells none is a
    # principle or a habit where a time was asked for (:mod:`interviewer.scoring.episode`).
    episode: bool = False
    model_answer: str | None = None  # the authored model answer: a right statement for wrong-claim reading
    # The key points of the push steps after the first: never scored, but true all the same.
    later_push: list[str] = field(default_factory=list)

    def right_statements(self) -> list[str]:
        """What the rubric holds true: the key points, the why steps' and every push step's, the model answer."""
        steps = [*self.why_steps, *([self.push] if self.push else [])]
        answers = {a for a in (self.model_answer, self.reference) if a}
        return [
            *self.key_points,
            *(k for s in steps for k in s.key_points),
            *self.later_push,
            *sorted(answers),
        ]

    @classmethod
    def from_question(cls, question: Question, reference: str | None = None) -> RubricSpec:
        """A bank question's rubric, why steps, push step and probes."""
        push = question.push[0] if question.push else None
        return cls(
            question_id=question.id,
            question_text=question.question,
            key_points=list(question.key_points),
            criteria=list(question.criteria),
            numeric=list(question.numeric_checks),
            facts=list(question.fact_checks),
            contradictions=list(question.contradictions),
            reference=reference,
            why_steps=[StepSpec(s.fallback + " " + s.target, list(s.key_points)) for s in question.why_chain],
            push=StepSpec(push.ask, list(push.key_points), push.kind) if push else None,
            probes=list(question.probes),
            story=question.round in STORY_ROUNDS,
            episode=question.episode,
            model_answer=question.model_answer,
            later_push=[k for p in question.push[1:] for k in p.key_points],
        )

    @classmethod
    def from_rubric(cls, question_text: str, reference: str | None, rubric: Any) -> RubricSpec:
        """Normalise a reference answer and/or a rubric (Question, dict, YAML/JSON text, or plain text).

        A dict (or YAML/JSON) rubric is read for ``key_points``, ``criteria``, ``numeric_checks``,
        ``fact_checks``, ``contradictions``, ``model_answer`` and ``episode`` (true: the question asks for one
        real past episode, and an answer that tells none is capped), with the bank's field names.

        Raises:
            InputError: no question text, nothing to grade against, or a rubric that does not validate.
        """
        if not question_text or not question_text.strip():
            raise InputError("the question text is empty; every item needs a `question`")
        if rubric is None and not (reference and reference.strip()):
            raise InputError("give a `reference_answer` or a `rubric` to grade against")
        if isinstance(rubric, Question):
            q = rubric
            return cls(
                question_id=q.id,
                question_text=question_text,
                key_points=list(q.key_points),
                criteria=list(q.criteria),
                numeric=list(q.numeric_checks),
                facts=list(q.fact_checks),
                contradictions=list(q.contradictions),
                reference=reference,
                story=q.round in STORY_ROUNDS,
                episode=q.episode,
            )
        spec = _parse_rubric(_load_rubric(rubric), reference)
        key_points = spec.key_points or split_sentences(spec.reference or "")
        if not key_points:
            raise InputError(
                "the rubric has no key points and there is no reference answer to take them from"
            )
        return cls(
            question_id=ADHOC_ID,
            question_text=question_text,
            key_points=key_points,
            criteria=spec.criteria or [GENERIC_CRITERION],
            numeric=spec.numeric,
            facts=spec.facts,
            contradictions=spec.contradictions,
            reference=spec.reference if spec.reference and spec.reference.strip() else None,
            reference_only=not spec.key_points,
            episode=spec.episode,
        )


def _load_rubric(rubric: Any) -> Any:
    """A rubric given as text: its YAML/JSON structure when it has one, else the text itself."""
    if not isinstance(rubric, str):
        return rubric
    try:
        data = yaml.safe_load(rubric)
    except yaml.YAMLError:
        return rubric
    return data if isinstance(data, dict | list) else rubric


def _parse_rubric(data: Any, reference: str | None) -> RubricSpec:
    """The parts of an ad-hoc rubric (a dict, a list of key points, or text with one point per line)."""
    spec = RubricSpec(ADHOC_ID, "", [], [], reference=reference)
    try:
        if isinstance(data, dict):
            return RubricSpec(
                ADHOC_ID,
                "",
                key_points=[str(k) for k in data.get("key_points", [])],
                criteria=[Criterion.model_validate(c) for c in data.get("criteria", [])],
                numeric=[NumericCheck.model_validate(c) for c in data.get("numeric_checks", [])],
                facts=[FactCheck.model_validate(c) for c in data.get("fact_checks", [])],
                contradictions=[Contradiction.model_validate(c) for c in data.get("contradictions", [])],
                reference=reference or data.get("model_answer") or data.get("reference_answer"),
                episode=bool(data.get("episode", False)),
            )
    except ValidationError as e:
        raise InputError(
            f"the rubric does not validate: {e.errors()[0]['msg']} at {e.errors()[0]['loc']}"
        ) from e
    if isinstance(data, list):
        return RubricSpec(ADHOC_ID, "", [str(k) for k in data], [], reference=reference)
    if isinstance(data, str):
        lines = [ln.strip(" -*\t") for ln in data.splitlines() if ln.strip(" -*\t")]
        return RubricSpec(
            ADHOC_ID, "", lines if len(lines) > 1 else split_sentences(data), [], reference=reference
        )
    return spec


@dataclass(frozen=True)
class Answers:
    """The candidate's answers to one question, by name. ``None``: that level was never reached."""

    initial: str = ""
    why1: str | None = None
    why2: str | None = None
    push: str | None = None

    @classmethod
    def from_list(cls, answers: Sequence[str | None]) -> Answers:
        """From the positional form the session stores: [initial, why 1, why 2, push]."""
        given = [a or "" for a in answers]
        at = dict(enumerate(given))
        return cls(at.get(0, ""), at.get(1), at.get(2), at.get(3))

    def given(self) -> list[str]:
        """The answers that were given, in order (the initial one always: empty when there was none)."""
        return [self.initial, *(a for a in (self.why1, self.why2, self.push) if a is not None)]

    def why(self, level: int) -> str | None:
        """The answer to why level 1 or 2."""
        return self.why1 if level == 1 else self.why2 if level == 2 else None
