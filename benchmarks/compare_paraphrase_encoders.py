"""The paraphrase reader with another sentence encoder: wrong claims read in wrong and right answers, per threshold.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/compare_paraphrase_encoders.py [--encoder DIR]
[--similar 0.45,0.50] [--closer-by 0.05,0.10,0.15] [--held-out]``

The paraphrase reader (``interviewer/scoring/paraphrase.py``) compares MiniLM sentence vectors (all-MiniLM-L6-v2,
packaged). Whether a stronger sentence encoder reads the rubrics' wrong claims better is measured here:
``--encoder DIR`` takes any sentence-transformers model directory on disk (without it, the packaged MiniLM), and
every pair of thresholds in the grid is read with it (``SIMILAR`` and ``CLOSER_BY``; the reader's word checks stay
as they are).

The answers read (nothing is fitted here; the grid only shows the trade):
- the dev trap answers (``tests/data/traps``): a hit on a fluent-but-wrong answer is wanted, one on a strong,
  partial or off-topic answer is a false challenge;
- the right answers of ``tests/data/right/answers.jsonl`` (all 232) and the three quarters of
  ``corrections.jsonl`` used to choose the reader's rules (ids ``[1::4]``, ``[2::4]`` and ``[3::4]`` of the sorted
  ids): every hit is a false challenge.

``--held-out`` reads the held-out trap answers and the last quarter of ``corrections.jsonl`` instead: figures to
report, never to choose by. An encoder reads better if, at some thresholds, it reads more wrong answers than
MiniLM does for no more false challenges ("false" in the table: partial, strong, off-topic and right answers with a
hit). Encoding every text once takes about 3 minutes with MiniLM and about 14 with all-mpnet-base-v2 on two cores;
each further grid point reuses the vectors.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import Embedder, MiniLMEmbedder  # noqa: E402
from interviewer.scoring.coverage import TextEncoder  # noqa: E402
from interviewer.scoring.guard import screen  # noqa: E402
from interviewer.scoring.spec import RubricSpec  # noqa: E402
from interviewer.scoring.stages import wrong_claims  # noqa: E402
from tests.support.right import right_answers  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

KINDS = ("wrong", "partial", "strong", "off_topic", "right A", "right B")


class DirectoryEncoder:
    """A sentence-transformers model from a directory on disk, as an :class:`Embedder` (unit vectors, CPU)."""

    def __init__(self, path: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(path), device="cpu")
        self._name = path.name
        self._dim = int(self._model.get_embedding_dimension() or 0)

    @property
    def id(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        vecs = self._model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)


def answers(held_out: bool) -> list[tuple[str, str, str]]:
    """(question id, kind, text) of every answer read: trap answers of one split, then the right answers."""
    split = "heldout" if held_out else "dev"
    out = [
        (qid, label, text)
        for qid, trap in load_traps().items()
        if question_split(qid) == split
        for label, text in trap.texts().items()
    ]
    if not held_out:
        out += [(qid, "right A", text) for qid, text in right_answers("answers.jsonl").items()]
    second = sorted(right_answers("corrections.jsonl").items())
    quarters = [second[0::4]] if held_out else [second[1::4], second[2::4], second[3::4]]
    return out + [(qid, "right B", text) for part in quarters for qid, text in part]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", type=Path, default=None, help="a sentence-transformers model directory")
    ap.add_argument("--similar", default="0.45,0.50", help="comma-separated SIMILAR values")
    ap.add_argument("--closer-by", default="0.05,0.10,0.15", help="comma-separated CLOSER_BY values")
    ap.add_argument("--held-out", action="store_true", help="read the held-out answers (report only)")
    args = ap.parse_args()
    if args.encoder is not None and not (args.encoder / "modules.json").is_file():
        ap.error(f"{args.encoder} is not a sentence-transformers model directory (no modules.json)")
    grid = [(float(s), float(c)) for s in args.similar.split(",") for c in args.closer_by.split(",")]
    embedder: Embedder = (
        MiniLMEmbedder(threads=None) if args.encoder is None else DirectoryEncoder(args.encoder)
    )
    enc = TextEncoder(embedder, sentence_bytes=None, token_bytes=None)
    bank = load_bank(REPO)
    specs: dict[str, RubricSpec] = {}
    items = answers(args.held_out)
    print(f"{len(items)} answers, encoder {embedder.id}", flush=True)
    rows = []
    for similar, closer_by in grid:
        t0 = time.perf_counter()
        counts = dict.fromkeys(KINDS, 0)
        for n, (qid, kind, text) in enumerate(items, 1):
            spec = specs.get(qid) or specs.setdefault(qid, RubricSpec.from_question(bank.get(qid)))
            said = screen(text).text  # as the scorer reads it: requests to the grader removed
            found = wrong_claims(enc, spec, said, similar=similar, closer_by=closer_by)
            counts[kind] += bool(found)
            if n % 200 == 0:
                print(f"  {similar:.2f} / {closer_by:.2f}: {n}/{len(items)} answers", flush=True)
        rows.append((similar, closer_by, counts, time.perf_counter() - t0))
    sets = (
        "held-out traps, last quarter of B" if args.held_out else "dev traps, all of A, three quarters of B"
    )
    print(f"\nanswers with a wrong claim read ({sets}; encoder {embedder.id})")
    print("| similar | closer by | " + " | ".join(KINDS) + " | false | seconds |")
    print("|---|---|" + "---|" * (len(KINDS) + 2))
    for similar, closer_by, counts, seconds in rows:
        false = sum(counts[k] for k in KINDS if k != "wrong")
        cells = " | ".join(str(counts[k]) for k in KINDS)
        print(f"| {similar:.2f} | {closer_by:.2f} | {cells} | {false} | {seconds:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
