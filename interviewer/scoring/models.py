"""Scores are structured objects end to end, never parsed out of free text."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Method = Literal[
    "deterministic", "coverage", "offline", "llm-judge", "quote-extraction", "code-tests", "reading-probes"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid")


Verdict = Literal["stated", "contradicted", "absent"]


class KeyPointVerdict(_Frozen):
    """Per key point: does the answer state it, contradict it, or not address it (with the words behind it).

    Produced by the offline signals and by the truth judge; the scorer merges them before it sets levels.
    """

    key_point: str
    verdict: Verdict
    confidence: float = Field(ge=0.0, le=1.0)  # the method's probability for its verdict
    quote: str | None = None  # the candidate's own words behind the verdict (verified to be in the answer)
    method: Method


Status = Literal["met", "partial", "missing", "contradicted", "off-topic"]


class CriterionScore(_Frozen):
    """One criterion's level with the candidate's own words as evidence, and why it got that level."""

    criterion: str
    level: int = Field(ge=0, le=4)
    evidence: list[str] = Field(default_factory=list)  # exact quotes from the candidate's answers
    missing: list[str] = Field(default_factory=list)  # key points not covered
    method: Method
    status: Status | None = None  # None in scores stored before statuses existed
    reason: str = ""  # one sentence: met / contradicted (with the candidate's words) / what is missing
    contradicted_by: str | None = None  # the candidate's sentence that asserts a classic wrong claim


class CheckResult(_Frozen):
    """A deterministic check (number with tolerance, or required fact)."""

    name: str
    passed: bool
    expected: str
    found: str | None = None


class Adjustment(_Frozen):
    """A change to the overall made after the rubric levels: a graded hint's cost or a push step's bonus."""

    kind: Literal["hint", "push"]
    level: int = Field(ge=0, le=3)  # where: 0 the main question, 1-2 a why level, 3 the push step
    delta: float  # what it did to the overall (a hint <= 0, a push >= 0; 0 when it changed nothing)
    note: str  # the sentence the report shows ("hint given at why 1: -0.50")


CapKind = Literal["wrong-claim", "off-topic", "no-episode", "lists-only", "relevance"]


class Cap(_Frozen):
    """A ceiling the scorer put on the question's overall, and why: what the report shows a candidate.

    ``kind``: a classic wrong claim asserted; about the question only through it; no episode told where one was
    asked for; terms or figures listed without explanation; only partly about the question.
    """

    kind: CapKind
    at: float = Field(ge=0.0, le=4.0)
    note: str  # the sentence the report shows ("capped at 1.5: the answer asserts a classic wrong claim")


class QuestionScore(_Frozen):
    """The score of one question: criteria, checks, why-chain depth and an overall 0-4."""

    question_id: str
    overall: float = Field(ge=0.0, le=4.0)
    criteria: list[CriterionScore] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    key_points_covered: list[str] = Field(default_factory=list)
    key_points_missed: list[str] = Field(default_factory=list)
    why_depth: int = Field(ge=0, le=2, default=0)  # why-levels answered well
    methods: list[Method] = Field(default_factory=list)
    verdicts: list[KeyPointVerdict] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    adjustments: list[Adjustment] = Field(default_factory=list)  # hints and push, also in ``notes``
    # ceilings that held the overall down, also in ``notes`` (scores stored before they existed have none)
    caps: list[Cap] = Field(default_factory=list)
