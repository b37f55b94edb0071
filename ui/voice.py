"""The interviewer's voice and the candidate's: speech out, live transcription in (Gradio handlers)."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from interviewer.desk import Desk
from interviewer.engine.interview import Interview
from interviewer.errors import InputError, InterviewerError
from interviewer.runtime import Runtime, warm_quietly
from ui.checks import RequestChecks

log = logging.getLogger(__name__)


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


class Voice:
    """Speech for every session of one app process.

    ``checks`` resolves a request's owner and caps what it sent; ``busy`` tells whether a session's turn is in flight (the
    interviewer is replying, so the microphone is not the candidate's yet).
    """

    def __init__(
        self,
        runtime: Runtime,
        desk: Desk,
        checks: RequestChecks,
        busy: Callable[[str], bool],
    ) -> None:
        self.rt = runtime
        self.desk = desk
        self._owner, self._bounded = checks.owner, checks.bounded
        self._busy = busy
        # sid -> the answer being spoken into the streaming microphone; sid -> stops the interviewer's voice
        self._spoken: dict[str, _Listening] = {}
        self._voice_stop: dict[str, threading.Event] = {}
        self._vad: Any = None
        self._leads: Any = None  # interviewer.speech_stream.VoiceCache of the fixed leads, made on first use

    def take_spoken(self, sid: str) -> None:
        """A spoken answer is being sent: the microphone starts a new one."""
        sent = self._spoken.pop(sid, None)
        if sent is not None:
            sent.close()

    def voiced(self, it: Interview, voice_on: bool) -> Iterator[tuple[str, Path | None]]:
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

    def speak(self, it: Interview, voice_on: bool) -> Any:
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

    def transcribe(
        self, audio_path: str | None, typed: str, sid: str | None, owner: str | None, request: gr.Request
    ) -> tuple[str, dict[str, Any] | None]:
        """The recording as editable text; the current question is the recogniser's context."""
        self._bounded(typed=typed)
        if not audio_path:
            return typed, None
        from interviewer.speech import get_stt

        context = None
        if sid:
            try:
                q = self.desk.look(sid, self._owner(owner, request)).question
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
        self._bounded(typed=typed)
        nothing = (gr.update(), gr.update(), turns, gr.update())
        if chunk is None or not sid:
            return nothing
        if self._busy(sid):
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
        self._bounded(typed=typed)
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
            # The engine reads the answer so far (memoised by the listener) and starts its follow-up:
            # when the turn ends on this transcript, both are done. "": the candidate speaks again.
            if not reader:
                reader.append(self.desk.look(sid, who))
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
                q = self.desk.look(sid, who).question
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
