"""Send to the first follow-up token: what the listener's wrong-claim reading adds, pasted or typed.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_listen_send.py [--questions 30] [--seed 0] [--cold] [--no-final-stop [--no-pause]]``

The listener reads each answer before the follow-up; with the scorer's ``wrong_claims`` (as the app wires it in
``Runtime.listener``) that reading includes the paraphrase reader (:mod:`interviewer.scoring.paraphrase`), a
MiniLM pass over the answer's clauses. For the strong and the wrong trap answer (tests/data/traps) of a sample
of questions, each answer is sent as the first answer to its question, at the engine (Interview.submit and
Interview.advance, as benchmarks/bench_turn_overhead.py times them, against the stand-in OpenAI-compatible
server with a fixed first-token delay; no retrieval), in six configurations (three listeners, two modes):

- listener: ``shipped`` (claims = the scorer's ``wrong_claims``), ``claims=None`` (the listener does not ask the
  scorer for wrong claims; but the scorer's off-topic rule, which the listener still asks about an answer that
  touches no key point, runs ``wrong_claims`` first, paraphrase reader included), or ``no paraphrase`` (wired as
  shipped, over a scorer whose wrong-claim reading is the clause reader alone, in its off-topic rule too: the
  listener as it was before the paraphrase reader);
- mode: ``pasted`` (sent at once: nothing was read ahead) or ``typed`` (first offered as the page's typing
  handler offers it, ``Interview.prefill`` with the text so far, at every point where it ends a sentence: the
  engine reads the answer ahead there, and the listener remembers the reading; then sent).

Each configuration has its own scorer (its own MiniLM caches, one shared model) and its own listener, so no
configuration reuses another's reading or vectors; the six run in a rotated order per answer, so drift in
the machine's load falls on all of them alike. By default every scorer first reads each sampled question's
reference answer (the rubric's vectors cached, as in a server that has asked the question before); ``--cold``
skips that, and the first answer to each question then embeds its rubric at Send (pasted) or while typed.
``--no-final-stop`` sends every answer without its last full stop, as candidates often type: the text at Send
then ends no sentence, and a typed answer is read whole when the candidate stops typing (the page's typing
pause, ``TYPING_PAUSE_S``); with ``--no-pause`` Send comes first, so its last reading ahead is of its text up
to the previous sentence.

Printed: per configuration (all answers, strong, wrong), the median and p90 of Send -> answer stored (the
listener's reading is in it), of Send -> the first streamed text of the reply (after an answer that got
somewhere, the listener's acknowledgement, "Right.", streams before the model starts) and of Send -> the
follow-up's own first text; per mode, shipped against each other listener (ratios, and the median of the
per-answer differences, overall, per answer kind, and over the answers whose follow-up was the same move: a wrong
claim found is challenged with authored text, which streams at once with no model request); the follow-ups'
moves; the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.bench_turn_overhead import FIRST_TOKEN_DELAY, engine_over, send_and_stream  # noqa: E402
from interviewer.content import Bank, Question  # noqa: E402
from interviewer.engine.ahead import _SENTENCE_END  # noqa: E402
from interviewer.listen import Listener  # noqa: E402
from interviewer.llm.client import ChatPort  # noqa: E402
from interviewer.llm.standin import Behaviour, StandinServer  # noqa: E402
from interviewer.scoring.claims import ContradictionHit, find_contradictions  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from interviewer.scoring.spec import RubricSpec  # noqa: E402
from interviewer.session import Interview, Ports  # noqa: E402
from interviewer.store import SessionStore  # noqa: E402
from tests.support.candidates import pct  # noqa: E402
from tests.support.traps import load_traps  # noqa: E402

LISTENERS = ("shipped", "claims=None", "no paraphrase")
MODES = ("pasted", "typed")


def offers(answer: str) -> list[str]:
    """The texts so far at which the page's typing handler makes the engine read ``answer`` ahead: every
    keystroke offers the text so far, and :meth:`WorkAhead.prefill` reads it where it ends a sentence. The whole
    answer comes last (the text the candidate sees when pressing Send), read or only prefilled."""
    cuts = [answer[: i + 1] for i in range(len(answer) - 1) if _SENTENCE_END.search(answer[: i + 1])]
    return [*cuts, answer]


class ClauseReaderScorer(RubricScorer):
    """The scorer with the paraphrase reader off: a wrong claim only in an authored phrasing (the clause
    reader), in its off-topic rule as well."""

    def _wrong_claims(self, spec: RubricSpec, text: str) -> list[ContradictionHit]:
        return find_contradictions(text, spec.contradictions)


def listener_over(bank: Bank, scorer: RubricScorer, *, claims: bool) -> Listener:
    """The listener as ``Runtime.listener`` wires it, with or without the scorer's wrong-claim reading."""
    return Listener(
        neighbours=list(bank.questions.values()),
        topic=scorer.off_topic,
        claims=scorer.wrong_claims if claims else None,
    )


@dataclass
class Config:
    listener: str  # one of LISTENERS
    mode: str  # "pasted" or "typed"
    ports: Ports
    scorer: RubricScorer
    stored_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    question_ms: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # each answer's kind (strong, wrong), in the order sent
    moves_each: list[str] = field(default_factory=list)  # each answer's follow-up, in the order sent

    @property
    def moves(self) -> Counter[str]:
        return Counter(self.moves_each)

    @property
    def name(self) -> str:
        return f"{self.listener}, {self.mode}"


@dataclass(frozen=True)
class Sent:
    """One Send, in ms from Send: the answer stored (read), the first text streamed (an acknowledgement such as
    "Right." when the listener gives one: it streams before the model starts), the follow-up's own first text."""

    stored: float
    first: float
    question: float
    move: str


def measure(cfg: Config, port: ChatPort, q: Question, answer: str, *, pause: bool = True) -> Sent:
    """One Send of ``answer`` as the first answer to ``q``; typed with a ``pause`` before Send (the page reads
    the text at a typing pause) or without one."""
    it = Interview.start(cfg.ports, [q.round], question_ids=[q.id], per_round=1)
    it.advance_all()
    if cfg.mode == "typed":
        for text in offers(answer):
            it.prefill(text)
        if pause:
            it.prefill(answer, paused=True)  # what the page's typing pauses call once the candidate stops
    prefiller = port.prefiller
    if prefiller is not None:  # the prompt read ahead has reached the server, as by the time Send is pressed
        prefiller.wait_idle()
    stored, snapshots = send_and_stream(it, answer)
    said = next(t for t in reversed(it.state.turns) if t.role == "candidate")
    plan = said.meta.get("plan", {})
    ack = str(plan.get("ack") or "").strip()
    move = f"{plan.get('move', 'none')} ({it.state.turns[-1].meta.get('source', '?')})"
    first = snapshots[0][0] if snapshots else stored
    question = next((s for s, text in snapshots if text.strip() and text.strip() != ack), first)
    return Sent(stored * 1000, first * 1000, question * 1000, move)


def paired(ship: list[float], other: list[float], keep: list[bool]) -> str:
    """The median per-answer difference ``ship`` - ``other`` over the answers kept (ms, signed)."""
    kept = [a - b for a, b, k in zip(ship, other, keep, strict=True) if k]
    return f"{statistics.median(kept):+.0f}" if kept else "n/a"


def compare(ship: Config, other: Config) -> list[str]:
    """Table cells: ``ship`` against ``other`` over the same answers: the ratios of the first text's median and
    p90, then medians of the per-answer differences of the first text (all answers, strong, wrong, those whose
    follow-up was the same in both) and of the reading (strong, wrong)."""
    med = statistics.median
    every = [True] * len(ship.kinds)
    strong = [k == "strong" for k in ship.kinds]
    wrong = [k == "wrong" for k in ship.kinds]
    # A wrong claim found by one reader only is challenged with authored text, streamed with no model request:
    # not the same work after the reading.
    same = [a == b for a, b in zip(ship.moves_each, other.moves_each, strict=True)]
    return [
        f"{med(ship.first_ms) / med(other.first_ms):.2f}",
        f"{pct(ship.first_ms, 90) / pct(other.first_ms, 90):.2f}",
        paired(ship.first_ms, other.first_ms, every),
        paired(ship.first_ms, other.first_ms, strong),
        paired(ship.first_ms, other.first_ms, wrong),
        f"{paired(ship.first_ms, other.first_ms, same)} ({sum(same)})",
        paired(ship.stored_ms, other.stored_ms, strong),
        paired(ship.stored_ms, other.stored_ms, wrong),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--questions", type=int, default=30, help="questions sampled (their strong and wrong answers)"
    )
    ap.add_argument("--seed", type=int, default=0, help="which questions are sampled")
    ap.add_argument("--cold", action="store_true", help="no rubric vectors cached before the first answer")
    ap.add_argument(
        "--no-final-stop",
        action="store_true",
        help="send each answer without its last full stop (typed: its last sentence is never read ahead)",
    )
    ap.add_argument(
        "--no-pause",
        action="store_true",
        help="typed: Send is pressed before a typing pause, so text that ends no sentence is read at Send",
    )
    ap.add_argument(
        "--jsonl", type=Path, default=None, help="write one line per Send (answer, configuration, ms)"
    )
    args = ap.parse_args()
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")
    with (
        StandinServer(behaviour=Behaviour(first_token_delay=FIRST_TOKEN_DELAY)) as srv,
        tempfile.TemporaryDirectory() as d,
    ):
        bank, port = engine_over(srv)
        traps = load_traps()
        ids = sorted(qid for qid in traps if qid in bank.questions)
        sample = random.Random(args.seed).sample(ids, min(args.questions, len(ids)))
        store = SessionStore(Path(d) / "s.sqlite3")
        configs: list[Config] = []
        for name in LISTENERS:
            for mode in MODES:
                kind_of = ClauseReaderScorer if name == "no paraphrase" else RubricScorer
                scorer = kind_of(neighbours=list(bank.questions.values()))
                scorer.warm()
                listener = listener_over(bank, scorer, claims=name != "claims=None")
                ports = Ports(bank=bank, store=store, model=port, listener=listener, owner="bench")
                configs.append(Config(name, mode, ports, scorer))
        if not args.cold:
            for cfg in configs:
                for qid in sample:
                    q = bank.get(qid)
                    cfg.scorer.wrong_claims(q, q.model_answer)
                    cfg.scorer.off_topic(q, q.model_answer)
        # Every configuration once before timing: the first Send of a process pays for imports and warm-ups.
        warm_q = bank.get(sample[0])
        for cfg in configs:
            measure(cfg, port, warm_q, "I would measure it first, then decide.")
        answers: list[tuple[Question, str, str]] = []
        for i, qid in enumerate(sample):
            a = traps[qid].answers
            pair = [("strong", a.strong), ("wrong", a.wrong.text)]
            if args.no_final_stop:
                pair = [(kind, text.rstrip().rstrip(".?!")) for kind, text in pair]
            answers += [(bank.get(qid), kind, text) for kind, text in (pair if i % 2 else pair[::-1])]
        rows: list[dict[str, object]] = []
        started = time.perf_counter()
        for n, (q, kind, text) in enumerate(answers):
            order = configs[n % len(configs) :] + configs[: n % len(configs)]
            for cfg in order:
                sent = measure(cfg, port, q, text, pause=not args.no_pause)
                cfg.stored_ms.append(sent.stored)
                cfg.first_ms.append(sent.first)
                cfg.question_ms.append(sent.question)
                cfg.moves_each.append(sent.move)
                cfg.kinds.append(kind)
                rows.append(
                    {"qid": q.id, "answer": kind, "listener": cfg.listener, "mode": cfg.mode}
                    | {k: round(v, 1) for k, v in vars(sent).items() if k != "move"}
                    | {"move": sent.move}
                )
        took = time.perf_counter() - started
        store.close()
    if args.jsonl is not None:
        args.jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    load = os.getloadavg()
    print(
        f"\n{len(answers)} answers ({len(sample)} questions x strong, wrong), each sent in every configuration; "
        f"rubric vectors {'cold' if args.cold else 'cached'}; "
        f"{'no' if args.no_final_stop else 'with its'} final full stop"
        f"{', Send before a typing pause' if args.no_pause else ''}; stand-in first token {FIRST_TOKEN_DELAY * 1000:.0f} "
        f"ms; {took:.0f} s"
    )
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at end\n")
    print(
        "Send -> stored: the answer read and stored. Send -> first text: the first streamed text of the reply (an "
        "acknowledgement, when the listener gives one, streams first); Send -> follow-up: its own first text.\n"
    )
    print(
        "| listener, mode | answers | Send -> stored p50 (ms) | p90 | Send -> first text p50 (ms) | p90 "
        "| Send -> follow-up p50 (ms) | p90 |\n|---|---|---|---|---|---|---|---|"
    )
    # Per answer kind too: a strong answer touches the rubric's key points and skips the off-topic rule, a wrong
    # one mostly does not, so the two read at very different costs and a median over both falls between them.
    for cfg in configs:
        for kind in ("all", "strong", "wrong"):
            keep = [kind in ("all", k) for k in cfg.kinds]
            cells = [
                f"{statistics.median(kept):.0f} | {pct(kept, 90):.0f}"
                for v in (cfg.stored_ms, cfg.first_ms, cfg.question_ms)
                for kept in [[x for x, k in zip(v, keep, strict=True) if k]]
            ]
            print(f"| {cfg.name} | {kind} | " + " | ".join(cells) + " |")
    print(
        "\n| mode | shipped vs | first text p50 ratio | p90 ratio | first text, paired difference p50 (ms): all "
        "| strong | wrong | same follow-up (n) | reading, paired difference p50 (ms): strong | wrong |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        ship = next(c for c in configs if c.listener == "shipped" and c.mode == mode)
        for other in (c for c in configs if c.listener != "shipped" and c.mode == mode):
            print(f"| {mode} | {other.listener} | " + " | ".join(compare(ship, other)) + " |")
    print("\nfollow-ups (move, source of its text):")
    for cfg in configs:
        print(f"  {cfg.name}: " + ", ".join(f"{m} {k}" for m, k in cfg.moves.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
