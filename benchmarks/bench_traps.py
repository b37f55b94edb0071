"""The scorer on our own trap set (tests/data/traps): strong / partial / fluent-but-wrong / off-topic answers.

Run: ``.venv/bin/python benchmarks/bench_traps.py [--round inference-case] [--readings FILE]``

Prints per-label means and the share of questions ordered strong > partial > wrong, per split (the split is by
question id, tests/support/traps.py: thresholds are tuned on "dev" only; "heldout" is what we report), and per
question. Offline scorer (MiniLM, checks, contradictions, relevance against the whole bank); no model.

``--readings FILE`` (a JSONL from ``benchmarks/read_traps.py``) scores the answers it holds a reading of twice,
without and with the reading probes' findings (the main answer's probes; ``--trust`` is the reader weight the
findings are taken at), and prints both tables over those questions only. A reading of another text (a trap
edited since) or of probes that changed since is skipped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.content.models import Question  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.probe_reader import findings_of  # noqa: E402
from interviewer.scoring.reader import Readings  # noqa: E402
from interviewer.scoring.scorer import RubricScorer  # noqa: E402
from interviewer.scoring.stages import ReaderTrust, ReadingFinding, ReadingInput  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

LABELS = ("strong", "partial", "wrong", "off_topic")


def text_sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_readings(
    path: Path, bank: object, texts: dict[tuple[str, str], str] | None = None
) -> dict[tuple[str, str], list[ReadingFinding]]:
    """(question id, answer sha) -> the main answer's findings, from a read_traps.py JSONL (last line wins);
    with ``texts`` ((question id, sha) -> the answer), option probes are judged again by today's rules."""
    out: dict[tuple[str, str], list[ReadingFinding]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line still being written
        q: Question = bank.get(row["question"])  # type: ignore[attr-defined]
        main = row["readings"].get("main")
        if main is None:
            continue
        text = (texts or {}).get((row["question"], row["sha"]))
        readings = Readings.from_json(main, q, rejudge_text=text)
        if readings is None or not readings.probes:  # probes that changed since, or none
            continue
        out[(row["question"], row["sha"])] = findings_of({"main": readings})
    return out


def table(rows: dict[str, dict[str, float]], title: str) -> None:
    print(f"\n{title}: {len(rows)} questions with traps")
    print(
        f"{'split':<10}{'n':>4}" + "".join(f"{k:>10}" for k in LABELS) + f"{'ordered':>10}{'wrong<=1.5':>12}"
    )
    for split in ("dev", "heldout", "all"):
        sel = [r for qid, r in rows.items() if split == "all" or question_split(qid) == split]
        if not sel:
            continue
        means = [statistics.fmean(r[k] for r in sel) for k in LABELS]
        ordered = sum(r["strong"] > r["partial"] > r["wrong"] for r in sel) / len(sel)
        low_wrong = sum(r["wrong"] <= 1.5 for r in sel) / len(sel)
        print(
            f"{split:<10}{len(sel):>4}"
            + "".join(f"{m:>10.2f}" for m in means)
            + f"{ordered:>10.0%}{low_wrong:>12.0%}"
        )


def parse_trust(text: str) -> ReaderTrust:
    """``0.76`` or ``0.76,option=0.52,number=0.88,named=1``: overall, then per probe kind."""
    overall, *kinds = text.split(",")
    per_kind = {k.strip(): float(v) for k, v in (item.split("=", 1) for item in kinds)}
    return ReaderTrust(float(overall), per_kind)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round", default=None, help="one round's traps (default: all)")
    ap.add_argument("--per-question", action="store_true")
    ap.add_argument("--readings", type=Path, default=None, help="a read_traps.py JSONL: score with findings")
    ap.add_argument(
        "--trust",
        type=parse_trust,
        default=parse_trust("0.76"),
        help="the reader weight, overall and optionally per probe kind: 0.76 or 0.76,option=0.52,number=0.88 "
        "(default: the embedded model's overall dev figure, every kind alike)",
    )
    args = ap.parse_args()
    bank = load_bank(REPO)
    scorer = RubricScorer(MiniLMEmbedder(), neighbours=list(bank.questions.values()))
    traps = load_traps(args.round)
    if args.readings is None:
        rows: dict[str, dict[str, float]] = {}
        for qid, t in traps.items():
            q = bank.get(qid)
            rows[qid] = {label: scorer.score(q, [text]).overall for label, text in t.texts().items()}
            if args.per_question:
                print(f"{qid:<50}" + "".join(f"{rows[qid][k]:>9.2f}" for k in LABELS))
        table(rows, "offline scorer")
        return 0
    by_sha = {(qid, text_sha(x)): x for qid, t in traps.items() for x in t.texts().values()}
    read = load_readings(args.readings, bank, by_sha)
    without: dict[str, dict[str, float]] = {}
    acted = {label: {"contradicted": 0, "stated": 0, "halved": 0} for label in LABELS}
    withf: dict[str, dict[str, float]] = {}
    for qid, t in traps.items():
        texts = t.texts()
        if not all((qid, text_sha(x)) in read for x in texts.values()):
            continue  # only questions whose four answers were all read
        q = bank.get(qid)

        def reader(inp: ReadingInput, _qid: str = qid) -> list[ReadingFinding]:
            return read[(_qid, text_sha(inp.answers["main"]))]

        reader.trust = args.trust  # type: ignore[attr-defined]
        without[qid] = {label: scorer.score(q, [x]).overall for label, x in texts.items()}
        withf[qid] = {}
        for label, x in texts.items():
            got = scorer.score(q, [x], reader=reader)
            withf[qid][label] = got.overall
            found = [v.verdict for v in got.verdicts if v.method == "reading-probes"]
            acted[label]["contradicted"] += "contradicted" in found
            acted[label]["stated"] += "stated" in found
            acted[label]["halved"] += any("probes find them not stated" in n for n in got.notes)
        if args.per_question:
            print(f"{qid:<46}" + "".join(f"{without[qid][k]:>6.2f}>{withf[qid][k]:<5.2f}" for k in LABELS))
    kinds = ", ".join(f"{k} {v:g}" for k, v in args.trust.per_kind.items())
    print(
        f"readings: {args.readings} ({len(read)} answers read, trust {args.trust.overall:g}{'; ' + kinds if kinds else ''})"
    )
    table(without, "without findings")
    table(withf, "with findings")
    print("\nanswers with a key point the probes find contradicted / stated / vocabulary-only (halved):")
    for label in LABELS:
        a = acted[label]
        print(f"  {label:<10} {a['contradicted']:>3} / {a['stated']:>3} / {a['halved']:>3}  of {len(withf)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
