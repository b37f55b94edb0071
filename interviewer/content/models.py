"""Typed content: rounds, questions, rubrics, why-chains and checks.

Every rubric YAML under ``rubrics/<round>/`` validates into a :class:`Question`. The models are strict
(unknown keys are errors) so that a typo in a rubric is caught when it loads, not when a candidate meets it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator


class Round(StrEnum):
    """The rounds of the loop; the value is the folder name under ``rubrics/`` and ``knowledge/``."""

    RECRUITER = "recruiter-screen"
    PHONE = "phone-screen"
    ML_CODING = "ml-coding"
    INFERENCE = "inference-deep-dive"
    CPP = "cpp-systems"
    DESIGN = "system-design"
    BEHAVIORAL = "behavioral"
    CASE = "inference-case"
    DEEP_DIVE = "resume-deep-dive"
    GPU = "gpu-kernels"

    @property
    def title(self) -> str:  # type: ignore[override]  # a display name, not str.title()
        return ROUND_TITLES[self]


ROUND_TITLES: dict[Round, str] = {
    Round.RECRUITER: "Recruiter screen",
    Round.PHONE: "Technical phone screen",
    Round.ML_CODING: "ML coding",
    Round.INFERENCE: "Inference and performance deep dive",
    Round.CPP: "C++ and systems",
    Round.DESIGN: "ML system design",
    Round.BEHAVIORAL: "Behavioral and closing",
    Round.CASE: "Inference-optimization case",
    Round.DEEP_DIVE: "Resume deep dive",
    Round.GPU: "GPU kernels",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


NonEmpty = Annotated[str, Field(min_length=1)]


def _is_question(text: str) -> str:
    if "?" not in text:
        raise ValueError("must be a question (contain '?')")
    return text


# What the interviewer asks aloud (a fallback, a challenge, a push step, a whiteboard follow-up).
Asked = Annotated[str, Field(min_length=1), AfterValidator(_is_question)]


class Criterion(_Strict):
    """One scored dimension with anchored levels; 0, 2 and 4 are required, 1 and 3 optional."""

    name: NonEmpty
    weight: float = Field(default=1.0, gt=0)
    levels: dict[int, NonEmpty]

    @field_validator("levels")
    @classmethod
    def _anchors(cls, levels: dict[int, str]) -> dict[int, str]:
        missing = {0, 2, 4} - set(levels)
        if missing:
            raise ValueError(f"levels needs anchors for 0, 2 and 4; missing {sorted(missing)}")
        bad = set(levels) - {0, 1, 2, 3, 4}
        if bad:
            raise ValueError(f"levels must be between 0 and 4; got {sorted(bad)}")
        return levels


class WhyStep(_Strict):
    """One level of the why-chain: level 1 probes the assumption, level 2 what breaks without it."""

    level: Literal[1, 2]
    target: NonEmpty
    key_points: list[NonEmpty] = Field(min_length=1)
    fallback: Asked
    # One graded hint for a candidate who says "I don't know" here: it narrows the problem without stating a
    # key point. Using it is recorded with the turn and costs points.
    hint: str | None = None


class NumericCheck(_Strict):
    """A number the answer should state: ``value`` within an absolute ``tolerance``."""

    name: NonEmpty
    ask: NonEmpty
    value: float
    tolerance: float = Field(default=0.0, ge=0)
    unit: str | None = None
    also_accept: list[float] = Field(default_factory=list)


class FactCheck(_Strict):
    """A fact the answer should contain: at least one of the phrases (case-insensitive)."""

    name: NonEmpty
    any_of: list[NonEmpty] = Field(min_length=1)


class Contradiction(_Strict):
    """A classic wrong answer to this question (one the seeds or the topic name).

    An answer that asserts ``claim`` caps ``criterion`` (every criterion when None) at level 1, whatever its
    vocabulary. ``any_of`` are phrasings that assert it, matched per sentence, negation and contrast aware
    ("not 2x faster" and "the model is 2x faster, not the service" do not assert "the service is 2x faster").
    ``challenge`` is how an interviewer makes the candidate test the claim without giving the answer away.
    """

    name: NonEmpty
    claim: NonEmpty
    any_of: list[NonEmpty] = Field(min_length=1)
    criterion: str | None = None
    challenge: Asked


class PushStep(_Strict):
    """An escalation for a candidate who answered both whys well: derive a number or change a constraint."""

    kind: Literal["derive", "constraint"]
    ask: Asked
    key_points: list[NonEmpty] = Field(min_length=1)


ProbeKind = Literal["option", "number", "named"]
_POINT = r"^(main|why1|why2)\.\d+$"


class Probe(_Strict):
    """A reading question about the candidate's answer, answered from their text alone in a closed set.

    The rubric, not the model, decides truth: the reader reports what the answer says ("decode", 524288,
    "SRAM" or "not stated"), and the comparison with ``true``/``value``/``accept`` says whether the key point
    is stated, contradicted or absent. "not stated" is always an allowed answer and is never listed.

    ``point`` names the key point the probe reads: ``main.<i>`` for the question's ``key_points``, ``why1.<i>``
    and ``why2.<i>`` for the why steps' (0-based).
    """

    point: Annotated[str, Field(pattern=_POINT)]
    kind: ProbeKind
    ask: NonEmpty
    # kind == "option": claims the candidate could make; ``true`` is one of them, ``wrong`` the classic mistakes.
    options: list[NonEmpty] = Field(default_factory=list)
    true: str | None = None
    wrong: list[NonEmpty] = Field(default_factory=list)
    # kind == "number": a typed slot compared with ``value`` at a relative ``tolerance``.
    value: float | None = None
    tolerance: float = Field(default=0.01, ge=0)
    unit: str | None = None
    also_accept: list[float] = Field(default_factory=list)
    # kind == "named": names that count as the true thing, and names the classic wrong answers give.
    accept: list[NonEmpty] = Field(default_factory=list)
    reject: list[NonEmpty] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete(self) -> Probe:
        fold = [o.strip().lower() for o in self.options]
        if self.kind == "option":
            if not 2 <= len(self.options) <= 5 or len(set(fold)) != len(fold):
                raise ValueError(f"option probe '{self.ask}' needs 2-5 distinct options")
            if any(o in {"not stated", "none", "other"} for o in fold):
                raise ValueError(f"option probe '{self.ask}': 'not stated' is implied, never listed")
            if self.true is None or self.true not in self.options:
                raise ValueError(f"option probe '{self.ask}': true must be one of its options")
            if not self.wrong or self.true in self.wrong or not set(self.wrong) <= set(self.options):
                raise ValueError(f"option probe '{self.ask}': wrong must be other options (at least one)")
        elif self.kind == "number":
            if self.value is None:
                raise ValueError(f"number probe '{self.ask}' needs a value")
        else:
            if not self.accept or not self.reject:
                raise ValueError(f"named probe '{self.ask}' needs accept and reject names")
            if {a.lower() for a in self.accept} & {r.lower() for r in self.reject}:
                raise ValueError(f"named probe '{self.ask}': a name is both accepted and rejected")
        return self

    @property
    def part(self) -> str:
        """``main``, ``why1`` or ``why2``."""
        return self.point.split(".")[0]

    @property
    def index(self) -> int:
        return int(self.point.split(".")[1])


class Scenario(_Strict):
    """Authored facts for clarifying questions (requirements, constraints) and what is the candidate's call."""

    facts: dict[str, str] = Field(default_factory=dict)
    candidate_call: list[str] = Field(default_factory=list)


class ExpectedComponent(_Strict):
    """A part a whiteboard design for this question should draw.

    ``aliases`` are the words a node label may use for it, matched case-insensitively on word boundaries
    (punctuation folded to spaces, a plural ``s`` allowed). ``why`` says what the part does in this design;
    ``ask`` is the follow-up when it is missing: it points at the need, not at the answer.
    """

    name: NonEmpty
    aliases: list[NonEmpty] = Field(min_length=1)
    why: NonEmpty
    ask: Asked


class ExpectedFlow(_Strict):
    """Two expected components a design should connect: a path of arrows between them, either way round."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    source: NonEmpty = Field(alias="from")
    target: NonEmpty = Field(alias="to")


class Question(_Strict):
    """One question with its rubric."""

    id: NonEmpty
    round: Round
    topic: NonEmpty
    track: str | None = None  # e.g. the phone screen's shape: theory, applied, hardware, coding
    difficulty: int = Field(ge=1, le=3)
    question: NonEmpty
    variants: list[str] = Field(default_factory=list)
    # The question asks for one real past episode ("tell me about a time ..."): a first answer that tells none
    # (a principle, a habit, a plan in the conditional) is asked for a specific time before anything else.
    episode: bool = False
    key_points: list[NonEmpty] = Field(min_length=2)
    criteria: list[Criterion] = Field(min_length=1)
    why_chain: list[WhyStep] = Field(min_length=2, max_length=2)
    hint: str | None = None  # one graded hint for "I don't know" on the main question (costs points)
    push: list[PushStep] = Field(default_factory=list)
    numeric_checks: list[NumericCheck] = Field(default_factory=list)
    fact_checks: list[FactCheck] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)
    model_answer: NonEmpty
    common_mistakes: list[NonEmpty] = Field(default_factory=list)
    knowledge: list[NonEmpty] = Field(min_length=1)
    seed_topics: list[NonEmpty] = Field(default_factory=list)
    scenario: Scenario | None = None
    probes: list[Probe] = Field(default_factory=list)  # reading probes per key point
    components: list[ExpectedComponent] = Field(default_factory=list)  # what a whiteboard design should draw
    flows: list[ExpectedFlow] = Field(default_factory=list)  # which of those components should connect
    coding_task: str | None = None  # id of a task under rubrics/coding/ checked by the sandbox

    @model_validator(mode="after")
    def _chain_order(self) -> Question:
        if [s.level for s in self.why_chain] != [1, 2]:
            raise ValueError("why_chain must list level 1 then level 2")
        sizes = {
            "main": len(self.key_points),
            "why1": len(self.why_chain[0].key_points),
            "why2": len(self.why_chain[1].key_points),
        }
        for p in self.probes:
            if p.index >= sizes[p.part]:
                raise ValueError(
                    f"probe '{p.ask}' reads {p.point}, but {p.part} has {sizes[p.part]} key points"
                )
        parts = [c.name for c in self.components]
        if len(set(parts)) != len(parts):
            raise ValueError(f"components must have distinct names; got {parts}")
        for f in self.flows:
            for end in (f.source, f.target):
                if end not in parts:
                    raise ValueError(
                        f"flow {f.source} -> {f.target} names '{end}', which is not one of {parts}"
                    )
        names = {c.name for c in self.criteria}
        for c in self.contradictions:
            if c.criterion is not None and c.criterion not in names:
                raise ValueError(
                    f"contradiction '{c.name}' caps criterion '{c.criterion}', which is not one of {sorted(names)}"
                )
        return self

    def why(self, level: int) -> WhyStep:
        """The authored why-step for ``level`` (1 or 2)."""
        return self.why_chain[level - 1]
