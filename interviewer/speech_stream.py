"""Spoken answers as a stream: transcribe while the candidate speaks, and speak the follow-up as it comes.

Listening, per answer (:class:`SpokenAnswer`):

- microphone chunks of any rate are resampled to 16 kHz and scored by a voice activity detector (silero-vad's
  ONNX model, shipped in its pinned PyPI package: :class:`SileroVAD`), one 32 ms window at a time;
- :class:`TurnDetector` turns those probabilities into events: speech started, a short pause (a phrase ended)
  and the end of the turn (a longer silence, ``INTERVIEWER_END_OF_TURN_MS``, 700 ms by default);
- at each short pause the phrase since the last one is transcribed (Whisper, prompted with the question and the
  transcript so far) and appended; the transcript only ever grows, so every partial transcript is a prefix of
  the final one and can go to the prompt prefill (:mod:`interviewer.llm.prefill`) as typed text does.

Speaking, per reply (:func:`voice_pieces`): the reply's growing text is cut into speakable pieces
(:class:`SentenceSplitter`: the first at a clause, then whole sentences) and each is synthesized on a worker
thread as soon as it is complete, so the voice starts on the first sentence; an interrupt (the candidate
speaks, or presses stop) ends it.

Everything here but :class:`SileroVAD` is pure logic over injected engines, testable without a browser.
"""

from __future__ import annotations

import copy
import logging
import queue
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from interviewer.errors import AudioInputError, InputError, SpeechError
from interviewer.native import native_call
from interviewer.speech import (
    SAMPLE_RATE,
    Audio,
    TextToSpeech,
    Transcript,
    _package_dir,
    _verify,
    write_wav,
)

__all__ = [
    "SILERO_VAD_SHA256",
    "WINDOW",
    "BackgroundAnswer",
    "ReadAhead",
    "SentenceSplitter",
    "SileroVAD",
    "SpokenAnswer",
    "TurnConfig",
    "TurnDetector",
    "TurnEvent",
    "Update",
    "VoiceCache",
    "chunk_transcriber",
    "voice_pieces",
]

log = logging.getLogger(__name__)

# silero-vad==6.2.3: silero_vad/data/silero_vad.onnx, computed here with sha256sum on the installed file.
SILERO_VAD_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
_SILERO_PIN = "silero-vad==6.2.3"
WINDOW = 512  # silero's window at 16 kHz: 32 ms
_HYSTERESIS = (
    0.15  # speech stays speech until the probability falls this far below the threshold (as silero's)
)


# --------------------------------------------------------------------------------------------- voice activity


class VadStream(Protocol):
    """Speech probability of the next :data:`WINDOW` samples of one stream (the model keeps state)."""

    def __call__(self, window: np.ndarray) -> float: ...


class SileroVAD:
    """silero-vad's ONNX model from its package (verified by sha256), one session shared by every stream."""

    def __init__(self) -> None:
        self._base: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._base is not None

    @native_call()  # loading runs native code too: not at exit on a worker thread
    def load(self) -> None:
        """Verify and load the model now instead of on the first window."""
        with self._lock:
            if self._base is not None:
                return
            try:
                import torch

                threads = torch.get_num_threads()
                # Importing silero_vad sets torch's thread count to 1 for the whole process; the embedder and
                # the scorer share the process, so the count is put back.
                from silero_vad.utils_vad import OnnxWrapper

                torch.set_num_threads(threads)
            except ImportError as e:
                raise SpeechError(f"silero-vad is not installed: pip install '{_SILERO_PIN}'") from e
            path = _package_dir("silero_vad", _SILERO_PIN) / "data" / "silero_vad.onnx"
            _verify(path, SILERO_VAD_SHA256, _SILERO_PIN)
            try:
                self._base = OnnxWrapper(str(path), force_onnx_cpu=True)  # one intra-op thread: it is small
            except (RuntimeError, ValueError, OSError) as e:
                raise SpeechError(f"the voice activity detector {path.name} did not load: {e}") from e

    def stream(self) -> VadStream:
        """A detector for one new stream: its own recurrent state over the shared session."""
        self.load()
        wrapper = copy.copy(self._base)  # the ONNX session is shared (thread-safe); the state is per stream
        wrapper.reset_states()

        import torch

        def probability(window: np.ndarray) -> float:
            with native_call(), torch.no_grad():
                return float(wrapper(torch.from_numpy(np.ascontiguousarray(window, np.float32)), SAMPLE_RATE))

        return probability


# --------------------------------------------------------------------------------------------- end of turn


@dataclass(frozen=True)
class TurnConfig:
    """When a phrase ends (``pause_ms``) and when the turn ends (``end_of_turn_ms``)."""

    end_of_turn_ms: int = 700
    pause_ms: int = 250  # a pause this long closes a phrase: it is transcribed while the candidate goes on
    threshold: float = 0.5  # silero's speech probability
    min_speech_ms: int = 90  # shorter blips (a click, a breath) do not start a turn
    pad_ms: int = 150  # audio kept either side of a phrase, so Whisper hears whole words
    max_phrase_seconds: float = 12.0  # a phrase with no pause is cut at its quietest point after this long
    # Whisper's beam for a phrase: greedy, because the last phrase is decoded while the candidate waits
    # (on the test answers greedy and beam 5 differ by about half a point of WER).
    beam_size: int = 1
    # faster-whisper's own VAD pass over each phrase: off, since silero already cut the phrase out of the
    # stream (the same WER on the benchmark's phrases, ~7% less decode time: BENCHMARKS.md).
    whisper_vad: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.pause_ms < self.end_of_turn_ms:
            raise InputError(
                f"the end-of-turn silence ({self.end_of_turn_ms} ms) must be longer than a phrase pause "
                f"({self.pause_ms} ms): raise INTERVIEWER_END_OF_TURN_MS"
            )


@dataclass(frozen=True)
class TurnEvent:
    """``kind`` happened at sample ``at`` (16 kHz): where speech started, or where the silence began."""

    kind: Literal["start", "pause", "resume", "end"]
    at: int


class TurnDetector:
    """Speech probabilities per window in, turn events out: pure logic, one instance per answer.

    Events: ``start`` (once, the first speech), ``pause`` (a silence long enough to close a phrase),
    ``resume`` (speech again after a pause: what was prepared for the transcript at the pause is moot) and
    ``end`` (once, the silence that ends the turn).
    """

    def __init__(self, config: TurnConfig | None = None, *, window: int = WINDOW) -> None:
        self.config = config or TurnConfig()
        self._window = window
        ms = SAMPLE_RATE / 1000
        self._min_speech = self.config.min_speech_ms * ms
        self._pause = self.config.pause_ms * ms
        self._end = self.config.end_of_turn_ms * ms
        self.position = 0  # samples seen
        self.started = False  # the candidate has said something
        self.ended = False
        self.speaking = False
        self._run_start: int | None = None  # where the current run of speech windows began
        self._silence_start: int | None = None
        self._paused = True  # the current silence has already closed a phrase

    def push(self, probability: float) -> TurnEvent | None:
        """Score the next window; at most one event per window, and ``end`` only once."""
        if self.ended:
            self.position += self._window
            return None
        at = self.position
        self.position += self._window
        th = self.config.threshold
        if probability >= th:
            if self._run_start is None:
                self._run_start = at
            if self.position - self._run_start >= self._min_speech:
                # Speech long enough to count (a click or a breath is not): any silence so far is over.
                self._silence_start = None
                if not self.speaking:
                    after_pause = self._paused
                    self.speaking, self._paused = True, False
                    if not self.started:
                        self.started = True
                        return TurnEvent("start", self._run_start)
                    if after_pause:
                        return TurnEvent("resume", self._run_start)
            return None
        if probability >= th - _HYSTERESIS and self.speaking:
            return None  # uncertain: stay in speech
        self._run_start = None
        if not self.started:
            return None
        if self._silence_start is None:
            self._silence_start = at
            self.speaking = False
        silent = self.position - self._silence_start
        if silent >= self._end:
            self.ended = True
            return TurnEvent("end", self._silence_start)
        if silent >= self._pause and not self._paused:
            self._paused = True
            return TurnEvent("pause", self._silence_start)
        return None


# --------------------------------------------------------------------------------------------- listening


class ChunkTranscriber(Protocol):
    """What :class:`SpokenAnswer` needs of speech-to-text (``WhisperSTT`` has it)."""

    def transcribe_audio(
        self,
        audio: Audio,
        *,
        context: str | None = None,
        name: str = "audio",
        beam_size: int | None = None,
        vad: bool | None = None,
    ) -> Transcript: ...


class _ViaFile:
    """A speech-to-text engine that only takes files (an OpenAI-compatible server): each phrase as a WAV."""

    def __init__(self, stt: Any) -> None:
        self._stt = stt

    def transcribe_audio(
        self,
        audio: Audio,
        *,
        context: str | None = None,
        name: str = "audio",
        beam_size: int | None = None,
        vad: bool | None = None,
    ) -> Transcript:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="phrase-") as d:
            path = write_wav(Path(d) / f"{name}.wav", audio.samples)
            result: Transcript = self._stt.transcribe(path, context=context)
            return result


def chunk_transcriber(stt: Any) -> ChunkTranscriber:
    """``stt`` itself when it transcribes decoded audio (local Whisper), else a wrapper that sends files."""
    return stt if callable(getattr(stt, "transcribe_audio", None)) else _ViaFile(stt)


@dataclass(frozen=True)
class Update:
    """The state of a spoken answer after a chunk: the transcript so far, and whether the turn is over."""

    transcript: str
    speaking: bool
    ended: bool
    grew: bool  # the transcript changed with this chunk


@dataclass
class _Resampler:
    """Browser microphones run at 44.1/48 kHz: PyAV's resampler to 16 kHz mono, one per stream."""

    rate: int
    _av: Any = field(default=None, repr=False)

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        x = _as_float_mono(samples)
        if self.rate == SAMPLE_RATE:
            return x
        import av

        if self._av is None:
            self._av = av.audio.resampler.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        frame = av.AudioFrame.from_ndarray(x.reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = self.rate
        out = [f.to_ndarray().reshape(-1) for f in self._av.resample(frame)]
        return np.concatenate(out).astype(np.float32) if out else np.zeros(0, np.float32)


def _as_float_mono(samples: np.ndarray) -> np.ndarray:
    x = np.asarray(samples)
    if x.ndim == 2:  # (samples, channels), as Gradio hands it
        x = x.mean(axis=1) if x.shape[1] <= 8 else x.mean(axis=0)
    if np.issubdtype(x.dtype, np.integer):
        return (x.astype(np.float32) / float(np.iinfo(x.dtype).max + 1)).astype(np.float32)
    return x.astype(np.float32, copy=False)


class SpokenAnswer:
    """One answer being spoken: feed microphone chunks, read the growing transcript, learn when the turn ends.

    Args:
        stt: transcribes one phrase at a time (Whisper).
        vad: this answer's voice activity stream (:meth:`SileroVAD.stream`).
        config: pause and end-of-turn timing.
        context: the question, Whisper's prompt for technical terms.
        on_partial: called with the transcript each time it grows (the prefill hook); never raises into here.
        on_resume: called when the candidate speaks again after a phrase was closed (and handed to
            ``on_partial``): what was prepared for that transcript is moot. Never raises into here.
    """

    def __init__(
        self,
        stt: ChunkTranscriber,
        vad: VadStream,
        config: TurnConfig | None = None,
        *,
        context: str | None = None,
        on_partial: Callable[[str], None] | None = None,
        on_resume: Callable[[], None] | None = None,
    ) -> None:
        self.detector = TurnDetector(config)
        self.config = self.detector.config
        self._stt = stt
        self._vad = vad
        self._context = context
        self._on_partial = on_partial
        self._on_resume = on_resume
        self._handed = False  # a phrase went to ``on_partial`` and no speech came after it yet
        self._resampler: _Resampler | None = None
        self._audio = np.zeros(0, np.float32)
        self._probs: list[float] = []
        self._vad_pos = 0  # samples scored
        self._done = 0  # samples already transcribed (or skipped as silence)
        self._phrase_open = False  # speech since ``_done`` not yet transcribed
        self.parts: list[str] = []
        self.vad_seconds = 0.0  # compute spent in the detector (benchmark)
        self.stt_seconds = 0.0  # compute spent in Whisper (benchmark)

    @property
    def transcript(self) -> str:
        return " ".join(self.parts)

    @property
    def ended(self) -> bool:
        return self.detector.ended

    @property
    def seconds(self) -> float:
        """Audio received so far."""
        return len(self._audio) / SAMPLE_RATE

    @native_call()  # resampling, the detector and Whisper, on the answer's worker thread
    def feed(self, samples: np.ndarray, rate: int = SAMPLE_RATE) -> Update:
        """Add a microphone chunk (int16 or float, mono or (samples, channels)) and act on what it holds."""
        import time

        if self._resampler is None or self._resampler.rate != rate:
            self._resampler = _Resampler(rate)
        before = len(self.parts)
        if not self.ended:
            self._audio = np.concatenate([self._audio, self._resampler(samples)])
        while not self.ended and self._vad_pos + WINDOW <= len(self._audio):
            t0 = time.perf_counter()
            p = self._vad(self._audio[self._vad_pos : self._vad_pos + WINDOW])
            self.vad_seconds += time.perf_counter() - t0
            self._probs.append(p)
            self._vad_pos += WINDOW
            event = self.detector.push(p)
            if event is None:
                if self.detector.speaking:
                    self._phrase_open = True
                    self._cut_long_phrase()
                continue
            if event.kind in ("start", "resume"):
                self._phrase_open = True
                self._resumed()
            else:  # a pause closes the phrase; the end of the turn closes the last one
                self._close_phrase(event.at)
        return Update(self.transcript, self.detector.speaking, self.ended, len(self.parts) != before)

    def finish(self) -> str:
        """The microphone stopped before the silence ran out: transcribe what is left and end the turn."""
        if not self.ended:
            self.detector.ended = True
            if self._phrase_open:
                self._close_phrase(len(self._audio))
        return self.transcript

    def continue_turn(self) -> None:
        """Treat the silence that ended the turn as a pause: later speech goes on this answer."""
        detector = TurnDetector(self.config)
        detector.position = self._vad_pos  # events stay in this answer's sample positions
        self.detector = detector

    def _resumed(self) -> None:
        if not self._handed:
            return
        self._handed = False
        if self._on_resume is not None:
            try:
                self._on_resume()
            except Exception as e:  # the hook is an optimisation (speculation): never lose the answer to it
                log.debug("resume hook failed: %s", e)

    def _cut_long_phrase(self) -> None:
        limit = int(self.config.max_phrase_seconds * SAMPLE_RATE)
        if self._vad_pos - self._done < limit:
            return
        # No pause for a long while: cut at the quietest window of the last 1.5 s, to split between words.
        n = int(1.5 * SAMPLE_RATE) // WINDOW
        tail = self._probs[-n:]
        quietest = len(self._probs) - len(tail) + int(np.argmin(tail))
        self._close_phrase(quietest * WINDOW + WINDOW // 2, pad=False)
        self._phrase_open = True
        self._resumed()  # cut while the candidate speaks on: the transcript handed out is not the last

    def _close_phrase(self, silence_at: int, *, pad: bool = True) -> None:
        if not self._phrase_open:
            return
        pad_n = int(self.config.pad_ms * SAMPLE_RATE / 1000) if pad else 0
        stop = min(len(self._audio), silence_at + pad_n)
        start = max(0, self._done - (pad_n if self._done else 0))
        self._done, self._phrase_open = stop, False
        chunk = self._audio[start:stop]
        if len(chunk) < WINDOW:
            return
        text = self._transcribe(chunk)
        if text:
            self.parts.append(text)
            self._handed = True
            if self._on_partial is not None:
                try:
                    self._on_partial(self.transcript)
                except Exception as e:  # the hook is an optimisation (prefill): never lose the answer to it
                    log.debug("partial transcript hook failed: %s", e)

    def _transcribe(self, chunk: np.ndarray) -> str:
        import time

        context = " ".join(p for p in (self._context, self.transcript) if p) or None
        t0 = time.perf_counter()
        try:
            tr = self._stt.transcribe_audio(
                Audio(chunk, SAMPLE_RATE),
                context=context,
                name="phrase",
                beam_size=self.config.beam_size,
                vad=self.config.whisper_vad,
            )
        except AudioInputError:
            return ""  # noise the detector let through: Whisper found no words
        finally:
            self.stt_seconds += time.perf_counter() - t0
        return tr.text.strip()


class BackgroundAnswer:
    """A :class:`SpokenAnswer` fed on its own thread: the caller only queues chunks and reads the latest state.

    The page's stream handler must return at once: Gradio drops microphone chunks that arrive while the
    previous one is still being handled, so a phrase being transcribed (or a model loading) would cost words.
    ``make`` builds the answer on the worker, so loading the recognisers does not block the caller either.
    """

    _FINISH = object()

    def __init__(self, make: Callable[[], SpokenAnswer], *, continue_on_end: bool = False) -> None:
        self.continue_on_end = continue_on_end  # the turn never ends by itself: a long silence is a pause
        self.error: Exception | None = None
        self.answer: SpokenAnswer | None = None
        self._make = make
        self._lock = threading.Lock()
        self._transcript = ""
        self._shown = ""  # the transcript the caller last saw
        self._speaking = False
        self._ended = False
        self._seconds = 0.0
        self._todo: queue.Queue[Any] = queue.Queue()
        self._finished = threading.Event()
        threading.Thread(target=self._work, name="listen", daemon=True).start()

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._seconds

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._ended

    def feed(self, samples: np.ndarray, rate: int = SAMPLE_RATE) -> Update:
        """Queue a chunk; the state as of the chunks handled so far (``grew``: changed since the last call)."""
        self._todo.put((samples, rate))
        with self._lock:
            grew = self._transcript != self._shown
            self._shown = self._transcript
            return Update(self._transcript, self._speaking, self._ended, grew)

    def finish(self, timeout: float = 60.0) -> str:
        """Transcribe what is left and end the turn (the microphone stopped); waits for the queue to drain."""
        self._todo.put(self._FINISH)
        self._finished.wait(timeout)
        with self._lock:
            self._shown = self._transcript
            return self._transcript

    def close(self) -> None:
        """Stop the worker (the answer was sent or abandoned)."""
        self._todo.put(None)

    def _work(self) -> None:
        try:
            self.answer = self._make()
        except Exception as e:  # reported to the page by the next chunk's handler, not lost on this thread
            self.error = e
            self._finished.set()
            return
        ans = self.answer
        while (item := self._todo.get()) is not None:
            if item is self._FINISH:
                ans.finish()
                self._publish(ans, ended=True)
                self._finished.set()
                continue
            update = ans.feed(*item)
            ended = update.ended
            if ended and self.continue_on_end:
                ans.continue_turn()
                ended = False
            self._publish(ans, ended=ended)

    def _publish(self, ans: SpokenAnswer, *, ended: bool) -> None:
        with self._lock:
            self._transcript = ans.transcript
            self._speaking = ans.detector.speaking
            self._ended = self._ended or ended
            self._seconds = ans.seconds


class ReadAhead:
    """Runs ``fn`` on the latest value only, on its own thread: the engine reads a spoken answer ahead.

    A partial transcript handed in while the previous one is still being read replaces any other waiting one,
    so at most one read runs and one waits. The listening thread only queues (it must keep up with the
    microphone); by the end of the turn the answer's reading is usually made, and the follow-up starts from it.
    ``fn`` failing is logged, never raised: reading ahead is an optimisation.
    """

    def __init__(self, fn: Callable[[str], object]) -> None:
        self._fn = fn
        self._cond = threading.Condition()
        self._next: str | None = None
        self._busy = False
        self._closed = False
        self.done: list[str] = []  # what was read, in order (tests, benchmark)
        threading.Thread(target=self._work, name="read-ahead", daemon=True).start()

    def submit(self, value: str) -> None:
        with self._cond:
            self._next = value
            self._cond.notify_all()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is waiting or being read (True), or ``timeout`` passes (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._next is None and not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed, self._next = True, None
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._next is not None or self._closed)
                if self._closed:
                    return
                value, self._next, self._busy = self._next, None, True
            try:
                assert value is not None
                self._fn(value)
                self.done.append(value)
            except Exception as e:
                log.debug("reading ahead failed: %s", e)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


# --------------------------------------------------------------------------------------------- speaking

_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|vs|etc|cf|approx|Dr|Mr|Ms|Mrs|No|Fig)\.$", re.I)
_SENTENCE_END = re.compile(r"[.?!]+[\"')\]]*\s+|\n+")
_CLAUSE_END = re.compile(r"[,;:]\s+|\s+[-–—]\s+")


class SentenceSplitter:
    """Growing reply text in, speakable pieces out: whole sentences, except that the first piece may end at
    a clause (``min_first_words`` words or more) so the voice starts sooner, and that a reply opening with one
    of the ``leads`` (the engine's fixed acknowledgements, decided before the model starts) has it as its own
    first piece, even a one-word "Right." that is all the text there is so far; the piece after a lead may
    then be a clause."""

    def __init__(self, *, min_first_words: int = 5, leads: Iterable[str] = ()) -> None:
        self._min_first = min_first_words
        self._leads = sorted({" ".join(t.split()) for t in leads if _has_words(t)}, key=len, reverse=True)
        self._said = 0  # characters of the text already handed out
        self.starts: list[int] = []  # where each piece of the last ``feed`` began in the text
        self._pieces = 0
        self._led = False  # the first piece was a lead
        self._last = ""

    def feed(self, text: str) -> list[str]:
        """The pieces completed by ``text`` (the reply so far, which only grows)."""
        if not text.startswith(self._last[: self._said]):
            # The reply was rewritten (a repaired question, an authored follow-up in place of the model's):
            # speak from the start of the word where the new text differs.
            common = 0
            for a, b in zip(self._last, text, strict=False):
                if a != b:
                    break
                common += 1
            if common < self._said:
                self._said = text.rfind(" ", 0, common) + 1
        self._last = text
        pieces: list[str] = []
        self.starts = []
        while True:
            rest = text[self._said :]
            cut = self._next_cut(rest)
            if cut is None:
                return pieces
            piece = rest[:cut].strip()
            start = self._said
            self._said += cut
            if _has_words(piece):
                pieces.append(piece)
                self.starts.append(start)
                self._pieces += 1

    def rewind(self, pos: int) -> None:
        """Take back what was handed out from ``pos`` (a piece's start) on: the next feed hands it out again."""
        self._said = min(self._said, pos)

    def flush(self) -> list[str]:
        """What is left once the reply is complete."""
        rest = self._last[self._said :].strip()
        self._said = len(self._last)
        return [rest] if _has_words(rest) else []

    def _next_cut(self, rest: str) -> int | None:
        if self._pieces == 0 and self._said == 0:
            for lead in self._leads:
                if rest.startswith(lead) and (len(rest) == len(lead) or rest[len(lead)].isspace()):
                    self._led = True
                    return len(lead)
        for m in _SENTENCE_END.finditer(rest):
            if _ABBREVIATIONS.search(rest[: m.start() + 1]):
                continue
            if len(rest[: m.start()].split()) < 2 and m.group().strip() != "":
                continue  # "1." or "So." alone is not worth a pause
            return m.end()
        if self._pieces == int(self._led):  # the first piece, or the first after a lead, may be a clause
            for m in _CLAUSE_END.finditer(rest):
                if len(rest[: m.start()].split()) >= self._min_first:
                    return m.end()
        return None


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


class VoiceCache:
    """WAVs of the fixed sentences the interviewer says (acknowledgements, authored leads), made once ahead.

    Synthesizing even "Right." takes piper a few hundred milliseconds on a busy 2-core machine; a reply that
    opens with a cached sentence starts speaking as soon as its text is there. Files are named by a hash of
    the voice and the text, so a changed voice or wording is synthesized afresh.
    """

    def __init__(self, tts: TextToSpeech, directory: Path, phrases: Iterable[str] = ()) -> None:
        self._tts = tts
        self._dir = directory
        self.phrases: tuple[str, ...] = tuple(
            dict.fromkeys(" ".join(p.split()) for p in phrases if p.strip())
        )
        self._ready: dict[str, Path] = {}
        self._lock = threading.Lock()

    def _path(self, text: str) -> Path:
        import hashlib

        engine = str(getattr(self._tts, "engine", type(self._tts).__name__))
        digest = hashlib.sha256(f"{engine}\n{text}".encode()).hexdigest()[:20]
        return self._dir / f"lead-{digest}.wav"

    def warm(self) -> int:
        """Synthesize the phrases not on disk yet (call it off the request path); returns how many are ready."""
        for text in self.phrases:
            path = self._path(text)
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
                # The voices write through a temporary file: a WAV on disk is a whole one.
                if not (path.is_file() and path.stat().st_size > 0):
                    self._tts.synthesize(text, path)
            except (SpeechError, InputError, OSError) as e:
                log.info("could not pre-synthesize %r: %s", text, e)
                continue
            with self._lock:
                self._ready[text] = path
        return len(self._ready)

    def get(self, text: str) -> Path | None:
        """The WAV of ``text`` if it was synthesized ahead, else None."""
        with self._lock:
            return self._ready.get(" ".join(text.split()))


class _PieceVoicer:
    """A reply's pieces voiced in order on one worker thread: :meth:`put` hands a piece out, :meth:`ready`
    takes the WAVs back in the same order."""

    def __init__(
        self,
        tts: TextToSpeech,
        out_dir: Path,
        stop: threading.Event,
        *,
        cache: VoiceCache | None,
        on_error: Callable[[Exception], None] | None,
    ) -> None:
        self._tts = tts
        self._out_dir = out_dir
        self._stop = stop
        self._cache = cache
        self._on_error = on_error
        self._todo: queue.Queue[tuple[int, str] | None] = queue.Queue()
        self._done: queue.Queue[Path | Exception | None] = queue.Queue()
        self._count = 0
        # Pieces handed out (to the worker, or cached) whose WAV the reader has not taken yet.
        self.pending = 0
        self._failed = False
        self._worker = threading.Thread(target=self._work, name="voice", daemon=True)

    def start(self) -> None:
        self._worker.start()

    def close(self) -> None:
        """No more pieces: the worker ends once it has answered the ones it holds."""
        self._todo.put(None)

    def put(self, piece: str) -> None:
        n, self._count = self._count, self._count + 1
        self.pending += 1
        # A cached piece with nothing ahead of it need not wait its turn on the worker.
        wav = self._cached(piece, n) if self.pending == 1 else None
        if wav is not None:
            self._done.put(wav)
        else:
            self._todo.put((n, piece))

    def ready(self, block: bool) -> Path | None:
        """The next piece's WAV, skipping the failed and the dropped; None if none is (yet) to be had."""
        while self.pending:
            try:
                got = self._done.get(block=block)
            except queue.Empty:
                return None
            self.pending -= 1
            if isinstance(got, Exception):
                if not self._failed:
                    log.warning("the interviewer's voice failed: %s", got)
                    if self._on_error is not None:
                        self._on_error(got)
                self._failed = True
                continue
            if got is not None and not self._stop.is_set():
                return got
        return None

    def _cached(self, piece: str, n: int) -> Path | None:
        wav = self._cache.get(piece) if self._cache is not None else None
        if wav is None:
            return None
        out = self._out_dir / f"piece-{n:03d}.wav"
        try:
            shutil.copyfile(wav, out)
        except OSError as e:
            log.info("cached voice %s unusable: %s", wav, e)
            return None
        return out

    def _work(self) -> None:
        while (item := self._todo.get()) is not None:
            n, piece = item
            if self._stop.is_set():
                self._done.put(None)  # one answer per piece, so the reader never waits for a dropped one
                continue
            try:
                self._done.put(
                    self._cached(piece, n)
                    or self._tts.synthesize(piece, self._out_dir / f"piece-{n:03d}.wav")
                )
            except (SpeechError, InputError) as e:
                self._done.put(e)


def _put_vetted(
    splitter: SentenceSplitter,
    text: str,
    voicer: _PieceVoicer,
    vet: Callable[[str], bool] | None,
    cache: VoiceCache | None,
) -> bool:
    """Hand out the pieces ``text`` completes, up to the first one ``vet`` refuses; True if one was refused
    (the splitter is rewound to it, so the finished reply's feed hands it out again)."""
    for piece, start in zip(splitter.feed(text), splitter.starts, strict=True):
        if vet is not None and (cache is None or cache.get(piece) is None) and not vet(piece):
            splitter.rewind(start)
            return True
        voicer.put(piece)
    return False


def voice_pieces(
    replies: Iterable[str],
    tts: TextToSpeech,
    out_dir: Path,
    *,
    stop: threading.Event | None = None,
    splitter: SentenceSplitter | None = None,
    on_error: Callable[[Exception], None] | None = None,
    cache: VoiceCache | None = None,
    vet: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, Path | None]]:
    """Speak a reply while it streams: yields ``(reply so far, WAV of the next piece or None)``.

    ``replies`` yields the growing reply text (as :meth:`Interview.advance` does). Pieces are synthesized in
    order on one worker thread, so the text keeps streaming while a sentence is voiced; each WAV is yielded with
    the next text update, or as soon as it is ready once the text is complete. A piece ``cache`` holds is not
    synthesized: its WAV is copied at once (as ``piece-NNN.wav``, so the page sees a new file each time) and,
    when no piece is still being synthesized ahead of it, yielded with the very text that completed it. Setting
    ``stop`` (the candidate started speaking, or pressed stop) drops the pieces not yet voiced; the text still
    streams to the end. A piece the voice cannot speak is skipped and reported once to ``on_error`` (on the
    caller's thread).

    ``vet`` (a piece -> may it be spoken before the reply is complete?) guards the model's text, which the engine
    checks only once the question is whole: the first piece ``vet`` refuses, and everything after it, waits
    for the finished reply, and is then spoken from the reply the engine kept (its own text, or the authored
    follow-up that replaced it). A cached piece is authored wording and is not vetted.
    """
    stop = stop or threading.Event()
    if splitter is None:
        splitter = SentenceSplitter(leads=cache.phrases if cache is not None else ())
    out_dir.mkdir(parents=True, exist_ok=True)
    voicer = _PieceVoicer(tts, out_dir, stop, cache=cache, on_error=on_error)
    voicer.start()
    text = ""
    held = False  # a piece ``vet`` refused: nothing from it on is spoken until the reply is complete
    try:
        for text in replies:
            if not stop.is_set() and not held:
                held = _put_vetted(splitter, text, voicer, vet, cache)
            yield text, voicer.ready(block=False)
        if not stop.is_set():
            # The finished reply from where speaking stopped (the splitter's rewrite rule applies when the
            # engine replaced the text); without a refusal the last feed already took it all.
            for piece in [*splitter.feed(text), *splitter.flush()] if held else splitter.flush():
                voicer.put(piece)
        voicer.close()
        while voicer.pending and not stop.is_set():
            wav = voicer.ready(block=True)
            if wav is not None:
                yield text, wav
    finally:
        stop.set()  # abandoned or interrupted: the worker drops what is left
        voicer.close()
