"""Scores are structured objects end to end, never parsed out of free text."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Method = Literal["deterministic", "coverage", "llm-judge", "quote-extraction", "code-tests"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CriterionScore(_Frozen):
    """One criterion's level with the candidate's own words as evidence."""

    criterion: str
    level: int = Field(ge=0, le=4)
    evidence: list[str] = Field(default_factory=list)  # exact quotes from the candidate's answers
    missing: list[str] = Field(default_factory=list)  # key points not covered
    method: Method


class CheckResult(_Frozen):
    """A deterministic check (number with tolerance, or required fact)."""

    name: str
    passed: bool
    expected: str
    found: str | None = None


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
    notes: list[str] = Field(default_factory=list)
