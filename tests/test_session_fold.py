"""The session is a fold over its events: a live interview's state equals its event log replayed, at every step.

Scripted sessions come from a seeded generator (typed and spoken answers, a question back, coding runs,
clarifications, hints and redirects from the real listener, skips, pauses, restarts, the end, and the truth
judge's verdicts arriving late on another thread). After every step the live state must equal the replay of
the stored events, and the step must have had its effect (an oracle written without :func:`apply`, so a
change that never reaches the state fails here even though live and replay would agree).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from interviewer import checker
from interviewer.checker.models import TestResult, Verdict
from interviewer.content import Bank, load_question
from interviewer.engine.board import has_whiteboard
from interviewer.engine.events import State, replay
from interviewer.errors import InputError
from interviewer.listen import Listener
from interviewer.scoring.models import KeyPointVerdict, QuestionScore
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

SESSIONS = 24
MAX_STEPS = 45
REPO = Path(__file__).parent.parent
CODING = REPO / "rubrics" / "phone-screen" / "phone.coding.merge-intervals.yaml"
DESIGN = REPO / "rubrics" / "system-design" / "design.fraud-scoring.yaml"

ANSWERS = [
    "Amdahl gives about 4.7x, and the serial part caps it at 10x.",
    "It assumes the parallel part scales perfectly, with no contention for memory bandwidth.",
    "Bandwidth saturates, so adding workers stops helping and the effective parallel fraction shrinks.",
    "I don't know.",
    "It depends.",
    "My favourite pizza topping is basil and the weather in Lisbon is lovely in spring.",
    "What do you mean by workers here?",
    "Latency adds up over the stages, so the slowest stage sets the throughput and queues form before it.",
    "Batching raises throughput but each request waits for the batch, so p99 latency grows.",
    "   ",  # refused: nothing to store
]
FOLLOWUPS = [
    "Why does the serial part cap the speedup at 10x?",
    "What happens to memory bandwidth as you add workers?",
    "Great answer.",  # not a question: the authored fallback
    "Which stage sets the throughput, and why?",
]


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


class RotatingPort:
    """A model port that streams follow-ups from a fixed rotation and takes prefills (it records nothing)."""

    name = "rotating"

    def __init__(self) -> None:
        self.n = 0

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]:
        self.n += 1
        text = FOLLOWUPS[self.n % len(FOLLOWUPS)]
        yield text[: len(text) // 2]
        yield text[len(text) // 2 :]

    def prefill(self, key: str, messages: Sequence[BaseMessage]) -> None:
        pass


class ArithmeticScorer:
    """A score anyone can recompute: answers and hints in, a number out; judged verdicts add to it."""

    def score(
        self,
        question: Any,
        answers: list[str],
        passed: bool | None = None,
        judged: list[KeyPointVerdict] | None = None,
        hints: Sequence[int] = (),
    ) -> QuestionScore:
        overall = min(4.0, 0.5 * len(answers) + (1.0 if passed else 0.0) + 0.25 * len(judged or []))
        return QuestionScore(
            question_id=question.id, overall=max(0.0, overall - 0.25 * len(hints)), why_depth=0
        )


@dataclass
class LateJudge:
    """Keeps each submission until the test delivers its verdicts, on a thread of its own."""

    pending: dict[str, tuple[list[str], Callable[[Any], None]]] = field(default_factory=dict)

    def submit(
        self, key: str, question: str, answer: str, key_points: Sequence[str], done: Callable[[Any], None]
    ) -> object:
        self.pending.setdefault(key, (list(key_points), done))
        return key

    def wait(
        self, keys: Any = None, *, timeout: float | None = None, progress: Callable[[int, int], None] | None
    ) -> bool:
        return not any(k in self.pending for k in keys or self.pending)

    def deliver(self, key: str) -> None:
        points, done = self.pending.pop(key)
        verdicts = [
            KeyPointVerdict(key_point=p, verdict="stated", confidence=0.9, method="llm-judge") for p in points
        ]
        worker = threading.Thread(target=done, args=(verdicts,), name="late-judge")
        worker.start()
        worker.join()


@dataclass
class Session:
    """One scripted session: the live interview, the clock, the judge, and what each step must show."""

    rng: random.Random
    ports: Ports
    clock: Clock
    judge: LateJudge
    live: Interview
    log: list[str] = field(default_factory=list)

    def replayed(self) -> State:
        row = self.ports.store.get(self.live.session_id, owner=self.ports.owner)
        return replay(row.plan, self.ports.store.events(self.live.session_id))

    def actions(self) -> list[tuple[str, Callable[[], None]]]:
        it = self.live
        out: list[tuple[str, Callable[[], None]]] = [("restart", self.restart)]
        if self.judge.pending:
            out += [("deliver", self.deliver)] * 3
        if it.finished:
            return out
        out += [("pause", self.pause), ("end", self.end), ("skip", self.skip)]
        if it.awaiting == "interviewer":
            out += [("advance", self.advance)] * 8
        else:
            out += [("typed", self.typed), ("spoken", self.spoken)] * 5
            out += [("code_run", self.code_run), ("clarify", self.clarify), ("ahead", self.ahead)]
            q = it.question
            if q is not None and q.coding_task:
                out += [("code_run", self.code_run)] * 3
            if has_whiteboard(q):
                out += [("diagram", self.diagram)] * 3
        return out

    # the steps, each with the effect it must have ---------------------------------------------------
    def advance(self) -> None:
        before = self.live.state
        text = self.live.advance_all()
        assert self.live.messages()[-1]["content"] == text
        last = self.live.state.turns[-1] if self.live.state.turns else None
        if last is not None and last.meta.get("code_followup"):  # a test run's follow-up, asked once
            pending = before.pending_code_followup[last.qid]
            assert text.endswith(pending["text"]) and last.meta["code_followup"] == pending["kind"]
            assert last.qid not in self.live.state.pending_code_followup
        assert self.live.awaiting in ("candidate", "done")
        if self.live.finished:
            assert self.live.state.end_reason == "completed"

    def _answer(self, mode: str) -> None:
        before = self.live.state
        qid = before.qid
        assert qid is not None
        text = self.rng.choice(ANSWERS)
        extra = {"transcript": text, "audio_seconds": 3.5} if mode == "spoken" else None
        try:
            self.live.submit(text, mode=mode, extra=extra)
        except InputError:
            assert self.live.state == before  # a refused answer changes nothing
            return
        st = self.live.state
        said = [t for t in st.turns if t.role == "candidate"]
        assert said and said[-1].text == text.strip() and len(st.turns) > len(before.turns)
        if self.live.awaiting == "interviewer" and st.awaiting == "candidate":  # a question back
            assert st.turns[-1].meta.get("clarify") and len(st.turns) == len(before.turns) + 2
        else:
            assert text.strip() in "\n".join(st.answers[qid]) and st.awaiting == "interviewer"
            assert st.turns[-1].meta.get("mode") == mode

    def typed(self) -> None:
        self._answer("typed")

    def spoken(self) -> None:
        self._answer("spoken")

    def code_run(self) -> None:
        q = self.live.question
        assert q is not None
        if not q.coding_task:
            verdict = {"passed": self.rng.random() < 0.5, "tests": [], "seconds": 0.1}
            self.live.record_code_run(verdict)
            assert self.live.state.code_runs[q.id][-1] == verdict
            return
        task = checker.get_task(q.coding_task)
        tests = [TestResult(name="a plain case", passed=True)]
        if self.rng.random() < 0.5:
            tests.append(TestResult(name="first list empty", passed=False, message="got [9], expected [3]"))
        verdict = Verdict(task_id=task.id, tests=tests).model_dump(mode="json")
        self.live.record_code_run(verdict, code=task.reference_code())
        st = self.live.state
        pending = st.pending_code_followup[q.id]
        assert st.code_runs[q.id][-1] == verdict and st.code_followups[q.id][-1] == pending
        assert (pending["kind"] == "failing_case") == (not verdict["passed"])

    def diagram(self) -> None:
        q = self.live.question
        assert q is not None
        names = [c.name for c in q.components]
        drawn = self.rng.sample(names, self.rng.randrange(len(names) + 1))
        boxes = [f"n{i}[{name}]" for i, name in enumerate(drawn)] or ["x[Box]"]
        text = "flowchart LR\n" + " --> ".join(boxes)
        before = self.live.state
        asked = self.live.board.submit(q, text)
        st = self.live.state
        assert st.diagrams[q.id] == text and st.level == before.level and st.awaiting == "candidate"
        if asked is not None:
            assert st.turns[-1].text == asked and st.turns[-1].meta.get("board")
            assert st.board_asked[q.id] == [*before.board_asked.get(q.id, []), st.turns[-1].meta["about"]]
            missing = [n for n in names if n not in drawn and n not in before.board_asked.get(q.id, [])]
            if missing:
                assert asked == next(c.ask for c in q.components if c.name == missing[0])
        else:
            assert len(st.turns) == len(before.turns)

    def clarify(self) -> None:
        n = len(self.live.state.turns)
        self.live.record_clarification("Is the data already in memory?", "Assume it is in memory.")
        assert len(self.live.state.turns) == n + 2 and self.live.state.turns[-1].meta == {"clarify": True}

    def ahead(self) -> None:
        before = self.live.state
        self.live.prefill("It assumes the parallel part. ")
        self.live.speculate("It assumes the parallel part")
        assert self.live.state == before  # working ahead changes nothing

    def skip(self) -> None:
        before = self.live.state
        self.live.skip()
        assert self.live.state.idx == before.idx + 1 and self.live.state.level == 0

    def pause(self) -> None:
        self.live.pause()
        assert self.live.state.paused_at == self.clock.t

    def end(self) -> None:
        self.live.end()
        assert self.live.finished and self.live.state.end_reason == "ended-early"

    def restart(self) -> None:
        """The process dies and the session is reopened: judgements still running are lost with it."""
        self.judge.pending.clear()
        self.live = Interview.resume(self.ports, self.live.session_id)
        st = self.live.state
        assert st.paused_at is None or self.live.finished  # a pause ends with the reopening
        for qid in st.plan[: st.idx]:  # what was answered and left unscored is scored on resume
            assert qid in st.scores or not st.answers.get(qid)

    def deliver(self) -> None:
        key = self.rng.choice(sorted(self.judge.pending))
        qid = key.split("/", 1)[1]
        points = len(self.judge.pending[key][0])
        answers, hints = len(self.live.state.answers[qid]), self.live.scoring.hints_used(qid)
        self.judge.deliver(key)
        st = self.live.state
        passed = bool(st.code_runs[qid][-1]["passed"]) if st.code_runs.get(qid) else False
        expected = max(0.0, min(4.0, 0.5 * answers + passed + 0.25 * points) - 0.25 * hints)
        assert qid in st.judged and st.scores[qid].overall == pytest.approx(expected)


def _start(bank: Bank, path: Path, seed: int) -> Session:
    rng = random.Random(seed)
    clock, judge = Clock(), LateJudge()
    ports = Ports(
        bank=bank,
        store=SessionStore(path / f"s{seed}.db"),
        model=RotatingPort(),
        scorer=ArithmeticScorer(),
        judge=judge,
        listener=Listener(),
        clock=clock,
        answer_seconds=60 if rng.random() < 0.5 else None,
    )
    budget = {"round_minutes": {"phone-screen": 1.0}} if rng.random() < 0.3 else None
    # The bank's own questions, then a coding question and a design question drawn on the whiteboard.
    extra = [load_question(CODING), load_question(DESIGN)]
    qids = [*(q.id for q in bank.questions.values()), *(q.id for q in extra)]
    it = Interview.start(
        ports,
        ["phone-screen", "inference-case", "system-design"],
        question_ids=qids,
        extra_plan=budget,
        extra_questions=extra,
    )
    return Session(rng, ports, clock, judge, it)


@pytest.mark.parametrize("seed", range(SESSIONS))
def test_live_state_equals_the_replayed_event_log_at_every_step(fixture_bank, tmp_path, seed):
    s = _start(fixture_bank, tmp_path, seed)
    assert s.live.state == s.replayed()
    for _ in range(MAX_STEPS):
        s.clock.t += s.rng.uniform(1, 40)
        name, step = s.rng.choice(s.actions())
        s.log.append(name)
        step()
        assert s.live.state == s.replayed(), f"live and replayed differ after {s.log}"
    assert s.live.state == Interview.resume(s.ports, s.live.session_id, read_only=True).state


def test_the_generator_reaches_every_kind_of_event(fixture_bank, tmp_path):
    """The scripted sessions above exercise every event kind and the listener's moves (else they prove less)."""
    kinds: set[str] = set()
    moves: set[str] = set()
    asked: list[Any] = []
    for seed in range(SESSIONS):
        s = _start(fixture_bank, tmp_path, seed)
        for _ in range(MAX_STEPS):
            s.clock.t += s.rng.uniform(1, 40)
            s.rng.choice(s.actions())[1]()
        for ev in s.ports.store.events(s.live.session_id):
            kinds.add(ev.kind)
            if ev.kind == "asked":
                asked.append(ev)
            moves.add(str(ev.payload.get("move", "")))
    assert kinds >= {
        "planned", "asked", "answered", "clarified", "skipped", "scored", "judged", "code_run",
        "paused", "resumed", "ended", "diagram", "board_followup",
    }  # fmt: skip
    assert any(ev.payload.get("code_followup") for ev in asked), "no test run's follow-up was asked"
    assert moves >= {"why", "redirect", "encourage"}, moves


PRE_FOLD_LOGS = Path(__file__).parent / "fixtures" / "sessions" / "pre-fold-logs.json"


def _summary(st: State) -> dict[str, Any]:
    return {
        "idx": st.idx,
        "level": st.level,
        "awaiting": st.awaiting,
        "asked_at": st.asked_at,
        "paused_at": st.paused_at,
        "end_reason": st.end_reason,
        "turns": [[t.role, t.text, t.qid, t.level] for t in st.turns],
        "answers": st.answers,
        "scores": {k: v.overall for k, v in st.scores.items()},
        "judged": sorted(st.judged),
        "code_runs": st.code_runs,
    }


@pytest.mark.parametrize("name", ["listening", "two-whys"])
def test_event_logs_stored_before_the_fold_replay_to_the_same_state_and_resume(fixture_bank, tmp_path, name):
    """Logs written by the engine before :func:`apply` existed (no closing text, a clarification asked in the
    answer box, a pause, late verdicts) replay, event by event, to the state that engine rebuilt from them;
    a session cut anywhere reopens and goes on."""
    import json

    logged = next(s for s in json.loads(PRE_FOLD_LOGS.read_text(encoding="utf-8")) if s["name"] == name)
    store = SessionStore(tmp_path / "s.db")
    sid = store.create("local", "stored before", logged["plan"])
    for ev in logged["events"]:
        store.append(sid, ev["kind"], ev["payload"], ts=ev["ts"])
    events = store.events(sid)
    for n, want in enumerate(logged["replayed"], start=1):
        assert _summary(replay(logged["plan"], events[:n])) == want, [e.kind for e in events[:n]]
    for n in range(1, len(events)):  # reopened for writing after any stored event
        cut = SessionStore(tmp_path / f"cut{n}.db")
        cut_sid = cut.create("local", "cut", logged["plan"])
        for ev in events[:n]:
            cut.append(cut_sid, ev.kind, ev.payload, ts=ev.ts)
        it = Interview.resume(Ports(bank=fixture_bank, store=cut, scorer=ArithmeticScorer()), cut_sid)
        assert it.state.paused_at is None
        if not it.finished and it.awaiting == "interviewer":
            it.advance_all()
        if not it.finished:
            it.submit("Latency adds up over the stages.")
            assert it.state.turns[-1].text == "Latency adds up over the stages."
