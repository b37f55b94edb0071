"""The trap set is complete for its rounds, well formed, and written independently of the rubrics' wording."""

from __future__ import annotations

import re

import pytest

from interviewer.content import Question

from .support.traps import TRAPS, load_traps, question_split

# Rounds whose every non-coding question has a trap file (extend as the set grows; see the closing notes).
COVERED_ROUNDS = [
    "inference-case",
    "inference-deep-dive",
    "system-design",
    "ml-coding",
    "phone-screen",
    "recruiter-screen",
    "behavioral",
    "gpu-kernels",
    "cpp-systems",
]
WORDS = re.compile(r"[a-z0-9]+")


def _grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    w = WORDS.findall(text.lower())
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def _rubric_text(q: Question) -> str:
    parts = [q.question, *q.variants, *q.key_points, q.model_answer, *q.common_mistakes, q.hint or ""]
    for c in q.criteria:
        parts += list(c.levels.values())
    for s in q.why_chain:
        parts += [s.target, s.fallback, *s.key_points, s.hint or ""]
    for p in q.push:
        parts += [p.ask, *p.key_points]
    for c in q.contradictions:
        parts += [c.claim, c.challenge, *c.any_of]
    parts += [c.ask for c in q.numeric_checks] + [" ".join(c.any_of) for c in q.fact_checks]
    return "\n".join(parts)


@pytest.mark.parametrize("round_", COVERED_ROUNDS)
def test_every_non_coding_question_of_a_covered_round_has_a_trap_file(bank, round_: str) -> None:
    want = {q.id for q in bank.by_round(round_) if not q.coding_task}
    have = set(load_traps(round_))
    assert want - have == set(), f"questions without traps: {sorted(want - have)}"
    assert have - want == set(), f"trap files for no (or coding) questions: {sorted(have - want)}"


def test_trap_answers_are_well_formed_and_share_no_five_word_run_with_their_rubric(bank) -> None:
    traps = load_traps()
    assert traps, f"no trap files under {TRAPS}"
    problems = []
    for qid, t in traps.items():
        q = bank.get(qid)
        rubric = _grams(_rubric_text(q))
        for label, text in t.texts().items():
            n = len(WORDS.findall(text.lower()))
            if not 12 <= n <= 260:
                problems.append(f"{qid} {label}: {n} words")
            shared = _grams(text) & rubric
            if shared:
                problems.append(f"{qid} {label} copies the rubric: {' '.join(sorted(shared)[0])!r}")
    assert not problems, "\n".join(problems)


def test_the_split_is_by_question_and_stable() -> None:
    assert question_split("case.stage-vs-end-to-end") == question_split("case.stage-vs-end-to-end")
    ids = [f"q{i}" for i in range(200)]
    dev = sum(question_split(i) == "dev" for i in ids)
    assert 70 < dev < 130


def test_every_round_with_non_coding_questions_is_covered(bank) -> None:
    rounds = {q.round.value for q in bank.questions.values() if not q.coding_task}
    assert rounds <= set(COVERED_ROUNDS), (
        f"rounds without a complete trap set: {sorted(rounds - set(COVERED_ROUNDS))}"
    )
