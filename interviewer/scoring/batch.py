"""Grading a file of answers (``interviewer grade``): one function, with or without the truth judge."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from interviewer.content.models import Question
from interviewer.errors import InputError
from interviewer.scoring.judge import judge_truth
from interviewer.scoring.scorer import Reader, RubricScorer
from interviewer.scoring.spec import RubricSpec

ROW_FIELDS = ("score", "evidence", "key_points_missed", "methods", "notes")


def read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """The objects of a JSONL file with their line numbers; a bad line is an InputError naming it."""
    try:
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{n} is not valid JSON ({e.msg}); one object per line") from e
                if not isinstance(item, dict):
                    raise InputError(f"{path}:{n} is not a JSON object")
                yield n, item
    except OSError as e:
        raise InputError(f"cannot read {path}: {e}") from e


def _grade_item(
    scorer: RubricScorer,
    item: dict[str, Any],
    judge_model: Any,
    reader: Reader | None = None,
    questions: Mapping[str, Question] | None = None,
) -> dict[str, Any]:
    """One input object plus its grade (and the truth judge's verdicts when there is a judge model)."""
    question, answer = str(item["question"]), str(item["answer"] or "")
    reference, rubric = item.get("reference_answer"), item.get("rubric")
    bank_question = (questions or {}).get(str(item.get("question_id") or ""))
    if bank_question is not None and reader is not None:
        # A bank question read with its probes: its own rubric, the item's question text as asked.
        spec = replace(RubricSpec.from_question(bank_question, reference), question_text=question)
    else:
        spec = RubricSpec.from_rubric(question, reference, rubric)
        reader = None  # an ad-hoc rubric has no probes to read
    if judge_model is None:
        result = scorer.grade_spec(spec, answer, reader=reader)
        return {**item, **{k: result[k] for k in ROW_FIELDS}}
    judged = judge_truth(judge_model, question, answer, spec.key_points)
    result = scorer.grade_spec(spec, answer, judged=judged.verdicts, reader=reader)
    return {
        **item,
        **{k: result[k] for k in ROW_FIELDS},
        "verdicts": [v.model_dump(mode="json") for v in judged.verdicts],
        "judge_seconds": round(judged.cost.seconds, 2),
    }


def grade_file(
    input_jsonl: Path | str,
    output_jsonl: Path | str,
    *,
    judge_model: Any = None,
    judge_weight: float = 0.5,
    scorer: RubricScorer | None = None,
    progress: Callable[[int, int], None] | None = None,
    reader: Reader | None = None,
    questions: Mapping[str, Question] | None = None,
) -> int:
    """Grade every line of ``input_jsonl`` (question, reference_answer or rubric, answer); returns the count.

    Args:
        input_jsonl: one JSON object per line with ``question``, ``answer`` and ``reference_answer`` or
            ``rubric``.
        output_jsonl: written with each input object plus ``score`` (0-4), ``evidence``,
            ``key_points_missed``, ``methods`` and ``notes``; with a judge also ``verdicts`` (the judge's, per
            key point) and ``judge_seconds``.
        judge_model: a chat model for the truth judge (None: offline only); its verdicts are merged into the
            score at ``judge_weight``.
        judge_weight: how much the judge's verdicts count (used when ``scorer`` is not given).
        scorer: the scorer to use (default: the packaged offline one).
        progress: called as ``progress(done, total)``.
        reader: reads the reading probes of items whose ``question_id`` names one of ``questions`` (the bank);
            those items are graded against that question's rubric and its probes' findings (None: no reading).
        questions: the bank's questions by id, for ``reader``.

    Raises:
        InputError: a line that is not a JSON object, lacks ``question`` or ``answer``, or has no usable rubric
            (the message names the line).
    """
    src, dst = Path(input_jsonl), Path(output_jsonl)
    items = list(read_jsonl(src))
    scorer = scorer or RubricScorer(judge_weight=judge_weight)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with dst.open("w", encoding="utf-8") as out:
        for i, (n, item) in enumerate(items):
            if progress:
                progress(i, len(items))  # before each item: a judged item takes seconds
            if "answer" not in item or "question" not in item:
                raise InputError(
                    f"{src}:{n} needs `question` and `answer` (plus `reference_answer` or `rubric`)"
                )
            try:
                row = _grade_item(scorer, item, judge_model, reader, questions)
            except InputError as e:
                raise InputError(f"{src}:{n}: {e}") from e
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if progress:
            progress(len(items), len(items))
    return len(items)
