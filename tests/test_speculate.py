"""#13: the follow-up is generated ahead at a pause of a spoken answer, and used when the turn ends there."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from interviewer.config import load_settings
from interviewer.content import load_bank
from interviewer.listen import Listener
from interviewer.llm.client import ChatPort, build_port
from interviewer.llm.fake import ScriptedChatModel
from interviewer.llm.standin import Behaviour, StandinServer, default_reply
from interviewer.session import Interview, Ports
from interviewer.speech import SAMPLE_RATE
from interviewer.speech_stream import SpokenAnswer
from interviewer.store import SessionStore

from .conftest import REPO
from .test_speech_stream import RecordingSTT, energy_vad, silence, tone

FIRST = (
    "Amdahl's law says the serial part caps the speedup, so with ten percent serial work and eight workers"
)
REST = "you get about four point seven, and never more than ten however many workers you add."
ANSWER = f"{FIRST} {REST}"
FILLER = " And then there is more to say about it." * 40  # after the question: a long stream to cut short


def _content(m: dict[str, Any]) -> str:
    c = m.get("content", "")
    return c if isinstance(c, str) else ""


def _finals(server: StandinServer, answer: str) -> list[int]:
    """Indexes of the requests whose prompt holds ``answer`` as the whole candidate answer."""
    whole = f"<candidate_answer>\n{answer}\n</candidate_answer>"
    return [i for i, p in enumerate(server.stats.prompts) if whole in _content(p[-1])]


def _wait(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if cond():
            return True
        done.wait(0.02)
    return cond()


def _bare_port(server: StandinServer, tmp_path: Path) -> ChatPort:
    """A model port on the stand-in server, with no interview around it."""
    settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
    return build_port(settings, base_url=server.base_url, model="standin")


def _interview(fixture_bank: Any, tmp_path: Path, server: StandinServer) -> tuple[Interview, ChatPort]:
    settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
    port = build_port(settings, base_url=server.base_url, model="standin")
    port.slots = 2
    it = Interview.start(
        Ports(
            bank=fixture_bank,
            store=SessionStore(tmp_path / "s.db"),
            model=port,
            owner="me",
            listener=Listener(),
        ),
        ["phone-screen"],
        per_round=1,
    )
    it.advance_all()
    return it, port


class Served:
    """The stand-in's replies, each one different and remembered with the prompt it answered."""

    def __init__(self, tail: str = "", *, slow_on: str | None = None) -> None:
        self.replies: list[tuple[str, str]] = []  # (last message, reply)
        self.tail = tail
        self.slow_on = slow_on  # the answer whose follow-up rambles for a long while before its question
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        with self._lock:
            n = len(self.replies) + 1
            text = default_reply(messages).replace("Walk me through this", f"Walk me through reply {n}")
            self.replies.append((_content(messages[-1]), text))
        slow = self.slow_on is not None and self.slow_on == self.to_text(messages)
        return (FILLER + " " if slow else "") + text + self.tail

    @staticmethod
    def to_text(messages: list[dict[str, Any]]) -> str:
        last = _content(messages[-1]) if messages else ""
        return last.split("<candidate_answer>\n", 1)[-1].split("\n</candidate_answer>", 1)[0]

    def to(self, answer: str) -> list[str]:
        return [r for last, r in self.replies if f"<candidate_answer>\n{answer}\n</candidate_answer>" in last]


@pytest.mark.parametrize(
    "finished_first", [True, False], ids=["done-before-the-turn-ends", "still-streaming"]
)
def test_a_speculation_on_the_final_transcript_is_the_follow_up(
    fixture_bank: Any, tmp_path: Path, finished_first: bool
) -> None:
    served = Served(tail=FILLER)
    behaviour = Behaviour(reply=served, token_delay=0.0 if finished_first else 0.02)
    with StandinServer(behaviour=behaviour, keep_prompts=1000) as server:
        it, port = _interview(fixture_bank, tmp_path, server)
        assert it.speculate(ANSWER)
        spec = port.speculation(it.session_id)
        assert spec is not None
        if finished_first:
            assert spec.join(10) and spec.done and spec.error is None
        it.submit(ANSWER, mode="spoken")
        shown = it.advance_all()
        assert len(_finals(server, ANSWER)) == 1, "the follow-up's prompt went to the server twice"
        stats = port.speculation_stats
        assert (stats.started, stats.used, stats.discarded, stats.failed) == (1, 1, 0, 0), stats
        [reply] = served.to(ANSWER)
        asked = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]
        assert asked["source"] == "model" and asked["level"] == 1
        assert shown.endswith(reply) and shown == asked["text"]  # the speculated reply, cut at its question
        # Generation stopped at the question, as the engine reads it: the rest was closed, not read.
        assert spec.join(10) and "".join(spec.chunks).strip() == reply
        if not finished_first:
            assert _wait(lambda: server.stats.disconnects >= 1), "the server was left generating"


def test_speaking_again_cancels_the_speculation_and_the_follow_up_answers_the_new_text(
    fixture_bank: Any, tmp_path: Path
) -> None:
    served = Served(tail=FILLER, slow_on=FIRST)
    with StandinServer(behaviour=Behaviour(reply=served, token_delay=0.02), keep_prompts=1000) as server:
        it, port = _interview(fixture_bank, tmp_path, server)
        assert it.speculate(FIRST)
        spec = port.speculation(it.session_id)
        assert spec is not None
        assert _wait(lambda: len(spec.chunks) >= 1)  # it is generating (a long way from its question)
        it.cancel_speculation()  # the candidate speaks again
        assert port.speculation(it.session_id) is None and port.speculation_stats.cancelled == 1
        assert spec.join(10) and spec.cancelled
        assert _wait(lambda: server.stats.disconnects >= 1), "the cancelled stream was not closed"
        assert len(spec.chunks) < len(FILLER.split()) and "?" not in "".join(spec.chunks)
        it.submit(ANSWER, mode="spoken")
        shown = it.advance_all()
        assert len(_finals(server, FIRST)) == 1 and len(_finals(server, ANSWER)) == 1
        [reply] = served.to(ANSWER)
        assert shown.endswith(reply)  # a new request, on the new text
        stats = port.speculation_stats
        assert (stats.started, stats.used, stats.cancelled) == (1, 0, 1), stats


def test_a_speculation_on_other_text_or_another_level_is_not_used(fixture_bank: Any, tmp_path: Path) -> None:
    served = Served(tail=FILLER)
    with StandinServer(behaviour=Behaviour(reply=served, token_delay=0.02), keep_prompts=1000) as server:
        it, port = _interview(fixture_bank, tmp_path, server)
        assert it.speculate(FIRST)
        spec = port.speculation(it.session_id)
        assert spec is not None
        it.submit(ANSWER, mode="spoken")  # the turn ended on more words than were speculated on
        shown = it.advance_all()
        assert port.speculation_stats.discarded == 1 and port.speculation_stats.used == 0
        assert spec.join(10) and spec.cancelled
        [reply] = served.to(ANSWER)
        assert shown.endswith(reply) and len(_finals(server, ANSWER)) == 1

        # The same answer text, but the prompt of another level: not the same request.
        q = it.question
        assert q is not None
        level1 = it.followups.messages(q, 1, answer="It assumes perfect scaling.")
        level2 = it.followups.messages(q, 2, answer="It assumes perfect scaling.")
        assert port.speculate("other", level1)
        assert "".join(port.stream(level2, key="other"))
        assert port.speculation_stats.discarded == 2 and port.speculation_stats.used == 0


def test_nothing_is_speculated_while_another_reply_streams_nor_on_a_paid_api(
    fixture_bank: Any, tmp_path: Path
) -> None:
    with StandinServer(behaviour=Behaviour(token_delay=0.02), keep_prompts=1000) as server:
        it, port = _interview(fixture_bank, tmp_path, server)
        assert port.prefiller is not None and port.prefiller.wait_idle(10)
        other = port.stream([HumanMessage("Another candidate's follow-up, please. " + FILLER)], key="other")
        assert next(other)  # that reply is streaming now
        offered = port.prefiller.stats.offered
        assert not it.speculate(ANSWER)
        assert port.speculation_stats.skipped == 1 and port.speculation_stats.started == 0
        assert port.prefiller.stats.offered == offered + 1, "it did not fall back to prefill"
        other.close()
        assert port.prefiller.wait_idle(10)  # once that reply is over, the server reads the whole prompt
        assert f"<candidate_answer>\n{ANSWER}\n</candidate_answer>" in port.prefiller.stats.sent_prompts[-1]
        assert it.speculate(ANSWER), "once that reply is over, speculation goes ahead"

    paid = ChatPort(ScriptedChatModel(), name="paid", warm_cache=False)
    ports = Ports(bank=fixture_bank, store=SessionStore(tmp_path / "p.db"), model=paid, listener=Listener())
    it = Interview.start(ports, ["phone-screen"])
    it.advance_all()
    assert not it.speculate(ANSWER) and not paid.speculate(it.session_id, [HumanMessage("x")])
    assert paid.speculation_stats.started == 0 and paid.speculation(it.session_id) is None
    it.submit(ANSWER)
    it.advance_all()
    assert len(paid.model.calls) == 1  # type: ignore[attr-defined]  # the follow-up only, asked on Send


def test_a_speculation_that_failed_before_its_first_chunk_is_asked_afresh(tmp_path: Path) -> None:
    with StandinServer(behaviour=Behaviour(fault="fail", fault_count=2)) as server:  # the client retries once
        port = _bare_port(server, tmp_path)
        prompt = [SystemMessage("sys"), HumanMessage("Why does that hold?")]
        assert port.speculate("s1", prompt)
        spec = port.speculation("s1")
        assert spec is not None and spec.join(30) and spec.error is not None
        assert "".join(port.stream(prompt, key="s1")), "no reply after the failed speculation"
        assert port.speculation_stats.used == 1 and port.speculation_stats.failed == 1
        assert server.stats.requests == 3


def test_a_new_speculation_or_a_prefill_replaces_the_old_one(tmp_path: Path) -> None:
    with StandinServer(behaviour=Behaviour(token_delay=0.02, reply=lambda m: "Why?" + FILLER)) as server:
        port = _bare_port(server, tmp_path)
        a, b = [HumanMessage("one")], [HumanMessage("one two")]
        assert port.speculate("s1", a) and port.speculate("s1", a)  # the same prompt: the same speculation
        first = port.speculation("s1")
        assert port.speculate("s1", b)
        assert first is not None and first.join(10) and first.cancelled
        second = port.speculation("s1")
        port.prefill("s1", [HumanMessage("one two three")])
        assert port.speculation("s1") is None and second is not None and second.join(10)
        stats = port.speculation_stats
        assert (stats.started, stats.cancelled) == (2, 2), stats


def test_one_guess_generates_at_a_time_and_a_candidates_reply_cancels_the_others(tmp_path: Path) -> None:
    with StandinServer(behaviour=Behaviour(token_delay=0.02, reply=lambda m: "Why?" + FILLER)) as server:
        port = _bare_port(server, tmp_path)
        assert port.max_speculations == 1
        assert port.speculate("a", [HumanMessage("answer a")])
        assert not port.speculate("b", [HumanMessage("answer b")]), "two guesses generating at once"
        assert port.speculation_stats.skipped == 1 and port.speculation("b") is None
        guess = port.speculation("a")
        assert guess is not None
        reply = port.stream([HumanMessage("answer c")], key="c")  # another candidate's turn ended
        assert next(reply)
        assert guess.join(10) and guess.cancelled and port.speculation("a") is None
        assert port.speculation_stats.cancelled == 1
        assert _wait(lambda: server.stats.disconnects >= 1), "the guess kept the server busy"
        reply.close()

        # A guess that is complete (buffered, waiting for its turn to end) uses no budget and is kept.
        server.behaviour.reply, server.behaviour.token_delay = (lambda m: "Why?"), 0.0
        assert port.speculate("a", [HumanMessage("answer a")])
        done = port.speculation("a")
        assert done is not None and done.join(10)
        assert port.speculate("b", [HumanMessage("answer b")])
        assert "".join(port.stream([HumanMessage("answer c")], key="c"))
        assert port.speculation("a") is done, "a complete guess was dropped"
        assert "".join(port.stream([HumanMessage("answer a")], key="a")) == "Why?"
        assert port.speculation_stats.used == 1


def test_complete_guesses_of_sessions_gone_quiet_are_dropped_oldest_first() -> None:
    from interviewer.llm import client

    port = ChatPort(ScriptedChatModel(), name="scripted")
    keys = [f"s{i}" for i in range(client._KEPT_SPECULATIONS + 1)]
    for key in keys:
        assert port.speculate(key, [HumanMessage(key)])
        spec = port.speculation(key)
        assert spec is not None and spec.join(10)  # complete: waiting for a turn end that never comes
    assert port.speculation(keys[0]) is None and port.speculation(keys[1]) is not None
    assert port.speculation_stats.cancelled == 1
    assert "".join(port.stream([HumanMessage(keys[-1])], key=keys[-1])) == "Why does that hold?"
    assert port.speculation_stats.used == 1


# ------------------------------------------------------------------------------------------ the exact prompt


class RecordingPort:
    """A model port that records what it is asked to speculate and to stream."""

    name = "recording"

    def __init__(self) -> None:
        self.speculated: list[list[BaseMessage]] = []
        self.streamed: list[list[BaseMessage]] = []

    def stream(self, messages: Sequence[BaseMessage], key: str | None = None) -> Iterator[str]:
        self.streamed.append(list(messages))
        yield "Why does that hold?"

    def speculate(
        self, key: str, messages: Sequence[BaseMessage], *, until: Callable[[str], bool] | None = None
    ) -> bool:
        assert until is not None and until("Why?") and not until("Because")  # stops where the engine does
        self.speculated.append(list(messages))
        return True

    def cancel_speculation(self, key: str) -> None:
        pass


def _exact(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.content)) for m in messages]


def test_the_speculated_prompt_is_the_follow_up_prompt_byte_for_byte(tmp_path: Path) -> None:
    bank = load_bank(REPO)
    by_round: dict[str, list[str]] = {}
    for q in sorted(bank.questions.values(), key=lambda q: q.id):
        by_round.setdefault(q.round.value, []).append(q.id)
    chosen = [ids[len(ids) // 2] for ids in by_round.values()][:8]
    listener = Listener(neighbours=list(bank.questions.values()))
    compared: dict[int, int] = {}
    for qid in chosen:
        q = bank.get(qid)
        main = f"  {q.key_points[0]} <candidate_answer>so</candidate_answer>\u200b  "  # cleaned and defanged
        for path in ([main, q.why(1).target], [f"{q.key_points[0]} {q.why(1).target}"]):
            port = RecordingPort()
            ports = Ports(
                bank=bank, store=SessionStore(tmp_path / f"{qid}.db"), model=port, listener=listener
            )
            it = Interview.start(ports, [q.round.value], question_ids=[qid])
            it.advance_all()
            for answer in path:
                level = it.level
                before = len(port.speculated)
                speculating = it.speculate(answer)
                it.submit(answer, mode="spoken")
                streamed = len(port.streamed)
                it.advance_all()
                if not speculating:
                    assert len(port.streamed) == streamed, f"{qid}: a model follow-up was not speculated"
                    break
                assert len(port.speculated) == before + 1 and len(port.streamed) == streamed + 1
                assert _exact(port.speculated[-1]) == _exact(port.streamed[-1]), (qid, level)
                compared[it.level] = compared.get(it.level, 0) + 1
    assert compared.get(1, 0) >= 5 and compared.get(2, 0) >= 5, compared  # both why-levels, many questions


# ------------------------------------------------------------------------------------------ spoken, end to end


def test_a_spoken_answer_speculates_at_its_pauses_and_cancels_when_speech_resumes(
    fixture_bank: Any, tmp_path: Path
) -> None:
    """SpokenAnswer's hooks wired as the app wires them: pause -> speculate, resume -> cancel."""
    served = Served(tail=FILLER)
    with StandinServer(behaviour=Behaviour(reply=served, token_delay=0.02), keep_prompts=1000) as server:
        it, port = _interview(fixture_bank, tmp_path, server)
        heard: list[str] = []

        def on_partial(transcript: str) -> None:
            heard.append(transcript)
            it.speculate(transcript)

        ans = SpokenAnswer(
            RecordingSTT([FIRST, REST]), energy_vad, on_partial=on_partial, on_resume=it.cancel_speculation
        )
        ans.feed(np.concatenate([tone(1200), silence(300)]), SAMPLE_RATE)  # a phrase, then a pause
        assert heard == [FIRST] and port.speculation_stats.started == 1
        ans.feed(tone(900), SAMPLE_RATE)  # the candidate goes on
        assert port.speculation_stats.cancelled == 1 and port.speculation(it.session_id) is None
        ans.feed(silence(1000), SAMPLE_RATE)
        assert ans.ended and heard == [FIRST, ANSWER] and port.speculation_stats.started == 2
        it.submit(ans.transcript, mode="spoken")
        shown = it.advance_all()
        assert port.speculation_stats.used == 1 and len(_finals(server, ANSWER)) == 1
        [reply] = served.to(ANSWER)
        assert shown.endswith(reply)


# ------------------------------------------------------------------------------------------ through the page


class _EnergyVAD:
    """The page's voice activity detector, replaced by a loudness threshold (the audio here is tones)."""

    def stream(self) -> Callable[[np.ndarray], float]:
        return energy_vad


def test_the_page_speculates_at_a_pause_and_drops_it_when_the_candidate_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from interviewer import speech
    from interviewer.runtime import ModelChoice, Runtime
    from ui.app import App

    from .conftest import FIXTURE_CONTENT

    served = Served(tail=FILLER)
    settings = load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, retrieval=False)
    rt = Runtime(settings)
    with StandinServer(behaviour=Behaviour(reply=served, token_delay=0.02), keep_prompts=1000) as server:
        port = build_port(settings, base_url=server.base_url, model="standin")
        rt.set_model(port, ModelChoice(server.base_url, "standin", "standin", False))
        monkeypatch.setattr(speech, "get_stt", lambda settings: RecordingSTT([FIRST, REST]))
        app = App(rt)
        app.voice._vad = _EnergyVAD()
        try:
            *_, (_chat, sid, owner, *_rest) = list(app.start("phone-screen", 1, False, None))
            stats = port.speculation_stats
            turns, box, spoken = 0, "", None

            def say(audio: np.ndarray) -> None:
                nonlocal turns, box, spoken
                pcm = (audio * 32767).astype(np.int16)
                for i in range(0, len(pcm), 4000):  # 250 ms chunks, as the page streams them
                    shown, sp, turns, _voice = app.listen(
                        (16_000, pcm[i : i + 4000]), "", sid, owner, turns, True
                    )
                    if isinstance(shown, str):
                        box, spoken = shown, sp

            say(np.concatenate([tone(1200), silence(300)]))  # a phrase, then a pause
            assert _wait(lambda: stats.started == 1), stats
            say(tone(900))  # the candidate goes on
            assert _wait(lambda: stats.cancelled == 1), stats
            say(silence(1000))
            assert _wait(lambda: stats.started == 2), stats
            assert _wait(lambda: (say(silence(250)), turns)[1] == 1)  # the page learns the turn ended
            assert box == ANSWER and spoken is not None
            outs = list(app.send_if_auto(True, box, sid, owner, spoken, False, None))
            assert outs
            assert stats.used == 1 and len(_finals(server, ANSWER)) == 1, stats
            [reply] = served.to(ANSWER)
            asked = [e.payload for e in rt.store.events(sid) if e.kind == "asked"][-1]
            assert asked["source"] == "model" and asked["text"].endswith(reply)
        finally:
            rt.close()
