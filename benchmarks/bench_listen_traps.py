"""The answer reader on answers written independently of the rubrics: the trap set (tests/data/traps).

Run: ``.venv/bin/python benchmarks/bench_listen_traps.py``

For each non-coding question, the four trap answers are read as the candidate's first answer (level 0), the
way the interviewer reads them before choosing its follow-up, and the table counts what the reader decided:
a fluent-but-wrong answer should be challenged ("contradicts"), an off-topic answer redirected ("off_topic"),
and a strong answer should be neither. No model; the reader is offline.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.listen import Listener  # noqa: E402
from tests.support.traps import load_traps  # noqa: E402


def main() -> int:
    bank = load_bank(REPO)
    listener = Listener(neighbours=list(bank.questions.values()))
    traps = load_traps()
    kinds: dict[str, Counter[str]] = {k: Counter() for k in ("strong", "partial", "wrong", "off_topic")}
    for qid, t in traps.items():
        q = bank.get(qid)
        for label, text in t.texts().items():
            kinds[label][listener.read(q, 0, text, q.question).kind] += 1
    n = len(traps)
    print(f"{n} questions, first answers read offline")
    print(f"{'answer':<12}" + "".join(f"{k:>12}" for k in sorted({k for c in kinds.values() for k in c})))
    cols = sorted({k for c in kinds.values() for k in c})
    for label, c in kinds.items():
        print(f"{label:<12}" + "".join(f"{c[k]:>12}" for k in cols))
    print()
    print(f"wrong answers challenged (contradicts): {kinds['wrong']['contradicts']}/{n}")
    print(f"off-topic answers redirected (off_topic): {kinds['off_topic']['off_topic']}/{n}")
    bad = kinds["strong"]["contradicts"] + kinds["strong"]["off_topic"]
    print(f"strong answers wrongly challenged or redirected: {bad}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
