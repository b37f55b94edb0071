"""The answer reader on answers written independently of the rubrics: the trap set (tests/data/traps).

Run: ``.venv/bin/python benchmarks/bench_listen_traps.py [--lexical] [--readings FILE [--trust 0.76,option=0.52]]``

For each non-coding question, the four trap answers are read as the candidate's first answer (level 0), the
way the interviewer reads them before choosing its follow-up, and the table counts what the reader decided:
a fluent-but-wrong answer should be challenged ("contradicts"), an off-topic answer redirected ("off_topic", or
"no_episode" where a real episode was asked for and none is told), and a strong answer should be neither. No
model; the reader is offline. As in the app, off-topic is the scorer's rule (MiniLM relevance, the bank's other
questions, the rubric's checks); ``--lexical``: the reader's own word-share rule (what it falls back to without a
scorer). Figures per split (tests/support/traps.py): the scorer's unmet-rubric threshold was chosen on "dev".

With ``--readings FILE`` (JSONL from benchmarks/read_traps.py: one line per answer, its reading probes' findings
on the embedded model), each answer that has a line is read as the first answer WITH those findings, as the
interviewer reads an answer whose reading was ready before Send, and the next move is counted per answer kind:
challenged as a wrong claim, redirected as off-topic, a why-1 target the readings find stated asked anyway, other.
The same answers without the findings are shown beside it. With ``--trust``, only the probe kinds it lets act
are kept and each key point is decided from them, as if only those had been read (the listener reads no other
kind). A wrong answer "asserts an authored contradiction" when the clause reader or the listener's own word match
(not the scorer's paraphrase reader, which is under test) finds one of the rubric's ``contradictions`` in it, or
when the trap's own summary of its wrong claim carries at least half of the content words of one of them.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import json  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from benchmarks.bench_traps import parse_trust  # noqa: E402
from benchmarks.read_traps import rejudged  # noqa: E402
from interviewer.content import Bank, load_bank  # noqa: E402
from interviewer.content.models import Question  # noqa: E402
from interviewer.listen import WELL, Done, Findings, Listener, choose, heed, stems  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.support.traps import TrapFile, load_traps, question_split  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lexical", action="store_true", help="the reader's own off-topic rule, no scorer")
    ap.add_argument("--readings", type=Path, default=None, help="JSONL of benchmarks/read_traps.py")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument(
        "--trust",
        type=parse_trust,
        default=None,
        help="the reading model's trust, overall and per probe kind (0.76,option=0.52): only the kinds it "
        "lets act are kept, as the listener reads only those (default: every kind)",
    )
    args = ap.parse_args()
    bank = load_bank(REPO)
    neighbours = list(bank.questions.values())
    scorer = None if args.lexical else RubricScorer(neighbours=neighbours)
    topic = scorer.off_topic if scorer is not None else None
    claims = scorer.wrong_claims if scorer is not None else None
    listener = Listener(neighbours=neighbours, topic=topic, claims=claims)
    traps = load_traps()
    if args.readings is not None:
        acts_on = args.trust.acts_on if args.trust is not None else None
        return with_readings(args.readings, bank, traps, listener, args.verbose, acts_on)
    labels = ("strong", "partial", "wrong", "off_topic")
    kinds: dict[str, dict[str, Counter[str]]] = {
        split: {k: Counter() for k in labels} for split in ("dev", "heldout", "all")
    }
    for qid, t in traps.items():
        q = bank.get(qid)
        for label, text in t.texts().items():
            kind = listener.read(q, 0, text, q.question).kind
            kinds[question_split(qid)][label][kind] += 1
            kinds["all"][label][kind] += 1
    cols = sorted({k for c in kinds["all"].values() for k in c})
    print(
        f"{len(traps)} questions, first answers read offline, off-topic rule: {'lexical' if args.lexical else 'scorer'}"
    )
    for split, table in kinds.items():
        n = sum(table["strong"].values())
        print(f"\n[{split}: {n} questions]")
        print(f"{'answer':<12}" + "".join(f"{k:>12}" for k in cols))
        for label, c in table.items():
            print(f"{label:<12}" + "".join(f"{c[k]:>12}" for k in cols))
        print(f"wrong answers challenged (contradicts): {table['wrong']['contradicts']}/{n}")
        redirected = {k: table[k]["off_topic"] + table[k]["no_episode"] for k in table}
        print(f"off-topic answers redirected (off_topic, no_episode): {redirected['off_topic']}/{n}")
        bad = table["strong"]["contradicts"] + redirected["strong"]
        print(f"strong answers wrongly challenged or redirected: {bad}/{n}")
        print(f"wrong answers redirected (off_topic, no_episode): {redirected['wrong']}/{n}")
    return 0


LABELS = ("strong", "partial", "wrong", "off_topic")
OUTCOMES = ("challenged", "redirected", "stated why re-asked", "other")


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


# The clause and word readers alone: which answers count as asserting a claim must not depend on the reader tested.
_AUTHORED = Listener()


def asserts_authored(q: Question, text: str, claim: str) -> bool:
    """Whether a wrong answer asserts one of the rubric's contradictions (see the module docstring)."""
    if _AUTHORED.read(q, 0, text, q.question).hit is not None:
        return True
    said = stems(claim)
    for c in q.contradictions:
        want = stems(c.claim)
        if want and len(want & said) / len(want) >= 0.5:
            return True
    return False


def with_readings(
    path: Path,
    bank: Bank,
    traps: dict[str, TrapFile],
    listener: Listener,
    verbose: bool,
    acts_on: Callable[[str], bool] | None = None,
) -> int:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            rows[(r["question"], r["kind"])] = r  # the last line for an answer wins (a newer reader)
    counts: dict[str, dict[str, Counter[str]]] = {
        mode: {k: Counter() for k in LABELS} for mode in ("with readings", "without")
    }
    authored: dict[str, Counter[str]] = {mode: Counter() for mode in counts}
    questions: set[str] = set()
    stale = 0
    for (qid, kind), row in sorted(rows.items()):
        if qid not in traps or kind not in LABELS:
            continue
        q = bank.get(qid)
        t = traps[qid]
        text = t.texts()[kind]
        if row["sha"] != _sha(text):
            stale += 1
            continue
        questions.add(qid)
        findings = Findings.from_json(text, rejudged(row["readings"], q, text, acts_on))
        step1 = len(q.why(1).key_points) if q.why_chain else 0
        share = findings.share("why1", step1)
        why1_stated = share is not None and share >= WELL
        for mode in counts:
            reading = listener.read(q, 0, text, q.question)
            if mode == "with readings":
                reading = heed(q, 0, reading, findings, text)
            plan = choose(q, 0, reading, Done(), text, q.question)
            if plan.move == "challenge":
                out = "challenged"
            elif plan.move == "redirect":
                out = "redirected"
            elif why1_stated and plan.level == 1 and plan.move == "why":
                out = "stated why re-asked"
            else:
                out = "other"
            counts[mode][kind][out] += 1
            if kind == "strong":
                counts[mode][kind]["why1 stated"] += why1_stated
            if kind == "wrong" and asserts_authored(q, text, t.answers.wrong.claim):
                authored[mode]["n"] += 1
                authored[mode]["challenged"] += out == "challenged"
            wanted = {"wrong": "challenged", "off_topic": "redirected"}.get(kind, "other")
            if verbose and mode == "with readings" and out != wanted:
                print(
                    f"  {qid} {kind}: {plan.move} ({reading.kind}: {reading.reason}) {plan.text or ''}"[:300]
                )
    n_answers = sum(sum(c[o] for o in OUTCOMES) for c in counts["with readings"].values())
    print(f"$ {' '.join(sys.argv)}")
    print(
        f"{len(questions)} questions, {n_answers} answers with readings from {path.name}; {stale} stale lines"
    )
    for mode, table in counts.items():
        print(f"\n[{mode}]")
        print(f"{'answer':<12}" + "".join(f"{o:>22}" for o in OUTCOMES))
        for label in LABELS:
            c = table[label]
            print(f"{label:<12}" + "".join(f"{c[o]:>22}" for o in OUTCOMES))
        right = (
            sum(table["strong"][o] for o in ("other",))
            + sum(table["partial"][o] for o in ("other",))
            + table["wrong"]["challenged"]
            + table["off_topic"]["redirected"]
        )

        def pct(a: int, b: int) -> str:
            return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "0/0"

        n = {label: sum(table[label][o] for o in OUTCOMES) for label in LABELS}
        print(f"wrong answers challenged: {pct(table['wrong']['challenged'], n['wrong'])} (target >= 60%)")
        print(
            f"  of those asserting an authored contradiction: "
            f"{pct(authored[mode]['challenged'], authored[mode]['n'])} (target >= 90%)"
        )
        print(
            f"false challenges on strong answers: {pct(table['strong']['challenged'], n['strong'])} (<= 5%)"
        )
        print(
            f"a stated why-1 target re-asked (strong + partial): "
            f"{pct(table['strong']['stated why re-asked'] + table['partial']['stated why re-asked'], n['strong'] + n['partial'])}"
            f" (target <= 5%); strong answers whose why-1 target the readings find stated: "
            f"{table['strong']['why1 stated']}"
        )
        print(f"right next move: {pct(right, sum(n.values()))} (target >= 80%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
