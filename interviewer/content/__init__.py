"""Authored content: typed models and the loader that validates rubric files."""

from interviewer.content.loader import Bank, load_bank, load_question
from interviewer.content.models import (
    Contradiction,
    Criterion,
    ExpectedComponent,
    ExpectedFlow,
    FactCheck,
    NumericCheck,
    PushStep,
    Question,
    Round,
    Scenario,
    WhyStep,
)

__all__ = [
    "Bank",
    "Contradiction",
    "Criterion",
    "ExpectedComponent",
    "ExpectedFlow",
    "FactCheck",
    "NumericCheck",
    "PushStep",
    "Question",
    "Round",
    "Scenario",
    "WhyStep",
    "load_bank",
    "load_question",
]
