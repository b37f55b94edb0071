"""Gradio Blocks wiring only: every handler calls the engine (via Runtime) and turns errors into messages."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from interviewer.config import Settings
from interviewer.content import Round
from interviewer.errors import InputError, InterviewerError
from interviewer.runtime import Runtime
from interviewer.session import Interview

log = logging.getLogger(__name__)

FULL_LOOP = "full-loop"
ROUND_CHOICES = [(r.title, r.value) for r in Round if r is not Round.DEEP_DIVE] + [("Full loop", FULL_LOOP)]

Chat = list[dict[str, str]]


def _owner(owner: str | None, request: gr.Request | None) -> str:
    """Logged-in users own their sessions; otherwise a random token kept in this browser."""
    if request is not None and getattr(request, "username", None):
        return f"user:{request.username}"
    return owner or f"browser:{secrets.token_urlsafe(16)}"


class App:
    """Handlers for one app process; per-candidate state lives in the browser (session id, owner token)."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    # helpers -------------------------------------------------------------------------------------
    def _open(self, sid: str | None, owner: str) -> Interview:
        if not sid:
            raise InputError("no interview yet: pick a round and press Start")
        return Interview.resume(self.rt.ports(owner), sid)

    def _status(self, it: Interview | None, extra: str | None = None) -> str:
        parts = []
        if it is not None:
            if it.finished:
                parts.append("Interview finished.")
            else:
                n, total = it.progress
                q = it.question
                level = ["main question", "why, level 1", "why, level 2"][it.level]
                parts.append(f"Question {n}/{total} ({q.round.title if q else ''}) · {level}")
        for notice in self.rt.notices:
            parts.append(f"⚠ {notice}")
        self.rt.notices.clear()
        if it is not None and it.notice:
            parts.append(f"⚠ {it.notice}")
        if extra:
            parts.append(extra)
        return "  \n".join(parts)

    def model_banner(self) -> str:
        choice = self.rt.model_choice
        if choice is None:
            where = self.rt.settings.base_url or "the embedded model (starting)"
            return f"**Model:** {where}"
        local = (
            "on this machine"
            if choice.base_url.startswith("http://127.0.0.1")
            else "REMOTE: answers leave this machine"
        )
        return f"**Model answering:** {choice.display_name} ({local})"

    # handlers ------------------------------------------------------------------------------------
    def start(
        self, choice: str, per_round: int, owner: str | None, request: gr.Request
    ) -> Iterator[tuple[Chat, str | None, str, str]]:
        owner = _owner(owner, request)
        rounds = [r.value for r in Round if r is not Round.DEEP_DIVE] if choice == FULL_LOOP else [choice]
        try:
            it = Interview.start(self.rt.ports(owner), rounds, per_round=int(per_round))
            for text in it.advance():
                yield [{"role": "assistant", "content": text}], it.session_id, owner, self._status(it)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        yield it.messages(), it.session_id, owner, self._status(it)

    def send(
        self, answer: str, sid: str | None, owner: str | None, request: gr.Request
    ) -> Iterator[tuple[Chat, str, str]]:
        owner = _owner(owner, request)
        try:
            it = self._open(sid, owner)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        try:
            it.submit(answer)
        except InputError as e:
            gr.Warning(str(e))
            yield it.messages(), answer, self._status(it)  # keep the text so nothing typed is lost
            return
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        history = it.messages()
        yield history, "", self._status(it)
        for text in it.advance():
            yield [*history, {"role": "assistant", "content": text}], "", self._status(it)
        yield it.messages(), "", self._status(it)

    def end_round(self, sid: str | None, owner: str | None, request: gr.Request) -> tuple[Chat, str]:
        owner = _owner(owner, request)
        try:
            it = self._open(sid, owner)
            it.end()
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return it.messages(), self._status(it, "Round ended: answered questions are scored.")

    def timer(self, sid: str | None, owner: str | None, request: gr.Request) -> str:
        if not sid or self.rt.settings.answer_seconds is None:
            return ""
        try:
            it = self._open(sid, _owner(owner, request))
        except InterviewerError:
            return ""
        left = it.time_left()
        if left is None:
            return ""
        return f"⏱ {int(left)} s left" if left >= 0 else f"⏱ {int(-left)} s over time"

    def list_sessions(self, owner: str | None, request: gr.Request) -> list[list[str]]:
        owner = _owner(owner, request)
        try:
            rows = self.rt.store.list(owner=owner)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return [
            [r.id, dt.datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M"), r.title, r.status]
            for r in rows
        ]

    def reopen(self, sid: str, owner: str | None, request: gr.Request) -> tuple[Chat, str, str]:
        owner = _owner(owner, request)
        try:
            it = self._open(sid.strip(), owner)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        chat = it.messages()
        if it.awaiting == "interviewer" and not it.finished:
            it.advance_all()
            chat = it.messages()
        return chat, it.session_id, self._status(it)

    def test_connection(self, base_url: str, api_key: str) -> tuple[str, Any]:
        from interviewer.llm.client import test_connection

        if not base_url.strip():
            return "Give a base URL such as http://127.0.0.1:8000/v1", gr.update(choices=[])
        report = test_connection(base_url.strip().rstrip("/"), api_key or None)
        models = list(report.models)
        return ("✅ " if report.ok else "❌ ") + report.message, gr.update(
            choices=models, value=models[0] if models else None
        )

    def use_model(self, base_url: str, api_key: str, model: str | None) -> tuple[str, str]:
        try:
            choice = self.rt.switch_model(base_url.strip() or None, api_key or None, model)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return f"Now answering: {choice.display_name}", self.model_banner()

    def load(self, owner: str | None, request: gr.Request) -> tuple[str, str]:
        return _owner(owner, request), self.model_banner()


def build(runtime: Runtime) -> gr.Blocks:
    """The UI. Constructing it does no model or network I/O."""
    app = App(runtime)
    with gr.Blocks(title="Mock interviewer") as demo:
        owner = gr.BrowserState(None, storage_key="interviewer-owner")
        sid = gr.State(None)
        gr.Markdown("# Mock interviewer\nAuthored questions, two levels of *why*, rubric scores.")
        banner = gr.Markdown(app.model_banner(), elem_id="model-banner")
        with gr.Tab("Interview"):
            with gr.Row():
                round_dd = gr.Dropdown(ROUND_CHOICES, value=Round.PHONE.value, label="Round", elem_id="round")
                per_round = gr.Slider(
                    1, 10, value=3, step=1, label="Questions per round", elem_id="per-round"
                )
                start_btn = gr.Button("Start", variant="primary", elem_id="start")
            status = gr.Markdown("", elem_id="status")
            timer_md = gr.Markdown("", elem_id="timer")
            chat = gr.Chatbot(label="Interview", height=480, elem_id="chat", sanitize_html=True)
            answer = gr.Textbox(
                label="Your answer", lines=4, placeholder="Type your answer…", elem_id="answer"
            )
            with gr.Row():
                send_btn = gr.Button("Send", variant="primary", elem_id="send")
                end_btn = gr.Button("End round", elem_id="end")
        with gr.Tab("Past sessions"):
            refresh = gr.Button("Refresh", elem_id="refresh-sessions")
            table = gr.Dataframe(
                headers=["id", "updated", "title", "status"], interactive=False, elem_id="sessions"
            )
            reopen_id = gr.Textbox(label="Session id to reopen", elem_id="reopen-id")
            reopen_btn = gr.Button("Reopen", elem_id="reopen")
        with gr.Tab("Settings"):
            gr.Markdown(
                "Point the interviewer at any OpenAI-compatible server, or leave empty for the embedded model."
            )
            url = gr.Textbox(label="Base URL", placeholder="http://127.0.0.1:8000/v1", elem_id="base-url")
            key = gr.Textbox(label="API key", type="password", elem_id="api-key")
            test_btn = gr.Button("Test connection", elem_id="test-connection")
            conn = gr.Markdown("", elem_id="connection")
            model_dd = gr.Dropdown([], label="Model", allow_custom_value=True, elem_id="model")
            use_btn = gr.Button("Use this model", variant="primary", elem_id="use-model")

        demo.load(app.load, [owner], [owner, banner], api_name=False)
        start_btn.click(app.start, [round_dd, per_round, owner], [chat, sid, owner, status], api_name="start")
        send_evt = dict(fn=app.send, inputs=[answer, sid, owner], outputs=[chat, answer, status])
        send_btn.click(**send_evt, api_name="send")  # type: ignore[arg-type]
        answer.submit(**send_evt, api_name=False)  # type: ignore[arg-type]
        end_btn.click(app.end_round, [sid, owner], [chat, status], api_name="end_round")
        gr.Timer(1.0).tick(app.timer, [sid, owner], [timer_md], api_name=False, show_progress="hidden")
        refresh.click(app.list_sessions, [owner], [table], api_name="sessions")
        reopen_btn.click(app.reopen, [reopen_id, owner], [chat, sid, status], api_name="reopen")
        test_btn.click(app.test_connection, [url, key], [conn, model_dd], api_name="test_connection")
        use_btn.click(app.use_model, [url, key, model_dd], [conn, banner], api_name="use_model")
    return demo


def launch(
    settings: Settings,
    *,
    share: bool = False,
    auth: tuple[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    block: bool = True,
) -> tuple[gr.Blocks, Runtime]:
    """Start the app; the model warms up in the background so the page is usable at once."""
    runtime = Runtime(settings)
    runtime.store.check()  # a corrupt database is reported now, with its path
    runtime.bank  # noqa: B018 - validate the content before serving
    say = progress or (lambda m: None)

    def warm() -> None:
        try:
            port = runtime.model(progress=say)
            say(f"model ready: {port.name}")
        except InterviewerError as e:
            runtime.notices.append(str(e))
            say(f"model unavailable: {e}")
        runtime.retriever(progress=say)
        runtime.scorer()

    threading.Thread(target=warm, name="warm-up", daemon=True).start()
    demo = build(runtime)
    demo.queue(default_concurrency_limit=16)
    try:
        demo.launch(
            server_name=settings.host,
            server_port=settings.port or None,
            share=share,
            auth=auth,
            prevent_thread_lock=not block,
            quiet=not block,
            ssr_mode=False,
            show_error=False,
        )
    finally:
        if block:
            runtime.close()
    return demo, runtime
