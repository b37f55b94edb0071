"""Gradio Blocks wiring only: every handler calls the engine (via Runtime) and turns errors into messages."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gradio as gr

from interviewer import planner
from interviewer.config import Settings
from interviewer.content import Round
from interviewer.errors import InputError, InterviewerError
from interviewer.netguard import check_url, exposure_check, is_local_only
from interviewer.owners import OwnerTokens, Resolved
from interviewer.runtime import Runtime, warm_quietly
from interviewer.session import Interview, replay
from interviewer.text import inert_markdown

log = logging.getLogger(__name__)

FULL_LOOP = planner.FULL_LOOP
_NO_CHANGE = (gr.update(), gr.update(), gr.update())  # the code panel, untouched while a reply streams
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


def _shown(chat: Chat) -> Chat:
    """The chat as displayed: the candidate's markup (HTML, images, links) shows as typed and never renders."""
    return [{**m, "content": inert_markdown(m["content"])} if m["role"] == "user" else m for m in chat]


@dataclasses.dataclass
class _Listening:
    """An answer being spoken into the streaming microphone, and the text typed before it."""

    answer: Any  # interviewer.speech_stream.BackgroundAnswer (imported lazily: speech loads on first use)
    prefix: str
    interrupted: bool = False  # the candidate's voice stopped the interviewer's
    ended: bool = False  # the end of this turn was shown to the page (which sends it)
    ahead: Any = None  # interviewer.speech_stream.ReadAhead: the engine reads the transcript as it grows

    def close(self) -> None:
        self.answer.close()
        if self.ahead is not None:
            self.ahead.close()


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
NO_MODEL_SWITCH = (
    "this app is shared, so the model is set by whoever runs the server (restart it with --base-url); "
    "one visitor cannot switch the model for everyone"
)


class App:
    """Handlers for one app process; per-candidate state lives in the browser (session id, owner token).

    ``admin``: visitors may switch the model and test connections (only when the app is local-only).
    """

    def __init__(self, runtime: Runtime, *, admin: bool = True) -> None:
        self.rt = runtime
        self.admin = admin
        secret = runtime.settings.owner_secret  # shared by a deployment's replicas (docs/deploy.md)
        self.owners = (
            OwnerTokens(secret.encode()) if secret else OwnerTokens.for_data_dir(runtime.settings.data_dir)
        )
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        # sid -> (owner, events seen, interview): typing events reuse the open interview while nothing moved;
        # the most recent _TYPING_KEPT sessions only (a long-running server sees many)
        self._typing: OrderedDict[str, tuple[str, int, Interview]] = OrderedDict()
        # sid -> the answer being spoken into the streaming microphone; sid -> stops the interviewer's voice
        self._spoken: dict[str, _Listening] = {}
        self._voice_stop: dict[str, threading.Event] = {}
        self._vad: Any = None
        self._leads: Any = None  # interviewer.speech_stream.VoiceCache of the fixed leads, made on first use

    # helpers -------------------------------------------------------------------------------------
    def _owner(self, token: str | None, request: gr.Request | None) -> str:
        """The owner of this request: the login, else the browser's signed token (a forged one owns nothing)."""
        return self._resolve(token, request).owner

    def _resolve(self, token: str | None, request: gr.Request | None) -> Resolved:
        return self.owners.resolve(token, getattr(request, "username", None) if request is not None else None)

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

    def _open(self, sid: str | None, owner: str) -> Interview:
        """Reopen a session to write to it: this process becomes its only writer (or says who is)."""
        if not sid:
            raise InputError("no interview yet: pick a round and press Start")
        self.rt.store.get(sid, owner=owner)  # a stranger's id is "not found" before any lease is touched
        self.rt.store.claim(sid)
        return planner.resume_session(self.rt, owner, sid)

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

    def _coding(self, it: Interview | None) -> tuple[Any, Any, Any]:
        """Show the code panel while the open question has a sandboxed task (and keep the editor's text)."""
        q = it.question if it is not None and not it.finished else None
        task_id = q.coding_task if q is not None else None
        if not task_id:
            return gr.update(visible=False), gr.update(), gr.update()
        try:
            from interviewer import checker

            task = checker.get_task(task_id)
        except InterviewerError as e:
            return (
                gr.update(visible=True),
                gr.update(value=f"Coding task `{task_id}` is unavailable: {e}"),
                gr.update(),
            )
        language = "cpp" if task.language == "cpp" else ("python" if task.language == "python" else None)
        runs = it.state.code_runs.get(q.id) if it is not None and q is not None else None
        if not runs and it is not None and it.level == 0:
            # The task was just shown: start its sandbox in the background so "Run tests" finds it warm.
            threading.Thread(
                target=self._prepare, args=(task.id,), name=f"prepare-{task.id}", daemon=True
            ).start()
        editor = (
            gr.update(language=language) if runs else gr.update(value=task.starter_code, language=language)
        )
        return (
            gr.update(visible=True),
            gr.update(value=f"**{task.title}** (`{task.id}`)\n\n{task.statement}"),
            editor,
        )

    @staticmethod
    def _prepare(task_id: str) -> None:
        from interviewer import checker

        try:
            checker.prepare(task_id)
        except InterviewerError as e:  # the run itself will report it with a verdict
            log.info("could not pre-start the sandbox for %s: %s", task_id, e)

    # handlers ------------------------------------------------------------------------------------
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
                it = planner.start(self.rt, owner, picked)
            finally:
                if resume_file:  # the upload is parsed (or refused): its copy in Gradio's cache goes now
                    Path(resume_file).unlink(missing_ok=True)
            self.rt.store.claim(it.session_id)
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
            *self._coding(it),
            self._speak(it, voice_on),
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
            it = self._open(sid, owner)
            if it.awaiting == "interviewer" and not it.finished:
                # The last reply was cut off (dropped connection, restart) before its question was stored:
                # ask it now and keep the candidate's text for it.
                it.advance_all()
                gr.Warning(
                    "The interviewer's question had not been shown yet: here it is. Your text is kept."
                )
                yield _shown(it.messages()), answer, self._status(it), *self._coding(it), gr.update(), spoken
                return
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        # A spoken answer being sent: the microphone starts a new one.
        sent = self._spoken.pop(sid or "", None)
        if sent is not None:
            sent.close()
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
        for text, wav in self._voiced(it, voice_on):
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
        yield _shown(it.messages()), "", self._status(it), *self._coding(it), voice, None

    def _voiced(self, it: Interview, voice_on: bool) -> Iterator[tuple[str, Path | None]]:
        """The reply as it streams, with a WAV each time a sentence of it is voiced (when the voice is on)."""
        if not voice_on:
            yield from ((text, None) for text in it.advance())
            return
        from interviewer.speech import get_tts
        from interviewer.speech_stream import voice_pieces

        stop = threading.Event()
        self._voice_stop[it.session_id] = stop  # the candidate speaking, or the stop button, sets it
        errors: list[Exception] = []
        out = self.rt.settings.data_dir / "audio" / f"{it.session_id}-{len(it.messages())}"
        try:
            yield from voice_pieces(
                it.advance(),
                get_tts(self.rt.settings),
                out,
                stop=stop,
                on_error=errors.append,
                cache=self._leads,  # voiced ahead once the microphone was first opened (None before)
                vet=lambda piece: not it.followups.leaks(piece),  # the model's rubric wording is never spoken
            )
        finally:
            if errors:
                gr.Warning(f"The interviewer's voice is unavailable: {errors[0]}")

    def _lead_voices(self) -> Any:
        """The fixed leads ("Right.", "Let's stay on the question I asked.") voiced once, in the background.

        Started when the microphone opens, not with a reply: the candidate then talks for a while, whereas a
        reply's own voice would queue behind the warm-up (piper speaks one text at a time).
        """
        from interviewer.listen import SPOKEN_LEADS
        from interviewer.speech import get_tts
        from interviewer.speech_stream import VoiceCache

        if self._leads is None:
            cache_dir = self.rt.settings.data_dir / "audio" / "leads"
            self._leads = VoiceCache(get_tts(self.rt.settings), cache_dir, SPOKEN_LEADS)
            threading.Thread(
                target=warm_quietly, args=(self._leads.warm,), name="warm-leads", daemon=True
            ).start()
        return self._leads

    def stop_voice(self, sid: str | None) -> None:
        """The candidate interrupts the interviewer: no more of the reply is voiced (the page stops playing)."""
        stop = self._voice_stop.get(sid or "")
        if stop is not None:
            stop.set()

    def mic_start(self, sid: str | None) -> None:
        """The microphone opened: the interviewer stops talking, and the recognisers load now, in the background,
        so the first words are not waiting behind a model load (the page drops chunks while one is waiting)."""
        self.stop_voice(sid)
        threading.Thread(target=self._warm_listening, name="warm-speech", daemon=True).start()

    def _warm_listening(self) -> None:
        from interviewer.speech import get_stt
        from interviewer.speech_stream import SileroVAD

        try:
            if self._vad is None:
                self._vad = SileroVAD()
            self._vad.load()
            stt = get_stt(self.rt.settings)
            load = getattr(stt, "load", None)
            if callable(load):
                load()
        except InterviewerError as e:
            log.info("speech recognition could not load: %s", e)
        self._lead_voices()  # the reply to this answer may open with one of them

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

    def _speak(self, it: Interview, voice_on: bool) -> Any:
        """The interviewer's last message as speech (a WAV path), or no change when muted or unavailable."""
        if not voice_on or not it.messages():
            return gr.update()
        from interviewer.speech import get_tts

        text = it.messages()[-1]["content"].replace("**", "")
        out = self.rt.settings.data_dir / "audio" / f"{it.session_id}-{len(it.messages())}.wav"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            return str(get_tts(self.rt.settings).synthesize(text, out))
        except InterviewerError as e:
            gr.Warning(f"The interviewer's voice is unavailable: {e}")
            return gr.update()

    def typing(
        self, answer: str, sid: str | None, owner: str | None, request: gr.Request | None = None
    ) -> None:
        """While the candidate types: send the follow-up prompt so far to the model server (#13 prefill)."""
        if not answer or not sid or self.rt.model_choice is None:
            return  # nothing typed, no interview, or the model is not up yet: never wait for it here
        owner = self._owner(owner, request)
        try:
            seen = len(self.rt.store.events(sid))
            cached = self._typing.get(sid)
            if cached is not None and cached[0] == owner and cached[1] == seen:
                it = cached[2]
            else:
                it = self._open(sid, owner)
                self._typing[sid] = (owner, seen, it)
                self._typing.move_to_end(sid)
                while len(self._typing) > _TYPING_KEPT:
                    self._typing.popitem(last=False)
            it.prefill(answer)
        except InterviewerError as e:
            log.debug("prefill skipped: %s", e)

    def transcribe(
        self, audio_path: str | None, typed: str, sid: str | None, owner: str | None, request: gr.Request
    ) -> tuple[str, dict[str, Any] | None]:
        """The recording as editable text; the current question is the recogniser's context."""
        if not audio_path:
            return typed, None
        from interviewer.speech import get_stt

        context = None
        if sid:
            try:
                q = planner.resume_session(self.rt, self._owner(owner, request), sid, read_only=True).question
                context = q.question if q else None
            except InterviewerError:
                context = None
        try:
            tr = get_stt(self.rt.settings).transcribe(audio_path, context=context)
        except InputError as e:
            gr.Warning(str(e))
            return typed, None  # what was typed stays; the recording is not used
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return tr.text, {"transcript": tr.text, "seconds": round(tr.seconds, 2)}

    def listen(
        self,
        chunk: tuple[int, Any] | None,
        typed: str,
        sid: str | None,
        owner: str | None,
        turns: int,
        auto: bool = False,
        request: gr.Request | None = None,
    ) -> tuple[Any, Any, Any, Any]:
        """A microphone chunk (streamed): the transcript grows in the answer box and is prefilled.

        A long enough silence ends the turn: with "send spoken answers at once" ``turns`` goes up (which sends
        it) and the microphone is ignored until it is sent; without, the next words just go on the answer.
        """
        nothing = (gr.update(), gr.update(), turns, gr.update())
        if chunk is None or not sid:
            return nothing
        lock = self._locks.get(sid)
        if lock is not None and lock.locked():
            return nothing  # the interviewer is replying: this is not the candidate's turn yet
        listening = self._spoken.get(sid)
        if listening is not None and listening.ended:
            return nothing  # this turn is over and on its way
        if listening is None:
            listening = self._spoken[sid] = self._start_listening(typed, sid, owner, request)
        if listening.answer.error is not None:
            self._spoken.pop(sid, None)
            listening.close()
            gr.Warning(f"Live transcription is unavailable: {listening.answer.error}")
            return nothing
        rate, samples = chunk
        listening.answer.continue_on_end = not auto  # without auto-send a long silence is only a pause
        update = listening.answer.feed(samples, rate)
        voice: Any = gr.update()
        if update.speaking and not listening.interrupted:
            listening.interrupted = True  # the candidate talks over the interviewer: its voice stops
            self.stop_voice(sid)
            voice = None
        if update.ended and not update.transcript:  # only noise: listen afresh
            self._spoken.pop(sid, None)
            listening.close()
        if not (update.grew or update.ended) or not update.transcript:
            return gr.update(), gr.update(), turns, voice
        spoken = {"transcript": update.transcript, "seconds": round(listening.answer.seconds, 2)}
        listening.ended = update.ended
        return listening.prefix + update.transcript, spoken, turns + (1 if update.ended else 0), voice

    def listen_stop(
        self, typed: str, sid: str | None, owner: str | None, turns: int, request: gr.Request | None = None
    ) -> tuple[Any, Any, Any]:
        """The microphone stopped before a silence ended the turn: transcribe the rest and end it now."""
        listening = self._spoken.pop(sid or "", None)
        if listening is None or listening.ended:
            return gr.update(), gr.update(), turns  # no answer, or it ended and went out already
        transcript = listening.answer.finish()
        listening.close()
        if not transcript:
            return gr.update(), gr.update(), turns
        spoken = {"transcript": transcript, "seconds": round(listening.answer.seconds, 2)}
        return listening.prefix + transcript, spoken, turns + 1

    def _start_listening(
        self, typed: str, sid: str, owner: str | None, request: gr.Request | None
    ) -> _Listening:
        """A new spoken answer; the recognisers load and the question is read on its worker thread."""
        from interviewer.speech import get_stt
        from interviewer.speech_stream import (
            BackgroundAnswer,
            ReadAhead,
            SileroVAD,
            SpokenAnswer,
            TurnConfig,
            chunk_transcriber,
        )

        who = self._owner(owner, request)
        prefix = f"{typed.rstrip()} " if typed and typed.strip() else ""

        reader: list[Interview] = []

        def read_ahead(transcript: str) -> None:
            # The engine reads the answer so far (memoised by the listener) and starts its follow-up (#13):
            # when the turn ends on this transcript, both are done. "": the candidate speaks again.
            if not reader:
                reader.append(planner.resume_session(self.rt, who, sid, read_only=True))
            if transcript:
                reader[0].speculate(prefix + transcript)
            else:
                reader[0].cancel_speculation()

        ahead = ReadAhead(read_ahead)

        def prefill(transcript: str) -> None:
            # Queued only: the listening thread keeps up with the microphone. The read-ahead thread reads the
            # phrase and starts the follow-up, or prefills its prompt (at the level the reading leads to).
            ahead.submit(transcript)

        def make() -> SpokenAnswer:
            if self._vad is None:
                self._vad = SileroVAD()
            try:
                q = planner.resume_session(self.rt, who, sid, read_only=True).question
            except InterviewerError:
                q = None
            return SpokenAnswer(
                chunk_transcriber(get_stt(self.rt.settings)),
                self._vad.stream(),
                TurnConfig(end_of_turn_ms=self.rt.settings.end_of_turn_ms),
                context=q.question if q else None,
                on_partial=prefill,
                on_resume=lambda: ahead.submit(""),  # after the read in progress: what it started is dropped
            )

        return _Listening(BackgroundAnswer(make), prefix, ahead=ahead)

    def run_tests(self, code: str, sid: str | None, owner: str | None, request: gr.Request) -> str:
        """Run the open coding question's hidden tests in the sandbox; the verdict is stored with the turn."""
        try:
            verdict = planner.run_tests(self._open(sid, self._owner(owner, request)), code)
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

    def show_report(self, sid: str | None, owner: str | None, request: gr.Request) -> tuple[str, list[str]]:
        from interviewer.report import build_report, render_html, render_markdown

        owner = self._owner(owner, request)
        if not sid:
            raise gr.Error("no interview yet: start or reopen one first")
        try:
            self.rt.wait_for_judge(sid, timeout=180)  # the truth judge may still be rescoring the last answer
            rep = build_report(self.rt.store, self.rt.bank, sid, owner=owner, scorer=self.rt.scorer())
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        # A folder per download that nobody can guess; Gradio's copy (the link) expires with its cache.
        out = self.rt.settings.data_dir / "reports" / secrets.token_hex(16)
        out.mkdir(parents=True, exist_ok=True)
        md = render_markdown(rep)
        html_path, md_path = out / f"report-{sid}.html", out / f"report-{sid}.md"
        html_path.write_text(render_html(rep), encoding="utf-8")
        md_path.write_text(md, encoding="utf-8")
        return md, [str(html_path), str(md_path)]

    def progress(self, owner: str | None, request: gr.Request) -> tuple[Any, str]:
        import pandas as pd

        from interviewer.report import skill_map

        points = skill_map(self.rt.store, self.rt.bank, owner=self._owner(owner, request))
        if not points:
            return pd.DataFrame({"when": [], "score": [], "round": []}), "No scored answers yet."
        df = pd.DataFrame(
            {
                "when": [dt.datetime.fromtimestamp(p.when) for p in points],
                "score": [p.score for p in points],
                "round": [Round(p.round).title for p in points],
                "topic": [p.topic for p in points],
            }
        )
        table = df.groupby(["round", "topic"])["score"].agg(["mean", "count", "last"]).reset_index()
        lines = ["| round | topic | mean | answers | last |", "|---|---|---|---|---|"]
        lines += [
            f"| {r.round} | {r.topic} | {r.mean:.1f} | {r.count} | {r.last:.1f} |" for r in table.itertuples()
        ]
        return df, "\n".join(lines)

    def clarify(
        self, asked: str, sid: str | None, owner: str | None, request: gr.Request
    ) -> tuple[Chat, str]:
        """A clarifying question: answered from the question's authored scenario, not counted as an answer."""
        with self._exclusive(sid) as ok:
            if not ok:
                raise gr.Error(BUSY)
            try:
                it = self._open(sid, self._owner(owner, request))
            except InterviewerError as e:
                raise gr.Error(str(e)) from e
            try:
                planner.clarify(it, asked)
            except InputError as e:
                gr.Warning(str(e))
                return _shown(it.messages()), asked
        return _shown(it.messages()), ""

    def pause(self, sid: str | None, owner: str | None, request: gr.Request) -> str:
        try:
            it = self._open(sid, self._owner(owner, request))
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
                it = self._open(sid, owner)
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
            it = planner.resume_session(self.rt, self._owner(owner, request), sid, read_only=True)
        except InterviewerError:
            return gr.update(), gr.update()
        extra = ROUND_ENDED if it.finished else None
        return _shown(it.messages()), self._status(it, extra)

    def timer(self, sid: str | None, owner: str | None, request: gr.Request) -> str:
        seconds = self.rt.settings.answer_seconds
        if not sid or seconds is None:
            return ""
        try:
            # Read only: reopening the interview every second would end a pause and race the scorer.
            row = self.rt.store.get(sid, owner=self._owner(owner, request))
            st = replay(row.plan, self.rt.store.events(sid))
        except InterviewerError:
            return ""
        if st.awaiting != "candidate" or st.asked_at is None or st.paused_at is not None:
            return ""
        left = seconds - (time.time() - st.asked_at)
        return f"⏱ {int(left)} s left" if left >= 0 else f"⏱ {int(-left)} s over time"

    def list_sessions(self, owner: str | None, request: gr.Request) -> list[list[str]]:
        owner = self._owner(owner, request)
        try:
            rows = self.rt.store.list(owner=owner)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return [
            [r.id, dt.datetime.fromtimestamp(r.updated).strftime("%Y-%m-%d %H:%M"), r.title, r.status]
            for r in rows
        ]

    def reopen(self, sid: str, owner: str | None, request: gr.Request) -> tuple[Any, ...]:
        owner = self._owner(owner, request)
        with self._exclusive(sid.strip()) as ok:
            if not ok:
                raise gr.Error(BUSY)
            try:
                it = self._open(sid.strip(), owner)
            except InterviewerError as e:
                raise gr.Error(str(e)) from e
            chat = _shown(it.messages())
            if it.awaiting == "interviewer" and not it.finished:
                it.advance_all()
                chat = _shown(it.messages())
        return chat, it.session_id, self._status(it), *self._coding(it)

    def _reachable(self, base_url: str) -> str:
        """The URL if this visitor may make the server call it (admin only; never private ranges)."""
        if not self.admin:
            raise gr.Error(NO_MODEL_SWITCH)
        settings = self.rt.settings
        choice = self.rt.model_choice
        configured = [settings.base_url, settings.chroma_url, choice.base_url if choice else None]
        try:
            return check_url(base_url, configured=configured, allow_loopback=True)
        except InputError as e:
            raise gr.Error(str(e)) from e

    def test_connection(self, base_url: str, api_key: str) -> tuple[str, Any]:
        from interviewer.llm.client import test_connection

        if not base_url.strip():
            return "Give a base URL such as http://127.0.0.1:8000/v1", gr.update(choices=[])
        report = test_connection(self._reachable(base_url), api_key or None)
        models = list(report.models)
        return ("✅ " if report.ok else "❌ ") + report.message, gr.update(
            choices=models, value=models[0] if models else None
        )

    def use_model(self, base_url: str, api_key: str, model: str | None) -> tuple[str, str]:
        url = self._reachable(base_url) if base_url.strip() else None
        if url is None and not self.admin:
            raise gr.Error(NO_MODEL_SWITCH)
        try:
            choice = self.rt.switch_model(url, api_key or None, model)
        except InterviewerError as e:
            raise gr.Error(str(e)) from e
        return f"Now answering: {choice.display_name}", self.model_banner()

    def load(self, owner: str | None, request: gr.Request) -> tuple[str, str]:
        return self._resolve(owner, request).token, self.model_banner()


def build(runtime: Runtime, *, admin: bool = True, report_ttl: int = REPORT_TTL_SECONDS) -> gr.Blocks:
    """The UI. Constructing it does no model or network I/O.

    ``admin``: whether visitors may change the model (see :class:`App`); ``report_ttl``: seconds a download
    link (and any upload left in Gradio's cache) lives.
    """
    app = App(runtime, admin=admin)
    with gr.Blocks(title="Mock interviewer", delete_cache=(max(1, report_ttl // 3), report_ttl)) as demo:
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
                weak_first = gr.Checkbox(False, label="Favour my weak topics", elem_id="weak-first")
                start_btn = gr.Button("Start", variant="primary", elem_id="start")
            with gr.Accordion("Loop, resume and job posting (optional)", open=False):
                loop_dd = gr.Dropdown(_loop_choices(), value="", label="Loop preset", elem_id="loop")
                resume_file = gr.File(
                    label="Your resume (PDF, Markdown or text)",
                    file_types=[".pdf", ".md", ".txt"],
                    elem_id="resume",
                )
                posting = gr.Textbox(
                    label="Job posting (steers rounds and topics)", lines=3, elem_id="posting"
                )
                gr.Markdown(app.privacy(), elem_id="privacy")
            status = gr.Markdown("", elem_id="status")
            timer_md = gr.Markdown("", elem_id="timer")
            chat = gr.Chatbot(label="Interview", height=480, elem_id="chat", sanitize_html=True)
            with gr.Group(visible=False) as code_panel:
                code_statement = gr.Markdown("", elem_id="code-statement")
                code = gr.Code(label="Your code", language="python", lines=18, elem_id="code")
                run_btn = gr.Button("Run tests", elem_id="run-tests")
                verdict_md = gr.Markdown("", elem_id="verdict")
            answer = gr.Textbox(
                label="Your answer", lines=4, placeholder="Type your answer…", elem_id="answer"
            )
            with gr.Row():
                # Streamed: the transcript grows in the answer box while you talk; a pause ends the turn.
                mic = gr.Audio(
                    sources=["microphone"],
                    type="numpy",
                    streaming=True,
                    label="Answer out loud (live transcript)",
                    elem_id="mic",
                    scale=3,
                )
                with gr.Column(scale=1):
                    voice_on = gr.Checkbox(False, label="Interviewer speaks (unmute)", elem_id="voice-on")
                    auto_send = gr.Checkbox(False, label="Send spoken answers at once", elem_id="auto-send")
                    stop_voice_btn = gr.Button("Stop the voice", size="sm", elem_id="stop-voice")
            with gr.Row():
                upload = gr.Audio(
                    sources=["upload"], type="filepath", label="Or upload a recording", elem_id="upload"
                )
                # The latest voiced sentence (replayable); the page plays the pieces in order as they come.
                voice = gr.Audio(label="Interviewer's voice", interactive=False, elem_id="voice")
            spoken = gr.State(None)
            # Spoken turns ended by a silence (or by stopping the microphone): a component, not a State, so its
            # change event fires when a stream event updates it.
            turns = gr.Number(0, visible=False, precision=0, elem_id="spoken-turns")
            with gr.Row():
                send_btn = gr.Button("Send", variant="primary", elem_id="send")
                clarify_btn = gr.Button("Ask a clarifying question", elem_id="clarify")
                pause_btn = gr.Button("Pause", elem_id="pause")
                end_btn = gr.Button("End round", elem_id="end")
        with gr.Tab("Report"):
            report_btn = gr.Button("Show report for this interview", elem_id="show-report")
            report_files = gr.File(
                label="Download (HTML, Markdown)", file_count="multiple", elem_id="report-files"
            )
            report_md = gr.Markdown("", elem_id="report", sanitize_html=True)
        with gr.Tab("Progress"):
            progress_btn = gr.Button("Refresh", elem_id="refresh-progress")
            skill_plot = gr.ScatterPlot(
                x="when",
                y="score",
                color="round",
                y_lim=[0, 4],
                label="Scores over time",
                elem_id="skill-plot",
            )
            skill_table = gr.Markdown("", elem_id="skill-table")
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

        demo.load(app.load, [owner], [owner, banner], api_visibility="private")
        coding_out = [code_panel, code_statement, code]
        start_btn.click(
            app.start,
            [round_dd, per_round, weak_first, owner, loop_dd, resume_file, posting, voice_on],
            [chat, sid, owner, status, *coding_out, voice],
            api_name="start",
        )
        send_out = [chat, answer, status, *coding_out, voice, spoken]
        send_evt = dict(fn=app.send, inputs=[answer, sid, owner, spoken, voice_on], outputs=send_out)
        send_btn.click(**send_evt, api_name="send")  # type: ignore[arg-type]
        answer.submit(**send_evt, api_visibility="private")  # type: ignore[arg-type]
        # Each edit offers the prompt so far to the model server (latest wins; see interviewer/llm/prefill.py).
        answer.input(
            app.typing,
            [answer, sid, owner],
            None,
            api_name="typing",
            trigger_mode="always_last",
            queue=False,
            show_progress="hidden",
        )
        upload.upload(
            app.transcribe, [upload, answer, sid, owner], [answer, spoken], api_name="transcribe"
        ).then(
            app.send_if_auto,
            [auto_send, answer, sid, owner, spoken, voice_on],
            send_out,
            api_visibility="private",
        )
        voice.change(None, [voice], None, js=_VOICE_QUEUE_JS)
        stop_voice_btn.click(app.stop_voice, [sid], None, js=_VOICE_STOP_JS, api_visibility="private")
        mic.start_recording(app.mic_start, [sid], None, js=_VOICE_STOP_JS, api_visibility="private")
        mic.stream(
            app.listen,
            [mic, answer, sid, owner, turns, auto_send],
            [answer, spoken, turns, voice],
            stream_every=0.25,
            time_limit=runtime.settings.max_audio_seconds + 30,
            show_progress="hidden",
            api_visibility="private",
        )
        mic.stop_recording(
            app.listen_stop, [answer, sid, owner, turns], [answer, spoken, turns], api_visibility="private"
        )
        # A spoken turn ended (silence, or the microphone stopped): send it at once when the candidate chose to.
        turns.change(
            app.send_if_auto,
            [auto_send, answer, sid, owner, spoken, voice_on],
            send_out,
            api_visibility="private",
        )
        clarify_btn.click(app.clarify, [answer, sid, owner], [chat, answer], api_name="clarify")
        pause_btn.click(app.pause, [sid, owner], [status], api_name="pause")
        end_btn.click(app.end_round, [sid, owner], [chat, status], api_name="end_round").then(
            app.view, [sid, owner], [chat, status], api_visibility="private", show_progress="hidden"
        )
        gr.Timer(1.0).tick(
            app.timer, [sid, owner], [timer_md], api_visibility="private", show_progress="hidden"
        )
        refresh.click(app.list_sessions, [owner], [table], api_name="sessions")
        reopen_btn.click(app.reopen, [reopen_id, owner], [chat, sid, status, *coding_out], api_name="reopen")
        run_btn.click(app.run_tests, [code, sid, owner], [verdict_md], api_name="run_tests")
        report_btn.click(app.show_report, [sid, owner], [report_md, report_files], api_name="report")
        progress_btn.click(app.progress, [owner], [skill_plot, skill_table], api_name="progress")
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
    demo = build(runtime, admin=not share and is_local_only(settings.host))
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
