"""The rubrics' classic wrong claims, read against right answers written without the rubrics.

``tests/data/right/answers.jsonl`` and ``tests/data/right/corrections.jsonl`` each hold one strong answer per
trap-set question, written from the question's text alone; about half of the second set's answers name a
misconception only to reject it. A wrong claim read in one of them is a false challenge (and a score capped at
1.5), so the list of those the scorer reads today is pinned here: a new authored claim, or a looser reader, that
takes another right answer for a wrong one fails this module. Each phrasing of a claim must also be read when
said on its own, or it is dead weight the paraphrase reader still compares against.
"""

from __future__ import annotations

import pytest

from interviewer.scoring.claims import find_contradictions
from tests.support.right import SETS, right_answers
from tests.support.traps import load_traps

# (question, claim) pairs the scorer reads in an independent right answer today: each is a right sentence in a
# wrong claim's words ("a multiple of 32 ... usually 128 or 256" for "1024 is always best"), the paraphrase
# reader's known limit. The list may shrink; it must not grow.
KNOWN_FALSE_READINGS = {
    ("behavioral.field-direction", "hardware no longer matters"),
    ("cpp.linking-undefined-reference", "libraries first"),
    ("gpu.execution.threads-per-block", "1024 is always best"),
    ("gpu.tensor-cores.shape-alignment", "extra work explains it"),
    ("inference.data.spark-skew", "aqe fixes aggregations"),
    ("inference.quant.smoothquant", "smoothquant clips"),
    ("mlcode.broadcasting-pitfalls", "broadcasts element-wise"),
    ("mlcode.gradient-check", "absolute threshold"),
    ("mlcode.layernorm-vs-batchnorm-axes", "axes swapped"),
    ("mlcode.mixed-precision-loss-scaling", "scaling prevents overflow"),
}
# The same for the answers that correct a misconception (corrections.jsonl): mostly a right sentence beside a
# rejected one ("confident correct ones barely move" for "the gradient vanishes for confident mistakes"), or a
# rejection the readers do not see ("telling it not to ... is not a guard": two negations cancel out).
KNOWN_FALSE_READINGS_CORRECTIONS = {
    ("case.latency-scoping", "first token is everything"),
    ("case.ttft-regression-engine-switch", "closed-loop replay is fine"),
    ("design.per-gpu-dashboard", "busy counter is utilization"),
    ("design.runaway-query-guard", "prompt prevents costly sql"),
    ("gpu.memory.vectorized-loads", "float4 on any pointer"),
    ("gpu.reduction.across-blocks", "spin on a flag"),
    ("mlcode.batchnorm-train-vs-eval", "eval only affects dropout"),
    ("mlcode.gradient-check", "absolute threshold"),
    ("mlcode.layernorm-vs-batchnorm-axes", "axes swapped"),
    ("phone.hardware.amdahls-law", "linear speedup"),
    ("phone.hardware.mixed-precision-loss-scaling", "scaling prevents overflow"),
    ("phone.theory.softmax-cross-entropy-gradient", "gradient vanishes for confident mistakes"),
}


@pytest.mark.parametrize("name", SETS)
def test_there_is_one_right_answer_for_every_trap_question(bank, name: str):
    answers = right_answers(name)
    assert set(answers) == set(load_traps())
    assert all(q in bank.questions for q in answers)
    assert all(60 <= len(t.split()) <= 190 for t in answers.values())


def test_every_phrasing_of_a_wrong_claim_is_read_when_said_on_its_own(bank):
    dead = [
        f"{q.id} '{c.name}': {p!r}"
        for q in bank.questions.values()
        for c in q.contradictions
        for p in c.any_of
        if not find_contradictions(f"{p[0].upper()}{p[1:]}.", [c])
    ]
    assert dead == [], "\n".join(dead)


@pytest.mark.parametrize(
    ("name", "known"), [(SETS[0], KNOWN_FALSE_READINGS), (SETS[1], KNOWN_FALSE_READINGS_CORRECTIONS)]
)
def test_no_right_answer_is_read_as_a_wrong_claim_beyond_the_known_ones(
    bank, bank_scorer, name: str, known: set[tuple[str, str]]
):
    read = {
        (qid, hit.name)
        for qid, text in right_answers(name).items()
        for hit in bank_scorer.wrong_claims(bank.get(qid), text)
    }
    assert read - known == set(), sorted(read - known)
    # the pinned list is what the readers do today, not a wish: an entry no longer read is taken off it
    assert known - read == set(), sorted(known - read)
