"""Does the interviewer listen? Scripted candidate personas over the bank, against a model, scored per move.

Personas (each answers one question of a round, then keeps going until the question is done):
- strong:      the model answer plus the why-1 key points, so the why-1 target is already covered
               -> right when why 1 is not asked (it goes deeper: why 2, a push step, or the next question);
               then the why-2 key points -> right when a push step follows (if the question has one)
- wrong:       asserts the rubric's classic wrong claim, as the rubric phrases it ("wrong") and in the
               claim's own words ("wrong-paraphrase") -> right when challenged
- idk:         "I don't know." -> right when given the authored hint (or, with none, asked for a best guess)
- off-topic:   talks about sprint rituals, or a weekend's painting -> right when redirected
- asks-back:   a clarifying question -> right when answered without advancing the turn
- terse:       "It depends." -> right when asked to expand

Every interviewer follow-up is also checked for leaks: a 5-word run shared with the rubric's private wording
(key points, model answer, why-targets, push key points, wrong claims), beyond the question's own words, the
authored shown texts and the candidate's words (``leak``), and a stricter count that allows only the question and
the candidate's words (``strict``). Reading an answer is timed (it runs before the follow-up is generated).

Run:
    .venv/bin/python benchmarks/bench_listen.py --model fake                 # a scripted, leaky fake model
    (the scorer's off-topic rule, as the app uses; --lexical for the reader's own word-overlap rule)
    .venv/bin/python benchmarks/bench_listen.py --model embedded --per-round 1
    .venv/bin/python benchmarks/bench_listen.py --model http://127.0.0.1:8000/v1 [--model-name NAME]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from interviewer import listen  # noqa: E402
from interviewer.config import load_settings  # noqa: E402
from interviewer.content import Question, load_bank  # noqa: E402
from interviewer.content.models import Round  # noqa: E402
from interviewer.llm.client import ChatPort, build_port, list_models  # noqa: E402
from interviewer.llm.fake import ScriptedChatModel, leaky_followup  # noqa: E402
from interviewer.session import Interview, Ports  # noqa: E402
from interviewer.store import SessionStore  # noqa: E402

OFF_TOPIC = (
    "At my last job we tracked everything in Jira, ran two-week sprints and held standups every morning.",
    "I spent the weekend repainting my kitchen; we chose a pale green and it took three coats to cover.",
)
ASKS_BACK = (
    "Do you mean prefill or decode?",
    "Before I answer: what scale should I assume, and is latency or throughput the priority here?",
)
MAX_TURNS = 10


def personas(q: Question) -> dict[str, list[str]]:
    """Each persona's answers, in order (the last one repeats until the question is done)."""
    w1, w2 = q.why(1), q.why(2)
    strong_main = f"{q.model_answer.strip()} {' '.join(k.rstrip('.') + '.' for k in w1.key_points)}"
    out: dict[str, list[str]] = {
        "strong": [
            strong_main,
            " ".join(k.rstrip(".") + "." for k in w2.key_points),
            " ".join(k.rstrip(".") + "." for p in q.push[:1] for k in p.key_points) or "That is all.",
        ],
        "idk": ["I don't know.", "Sorry, still no idea.", "I don't know."],
        "off-topic": [OFF_TOPIC[0], OFF_TOPIC[1], "I'd rather not say more."],
        "off-topic-2": [OFF_TOPIC[1], OFF_TOPIC[0], "I'd rather not say more."],
        "asks-back": [ASKS_BACK[0], q.model_answer, "Fine."],
        "asks-back-2": [ASKS_BACK[1], q.model_answer, "Fine."],
        "terse": ["It depends.", "Yes, probably.", "Maybe."],
    }
    if q.contradictions:
        c = q.contradictions[0]
        out["wrong"] = [f"I'm confident about this one: {c.any_of[0]}.", q.model_answer, "OK."]
        out["wrong-paraphrase"] = [f"To be clear, {c.claim.rstrip('.')}.", q.model_answer, "OK."]
    return out


EXPECT = {
    "strong": "deepened (covered why-1 target not re-asked)",
    "wrong": "challenged (rubric phrasing)",
    "wrong-paraphrase": "challenged (claim in other words)",
    "idk": "hinted (or invited to guess when no hint is authored)",
    "off-topic": "redirected",
    "off-topic-2": "redirected",
    "asks-back": "answered (clarifying question, turn not advanced)",
    "asks-back-2": "answered (clarifying question, turn not advanced)",
    "terse": "asked to expand",
}


def strict_leak(text: str, q: Question, said: list[str]) -> str | None:
    """Like listen.leak, but only the question's own words and the candidate's are allowed."""
    grams = {g for g in listen._ngrams(text) if listen._telling(g)}
    for t in (q.question, *q.variants, *said):
        grams -= listen._ngrams(t)
    for src in listen.rubric_texts(q):
        common = grams & listen._ngrams(src)
        if common:
            return " ".join(sorted(common)[0])
    return None


def run_persona(
    ports: Ports,
    q: Question,
    name: str,
    answers: list[str],
    stats: dict[str, Any],
    verbose: bool,
    max_turns: int = MAX_TURNS,
) -> None:
    it = Interview.start(ports, [q.round], question_ids=[q.id])
    it.advance_all()
    said: list[str] = []
    first: dict[str, Any] | None = None
    for turn in range(max_turns):
        if it.finished or it.question is None or it.question.id != q.id:
            break
        answer = answers[min(turn, len(answers) - 1)]
        level_before = it.level
        t = time.perf_counter()
        heard = it.reading.listen(q, it.level, answer)
        stats["read_ms"].append((time.perf_counter() - t) * 1000)
        n_answered = sum(1 for e in it.ports.store.events(it.session_id) if e.kind == "answered")
        it.submit(answer)
        said.append(answer)
        text = it.advance_all()
        events = it.ports.store.events(it.session_id)
        asked = [e.payload for e in events if e.kind == "asked"]
        last = events[-1]
        if last.kind == "clarified":
            move, level_after, source = "clarify", it.level, "scenario"
        elif asked and asked[-1]["qid"] == q.id and last.kind == "asked":
            move, level_after, source = asked[-1].get("move", "why"), asked[-1]["level"], asked[-1]["source"]
            stats["sources"][source] += 1
            if asked[-1].get("first_token_s") is not None:
                stats["first_token_s"].append(asked[-1]["first_token_s"])
            reason = asked[-1].get("fallback_reason", "")
            if reason.startswith("leaks"):
                stats["model_leaks_caught"] += 1
        else:
            move, level_after, source = "next", 0, "-"
        if move not in ("next",):
            stats["followups"] += 1
            if listen.leak(text, q, said, authored=source != "model"):
                stats["leaks"] += 1
                stats["leak_examples"].append((q.id, text))
            if strict_leak(text, q, said):
                stats["strict_leaks"] += 1
                stats["strict_sources"][source] += 1
            if "the candidate" in text.lower():
                stats["not_you"] += 1
        if first is None:
            answered_after = sum(1 for e in events if e.kind == "answered")
            first = {
                "move": move,
                "level_before": level_before,
                "level_after": level_after,
                "kind": heard[0].kind if heard else "-",
                "advanced": answered_after > n_answered,
                "text": text,
            }
        if verbose:
            print(f"  [{q.id} {name} L{level_before}] {answer[:60]!r} -> {move}: {text[:110]!r}")
    assert first is not None
    right = judge(q, name, first)
    stats["right"][name].append(right)
    if not right:
        stats["misses"].append((q.id, name, first["kind"], first["move"], first["text"][:100]))


def judge(q: Question, name: str, first: dict[str, Any]) -> bool:
    move = first["move"]
    if name == "strong":
        return move in ("deepen", "push", "next") and first["level_after"] != 1
    if name.startswith("wrong"):
        return move == "challenge"
    if name == "idk":
        return move == ("hint" if q.hint else "encourage")
    if name.startswith("off-topic"):
        return move == "redirect"
    if name.startswith("asks-back"):
        return move == "clarify" and not first["advanced"] and first["level_after"] == first["level_before"]
    if name == "terse":
        return move == "expand"
    raise ValueError(name)


def build_model(spec: str, model_name: str | None, data_dir: Path) -> tuple[Any, Any]:
    """(chat port, server to stop) for 'fake', 'embedded' or a server URL."""
    settings = load_settings(data_dir=data_dir)
    if spec == "none":
        return None, None
    if spec == "fake":
        return ChatPort(ScriptedChatModel().queue(*[leaky_followup] * 10_000), name="fake (leaky)"), None
    if spec == "embedded":
        from interviewer.llm.embedded import EmbeddedServer

        server = EmbeddedServer(settings)
        url = server.start(progress=lambda m: print(f"  {m}", file=sys.stderr))
        port = build_port(
            settings, base_url=url, model=server.served_model_id, display_name=server.model_name
        )
        return port, server
    name = model_name or list_models(spec, None)[0]
    return build_port(settings, base_url=spec, model=name), None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="fake", help="fake | embedded | none | an OpenAI-compatible base URL")
    ap.add_argument("--model-name", default=None)
    ap.add_argument("--per-round", type=int, default=0, help="questions per round (0: all)")
    ap.add_argument("--rounds", default="", help="comma-separated round ids (default: every round)")
    ap.add_argument("--data-dir", default=None, help="where the embedded model is assembled")
    ap.add_argument("--turns", type=int, default=MAX_TURNS, help="answers per persona (2: its first two)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument(
        "--lexical",
        action="store_true",
        help="the reader's own word-overlap off-topic rule, not the scorer's (the app uses the scorer's)",
    )
    args = ap.parse_args(argv)

    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    bank = load_bank(REPO)
    rounds = [r for r in (args.rounds.split(",") if args.rounds else [r.value for r in Round]) if r]
    questions: list[Question] = []
    for r in rounds:
        pool = sorted(bank.by_round(r), key=lambda q: (-len(q.contradictions), -len(q.push), q.id))
        questions += pool[: args.per_round] if args.per_round else pool
    data_dir = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="bench-listen-"))
    port, server = build_model(args.model, args.model_name, data_dir)
    print(f"model: {port.name if port else 'none'}; {len(questions)} question(s) over {len(rounds)} round(s)")
    stats: dict[str, Any] = {
        "right": defaultdict(list),
        "read_ms": [],
        "first_token_s": [],
        "sources": Counter(),
        "strict_sources": Counter(),
        "followups": 0,
        "leaks": 0,
        "strict_leaks": 0,
        "model_leaks_caught": 0,
        "not_you": 0,
        "misses": [],
        "leak_examples": [],
    }
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as d:
            store = SessionStore(Path(d) / "s.db")
            topic, claims = None, None
            if not args.lexical:
                # As the app does (Runtime.listener): redirect what the report calls off-topic, and challenge
                # what it caps as a wrong claim.
                from interviewer.embeddings import MiniLMEmbedder
                from interviewer.scoring.scorer import RubricScorer

                scorer = RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
                scorer.warm()
                topic, claims = scorer.off_topic, scorer.wrong_claims
            listener = listen.Listener(neighbours=list(bank.questions.values()), topic=topic, claims=claims)
            ports = Ports(bank=bank, store=store, model=port, listener=listener)
            for q in questions:
                for name, answers in personas(q).items():
                    run_persona(ports, q, name, answers, stats, args.verbose, args.turns)
            store.close()
    finally:
        if server is not None:
            server.stop()
    wall = time.perf_counter() - started

    print("\n| move (persona) | right | rate |\n| --- | --- | --- |")
    groups: dict[str, list[bool]] = defaultdict(list)
    for name, results in stats["right"].items():
        groups[EXPECT[name]] += results
    for label, results in groups.items():
        print(f"| {label} | {sum(results)}/{len(results)} | {100 * sum(results) / len(results):.0f}% |")
    n = max(1, stats["followups"])
    print(
        f"| leaks (listen.leak, every follow-up) | {stats['leaks']}/{stats['followups']} | "
        f"{100 * stats['leaks'] / n:.1f}% |"
    )
    print(
        f"| strict leaks (authored shown texts not allowed) | {stats['strict_leaks']}/{stats['followups']} | "
        f"{100 * stats['strict_leaks'] / n:.1f}% (by source: {dict(stats['strict_sources'])}) |"
    )
    print(
        f"| follow-ups that talk about 'the candidate' | {stats['not_you']}/{stats['followups']} | "
        f"{100 * stats['not_you'] / n:.1f}% |"
    )
    print(
        f"\nfollow-up sources: {dict(stats['sources'])}; model follow-ups rejected for leaking: "
        f"{stats['model_leaks_caught']}"
    )
    ms = sorted(stats["read_ms"])
    print(
        f"reading an answer (before the follow-up): p50 {statistics.median(ms):.2f} ms, "
        f"p95 {ms[int(0.95 * (len(ms) - 1))]:.2f} ms over {len(ms)} answers"
    )
    if stats["first_token_s"]:
        ft = stats["first_token_s"]
        print(f"model first token: median {statistics.median(ft):.2f} s over {len(ft)} follow-ups")
    print(f"wall: {wall:.0f} s; load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for miss in stats["misses"][:40]:
        print("miss:", miss)
    for ex in stats["leak_examples"][:10]:
        print("leak:", ex)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
