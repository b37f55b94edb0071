"""Spoken answers stream: streamed Whisper and VAD cost, and end of speech to the interviewer's voice.

Run: ``.venv/bin/python benchmarks/bench_speech_stream.py [--model qwen2.5-coder-1.5b|smollm2-135m] [--reps 5]``
(or ``--base-url http://127.0.0.1:8000/v1`` for a model server you started on this machine).

Each rep is a ~30-second spoken answer: sentences from a pool (rotated, so no two reps share a prompt the
server has cached), read by the packaged piper voice with its noise off, 350 ms pauses between sentences and
2 s of silence after the last. It is streamed into :class:`SpokenAnswer` in 250 ms chunks **in real time**
(chunk i arrives when its last sample would have been spoken, as the page's ``stream_every=0.25`` sends it),
so the phrase transcriptions and the prefill run while the "candidate" is still talking, as they would live.

Measured per rep:
- ``end of turn``: the last sample of speech -> the detector's end of turn (``INTERVIEWER_END_OF_TURN_MS``
  silence, plus chunking and transcribing the last phrase);
- ``first text``: end of turn -> the follow-up's first streamed text (submit + the server reading the tail);
- ``first audio``: the last sample of speech -> the first WAV of the interviewer's voice (its first clause or
  sentence synthesized by piper), against a target of a median <= 1.5 s;
- Whisper's real-time factor on the streamed phrases and the VAD's cost per second of audio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interviewer.config import load_settings
from interviewer.listen import SPOKEN_LEADS
from interviewer.runtime import Runtime
from interviewer.session import Interview
from interviewer.speech import (
    SAMPLE_RATE,
    Audio,
    PiperTTS,
    Transcript,
    WhisperSTT,
    _prompt,
    load_audio,
    word_error_rate,
)
from interviewer.speech_stream import (
    ReadAhead,
    SentenceSplitter,
    SileroVAD,
    SpokenAnswer,
    TurnConfig,
    VoiceCache,
    voice_pieces,
)

POOL = [
    "Decode reads every weight once per generated token, so at batch one it is bound by memory bandwidth.",
    "Batching requests shares that weight read, which raises throughput until compute becomes the limit.",
    "The key value cache grows with the sequence and the batch, and that memory caps how many requests fit.",
    "Continuous batching lets a finished request leave and a new one join without waiting for the batch.",
    "I would measure time to first token and time per output token separately, at the target request rate.",
    "The tail matters more than the mean here, so I would report the ninety ninth percentile with its load.",
    "Quantizing the weights to eight bits halves the bytes read per token, so decode gets nearly twice as fast.",
    "Paged attention stores the cache in fixed blocks, which keeps fragmentation low when lengths vary.",
    "Speculative decoding drafts a few tokens with a small model and checks them in one pass of the big one.",
    "Prefill is compute bound because every prompt token is processed at once, unlike decode.",
]
# Questions the pool's sentences answer (in part): the turns get the model-written why-follow-ups the target is
# about. ``--drawn`` draws a question per rep instead (most such answers are then redirected as off-topic).
ON_TOPIC = [
    "inference.batching.throughput-vs-latency",
    "inference.batching.decode-bandwidth-bound",
    "inference.batching.continuous-batching",
    "inference.decode.kv-cache-no-q-cache",
    "inference.attention.paged-attention",
    "inference.kv-cache.sizing",
    "inference.decode.speculative-decoding",
    "inference.quant.int4-weight-only",
]
REPO = Path(__file__).resolve().parents[1]
CHUNK_S = 0.25
PAUSE_S = 0.35
TRAIL_S = 2.0


def answer_audio(tts: PiperTTS, work: Path, rep: int, seconds: float) -> tuple[np.ndarray, int, str]:
    """About ``seconds`` of speech from the pool, starting at sentence ``rep``; (audio, speech end, text)."""
    parts: list[np.ndarray] = []
    said: list[str] = []
    total = 0.0
    i = rep
    while total < seconds:
        sentence = POOL[i % len(POOL)]
        wav = tts.synthesize(sentence, work / f"s{i % len(POOL)}.wav")
        samples = load_audio(wav).samples
        parts += [samples, np.zeros(int(PAUSE_S * SAMPLE_RATE), np.float32)]
        said.append(sentence)
        total += len(samples) / SAMPLE_RATE + PAUSE_S
        i += 1
    body = np.concatenate(parts[:-1])
    return np.concatenate([body, np.zeros(int(TRAIL_S * SAMPLE_RATE), np.float32)]), len(body), " ".join(said)


def one_turn(
    rt: Runtime,
    stt: WhisperSTT,
    vad: SileroVAD,
    tts: PiperTTS,
    cache: VoiceCache | None,
    work: Path,
    rep: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    audio, speech_end, _ = answer_audio(tts, work, rep, args.seconds)
    # The same question per rep in every run (listed, or seeded with --drawn), so configurations compare on the
    # same turns.
    ids = None if args.drawn else [ON_TOPIC[rep % len(ON_TOPIC)]]
    it = Interview.start(
        rt.ports(f"bench-{rep}"), ["inference-deep-dive"], per_round=1, seed=rep, question_ids=ids
    )
    it.advance_all()
    port = rt.model()
    if port.prefiller is not None:
        port.prefiller.wait_idle(
            60
        )  # the question's prefetch is in, as it would be while the candidate thinks
    q = it.question
    assert q is not None
    ahead = None
    if not args.no_read_ahead:
        if args.no_speculate:  # read each phrase ahead and prefill the prompt at the level it leads to
            ahead = ReadAhead(lambda t: it.prefill(t + " ") if t else None)
        else:  # as the page does: read and start the follow-up at each pause; speech again drops it
            ahead = ReadAhead(lambda t: it.speculate(t) if t else it.cancel_speculation())

    def partial(t: str) -> None:
        if ahead is None:
            it.prefill(t + " ")  # on the listening thread (it reads the answer at each sentence's end)
        else:
            ahead.submit(t)  # queued only, as the page does: the listening thread keeps up with the audio

    ans = SpokenAnswer(
        stt,
        vad.stream(),
        TurnConfig(end_of_turn_ms=args.end_of_turn_ms, whisper_vad=args.whisper_vad),
        context=q.question,
        on_partial=partial,
        on_resume=(lambda: ahead.submit("")) if ahead is not None and not args.no_speculate else None,
    )
    step = int(CHUNK_S * SAMPLE_RATE)
    pcm = (audio * 32767).astype(np.int16)
    t0 = time.perf_counter()
    ended_at = None
    for n, i in enumerate(range(0, len(pcm), step)):
        due = t0 + (n + 1) * CHUNK_S  # the chunk is complete when its last sample has been spoken
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        if ans.feed(pcm[i : i + step], SAMPLE_RATE).ended:
            ended_at = time.perf_counter()
            break
    if ended_at is None:
        ans.finish()
        ended_at = time.perf_counter()
    spoke_until = t0 + speech_end / SAMPLE_RATE
    it.submit(ans.transcript, mode="spoken")
    read_at = time.perf_counter()
    if ahead is not None:
        ahead.close()
    first_text = first_audio = piece_done = model_audio = None
    lead_s = 0.0
    first_piece: list[str] = []
    leads = cache.phrases if cache is not None else ()
    # The same cut as voice_pieces makes: when was the first piece complete, and which WAV is which piece?
    splitter = SentenceSplitter(leads=leads)
    pieces: list[str] = []
    wavs = 0
    last, last_at = "", 0.0  # the reply's text so far, and when it last changed
    for text, wav in voice_pieces(it.advance(), tts, work / f"reply-{rep}", cache=cache):
        now = time.perf_counter()
        if first_text is None and text:
            first_text = now
        if text != last:
            last, last_at = text, now
        pieces += splitter.feed(text)
        if piece_done is None and pieces:
            first_piece, piece_done = pieces[:1], now
        if wav is not None:
            if first_audio is None:
                first_audio = now  # the rest of the reply streams on; later pieces play after this one
                if pieces and pieces[0] in leads:
                    with wave.open(str(wav)) as w:  # the lead plays this long before the question can
                        lead_s = w.getnframes() / w.getframerate()
            if wavs >= len(pieces):  # voiced after the text was complete: the reply's last piece
                pieces += splitter.flush()
                if piece_done is None:  # the reply was one piece: complete when its text was
                    first_piece, piece_done = pieces[:1], last_at
            if model_audio is None and (wavs >= len(pieces) or pieces[wavs] not in leads):
                model_audio = now  # the first piece past a fixed acknowledgement
            wavs += 1
    if piece_done is None:  # the reply was one piece, never voiced: complete when its text was
        first_piece, piece_done = (pieces + splitter.flush())[:1], last_at
    if port.prefiller is not None:
        port.prefiller.wait_idle(60)
    asked = [e.payload for e in rt.store.events(it.session_id) if e.kind == "asked"][-1]
    answered = [e.payload for e in rt.store.events(it.session_id) if e.kind == "answered"][-1]
    audio_s = len(audio) / SAMPLE_RATE
    nan = float("nan")
    return {
        "end_of_turn": ended_at - spoke_until,
        "read": read_at - ended_at,
        "first_text": (first_text or nan) - read_at,
        "first_audio": (first_audio or nan) - spoke_until,
        "model_audio": (model_audio or nan) - spoke_until,
        # silence between the end of the lead's audio and the question's audio being ready (0: none)
        "gap": max(0.0, model_audio - first_audio - lead_s)
        if lead_s and model_audio and first_audio
        else nan,
        "stt_rtf": ans.stt_seconds / audio_s,
        "vad_ms_per_s": 1000 * ans.vad_seconds / audio_s,
        "audio_s": audio_s,
        "words": len(ans.transcript.split()),
        "first_piece_words": len(first_piece[0].split()) if first_piece else 0,
        "first_piece": first_piece[0] if first_piece else "",
        "piece_to_audio": (first_audio or nan) - piece_done,
        "text_to_piece": piece_done - (first_text or nan),
        "move": str((answered.get("plan") or {}).get("move", "?")),
        "source": str(asked.get("source", "?")),
        "model_first_token": float(asked.get("first_token_s") or nan),  # the engine's own measure
        "read_ahead": len(ahead.done) if ahead is not None else 0,
    }


class _Phrases:
    """A transcriber that keeps each phrase :class:`SpokenAnswer` cuts (and transcribes it as the app does)."""

    def __init__(self, stt: WhisperSTT) -> None:
        self.stt = stt
        self.phrases: list[np.ndarray] = []

    def transcribe_audio(self, audio: Audio, **kwargs: Any) -> Transcript:
        self.phrases.append(audio.samples.copy())
        return self.stt.transcribe_audio(audio, **kwargs)


def _short_window(model: Any, samples: np.ndarray, context: str | None, margin_s: float) -> str:
    """Whisper's encoder on the phrase plus ``margin_s`` of padding instead of a 30 s window (rejected: WER)."""
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    feats = model.feature_extractor(samples)[..., :-1]
    n = min(3000, feats.shape[-1] + int(margin_s * 100))
    n += n % 2
    window = np.zeros((feats.shape[0], n), feats.dtype)
    window[:, : min(n, feats.shape[-1])] = feats[:, :n]
    tok = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")
    prompt_text = _prompt(context)
    previous = tok.encode(" " + prompt_text.strip()) if prompt_text else []
    prompt = model.get_prompt(tok, previous, without_timestamps=True)
    result = model.model.generate(
        model.encode(window),
        [prompt],
        beam_size=1,
        max_length=448,
        suppress_blank=True,
        suppress_tokens=get_suppressed_tokens(tok, [-1]),
    )[0]
    return str(tok.decode([t for t in result.sequences_ids[0] if t < tok.eot]).strip())


def compare_whisper(stt: WhisperSTT, vad: SileroVAD, tts: PiperTTS, work: Path) -> None:
    """Decode time and WER of the streamed phrases under each Whisper option (piper and espeak-ng voices)."""
    import json
    import shutil

    from interviewer.speech import EspeakTTS, _is_noise

    items = json.loads((REPO / "tests" / "fixtures" / "speech" / "interview_sentences.json").read_text())
    answers = [(it["question"], it["answer"]) for it in items["items"]]
    answers.append(("How would you serve a model at low latency?", " ".join(POOL)))
    voices: dict[str, Any] = {"piper": tts}
    if shutil.which("espeak-ng"):
        voices["espeak-ng"] = EspeakTTS()
    sets = []  # (voice, question, reference, phrases)
    for name, voice in voices.items():
        for i, (question, reference) in enumerate(answers):
            speech = load_audio(voice.synthesize(reference, work / f"cmp-{name}-{i}.wav")).samples
            audio = np.concatenate([speech, np.zeros(2 * SAMPLE_RATE, np.float32)])
            rec = _Phrases(stt)
            ans = SpokenAnswer(rec, vad.stream(), context=question)
            step = int(CHUNK_S * SAMPLE_RATE)
            for k in range(0, len(audio), step):
                if ans.feed((audio[k : k + step] * 32767).astype(np.int16)).ended:
                    break
            ans.finish()
            sets.append((name, question, reference, rec.phrases))
    model = stt._load()

    def faster_whisper(vad_filter: bool, without_timestamps: bool) -> Any:
        def run(samples: np.ndarray, context: str | None) -> str:
            segments, _ = model.transcribe(
                samples,
                language="en",
                initial_prompt=_prompt(context),
                beam_size=1,
                vad_filter=vad_filter,
                condition_on_previous_text=False,
                without_timestamps=without_timestamps,
            )
            return " ".join(s.text.strip() for s in segments if not _is_noise(s))

        return run

    variants = {
        "faster-whisper's VAD on each phrase (before)": faster_whisper(True, False),
        "its VAD off (silero already cut the phrase: now)": faster_whisper(False, False),
        "VAD off, without timestamps": faster_whisper(False, True),
        "encoder on the phrase + 2 s, not 30 s": lambda a, c: _short_window(model, a, c, 2.0),
        "encoder on the phrase + 1 s, not 30 s": lambda a, c: _short_window(model, a, c, 1.0),
    }
    n = sum(len(x[3]) for x in sets)
    mean_s = statistics.mean(len(p) / SAMPLE_RATE for x in sets for p in x[3])
    print(f"\n## Whisper options on {n} streamed phrases (mean {mean_s:.1f} s), greedy, tiny.en\n")
    print("| option | decode median (ms) | p90 (ms) | " + " | ".join(f"WER {v}" for v in voices) + " |")
    print("|---|---|---|" + "---|" * len(voices))
    # Interleaved, phrase by phrase, so a change in the machine's load falls on every option alike.
    times: dict[str, list[float]] = {label: [] for label in variants}
    wers: dict[str, dict[str, list[float]]] = {label: {v: [] for v in voices} for label in variants}
    for name, question, reference, phrases in sets:
        said: dict[str, list[str]] = {label: [] for label in variants}
        for samples in phrases:
            for label, run in variants.items():
                context = " ".join(x for x in (question, " ".join(said[label])) if x)
                t0 = time.perf_counter()
                said[label].append(run(samples, context).strip())
                times[label].append(time.perf_counter() - t0)
        for label in variants:
            wers[label][name].append(word_error_rate(reference, " ".join(said[label])))
    for label in variants:
        ts = sorted(times[label])
        cells = " | ".join(f"{statistics.mean(w):.3f}" for w in wers[label].values())
        print(
            f"| {label} | {1000 * statistics.median(ts):.0f} | {1000 * ts[int(0.9 * len(ts))]:.0f} | {cells} |"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model when no --base-url")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each spoken answer")
    ap.add_argument("--end-of-turn-ms", type=int, default=700)
    ap.add_argument("--no-cache", action="store_true", help="synthesize the fixed leads on demand")
    ap.add_argument(
        "--no-speculate", action="store_true", help="read ahead only; do not start the follow-up at pauses"
    )
    ap.add_argument("--no-read-ahead", action="store_true", help="read the answer only once it is sent")
    ap.add_argument("--whisper-vad", action="store_true", help="faster-whisper's VAD on each phrase too")
    ap.add_argument(
        "--drawn",
        action="store_true",
        help="draw an inference question per rep (seeded) instead of one the spoken answer is about",
    )
    ap.add_argument(
        "--before",
        action="store_true",
        help="the untuned path: --no-cache, --no-speculate, --no-read-ahead and --whisper-vad together",
    )
    ap.add_argument(
        "--compare-whisper",
        action="store_true",
        help="only Whisper's options on the streamed phrases: decode time and WER (no model server)",
    )
    args = ap.parse_args()
    if args.compare_whisper:
        stt, vad, tts = WhisperSTT("tiny.en"), SileroVAD(), PiperTTS(noise_scale=0.0, noise_w_scale=0.0)
        stt.load()
        vad.load()
        print(
            f"# Whisper options for streamed phrases ({os.cpu_count()} cores, load average at start "
            f"{os.getloadavg()[0]:.1f})"
        )
        print("$ .venv/bin/python benchmarks/bench_speech_stream.py " + " ".join(sys.argv[1:]))
        compare_whisper(stt, vad, tts, Path(tempfile.mkdtemp(prefix="bench-whisper-options-")))
        return 0
    if args.before:
        args.no_cache = args.no_read_ahead = args.whisper_vad = args.no_speculate = True

    data = Path(tempfile.mkdtemp(prefix="bench-speech-stream-"))
    settings = load_settings(
        data_dir=data, base_url=args.base_url, embedded_model=args.model, retrieval=False
    )
    rt = Runtime(settings)
    port = rt.model(lambda m: print("  model:", m, file=sys.stderr))
    stt, vad, tts = WhisperSTT("tiny.en"), SileroVAD(), PiperTTS(noise_scale=0.0, noise_w_scale=0.0)
    stt.load()
    vad.load()
    tts.load()
    rt.listener()
    warm = getattr(rt.scorer(), "warm", None)
    if callable(warm):
        warm()  # the app warms the sentence model at start-up; a first answer would wait for it here
    cache = None
    if not args.no_cache:
        cache = VoiceCache(tts, data / "voice-cache", SPOKEN_LEADS)
        cache.warm()
    print(
        f"# Spoken answers stream ({os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}); "
        f"model: {port.name}; prefill: {'on' if port.prefiller else 'off'}; end of turn {args.end_of_turn_ms} ms; "
        f"cached leads: {'off' if cache is None else 'on'}; read ahead: {'off' if args.no_read_ahead else 'on'}; "
        f"Whisper's own VAD per phrase: {'on' if args.whisper_vad else 'off'}"
    )
    print("$ .venv/bin/python benchmarks/bench_speech_stream.py " + " ".join(sys.argv[1:]))
    rows = []
    for rep in range(args.reps):
        r = one_turn(rt, stt, vad, tts, cache, data, rep, args)
        rows.append(r)
        print(
            f"rep {rep}: {r['audio_s']:.1f} s audio, {r['words']:.0f} words, move {r['move']} ({r['source']}), "
            f"{r['read_ahead']} partials read ahead, model's first token {r['model_first_token']:.2f} s; end of turn {r['end_of_turn']:.2f} s, read "
            f"+{r['read']:.2f} s, first text +{r['first_text']:.2f} s, first piece {r['first_piece']!r} complete "
            f"+{r['text_to_piece']:.2f} s, voiced +{r['piece_to_audio']:.2f} s: first audio "
            f"{r['first_audio']:.2f} s after speech, past the lead {r['model_audio']:.2f} s; "
            f"Whisper RTF {r['stt_rtf']:.3f}, VAD {r['vad_ms_per_s']:.1f} ms/s; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )

    def med(key: str) -> str:
        vals = [r[key] for r in rows if r[key] == r[key]]  # NaN: that rep had no such moment
        if not vals:
            return "n/a"
        return f"{statistics.median(vals):.3f} (min {min(vals):.3f}, max {max(vals):.3f}; n={len(vals)})"

    print()
    print(f"| measure ({args.reps} answers of ~{args.seconds:.0f} s) | median (min, max) |")
    print("|---|---|")
    print(f"| end of speech -> first audio of the interviewer's voice (s) | {med('first_audio')} |")
    print(f"| end of speech -> first audio past a fixed acknowledgement (s) | {med('model_audio')} |")
    print(f"| silence after a lead before the question is ready to play (s) | {med('gap')} |")
    print(f"| end of speech -> end of turn detected (s) | {med('end_of_turn')} |")
    print(f"| end of turn -> the answer read (submit) (s) | {med('read')} |")
    print(f"| answer read -> first follow-up text (s) | {med('first_text')} |")
    print(f"| the model's first token, when the model was asked (s) | {med('model_first_token')} |")
    print(f"| first text -> first piece (lead, clause or sentence) complete (s) | {med('text_to_piece')} |")
    print(f"| first piece complete -> its audio ready (s) | {med('piece_to_audio')} |")
    print(f"| Whisper tiny.en real-time factor, streamed phrases | {med('stt_rtf')} |")
    print(f"| silero VAD cost per second of audio (ms) | {med('vad_ms_per_s')} |")
    print(f"speculation: {getattr(port, 'speculation_stats', None)}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
