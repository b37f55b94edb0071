"""Offline speech speed and accuracy on a fixed set of synthesized technical answers.

The set is ``tests/fixtures/speech/interview_sentences.json``: 12 answers to ML-systems and C++ questions,
read by the packaged piper voice with its noise switched off (the same WAVs every run) and transcribed back.

- TTS:   seconds to synthesize each answer (models warm), and the real-time factor (compute / audio seconds),
         for piper (the default voice) and espeak-ng (the fallback)
- STT:   word error rate (after lower-casing, dropping punctuation and writing small numbers as digits) and
         real-time factor, without and with the answer's question as Whisper's prompt
- round: a ~10-second spoken answer transcribed, then the interviewer's next question spoken, models warm
         (the language model's turn is not included)

Run: .venv/bin/python benchmarks/bench_speech.py [--models tiny.en base] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from interviewer.speech import EspeakTTS, PiperTTS, WhisperSTT, load_audio, word_error_rate

REPO = Path(__file__).resolve().parents[1]
SET = REPO / "tests" / "fixtures" / "speech" / "interview_sentences.json"

ROUND_QUESTION = "How would you serve a large language model to many users at low latency?"
ROUND_ANSWER = (
    "I would batch requests continuously, keep the KV cache in paged blocks, and quantize the weights to "
    "int8, then scale the replicas on queue length so the first token arrives quickly."
)
NEXT_QUESTION = "Why does paging the KV cache let you fit more requests on one GPU?"


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["tiny.en"], choices=["tiny.en", "base"])
    ap.add_argument("--repeat", type=int, default=1, help="timing repeats of the round trip")
    ap.add_argument("--beam", type=int, default=5)
    args = ap.parse_args()
    items = json.loads(SET.read_text())["items"]
    work = Path(tempfile.mkdtemp(prefix="bench-speech-"))
    print(
        f"# Speech benchmark ({len(items)} answers, {os.cpu_count()} cores, load average at start "
        f"{os.getloadavg()[0]:.1f})"
    )
    print("$ .venv/bin/python benchmarks/bench_speech.py " + " ".join(sys.argv[1:]))
    try:
        # ---- TTS
        piper = PiperTTS(noise_scale=0.0, noise_w_scale=0.0)
        _, piper_load = _timed(piper.load)
        wavs, tts_times, audio_secs = [], [], []
        for i, item in enumerate(items):
            wav, dt = _timed(piper.synthesize, item["answer"], work / f"a{i}.wav")
            wavs.append(wav)
            tts_times.append(dt)
            audio_secs.append(load_audio(wav).seconds)
        esp_times: list[float] = []
        esp_secs: list[float] = []
        if shutil.which("espeak-ng"):
            esp = EspeakTTS()
            for i, item in enumerate(items):
                wav, dt = _timed(esp.synthesize, item["answer"], work / f"e{i}.wav")
                esp_times.append(dt)
                esp_secs.append(load_audio(wav).seconds)
        print("\n## Text-to-speech (per answer, voice loaded)\n")
        print("| voice | load s | median s / answer | max s | audio s (mean) | RTF |")
        print("|---|---:|---:|---:|---:|---:|")
        print(
            f"| piper joe-medium | {piper_load:.2f} | {statistics.median(tts_times):.2f} | {max(tts_times):.2f} "
            f"| {statistics.mean(audio_secs):.1f} | {sum(tts_times) / sum(audio_secs):.3f} |"
        )
        if esp_times:
            print(
                f"| espeak-ng | - | {statistics.median(esp_times):.2f} | {max(esp_times):.2f} "
                f"| {statistics.mean(esp_secs):.1f} | {sum(esp_times) / sum(esp_secs):.3f} |"
            )

        # ---- STT
        print(f"\n## Speech-to-text (Whisper via faster-whisper, int8, beam {args.beam}, piper voice)\n")
        print("| model | load s | prompt | WER mean | WER max | RTF mean | s / answer (median) |")
        print("|---|---:|---|---:|---:|---:|---:|")
        models: dict[str, WhisperSTT] = {}
        for name in args.models:
            stt = WhisperSTT(name, cache_dir=work / "models", beam_size=args.beam)
            _, load_s = _timed(stt.load)
            models[name] = stt
            for with_q in (False, True):
                wers, rtfs, secs = [], [], []
                for item, wav in zip(items, wavs, strict=True):
                    t, dt = _timed(stt.transcribe, wav, context=item["question"] if with_q else None)
                    wers.append(word_error_rate(item["answer"], t.text))
                    rtfs.append(t.rtf)
                    secs.append(dt)
                print(
                    f"| {name} | {load_s:.2f} | {'question' if with_q else 'none'} | {statistics.mean(wers):.3f} "
                    f"| {max(wers):.3f} | {statistics.mean(rtfs):.3f} | {statistics.median(secs):.2f} |"
                )
                load_s = 0.0

        # ---- round trip
        print("\n## Round trip: a spoken answer transcribed, the next question spoken (models warm)\n")
        answer_wav = piper.synthesize(ROUND_ANSWER, work / "round.wav")
        answer_s = load_audio(answer_wav).seconds
        print(f"answer audio: {answer_s:.1f} s, {len(ROUND_ANSWER.split())} words\n")
        print("| model | transcribe s | speak next question s | total s | WER |")
        print("|---|---:|---:|---:|---:|")
        for name, stt in models.items():
            runs = []
            for r in range(args.repeat):
                t, stt_s = _timed(stt.transcribe, answer_wav, context=ROUND_QUESTION)
                _, tts_s = _timed(piper.synthesize, NEXT_QUESTION, work / f"next{r}.wav")
                runs.append((stt_s, tts_s, word_error_rate(ROUND_ANSWER, t.text)))
            stt_s = statistics.median(x[0] for x in runs)
            tts_s = statistics.median(x[1] for x in runs)
            print(f"| {name} | {stt_s:.2f} | {tts_s:.2f} | {stt_s + tts_s:.2f} | {runs[0][2]:.3f} |")
        print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
