"""Loop presets: whole interview loops as data (``loops/*.yaml``), planned into one resumable session.

A preset lists rounds in order, each with minutes and a question count and optional topic filters. Rounds of the
same kind (three C++ rounds, say) share one clock in the engine, which keys time budgets by round id, so their
minutes add up. The resume deep dive needs questions generated from the candidate's resume
(:mod:`interviewer.deep_dive`); without a resume that round is skipped and the plan says so in ``notes``
(the bank's generic project questions belong to other rounds and would blur that round's clock and report).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from interviewer.config import load_settings
from interviewer.content import Bank, Question, Round
from interviewer.content.loader import _describe, load_yaml_model
from interviewer.deep_dive import DeepDiveKind, deep_dive_mix, deep_dive_questions
from interviewer.errors import ContentError, InputError
from interviewer.posting import analyze_posting, question_weight
from interviewer.resume import Resume
from interviewer.session import ChatModel, Interview, Ports

_ID = r"^[a-z0-9][a-z0-9-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoopRound(_Strict):
    """One round of a loop."""

    round: Round
    minutes: int = Field(gt=0, le=240)
    questions: int = Field(ge=1, le=10)
    title: str | None = None
    topics: list[str] = Field(default_factory=list)  # substrings of question ids, topics, tracks, seed topics
    deep_dive: list[DeepDiveKind] = Field(default_factory=list)  # resume deep dive only: kinds to ask

    @model_validator(mode="after")
    def _deep_dive_only_there(self) -> LoopRound:
        if self.deep_dive and self.round is not Round.DEEP_DIVE:
            raise ValueError(f"deep_dive kinds only apply to the '{Round.DEEP_DIVE.value}' round")
        return self

    @property
    def label(self) -> str:
        return self.title or self.round.title


class LoopPreset(_Strict):
    """A whole loop: id (the file name), name, description and rounds in order."""

    id: str = Field(pattern=_ID)
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    rounds: list[LoopRound] = Field(min_length=1, max_length=12)

    @property
    def total_minutes(self) -> int:
        return sum(r.minutes for r in self.rounds)

    def round_minutes(self) -> dict[str, float]:
        """Minutes per round id (repeated rounds add up: the engine keeps one clock per round id)."""
        out: dict[str, float] = {}
        for r in self.rounds:
            out[r.round.value] = out.get(r.round.value, 0.0) + r.minutes
        return out

    @property
    def needs_resume(self) -> bool:
        return any(r.round is Round.DEEP_DIVE for r in self.rounds)


# ------------------------------------------------------------------------------------------ loading


def presets_dir() -> Path:
    """``loops/`` under the content root (the repo in a checkout, the packaged copy in a wheel)."""
    return load_settings().content_dir / "loops"


def load_preset_file(path: Path) -> LoopPreset:
    """Parse and validate one preset file.

    Raises:
        ContentError: naming the file, the field and what was expected.
    """
    preset = load_yaml_model(path, LoopPreset, "id, name, description and rounds")
    if preset.id != path.stem:
        raise ContentError(
            f"{path}: field 'id' is '{preset.id}' but the file is '{path.name}'; make them match"
        )
    return preset


def list_presets(directory: Path | None = None) -> list[LoopPreset]:
    """Every preset under ``directory`` (default :func:`presets_dir`), sorted by total length."""
    d = directory or presets_dir()
    if not d.is_dir():
        raise ContentError(f"no loop presets folder at {d}; set INTERVIEWER_CONTENT_DIR")
    presets = [load_preset_file(p) for p in sorted(d.glob("*.yaml"))]
    if not presets:
        raise ContentError(f"no loop presets (*.yaml) in {d}")
    return sorted(presets, key=lambda p: (p.total_minutes, p.id))


def load_preset(preset_id: str, directory: Path | None = None) -> LoopPreset:
    """The preset with this id (its file is ``<id>.yaml``)."""
    d = directory or presets_dir()
    if not re.match(_ID, preset_id or ""):
        raise InputError(f"'{preset_id}' is not a loop id; ids are lowercase words joined by '-'")
    path = d / f"{preset_id}.yaml"
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(d.glob("*.yaml"))) or "none"
        raise InputError(f"no loop preset '{preset_id}' in {d}; known: {known}")
    return load_preset_file(path)


def custom_loop(
    rounds: Sequence[Round | str],
    minutes: int | Sequence[int] = 45,
    questions: int | Sequence[int] = 2,
    *,
    name: str = "Custom loop",
) -> LoopPreset:
    """A loop the candidate builds: rounds in order, minutes (one for all, or one per round), questions per round."""
    if not rounds:
        raise InputError("pick at least one round for the custom loop")
    mins = [minutes] * len(rounds) if isinstance(minutes, int) else list(minutes)
    counts = [questions] * len(rounds) if isinstance(questions, int) else list(questions)
    if len(mins) != len(rounds) or len(counts) != len(rounds):
        raise InputError(
            f"the custom loop has {len(rounds)} round(s) but {len(mins)} time(s) and {len(counts)} "
            "question count(s); give one of each per round"
        )
    items = []
    for r in rounds:
        try:
            items.append(Round(r))
        except ValueError as e:
            raise InputError(f"'{r}' is not a round; choose from {', '.join(x.value for x in Round)}") from e
    try:
        return LoopPreset(
            id="custom",
            name=name,
            description="A loop built by the candidate.",
            rounds=[
                LoopRound(round=r, minutes=m, questions=q)
                for r, m, q in zip(items, mins, counts, strict=True)
            ],
        )
    except ValidationError as e:
        raise InputError(f"the custom loop is invalid: {_describe(e)}") from e


# ------------------------------------------------------------------------------------------ planning


@dataclass
class LoopPlan:
    """What :func:`start_loop` will run: rounds, questions in order, minutes per round, and notes."""

    preset: LoopPreset
    rounds: list[str]
    question_ids: list[str]
    round_minutes: dict[str, float]
    extra_questions: list[Question] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _matches(q: Question, topics: Sequence[str]) -> bool:
    hay = " ".join([q.id, q.topic, q.track or "", *q.seed_topics]).lower()
    return any(t.lower() in hay or t.lower().replace(" ", "-") in hay for t in topics)


def resume_questions_for(
    preset: LoopPreset, resume: Resume, *, model: ChatModel | None = None
) -> list[Question]:
    """Generate the deep-dive questions a preset's resume rounds ask (their ``deep_dive`` kinds, in order)."""
    out: list[Question] = []
    for slot in preset.rounds:
        if slot.round is not Round.DEEP_DIVE:
            continue
        if slot.deep_dive:
            # Fewer kinds than questions: the rest are performance questions on further projects.
            kinds = [*slot.deep_dive, *["performance"] * slot.questions][: slot.questions]
            out.extend(
                q for q in deep_dive_mix(resume, kinds, model=model) if q.id not in {x.id for x in out}
            )
        else:
            out.extend(deep_dive_questions(resume, slot.questions, "performance", model=model))
    return out


def plan_loop(
    bank: Bank,
    preset: LoopPreset,
    resume_questions: Sequence[Question] = (),
    *,
    seed: int | None = None,
    posting: str | None = None,
) -> LoopPlan:
    """Choose each round's questions (topic filters, posting weights, no repeats), easy to hard per round.

    Raises:
        InputError: a round's topic filter matches nothing, or nothing is left to ask.
    """
    for q in resume_questions:
        if q.round is not Round.DEEP_DIVE:
            raise InputError(
                f"resume question '{q.id}' is in round '{q.round.value}', not the resume deep dive"
            )
    topic_weights = analyze_posting(posting).topic_weights if posting and posting.strip() else {}
    rng = random.Random(seed)
    used: set[str] = set()
    qids: list[str] = []
    rounds: list[str] = []
    minutes: dict[str, float] = {}
    extra: list[Question] = []
    notes: list[str] = []
    pending = list(resume_questions)
    for i, slot in enumerate(preset.rounds, start=1):
        if slot.round is Round.DEEP_DIVE:
            chosen = pending[: slot.questions]
            pending = pending[slot.questions :]
            if not chosen:
                notes.append(
                    f"Round {i} ({slot.label}, {slot.minutes} min) is skipped: it asks about your own projects, "
                    "so upload a resume to practise it."
                )
                continue
            extra.extend(chosen)
        else:
            pool = [q for q in bank.by_round(slot.round) if q.id not in used]
            if slot.topics:
                pool = [q for q in pool if _matches(q, slot.topics)]
                if not pool:
                    raise InputError(
                        f"loop '{preset.id}' round {i} ({slot.round.value}): topics {slot.topics} match no "
                        f"unused question in {bank.root / 'rubrics' / slot.round.value}; edit the preset"
                    )
            if not pool:
                notes.append(f"Round {i} ({slot.label}) is skipped: the bank has no unused questions for it.")
                continue
            keyed = [(question_weight(q, topic_weights), rng.random(), q) for q in pool]
            ranked = [q for _, _, q in sorted(keyed, key=lambda t: (-t[0], t[1]))]
            chosen = sorted(ranked[: slot.questions], key=lambda q: q.difficulty)
            if len(chosen) < slot.questions:
                notes.append(
                    f"Round {i} ({slot.label}) has {len(chosen)} of {slot.questions} questions: the bank has no more."
                )
        qids.extend(q.id for q in chosen)
        used.update(q.id for q in chosen)
        r = slot.round.value
        if r not in rounds:
            rounds.append(r)
        minutes[r] = minutes.get(r, 0.0) + slot.minutes
    if not qids:
        raise InputError(f"loop '{preset.id}' has nothing to ask: {' '.join(notes)}")
    return LoopPlan(preset, rounds, qids, minutes, extra, notes)


def start_loop(
    ports: Ports,
    preset: LoopPreset,
    resume_questions: Sequence[Question] = (),
    seed: int | None = None,
    *,
    posting: str | None = None,
    title: str | None = None,
) -> Interview:
    """Plan the loop and open it as one session (time budgets per round; pause/resume like any session).

    Notes about skipped rounds are stored in the plan (``loop_notes``) and shown once via ``Interview.notice``.
    """
    plan = plan_loop(ports.bank, preset, resume_questions, seed=seed, posting=posting)
    it = Interview.start(
        ports,
        plan.rounds,
        question_ids=plan.question_ids,
        title=title or preset.name,
        extra_plan={
            "round_minutes": plan.round_minutes,
            "loop": preset.id,
            "loop_name": preset.name,
            "loop_notes": plan.notes,
        },
        extra_questions=plan.extra_questions,
    )
    if plan.notes:
        it.notice = " ".join(plan.notes)
    return it
