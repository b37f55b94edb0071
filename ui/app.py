"""Gradio Blocks wiring only: handlers call the front desk (:mod:`interviewer.desk`) and the interview it hands
out, and turn errors into messages. Speech handlers live in ui/voice.py, the code, report and progress panels
in ui/panels.py."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr

from interviewer import planner, whiteboard
from interviewer.admin import single_user_local
from interviewer.config import Settings
from interviewer.content import Round
from interviewer.desk import Desk
from interviewer.engine.ahead import TypingPauses
from interviewer.engine.interview import Interview
from interviewer.errors import InputError, InterviewerError
from interviewer.limits import MAX_PER_ROUND
from interviewer.netguard import check_url, exposure_check
from interviewer.runtime import Runtime
from ui.checks import RequestChecks
from ui.panels import BoardPanel, CodePanel, Reports
from ui.panels import shown as _shown
from ui.voice import Voice

log = logging.getLogger(__name__)

FULL_LOOP = planner.FULL_LOOP
# the code panel and the whiteboard's visibility, untouched while a reply streams
_NO_CHANGE = (gr.update(), gr.update(), gr.update(), gr.update())
ROUND_CHOICES = [(r.title, r.value) for r in Round] + [("All rounds", FULL_LOOP)]


def _loop_choices() -> list[tuple[str, str]]:
    try:
        from interviewer.loops import list_presets

        return [("(none: one round)", "")] + [(p.name, p.id) for p in list_presets()]
    except InterviewerError:
        return [("(none: one round)", "")]


Chat = list[dict[str, str]]
END_WAIT_SECONDS = 120.0  # End round waits this long for a reply (and its scoring) that is still running
ROUND_ENDED = "Round ended: answered questions are scored."
BUSY = "the interviewer is still on your last message: wait for it to finish, then try again"


# The interviewer's voice arrives a sentence at a time: the page queues the pieces and plays them in order;
# an empty value (the candidate started talking) or the stop button silences it.
_VOICE_QUEUE_JS = """(v) => {
  const q = (window.__interviewerVoice ||= {queue: [], el: null, played: []});
  const stop = () => { q.queue.length = 0; if (q.el) { q.el.pause(); q.el = null; } };
  if (!v || !v.url) { stop(); return; }
  const next = () => {
    if (q.el || !q.queue.length) return;
    const url = q.queue.shift();
    const a = new Audio(url);
    q.el = a;
    q.played.push(url);
    a.onended = a.onerror = () => { q.el = null; next(); };
    a.play().catch(() => { q.el = null; next(); });
  };
  q.queue.push(v.url);
  next();
}"""
_VOICE_STOP_JS = """(...args) => {
  const q = window.__interviewerVoice;
  if (q) { q.queue.length = 0; if (q.el) { q.el.pause(); q.el = null; } }
  return args;
}"""


_TYPING_KEPT = 256  # sessions whose open interview typing events reuse
REPORT_TTL_SECONDS = 900  # a report download link works this long, then the file is gone
MAX_UPLOAD = "10mb"  # resumes and recordings; Gradio refuses bigger uploads before they reach a handler


class App:
    """Handlers for one app process; per-candidate state lives in the browser (session id, owner token).

    ``admin``: single-user local mode, where switching the model and testing connections need no admin token
    (for requests straight from this machine); a configured ``INTERVIEWER_ADMIN_TOKEN`` is required either way.
    """

    def __init__(self, runtime: Runtime, *, admin: bool = True) -> None:
        self.rt = runtime
        self.checks = RequestChecks(runtime.settings, admin=admin)
        self.gate, self.owners = self.checks.gate, self.checks.owners
        self._owner, self._resolve = self.checks.owner, self.checks.resolve
        self._bounded, self._admin = self.checks.bounded, self.checks.admin
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        # sid -> (owner, events seen, interview): typing events reuse the open interview while nothing moved;
        # the most recent _TYPING_KEPT sessions only (a long-running server sees many)
        self._typing: OrderedDict[str, tuple[str, int, Interview]] = OrderedDict()
        # a typed answer is read ahead when the candidate stops typing, full stop or not
        self._pauses = TypingPauses()
        self.desk = Desk(runtime)
        self.voice = Voice(runtime, self.desk, self.checks, self._busy)
        self.code = CodePanel()
        self.reports = Reports(runtime, self.desk, self._owner)
        self.board = BoardPanel(self.desk, self._owner, self._bounded, self._exclusive, self._status)
        # The components' handlers, under the names the page and the tests have always used.
        self.stop_voice, self.mic_start = self.voice.stop_voice, self.voice.mic_start
        self.transcribe, self.listen, self.listen_stop = (
            self.voice.transcribe,
            self.voice.listen,
            self.voice.listen_stop,
        )
        self.show_report, self.progress = self.reports.show_report, self.reports.progress

    # helpers -------------------------------------------------------------------------------------
    @contextmanager
    def _exclusive(self, sid: str | None, wait: float = 0.0) -> Iterator[bool]:
        """One turn at a time per session: Send twice (Enter + click, two tabs) must not answer twice.

        ``wait``: how long to wait for the turn in flight (End round waits for the reply and its scoring).
        """
        if not sid:
            yield True
            return
        with self._locks_guard:
            lock = self._locks.setdefault(sid, threading.Lock())
        acquired = lock.acquire(timeout=wait) if wait > 0 else lock.acquire(blocking=False)
        if not acquired:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _busy(self, sid: str) -> bool:
        """Whether a turn of ``sid`` is in flight (the interviewer is replying)."""
        lock = self._locks.get(sid)
        return lock is not None and lock.locked()

    def _status(self, it: Interview | None, extra: str | None = None) -> str:
        parts = []
        if it is not None:
            if it.finished:
                parts.append("Interview finished.")
            else:
                n, total = it.progress
                q = it.question
                level = ["main question", "why, level 1", "why, level 2", "push further"][it.level]
                parts.append(f"Question {n}/{total} ({q.round.title if q else ''}) · {level}")
        parts += [f"⚠ {notice}" for notice in self.rt.notices]  # shown to every candidate while it lasts
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
        from interviewer.resume import _is_local_url  # the privacy note's test: the two must agree

        local = "on this machine" if _is_local_url(choice.base_url) else "REMOTE: answers leave this machine"
        return f"**Model answering:** {choice.display_name} ({local})"

    def start(
        self,
        choice: str,
        per_round: int,
        weak_first: bool,
        owner: str | None,
        loop: str | None = None,
        resume_file: str | None = None,
        posting: str | None = None,
        voice_on: bool = False,
        request: gr.Request | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        self._bounded(choice=choice, loop=loop, posting=posting, per_round=per_round)
        resolved = self._resolve(owner, request)
        owner, token = resolved.owner, resolved.token
        picked = planner.Choice(
            round=choice or None,
            per_round=int(per_round),
            loop=loop or None,
            resume_path=Path(resume_file) if resume_file else None,
            posting=(posting or "").strip() or None,
            weak_first=bool(weak_first),
        )
        try:
            try:
                it = self.desk.start(owner, picked)
            finally:
                if resume_file:  # the upload is parsed (or refused): its copy in Gradio's cache goes now
                    Path(resume_file).unlink(missing_ok=True)
            for text in it.advance():
                yield (
                    [{"role": "assistant", "content": text}],
                    it.session_id,
                    token,
                    self._status(it),
                    *_NO_CHANGE,
                    gr.update(),
                )
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        yield (
            _shown(it.messages()),
            it.session_id,
            token,
            self._status(it),
            *self.code.update(it),
            self.voice.speak(it, voice_on),
        )

    def send(
        self,
        answer: str,
        sid: str | None,
        owner: str | None,
        spoken: dict[str, Any] | None = None,
        voice_on: bool = False,
        request: gr.Request | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        self._bounded(answer=answer)
        if sid:
            self._pauses.cancel(sid)  # the text is sent: nothing to read ahead at a pause
        with self._exclusive(sid) as ok:
            if not ok:
                gr.Warning(BUSY)
                yield gr.update(), answer, gr.update(), *_NO_CHANGE, gr.update(), spoken
                return
            yield from self._send(answer, sid, owner, spoken, voice_on, request)

    def _send(
        self,
        answer: str,
        sid: str | None,
        owner: str | None,
        spoken: dict[str, Any] | None,
        voice_on: bool,
        request: gr.Request | None,
    ) -> Iterator[tuple[Any, ...]]:
        owner = self._owner(owner, request)
        try:
            it = self.desk.open(sid, owner)
            if it.awaiting == "interviewer" and not it.finished:
                # The last reply was cut off (dropped connection, restart) before its question was stored:
                # ask it now and keep the candidate's text for it.
                it.advance_all()
                gr.Warning(
                    "The interviewer's question had not been shown yet: here it is. Your text is kept."
                )
                yield (
                    _shown(it.messages()),
                    answer,
                    self._status(it),
                    *self.code.update(it),
                    gr.update(),
                    spoken,
                )
                return
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        # A spoken answer being sent: the microphone starts a new one.
        self.voice.take_spoken(sid or "")
        mode, extra = "typed", None
        if spoken and spoken.get("transcript"):
            # Spoken if the text sent is (an edit of) the transcript; the audio's length goes in the log.
            mode = "spoken"
            extra = {"audio_seconds": spoken.get("seconds"), "transcript": spoken["transcript"]}
        try:
            it.submit(answer, mode=mode, extra=extra)
        except InputError as e:
            gr.Warning(str(e))
            # Keep the text: nothing typed or said is lost.
            yield _shown(it.messages()), answer, self._status(it), *_NO_CHANGE, gr.update(), spoken
            return
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        history = _shown(it.messages())
        yield history, "", self._status(it), *_NO_CHANGE, gr.update(), None
        last_wav: Path | None = None
        for text, wav in self.voice.voiced(it, voice_on):
            last_wav = wav or last_wav
            yield (
                [*history, {"role": "assistant", "content": text}],
                "",
                self._status(it),
                *_NO_CHANGE,
                str(wav) if wav else gr.update(),
                None,
            )
        voice = (
            str(last_wav) if last_wav else gr.update()
        )  # the same piece again: the page does not replay it
        yield _shown(it.messages()), "", self._status(it), *self.code.update(it), voice, None

    def send_if_auto(
        self,
        auto: bool,
        answer: str,
        sid: str | None,
        owner: str | None,
        spoken: dict[str, Any] | None,
        voice_on: bool,
        request: gr.Request,
    ) -> Iterator[tuple[Any, ...]]:
        """After a recording: send the transcript at once if the candidate chose to, else leave it to edit."""
        if auto and spoken and answer.strip():
            yield from self.send(answer, sid, owner, spoken, voice_on, request)
        else:
            yield (gr.update(), gr.update(), gr.update(), *_NO_CHANGE, gr.update(), spoken)

    def typing(
        self, answer: str, sid: str | None, owner: str | None, request: gr.Request | None = None
    ) -> None:
        """While the candidate types: send the follow-up prompt so far to the model server (prefill)."""
        if isinstance(answer, str) and len(answer) > self.rt.settings.max_answer_chars:
            return  # never prefilled; Send names the limit (a message per keystroke would not help)
        self._bounded(answer=answer)
        if not answer or not sid or self.rt.model_choice is None:
            return  # nothing typed, no interview, or the model is not up yet: never wait for it here
        owner = self._owner(owner, request)
        try:
            seen = len(self.rt.store.events(sid))
            cached = self._typing.get(sid)
            if cached is not None and cached[0] == owner and cached[1] == seen:
                it = cached[2]
            else:
                it = self.desk.open(sid, owner)
                self._typing[sid] = (owner, seen, it)
                self._typing.move_to_end(sid)
                while len(self._typing) > _TYPING_KEPT:
                    self._typing.popitem(last=False)
            it.prefill(answer)
            self._pauses.offer(sid, lambda: it.prefill(answer, paused=True))
        except InterviewerError as e:
            log.debug("prefill skipped: %s", e)

    def run_tests(self, code: str, sid: str | None, owner: str | None, request: gr.Request) -> str:
        """Run the open coding question's hidden tests in the sandbox; the verdict is stored with the turn."""
        self._bounded(code=code)
        try:
            verdict = self.desk.run_tests(self.desk.open(sid, self._owner(owner, request)), code)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        lines = [
            f"### {'✅ all tests passed' if verdict.passed else '❌ some tests failed'} ({verdict.seconds:.2f} s)"
        ]
        lines += [f"- ⚠ {w}" for w in verdict.warnings]
        if verdict.error:
            lines.append(f"- error: {verdict.error}")
        lines += [
            f"- {'✓' if t.passed else '✗'} **{t.name}**{': ' + t.message if t.message else ''}"
            for t in verdict.tests
        ]
        lines.append("\nNow explain your solution in the answer box: the interviewer will ask why.")
        return "\n".join(lines)

    def clarify(
        self, asked: str, sid: str | None, owner: str | None, request: gr.Request
    ) -> tuple[Chat, str]:
        """A clarifying question: answered from the question's authored scenario, not counted as an answer."""
        self._bounded(asked=asked)
        with self._exclusive(sid) as ok:
            if not ok:
                raise gr.Error(BUSY)
            try:
                it = self.desk.open(sid, self._owner(owner, request))
            except InterviewerError as e:
                raise gr.Error(str(e)) from e
            try:
                self.desk.clarify(it, asked)
            except InputError as e:
                gr.Warning(str(e))
                return _shown(it.messages()), asked
        return _shown(it.messages()), ""

    def pause(self, sid: str | None, owner: str | None, request: gr.Request) -> str:
        try:
            it = self.desk.open(sid, self._owner(owner, request))
            it.pause()
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return f"Paused. Reopen session `{it.session_id}` from Past sessions to go on; the round clock is stopped."

    def privacy(self) -> str:
        from interviewer.resume import privacy_note

        return privacy_note(self.rt.settings)

    def end_round(self, sid: str | None, owner: str | None, request: gr.Request) -> tuple[Chat, str]:
        owner = self._owner(owner, request)
        with self._exclusive(sid, wait=END_WAIT_SECONDS) as ok:
            if not ok:  # ending mid-stream would let the streamed question land after the end
                log.warning(
                    "End round for %s gave up after %.0f s: a turn is still running", sid, END_WAIT_SECONDS
                )
                raise gr.Error(BUSY)
            try:
                it = self.desk.open(sid, owner)
                it.end()
            except InterviewerError as e:
                log.warning("End round for %s failed: %s", sid, e)
                raise gr.Error(str(e)) from e
        return _shown(it.messages()), self._status(it, ROUND_ENDED)

    def view(self, sid: str | None, owner: str | None, request: gr.Request) -> tuple[Any, Any]:
        """The transcript and status line as stored, without changing anything.

        Runs after End round: a streamed update of the turn that End waited for can reach the browser after
        End's own reply and put back the old status; this redraw comes last.
        """
        if not sid:
            return gr.update(), gr.update()
        try:
            it = self.desk.look(sid, self._owner(owner, request))
        except InterviewerError:
            return gr.update(), gr.update()
        extra = ROUND_ENDED if it.finished else None
        return _shown(it.messages()), self._status(it, extra)

    def timer(self, sid: str | None, owner: str | None, request: gr.Request) -> str:
        if not sid or self.rt.settings.answer_seconds is None:
            return ""
        try:
            # Read only: reopening the interview every second would end a pause and race the scorer.
            left = self.desk.answer_time_left(sid, self._owner(owner, request))
        except InterviewerError:
            return ""
        if left is None:
            return ""
        return f"⏱ {int(left)} s left" if left >= 0 else f"⏱ {int(-left)} s over time"

    def list_sessions(self, owner: str | None, request: gr.Request) -> list[list[str]]:
        owner = self._owner(owner, request)
        try:
            rows = self.desk.sessions(owner)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return [
            [r.id, dt.datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M"), r.title, r.status]
            for r in rows
        ]

    def reopen(self, sid: str, owner: str | None, request: gr.Request) -> tuple[Any, ...]:
        self._bounded(sid=sid)
        owner = self._owner(owner, request)
        with self._exclusive(sid.strip()) as ok:
            if not ok:
                raise gr.Error(BUSY)
            try:
                it = self.desk.open(sid.strip(), owner)
            except InterviewerError as e:
                raise gr.Error(str(e)) from e
            chat = _shown(it.messages())
            if it.awaiting == "interviewer" and not it.finished:
                it.advance_all()
                chat = _shown(it.messages())
        return chat, it.session_id, self._status(it), *self.code.update(it)

    def _reachable(self, base_url: str) -> str:
        """The URL if the server may call it (an admin's request; never private ranges)."""
        settings = self.rt.settings
        choice = self.rt.model_choice
        configured = [settings.base_url, settings.chroma_url, choice.base_url if choice else None]
        try:
            return check_url(base_url, configured=configured, allow_loopback=True)
        except InputError as e:
            raise gr.Error(str(e)) from e

    def test_connection(
        self, base_url: str, api_key: str, admin_token: str | None = None, request: gr.Request | None = None
    ) -> tuple[str, Any]:
        from interviewer.llm.client import test_connection

        self._admin(admin_token, request)  # first: a visitor learns nothing about any port
        self._bounded(base_url=base_url, api_key=api_key)
        if not base_url.strip():
            return "Give a base URL such as http://127.0.0.1:8000/v1", gr.update(choices=[])
        report = test_connection(self._reachable(base_url), api_key or None)
        models = list(report.models)
        return ("✅ " if report.ok else "❌ ") + report.message, gr.update(
            choices=models, value=models[0] if models else None
        )

    def use_model(
        self,
        base_url: str,
        api_key: str,
        model: str | None,
        admin_token: str | None = None,
        request: gr.Request | None = None,
    ) -> tuple[str, str]:
        self._admin(admin_token, request)
        self._bounded(base_url=base_url, api_key=api_key, model=model)
        url = self._reachable(base_url) if base_url.strip() else None
        try:
            choice = self.rt.switch_model(url, api_key or None, model)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return f"Now answering: {choice.display_name}", self.model_banner()

    def load(self, owner: str | None, request: gr.Request) -> tuple[str, str]:
        if owner is not None and not isinstance(owner, str):
            # Damaged browser storage: a reload starts over with a fresh owner, as the error tells it to.
            owner = None
        return self._resolve(owner, request).token, self.model_banner()


def build(runtime: Runtime, *, admin: bool = True, report_ttl: int = REPORT_TTL_SECONDS) -> gr.Blocks:
    """The UI. Constructing it does no model or network I/O.

    ``admin``: single-user local mode (see :class:`App`); ``report_ttl``: seconds a download
    link (and any upload left in Gradio's cache) lives.
    """
    app = App(runtime, admin=admin)
    with gr.Blocks(title="Mock interviewer", delete_cache=(max(1, report_ttl // 3), report_ttl)) as demo:
        c = SimpleNamespace(demo=demo)  # the page's components, by name
        _header(app, c)
        _interview_tab(app, c)
        _side_tabs(app, c)
        _wire_interview(app, c, runtime)
        _wire_panels(app, c)
    return demo


def _header(app: App, c: SimpleNamespace) -> None:
    """The title, the owner token kept in the browser, the session id and the model banner."""
    c.owner = gr.BrowserState(None, storage_key="interviewer-owner")
    c.sid = gr.State(None)
    gr.Markdown("# Mock interviewer\nAuthored questions, two levels of *why*, rubric scores.")
    c.banner = gr.Markdown(app.model_banner(), elem_id="model-banner")


def _interview_tab(app: App, c: SimpleNamespace) -> None:
    """The interview: round choice, chat, code panel, answer box, microphone and the turn's buttons."""
    with gr.Tab("Interview"):
        with gr.Row():
            c.round_dd = gr.Dropdown(ROUND_CHOICES, value=Round.PHONE.value, label="Round", elem_id="round")
            c.per_round = gr.Slider(
                1, MAX_PER_ROUND, value=3, step=1, label="Questions per round", elem_id="per-round"
            )
            c.weak_first = gr.Checkbox(False, label="Favour my weak topics", elem_id="weak-first")
            c.start_btn = gr.Button("Start", variant="primary", elem_id="start")
        with gr.Accordion("Loop, resume and job posting (optional)", open=False):
            c.loop_dd = gr.Dropdown(_loop_choices(), value="", label="Loop preset", elem_id="loop")
            c.resume_file = gr.File(
                label="Your resume (PDF, Markdown or text)",
                file_types=[".pdf", ".md", ".txt"],
                elem_id="resume",
            )
            c.posting = gr.Textbox(label="Job posting (steers rounds and topics)", lines=3, elem_id="posting")
            gr.Markdown(app.privacy(), elem_id="privacy")
        c.status = gr.Markdown("", elem_id="status")
        c.timer_md = gr.Markdown("", elem_id="timer")
        c.chat = gr.Chatbot(label="Interview", height=480, elem_id="chat", sanitize_html=True)
        with gr.Group(visible=False) as c.code_panel:
            c.code_statement = gr.Markdown("", elem_id="code-statement")
            c.code = gr.Code(label="Your code", language="python", lines=18, elem_id="code")
            c.run_btn = gr.Button("Run tests", elem_id="run-tests")
            c.verdict_md = gr.Markdown("", elem_id="verdict")
        with gr.Group(visible=False, elem_id="whiteboard") as c.board_panel:
            c.diagram = gr.Textbox(label="Your design (Mermaid flowchart)", lines=12, elem_id="diagram")
            c.board_md = gr.Markdown(whiteboard.EMPTY_PANEL, elem_id="board")
            c.send_diagram_btn = gr.Button("Send diagram", elem_id="send-diagram")
        c.answer = gr.Textbox(label="Your answer", lines=4, placeholder="Type your answer…", elem_id="answer")
        with gr.Row():
            # Streamed: the transcript grows in the answer box while you talk; a pause ends the turn.
            c.mic = gr.Audio(
                sources=["microphone"],
                type="numpy",
                streaming=True,
                label="Answer out loud (live transcript)",
                elem_id="mic",
                scale=3,
            )
            with gr.Column(scale=1):
                c.voice_on = gr.Checkbox(False, label="Interviewer speaks (unmute)", elem_id="voice-on")
                c.auto_send = gr.Checkbox(False, label="Send spoken answers at once", elem_id="auto-send")
                c.stop_voice_btn = gr.Button("Stop the voice", size="sm", elem_id="stop-voice")
        with gr.Row():
            c.upload = gr.Audio(
                sources=["upload"], type="filepath", label="Or upload a recording", elem_id="upload"
            )
            # The latest voiced sentence (replayable); the page plays the pieces in order as they come.
            c.voice = gr.Audio(label="Interviewer's voice", interactive=False, elem_id="voice")
        c.spoken = gr.State(None)
        # Spoken turns ended by a silence (or by stopping the microphone): a component, not a State, so its
        # change event fires when a stream event updates it.
        c.turns = gr.Number(0, visible=False, precision=0, elem_id="spoken-turns")
        with gr.Row():
            c.send_btn = gr.Button("Send", variant="primary", elem_id="send")
            c.clarify_btn = gr.Button("Ask a clarifying question", elem_id="clarify")
            c.pause_btn = gr.Button("Pause", elem_id="pause")
            c.end_btn = gr.Button("End round", elem_id="end")


def _side_tabs(app: App, c: SimpleNamespace) -> None:
    """The report, progress, past sessions and settings tabs."""
    with gr.Tab("Report"):
        c.report_btn = gr.Button("Show report for this interview", elem_id="show-report")
        c.report_files = gr.File(
            label="Download (HTML, Markdown)", file_count="multiple", elem_id="report-files"
        )
        c.report_md = gr.Markdown("", elem_id="report", sanitize_html=True)
    with gr.Tab("Progress"):
        c.progress_btn = gr.Button("Refresh", elem_id="refresh-progress")
        c.skill_plot = gr.ScatterPlot(
            x="when",
            y="score",
            color="round",
            y_lim=[0, 4],
            label="Scores over time",
            elem_id="skill-plot",
        )
        c.skill_table = gr.Markdown("", elem_id="skill-table")
    with gr.Tab("Past sessions"):
        c.refresh = gr.Button("Refresh", elem_id="refresh-sessions")
        c.table = gr.Dataframe(
            headers=["id", "updated", "title", "status"], interactive=False, elem_id="sessions"
        )
        c.reopen_id = gr.Textbox(label="Session id to reopen", elem_id="reopen-id")
        c.reopen_btn = gr.Button("Reopen", elem_id="reopen")
    with gr.Tab("Settings"):
        gr.Markdown(
            "Point the interviewer at any OpenAI-compatible server, or leave empty for the embedded model."
        )
        c.url = gr.Textbox(label="Base URL", placeholder="http://127.0.0.1:8000/v1", elem_id="base-url")
        c.key = gr.Textbox(label="API key", type="password", elem_id="api-key")
        c.admin_token = gr.Textbox(
            label="Admin token (changes the model for everyone)",
            type="password",
            visible=app.gate.asks_for_token,
            elem_id="admin-token",
        )
        c.test_btn = gr.Button("Test connection", elem_id="test-connection")
        c.conn = gr.Markdown("", elem_id="connection")
        c.model_dd = gr.Dropdown([], label="Model", allow_custom_value=True, elem_id="model")
        c.use_btn = gr.Button("Use this model", variant="primary", elem_id="use-model")


def _wire_interview(app: App, c: SimpleNamespace, runtime: Runtime) -> None:
    """Start, send (typed or spoken), the live transcript and the interviewer's voice."""
    c.demo.load(app.load, [c.owner], [c.owner, c.banner], api_visibility="private")
    c.coding_out = [c.code_panel, c.code_statement, c.code, c.board_panel]
    c.start_btn.click(
        app.start,
        [c.round_dd, c.per_round, c.weak_first, c.owner, c.loop_dd, c.resume_file, c.posting, c.voice_on],
        [c.chat, c.sid, c.owner, c.status, *c.coding_out, c.voice],
        api_name="start",
    )
    send_out = [c.chat, c.answer, c.status, *c.coding_out, c.voice, c.spoken]
    send_evt = dict(fn=app.send, inputs=[c.answer, c.sid, c.owner, c.spoken, c.voice_on], outputs=send_out)
    c.send_btn.click(**send_evt, api_name="send")
    c.answer.submit(**send_evt, api_visibility="private")
    # Each edit offers the prompt so far to the model server (latest wins; see interviewer/llm/prefill.py).
    c.answer.input(
        app.typing,
        [c.answer, c.sid, c.owner],
        None,
        api_name="typing",
        trigger_mode="always_last",
        queue=False,
        show_progress="hidden",
    )
    c.upload.upload(
        app.transcribe, [c.upload, c.answer, c.sid, c.owner], [c.answer, c.spoken], api_name="transcribe"
    ).then(
        app.send_if_auto,
        [c.auto_send, c.answer, c.sid, c.owner, c.spoken, c.voice_on],
        send_out,
        api_visibility="private",
    )
    c.voice.change(None, [c.voice], None, js=_VOICE_QUEUE_JS)
    c.stop_voice_btn.click(app.stop_voice, [c.sid], None, js=_VOICE_STOP_JS, api_visibility="private")
    c.mic.start_recording(app.mic_start, [c.sid], None, js=_VOICE_STOP_JS, api_visibility="private")
    c.mic.stream(
        app.listen,
        [c.mic, c.answer, c.sid, c.owner, c.turns, c.auto_send],
        [c.answer, c.spoken, c.turns, c.voice],
        stream_every=0.25,
        time_limit=runtime.settings.max_audio_seconds + 30,
        show_progress="hidden",
        api_visibility="private",
    )
    c.mic.stop_recording(
        app.listen_stop,
        [c.answer, c.sid, c.owner, c.turns],
        [c.answer, c.spoken, c.turns],
        api_visibility="private",
    )
    # A spoken turn ended (silence, or the microphone stopped): send it at once when the candidate chose to.
    c.turns.change(
        app.send_if_auto,
        [c.auto_send, c.answer, c.sid, c.owner, c.spoken, c.voice_on],
        send_out,
        api_visibility="private",
    )


def _wire_panels(app: App, c: SimpleNamespace) -> None:
    """The turn's other buttons, the timer and the side tabs."""
    c.clarify_btn.click(app.clarify, [c.answer, c.sid, c.owner], [c.chat, c.answer], api_name="clarify")
    c.pause_btn.click(app.pause, [c.sid, c.owner], [c.status], api_name="pause")
    c.end_btn.click(app.end_round, [c.sid, c.owner], [c.chat, c.status], api_name="end_round").then(
        app.view, [c.sid, c.owner], [c.chat, c.status], api_visibility="private", show_progress="hidden"
    )
    gr.Timer(1.0).tick(
        app.timer, [c.sid, c.owner], [c.timer_md], api_visibility="private", show_progress="hidden"
    )
    c.refresh.click(app.list_sessions, [c.owner], [c.table], api_name="sessions")
    c.reopen_btn.click(
        app.reopen, [c.reopen_id, c.owner], [c.chat, c.sid, c.status, *c.coding_out], api_name="reopen"
    )
    c.run_btn.click(app.run_tests, [c.code, c.sid, c.owner], [c.verdict_md], api_name="run_tests")
    c.diagram.change(
        app.board.draw,
        [c.diagram],
        [c.board_md],
        queue=False,
        show_progress="hidden",
        api_visibility="private",
    )
    c.send_diagram_btn.click(
        app.board.send, [c.diagram, c.sid, c.owner], [c.chat, c.status], api_name="send_diagram"
    )
    c.report_btn.click(app.show_report, [c.sid, c.owner], [c.report_md, c.report_files], api_name="report")
    c.progress_btn.click(app.progress, [c.owner], [c.skill_plot, c.skill_table], api_name="progress")
    c.test_btn.click(
        app.test_connection, [c.url, c.key, c.admin_token], [c.conn, c.model_dd], api_name="test_connection"
    )
    c.use_btn.click(
        app.use_model, [c.url, c.key, c.model_dd, c.admin_token], [c.conn, c.banner], api_name="use_model"
    )


def launch(
    settings: Settings,
    *,
    share: bool = False,
    auth: tuple[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    block: bool = True,
    public_without_login: bool = False,
) -> tuple[gr.Blocks, Runtime]:
    """Start the app; the model warms up in the background so the page is usable at once.

    A share link without a login is refused unless ``public_without_login`` says the operator means it.
    """
    exposure_check(share=share, auth=auth is not None, confirmed=public_without_login)
    runtime = Runtime(settings)
    runtime.store.check()  # a corrupt database is reported now, with its path
    runtime.bank  # noqa: B018 - validate the content before serving
    say = progress or (lambda m: None)

    def warm() -> None:
        port = runtime.model_or_none(progress=say)
        say(f"model ready: {port.name}" if port else f"model unavailable: {' '.join(runtime.notices)}")
        scorer = runtime.scorer()
        try:  # the embedding model next: the first scored answer needs it; an index build may take minutes
            from interviewer.embeddings import default_embedder

            if scorer is not None:
                default_embedder().embed(["warm up"])
        except InterviewerError as e:
            say(f"scoring model unavailable: {e}")
        runtime.retriever(progress=say)

    threading.Thread(target=warm, name="warm-up", daemon=True).start()
    local = single_user_local(settings, share=share, login=auth is not None)
    if settings.admin_token is None and not local:
        say(
            "the model and connection test are fixed for this app: set INTERVIEWER_ADMIN_TOKEN to manage them"
        )
    demo = build(runtime, admin=local)
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
            max_file_size=MAX_UPLOAD,
        )
    finally:
        if block:
            runtime.close()
    return demo, runtime
