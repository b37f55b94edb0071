"""#13: prefill while the candidate types. The prompts sent ahead are prefixes of the prompt sent on Send."""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from interviewer.config import load_settings
from interviewer.llm.client import build_port
from interviewer.llm.prefill import Prefiller
from interviewer.llm.standin import StandinServer
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

ANSWER = (
    "Amdahl's law says the serial part caps the speedup, so with ten percent serial work and eight workers "
    "you get one over point one plus point nine over eight, which is about four point seven, and never more "
    "than ten however many workers you add."
)


def _content(m: dict[str, Any]) -> str:
    c = m.get("content", "")
    return c if isinstance(c, str) else ""


def test_prompts_sent_while_typing_are_prefixes_of_the_follow_up_prompt(fixture_bank, tmp_path) -> None:
    with StandinServer(keep_prompts=1000) as server:
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        assert port.prefiller is not None, "a loopback server gets prefill"
        it = Interview.start(
            Ports(bank=fixture_bank, store=SessionStore(tmp_path / "s.db"), model=port, owner="me"),
            ["phone-screen"],
            per_round=1,
        )
        it.advance_all()
        words = ANSWER.split()
        offered = 0
        for n in range(1, len(words) + 1):  # a keystroke event per word, as the page would send
            offered += it.prefill(" ".join(words[:n]) + ("" if n == len(words) else " "))
            if n % 7 == 0:
                assert port.prefiller.wait_idle(10)  # the candidate pauses; the server catches up
        assert port.prefiller.wait_idle(10)
        sent_ahead = len(server.stats.prompts)
        it.submit(ANSWER)
        it.advance_all()  # the real follow-up, streamed from the server
        assert port.prefiller.wait_idle(10)  # and the next question's prefetch, sent after it
        prompts = server.stats.prompts
        finals = [p for p in prompts if ANSWER + "\n</candidate_answer>" in _content(p[-1])]
        assert len(finals) == 1, "one follow-up prompt holds the whole answer"
        final_system, final_human = _content(finals[0][0]), _content(finals[0][-1])

        partial = [p for p in prompts[:sent_ahead] if "<candidate_answer>" in _content(p[-1])]
        stats = port.prefiller.stats
        assert (
            offered > 0 and stats.sent >= 3 and stats.offered >= offered + 1
        )  # + the prefetch at each question
        assert stats.sent + stats.superseded + stats.skipped_busy + stats.repeated == stats.offered
        for p in partial:
            assert _content(p[0]) == final_system
            assert final_human.startswith(_content(p[-1])), (
                "a prefill prompt is not a prefix of the final one"
            )
        # The last one sent holds everything but the last word: on Send only the tail is new to the server.
        longest = max(len(_content(p[-1])) for p in partial)
        assert final_human[longest:].strip().startswith(words[-1])


def test_latest_text_wins_and_superseded_prompts_are_never_sent() -> None:
    gate = threading.Event()
    sent: list[str] = []

    def send(messages: Any, key: str) -> None:
        sent.append(messages[-1].content)
        gate.wait(5)

    pf = Prefiller(send)
    pf.offer("s1", [SystemMessage("sys"), HumanMessage("a")])
    for text in ("ab", "abc", "abcd"):
        pf.offer("s1", [SystemMessage("sys"), HumanMessage(text)])
    gate.set()
    assert pf.wait_idle(5)
    assert sent == ["a", "abcd"], sent
    assert pf.stats.superseded == 2 and pf.stats.sent == 2


def test_a_prompt_the_last_prefill_sent_is_not_sent_again() -> None:
    sent: list[str] = []
    pf = Prefiller(lambda m, k: sent.append(m[-1].content))
    for text in ("Decode is", "Decode is", "Decode is bound", "Decode is bound"):  # keystrokes inside a word
        pf.offer("s1", [SystemMessage("sys"), HumanMessage(text)])
        assert pf.wait_idle(5)
    pf.offer("s2", [SystemMessage("sys"), HumanMessage("Decode is")])  # another session: its own slot
    pf.offer("s1", [SystemMessage("sys"), HumanMessage("Decode is")])  # text deleted: a prompt sent earlier
    assert pf.wait_idle(5)
    assert sent == ["Decode is", "Decode is bound", "Decode is", "Decode is"], sent
    assert pf.stats.repeated == 2 and pf.stats.sent == 4


def test_nothing_is_sent_while_a_reply_streams_and_the_budget_holds() -> None:
    sent: list[str] = []
    busy = [True]
    pf = Prefiller(lambda m, k: sent.append(m[-1].content), busy=lambda: busy[0])
    pf.offer("s1", [HumanMessage("x")])
    threading.Event().wait(1.0)
    assert sent == [], "a prefill was sent while a reply was streaming"
    busy[0] = False  # the reply ended: the waiting text goes now
    assert pf.wait_idle(5) and sent == ["x"]

    gate = threading.Event()
    inside: list[int] = []
    lock = threading.Lock()
    now = [0]

    def slow(messages: Any, key: str) -> None:
        with lock:
            now[0] += 1
            inside.append(now[0])
        gate.wait(5)
        with lock:
            now[0] -= 1

    pf2 = Prefiller(slow, max_in_flight=1)
    for s in ("a", "b", "c"):
        pf2.offer(s, [HumanMessage(s)])
    gate.set()
    assert pf2.wait_idle(5)
    assert max(inside) == 1, "two prefills ran at once on one port"
    assert pf2.stats.sent == 3, pf2.stats  # the others waited for the budget, then went


def test_the_page_sends_the_answer_so_far_while_the_candidate_types(tmp_path) -> None:
    """Through the real Gradio app: the answer box's input event reaches the model server as a prefix."""
    from gradio_client import Client

    from .test_load_faults import _runtime, _served

    with StandinServer(keep_prompts=1000) as server, _served(_runtime(tmp_path, server)) as (url, rt):
        client = Client(url, verbose=False)
        _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
        before = len(server.stats.prompts)
        typed = "Amdahl's law says the serial part caps the speedup at ten"
        client.predict(typed, owner, api_name="/typing")
        port = rt.model()
        assert port.prefiller is not None and port.prefiller.wait_idle(10)
        ahead = [_content(p[-1]) for p in server.stats.prompts[before:]]
        assert any(h.endswith("<candidate_answer>\n" + typed.rsplit(" ", 1)[0]) for h in ahead), ahead[-1:]
        assert all("</candidate_answer>" not in h for h in ahead if typed[:20] in h)
        _, _, status, *_ = client.predict(typed + " times.", owner, api_name="/send")
        finals = [
            _content(p[-1])
            for p in server.stats.prompts
            if "<candidate_answer>\n" + typed + " times.\n</candidate_answer>" in _content(p[-1])
        ]
        assert len(finals) == 1 and "why, level 1" in status  # the level-1 follow-up's prompt
        final = finals[0]
        assert any(final.startswith(h) for h in ahead if typed[:20] in h)


def test_each_session_keeps_its_own_server_slot_while_others_type(fixture_bank, tmp_path) -> None:
    """Prefill and Send of one candidate land on one llama.cpp slot; concurrent candidates never share one."""
    answers = [ANSWER, ANSWER.replace("Amdahl's law says", "By Amdahl's law,").replace("ten percent", "10%")]
    with StandinServer(keep_prompts=1000) as server:
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        port.slots = 2
        assert port.prefiller is not None
        store = SessionStore(tmp_path / "s.db")
        its = [
            Interview.start(
                Ports(bank=fixture_bank, store=store, model=port, owner=f"o{i}"), ["phone-screen"]
            )
            for i in range(2)
        ]
        for it in its:
            it.advance_all()
        for n in range(3, len(ANSWER.split()), 3):  # the two candidates type at the same time
            for it, answer in zip(its, answers, strict=True):
                it.prefill(" ".join(answer.split()[:n]) + " ")
        assert port.prefiller.wait_idle(10)
        for it, answer in zip(its, answers, strict=True):
            it.submit(answer)
            it.advance_all()
        assert port.prefiller.wait_idle(10)
        slots = [port.slot(it.session_id) for it in its]
        assert None not in slots and slots[0] != slots[1], "two candidates at once share a slot"
        assert None not in server.stats.slots, "a request went out without its session's slot"
        seen = [0, 0]
        for prompt, slot in zip(server.stats.prompts, server.stats.slots, strict=True):
            text = _content(prompt[-1])
            for i, (answer, want) in enumerate(zip(answers, slots, strict=True)):
                if " ".join(answer.split()[:3]) in text:  # this candidate's answer, partial or whole
                    seen[i] += 1
                    assert slot == want, "a candidate's prompt went to another candidate's slot"
        assert min(seen) >= 2, f"each candidate sends a prefill and the follow-up prompt: {seen}"
        # A third candidate takes the slot of the one heard from longest ago.
        assert port.slot("third") == slots[0]
        assert port.slot(its[1].session_id) == slots[1]


def test_a_server_without_slots_gets_no_slot_field(tmp_path) -> None:
    with StandinServer() as server:
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        assert port.slots == 0 and port.slot("s1") is None
        assert "".join(port.stream([HumanMessage("hello")], key="s1"))
        assert server.stats.slots == [None]


def test_typing_pauses_run_a_sessions_latest_offer_once_it_stops_typing() -> None:
    from interviewer.engine.ahead import TypingPauses

    pauses = TypingPauses(after=0.3)
    ran: list[str] = []
    done = threading.Event()
    try:
        pauses.offer("a", lambda: ran.append("a: first words"))
        pauses.offer("b", lambda: ran.append("b: sent before the pause"))
        pauses.offer(
            "a", lambda: (ran.append("a: latest words"), done.set())
        )  # a keystroke restarts the wait
        pauses.cancel("b")  # sent: nothing to read ahead
        assert ran == [] and pauses.waiting() == 1
        assert done.wait(5)
        pauses.offer("c", lambda: 1 / 0)  # a failing call is logged, and the next one still runs
        pauses.offer("d", lambda: ran.append("d"))
        deadline = threading.Event()
        for _ in range(50):
            if "d" in ran:
                break
            deadline.wait(0.1)
        assert ran == ["a: latest words", "d"] and pauses.waiting() == 0
    finally:
        pauses.close()


def test_the_page_reads_an_answer_without_its_last_full_stop_once_the_candidate_stops_typing(
    tmp_path,
) -> None:
    """Through the real Gradio app: text typed mid-sentence is read ahead after a pause, before Send."""
    from gradio_client import Client

    from .test_load_faults import _runtime, _served

    with (
        StandinServer(keep_prompts=1000) as server,
        _served(_runtime(tmp_path, server, listen=True)) as (url, rt),
    ):
        listener = rt.listener()
        assert listener is not None
        read: list[tuple[str, str]] = []  # (the thread that read, the answer)
        real_read = listener.read

        def recording(q: Any, level: int, answer: str, asked: str = "") -> Any:
            read.append((threading.current_thread().name, answer))
            return real_read(q, level, answer, asked)

        listener.read = recording  # type: ignore[method-assign]
        client = Client(url, verbose=False)
        _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
        typed = (
            "Amdahl's law says the serial part caps the speedup, at ten times with ten percent serial work"
        )
        client.predict(typed[:30], owner, api_name="/typing")
        client.predict(typed, owner, api_name="/typing")
        # A loaded machine can take longer than 10 s to read after the pause: poll for up to 30 s.
        for _ in range(300):
            if any(a == typed for _, a in read):
                break
            time.sleep(0.1)
        # Mid-sentence text is not read per keystroke: the pause reads it, on the pauses' own thread.
        assert [who for who, a in read if a == typed] == ["typing-pauses"]
