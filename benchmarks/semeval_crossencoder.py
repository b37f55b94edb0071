"""A MiniLM cross-encoder trained on SemEval-2013 for contradiction detection, measured against the reader.

Run (one torch thread; CPU only; a few minutes per phase on a shared machine)::

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/semeval_crossencoder.py \
        [--work /tmp/semeval_work] [--epochs 1] [--max-pairs 4000] [--max-len 128] [--modes whole,sent2] \
        [--trap-dev-tune] [--no-semeval] [--readings FILE ...]

What it does:

1. Trains a cross-encoder on ``data/semeval2013`` (Beetle + SciEntsBank training splits, 3-way labels): the
   packaged all-MiniLM-L6-v2 encoder (sha256-verified, as :mod:`interviewer.embeddings` loads it), mean
   pooling and a linear head over {correct, contradictory, incorrect}; input ``reference [SEP] student answer``.
   The SemEval questions are split by id (about a fifth held out); held-out-question accuracy and macro-F1
   are printed as a sanity figure.
2. Scores the trap set (``tests/data/traps``): for each question's strong, partial and wrong answers, the
   contradiction score is the maximum over the question's key points (and over windows of the answer) of
   P(contradictory | key point [SEP] answer window). Prints, per split (dev / heldout, by question id, never
   fitted on heldout): AUC wrong > strong, AUC wrong > partial, and at the threshold chosen on dev (the one
   that best separates wrong from strong there), the share of wrong answers flagged and of strong answers
   falsely flagged. The answer windowing is chosen on dev too.
   Two premises are scored: the key points (P(contradictory): the answer denies a key point) and the
   rubric's authored contradiction claims (P(correct): the answer states a classic wrong claim).
   ``--trap-dev-tune`` then fine-tunes on half of the dev questions' traps (their wrong answer entails the
   trap's one-line wrong claim, their strong answer denies it), with SemEval answers replayed, and selects and
   thresholds on the other dev half only.
3. Prints the reader's equivalent from ``benchmarks/read_traps.py`` readings where they exist: an answer is
   flagged when any main key point's finding is "contradicted" (a binary score, so its AUC counts ties as half).

Nothing here ships: the model is kept under ``--work`` only. Trained weights and token caches are reused from
``--work`` on a second run (delete the directory to retrain).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402

from interviewer.content import load_bank  # noqa: E402
from interviewer.embeddings import MINILM_SHA256, _package_model_dir, _sha256  # noqa: E402
from tests.support.traps import load_traps, question_split  # noqa: E402

LABELS = ("correct", "contradictory", "incorrect")
CONTRA = LABELS.index("contradictory")
DATA = REPO / "data" / "semeval2013"
KINDS = ("strong", "partial", "wrong")


# ---------------------------------------------------------------------------------------------- data


def semeval_rows() -> list[dict]:
    rows: list[dict] = []
    for f in sorted(DATA.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def semeval_split(question_id: str) -> str:
    """About a fifth of the SemEval questions held out, stably by id."""
    return "heldout" if hashlib.sha256(question_id.encode()).digest()[0] % 5 == 0 else "train"


def references(row: dict) -> list[str]:
    refs = row["reference_answers"]
    best = [r["text"] for r in refs if r.get("category") in (None, "BEST")]
    return best or [refs[0]["text"]]


# --------------------------------------------------------------------------------------------- model


class CrossEncoder(torch.nn.Module):
    """MiniLM over the pair, mean-pooled, then a linear layer to the three labels."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.dropout = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(encoder.config.hidden_size, len(LABELS))

    def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
        out = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(self.dropout(pooled))


def load_minilm():  # type: ignore[no-untyped-def]
    from transformers import AutoModel, AutoTokenizer

    model_dir = _package_model_dir()
    actual = _sha256(model_dir / "model.safetensors")
    if actual != MINILM_SHA256:
        raise SystemExit(f"MiniLM weights have sha256 {actual}, expected {MINILM_SHA256}")
    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    enc = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    return tok, enc


def batches(tok, pairs: Sequence[tuple[str, str]], max_len: int, size: int) -> Iterable[dict]:  # type: ignore[no-untyped-def]
    for i in range(0, len(pairs), size):
        chunk = pairs[i : i + size]
        yield tok(
            [a for a, _ in chunk],
            [b for _, b in chunk],
            truncation="longest_first",
            max_length=max_len,
            padding=True,
            return_tensors="pt",
        )


@torch.no_grad()
def predict(model: CrossEncoder, tok, pairs: Sequence[tuple[str, str]], max_len: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """P(label) per pair, sorted by length for cheap padding."""
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    probs = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
    done = 0
    for enc in batches(tok, [pairs[i] for i in order], max_len, 64):
        p = torch.softmax(model(**enc), dim=-1).numpy()
        probs[order[done : done + len(p)]] = p
        done += len(p)
    return probs


def train(args: argparse.Namespace, tok, enc) -> CrossEncoder:  # type: ignore[no-untyped-def]
    rows = [r for r in semeval_rows() if semeval_split(r["question_id"]) == "train"]
    rng = random.Random(0)
    rng.shuffle(rows)
    rows = rows[: args.max_pairs]
    counts = np.bincount([LABELS.index(r["label"]) for r in rows], minlength=len(LABELS))
    # Contradictions are the rare class and the one that matters here: inverse-frequency weights.
    weights = torch.tensor(counts.sum() / (len(LABELS) * np.maximum(counts, 1)), dtype=torch.float32)
    print(
        f"training on {len(rows)} SemEval answers, labels {dict(zip(LABELS, counts.tolist(), strict=True))}",
        flush=True,
    )
    model = CrossEncoder(enc)
    opt = torch.optim.AdamW(
        [
            {"params": model.encoder.parameters(), "lr": args.lr},
            {"params": model.head.parameters(), "lr": 1e-3},
        ],
        weight_decay=0.01,
    )
    steps = args.epochs * ((len(rows) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps)
    )
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights)
    step, t0 = 0, time.perf_counter()
    for epoch in range(args.epochs):
        rng.shuffle(rows)
        model.train()
        for i in range(0, len(rows), args.batch):
            chunk = rows[i : i + args.batch]
            pairs = [(rng.choice(references(r)), r["answer"]) for r in chunk]
            y = torch.tensor([LABELS.index(r["label"]) for r in chunk])
            enc_b = next(iter(batches(tok, pairs, args.max_len, len(pairs))))
            loss = loss_fn(model(**enc_b), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 25 == 0:
                print(
                    f"epoch {epoch + 1} step {step}/{steps} loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )
    return model


def semeval_eval(model: CrossEncoder, tok, max_len: int) -> None:  # type: ignore[no-untyped-def]
    rows = [r for r in semeval_rows() if semeval_split(r["question_id"]) == "heldout"]
    pairs = [(references(r)[0], r["answer"]) for r in rows]
    pred = predict(model, tok, pairs, max_len).argmax(1)
    gold = np.array([LABELS.index(r["label"]) for r in rows])
    acc = float((pred == gold).mean())
    f1s = []
    for c in range(len(LABELS)):
        tp = float(((pred == c) & (gold == c)).sum())
        prec = tp / max(1, (pred == c).sum())
        rec = tp / max(1, (gold == c).sum())
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    nq = len({r["question_id"] for r in rows})
    print(
        f"SemEval held-out questions: {nq} questions, {len(rows)} answers: accuracy {acc:.3f}, macro-F1 "
        f"{np.mean(f1s):.3f} (F1 "
        + ", ".join(f"{k} {f:.2f}" for k, f in zip(LABELS, f1s, strict=True))
        + ")",
        flush=True,
    )


def trap_dev_tune(model: CrossEncoder, tok, args: argparse.Namespace) -> CrossEncoder:  # type: ignore[no-untyped-def]
    """Fine-tune on the "dev-fit" trap questions (never dev or heldout), with SemEval answers replayed.

    The trap's own one-line wrong claim is entailed by its wrong answer and denied by its strong answer; the
    rubric's authored contradiction claims are not stated by the strong or partial answers.
    """
    bank = load_bank(REPO)
    traps = load_traps()
    examples: list[tuple[str, str, str]] = []
    for qid, t in sorted(traps.items()):
        if split_of(qid) != "dev-fit":
            continue
        a = t.answers
        examples += [
            (a.wrong.claim, a.wrong.text, "correct"),
            (a.wrong.claim, a.strong, "contradictory"),
            (a.wrong.claim, a.partial, "incorrect"),
        ]
        for c in bank.get(qid).contradictions:
            examples += [(c.claim, a.strong, "incorrect"), (c.claim, a.partial, "incorrect")]
    rng = random.Random(1 + args.seed)
    replay = [r for r in semeval_rows() if semeval_split(r["question_id"]) == "train"]
    rng.shuffle(replay)
    examples += [(rng.choice(references(r)), r["answer"], r["label"]) for r in replay[: args.replay]]
    print(
        f"fine-tuning on {len(examples)} pairs ({len(examples) - args.replay} from dev-fit traps)", flush=True
    )
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for epoch in range(args.tune_epochs):
        rng.shuffle(examples)
        model.train()
        for i in range(0, len(examples), args.batch):
            chunk = examples[i : i + args.batch]
            enc_b = next(iter(batches(tok, [(p, h) for p, h, _ in chunk], args.max_len, len(chunk))))
            loss = loss_fn(model(**enc_b), torch.tensor([LABELS.index(y) for _, _, y in chunk]))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        print(
            f"tune epoch {epoch + 1}: loss {loss.item():.3f} ({time.perf_counter() - t0:.0f} s)", flush=True
        )
    return model


# ---------------------------------------------------------------------------------------------- traps


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+", text) if s.strip()]


def windows(text: str, mode: str) -> list[str]:
    """The parts of an answer each key point is compared with: the whole answer, or runs of sentences."""
    if mode == "whole":
        return [text]
    n = int(mode.removeprefix("sent"))
    s = sentences(text)
    if len(s) <= n:
        return [" ".join(s)]
    return [" ".join(s[i : i + n]) for i in range(len(s) - n + 1)]


def trap_probs(model: CrossEncoder, tok, max_len: int, mode: str) -> list[dict]:  # type: ignore[no-untyped-def]
    """P(label) for every (premise, answer window) pair of the trap set's strong, partial and wrong answers.

    Premises are the question's key points (source "kp") and its authored contradictions' claims (source
    "claim"; their phrasings are left out, which would triple the pairs on one CPU thread).
    """
    bank = load_bank(REPO)
    traps = load_traps()
    pairs: list[tuple[str, str]] = []
    meta: list[dict] = []
    for qid, t in sorted(traps.items()):
        q = bank.get(qid)
        texts = t.texts()
        premises = [("kp", kp) for kp in q.key_points]
        for c in q.contradictions:
            premises.append(("claim", c.claim))
        for kind in KINDS:
            for source, premise in premises:
                for w in windows(texts[kind], mode):
                    pairs.append((premise, w))
                    meta.append({"q": qid, "kind": kind, "source": source})
    probs = predict(model, tok, pairs, max_len)
    for m, p in zip(meta, probs, strict=True):
        m["p"] = p.tolist()
    return meta


# How an answer's pairs become one contradiction score.
RULES = {
    # the answer contradicts a key point
    "kp-contradicts": lambda m: m["p"][CONTRA] if m["source"] == "kp" else 0.0,
    # the answer entails an authored wrong claim (SemEval "correct" = the answer states the reference)
    "claim-entailed": lambda m: m["p"][LABELS.index("correct")] if m["source"] == "claim" else 0.0,
    "either": lambda m: m["p"][CONTRA] if m["source"] == "kp" else m["p"][LABELS.index("correct")],
}


def trap_scores(probs: list[dict], rule: str) -> dict[str, dict[str, float]]:
    """Question id -> kind -> max over that answer's pairs of the rule's score."""
    out: dict[str, dict[str, float]] = {}
    f = RULES[rule]
    for m in probs:
        d = out.setdefault(m["q"], {})
        d[m["kind"]] = max(d.get(m["kind"], 0.0), float(f(m)))
    return out


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties counting half."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


# With --trap-dev-tune, half of the dev questions are fitted on ("dev-fit") and only the other half is "dev".
FIT_DEV = False


def split_of(qid: str) -> str:
    split = question_split(qid)
    if FIT_DEV and split == "dev" and hashlib.sha256(qid.encode()).digest()[1] % 2 == 0:
        return "dev-fit"
    return split


def paired(scores: dict[str, dict[str, float]], split: str) -> dict[str, list[float]]:
    sel = [s for qid, s in sorted(scores.items()) if split_of(qid) == split and all(k in s for k in KINDS)]
    return {k: [s[k] for s in sel] for k in KINDS}


def dev_threshold(scores: dict[str, dict[str, float]]) -> float:
    """The threshold that best separates wrong from strong on dev (Youden's J, ties to the higher one)."""
    d = paired(scores, "dev")
    best, best_j = 0.5, -1.0
    for t in sorted(set(d["wrong"] + d["strong"])):
        j = np.mean([w >= t for w in d["wrong"]]) - np.mean([s >= t for s in d["strong"]])
        if j > best_j:
            best, best_j = t, float(j)
    return best


def report(name: str, scores: dict[str, dict[str, float]], threshold: float) -> None:
    for split in ("dev", "heldout"):
        d = paired(scores, split)
        n = len(d["wrong"])
        if not n:
            print(f"{name:<36}{split:<9} no answers")
            continue
        flag_w = np.mean([w >= threshold for w in d["wrong"]])
        flag_s = np.mean([s >= threshold for s in d["strong"]])
        flag_p = np.mean([s >= threshold for s in d["partial"]])
        print(
            f"{name:<36}{split:<9}{n:>4}  AUC w>s {auc(d['wrong'], d['strong']):.2f}  w>p "
            f"{auc(d['wrong'], d['partial']):.2f}  flagged wrong {flag_w:.0%} strong {flag_s:.0%} "
            f"partial {flag_p:.0%}",
            flush=True,
        )


def reader_scores(paths: Sequence[Path]) -> dict[str, dict[str, float]]:
    """1.0 when any main key point of the answer reads "contradicted", else 0.0 (last reading wins)."""
    out: dict[str, dict[str, float]] = {}
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            points = r["readings"].get("main", {}).get("points", {})
            flagged = any(v.get("finding") == "contradicted" for v in points.values())
            out.setdefault(r["question"], {})[r["kind"]] = float(flagged)
    return out


# ----------------------------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/semeval_work"))
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-pairs", type=int, default=4000)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument(
        "--modes",
        default="whole",
        help="answer windowings to compare on dev (whole, sentN: runs of N sentences)",
    )
    readings = REPO / "test-artifacts" / "readings"
    ap.add_argument(
        "--readings",
        type=Path,
        nargs="*",
        default=[readings / "traps-dev.jsonl", readings / "traps-heldout.jsonl"],
    )
    ap.add_argument("--trap-dev-tune", action="store_true", help="then fine-tune on half of the dev traps")
    ap.add_argument("--tune-epochs", type=int, default=2)
    ap.add_argument("--replay", type=int, default=320, help="SemEval answers mixed into the fine-tuning")
    ap.add_argument("--seed", type=int, default=0, help="seed of the dev-trap fine-tuning")
    ap.add_argument("--no-semeval", action="store_true", help="skip the SemEval held-out figure (re-reports)")
    args = ap.parse_args()
    global FIT_DEV
    FIT_DEV = args.trap_dev_tune
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print("uptime:", os.popen("uptime").read().strip(), flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    tag = f"e{args.epochs}-n{args.max_pairs}-l{args.max_len}-b{args.batch}-lr{args.lr}"
    ckpt = args.work / f"crossencoder-{tag}.pt"
    tok, enc = load_minilm()
    t0 = time.perf_counter()
    if ckpt.exists():
        model = CrossEncoder(enc)
        model.load_state_dict(torch.load(ckpt))
        print(f"loaded {ckpt}")
    else:
        model = train(args, tok, enc)
        torch.save(model.state_dict(), ckpt)
        print(f"trained in {time.perf_counter() - t0:.0f} s -> {ckpt}", flush=True)
    if args.trap_dev_tune:
        tag += f"-tuned{args.tune_epochs}-r{args.replay}" + (f"-s{args.seed}" if args.seed else "")
        if args.seed:  # seed 0 keeps the generator as the base run left it, so its figures reproduce
            torch.manual_seed(args.seed)
        tuned = args.work / f"crossencoder-{tag}.pt"
        if tuned.exists():
            model.load_state_dict(torch.load(tuned))
            print(f"loaded {tuned}")
        else:
            model = trap_dev_tune(model, tok, args)
            torch.save(model.state_dict(), tuned)
    if not args.no_semeval:
        semeval_eval(model, tok, args.max_len)

    print("\ncontradiction score = max over premises x answer windows (rule and windows chosen on dev)")
    results: list[tuple[float, str, dict[str, dict[str, float]]]] = []
    for mode in args.modes.split(","):
        cache = args.work / f"traps-{tag}-{mode}.json"
        if cache.exists():
            probs = json.loads(cache.read_text())
        else:
            t1 = time.perf_counter()
            probs = trap_probs(model, tok, args.max_len, mode)
            cache.write_text(json.dumps(probs))
            print(f"scored {len(probs)} trap pairs ({mode}) in {time.perf_counter() - t1:.0f} s", flush=True)
        for rule in RULES:
            scores = trap_scores(probs, rule)
            d = paired(scores, "dev")
            dev_auc = auc(d["wrong"], d["strong"])
            print(f"  {rule:<16}{mode:<7} dev AUC wrong>strong {dev_auc:.3f}")
            results.append((dev_auc, f"{rule}/{mode}", scores))
    print()
    for _, name, scores in results:  # every variant, each at its own dev threshold
        report(name, scores, dev_threshold(scores))
    _, name, scores = max(results, key=lambda r: r[0])
    threshold = dev_threshold(scores)
    print(f"\nchosen on dev: {name}, threshold {threshold:.3f}")
    report(name, scores, threshold)
    rs = reader_scores(args.readings)
    report("reader (any contradicted)", rs, 0.5)
    # The same questions only, so the two rows compare like with like.
    common = {q: s for q, s in scores.items() if q in rs and all(k in rs[q] for k in KINDS)}
    if common:
        report(f"{name} (reader's qs)", common, threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
