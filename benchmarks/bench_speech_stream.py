"""Spoken answers stream (#13): streamed Whisper and VAD cost, and end of speech to the interviewer's voice.

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
  sentence synthesized by piper): the figure the issue targets (median <= 1.5 s);
- Whisper's real-time factor on the streamed phrases and the VAD's cost per second of audio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interviewer.config import load_settings
from interviewer.runtime import Runtime
from interviewer.session import Interview
from interviewer.speech import SAMPLE_RATE, PiperTTS, WhisperSTT, load_audio
from interviewer.speech_stream import SentenceSplitter, SileroVAD, SpokenAnswer, TurnConfig, voice_pieces

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
    work: Path,
    rep: int,
    args: argparse.Namespace,
) -> dict[str, float]:
    audio, speech_end, _ = answer_audio(tts, work, rep, args.seconds)
    it = Interview.start(rt.ports(f"bench-{rep}"), ["inference-deep-dive"], per_round=1)
    it.advance_all()
    port = rt.model()
    if port.prefiller is not None:
        port.prefiller.wait_idle(
            60
        )  # the question's prefetch is in, as it would be while the candidate thinks
    q = it.question
    ans = SpokenAnswer(
        stt,
        vad.stream(),
        TurnConfig(end_of_turn_ms=args.end_of_turn_ms),
        context=q.question if q else None,
        on_partial=lambda t: it.prefill(t + " "),
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
    first_text = first_audio = piece_done = None
    first_piece: list[str] = []
    splitter = SentenceSplitter()  # the same cut as voice_pieces makes: when was the first piece complete?
    for text, wav in voice_pieces(it.advance(), tts, work / f"reply-{rep}"):
        now = time.perf_counter()
        if first_text is None and text:
            first_text = now
        if piece_done is None and (first_piece := splitter.feed(text)):
            piece_done = now
        if wav is not None and first_audio is None:
            first_audio = now  # the rest of the reply streams on; later pieces play after this one
    if piece_done is None:  # the reply was one piece: complete when the text was
        first_piece, piece_done = splitter.flush(), now
    if port.prefiller is not None:
        port.prefiller.wait_idle(60)
    audio_s = len(audio) / SAMPLE_RATE
    return {
        "end_of_turn": ended_at - spoke_until,
        "first_text": (first_text or float("nan")) - ended_at,
        "first_audio": (first_audio or float("nan")) - spoke_until,
        "stt_rtf": ans.stt_seconds / audio_s,
        "vad_ms_per_s": 1000 * ans.vad_seconds / audio_s,
        "audio_s": audio_s,
        "words": len(ans.transcript.split()),
        "first_piece_words": len(first_piece[0].split()) if first_piece else 0,
        "piece_to_audio": (first_audio or float("nan")) - piece_done,
        "text_to_piece": piece_done - (first_text or float("nan")),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model when no --base-url")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each spoken answer")
    ap.add_argument("--end-of-turn-ms", type=int, default=700)
    args = ap.parse_args()

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
    print(
        f"# Spoken answers stream ({os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}); "
        f"model: {port.name}; prefill: {'on' if port.prefiller else 'off'}; end of turn {args.end_of_turn_ms} ms"
    )
    print("$ .venv/bin/python benchmarks/bench_speech_stream.py " + " ".join(sys.argv[1:]))
    rows = []
    for rep in range(args.reps):
        r = one_turn(rt, stt, vad, tts, data, rep, args)
        rows.append(r)
        print(
            f"rep {rep}: {r['audio_s']:.1f} s audio, {r['words']:.0f} words; end of turn {r['end_of_turn']:.2f} s, "
            f"first text +{r['first_text']:.2f} s, first piece ({r['first_piece_words']:.0f} words) complete "
            f"+{r['text_to_piece']:.2f} s, voiced +{r['piece_to_audio']:.2f} s: first audio "
            f"{r['first_audio']:.2f} s after speech; Whisper RTF {r['stt_rtf']:.3f}, "
            f"VAD {r['vad_ms_per_s']:.1f} ms/s",
            flush=True,
        )

    def med(key: str) -> str:
        vals = [r[key] for r in rows]
        return f"{statistics.median(vals):.3f} (min {min(vals):.3f}, max {max(vals):.3f})"

    print()
    print(f"| measure ({args.reps} answers of ~{args.seconds:.0f} s) | median (min, max) |")
    print("|---|---|")
    print(f"| end of speech -> first audio of the interviewer's voice (s) | {med('first_audio')} |")
    print(f"| end of speech -> end of turn detected (s) | {med('end_of_turn')} |")
    print(f"| end of turn -> first follow-up text (s) | {med('first_text')} |")
    print(f"| first text -> first piece (clause or sentence) complete (s) | {med('text_to_piece')} |")
    print(f"| first piece complete -> its audio synthesized (s) | {med('piece_to_audio')} |")
    print(f"| Whisper tiny.en real-time factor, streamed phrases | {med('stt_rtf')} |")
    print(f"| silero VAD cost per second of audio (ms) | {med('vad_ms_per_s')} |")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
