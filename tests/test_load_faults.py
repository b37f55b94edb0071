"""Load and faults against the real OpenAI client path: a stand-in model server on loopback, the Gradio app.

Concurrent candidates lose or cross no turn; a crashed app (kill -9) resumes; a failing, hanging, dropping or
garbled model server gives the candidate a clear message and loses nothing; a corrupt session database or
Chroma folder is named with the way out and never replaced; sessions stay private to their owner.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradio_client import Client
from typer.testing import CliRunner

from interviewer.config import Settings, load_settings
from interviewer.llm.client import build_port
from interviewer.llm.standin import Behaviour, StandinServer
from interviewer.owners import owner_in
from interviewer.runtime import ModelChoice, Runtime
from interviewer.store import SessionStore
from tests.support.app_process import AppProcess
from tests.support.candidates import run_many, stored_answers, text_of, transcript_problems
from ui.app import App, build

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    with StandinServer() as srv:
        yield srv


def _runtime(tmp_path: Path, standin: StandinServer, **kw: Any) -> Runtime:
    # These tests are about faults and load, with placeholder answers: the authored whys, in order (the
    # interviewer that reads answers is tested in tests/test_listen.py and tests/test_ui.py).
    settings = load_settings(
        **({"data_dir": tmp_path, "base_url": standin.base_url, "timeout": 4.0, "listen": False} | kw)
    )
    rt = Runtime(settings)
    rt.set_model(
        build_port(settings, base_url=standin.base_url, model="standin"),
        ModelChoice(standin.base_url, "standin", "standin", embedded=False),
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})  # no index build
    return rt


@contextlib.contextmanager
def _served(rt: Runtime) -> Iterator[tuple[str, Runtime]]:
    demo = build(rt)
    demo.queue(default_concurrency_limit=16)
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        yield demo.local_url, rt
    finally:
        demo.close()
        rt.close()


@pytest.fixture
def live(tmp_path: Path, standin: StandinServer) -> Iterator[tuple[str, Runtime]]:
    with _served(_runtime(tmp_path, standin)) as served:
        yield served


# -- load ------------------------------------------------------------------------------------------------


def test_concurrent_candidates_lose_and_cross_no_turn(
    live: tuple[str, Runtime], standin: StandinServer
) -> None:
    url, rt = live
    runs, _wall = run_many(url, 4, round_id="phone-screen", per_round=1)
    assert [r.error for r in runs] == [None] * 4
    assert all(r.finished and len(r.sent) == 3 for r in runs)
    assert transcript_problems(rt.settings.db_path, runs) == []
    assert len({r.owner for r in runs}) == 4 and len({r.session_id for r in runs}) == 4
    assert standin.stats.requests >= 8  # two follow-ups per candidate went through the OpenAI client


# -- the model server failing mid-round -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "count", "said"),
    [
        ("fail", 2, "HTTP 500"),  # 2: the client retries a failed request once
        ("hang", 2, "did not answer in time"),
        ("drop", 1, "dropped the connection mid-reply"),  # mid-stream: no retry; the stream broke
        ("malformed", 1, "not valid OpenAI-style JSON"),
    ],
)
def test_model_fault_mid_stream_is_explained_and_loses_nothing(
    live: tuple[str, Runtime], standin: StandinServer, fault: str, count: int, said: str
) -> None:
    url, rt = live
    client = Client(url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    standin.behaviour = Behaviour(fault=fault, fault_count=count, hang_seconds=5.0)
    chat, box, status, *_ = client.predict(
        "Amdahl bounds the speedup by the serial part.", owner, api_name="/send"
    )
    assert box == "" and "why, level 1" in status
    assert said in status and "authored follow-up" in status, status  # the candidate is told what happened
    assert standin.base_url in status
    assert not text_of(chat[-1]).startswith("Walk me through this")  # the authored fallback was asked instead
    # The server recovers: the next follow-up comes from the model again, and every answer is stored.
    chat, _, status, *_ = client.predict("The parallel part scales perfectly.", owner, api_name="/send")
    assert text_of(chat[-1]).startswith("Walk me through this") and "⚠" not in status
    sid = client.predict(owner, api_name="/sessions")["data"][0][0]
    assert stored_answers(rt.settings.db_path, sid)[1] == [
        "Amdahl bounds the speedup by the serial part.",
        "The parallel part scales perfectly.",
    ]


def test_model_server_killed_then_back_on_the_same_port(
    live: tuple[str, Runtime], standin: StandinServer
) -> None:
    url, _ = live
    client = Client(url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    port = standin.port
    standin.stop()
    _, _, status, *_ = client.predict("First answer.", owner, api_name="/send")
    assert "no model server answers at" in status and "why, level 1" in status
    with StandinServer(port):
        chat, _, status, *_ = client.predict("Second answer.", owner, api_name="/send")
    assert text_of(chat[-1]).startswith("Walk me through this") and "why, level 2" in status


def test_a_slow_model_does_not_hold_up_other_candidates(tmp_path: Path, standin: StandinServer) -> None:
    standin.behaviour = Behaviour(first_token_delay=4.0)  # slow, not failed: the client waits up to 30 s
    with _served(_runtime(tmp_path, standin, timeout=30.0)) as (url, _):
        slow = Client(url, verbose=False)
        _, slow_owner, *_ = slow.predict("phone-screen", 1, False, None, api_name="/start")
        job = slow.submit("A slow answer.", slow_owner, api_name="/send")
        while not any("A slow answer" in str(p) for p in list(standin.stats.prompts)):
            time.sleep(0.05)  # the slow reply is under way
        fast = Client(url, verbose=False)
        fast.predict(
            "ml-coding", 1, False, None, api_name="/start"
        )  # no model call: must not queue behind it
        assert not job.done(), "the other candidate's start waited for the slow model"
        chat, _, status, *_ = job.result(timeout=60)
    assert text_of(chat[-1]).startswith("Walk me through this") and "⚠" not in status


# -- crash and restart -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_kill_9_mid_round_then_resume_with_the_same_owner(standin: StandinServer, tmp_path: Path) -> None:
    extra = {"INTERVIEWER_RETRIEVAL": "false", "INTERVIEWER_LISTEN": "false"}  # placeholder answers
    app = AppProcess(tmp_path, standin.base_url, extra_env=extra).start()
    try:
        client = Client(app.url, verbose=False)
        _, owner, *_ = client.predict("phone-screen", 2, False, None, api_name="/start")
        client.predict("Completed answer one.", owner, api_name="/send")
        # The next follow-up is slow to come; the app dies while the candidate waits for it.
        standin.behaviour = Behaviour(first_token_delay=20.0)
        job = client.submit("Completed answer two, the app dies after this.", owner, api_name="/send")
        deadline = time.monotonic() + 30

        def asked_about_answer_two() -> bool:  # prefetches of the next prompt do not count: they lack it
            return any("Completed answer two" in str(p) for p in list(standin.stats.prompts))

        while not asked_about_answer_two() and time.monotonic() < deadline:
            time.sleep(0.05)  # the answer is committed before the model is asked
        assert asked_about_answer_two()
        app.kill9()
        with pytest.raises(Exception):  # noqa: B017 - any client error: the server is gone
            job.result(timeout=30)
    finally:
        app.stop()
    standin.behaviour = Behaviour()
    sid = next(r.id for r in SessionStore(tmp_path / "sessions.sqlite3").list(owner=owner_in(owner)))
    app = AppProcess(tmp_path, standin.base_url, port=app.port, extra_env=extra).start()
    try:
        client = Client(app.url, verbose=False)
        stranger = Client(app.url, verbose=False)
        with pytest.raises(Exception, match="no session"):
            stranger.predict(sid, None, api_name="/reopen")
        chat, status, *_ = client.predict(sid, owner, api_name="/reopen")
        said = [text_of(m) for m in chat if m["role"] == "user"]
        assert said == ["Completed answer one.", "Completed answer two, the app dies after this."]
        assert "why, level 2" in status  # the interrupted follow-up is asked now
        assert text_of(chat[-1]).startswith("Walk me through this")
        chat, _, status, *_ = client.predict("Third answer after the restart.", owner, api_name="/send")
        assert "Question 2/2" in status
        assert len(stored_answers(tmp_path / "sessions.sqlite3", sid)[1]) == 3
    finally:
        app.stop()


# -- damaged files -----------------------------------------------------------------------------------------


def test_corrupt_session_database_is_named_and_never_replaced(tmp_path: Path) -> None:
    from interviewer.cli import app as cli

    db = tmp_path / "sessions.sqlite3"
    junk = b"this is not sqlite " * 512
    db.write_bytes(junk)
    result = CliRunner().invoke(
        cli, ["serve", "--data-dir", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"]
    )
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert str(db) in said and "corrupt" in said and "move it aside" in said
    assert db.read_bytes() == junk  # untouched, not recreated empty


def test_session_database_truncated_mid_file_is_reported(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    sid = store.create("me", "t", {"questions": [], "rounds": []})
    for i in range(200):
        store.append(sid, "answered", {"text": "x" * 500, "i": i})
    store.close()
    db = tmp_path / "sessions.sqlite3"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[:4096] + b"\x00" * 4096 + data[8192:])  # a damaged page after the header
    with pytest.raises(Exception, match=str(db)):
        s2 = SessionStore(db)
        s2.check()
        s2.events(sid)
    assert db.stat().st_size == len(data)


def test_corrupt_chroma_folder_is_named_with_the_rebuild_command(
    tmp_path: Path, standin: StandinServer
) -> None:
    chroma = tmp_path / "chroma"
    chroma.mkdir()
    (chroma / "chroma.sqlite3").write_bytes(b"garbage, not a Chroma index " * 100)
    settings: Settings = load_settings(data_dir=tmp_path, base_url=standin.base_url)
    rt = Runtime(settings)
    try:
        assert rt.retriever() is None
        notice = " ".join(rt.notices)
        assert str(chroma) in notice and "interviewer index --force" in notice
        ports = rt.ports("me")  # the interview still runs, without reference passages
        assert ports.retriever is None
    finally:
        rt.close()


def test_an_index_build_in_progress_does_not_block_interviews(tmp_path: Path, standin: StandinServer) -> None:
    """Regression: the first start's minutes-long index build held the runtime lock, so Start waited for it."""
    rt = _runtime(tmp_path, standin)
    rt.ports("me")  # load the bank and the scorer first: only the retriever's lock is under test
    rt.settings = rt.settings.model_copy(update={"retrieval": True})
    rt._retriever_lock.acquire()  # as the warm-up thread does while it builds
    try:
        t = time.perf_counter()
        ports = rt.ports("me")
        assert time.perf_counter() - t < 1.0 and ports.retriever is not None
        # It finds nothing until the build is done, and does not wait for it either.
        assert list(ports.retriever.retrieve("how does continuous batching work?", k=2)) == []
    finally:
        rt._retriever_lock.release()
        rt.close()


# -- privacy -----------------------------------------------------------------------------------------------


def test_with_auth_sessions_belong_to_the_logged_in_user(tmp_path: Path, standin: StandinServer) -> None:
    rt = _runtime(tmp_path, standin)
    demo = build(rt)
    demo.queue()
    demo.launch(
        server_name="127.0.0.1",
        prevent_thread_lock=True,
        quiet=True,
        ssr_mode=False,
        auth=[("alice", "pw-alice"), ("bob", "pw-bob")],
    )
    try:
        alice = Client(demo.local_url, verbose=False, auth=("alice", "pw-alice"))
        _, owner, *_ = alice.predict("phone-screen", 1, False, None, api_name="/start")
        assert owner == "user:alice"
        alice.predict("Alice's answer.", owner, api_name="/send")
        sid = alice.predict(owner, api_name="/sessions")["data"][0][0]
        bob = Client(demo.local_url, verbose=False, auth=("bob", "pw-bob"))
        # Bob knows the id and even sends Alice's owner token: the login decides, not the token.
        for token in (None, "user:alice", "browser:guess"):
            with pytest.raises(Exception, match="no session"):
                bob.predict(sid, token, api_name="/reopen")
        assert bob.predict("user:alice", api_name="/sessions")["data"] == []
        with pytest.raises(Exception):  # noqa: B017 - no login, no app
            Client(demo.local_url, verbose=False)
        chat, *_ = alice.predict(sid, owner, api_name="/reopen")
        assert "Alice's answer." in [text_of(m) for m in chat]
    finally:
        demo.close()
        rt.close()


def test_guessing_ids_reveals_nothing(live: tuple[str, Runtime]) -> None:
    url, rt = live
    alice = Client(url, verbose=False)
    _, owner, *_ = alice.predict("phone-screen", 1, False, None, api_name="/start")
    alice.predict("private answer", owner, api_name="/send")
    sid = alice.predict(owner, api_name="/sessions")["data"][0][0]
    mallory = Client(url, verbose=False)
    for guess in (sid, "' OR 1=1 --"):
        for token in (None, "local"):
            with pytest.raises(Exception, match="no session"):
                mallory.predict(guess, token, api_name="/reopen")
    with pytest.raises(Exception, match=r"no session|no interview"):
        mallory.predict("my answer into her session", "browser:x", api_name="/send")
    assert stored_answers(rt.settings.db_path, sid)[1] == ["private answer"]


def test_candidate_markup_is_escaped_for_the_chat() -> None:
    """Regression: the sanitising chat dropped <script> and rendered <img>; it must show what was typed."""
    from ui.app import _shown

    chat = [
        {"role": "assistant", "content": "**Question 1**"},
        {"role": "user", "content": "<script>alert(1)</script> a < b & c"},
    ]
    assert _shown(chat) == [
        {"role": "assistant", "content": "**Question 1**"},
        {"role": "user", "content": "&lt;script&gt;alert(1)&lt;/script&gt; a &lt; b &amp; c"},
    ]


def test_a_degradation_shows_to_every_candidate_until_it_is_fixed(
    tmp_path: Path, standin: StandinServer
) -> None:
    """Regression: the model-down notice was shown once, to whichever candidate asked first, then cleared."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    rt = Runtime(load_settings(data_dir=tmp_path, base_url=dead, timeout=4.0))
    try:
        assert rt.model_or_none() is None
        first, second = App(rt), App(rt)
        for app in (first, second, first):
            assert "Follow-ups use the authored wording" in app._status(None)
        rt.switch_model(standin.base_url, None, "standin")  # the settings panel points at a live server
        assert rt.notices == [] and "⚠" not in first._status(None)
    finally:
        rt.close()
