"""Rubric content the interviewer says out loud: hints, push asks and challenges never give the answer away.

The interviewer reads a question's ``hint``, its why-steps' ``hint``, its ``push`` asks and its contradictions'
``challenge`` to the candidate verbatim. None of them may share a run of five words (lower-cased, punctuation
stripped) with what the candidate is graded on: the question's key points, its model answer, its why-steps'
targets and key points, and its push steps' key points. The seeds' four classic wrong answers sit on the
questions they belong to, and no question's own model answer or key points assert one of its wrong claims.
"""

from __future__ import annotations

import re

import pytest

from interviewer.content import Question
from interviewer.scoring.claims import find_contradictions

RUN = 5
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased words with punctuation (hyphens, quotes, slashes) stripped."""
    return _WORD.findall(text.lower().replace("'", ""))


def runs(text: str, n: int = RUN) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def graded_text(q: Question) -> list[str]:
    """Everything the candidate is scored against, which must never be read out to them."""
    out = [*q.key_points, q.model_answer]
    for step in q.why_chain:
        out += [step.target, *step.key_points]
    for p in q.push:
        out += p.key_points
    return out


def spoken(q: Question) -> list[tuple[str, str]]:
    """(where, text) for every authored line the interviewer says to the candidate."""
    out: list[tuple[str, str]] = []
    if q.hint:
        out.append(("hint", q.hint))
    for step in q.why_chain:
        if step.hint:
            out.append((f"why {step.level} hint", step.hint))
    for i, p in enumerate(q.push):
        out.append((f"push {i + 1}", p.ask))
    for c in q.contradictions:
        out.append((f"challenge '{c.name}'", c.challenge))
    for part in q.components:
        out.append((f"whiteboard ask '{part.name}'", part.ask))
    return out


def leaks(q: Question) -> list[str]:
    graded: set[tuple[str, ...]] = set()
    for text in graded_text(q):
        graded |= runs(text)
    found = []
    for where, text in spoken(q):
        shared = runs(text) & graded
        if shared:
            found.append(f"{q.id} {where}: {' '.join(sorted(shared)[0])!r}")
    return found


def test_the_overlap_check_sees_a_leak_and_ignores_short_shared_words():
    assert runs("What happens to the FIRST request, in that batch?") & runs(
        "the first request in that batch waits"
    )
    assert not runs("what limits the kernel?") & runs("the kernel is memory-bound")
    assert words("Don't sync-less") == ["dont", "sync", "less"]


def test_no_hint_push_or_challenge_shares_five_words_with_what_is_graded(bank):
    found = [leak for q in bank.questions.values() for leak in leaks(q)]
    assert not found, "\n".join(found)


def test_the_leak_check_fails_a_rubric_that_reads_out_its_own_key_point(bank):
    q = bank.questions["case.stage-vs-end-to-end"]
    leaky = q.model_copy(update={"hint": f"Think about this: {q.key_points[1]}."})
    assert leaks(leaky) and not leaks(q)


def test_every_contradiction_caps_a_criterion_the_question_has(bank):
    for q in bank.questions.values():
        names = {c.name for c in q.criteria}
        for c in q.contradictions:
            assert c.criterion is None or c.criterion in names, (q.id, c.name)
            assert c.challenge.rstrip().endswith("?"), (q.id, c.name)
            assert len(set(c.any_of)) == len(c.any_of), (q.id, c.name)


def test_no_question_asserts_its_own_wrong_claims(bank):
    """A phrasing that also matches the model answer or a key point would cap a correct answer."""
    bad = []
    for q in bank.questions.values():
        right = [q.model_answer, *q.key_points, *(kp for s in q.why_chain for kp in s.key_points)]
        for text in right + [kp for p in q.push for kp in p.key_points]:
            for hit in find_contradictions(text, q.contradictions):
                bad.append(f"{q.id}: '{hit.name}' matched in {hit.sentence!r}")
    assert not bad, "\n".join(bad)


CLASSIC = {
    "case.stage-vs-end-to-end": "service twice as fast",
    "inference.data.object-storage-rename": "renames are atomic",
    "cpp.tiled-transpose": "fence-post on the last tile",
    "case.async-timing-and-warmup": "timing without synchronisation",
}


@pytest.mark.parametrize("qid", sorted(CLASSIC))
def test_the_seeds_classic_mistakes_sit_on_their_questions(bank, qid):
    names = {c.name for c in bank.questions[qid].contradictions}
    assert CLASSIC[qid] in names, (qid, sorted(names))


def test_the_classic_mistakes_are_caught_when_asserted_and_not_when_denied(bank):
    said = {
        "case.stage-vs-end-to-end": (
            "The new engine makes the service twice as fast.",
            "The service is not 2x faster.",
        ),
        "inference.data.object-storage-rename": (
            "Renames are atomic on S3, so readers never see half a directory.",
            "Renames are not atomic on S3.",
        ),
        "cpp.tiled-transpose": (
            "N is always a multiple of the tile size, so I just loop over N / T tiles.",
            "I bound each tile with min(i + T, N), so the last partial tile is not skipped.",
        ),
        "case.async-timing-and-warmup": (
            "I record time.time() before and after the call; the call returns when the GPU is done.",
            "The call does not return when the GPU is done, so I synchronize before reading the clock.",
        ),
    }
    for qid, (wrong, right) in said.items():
        q = bank.questions[qid]
        assert CLASSIC[qid] in {h.name for h in find_contradictions(wrong, q.contradictions)}, (qid, wrong)
        assert CLASSIC[qid] not in {h.name for h in find_contradictions(right, q.contradictions)}, (
            qid,
            right,
        )


def test_coverage_of_contradictions_hints_and_push_steps(bank):
    """Issue #11 asks for contradictions on >= 70 non-coding questions, #12 for a hint on every non-coding
    question and push steps on >= 50 questions; the bank keeps a margin above both."""
    talk = [q for q in bank.questions.values() if not q.coding_task]
    assert len(talk) >= 90
    without_hint = [q.id for q in talk if not q.hint or not all(s.hint for s in q.why_chain)]
    assert not without_hint, f"non-coding questions missing a hint or a why-step hint: {without_hint}"
    with_contradiction = sum(1 for q in talk if q.contradictions)
    assert with_contradiction >= 90, with_contradiction
    with_push = sum(1 for q in bank.questions.values() if q.push)
    assert with_push >= 100, with_push
    kinds = {p.kind for q in bank.questions.values() for p in q.push}
    assert kinds == {"derive", "constraint"}
    for q in bank.questions.values():
        assert len({c.name for c in q.contradictions}) == len(q.contradictions), q.id


def test_the_scorer_samples_strong_answers_assert_no_wrong_claim_and_the_wrong_ones_do(bank):
    """Answers written for the scorer tests (not the trap set): right ones stay clear, wrong ones are caught."""
    from .scoring_samples import ANSWERS, WHY

    for qid, answers in ANSWERS.items():
        q = bank.questions[qid]
        for kind in ("strong", "partial"):
            assert not find_contradictions(answers[kind], q.contradictions), (qid, kind)
        wrong = answers.get("wrong_topical", answers["wrong"])
        assert find_contradictions(wrong, q.contradictions), (qid, "wrong")
    for qid, replies in WHY.items():
        for reply in replies:
            assert not find_contradictions(reply, bank.questions[qid].contradictions), (qid, reply)


@pytest.mark.parametrize(
    "answer",
    [
        "A slow answer.",
        "candidate 3 [ab12] turn 1: the bottleneck moves to memory bandwidth, so I measure first.",
    ],
)
def test_the_standin_follow_up_is_accepted_on_every_question(bank, answer):
    """Tests that serve the real bank through the stand-in server expect its follow-up, not the authored one,
    on whichever question a round draws: its reply must pass the engine's checks on every question."""
    from interviewer import listen
    from interviewer.llm.standin import default_reply
    from interviewer.session import followup_problem

    rejected = []
    for q in bank.questions.values():
        for level in (1, 2):
            step = q.why(level)
            prompt = f"It must probe: {step.target}.\n<candidate_answer>{answer}</candidate_answer>"
            text = default_reply([{"role": "user", "content": prompt}])
            target = f"{step.target} {' '.join(step.key_points)} {q.question}"
            problem = followup_problem(text, target, answer, [q.question]) or listen.leak(text, q, [answer])
            if problem:
                rejected.append(f"{q.id} why {level}: {problem}")
    assert rejected == []


def test_the_listener_never_challenges_what_the_rubric_holds_true(bank):
    """The looser claim reader (a claim in other words) must not take a right statement for a wrong claim that
    shares most of its words ("at most 1024 threads" vs "more than 1024 threads"): it would challenge a strong
    candidate for being right."""
    from interviewer.listen import _loose_claims

    bad = []
    for q in bank.questions.values():
        strong = " ".join([q.model_answer, *(k.rstrip(".") + "." for k in q.why(1).key_points)])
        right = [strong, *q.key_points, *(kp for s in q.why_chain for kp in s.key_points)]
        for text in right + [kp for p in q.push for kp in p.key_points]:
            for hit in _loose_claims(text, q, set()):
                bad.append(f"{q.id}: '{hit.claim}' read in {hit.sentence[:80]!r}")
    assert not bad, "\n".join(bad)


def test_the_follow_up_writer_is_told_no_private_rubric_wording(bank, tmp_path):
    """The writer model is given what each why level is for and the candidate's words, never the rubric's key
    points or why-targets: what it is not told it cannot echo, so the leak guard discards fewer of its questions.
    Checked with the leak guard itself on the whole prompt, for every question and level."""
    from interviewer import listen
    from interviewer.engine.events import SessionLog, initial_state
    from interviewer.engine.followups import FollowupWriter
    from interviewer.engine.ports import Ports
    from interviewer.store import SessionStore

    store = SessionStore(tmp_path / "s.db")
    ports = Ports(bank=bank, store=store)
    leaked = []
    for q in bank.questions.values():
        plan = {"rounds": [q.round.value], "questions": [q.id]}
        log = SessionLog(store, store.create("local", q.id, plan), initial_state(plan), lambda: 0.0)
        writer = FollowupWriter(ports, log, lambda notice: None)
        for level in (1, 2):
            prompt = "\n".join(str(m.content) for m in writer.messages(q, level, answer="It depends."))
            found = listen.leak(prompt, q)
            if found is not None:
                leaked.append(f"{q.id} why {level}: {found!r}")
    assert leaked == []
