"""The SemEval-2013 copy under data/semeval2013 is complete and labelled as its README says."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "semeval2013"
LABELS = ("correct", "contradictory", "incorrect")


def _readme_counts() -> dict[str, tuple[int, ...]]:
    """File name -> (answers, correct, contradictory, incorrect) from the README's table."""
    out: dict[str, tuple[int, ...]] = {}
    for line in (DATA / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*(\S+\.jsonl\.gz)\s*\|(.*)\|\s*$", line)
        if m:
            out[m.group(1)] = tuple(int(c.strip().replace(",", "")) for c in m.group(2).split("|"))
    return out


def test_semeval_copy_matches_the_label_counts_its_readme_documents() -> None:
    table = _readme_counts()
    assert set(table) == {p.name for p in DATA.glob("*.jsonl.gz")}
    for name, (total, *per_label) in table.items():
        with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        labels = Counter(r["label"] for r in rows)
        assert len(rows) == total, name
        assert [labels[k] for k in LABELS] == per_label, name
        # every answer can be paired with a reference, as the cross-encoder benchmark pairs them
        assert all(r["answer"].strip() and r["reference_answers"] for r in rows), name
