"""The UI builds, and a round can be driven through Gradio's own client against a live local app."""

from __future__ import annotations

from pathlib import Path

import pytest
from gradio_client import Client

from interviewer.config import load_settings
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.runtime import ModelChoice, Runtime
from ui.app import build

from .conftest import FIXTURE_CONTENT


def _text(message: dict) -> str:
    content = message["content"]
    if isinstance(content, list):  # Gradio 6 returns message parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


@pytest.fixture
def live_app(tmp_path):
    settings = load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, answer_seconds=90)
    rt = Runtime(settings)
    model = ScriptedChatModel().queue(
        "Which assumption about perfect scaling does that 4.7x rely on?",
        "What happens to the speedup once memory bandwidth saturates?",
    )
    rt.set_model(
        ChatPort(model, name="scripted test model"),
        ModelChoice("http://127.0.0.1:1/v1", "s", "scripted test model", False),
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})  # no index
    demo = build(rt)
    demo.queue()
    demo.launch(
        server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, ssr_mode=False
    )
    try:
        yield demo, rt, model
    finally:
        demo.close()
        rt.close()


def test_round_through_gradio_client(live_app):
    demo, _, model = live_app
    client = Client(demo.local_url, verbose=False)
    chat, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    assert "90%" in _text(chat[-1])
    assert isinstance(owner, str) and len(owner) > 20  # the browser's secret owner token
    chat, box, status, *_ = client.predict(
        "Amdahl gives 4.7x with a 10x cap from the serial part. <script>alert(1)</script>",
        owner,
        api_name="/send",
    )
    assert _text(chat[-1]) == "Which assumption about perfect scaling does that 4.7x rely on?"
    assert box == "" and "why, level 1" in status
    chat, _, status, *_ = client.predict("That the parallel part scales perfectly.", owner, api_name="/send")
    # after a one-clause acknowledgement of a fair answer (the interviewer listens)
    assert _text(chat[-1]).endswith("What happens to the speedup once memory bandwidth saturates?")
    chat, _, status, *_ = client.predict(
        "Workers wait on bandwidth, the speedup flattens.", owner, api_name="/send"
    )
    assert "end of this interview" in _text(chat[-1]) and "finished" in status
    followups = [c for c in model.calls if '"opposite"' not in str(c[-1].content)]  # not the truth judge's
    assert len(followups) == 2
    report_md, files = client.predict(owner, api_name="/report")
    assert "# Feedback report" in report_md and "Practice signal" in report_md
    assert sorted(Path(f).suffix for f in files) == [".html", ".md"]
    page = Path(next(f for f in files if f.endswith(".html"))).read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    sessions = client.predict(owner, api_name="/sessions")
    assert len(sessions["data"]) == 1 and sessions["data"][0][3] in {"active", "completed"}


def test_empty_answer_is_a_warning_not_a_crash(live_app):
    demo, _, _ = live_app
    client = Client(demo.local_url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    chat, box, *_ = client.predict("   ", owner, api_name="/send")
    assert len(chat) == 1 and box == "   "  # nothing lost, nothing sent
    chat, *_ = client.predict("now a real answer about the serial part", owner, api_name="/send")
    assert len(chat) == 3


def test_another_client_cannot_continue_a_session_by_id(live_app):
    demo, _, _ = live_app
    alice = Client(demo.local_url, verbose=False)
    _, alice_owner, *_ = alice.predict("phone-screen", 1, False, None, api_name="/start")
    sid = alice.predict(alice_owner, api_name="/sessions")["data"][0][0]
    mallory = Client(demo.local_url, verbose=False)
    with pytest.raises(Exception, match="no session"):
        mallory.predict(sid, None, api_name="/reopen")
    with pytest.raises(Exception, match="no session"):
        mallory.predict(sid, "browser:guessed-owner", api_name="/reopen")
    assert mallory.predict("browser:someone-else", api_name="/sessions")["data"] == []
    # Alice herself can reopen it.
    chat, *_ = alice.predict(sid, alice_owner, api_name="/reopen")
    assert "90%" in _text(chat[0])


@pytest.mark.slow
def test_spoken_answer_round_trip_through_the_ui(live_app, tmp_path):
    """Say an answer (synthesised with the local voice), transcribe it in the UI, send it as a spoken turn."""
    from gradio_client import handle_file

    from interviewer.speech import get_tts

    demo, rt, _ = live_app
    wav = get_tts(rt.settings).synthesize(
        "The speedup is about four point seven times because the serial part limits it.", tmp_path / "a.wav"
    )
    client = Client(demo.local_url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    text = client.predict(handle_file(str(wav)), "", owner, api_name="/transcribe")
    assert "serial" in text.lower() and "speedup" in text.lower()
    *_, voice = client.predict(text, owner, True, api_name="/send")
    assert voice and Path(voice).stat().st_size > 1000  # the interviewer's follow-up, spoken
    sid = client.predict(owner, api_name="/sessions")["data"][0][0]
    answered = [e.payload for e in rt.store.events(sid) if e.kind == "answered"]
    assert answered[0]["mode"] == "spoken" and answered[0]["audio_seconds"] > 1
    md, _ = client.predict(owner, api_name="/report")
    assert "Delivery (spoken answers)" in md and "words per minute" in md


def test_not_audio_is_a_warning(live_app, tmp_path):
    from gradio_client import handle_file

    demo, _, _ = live_app
    bogus = tmp_path / "notes.wav"
    bogus.write_text("this is not audio at all")
    client = Client(demo.local_url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    text = client.predict(handle_file(str(bogus)), "what I typed so far", owner, api_name="/transcribe")
    assert text == "what I typed so far"  # the typed text stays; the page shows a warning instead


def test_a_reply_cut_off_before_its_question_is_asked_on_the_next_send(live_app):
    from interviewer import planner

    demo, rt, _ = live_app
    client = Client(demo.local_url, verbose=False)
    _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
    sid = client.predict(owner, api_name="/sessions")["data"][0][0]
    # The answer was stored, then the stream died (dropped connection, restart) before the follow-up was.
    # (the owner behind the browser's signed token is the one stored with the session)
    planner.resume_session(rt, rt.store.get(sid).owner, sid).submit("4.7x: the serial 10% caps it")
    chat, box, status, *_ = client.predict(
        "It assumes the parallel part scales perfectly.", owner, api_name="/send"
    )
    assert _text(chat[-1]) == "Which assumption about perfect scaling does that 4.7x rely on?"
    assert box == "It assumes the parallel part scales perfectly." and "why, level 1" in status
    chat, box, *_ = client.predict(box, owner, api_name="/send")
    assert box == "" and _text(chat[-1]).endswith(
        "What happens to the speedup once memory bandwidth saturates?"
    )


def test_two_sends_at_once_store_one_answer(tmp_path, monkeypatch):
    import threading
    import time

    from interviewer import planner

    reopen = planner.resume_session

    def slow_reopen(*args, **kwargs):  # a loaded machine: both sends read the session before either writes
        it = reopen(*args, **kwargs)
        time.sleep(0.5)
        return it

    monkeypatch.setattr(planner, "resume_session", slow_reopen)
    settings = load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path)
    rt = Runtime(settings)
    model = ScriptedChatModel(delay=1.0).queue("Which assumption about perfect scaling does 4.7x rely on?")
    rt.set_model(ChatPort(model, name="slow"), ModelChoice("http://127.0.0.1:1/v1", "s", "slow", False))
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    demo = build(rt)
    demo.queue(default_concurrency_limit=16)  # as `launch` serves it: events of one page run in parallel
    demo.launch(
        server_name="127.0.0.1", server_port=None, prevent_thread_lock=True, quiet=True, ssr_mode=False
    )
    try:
        client = Client(demo.local_url, verbose=False)
        _, owner, *_ = client.predict("phone-screen", 1, False, None, api_name="/start")
        threads = [
            threading.Thread(
                target=client.predict, args=(f"take {i}: 4.7x", owner), kwargs={"api_name": "/send"}
            )
            for i in range(2)
        ]  # Shift+Enter and a click on Send, or two tabs
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sid = rt.store.list()[0].id
        kinds = [(e.kind, e.payload.get("level")) for e in rt.store.events(sid)]
        assert kinds.count(("answered", 0)) == 1 and kinds.count(("asked", 1)) == 1, kinds
    finally:
        demo.close()
        rt.close()


def test_the_timer_tick_only_reads_a_paused_session(tmp_path):
    from ui.app import App

    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, answer_seconds=90))
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="s"), ModelChoice("http://127.0.0.1:1/v1", "s", "s", False)
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    app = App(rt)
    me = app.owners.issue()  # a token this server signed, as a browser keeps it
    *_, last = app.start("phone-screen", 1, False, me)
    sid = last[1]
    assert "s left" in app.timer(sid, me, None)
    app.pause(sid, me, None)
    before = rt.store.events(sid)
    assert app.timer(sid, me, None) == ""  # the clock is stopped while paused
    assert rt.store.events(sid) == before and rt.store.get(sid).status == "paused"  # a tick writes nothing
    rt.close()


def test_typing_keeps_open_interviews_for_the_most_recent_sessions_only(tmp_path, monkeypatch):
    import ui.app as ui_app

    monkeypatch.setattr(ui_app, "_TYPING_KEPT", 3)
    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path))
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="s"), ModelChoice("http://127.0.0.1:1/v1", "s", "s", False)
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    app = ui_app.App(rt)
    me = app.owners.issue()
    sids = []
    for _ in range(5):
        *_, last = app.start("phone-screen", 1, False, me)
        sids.append(last[1])
        app.typing("Batching shares the weight read across ", last[1], me, None)
    assert list(app._typing) == sids[-3:]  # the oldest two were let go
    app.typing("Batching shares the weight read across ", sids[0], me, None)  # a let-go session reopens
    assert list(app._typing) == [*sids[-2:], sids[0]]
    rt.close()


def test_the_view_after_end_round_redraws_from_the_store_and_writes_nothing(tmp_path):
    from ui.app import App

    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path))
    rt.set_model(
        ChatPort(ScriptedChatModel(), name="s"), ModelChoice("http://127.0.0.1:1/v1", "s", "s", False)
    )
    rt.settings = rt.settings.model_copy(update={"retrieval": False})
    app = App(rt)
    me = app.owners.issue()  # a token this server signed, as a browser keeps it
    *_, last = app.start("phone-screen", 1, False, me)
    sid = last[1]
    app.pause(sid, me, None)
    before = rt.store.events(sid)
    chat, status = app.view(sid, me, None)
    assert "Question 1/1" in status and "8 workers" in str(chat)
    assert rt.store.events(sid) == before and rt.store.get(sid).status == "paused"  # a look is not a resume
    assert app.view(sid, "browser:someone-else", None) == app.view(None, me, None)  # no change
    app.end_round(sid, me, None)
    assert "Round ended" in app.view(sid, me, None)[1]
    rt.close()


def test_the_banner_calls_only_other_hosts_remote(tmp_path):
    from ui.app import App

    rt = Runtime(load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path))
    port = ChatPort(ScriptedChatModel(), name="m")
    for url, where in [
        ("http://localhost:11434/v1", "on this machine"),  # Ollama's default address
        ("http://[::1]:8000/v1", "on this machine"),
        ("http://127.0.0.1:8080/v1", "on this machine"),
        ("https://api.example.com/v1", "REMOTE"),
    ]:
        rt.set_model(port, ModelChoice(url, "m", "m", False))
        assert where in App(rt).model_banner(), url
