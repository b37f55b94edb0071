"""The right answers written without the rubrics (tests/data/right): one strong answer per trap-set question."""

from __future__ import annotations

import json
from pathlib import Path

RIGHT = Path(__file__).resolve().parents[1] / "data" / "right"
# answers.jsonl: strong answers; corrections.jsonl: about half of them name a misconception only to reject it
SETS = ("answers.jsonl", "corrections.jsonl")


def right_answers(name: str = SETS[0]) -> dict[str, str]:
    """Question id -> the set's answer to it, in file order."""
    lines = (RIGHT / name).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    assert len({r["id"] for r in rows}) == len(rows), f"{name}: one answer per question"
    return {r["id"]: r["text"] for r in rows}
