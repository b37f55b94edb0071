"""Time from Send to the first follow-up token, with and without prefill while typing.

Run: ``.venv/bin/python benchmarks/bench_prefill.py [--model qwen2.5-coder-1.5b] [--reps 3] [--sessions 1 2 4]``
(or ``--base-url http://127.0.0.1:8000/v1`` for a server you started; prefill is only sent to loopback servers).

For answers of about 30, 150 and 300 tokens, typed at a human pace (the page sends the answer so far every
few words; a typist is far slower than the server reads, so the benchmark lets each prefill finish before the
next words arrive), it measures the engine's own time to the first streamed follow-up token after Send:

- ``prefetch only``: no prefill while typing (only the prompt up to the answer is cached, at question time);
- ``prefill``: the prompt with the answer so far, up to its last word, is cached while typing;
- ``bare tail``: the bare server, prompt cached up to the same point, streaming the final prompt: the floor.

Then 1, 2 and 4 sessions pressing Send at the same moment (each having typed a 150-token answer with prefill).
Prints a table; run on an idle machine for figures, and state `uptime` beside them.

``--deepen``: answers that already cover the first why's target, so the listener skips to the second (a
"deepen", whose prompt names level 2 before the answer). Times Send -> the model's first token (past the fixed
acknowledgement) when prefill guesses the next level without reading the answer (``guess``) and when it reads
the answer at its sentence ends (``read``), with the bare server reading the same tail as the latter.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import interviewer.session as session_mod
from interviewer.config import load_settings
from interviewer.llm.client import ChatPort
from interviewer.runtime import Runtime
from interviewer.session import Interview

SENTENCES = [
    "Decode reads every weight once per generated token, so at batch one it is limited by memory bandwidth.",
    "Batching several requests shares that weight read, which raises throughput until compute becomes the limit.",
    "The KV cache grows with sequence length and batch size, and that memory caps how many requests fit at once.",
    "Continuous batching lets a finished request leave and a new one join without waiting for the whole batch.",
    "I would measure time to first token and time per output token separately, at the target request rate.",
    "The tail matters more than the mean here, so I would report p50 and p99 with the load that produced them.",
]
TOKENS_PER_WORD = 1.35  # Qwen's tokenizer on this kind of English, measured on these sentences
CHUNK_WORDS = 6  # the page sends the answer so far about every six words


def answer_of(tokens: int, start: int = 0) -> str:
    """About ``tokens`` tokens of answer; ``start`` rotates the sentences, so sessions answer differently."""
    words: list[str] = []
    i = start
    while len(words) * TOKENS_PER_WORD < tokens:
        words += SENTENCES[i % len(SENTENCES)].split()
        i += 1
    return " ".join(words[: int(tokens / TOKENS_PER_WORD)]).rstrip(",") + "."


def first_token_after_send(it: Interview, answer: str) -> float:
    it.submit(answer)
    start = time.perf_counter()
    for _ in it.advance():
        return time.perf_counter() - start
    return float("nan")


def finish_followup(it: Interview) -> None:
    for _ in it.advance():
        pass


def start_interview(rt: Runtime, owner: str) -> Interview:
    it = Interview.start(rt.ports(owner), ["inference-deep-dive"], per_round=1)
    it.advance_all()
    return it


def type_answer(it: Interview, port: ChatPort, answer: str) -> None:
    """Type ``answer``: the page offers the text so far every few words, and the whole text as it stands once
    the last word is typed (an input event fires on every edit). Prefill cuts at the last space, so what the
    server holds before Send is everything but the last word: the tail Send pays for is that word + the suffix."""
    words = answer.split()
    offers = [" ".join(words[:n]) + " " for n in range(CHUNK_WORDS, len(words), CHUNK_WORDS)] + [answer]
    for text in offers:
        it.prefill(text)
        if port.prefiller is not None:
            port.prefiller.wait_idle(60)


def bare_tail(port: ChatPort, cached: list[BaseMessage], final: list[BaseMessage]) -> float:
    port.model.bind(max_tokens=1).invoke(cached)
    start = time.perf_counter()
    for _ in port.stream(final):
        return time.perf_counter() - start
    return float("nan")


def first_model_token_after_send(it: Interview, answer: str) -> float:
    """Send -> the first text past the fixed acknowledgement the engine yields before the model's question
    (the clock includes submit: the listener's reading, unless prefill made it ahead)."""
    start = time.perf_counter()
    it.submit(answer)
    lead: str | None = None
    for text in it.advance():
        if lead is None:
            lead = text
            continue
        if len(text) > len(lead):
            return time.perf_counter() - start
    return float("nan")


def last_asked(it: Interview) -> dict[str, Any]:
    return [e.payload for e in it.ports.store.events(it.session_id) if e.kind == "asked"][-1]


def deepen_cases(rt: Runtime, n: int) -> list[tuple[str, str]]:
    """``n`` (question id, answer) pairs whose answer the listener reads as a deepen: the question's key points
    and its first why's key points, one sentence each."""
    out: list[tuple[str, str]] = []
    for q in rt.bank.questions.values():
        if q.round != "inference-deep-dive" or len(q.why_chain) < 2 or q.coding_task:
            continue
        sentences = [*q.key_points, *q.why(1).key_points]
        answer = " ".join(s.rstrip(".") + "." for s in sentences)
        it = Interview.start(rt.ports(f"probe-{q.id}"), [q.round], question_ids=[q.id])
        it.advance_all()
        heard = it.reading.listen(q, 0, answer)
        if heard is not None and heard[1].move == "deepen":
            out.append((q.id, answer[:1].upper() + answer[1:]))
        if len(out) == n:
            break
    return out


def read_cost(rt: Runtime, reps: int, qid: str) -> None:
    """What prefill's reading at a sentence's end costs the typing handler: the listener on a new text."""
    it = Interview.start(rt.ports("read-cost"), ["inference-deep-dive"], question_ids=[qid])
    it.advance_all()
    for i in range(3):
        it.ahead.read_ahead(f"{answer_of(150)} Warm-up {i}.")  # the embedder is loaded and warm
    print(f"{'reading the text so far':<36}{'median':>10}{'max':>8}")
    for tokens in (30, 150, 300):
        times = []
        for rep in range(reps):
            text = f"{answer_of(tokens, start=rep)} Case {tokens}-{rep}."  # never read before
            start = time.perf_counter()
            it.ahead.read_ahead(text)
            times.append(time.perf_counter() - start)
        print(
            f"{f'{tokens}-token answer':<36}{statistics.median(times) * 1000:>8.0f}ms{max(times) * 1000:>6.0f}ms"
        )


def deepen(rt: Runtime, port: ChatPort, reps: int) -> int:
    assert port.prefiller is not None
    cases = deepen_cases(rt, reps)
    if not cases:
        print("no question in the bank reads as a deepen with its own key points", file=sys.stderr)
        return 1
    guess: list[float] = []
    read: list[float] = []
    bare: list[float] = []
    real_end = session_mod._SENTENCE_END
    for i, (qid, answer) in enumerate(cases):
        # "read" and its bare measure first: a server without a pinned slot (the bare request) picks the slot
        # holding the most of its prompt, and the "guess" session's slot would hold the whole final prompt.
        for label, times in (("read", read), ("guess", guess)):
            # "guess": prefill never reads the answer ahead (no text ends a sentence), so it names the next level.
            session_mod._SENTENCE_END = real_end if label == "read" else re.compile(r"(?!)")
            try:
                it = Interview.start(
                    rt.ports(f"deepen-{label}-{i}"), ["inference-deep-dive"], question_ids=[qid]
                )
                it.advance_all()
                port.prefiller.wait_idle(60)
                type_answer(it, port, answer)
                q = it.question
                assert q is not None
                cached = it.ahead.prefill_messages(answer) or []
                times.append(first_model_token_after_send(it, answer))
                final = it.followups.messages(q, it.level)
                finish_followup(it)
                asked = last_asked(it)
                assert asked.get("move") == "deepen", (
                    asked
                )  # its source may be "fallback": a reply that leaked
                port.prefiller.wait_idle(60)
                if label == "read":
                    bare.append(bare_tail(port, cached, final))
            finally:
                session_mod._SENTENCE_END = real_end
        print(
            f"  {qid}: guess {guess[-1]:.2f} s, read {read[-1]:.2f} s, bare {bare[-1]:.2f} s", file=sys.stderr
        )
    print()
    print(f"{'deepen: Send -> first model token':<36}{'median':>10}{'min':>8}{'max':>8}")
    for name, xs in (
        ("prefill guesses the next level", guess),
        ("prefill reads at sentence ends", read),
        ("bare server, same tail as read", bare),
    ):
        print(f"{name:<36}{statistics.median(xs):>9.2f}s{min(xs):>7.2f}s{max(xs):>7.2f}s")
    print(f"read / bare: {statistics.median(read) / statistics.median(bare):.2f}x ({len(cases)} questions)")
    print()
    read_cost(rt, reps, cases[0][0])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model when no --base-url")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lengths", type=int, nargs="*", default=[30, 150, 300])
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--deepen", action="store_true", help="only the deepen comparison (see above)")
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="bench-prefill-"))
    settings = load_settings(
        data_dir=data,
        base_url=args.base_url,
        embedded_model=args.model,
        retrieval=False,
        max_tokens=48,
        # The model-phrased follow-up is what prefill speeds up: the listener's authored moves (a hint, a
        # redirect) need no model, and the background judge would compete with the timed reply. A deepen is
        # the listener's move, so --deepen keeps it.
        listen=args.deepen,
        judge=False,
    )
    rt = Runtime(settings)
    port = rt.model(lambda m: print("  model:", m, file=sys.stderr))
    if port.prefiller is None:
        print("prefill is off for this server (not on loopback): nothing to compare", file=sys.stderr)
        return 1
    print(f"model: {port.name}")
    if args.deepen:
        code = deepen(rt, port, args.reps)
        rt.close()
        return code
    rows: list[tuple[str, float, float, float]] = []
    for tokens in args.lengths:
        answer = answer_of(tokens)
        plain, pre, bare = [], [], []
        for rep in range(args.reps):
            it = start_interview(rt, f"plain-{tokens}-{rep}")
            port.prefiller.wait_idle(60)  # the question's prefetch is in
            plain.append(first_token_after_send(it, answer))
            finish_followup(it)
            port.prefiller.wait_idle(60)

            it = start_interview(rt, f"prefill-{tokens}-{rep}")
            port.prefiller.wait_idle(60)
            type_answer(it, port, answer)
            q, level = it.question, it.level
            assert q is not None
            # The bare server caches exactly what the app's last prefill sent, so both read the same tail.
            cached = it.ahead.prefill_messages(answer) or []
            pre.append(first_token_after_send(it, answer))
            final = it.followups.messages(q, level + 1)
            finish_followup(it)
            port.prefiller.wait_idle(60)
            bare.append(bare_tail(port, cached, final))
        rows.append(
            (
                f"{tokens}-token answer",
                statistics.median(plain),
                statistics.median(pre),
                statistics.median(bare),
            )
        )

    print()
    print(
        f"{'first follow-up token after Send (median)':<30}{'prefetch only':>16}{'prefill':>12}{'bare tail':>12}{'prefill/bare':>14}"
    )
    for name, a, b, c in rows:
        print(f"{name:<30}{a:>15.2f}s{b:>11.2f}s{c:>11.2f}s{b / c:>13.2f}x")

    print()
    print(f"{'sessions sending at once':<30}{'median':>10}{'max':>10}")
    # Each candidate types a different answer (as in life): identical prompts would all match one server slot.
    answers = [answer_of(150, start=i) for i in range(max(args.sessions, default=1))]
    for n in args.sessions:
        its = [start_interview(rt, f"conc-{n}-{i}") for i in range(n)]
        port.prefiller.wait_idle(60)
        for it, answer in zip(its, answers, strict=False):
            type_answer(it, port, answer)
        times: list[float] = []
        lock = threading.Lock()

        def go(it: Interview, answer: str, times: list[float] = times, lock: threading.Lock = lock) -> None:
            t = first_token_after_send(it, answer)
            with lock:
                times.append(t)
            finish_followup(it)

        threads = [threading.Thread(target=go, args=(it, a)) for it, a in zip(its, answers, strict=False)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        port.prefiller.wait_idle(60)
        print(f"{n:<30}{statistics.median(times):>9.2f}s{max(times):>9.2f}s")
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
