"""The trap set (tests/data/traps/README.md): four answers per non-coding bank question, written by us."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

TRAPS = Path(__file__).resolve().parents[1] / "data" / "traps"
Kind = Literal["reversed-causality", "wrong-number", "wrong-trade-off", "negated-key-point"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Wrong(_Strict):
    kind: Kind
    claim: str = Field(min_length=10)
    text: str = Field(min_length=20)


class Answers(_Strict):
    strong: str = Field(min_length=20)
    partial: str = Field(min_length=20)
    wrong: Wrong
    off_topic: str = Field(min_length=20)


class TrapFile(_Strict):
    question: str
    answers: Answers

    def texts(self) -> dict[str, str]:
        """The four answers by label: strong, partial, wrong, off_topic."""
        a = self.answers
        return {"strong": a.strong, "partial": a.partial, "wrong": a.wrong.text, "off_topic": a.off_topic}


def load_traps(round_: str | None = None) -> dict[str, TrapFile]:
    """Question id -> its trap file, for one round directory or all of them."""
    out: dict[str, TrapFile] = {}
    dirs = [TRAPS / round_] if round_ else sorted(p for p in TRAPS.iterdir() if p.is_dir())
    for d in dirs:
        for f in sorted(d.glob("*.yaml")):
            t = TrapFile.model_validate(yaml.safe_load(f.read_text(encoding="utf-8")))
            if t.question != f.stem:
                raise ValueError(f"{f}: the file is named {f.stem} but holds answers to {t.question}")
            out[t.question] = t
    return out


def question_split(qid: str) -> Literal["dev", "heldout"]:
    """A stable split by question id: tune on "dev", report on "heldout" (never the same question in both)."""
    return "dev" if hashlib.sha256(qid.encode()).digest()[0] % 2 == 0 else "heldout"
