"""Scores from the reading probes' findings: contradictions cap, vocabulary-only credit halves, off-topic yields.

Most tests use a scripted reader (a callable that returns the findings a test wants), so the rules are checked
without a model; one goes through the real reader (:func:`interviewer.scoring.reader.read_question`) on the
project's scripted chat model, so the adapter is exercised end to end.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from interviewer.content.models import Question
from interviewer.embeddings import HashingEmbedder
from interviewer.errors import ModelError
from interviewer.llm.fake import ScriptedChatModel
from interviewer.report import QuestionReport, Report, RoundReport, render_html, render_markdown
from interviewer.scoring.models import QuestionScore
from interviewer.scoring.probe_reader import ProbeReader
from interviewer.scoring.scorer import CONTRADICTED_ANSWER_MAX, CONTRADICTED_CRITERION_MAX, RubricScorer
from interviewer.scoring.stages import (
    MIN_KIND_TRUST,
    MIN_READER_TRUST,
    VOCABULARY_ONLY_CREDIT,
    ReaderTrust,
    ReadingFinding,
    ReadingInput,
    ReadingVerdict,
)
from tests.scoring_samples import ANSWERS, DECODE_ID

WRONG_PHASES = "Prefill is the bandwidth-bound phase and decode the compute-bound one."
PHASE_POINT = "main.4"  # "How does the candidate characterise prefill compared with decode?"


@pytest.fixture(scope="module")
def scorer() -> RubricScorer:
    return RubricScorer(HashingEmbedder())


@pytest.fixture(scope="module")
def question(bank) -> Question:
    return bank.get(DECODE_ID)


class Scripted:
    """A reader that finds what it is told per probe point (every other probe: not stated)."""

    def __init__(
        self,
        found: dict[str, tuple[ReadingVerdict, str | None]] | None = None,
        trust: float | ReaderTrust | None = 0.9,
    ) -> None:
        self.found = found or {}
        self.trust = trust
        self.asked: list[ReadingInput] = []

    def __call__(self, asked: ReadingInput) -> list[ReadingFinding]:
        self.asked.append(asked)
        out = []
        for p in asked.probes:
            verdict, quote = self.found.get(p.point, ("absent", None))
            read = None
            if verdict == "contradicted":
                read = p.wrong[0] if p.kind == "option" else p.reject[0] if p.kind == "named" else -1.0
            elif verdict == "stated":
                read = p.true if p.kind == "option" else p.accept[0] if p.kind == "named" else p.value
            out.append(ReadingFinding(p, read, verdict, quote))
        return out


def _strong_with_wrong_phases() -> str:
    return ANSWERS[DECODE_ID]["strong"] + " " + WRONG_PHASES


def test_a_contradicted_probe_caps_its_criterion_and_the_question_and_quotes_the_candidates_sentence(
    scorer: RubricScorer, question: Question
) -> None:
    answer = _strong_with_wrong_phases()
    offline = scorer.score(question, [answer])
    assert offline.overall > CONTRADICTED_ANSWER_MAX  # the rubric's own contradictions miss this wording
    reader = Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)})
    read = scorer.score(question, [answer], reader=reader)
    assert read.overall <= CONTRADICTED_ANSWER_MAX
    hit = [c for c in read.criteria if c.status == "contradicted"]
    assert hit and all(c.level <= CONTRADICTED_CRITERION_MAX for c in hit)
    assert hit[0].contradicted_by == WRONG_PHASES
    assert f"you said \u201c{WRONG_PHASES}\u201d" in hit[0].reason
    assert "prefill is compute-bound, decode bandwidth-bound" in hit[0].reason  # the probe's true claim
    assert all(WRONG_PHASES not in c.evidence for c in read.criteria)
    verdict = next(v for v in read.verdicts if v.key_point == question.key_points[4])
    assert verdict.verdict == "contradicted" and verdict.quote == WRONG_PHASES
    assert verdict.method == "reading-probes"
    assert "reading-probes" in read.methods


def test_a_contradiction_read_in_a_sentence_that_also_states_the_truth_decides_nothing(
    scorer: RubricScorer, question: Question
) -> None:
    answer = _strong_with_wrong_phases()
    both = Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES), "main.3": ("stated", WRONG_PHASES)})
    read = scorer.score(question, [answer], reader=both)
    assert read.overall > CONTRADICTED_ANSWER_MAX
    assert not any(c.status == "contradicted" for c in read.criteria)
    assert any("read both ways" in n for n in read.notes)


def test_vocabulary_only_credit_is_halved(scorer: RubricScorer, question: Question) -> None:
    answer = ANSWERS[DECODE_ID]["strong"]
    offline = scorer.score(question, [answer])
    assert offline.key_points_covered  # coverage credits key points through shared words
    nothing = scorer.score(question, [answer], reader=Scripted({}))
    everything = scorer.score(
        question, [answer], reader=Scripted({f"main.{i}": ("stated", None) for i in range(5)})
    )
    assert everything.overall == pytest.approx(offline.overall, abs=0.01)
    assert nothing.overall < offline.overall - 0.3
    # the level falls by at most the halved share: never below half of what coverage gave
    assert nothing.overall >= VOCABULARY_ONLY_CREDIT * offline.overall - 0.01
    assert any("probes find them not stated" in n for n in nothing.notes)


def test_only_a_probe_kind_trusted_on_its_own_halves_credit_while_a_less_trusted_one_still_caps(
    scorer: RubricScorer, question: Question
) -> None:
    """Option probes read at 0.55 act (a wrong claim they read caps) but their "not stated" halves nothing;
    the number probes, read at 0.9, still halve the key points only they read."""
    answer = ANSWERS[DECODE_ID]["strong"]
    offline = scorer.score(question, [answer])
    per_kind = ReaderTrust(0.75, {"option": 0.55, "number": 0.9})
    assert per_kind.acts_on("option") and not per_kind.absent_on("option") and per_kind.absent_on("number")
    quiet = scorer.score(question, [answer], reader=Scripted({}, trust=per_kind))
    everywhere = scorer.score(question, [answer], reader=Scripted({}, trust=0.9))
    # main.0 (also read by a number probe) and main.1 (a number probe alone) halve; main.2-4 (options) do not
    with_numbers = [
        i for i in range(5) if any(p.kind == "number" for p in question.probes if p.point == f"main.{i}")
    ]
    halvable = [i for i in with_numbers if question.key_points[i] in offline.key_points_covered]
    assert with_numbers == [0, 1] and halvable
    assert everywhere.overall < quiet.overall <= offline.overall + 0.01
    halved = next(n for n in quiet.notes if "probes find them not stated" in n)
    assert halved.startswith(f"{len(halvable)} key point")
    capped = scorer.score(
        question,
        [_strong_with_wrong_phases()],
        reader=Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)}, trust=per_kind),
    )
    assert capped.overall <= CONTRADICTED_ANSWER_MAX


def test_off_topic_never_fires_when_the_probes_find_a_key_point_stated(
    scorer: RubricScorer, question: Question
) -> None:
    short = "It idles waiting on HBM; 7 ms."
    offline = scorer.score(question, [short])
    assert offline.overall <= 0.5 and any(c.status == "off-topic" for c in offline.criteria)
    stated = scorer.score(question, [short], reader=Scripted({"main.1": ("stated", short)}))
    assert not any(c.status == "off-topic" for c in stated.criteria)
    assert stated.overall >= offline.overall
    silent = scorer.score(question, [short], reader=Scripted({}))
    assert silent.overall <= 0.5 and any(c.status == "off-topic" for c in silent.criteria)


def test_an_option_read_alone_on_a_text_about_something_else_does_not_lift_the_off_topic_rule(
    scorer: RubricScorer, question: Question
) -> None:
    elsewhere = "We tracked everything in Jira tickets and held daily standups during two-week sprints."
    offline = scorer.score(question, [elsewhere])
    assert any(c.status == "off-topic" for c in offline.criteria)
    # a claim "read" in a text whose words cover no key point is the model's guess: still off-topic
    guessed = scorer.score(question, [elsewhere], reader=Scripted({"main.2": ("stated", elsewhere)}))
    assert any(c.status == "off-topic" for c in guessed.criteria)
    assert guessed.overall <= 0.5
    # a number the candidate wrote is borne out by the text itself: about the question
    typed = scorer.score(question, [elsewhere], reader=Scripted({"main.1": ("stated", elsewhere)}))
    assert not any(c.status == "off-topic" for c in typed.criteria)


@pytest.mark.parametrize("trust", [None, MIN_READER_TRUST - 0.01])
def test_a_reader_below_the_minimum_trust_is_noted_and_changes_nothing(
    scorer: RubricScorer, question: Question, trust: float | None
) -> None:
    answer = _strong_with_wrong_phases()
    offline = scorer.score(question, [answer])
    low = scorer.score(
        question, [answer], reader=Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)}, trust)
    )
    assert low.overall == offline.overall
    assert [c.level for c in low.criteria] == [c.level for c in offline.criteria]
    assert any("noted only" in n for n in low.notes)


def test_findings_act_only_for_the_probe_kinds_the_model_reads_well_enough(
    scorer: RubricScorer, question: Question
) -> None:
    answer = _strong_with_wrong_phases()
    offline = scorer.score(question, [answer])
    picks_poorly = ReaderTrust(0.8, {"option": MIN_KIND_TRUST - 0.1, "number": 0.9})
    # the phase probe is an option probe: read by a model measured below the bar on options, it is noted only
    numbers: dict[str, tuple[ReadingVerdict, str | None]] = {
        k: ("stated", None) for k in ("main.0", "main.1")
    }
    contradicted = Scripted({**numbers, PHASE_POINT: ("contradicted", WRONG_PHASES)}, picks_poorly)
    noted = scorer.score(question, [answer], reader=contradicted)
    assert noted.overall == offline.overall
    assert not any(c.status == "contradicted" for c in noted.criteria)
    assert any("option probes at 0.40" in n and "noted only" in n for n in noted.notes)
    # nor does a silent option probe halve vocabulary credit for it
    assert noted.overall == scorer.score(question, [answer], reader=Scripted(numbers, picks_poorly)).overall
    # the same model's number probes act: a wrong per-token time caps the answer
    wrong_time = Scripted({"main.1": ("contradicted", answer.split(". ")[0])}, picks_poorly)
    assert scorer.score(question, [answer], reader=wrong_time).overall <= CONTRADICTED_ANSWER_MAX
    # measured well on every kind, the option finding caps as before
    reads_well = Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)}, ReaderTrust(0.8, {"option": 0.7}))
    assert scorer.score(question, [answer], reader=reads_well).overall <= CONTRADICTED_ANSWER_MAX


def test_the_scorers_own_trust_applies_to_a_reader_without_one(question: Question) -> None:
    def bare(asked: ReadingInput) -> list[ReadingFinding]:
        return Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)})(asked)

    trusted = RubricScorer(HashingEmbedder(), reader=bare, reader_trust=MIN_READER_TRUST)
    assert trusted.score(question, [_strong_with_wrong_phases()]).overall <= CONTRADICTED_ANSWER_MAX


def test_a_reader_that_fails_leaves_the_offline_score_with_a_note(
    scorer: RubricScorer, question: Question
) -> None:
    def broken(asked: ReadingInput) -> list[ReadingFinding]:
        raise ModelError("no model at http://127.0.0.1:9/v1: start one")

    answer = ANSWERS[DECODE_ID]["partial"]
    offline = scorer.score(question, [answer])
    read = scorer.score(question, [answer], reader=broken)
    assert read.overall == offline.overall
    assert any("reading probes unavailable" in n and "no model" in n for n in read.notes)


def test_a_contradicted_why_key_point_is_not_answered_well(scorer: RubricScorer, question: Question) -> None:
    from tests.scoring_samples import WHY

    answers = [ANSWERS[DECODE_ID]["strong"], *WHY[DECODE_ID]]
    offline = scorer.score(question, answers)
    assert offline.why_depth >= 1
    wrong_why = Scripted({"why1.0": ("contradicted", WHY[DECODE_ID][0]), "why2.0": ("contradicted", None)})
    read = scorer.score(question, answers, reader=wrong_why)
    assert read.why_depth == 0
    assert {a.answers.get("why1") for a in wrong_why.asked} == {WHY[DECODE_ID][0]}


def _report(score: QuestionScore, question: Question) -> Report:
    q = QuestionReport(
        id=question.id,
        round=question.round,
        topic=question.topic,
        question=question.question,
        status="scored",
        score=score,
    )
    rr = RoundReport(
        round=question.round, mean_score=score.overall, signal="no hire", reasons=[], questions=[q]
    )
    return Report(
        session_id="s",
        title="t",
        created=time.time(),
        status="finished",
        rounds=[rr],
        overall_signal="no hire",
        strongest=[],
        weakest=[],
        study_plan=[],
    )


def test_the_report_quotes_the_candidates_wrong_sentence_and_the_true_claim(
    scorer: RubricScorer, question: Question
) -> None:
    score = scorer.score(
        question,
        [_strong_with_wrong_phases()],
        reader=Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)}),
    )
    rep = _report(score, question)
    md, page = render_markdown(rep), render_html(rep)
    said = f"you said \u201c{WRONG_PHASES}\u201d; in fact: prefill is compute-bound, decode bandwidth-bound"
    assert said in md
    assert "you said \u201cPrefill is the bandwidth-bound phase" in page
    right = ANSWERS[DECODE_ID]["strong"].split(". ")[0]
    assert f"you said \u201c{right}" not in md  # a right sentence is never quoted as wrong


def test_the_real_reader_on_a_scripted_model_caps_a_contradicted_key_point(
    scorer: RubricScorer, question: Question
) -> None:
    def reply(messages: Sequence[BaseMessage]) -> str:
        prompt = str(messages[-1].content)
        values: dict[str, object] = {}
        for n, kind in re.findall(r"^q(\d+)\. (CLAIM|NUMBER|NAME)", prompt, re.M):
            values[f"q{n}"] = None if kind == "NUMBER" else "not stated"
            block = prompt.split(f"q{n}. ")[1].split("\nq")[0]
            wrong = re.search(r"^([A-Z])\) prefill is bandwidth-bound, decode compute-bound$", block, re.M)
            if kind == "CLAIM":
                letters = re.findall(r"^([A-Z])\) ", block, re.M)
                values[f"q{n}"] = wrong.group(1) if wrong else letters[-1]  # the last letter: not stated
        return json.dumps(values)

    model = ScriptedChatModel().queue(reply)
    reader = ProbeReader(model, trust=0.8, mode="joint")
    answer = _strong_with_wrong_phases()
    read = scorer.score(question, [answer], reader=reader)
    assert len(model.calls) == 1  # one joint request for the main answer's probes
    assert read.overall <= CONTRADICTED_ANSWER_MAX
    hit = next(c for c in read.criteria if c.status == "contradicted")
    assert hit.contradicted_by and "bandwidth-bound" in hit.contradicted_by
    assert hit.contradicted_by in answer


def test_an_undecided_probe_halves_nothing(scorer: RubricScorer, question: Question) -> None:
    class Undecided(Scripted):
        def __call__(self, asked: ReadingInput) -> list[ReadingFinding]:
            return [replace(f, undecided=True) for f in super().__call__(asked)]

    answer = ANSWERS[DECODE_ID]["strong"]
    offline = scorer.score(question, [answer])
    assert scorer.score(question, [answer], reader=Undecided({})).overall == offline.overall


def test_grade_reads_the_probes_of_items_that_name_a_bank_question(
    tmp_path: Path, bank, scorer: RubricScorer, question: Question
) -> None:
    from interviewer.scoring.batch import grade_file

    items = [
        {"question_id": question.id, "question": question.question, "answer": _strong_with_wrong_phases()},
        {
            "question": question.question,
            "reference_answer": question.model_answer,
            "answer": "Decode is slow.",
        },
    ]
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    reader = Scripted({PHASE_POINT: ("contradicted", WRONG_PHASES)})
    grade_file(src, dst, scorer=scorer, reader=reader, questions=bank.questions)
    bank_row, adhoc_row = (json.loads(x) for x in dst.read_text(encoding="utf-8").splitlines())
    assert bank_row["score"] <= CONTRADICTED_ANSWER_MAX and "reading-probes" in bank_row["methods"]
    assert any("you said" in n for n in bank_row["notes"])
    assert len(reader.asked) == 1  # the ad-hoc rubric has no probes: not read
    assert "reading-probes" not in adhoc_row["methods"]


class ReaderRecordingScorer:
    """The scorer port: records which calls came with a reader (offline 2.0; rescored 1.0)."""

    def __init__(self) -> None:
        self.readers: list[object] = []

    def score(self, question, answers, passed=None, judged=None, hints=(), reader=None) -> QuestionScore:
        self.readers.append(reader)
        return QuestionScore(question_id=question.id, overall=2.0 if judged is None else 1.0)


def test_only_the_background_rescoring_reads_the_probes(bank, tmp_path: Path) -> None:
    from interviewer.scoring.background import BackgroundJudge
    from interviewer.scoring.judge import TruthCost, TruthJudgement
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    def judge(question: str, answer: str, key_points) -> TruthJudgement:
        return TruthJudgement([], TruthCost())

    scorer, reader, runner = ReaderRecordingScorer(), Scripted({}), BackgroundJudge(judge=judge)
    ports = Ports(
        bank=bank, store=SessionStore(tmp_path / "s.db"), scorer=scorer, judge=runner, reader=reader
    )
    it = Interview.start(ports, ["inference-deep-dive"], question_ids=[DECODE_ID])
    it.advance_all()
    assert it.state.plan[0] == DECODE_ID and bank.get(DECODE_ID).probes
    for answer in ("An answer.", "A why.", "Another why."):
        it.submit(answer)
        it.advance_all()
    assert it.wait_for_judge(timeout=20)
    runner.close()
    assert scorer.readers[0] is None  # the live score: offline, never waits on a model
    assert reader in scorer.readers[1:]


def test_the_runtime_reads_with_the_configured_models_stored_trust(tmp_path: Path) -> None:
    from interviewer.config import load_settings
    from interviewer.llm.client import ChatPort
    from interviewer.runtime import ModelChoice, Runtime
    from interviewer.scoring.reader_trust import TRUST_FILE

    (tmp_path / TRUST_FILE).write_text(json.dumps({"served-id": {"weight": 0.81}}), encoding="utf-8")
    rt = Runtime(load_settings(data_dir=tmp_path, judge=True, retrieval=False))
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="scripted"), ModelChoice("http://x/v1", "served-id", "s", False)
    )
    reader = rt.reader(rt.model())
    assert isinstance(reader, ProbeReader) and reader.trust is not None and reader.trust.overall == 0.81
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="other"), ModelChoice("http://x/v1", "other-id", "o", False)
    )
    assert rt.reader(rt.model()).trust is None  # type: ignore[union-attr]  # never measured: noted only
    rt.close()


def test_a_cancelled_reading_decides_nothing_and_is_not_stored_as_a_score(
    scorer: RubricScorer, question: Question
) -> None:
    from interviewer.scoring.reader import ReadingCancelled

    def cancelled(asked: ReadingInput) -> list[ReadingFinding]:
        raise ReadingCancelled("the reading was cancelled")

    with pytest.raises(ReadingCancelled):
        scorer.score(question, [ANSWERS[DECODE_ID]["partial"]], reader=cancelled)
