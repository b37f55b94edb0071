"""The answer reader on answers written independently of the rubrics: the trap set (tests/data/traps).

Run: ``.venv/bin/python benchmarks/bench_listen_traps.py [--lexical]``

For each non-coding question, the four trap answers are read as the candidate's first answer (level 0), the
way the interviewer reads them before choosing its follow-up, and the table counts what the reader decided:
a fluent-but-wrong answer should be challenged ("contradicts"), an off-topic answer redirected ("off_topic"),
and a strong answer should be neither. No model; the reader is offline. As in the app, off-topic is the
scorer's rule (MiniLM relevance, the bank's other questions, the rubric's checks); ``--lexical``: the reader's
own word-share rule (what it falls back to without a scorer). Figures per split (tests/support/traps.py): the
scorer's unmet-rubric threshold was chosen on "dev".
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.listen import Listener  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lexical", action="store_true", help="the reader's own off-topic rule, no scorer")
    args = ap.parse_args()
    bank = load_bank(REPO)
    neighbours = list(bank.questions.values())
    topic = None if args.lexical else RubricScorer(neighbours=neighbours).off_topic
    listener = Listener(neighbours=neighbours, topic=topic)
    traps = load_traps()
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
        print(f"off-topic answers redirected (off_topic): {table['off_topic']['off_topic']}/{n}")
        bad = table["strong"]["contradicts"] + table["strong"]["off_topic"]
        print(f"strong answers wrongly challenged or redirected: {bad}/{n}")
        print(f"wrong answers redirected as off-topic: {table['wrong']['off_topic']}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
