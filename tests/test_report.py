"""Feedback reports and progress: rendering with and without coding, unfinished rounds, spaced repetition."""

from __future__ import annotations

from interviewer.content import Bank, Question
from interviewer.report import build_report, count_fillers, next_plan, render_html, render_markdown, skill_map
from interviewer.scoring.models import Cap, CriterionScore, QuestionScore
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


class FixedScorer:
    def __init__(self, overall: float, depth: int) -> None:
        self.overall, self.depth = overall, depth

    def score(self, question, answers, code_verdict_passed=None, hints=()) -> QuestionScore:
        return QuestionScore(
            question_id=question.id,
            overall=self.overall,
            why_depth=self.depth,
            criteria=[
                CriterionScore(
                    criterion=question.criteria[0].name,
                    level=int(self.overall),
                    evidence=[answers[0][:60]],
                    method="coverage",
                )
            ],
            key_points_missed=[question.key_points[-1]],
            methods=["coverage"],
        )


def _run(bank, store, rounds, answers, scorer, owner="me", code=None, finish=True):
    it = Interview.start(Ports(bank=bank, store=store, scorer=scorer, owner=owner), rounds, per_round=1)
    for a in answers:
        it.advance_all()
        if code is not None and it.level == 0:
            it.record_code_run(code)
        it.submit(a)
    if finish:
        it.advance_all()
    else:
        it.end()
    return it


def test_report_without_coding_escapes_candidate_text(fixture_bank, tmp_path):
    store = SessionStore(tmp_path / "s.db")
    it = _run(
        fixture_bank,
        store,
        ["phone-screen"],
        [f"4.7x {XSS}", "perfect scaling", "bandwidth"],
        FixedScorer(3.5, 2),
    )
    rep = build_report(store, fixture_bank, it.session_id, owner="me")
    assert rep.rounds[0].signal == "strong hire" and rep.overall_signal == "strong hire"
    md = render_markdown(rep)
    page = render_html(rep)
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "<script>" not in page and "<img src=x" not in page and "&lt;img src=x onerror" in page
    assert "Practice signal from a mock interview" in md and "Practice signal" in page
    assert "knowledge/phone-screen/amdahl.md" in md  # study plan links the missed key point's document
    assert "<svg" in page  # the chart is inline


def test_report_with_a_failing_coding_run_and_an_unfinished_round(fixture_bank, tmp_path):
    store = SessionStore(tmp_path / "s.db")
    verdict = {
        "passed": False,
        "tests": [{"name": "padding", "passed": False, "message": "shape (3, 3) != (4, 4)"}],
    }
    it = _run(
        fixture_bank,
        store,
        ["phone-screen", "inference-case"],
        ["answer one"],
        FixedScorer(2.0, 0),
        code=verdict,
        finish=False,
    )
    rep = build_report(store, fixture_bank, it.session_id, owner="me")
    phone, case = rep.rounds
    assert phone.questions[0].code_runs[0].failing == ["padding: shape (3, 3) != (4, 4)"]
    assert "1 coding task(s) with failing hidden tests" in phone.reasons
    assert case.signal == "not enough signal" and case.questions[0].status == "not reached"
    md = render_markdown(rep)
    assert "Not reached in this session" in md and "padding: shape (3, 3) != (4, 4)" in md
    assert "why-chain broke at level 1" in md


def test_report_scores_unscored_answers_when_given_a_scorer(fixture_bank, tmp_path):
    store = SessionStore(tmp_path / "s.db")
    it = _run(fixture_bank, store, ["phone-screen"], ["a", "b", "c"], scorer=None)
    assert build_report(store, fixture_bank, it.session_id).rounds[0].questions[0].status == "answered"
    rep = build_report(store, fixture_bank, it.session_id, scorer=FixedScorer(1.0, 0))
    assert rep.rounds[0].questions[0].status == "scored" and rep.rounds[0].signal == "no hire"


def test_skill_map_and_next_plan_bring_weak_topics_back(fixture_bank, tmp_path):
    store = SessionStore(tmp_path / "s.db")
    _run(fixture_bank, store, ["phone-screen"], ["a", "b", "c"], FixedScorer(1.0, 0))
    _run(fixture_bank, store, ["inference-case"], ["a", "b", "c"], FixedScorer(4.0, 2))
    points = skill_map(store, fixture_bank, owner="me")
    assert [(p.round, p.score) for p in points] == [("phone-screen", 1.0), ("inference-case", 4.0)]
    assert skill_map(store, fixture_bank, owner="someone-else") == []
    # With a fresh question beside it, the weak one still comes first and the new one fills the second slot.
    amdahl = fixture_bank.get("fx.amdahl")
    bank = Bank(root=fixture_bank.root, questions={**fixture_bank.questions})
    for i in range(3):
        bank.questions[f"fx.new{i}"] = amdahl.model_copy(update={"id": f"fx.new{i}"})
    for _ in range(5):
        plan = next_plan(store, bank, ["phone-screen"], 2, owner="me")
        assert "fx.amdahl" in plan and len(plan) == 2
    # A strong answer does not come back ahead of an unseen question.
    case = fixture_bank.get("fx.stage-latency")
    bank.questions["fx.case-new"] = case.model_copy(update={"id": "fx.case-new"})
    assert next_plan(store, bank, ["inference-case"], 1, owner="me") == ["fx.case-new"]


def test_filler_count():
    assert count_fillers("Um, so basically the, uh, cache is like full") == 4


def test_report_and_progress_cover_questions_stored_with_the_session(fixture_bank, tmp_path):
    from interviewer.content import Question, Round

    store = SessionStore(tmp_path / "s.db")
    base = fixture_bank.by_round("phone-screen")[0]
    extra = Question.model_validate({**base.model_dump(), "id": "resume.dana.1", "round": Round.DEEP_DIVE})
    ports = Ports(bank=fixture_bank, store=store, scorer=FixedScorer(2.0, 1), owner="me")
    it = Interview.start(ports, [Round.DEEP_DIVE], question_ids=[extra.id], extra_questions=[extra])
    for a in ["my cache cut p99", "the hit rate held", "it thrashes"]:
        it.advance_all()
        it.submit(a)
    it.advance_all()  # the closing message; the last question is scored as the interviewer moves on
    rep = build_report(store, fixture_bank, it.session_id, owner="me")  # the shared bank lacks resume.dana.1
    assert rep.rounds[0].questions[0].status == "scored" and "my cache cut p99" in render_markdown(rep)
    points = skill_map(store, fixture_bank, owner="me")
    assert [(p.round, p.topic) for p in points] == [(Round.DEEP_DIVE.value, base.topic)]


def test_an_asserted_wrong_claim_rules_out_strong_hire_and_is_given_as_a_reason():
    from interviewer.report import _signal

    assert _signal(3.5, 2.0, 0, 3)[0] == "strong hire"
    signal, reasons = _signal(3.5, 2.0, 0, 3, contradicted=1)
    assert signal == "hire"
    assert "1 answer(s) asserted a wrong central claim" in reasons


def test_the_report_shows_what_a_hint_cost_and_what_a_push_earned(fixture_bank, tmp_path):
    from interviewer.embeddings import HashingEmbedder
    from interviewer.listen import Listener
    from interviewer.scoring.scorer import HINT_COST, RubricScorer

    push = {
        "kind": "derive",
        "ask": "With 16 workers instead of 8, what speedup do you expect now?",
        "key_points": ["1 / (0.1 + 0.9 / 16) is about 6.4x", "the serial part still caps it at 10x"],
    }
    hint = "Split the time into the part that shrinks with workers and the part that does not."
    q = Question.model_validate({**fixture_bank.get("fx.amdahl").model_dump(), "hint": hint, "push": [push]})
    bank = Bank(root=fixture_bank.root, questions={q.id: q})
    store = SessionStore(tmp_path / "s.db")
    # Interviewed without a scorer: the report scores the stored answers, hints and push included.
    it = Interview.start(Ports(bank=bank, store=store, listener=Listener(), owner="me"), ["phone-screen"])
    said = iter(
        [
            "I don't know.",
            "It is 1 / (0.1 + 0.9 / 8), about 4.7x, and the serial part caps it at 10x however many workers.",
            "It assumes perfect scaling of the parallel fraction and no contention for memory bandwidth.",
            "Bandwidth saturates so adding workers stops helping; the effective parallel fraction shrinks.",
            "1 / (0.1 + 0.9 / 16) is about 6.4x, and the serial part still caps it at 10x.",
        ]
    )
    it.advance_all()
    while not it.finished:
        it.submit(next(said))
        it.advance_all()
    assert it.scoring.hints_used(q.id) == 1
    rep = build_report(store, bank, it.session_id, owner="me", scorer=RubricScorer(HashingEmbedder()))
    score = rep.rounds[0].questions[0].score
    assert score is not None and [a.kind for a in score.adjustments] == ["push", "hint"]
    md, page = render_markdown(rep), render_html(rep)
    hint_note = f"hint given at the main question: -{HINT_COST:.2f}"
    assert f"- {hint_note}" in md and hint_note in page
    assert "- push (derive): coverage " in md and "push (derive): coverage " in page
    assert "needed 1 hint(s)" in md  # the study plan says the question needed help


class CappedScorer(FixedScorer):
    """A score held down by one of the scorer's caps, beside a note meant for the scorer's own log."""

    CAP = "capped at 1.5: a real time was asked for, and the answers tell none (a principle, a habit or a plan instead)"

    def score(self, question, answers, code_verdict_passed=None, hints=()) -> QuestionScore:
        base = super().score(question, answers, code_verdict_passed, hints)
        cap = Cap(kind="no-episode", at=1.5, note=self.CAP)
        return base.model_copy(
            update={
                "notes": ["coverage level 3.1 from 4 key points", "capped at 0.5: a log line"],
                "caps": [cap],
            }
        )


def test_the_report_says_why_a_score_was_capped(fixture_bank, tmp_path):
    store = SessionStore(tmp_path / "s.db")
    it = _run(
        fixture_bank, store, ["phone-screen"], ["4.7x", "perfect scaling", "bandwidth"], CappedScorer(1.5, 0)
    )
    rep = build_report(store, fixture_bank, it.session_id, owner="me")
    md, page = render_markdown(rep), render_html(rep)
    assert f"- {CappedScorer.CAP}" in md and f"<li>{CappedScorer.CAP}</li>" in page
    assert (
        "coverage level 3.1" not in md and "coverage level 3.1" not in page
    )  # the scorer's own notes stay out, whatever their words: the report shows the caps it was given
    assert "a log line" not in md and "a log line" not in page
