"""#13: spoken answers stream: end of turn, growing transcripts fed to prefill, and the voice piece by piece."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from interviewer.errors import InputError, SpeechError
from interviewer.speech import SAMPLE_RATE, PiperTTS, WhisperSTT, load_audio, word_error_rate
from interviewer.speech_stream import (
    WINDOW,
    ReadAhead,
    SentenceSplitter,
    SileroVAD,
    SpokenAnswer,
    TurnConfig,
    TurnDetector,
    VoiceCache,
    voice_pieces,
)

MS = SAMPLE_RATE // 1000


def windows(ms: int) -> int:
    return (ms * MS + WINDOW - 1) // WINDOW


def run(detector: TurnDetector, probs: list[float]) -> list[tuple[str, int]]:
    events = []
    for i, p in enumerate(probs):
        e = detector.push(p)
        if e is not None:
            events.append((e.kind, i))
    return events


# ----------------------------------------------------------------------------------------------- turn detector


def test_the_turn_ends_once_after_the_silence_and_not_in_short_pauses() -> None:
    speech, pause = [0.9] * windows(1500), [0.05] * windows(400)
    probs = [0.02] * windows(500) + speech + pause + speech + pause + speech + [0.02] * windows(3000)
    events = run(TurnDetector(TurnConfig(end_of_turn_ms=700, pause_ms=250)), probs)
    kinds = [k for k, _ in events]
    # Each pause closes a phrase; speech after it is a "resume" (what was prepared at the pause is moot).
    assert kinds == ["start", "pause", "resume", "pause", "resume", "pause", "end"], events
    last_speech = len(probs) - windows(3000) - 1
    end_at = events[-1][1]
    # The end fires in the window where 700 ms of silence have passed: not before, and not a window later.
    assert (end_at - last_speech) * WINDOW >= 700 * MS
    assert (end_at - last_speech - 1) * WINDOW < 700 * MS


def test_end_of_turn_is_configurable_and_a_longer_pause_is_not_an_end_below_it() -> None:
    probs = [0.9] * windows(1000) + [0.0] * windows(900) + [0.9] * windows(1000) + [0.0] * windows(1500)
    assert [k for k, _ in run(TurnDetector(TurnConfig(end_of_turn_ms=1200)), probs)] == [
        "start",
        "pause",
        "resume",
        "pause",
        "end",
    ]
    short = run(TurnDetector(TurnConfig(end_of_turn_ms=700)), probs)
    assert [k for k, _ in short] == ["start", "pause", "end"]  # 900 ms is a turn end at 700 ms
    with pytest.raises(InputError, match="INTERVIEWER_END_OF_TURN_MS"):
        TurnConfig(end_of_turn_ms=200, pause_ms=250)


def test_clicks_do_not_start_a_turn_nor_reset_the_silence() -> None:
    d = TurnDetector(TurnConfig(end_of_turn_ms=700, min_speech_ms=90))
    assert run(d, [0.02, 0.95, 0.02, 0.02, 0.9, 0.02] * 20) == []  # one-window blips: no turn
    assert not d.started
    probs = [0.9] * windows(800) + [0.0] * windows(400) + [0.95] + [0.0] * windows(400)
    events = run(TurnDetector(TurnConfig(end_of_turn_ms=700)), probs)
    # The blip inside the silence does not restart the 700 ms count.
    assert [k for k, _ in events] == ["start", "pause", "end"]
    assert events[-1][1] == windows(800) + windows(700) - 1


def test_uncertain_windows_inside_speech_stay_speech() -> None:
    # silero's hysteresis: 0.4 is below the threshold but above threshold - 0.15, so it does not open a pause.
    probs = [0.9] * 20 + [0.4] * windows(1000) + [0.9] * 5 + [0.0] * windows(800)
    assert [k for k, _ in run(TurnDetector(), probs)] == ["start", "pause", "end"]


# ----------------------------------------------------------------------------------------------- listening, fakes


class RecordingSTT:
    """Returns a scripted phrase per call and records the audio and context it was given."""

    def __init__(self, phrases: list[str]) -> None:
        self.phrases = list(phrases)
        self.calls: list[tuple[int, str | None]] = []

    def transcribe_audio(
        self,
        audio: Any,
        *,
        context: str | None = None,
        name: str = "audio",
        beam_size: int | None = None,
        vad: bool | None = None,
    ) -> Any:
        from interviewer.speech import Transcript

        self.calls.append((len(audio.samples), context))
        self.options = {"beam_size": beam_size, "vad": vad}
        return Transcript(self.phrases.pop(0), audio.seconds, "en", 0.1)


def energy_vad(window: np.ndarray) -> float:
    return 0.99 if float(np.sqrt(np.mean(window * window))) > 0.01 else 0.01


def tone(ms: int) -> np.ndarray:
    t = np.arange(ms * MS) / SAMPLE_RATE
    return (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)


def silence(ms: int) -> np.ndarray:
    return np.zeros(ms * MS, np.float32)


def test_each_phrase_is_transcribed_once_with_the_transcript_so_far_as_context() -> None:
    stt = RecordingSTT(["First phrase.", "Second one.", "Third."])
    partials: list[str] = []
    ans = SpokenAnswer(stt, energy_vad, context="Why?", on_partial=partials.append)
    audio = np.concatenate(
        [silence(200), tone(1200), silence(350), tone(900), silence(400), tone(600), silence(1200)]
    )
    ended_at = None
    for i in range(0, len(audio), 4000):  # 250 ms chunks, as the page streams them
        chunk = (audio[i : i + 4000] * 32767).astype(np.int16)
        if ans.feed(chunk, SAMPLE_RATE).ended and ended_at is None:
            ended_at = i
    assert ans.ended and ended_at is not None
    assert partials == ["First phrase.", "First phrase. Second one.", "First phrase. Second one. Third."]
    assert [c for _, c in stt.calls] == ["Why?", "Why? First phrase.", "Why? First phrase. Second one."]
    # Each phrase's audio (with its padding) once: no phrase was sent twice, the trailing silence not at all.
    assert sum(n for n, _ in stt.calls) < len(audio)
    assert ans.feed(tone(500), SAMPLE_RATE).transcript == partials[-1]  # after the end, nothing changes


def test_the_end_of_turn_costs_only_the_silence_the_last_phrase_was_decoded_at_its_pause() -> None:
    stt = RecordingSTT(["First phrase.", "Last phrase."])
    ans = SpokenAnswer(stt, energy_vad, TurnConfig(end_of_turn_ms=700, pause_ms=250))
    audio = np.concatenate([tone(900), silence(400), tone(700)])
    ans.feed(audio)
    assert len(stt.calls) == 1 and not ans.ended  # the last phrase is still open: nothing decoded yet
    # 300 ms of silence: past the 250 ms pause, short of the 700 ms end. The last phrase is decoded now.
    u = ans.feed(silence(300))
    assert not u.ended and u.transcript == "First phrase. Last phrase." and len(stt.calls) == 2
    u = ans.feed(silence(600))
    # The end of the turn: the transcript as it was at the pause, and no decode at the end itself.
    assert u.ended and u.transcript == "First phrase. Last phrase." and len(stt.calls) == 2
    # Phrases are greedy and skip faster-whisper's own VAD pass (silero already cut them out).
    assert stt.options == {"beam_size": 1, "vad": False}


def test_a_48k_stereo_microphone_is_resampled_and_a_stop_before_the_silence_finishes_the_turn() -> None:
    stt = RecordingSTT(["Only phrase."])
    ans = SpokenAnswer(stt, energy_vad)
    t = np.arange(48_000) / 48_000
    x = (0.3 * np.sin(2 * np.pi * 200 * t) * 32767).astype(np.int16)
    ans.feed(np.stack([x, x], axis=1), 48_000)  # (samples, channels), as Gradio hands a stereo microphone
    assert ans.seconds == pytest.approx(1.0, abs=0.05) and not ans.ended
    assert ans.finish() == "Only phrase." and ans.ended
    assert stt.calls[0][0] == pytest.approx(SAMPLE_RATE, rel=0.05)


def test_a_failing_prefill_hook_never_loses_the_answer() -> None:
    def boom(text: str) -> None:
        raise RuntimeError("server gone")

    ans = SpokenAnswer(RecordingSTT(["Kept."]), energy_vad, on_partial=boom)
    ans.feed(np.concatenate([tone(500), silence(1000)]), SAMPLE_RATE)
    assert ans.ended and ans.transcript == "Kept."


def test_speech_after_a_pause_is_a_resume_and_start_stays_once_only() -> None:
    short_gap = [0.9] * windows(600) + [0.0] * windows(150) + [0.9] * windows(600)  # under the 250 ms pause
    probs = short_gap + [0.0] * windows(300) + [0.9] * windows(600) + [0.0] * windows(800)
    events = run(TurnDetector(TurnConfig(end_of_turn_ms=700, pause_ms=250)), probs)
    assert [k for k, _ in events] == ["start", "pause", "resume", "pause", "end"], events
    # The resume is placed where the speech came back, not where it was confirmed.
    d = TurnDetector(TurnConfig(end_of_turn_ms=700, pause_ms=250))
    got = [e for p in probs if (e := d.push(p)) is not None]
    assert got[2].at == len(short_gap + [0.0] * windows(300)) * WINDOW


def test_on_resume_is_called_when_speech_follows_a_handed_out_phrase_and_never_raises() -> None:
    log: list[str] = []
    ans = SpokenAnswer(
        RecordingSTT(["One.", "Two.", "Three."]),
        energy_vad,
        TurnConfig(end_of_turn_ms=700, pause_ms=250),
        on_partial=lambda t: log.append(f"partial {t}"),
        on_resume=lambda: log.append("resume"),
    )
    ans.feed(np.concatenate([tone(600), silence(100), tone(600)]))  # a gap too short to close a phrase
    assert log == []
    ans.feed(np.concatenate([silence(300), tone(600), silence(300)]))
    assert log == ["partial One.", "resume", "partial One. Two."]
    ans.feed(silence(600))  # the turn ends: no speech, no resume
    assert ans.ended and log[-1] == "partial One. Two."

    def boom() -> None:
        raise RuntimeError("the speculation could not be cancelled")

    kept = SpokenAnswer(RecordingSTT(["Kept.", "Too."]), energy_vad, on_resume=boom)
    kept.feed(np.concatenate([tone(500), silence(300), tone(500), silence(1000)]), SAMPLE_RATE)
    assert kept.ended and kept.transcript == "Kept. Too."


def test_a_turn_continued_after_its_end_calls_on_resume_when_speech_comes_back() -> None:
    resumed: list[int] = []
    ans = SpokenAnswer(RecordingSTT(["One.", "Two."]), energy_vad, on_resume=lambda: resumed.append(1))
    ans.feed(np.concatenate([tone(600), silence(900)]))
    assert ans.ended
    ans.continue_turn()  # without auto-send, a long silence is only a pause
    ans.feed(np.concatenate([tone(600), silence(900)]))
    assert resumed == [1] and ans.transcript == "One. Two."


def test_a_long_phrase_cut_while_speaking_is_followed_by_a_resume() -> None:
    log: list[str] = []
    ans = SpokenAnswer(
        RecordingSTT(["Long first part.", "And the rest."]),
        energy_vad,
        TurnConfig(max_phrase_seconds=2.0),
        on_partial=lambda t: log.append("partial"),
        on_resume=lambda: log.append("resume"),
    )
    ans.feed(np.concatenate([tone(2400), silence(900)]))  # one cut (where its first 1.5 s are quietest)
    # Cut mid-speech: what was handed out is not the end of the answer, so it is taken back at once.
    assert log == ["partial", "resume", "partial"] and ans.ended


# ----------------------------------------------------------------------------------------------- speaking


def test_sentences_come_out_as_the_reply_grows_the_first_at_a_clause() -> None:
    reply = (
        "Right, so if the cache is paged in blocks of sixteen tokens, what happens to fragmentation? "
        "Think about e.g. a batch of short requests. And what breaks without it?"
    )
    sp = SentenceSplitter(min_first_words=5)
    got: list[tuple[int, str]] = []
    for n in range(1, len(reply) + 1):  # a token at a time (here, a character)
        got += [(n, p) for p in sp.feed(reply[:n])]
    got += [(len(reply), p) for p in sp.flush()]
    pieces = [p for _, p in got]
    assert pieces == [
        "Right, so if the cache is paged in blocks of sixteen tokens,",
        "what happens to fragmentation?",
        "Think about e.g. a batch of short requests.",
        "And what breaks without it?",
    ]
    # The first piece is out as soon as its clause ends, long before the reply is complete.
    assert got[0][0] == reply.index("tokens, ") + len("tokens, ")
    assert " ".join(pieces) == " ".join(reply.split())
    assert sp.flush() == []


def test_a_rewritten_reply_is_spoken_from_where_it_changed() -> None:
    sp = SentenceSplitter()
    assert sp.feed("Why is the decoder memory bound? Consider the") == ["Why is the decoder memory bound?"]
    assert sp.feed("Why is the decoder memory bound? Think about bandwidth. ") == ["Think about bandwidth."]
    assert sp.flush() == []


def test_a_fixed_lead_is_its_own_first_piece_as_soon_as_it_is_there() -> None:
    sp = SentenceSplitter(leads=["Right.", "Let's stay on the question I asked."])
    assert sp.feed("Right.") == ["Right."]  # the engine yields its acknowledgement alone, before the model
    assert sp.feed("Right. So why does") == []
    # The piece after the lead may end at a clause, as a first piece may.
    assert sp.feed("Right. So why does the batch help, exa") == ["So why does the batch help,"]
    assert sp.feed("Right. So why does the batch help, exactly? And then? ") == ["exactly? And then?"]
    redirect = SentenceSplitter(leads=["Right.", "Let's stay on the question I asked."])
    assert redirect.feed("Let's stay on the question I asked. Why is decode memory bound? ") == [
        "Let's stay on the question I asked.",
        "Why is decode memory bound?",
    ]
    # Only at the start of a reply, and only the whole sentence: "Right" inside a word or later is no lead.
    later = SentenceSplitter(leads=["Right."])
    assert later.feed("Rightly so. Right. And then") == ["Rightly so."]
    assert later.flush() == ["Right. And then"]
    assert SentenceSplitter(leads=["Right."]).feed("Right.ly") == []


class RecordingTTS:
    """Writes a tiny WAV per piece and records when each was asked for, relative to the reply's tokens."""

    def __init__(self, log: list[str], gate: threading.Event | None = None) -> None:
        self.log = log
        self.gate = gate

    def synthesize(self, text: str, out_path: Any) -> Path:
        if self.gate is not None:
            self.gate.wait(5)
        self.log.append(f"tts:{text}")
        p = Path(out_path)
        p.write_bytes(b"RIFF")
        return p


def test_the_voice_starts_on_the_first_sentence_while_the_reply_still_streams(tmp_path: Path) -> None:
    log: list[str] = []
    words = "Good. Now, why does the prefill stay compute bound? And what would change on a bigger GPU?"

    def reply() -> Iterator[str]:
        toks = words.split(" ")
        for i in range(1, len(toks) + 1):
            log.append(f"token:{i}")
            yield " ".join(toks[:i])
            threading.Event().wait(0.02)  # the model's pace: the worker voices meanwhile

    out = list(voice_pieces(reply(), RecordingTTS(log), tmp_path))
    assert out[-1][0] == words
    wavs = [w for _, w in out if w is not None]
    assert [w.name for w in wavs] == ["piece-000.wav", "piece-001.wav"]
    tts_calls = [e for e in log if e.startswith("tts:")]
    assert tts_calls == [
        "tts:Good. Now, why does the prefill stay compute bound?",
        "tts:And what would change on a bigger GPU?",
    ]
    first_tts = log.index(tts_calls[0])
    assert first_tts < log.index(f"token:{len(words.split(' '))}"), log  # voiced before the reply ended


def test_stopping_the_voice_drops_the_pieces_not_yet_spoken(tmp_path: Path) -> None:
    log: list[str] = []
    gate = threading.Event()
    stop = threading.Event()
    text = "First sentence is here. Second sentence is here. Third sentence is here."

    def reply() -> Iterator[str]:
        yield text
        stop.set()  # the candidate starts speaking while the first piece is being voiced
        gate.set()
        yield text

    out = list(voice_pieces(reply(), RecordingTTS(log, gate), tmp_path, stop=stop))
    assert out[-1][0] == text  # the text is complete on the page
    assert [w for _, w in out if w is not None] == []  # nothing voiced is played after the interrupt
    assert len([e for e in log if e.startswith("tts:")]) <= 1


def test_a_cached_lead_is_voiced_with_the_first_text_and_never_synthesized_again(tmp_path: Path) -> None:
    log: list[str] = []
    cache = VoiceCache(RecordingTTS(log), tmp_path / "cache", ["Right.", "Fair enough."])
    assert cache.warm() == 2 and log == ["tts:Right.", "tts:Fair enough."]
    assert VoiceCache(RecordingTTS(log), tmp_path / "cache", ["Right."]).warm() == 1
    assert len(log) == 2  # already on disk: not synthesized again
    log.clear()
    gate = threading.Event()
    updates = ["Right.", "Right. Why does", "Right. Why does paging help, then?"]

    def reply() -> Iterator[str]:
        for text in updates:
            yield text
            gate.set()

    out = list(voice_pieces(reply(), RecordingTTS(log, gate), tmp_path / "r1", cache=cache))
    assert out[0] == ("Right.", tmp_path / "r1" / "piece-000.wav")  # with the very first text
    assert out[0][1].read_bytes() == cache.get("Right.").read_bytes()  # type: ignore[union-attr]
    assert log == ["tts:Why does paging help, then?"]  # only the model's sentence was synthesized
    assert [w.name for _, w in out if w is not None] == ["piece-000.wav", "piece-001.wav"]
    # A second reply gets its own copy (the page plays a new file), from the same cache.
    again = list(voice_pieces(iter(["Right."]), RecordingTTS(log), tmp_path / "r2", cache=cache))
    assert again == [("Right.", tmp_path / "r2" / "piece-000.wav")]


def test_a_cached_piece_behind_one_being_synthesized_keeps_its_place(tmp_path: Path) -> None:
    log: list[str] = []
    cache = VoiceCache(RecordingTTS(log), tmp_path / "cache", ["Fair enough."])
    cache.warm()
    gate = threading.Event()
    text = "Why is the first sentence slow to voice? Fair enough. "

    def reply() -> Iterator[str]:
        yield text
        yield text  # the first piece is still being synthesized: the cached one must wait its turn
        gate.set()

    tts = RecordingTTS(log, gate)
    wavs = [w for _, w in voice_pieces(reply(), tts, tmp_path / "r", cache=cache) if w is not None]
    assert [w.name for w in wavs] == ["piece-000.wav", "piece-001.wav"]
    assert wavs[1].read_bytes() == cache.get("Fair enough.").read_bytes()  # type: ignore[union-attr]


def test_read_ahead_reads_the_latest_transcript_and_drops_the_superseded() -> None:
    gate, seen = threading.Event(), []

    def read(text: str) -> None:
        seen.append(text)
        gate.wait(10)

    ahead = ReadAhead(read)
    ahead.submit("one")
    while not seen:
        threading.Event().wait(0.01)
    ahead.submit("one two")  # replaced by the next before the first read is over
    ahead.submit("one two three")
    gate.set()
    assert ahead.wait_idle(10)
    assert seen == ["one", "one two three"] and ahead.done == seen
    ahead.submit("boom")  # nothing is read after close
    ahead.close()


def test_an_answer_read_ahead_is_not_read_again_when_it_is_sent(fixture_bank: Any, tmp_path: Path) -> None:
    from interviewer.listen import Listener, lexical_coverage
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    reads: list[str] = []
    gate = threading.Event()

    def coverage(text: str, points: Any, question: str) -> list[float]:
        reads.append(text)
        gate.wait(10)  # a slow reading (the sentence model on a busy machine)
        return lexical_coverage(text, points, question)

    listener = Listener(coverage=coverage)
    it = Interview.start(
        Ports(bank=fixture_bank, store=SessionStore(tmp_path / "s.db"), listener=listener),
        ["phone-screen"],
        per_round=1,
    )
    it.advance_all()
    q, level = it.question, it.level
    assert q is not None
    answer = "The serial part bounds the speedup, so with five percent serial work it stays below twenty."
    ahead = ReadAhead(lambda t: it.reading.listen(q, level, it.reading.validate(t)))
    ahead.submit(answer)
    while not reads:
        threading.Event().wait(0.01)
    sent = threading.Thread(target=it.submit, args=(answer,), kwargs={"mode": "spoken"})
    sent.start()  # sent while the same reading is still being made: it waits for that one
    threading.Event().wait(0.2)
    gate.set()
    sent.join(10)
    assert ahead.wait_idle(10) and not sent.is_alive()
    per_read = len(q.why_chain) + 1  # one coverage call per why-step and one for the main question
    assert len(reads) == per_read, reads  # the answer was read once, not twice
    answered = [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "answered"]
    heard = it.reading.listen(q, level, answer)  # the same reading, from memory
    assert heard is not None and answered[-1]["listen"]["kind"] == heard[0].kind
    assert len(reads) == per_read
    ahead.close()


def test_a_voice_failure_keeps_the_text(tmp_path: Path) -> None:
    class Broken:
        def synthesize(self, text: str, out_path: Any) -> Path:
            raise SpeechError("no local voice works")

    out = list(voice_pieces(iter(["One whole sentence here. Two more words."]), Broken(), tmp_path))
    assert out[-1][0] == "One whole sentence here. Two more words."
    assert all(w is None for _, w in out)


# ----------------------------------------------------------------------------------------------- real speech

ANSWER = [
    "The key value cache grows with every generated token.",
    "So on a long context the memory runs out before the compute does.",
    "Paged attention stores it in fixed blocks, which keeps fragmentation low.",
]
QUESTION = "Why does long context decoding run out of memory, and what does paged attention change?"


@pytest.fixture(scope="module")
def spoken_answer() -> tuple[np.ndarray, int]:
    """Three sentences from the piper voice with 400 ms pauses between them, then 1.5 s of silence."""
    tts = PiperTTS(noise_scale=0.0, noise_w_scale=0.0)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        parts = [load_audio(tts.synthesize(s, Path(d) / f"{i}.wav")).samples for i, s in enumerate(ANSWER)]
    gap = np.zeros(400 * MS, np.float32)
    body = np.concatenate([np.zeros(300 * MS, np.float32), parts[0], gap, parts[1], gap, parts[2]])
    return np.concatenate([body, np.zeros(1500 * MS, np.float32)]), len(body)


@pytest.fixture(scope="module")
def vad() -> SileroVAD:
    v = SileroVAD()
    v.load()
    return v


@pytest.mark.slow
def test_silero_ends_the_turn_once_after_real_speech_and_not_in_its_pauses(
    spoken_answer: tuple[np.ndarray, int], vad: SileroVAD
) -> None:
    audio, speech_end = spoken_answer
    stream = vad.stream()
    d = TurnDetector(TurnConfig(end_of_turn_ms=700))
    events = []
    for i in range(0, len(audio) - WINDOW + 1, WINDOW):
        e = d.push(stream(audio[i : i + WINDOW]))
        if e is not None:
            events.append(e)
    kinds = [e.kind for e in events]
    assert kinds.count("end") == 1 and kinds[-1] == "end", kinds
    assert kinds[0] == "start" and kinds.count("pause") >= 2, kinds  # the two 400 ms gaps are pauses
    end = events[-1]
    # The silence it measured starts where the voice stops (piper trails off ~0.1-0.2 s before the samples end).
    assert speech_end - 400 * MS < end.at <= speech_end + WINDOW
    assert events[0].at < 450 * MS  # speech found at its start (300 ms of silence first)


@pytest.fixture(scope="module")
def tiny() -> WhisperSTT:
    stt = WhisperSTT("tiny.en")
    stt.load()
    return stt


def feed_in_real_time_chunks(ans: SpokenAnswer, audio: np.ndarray, seconds: float = 0.25) -> list[str]:
    seen = []
    step = int(seconds * SAMPLE_RATE)
    for i in range(0, len(audio), step):
        u = ans.feed((audio[i : i + step] * 32767).astype(np.int16), SAMPLE_RATE)
        if u.grew:
            seen.append(u.transcript)
        if u.ended:
            break
    return seen


@pytest.mark.slow
def test_the_transcript_grows_phrase_by_phrase_to_the_answer(
    spoken_answer: tuple[np.ndarray, int], vad: SileroVAD, tiny: WhisperSTT
) -> None:
    audio, _ = spoken_answer
    ans = SpokenAnswer(tiny, vad.stream(), context=QUESTION)
    seen = feed_in_real_time_chunks(ans, audio)
    assert ans.ended
    assert len(seen) >= 3, seen  # one growth per sentence at least: it is shown while the candidate speaks
    for a, b in itertools.pairwise(seen):
        assert b.startswith(a + " ")
    assert word_error_rate(" ".join(ANSWER), ans.transcript) < 0.25, ans.transcript


@pytest.mark.slow
def test_partial_transcripts_prefilled_are_prefixes_of_the_follow_up_prompt(
    spoken_answer: tuple[np.ndarray, int], vad: SileroVAD, tiny: WhisperSTT, fixture_bank: Any, tmp_path: Path
) -> None:
    from interviewer.config import load_settings
    from interviewer.llm.client import build_port
    from interviewer.llm.standin import StandinServer
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    def content(m: dict[str, Any]) -> str:
        c = m.get("content", "")
        return c if isinstance(c, str) else ""

    audio, _ = spoken_answer
    with StandinServer(keep_prompts=1000) as server:
        settings = load_settings(data_dir=tmp_path, base_url=server.base_url, timeout=10.0)
        port = build_port(settings, base_url=server.base_url, model="standin")
        assert port.prefiller is not None
        it = Interview.start(
            Ports(bank=fixture_bank, store=SessionStore(tmp_path / "s.db"), model=port, owner="me"),
            ["phone-screen"],
            per_round=1,
        )
        it.advance_all()
        offered: list[str] = []

        def prefill(transcript: str) -> None:
            # Whole phrases are final: the trailing space lets the prefill keep the last word too.
            offered.append(transcript)
            it.prefill(transcript + " ")
            assert port.prefiller is not None and port.prefiller.wait_idle(10)

        q = it.question
        ans = SpokenAnswer(tiny, vad.stream(), context=q.question if q else None, on_partial=prefill)
        feed_in_real_time_chunks(ans, audio)
        assert ans.ended and len(offered) >= 2
        sent_ahead = len(server.stats.prompts)
        it.submit(ans.transcript, mode="spoken")
        it.advance_all()
        prompts = server.stats.prompts
        finals = [p for p in prompts if ans.transcript + "\n</candidate_answer>" in content(p[-1])]
        assert len(finals) == 1
        final_system, final_human = content(finals[0][0]), content(finals[0][-1])
        partial = [p for p in prompts[:sent_ahead] if "<candidate_answer>\n" in content(p[-1])]
        partial = [p for p in partial if content(p[-1]).split("<candidate_answer>\n", 1)[1].strip()]
        assert len(partial) >= 2, "the growing transcript went to the server while the candidate spoke"
        for p in partial:
            assert content(p[0]) == final_system
            assert final_human.startswith(content(p[-1])), "a prefill prompt is not a prefix of the final one"
        # Before the end of the turn the server had read everything but the last phrase.
        longest = max(len(content(p[-1])) for p in partial)
        assert offered[-1] in final_human[:longest]


def test_without_auto_send_a_long_silence_is_a_pause_and_the_answer_goes_on() -> None:
    stt = RecordingSTT(["Part one.", "Part two."])
    ans = SpokenAnswer(stt, energy_vad)
    assert ans.feed(np.concatenate([tone(600), silence(900)])).ended
    ans.continue_turn()
    assert not ans.feed(silence(2000)).ended  # no new speech: nothing ends, nothing is transcribed
    u = ans.feed(np.concatenate([tone(600), silence(900)]))
    assert u.ended and u.transcript == "Part one. Part two." and len(stt.calls) == 2


# ----------------------------------------------------------------------------------------------- the page's handlers


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    from interviewer.config import load_settings
    from interviewer.llm.client import ChatPort
    from interviewer.llm.fake import ScriptedChatModel
    from interviewer.runtime import ModelChoice, Runtime
    from ui.app import App

    from .conftest import FIXTURE_CONTENT

    settings = load_settings(content_dir=FIXTURE_CONTENT, data_dir=tmp_path, retrieval=False)
    rt = Runtime(settings)
    rt.set_model(
        ChatPort(
            ScriptedChatModel().queue("So which assumption about scaling does that number rely on, exactly?"),
            name="scripted test model",
        ),
        ModelChoice("http://127.0.0.1:1/v1", "s", "scripted test model", False),
    )
    try:
        yield App(rt)
    finally:
        rt.close()


@pytest.mark.slow
def test_the_page_streams_the_transcript_ends_the_turn_and_voices_the_reply(
    app: Any, spoken_answer: tuple[np.ndarray, int]
) -> None:
    *_, (_chat, sid, owner, *_rest) = list(app.start("phone-screen", 1, False, None))
    audio, _ = spoken_answer
    pcm = (audio * 32767).astype(np.int16)
    turns, shown, spoken = 0, [], None
    quiet = np.zeros(4000, np.int16)
    chunks = [pcm[i : i + 4000] for i in range(0, len(pcm), 4000)] + [quiet] * 400
    for chunk in chunks:  # 250 ms chunks, as stream_every=0.25 sends them; the microphone stays open
        box, sp, turns, _voice = app.listen((16_000, chunk), "", sid, owner, turns, True)
        if isinstance(box, str):
            shown.append(box)
            spoken = sp
        if turns:
            break
        threading.Event().wait(0.1)  # the handler returns at once; transcription runs on the answer's thread
    listening = app.voice._spoken.get(sid)
    state = listening and (listening.answer.error, listening.answer.seconds, listening.answer._todo.qsize())
    assert turns == 1, f"one end of turn, after the final silence; {shown[-1:]}, {state}"
    assert len(shown) >= 3 and all(b.startswith(a) for a, b in itertools.pairwise(shown))
    assert word_error_rate(" ".join(ANSWER), shown[-1]) < 0.25, shown[-1]
    assert spoken is not None and spoken["transcript"] == shown[-1] and spoken["seconds"] > 5
    # The engine read the transcript as it grew: the answer about to be sent is read already.
    assert listening is not None and listening.ahead.wait_idle(60)
    assert listening.ahead.done and listening.ahead.done[-1] == shown[-1]
    # After the end, the microphone is ignored until the answer is sent.
    assert app.listen((16_000, pcm[:4000]), shown[-1], sid, owner, turns, True)[2] == turns
    outs = list(app.send_if_auto(True, shown[-1], sid, owner, spoken, True, None))
    voices = [o[-2] for o in outs if isinstance(o[-2], str)]
    assert voices and all(Path(v).stat().st_size > 1000 for v in voices)
    assert Path(voices[0]).name == "piece-000.wav"  # the reply voiced a piece at a time
    events = app.rt.store.events(sid)
    answered = [e.payload for e in events if e.kind == "answered"]
    assert answered[-1]["mode"] == "spoken" and answered[-1]["text"] == shown[-1]


@pytest.mark.slow
def test_opening_the_microphone_voices_the_fixed_leads_ahead(app: Any) -> None:
    from interviewer.listen import SPOKEN_LEADS

    assert app.voice._leads is None  # nothing is synthesized before the microphone is first used
    app.voice._warm_listening()  # what mic_start runs in the background
    cache = app.voice._leads
    assert cache is not None and cache.phrases == SPOKEN_LEADS
    deadline = threading.Event()
    for _ in range(600):  # warmed on its own thread
        if all(cache.get(p) is not None for p in SPOKEN_LEADS):
            break
        deadline.wait(0.1)
    import wave

    def seconds(path: Path) -> float:
        with wave.open(str(path)) as w:
            return w.getnframes() / w.getframerate()

    wavs = [cache.get(p) for p in SPOKEN_LEADS]
    assert all(w is not None and seconds(w) > 0.2 for w in wavs)
    assert len({w.read_bytes() for w in wavs if w is not None}) == len(SPOKEN_LEADS)


def test_the_page_handler_never_waits_for_a_transcription() -> None:
    """Gradio drops microphone chunks that arrive while the last one is being handled: feed must not block."""
    from interviewer.speech_stream import BackgroundAnswer

    gate = threading.Event()

    class GatedSTT(RecordingSTT):
        def transcribe_audio(self, audio: Any, **kwargs: Any) -> Any:
            gate.wait(30)
            return super().transcribe_audio(audio, **kwargs)

    stt = GatedSTT(["One.", "Two."])
    bg = BackgroundAnswer(lambda: SpokenAnswer(stt, energy_vad))
    audio = np.concatenate([tone(600), silence(400), tone(600), silence(1000)])
    updates = [bg.feed(audio[i : i + 4000]) for i in range(0, len(audio), 4000)]  # would hang if it blocked
    assert not any(u.ended or u.transcript for u in updates)  # the first phrase is still being transcribed
    gate.set()
    assert bg.finish() == "One. Two." and bg.ended
    assert len(stt.calls) == 2  # both phrases were heard: no chunk was dropped while the first was decoded
    bg.close()


def test_a_recogniser_that_cannot_load_is_reported() -> None:
    from interviewer.speech_stream import BackgroundAnswer

    def make() -> SpokenAnswer:
        raise SpeechError("silero-vad is not installed: pip install 'silero-vad==6.2.3'")

    bg = BackgroundAnswer(make)
    assert bg.finish(5) == "" and isinstance(bg.error, SpeechError)


def test_a_refused_piece_is_not_spoken_and_the_kept_reply_is_spoken_instead(tmp_path: Path) -> None:
    """The model's question leaks the rubric (``vet`` refuses it); the engine then swaps in the authored
    follow-up: the candidate hears the lead and the authored question, never the leaked one."""
    log: list[str] = []
    cache = VoiceCache(RecordingTTS(log), tmp_path / "cache", ["Right."])
    cache.warm()
    log.clear()
    leaked = "Right. Why does the decode step stay bandwidth bound at batch one?"
    kept = "Right. What limits a single request's token rate?"

    def reply() -> Iterator[str]:
        yield "Right."
        toks = leaked.split(" ")
        for i in range(2, len(toks) + 1):
            yield " ".join(toks[:i])
        yield kept  # the engine rejected the model's text and asked the authored follow-up

    out = list(
        voice_pieces(
            reply(), RecordingTTS(log), tmp_path / "r", cache=cache, vet=lambda p: "bandwidth" not in p
        )
    )
    assert out[-1][0] == kept
    spoken = [e for e in log if e.startswith("tts:")]
    assert spoken == ["tts:What limits a single request's token rate?"]  # "Right." came from the cache
    assert len([w for _, w in out if w is not None]) == 2


def test_a_refused_piece_the_engine_kept_is_spoken_once_the_reply_is_complete(tmp_path: Path) -> None:
    """``vet`` is stricter than needed (the engine kept the text): it is spoken at the end, not lost."""
    log: list[str] = []
    text = "First question here is fine. Second one mentions bandwidth, is that all right?"

    def reply() -> Iterator[str]:
        toks = text.split(" ")
        for i in range(1, len(toks) + 1):
            log.append(f"token:{i}")
            yield " ".join(toks[:i])

    out = list(voice_pieces(reply(), RecordingTTS(log), tmp_path, vet=lambda p: "bandwidth" not in p))
    spoken = [e for e in log if e.startswith("tts:")]
    assert spoken == [
        "tts:First question here is fine.",
        "tts:Second one mentions bandwidth, is that all right?",
    ]
    assert log.index(spoken[1]) > log.index(f"token:{len(text.split(' '))}")  # only after the reply ended
    assert out[-1][0] == text


def test_the_interview_says_which_text_leaks_its_rubric(fixture_bank, tmp_path: Path) -> None:
    from interviewer.session import Interview, Ports
    from interviewer.store import SessionStore

    it = Interview.start(Ports(bank=fixture_bank, store=SessionStore(tmp_path / "s.db")), ["phone-screen"])
    it.advance_all()
    q = it.question
    assert q is not None
    assert it.followups.leaks(q.why(1).key_points[0]) or it.followups.leaks(q.model_answer)
    assert not it.followups.leaks("Could you walk me through what you would measure first?")
