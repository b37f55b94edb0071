"""Background work (the reader, the truth judge) gives way to live replies: how, per kind of model server."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from interviewer.config import Settings, load_settings
from interviewer.errors import EmbeddedModelError
from interviewer.llm.background import BackgroundPort
from interviewer.llm.client import BACKGROUND_KEY, ChatPort, build_port
from interviewer.llm.standin import Behaviour, StandinServer
from interviewer.runtime import ModelChoice, Runtime
from interviewer.scoring.reader import read_answer

from .test_reader import PHASE, Reader

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


class _Frozen:
    """Stands in for the background server: records what it is told (pause, resume) and when it runs."""

    idle = True
    slots = 1

    def __init__(self, *, fail: bool = False) -> None:
        self.events: list[str] = []
        self.paused = False
        self.fail = fail

    def start(self, progress: object = None) -> str:
        if self.fail:
            raise EmbeddedModelError("the background model server did not load")
        return "http://127.0.0.1:9/v1"

    def pause(self) -> None:
        self.events.append("pause")
        self.paused = True

    def resume(self) -> None:
        self.events.append("resume")
        self.paused = False

    def stop(self) -> None:
        self.paused = False


def _beside(live: ChatPort, frozen: _Frozen, own: ChatPort | None = None) -> BackgroundPort:
    """A background port with ``frozen`` as its server, started (``own``: the port over it)."""
    bg = BackgroundPort(live, frozen, lambda s, url: own or _live_port(url))  # type: ignore[arg-type]
    assert bg.port is not live  # background work asked for its server: it runs now
    return bg


def _until(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


def _standin_port(server: StandinServer, tmp_path: Path) -> ChatPort:
    settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
    return build_port(settings, base_url=server.base_url, model="standin")


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


class _Unstarted(_Frozen):
    """Stands in for the idle-priority server the runtime builds: its slots are the ``n_parallel`` asked for."""

    model_name = "Stand-in 1B"
    served_model_id = "standin-1b"

    def __init__(self, settings: Settings, *, n_parallel: int = 4, **kwargs: object) -> None:
        super().__init__()
        self.slots = n_parallel


def test_the_background_servers_port_streams_token_usage_and_pins_reads_to_its_slots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_openai import ChatOpenAI

    import interviewer.llm.embedded as embedded

    monkeypatch.setattr(embedded, "EmbeddedServer", _Unstarted)
    live = _live_port()
    rt = _runtime(tmp_path, live, embedded=True, timeout=60.0)
    bg = rt.background(live)
    assert isinstance(bg.server, _Unstarted)
    own = bg.port  # the port the runtime connects once its background server has started
    assert own is not live and own.base_url == "http://127.0.0.1:9/v1"
    chat = own.model
    assert isinstance(chat, ChatOpenAI)
    # usage in the stream: a reading's cost counts its prompt and cached tokens
    assert chat.stream_usage is True
    assert own.slots == bg.server.slots == 1 and own.slot(BACKGROUND_KEY) == 0 and own.warm_cache
    assert own.name == "Stand-in 1B, background" and chat.model_name == "standin-1b"
    assert chat.request_timeout.read >= 900  # type: ignore[union-attr]  # it waits out paused stretches
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


def test_each_prefill_pauses_the_background_server_for_that_request_only(tmp_path: Path) -> None:
    with StandinServer(behaviour=Behaviour(first_token_delay=1.0)) as server:
        live = _standin_port(server, tmp_path)
        frozen = _Frozen()
        bg = _beside(live, frozen)
        assert live.prefiller is not None
        live.prefill("candidate", [SystemMessage("sys"), HumanMessage("Decode is bound")])
        assert _until(lambda: server.stats.requests == 1)
        assert frozen.paused  # while the live server reads the candidate's prompt
        assert live.prefiller.wait_idle(5)
        assert frozen.events == ["pause", "resume"]  # and runs again as soon as it is read
        live.prefill("candidate", [SystemMessage("sys"), HumanMessage("Decode is bound by memory")])
        assert live.prefiller.wait_idle(5)
        assert frozen.events == ["pause", "resume"] * 2 and not frozen.paused
        assert live.live_streams == 0  # a prefill is not a reply: background work on a shared server goes on
        assert 1.8 <= bg.paused_seconds < 10


def test_a_reply_generated_ahead_pauses_the_background_server_until_the_reply_it_becomes_ends(
    tmp_path: Path,
) -> None:
    with StandinServer(behaviour=Behaviour(token_delay=0.1)) as server:
        live = _standin_port(server, tmp_path)
        frozen = _Frozen()
        _beside(live, frozen)
        first = [SystemMessage("sys"), HumanMessage("Decode reads every weight per token.")]
        assert live.speculate("candidate", first)
        assert _until(lambda: frozen.paused)
        spec = live.speculation("candidate")
        assert spec is not None and spec.join(10)
        assert frozen.events == ["pause", "resume"]  # generated, nobody waiting on it yet: paused meanwhile

        second = [SystemMessage("sys"), HumanMessage("Prefill is bound by compute instead.")]
        assert live.speculate("candidate", second)
        reply = "".join(live.stream(second, key="candidate"))  # the turn ends on it: the reply takes it over
        assert reply and live.speculation_stats.used == 1
        assert frozen.events == ["pause", "resume"] * 2  # one pause across the hand-over, no gap in it


def test_a_background_server_started_while_a_reply_streams_is_paused_at_once() -> None:
    live = _live_port()
    frozen = _Frozen()
    bg = BackgroundPort(live, frozen, lambda s, url: _live_port(url))  # type: ignore[arg-type]
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))
    try:
        assert frozen.events == []  # nothing started: nothing to pause
        assert bg.port is not live  # background work asks for its server now
        assert frozen.events == ["pause"]
    finally:
        reply.close()  # type: ignore[attr-defined]
    assert frozen.events == ["pause", "resume"]


def test_when_the_background_server_cannot_start_background_work_steps_aside_on_the_live_one() -> None:
    live = _live_port()
    bg = BackgroundPort(live, _Frozen(fail=True), lambda s, url: _live_port(url))  # type: ignore[arg-type]
    assert bg.port is live and not bg.separate
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))
    try:
        assert bg.live_streams == 1 and bg.wait_until_quiet(timeout=0.05) is False
    finally:
        reply.close()  # type: ignore[attr-defined]
    assert bg.live_streams == 0


def test_a_reading_counts_the_seconds_its_own_server_was_paused_as_yielded() -> None:
    asked = threading.Event()
    go_on = threading.Event()

    def answer(question: str, options: list[str]) -> str:
        asked.set()
        go_on.wait(10)  # the request waits in the server, as in a paused one
        return "decode"

    live = _live_port()
    frozen = _Frozen()
    bg = _beside(live, frozen, ChatPort(model=Reader(answer=answer), name="background", warm_cache=False))
    out: dict[str, object] = {}
    t = threading.Thread(
        target=lambda: out.setdefault(
            "r", read_answer(bg, "Why?", "Decode is bound.", [PHASE], logprobs=False)
        )
    )
    t.start()
    assert asked.wait(5)
    reply = live.stream([HumanMessage("hi")], key="candidate")
    next(iter(reply))
    time.sleep(0.3)  # a candidate's reply streams: the background server is paused
    reply.close()  # type: ignore[attr-defined]
    go_on.set()
    t.join(10)
    cost = out["r"].cost  # type: ignore[attr-defined]
    assert cost.calls == 2 and cost.preempted == 0  # its own server: nothing abandoned
    assert 0.25 <= cost.yielded_seconds < 5


def test_a_background_server_that_fails_says_how_to_do_without_it(tmp_path: Path) -> None:
    from interviewer.llm.embedded import EmbeddedServer

    settings = Settings(data_dir=tmp_path, embedded_model="smollm2-135m")
    background = str(EmbeddedServer(settings, idle=True)._failure("did not load within 180 s"))
    live = str(EmbeddedServer(settings)._failure("did not load within 180 s"))
    assert "background model server" in background and "INTERVIEWER_BACKGROUND_SERVER=0" in background
    assert "INTERVIEWER_BACKGROUND_SERVER" not in live and "INTERVIEWER_BASE_URL" in live


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
        assert readings.cost.prompt_tokens > 0, readings.cost  # the server reports usage: the cost counts it
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
