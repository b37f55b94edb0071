"""Background work (the reader, the truth judge) gives way to live replies: how, per kind of model server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from interviewer.config import Settings
from interviewer.llm.client import BACKGROUND_KEY, ChatPort
from interviewer.runtime import ModelChoice, Runtime
from interviewer.scoring.reader import read_answer

from .test_reader import PHASE

SCHED_IDLE = getattr(os, "SCHED_IDLE", 5)


def _live_port(base_url: str = "http://127.0.0.1:9/v1") -> ChatPort:
    return ChatPort(model=FakeListChatModel(responses=["a live reply"] * 10), name="live", base_url=base_url)


def _runtime(tmp_path: Path, port: ChatPort, *, embedded: bool, **settings_kw: object) -> Runtime:
    settings = Settings(
        data_dir=tmp_path / "data",
        embedded_model="smollm2-135m",
        embedded_threads=2,
        embedded_ctx=2048,
        **settings_kw,  # type: ignore[arg-type]
    )
    rt = Runtime(settings)
    rt.set_model(port, ModelChoice(port.base_url, "m", "m", embedded=embedded))
    return rt


def _state(pid: int, want: str | None = None) -> str:
    """The process state letter (T: stopped); with ``want``, polled briefly (signals land asynchronously)."""
    deadline = time.monotonic() + 5
    while True:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        done = want is None or (state == "T" if want == "T" else state != "T")
        if done or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def _sched(pid: int, tid: int) -> tuple[int, int]:
    """(nice, scheduling policy) of one thread, from /proc (fields 19 and 41 of stat)."""
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16]), int(fields[38])


def test_live_hooks_hear_when_the_first_reply_starts_and_the_last_one_ends() -> None:
    live = _live_port()
    heard: list[bool] = []
    remove = live.on_live(heard.append)
    one = live.stream([HumanMessage("hi")], key="a")
    two = live.stream([HumanMessage("hi")], key="b")
    next(iter(one))
    next(iter(two))
    assert heard == [True]  # one pause for any number of replies at once
    one.close()  # type: ignore[attr-defined]
    assert heard == [True]
    two.close()  # type: ignore[attr-defined]
    assert heard == [True, False]
    remove()
    "".join(live.stream([HumanMessage("hi")], key="a"))
    assert heard == [True, False]


def test_beside_a_remote_server_background_work_shares_it_and_steps_aside_while_a_reply_streams(
    tmp_path: Path,
) -> None:
    live = _live_port("http://10.1.2.3:8000/v1")
    rt = _runtime(tmp_path, live, embedded=False)
    bg = rt.background(live)
    assert bg.server is None and bg.port is live and bg.base_url == live.base_url
    assert rt.background(live) is bg  # one per live port
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))  # a candidate's reply is streaming now
    try:
        assert bg.live_streams == 1
        assert bg.wait_until_quiet(timeout=0.05) is False
    finally:
        reply.close()  # type: ignore[attr-defined]
    assert bg.live_streams == 0 and bg.wait_until_quiet(timeout=0.05) is True


def test_beside_the_embedded_model_background_work_gets_an_idle_priority_server_started_on_first_use(
    tmp_path: Path,
) -> None:
    live = _live_port()
    rt = _runtime(tmp_path, live, embedded=True)
    bg = rt.background(live)
    assert bg.server is not None and bg.server.idle and bg.server.slots == 1
    assert not bg.server.is_running  # nothing starts before background work asks for it
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))
    try:
        # The kernel gives way to the live server: the reading goes on instead of stepping aside.
        assert bg.live_streams == 0 and bg.wait_until_quiet(timeout=0.05) is True
    finally:
        reply.close()  # type: ignore[attr-defined]
    judge = rt.judge(live)
    assert judge is not None and rt.background(live) is bg
    other = _live_port("http://10.1.2.3:8000/v1")
    rt.set_model(other, ModelChoice(other.base_url, "m", "m", embedded=False))
    assert rt.background(other).server is None  # a new model: background work follows it
    assert bg.port is live and not bg.server.is_running  # the old one is closed and never starts again
    rt.close()


def test_with_the_background_server_switched_off_background_work_shares_the_embedded_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERVIEWER_BACKGROUND_SERVER", "0")
    live = _live_port()
    rt = _runtime(tmp_path, live, embedded=True)
    assert rt.settings.background_server is False
    bg = rt.background(live)
    assert bg.server is None and bg.port is live and bg.yield_to_live
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))
    try:  # no server of its own to pause: the reading steps aside instead
        assert bg.live_streams == 1 and bg.wait_until_quiet(timeout=0.05) is False
    finally:
        reply.close()  # type: ignore[attr-defined]
    monkeypatch.delenv("INTERVIEWER_BACKGROUND_SERVER")
    on = _runtime(tmp_path, live, embedded=True)
    assert on.settings.background_server is True  # the default
    assert on.background(live).server is not None
    rt.close()
    on.close()


@pytest.mark.embedded
def test_the_reader_reads_on_the_idle_priority_server_and_the_live_server_gets_no_request(
    tmp_path: Path,
) -> None:
    live = _live_port()
    rt = _runtime(tmp_path, live, embedded=True)
    bg = rt.background(live)
    try:
        readings = read_answer(
            bg,
            "Why does decode slow down at batch one?",
            "Decode is limited by memory bandwidth, because every weight is read once per generated token.",
            [PHASE],
        )
        assert bg.separate and bg.server is not None and bg.server.is_running
        assert readings.cost.calls == 2, readings.cost  # the option probe, asked in two orders of its claims
        assert bg.base_url != live.base_url and bg.slot(BACKGROUND_KEY) == 0
        assert live.model.i == 0  # type: ignore[attr-defined]  # the live model answered nothing
        pid = bg.server.pid
        assert pid is not None
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        assert len(threads) > 2  # the compute and HTTP threads, not just the main one
        for tid in threads:
            nice, policy = _sched(pid, tid)
            assert policy == SCHED_IDLE and nice == 19, (tid, nice, policy)

        # While a candidate's reply streams, the background server's process is stopped; then it runs again.
        reply = live.stream([HumanMessage("hi")], key="candidate")
        next(iter(reply))
        try:
            assert _state(pid, "T") == "T" and bg.server.paused
        finally:
            reply.close()  # type: ignore[attr-defined]
        assert _state(pid, "!T") != "T" and not bg.server.paused
        again = read_answer(bg, "Why?", "Decode is limited by memory bandwidth.", [PHASE])
        assert again.cost.calls == 2  # read again after the reply ended
    finally:
        rt.close()
    assert bg.server is not None and not bg.server.is_running
