"""Send to the first follow-up token: what the listener's wrong-claim reading adds, pasted or typed.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_listen_send.py [--questions 30] [--seed 0] [--cold]``

The listener reads each answer before the follow-up; with the scorer's ``wrong_claims`` (as the app wires it in
``Runtime.listener``) that reading includes the paraphrase reader (:mod:`interviewer.scoring.paraphrase`), a
MiniLM pass over the answer's clauses. For the strong and the wrong trap answer (tests/data/traps) of a sample
of questions, each answer is sent as the first answer to its question, at the engine (Interview.submit and
Interview.advance, as benchmarks/bench_turn_overhead.py times them, against the stand-in OpenAI-compatible
server with a fixed first-token delay; no retrieval), in four configurations:

- listener: ``shipped`` (claims = the scorer's ``wrong_claims``) or ``without`` (claims = None: the paraphrase
  reader off; the clause and word readers and the scorer's off-topic rule stay);
- mode: ``pasted`` (sent at once: nothing was read ahead) or ``typed`` (first offered as the page's typing
  handler offers it, ``Interview.prefill`` with the text so far, at every point where it ends a sentence: the
  engine reads the answer ahead there, and the listener remembers the reading; then sent).

Each configuration has its own scorer (its own MiniLM caches, one shared model) and its own listener, so no
configuration reuses another's reading or vectors; the four run in a rotated order per answer, so drift in
the machine's load falls on all of them alike. By default every scorer first reads each sampled question's
reference answer (the rubric's vectors cached, as in a server that has asked the question before); ``--cold``
skips that, and the first answer to each question then embeds its rubric at Send (pasted) or while typed.

Printed: per configuration, the median and p90 of Send -> answer stored (the listener's reading is in it) and
of Send -> first streamed token of the follow-up; per mode, shipped / without; the follow-ups' moves (a wrong
claim found is challenged with authored text, which streams at once, with no model request); the load average.
"""

from __future__ import annotations

import argparse
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

from benchmarks.bench_turn_overhead import FIRST_TOKEN_DELAY, engine_over, send_to_first_token  # noqa: E402
from interviewer.content import Bank, Question  # noqa: E402
from interviewer.engine.ahead import _SENTENCE_END  # noqa: E402
from interviewer.listen import Listener  # noqa: E402
from interviewer.llm.client import ChatPort  # noqa: E402
from interviewer.llm.standin import Behaviour, StandinServer  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from interviewer.session import Interview, Ports  # noqa: E402
from interviewer.store import SessionStore  # noqa: E402
from tests.support.candidates import pct  # noqa: E402
from tests.support.traps import load_traps  # noqa: E402

LISTENERS = ("shipped", "without")
MODES = ("pasted", "typed")


def offers(answer: str) -> list[str]:
    """The texts so far at which the page's typing handler makes the engine read ``answer`` ahead: every
    keystroke offers the text so far, and :meth:`WorkAhead.prefill` reads it where it ends a sentence. The whole
    answer comes last (the text the candidate sees when pressing Send), read or only prefilled."""
    cuts = [answer[: i + 1] for i in range(len(answer) - 1) if _SENTENCE_END.search(answer[: i + 1])]
    return [*cuts, answer]


def listener_over(bank: Bank, scorer: RubricScorer, *, claims: bool) -> Listener:
    """The listener as ``Runtime.listener`` wires it, with or without the scorer's wrong-claim reading."""
    return Listener(
        neighbours=list(bank.questions.values()),
        topic=scorer.off_topic,
        claims=scorer.wrong_claims if claims else None,
    )


@dataclass
class Config:
    listener: str  # "shipped" or "without"
    mode: str  # "pasted" or "typed"
    ports: Ports
    scorer: RubricScorer
    stored_ms: list[float] = field(default_factory=list)
    first_ms: list[float] = field(default_factory=list)
    moves_each: list[str] = field(default_factory=list)  # each answer's follow-up, in the order sent

    @property
    def moves(self) -> Counter[str]:
        return Counter(self.moves_each)

    @property
    def name(self) -> str:
        return f"{self.listener}, {self.mode}"


def measure(cfg: Config, port: ChatPort, q: Question, answer: str) -> tuple[float, float, str]:
    """One Send of ``answer`` as the first answer to ``q``: (ms to stored, ms to first token, the move)."""
    it = Interview.start(cfg.ports, [q.round], question_ids=[q.id], per_round=1)
    it.advance_all()
    if cfg.mode == "typed":
        for text in offers(answer):
            it.prefill(text)
    prefiller = port.prefiller
    if prefiller is not None:  # the prompt read ahead has reached the server, as by the time Send is pressed
        prefiller.wait_idle()
    stored, first = send_to_first_token(it, answer)
    said = next(t for t in reversed(it.state.turns) if t.role == "candidate")
    move = str(said.meta.get("plan", {}).get("move", "none"))
    source = str(it.state.turns[-1].meta.get("source", "?"))
    return stored * 1000, first * 1000, f"{move} ({source})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--questions", type=int, default=30, help="questions sampled (their strong and wrong answers)"
    )
    ap.add_argument("--seed", type=int, default=0, help="which questions are sampled")
    ap.add_argument("--cold", action="store_true", help="no rubric vectors cached before the first answer")
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
                scorer = RubricScorer(neighbours=list(bank.questions.values()))
                scorer.warm()
                listener = listener_over(bank, scorer, claims=name == "shipped")
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
            answers += [(bank.get(qid), kind, text) for kind, text in (pair if i % 2 else pair[::-1])]
        started = time.perf_counter()
        for n, (q, _kind, text) in enumerate(answers):
            order = configs[n % len(configs) :] + configs[: n % len(configs)]
            for cfg in order:
                stored, first, move = measure(cfg, port, q, text)
                cfg.stored_ms.append(stored)
                cfg.first_ms.append(first)
                cfg.moves_each.append(move)
        took = time.perf_counter() - started
        store.close()
    load = os.getloadavg()
    print(
        f"\n{len(answers)} answers ({len(sample)} questions x strong, wrong), each sent in every configuration; "
        f"rubric vectors {'cold' if args.cold else 'cached'}; stand-in first token {FIRST_TOKEN_DELAY * 1000:.0f} "
        f"ms; {took:.0f} s"
    )
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at end\n")
    print(
        "| listener, mode | Send -> stored p50 (ms) | p90 | Send -> first token p50 (ms) | p90 |\n"
        "|---|---|---|---|---|"
    )
    for cfg in configs:
        s, f = cfg.stored_ms, cfg.first_ms
        print(
            f"| {cfg.name} | {statistics.median(s):.0f} | {pct(s, 90):.0f} | "
            f"{statistics.median(f):.0f} | {pct(f, 90):.0f} |"
        )
    print(
        "\n| mode | stored p50 shipped / without | first token p50 shipped / without | p90 shipped / without "
        "| first token, paired difference p50 (ms) | same follow-up in both: n, paired difference p50 (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for mode in MODES:
        ship, off = (next(c for c in configs if c.listener == n and c.mode == mode) for n in LISTENERS)
        diff = [a - b for a, b in zip(ship.first_ms, off.first_ms, strict=True)]
        # A wrong claim found only with the paraphrase reader is challenged with authored text, streamed with no
        # model request: those answers' follow-ups are not the same work, so they are left out here.
        same = [d for d, a, b in zip(diff, ship.moves_each, off.moves_each, strict=True) if a == b]
        ratio = statistics.median(ship.stored_ms) / statistics.median(off.stored_ms)
        print(
            f"| {mode} | {ratio:.2f} | "
            f"{statistics.median(ship.first_ms) / statistics.median(off.first_ms):.2f} | "
            f"{pct(ship.first_ms, 90) / pct(off.first_ms, 90):.2f} | {statistics.median(diff):+.0f} | "
            f"{len(same)}, {statistics.median(same) if same else float('nan'):+.0f} |"
        )
    print("\nfollow-ups (move, source of its text):")
    for cfg in configs:
        print(f"  {cfg.name}: " + ", ".join(f"{m} {k}" for m, k in cfg.moves.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
