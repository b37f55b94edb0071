"""Planning from the candidate's choices: loops, resume deep dives, job postings, clarifications (real bank)."""

from __future__ import annotations

import pytest

from interviewer import planner
from interviewer.config import load_settings
from interviewer.content import Round
from interviewer.errors import InputError
from interviewer.runtime import Runtime

from .conftest import REPO
from .resume_samples import RESUME_MD


@pytest.fixture
def rt(tmp_path):
    # No model server answers here: follow-ups use the authored wording, as with a dead server in real use.
    runtime = Runtime(
        load_settings(
            content_dir=REPO, data_dir=tmp_path, base_url="http://127.0.0.1:9/v1", connect_timeout=1
        )
    )
    runtime.settings = runtime.settings.model_copy(update={"retrieval": False})
    yield runtime
    runtime.close()


pytestmark = pytest.mark.slow


def test_resume_deep_dive_asks_about_the_candidates_own_project_and_survives_a_restart(rt, tmp_path):
    cv = tmp_path / "cv.md"
    cv.write_text(RESUME_MD)
    it = planner.start(rt, "dana", planner.Choice(round=Round.DEEP_DIVE.value, per_round=2, resume_path=cv))
    opening = it.advance_all()
    assert any(s in opening for s in ("480 ms", "190 ms", "Streamline", "2,600", "INT8", "sparse", "Sparse"))
    again = planner.resume_session(rt, "dana", it.session_id)
    assert again.question is not None and again.question.id == it.question.id
    with pytest.raises(InputError, match="needs your resume"):
        planner.start(rt, "dana", planner.Choice(round=Round.DEEP_DIVE.value))


def test_loop_preset_plans_its_rounds_with_time_budgets(rt):
    it = planner.start(rt, "me", planner.Choice(loop="applied-ml"))
    row = rt.store.get(it.session_id, owner="me")
    assert row.plan["loop"] == "applied-ml" and row.plan["round_minutes"]
    assert len(set(row.plan["rounds"])) >= 3


def test_posting_steers_the_rounds(rt):
    posting = "Senior engineer, TensorRT-LLM: INT8/FP8 quantization, CUDA kernels, C++17, latency"
    it = planner.start(rt, "me", planner.Choice(posting=posting, per_round=2))
    rounds = rt.store.get(it.session_id, owner="me").plan["rounds"]
    assert "inference-deep-dive" in rounds and "cpp-systems" in rounds


def test_clarifying_question_is_answered_from_the_scenario_and_stored(rt):
    design = next(q for q in rt.bank.by_round(Round.DESIGN) if q.scenario and q.scenario.facts)
    from interviewer.session import Interview

    it = Interview.start(rt.ports("me"), [Round.DESIGN], question_ids=[design.id])
    it.advance_all()
    key, value = next(iter(design.scenario.facts.items()))
    reply = planner.clarify(it, f"What is the {key.replace('_', ' ')}?")
    assert value.split()[0] in reply  # the authored fact, not an invention
    assert reply in it.messages()[-1]["content"]
    kinds = [e.kind for e in rt.store.events(it.session_id)]
    assert "clarified" in kinds and it.level == 0  # a clarification is not an answer
    with pytest.raises(InputError):
        planner.clarify(it, "   ")


def test_a_posting_with_a_picked_round_steers_that_rounds_questions(rt):
    # The UI's round dropdown always holds a round, so a pasted posting arrives together with one.
    posting = "Senior engineer, TensorRT-LLM: INT8/FP8 quantization, CUDA kernels, C++17, latency"
    for seed in range(3):
        it = planner.start(
            rt, "me", planner.Choice(round="inference-deep-dive", per_round=2, posting=posting, seed=seed)
        )
        assert set(it.state.plan) == {
            "inference.quant.asymmetric-int8",
            "inference.quant.per-channel-vs-per-layer",
        }
        assert it.state.rounds == ["inference-deep-dive"]  # the round picked stays the round asked


def test_a_resume_with_a_bank_round_says_it_is_not_used(rt, tmp_path):
    cv = tmp_path / "cv.md"
    cv.write_text(RESUME_MD)
    it = planner.start(rt, "me", planner.Choice(round=Round.BEHAVIORAL.value, per_round=1, resume_path=cv))
    assert it.notice and "resume deep dive" in it.notice
