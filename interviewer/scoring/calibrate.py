"""Fit the coverage model against human grades with question-level cross-validation.

``run_calibration`` reads a CSV in the Mohler layout (question_id, question, reference_answer, student_answer,
score_grader1, score_grader2, score_avg; grades 0-5), computes the coverage features of every answer with the
offline embedder, cross-validates with folds split by question (no question is ever in both the training and
the test fold), prints agreement with each grader and their average next to two baselines, then fits on all
rows and writes the parameters to ``calibration.json``. Rerun: ``python -m interviewer.scoring.calibrate``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as ProgressBar
from scipy.optimize import minimize

from interviewer.config import MOHLER_CSV
from interviewer.embeddings import Embedder, default_embedder
from interviewer.errors import InputError
from interviewer.scoring.coverage import (
    ANSWER_FEATURES,
    CALIBRATION_PATH,
    KEY_POINT_FEATURES,
    LogisticLevel,
    TextEncoder,
    answer_features,
    split_sentences,
    words,
)

Progress = Callable[[str, int, int], None]  # (stage, done, total)

LAMBDAS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)  # L2 strengths tried by the inner cross-validation
FULL_CREDIT = 4.5  # on the 0-5 scale: the graders' average for an answer they consider (nearly) fully right
RIGHT_FROM = 4.0  # AUC: answers the graders averaged at >= 4 of 5 ("right") ...
WRONG_UP_TO = 2.5  # ... against those at <= 2.5 ("wrong")
# Off-topic negatives: each question also sees this many answers written for other questions, graded 0. Human
# grades alone (Mohler averages 4.2/5) teach the model that almost anything deserves a 4, so its intercept
# carried the score; answers to other questions show it what "nothing of this question" looks like.
NEGATIVES_PER_QUESTION = 2
NEGATIVE_SEED = 11
_REQUIRED = (
    "question_id",
    "question",
    "reference_answer",
    "student_answer",
    "score_grader1",
    "score_grader2",
)


@dataclass(frozen=True)
class Row:
    """One graded answer."""

    question_id: str
    question: str
    reference: str
    answer: str
    grader1: float
    grader2: float

    @property
    def average(self) -> float:
        return (self.grader1 + self.grader2) / 2


def read_rows(csv_path: Path) -> list[Row]:
    """Read the graded answers; the message says which column is missing."""
    try:
        with Path(csv_path).open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{csv_path} lacks the columns {missing}; expected {list(_REQUIRED)}")
            return [
                Row(
                    r["question_id"],
                    r["question"],
                    r["reference_answer"],
                    r["student_answer"],
                    float(r["score_grader1"]),
                    float(r["score_grader2"]),
                )
                for r in reader
            ]
    except OSError as e:
        raise InputError(f"cannot read {csv_path}: {e}; pass the path of a graded-answers CSV") from e
    except ValueError as e:
        raise InputError(f"{csv_path} has a non-numeric grade ({e})") from e


def group_folds(groups: Sequence[str], folds: int) -> np.ndarray:
    """Fold index per row, whole groups per fold, balanced by size (like scikit-learn's GroupKFold)."""
    sizes: dict[str, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    if len(sizes) < folds:
        raise InputError(f"{len(sizes)} questions cannot make {folds} question-level folds; use fewer folds")
    load = [0] * folds
    assign: dict[str, int] = {}
    for g in sorted(sizes, key=lambda g: (-sizes[g], g)):  # largest first into the lightest fold
        k = min(range(folds), key=lambda i: (load[i], i))
        assign[g] = k
        load[k] += sizes[g]
    return np.array([assign[g] for g in groups])


def fit_logistic(x: np.ndarray, y: np.ndarray, names: Sequence[str], lam: float) -> LogisticLevel:
    """Least squares of ``sigmoid(b + w.z)`` to fractions ``y`` in [0, 1] on standardised ``x``, L2 on ``w``."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std < 1e-9] = 1.0
    z = np.c_[np.ones(len(x)), (x - mean) / std]
    n = len(y)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
        r = s - y
        grad = z.T @ (2 * r * s * (1 - s)) / n
        grad[1:] += 2 * lam * w[1:] / len(names)
        return float((r**2).mean() + lam * (w[1:] ** 2).sum() / len(names)), grad

    w = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B").x
    return LogisticLevel(
        tuple(names), tuple(mean.tolist()), tuple(std.tolist()), tuple(w[1:].tolist()), float(w[0])
    )


def _predict(model: LogisticLevel, x: np.ndarray) -> np.ndarray:
    z = model.bias + ((x - np.array(model.mean)) / np.array(model.std)) @ np.array(model.weights)
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation (0 when either side is constant)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    sa, sb = a.std(), b.std()
    return float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb)) if sa > 0 and sb > 0 else 0.0


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(x, float) + 0.5).astype(int)


def quadratic_kappa(a: np.ndarray, b: np.ndarray, lo: int = 0, hi: int = 5) -> float:
    """Quadratic-weighted Cohen's kappa of two integer ratings on ``lo..hi`` (inputs rounded half up)."""
    ra = np.clip(_round_half_up(a), lo, hi) - lo
    rb = np.clip(_round_half_up(b), lo, hi) - lo
    k = hi - lo + 1
    observed = np.zeros((k, k))
    for i, j in zip(ra, rb, strict=True):
        observed[i, j] += 1
    expected = np.outer(observed.sum(1), observed.sum(0)) / observed.sum()
    weights = np.array([[(i - j) ** 2 for j in range(k)] for i in range(k)]) / (k - 1) ** 2
    denom = (weights * expected).sum()
    return float(1 - (weights * observed).sum() / denom) if denom > 0 else 0.0


def agreement(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Pearson r, quadratic-weighted kappa and mean absolute error."""
    return {
        "r": round(pearson(pred, truth), 4),
        "qwk": round(quadratic_kappa(pred, truth), 4),
        "mae": round(float(np.abs(np.asarray(pred) - np.asarray(truth)).mean()), 4),
    }


@dataclass
class CalibrationReport:
    """Cross-validated agreement of the scorer and the baselines, and where the parameters went."""

    n_answers: int
    n_questions: int
    folds: int
    rows: dict[str, dict[str, dict[str, float]]]  # method -> target (grader1/grader2/average) -> metrics
    lambdas: list[float]
    output: Path | None
    notes: list[str] = field(default_factory=list)
    separation: dict[str, float] = field(default_factory=dict)  # out-of-fold AUC and negatives' mean level

    def table(self) -> str:
        """A fixed-width table: one line per method, r / kappa / MAE against each target."""
        head = f"{'method':<44}" + "".join(
            f"{t + ' r/qwk/mae':>24}" for t in ("grader1", "grader2", "average")
        )
        lines = [
            f"{self.n_answers} answers, {self.n_questions} questions, {self.folds}-fold question-level CV "
            "(0-5 scale)",
            head,
            "-" * len(head),
        ]
        for name, per in self.rows.items():
            cells = []
            for t in ("grader1", "grader2", "average"):
                m = per.get(t)
                cells.append(f"{m['r']:.3f} / {m['qwk']:.3f} / {m['mae']:.3f}" if m else "-")
            lines.append(f"{name:<44}" + "".join(f"{c:>24}" for c in cells))
        if self.separation:
            sep = self.separation
            lines.append(
                f"out of fold, 0-4 scale: AUC right (avg >= {RIGHT_FROM}) vs wrong (<= {WRONG_UP_TO}) "
                f"{sep['auc']:.3f}; mean level right {sep['right']:.2f}, wrong {sep['wrong']:.2f}, "
                f"answers to other questions {sep['off_topic']:.2f} (n={int(sep['n_negatives'])}); "
                f"wrong answers at >= 2.5: {sep['wrong_high']:.0%}"
            )
        lines.extend(self.notes)
        if self.output:
            lines.append(f"parameters (fit on all rows) written to {self.output}")
        return "\n".join(lines)


def compute_features(
    rows: list[Row], embedder: Embedder, progress: Progress | None = None
) -> tuple[np.ndarray, list[str]]:
    """Feature matrix (rows x features) with every feature :func:`answer_features` returns."""
    enc = TextEncoder(embedder, token_bytes=None, sentence_bytes=None)  # one pass: keep every text
    texts = sorted({t for r in rows for t in (r.answer, r.reference, r.question)})
    sentences = sorted({s for r in rows for s in split_sentences(r.answer)} - set(texts))
    step = 64
    total = len(texts) + len(sentences)
    done = 0
    for i in range(0, len(texts), step):
        batch = texts[i : i + step]
        enc.tokens(batch)
        enc.sentences(batch)
        done += len(batch)
        if progress:
            progress("embedding", done, total)
    for i in range(0, len(sentences), step):
        enc.sentences(sentences[i : i + step])
        done += len(sentences[i : i + step])
        if progress:
            progress("embedding", done, total)
    names: list[str] = []
    out: list[list[float]] = []
    for i, r in enumerate(rows):
        f = answer_features(enc, r.answer, r.reference, r.question)
        names = list(f)
        out.append([f[n] for n in names])
        if progress and (i % 100 == 0 or i == len(rows) - 1):
            progress("features", i + 1, len(rows))
    return np.array(out), names


def _cv_predict(
    x: np.ndarray,
    y: np.ndarray,
    fold: np.ndarray,
    names: Sequence[str],
    folds: int,
    groups: Sequence[str],
    extra: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]] | None = None,
) -> tuple[np.ndarray, list[float], np.ndarray]:
    """Out-of-fold predictions; L2 strength picked per outer fold by an inner question-level CV.

    ``extra`` = (x, y, fold, groups) of added training rows (the off-topic negatives): they join the training
    side of every split whose held-out questions they do not belong to, and are never scored in ``pred`` (the
    inner CV picks the L2 strength by Pearson r on the real rows only). Returns the out-of-fold predictions
    of the real rows, the chosen strengths and the out-of-fold predictions of the extra rows.
    """
    pred = np.zeros(len(y))
    chosen: list[float] = []
    g = np.array(groups)
    ex, ey, efold, egroups = extra or (np.zeros((0, x.shape[1])), np.zeros(0), np.zeros(0, int), [])
    eg = np.array(egroups)
    extra_pred = np.zeros(len(ey))
    for k in range(folds):
        train = fold != k
        etrain = efold != k
        inner = group_folds(list(g[train]), min(4, folds - 1))
        inner_of = dict(zip(g[train], inner, strict=True))
        einner = np.array([inner_of.get(q, -1) for q in eg[etrain]], dtype=int)
        best, best_r = LAMBDAS[0], -2.0
        for lam in LAMBDAS:
            inner_pred = np.zeros(train.sum())
            for j in range(inner.max() + 1):
                xs = np.r_[x[train][inner != j], ex[etrain][einner != j]]
                ys = np.r_[y[train][inner != j], ey[etrain][einner != j]]
                m = fit_logistic(xs, ys, names, lam)
                inner_pred[inner == j] = _predict(m, x[train][inner == j])
            r = pearson(inner_pred, y[train])
            if r > best_r:
                best, best_r = lam, r
        chosen.append(best)
        model = fit_logistic(np.r_[x[train], ex[etrain]], np.r_[y[train], ey[etrain]], names, best)
        pred[~train] = _predict(model, x[~train])
        if len(ey):
            extra_pred[~etrain] = _predict(model, ex[~etrain])
    return pred, chosen, extra_pred


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve: the chance a positive outscores a negative (ties count half)."""
    s = np.asarray(scores, float)
    pos, neg = s[np.asarray(positive, bool)], s[~np.asarray(positive, bool)]
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = _average_ranks(np.r_[pos, neg])
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def off_topic_negatives(rows: list[Row], per_question: int, seed: int = NEGATIVE_SEED) -> list[Row]:
    """Answers to other questions, asked of each question with grade 0 (a fixed sample per seed)."""
    rng = random.Random(seed)
    by_q: dict[str, list[Row]] = {}
    for r in rows:
        by_q.setdefault(r.question_id, []).append(r)
    ids = sorted(by_q)
    out: list[Row] = []
    for qid in ids:
        own = by_q[qid][0]
        others = [o for o in ids if o != qid]
        for other in rng.sample(others, min(per_question, len(others))):
            src = rng.choice(by_q[other])
            out.append(Row(qid, own.question, own.reference, src.answer, 0.0, 0.0))
    return out


def run_calibration(
    csv_path: Path | str,
    folds: int = 5,
    progress: Progress | None = None,
    *,
    embedder: Embedder | None = None,
    output: Path | None = CALIBRATION_PATH,
    features_cache: Path | None = None,
    negatives_per_question: int = NEGATIVES_PER_QUESTION,
) -> CalibrationReport:
    """Cross-validate the coverage model by question, report agreement, and write the fitted parameters.

    Args:
        csv_path: graded answers in the Mohler layout (grades 0-5).
        folds: number of question-level folds.
        progress: called as ``progress(stage, done, total)``.
        embedder: the embedding model (the packaged MiniLM by default).
        output: where to write calibration.json (None: do not write).
        features_cache: an .npz to reuse the features from (written when absent), to refit without re-embedding.
        negatives_per_question: answers to other questions added per question with grade 0 (training only;
            every agreement figure is on the real rows).

    Returns:
        The report; ``report.table()`` is the printable table.
    """
    rows = read_rows(Path(csv_path))
    if not rows:
        raise InputError(f"{csv_path} has no rows")
    embedder = embedder or default_embedder()
    x_all, names = _features(rows, embedder, features_cache, progress)
    negatives = off_topic_negatives(rows, negatives_per_question) if negatives_per_question > 0 else []
    x_neg = _negative_features(negatives, names, embedder, features_cache, negatives_per_question, progress)
    data = _Data.of(rows, x_all, names, folds, negatives, x_neg)
    table = _baselines(data, rows)
    fit = _cross_validate(data, table, progress)
    separation = _separation(data, fit)
    notes = [
        "qwk rounds both sides half up to integers 0-5; the cosine baseline's r is the raw cosine's, its "
        "qwk/mae use a linear map fit out of fold; word recall: raw r only",
        f"L2 strength per outer fold (inner question-level CV): {fit.lams}; key-point model: {fit.kp_lams}",
        f"key point covered from a recall-model fraction of {fit.threshold:.3f} (best balanced accuracy for "
        f"'graders' average >= {FULL_CREDIT}', out of fold)",
        f"training also saw {len(negatives)} answers to other questions graded 0 "
        f"({negatives_per_question} per question, seed {NEGATIVE_SEED}), split with their question",
    ]
    n_questions = len(set(data.groups))
    report = CalibrationReport(len(rows), n_questions, folds, table, fit.lams, output, notes, separation)
    if output is not None:
        payload: dict[str, Any] = {
            "about": "Coverage scorer parameters: level = 4 * sigmoid(bias + sum(weights * (x - mean) / std)). "
            "Fitted by `python -m interviewer.scoring.calibrate` on human grades (0-5, divided by 5).",
            "dataset": str(Path(csv_path).name),
            "fitted": datetime.now(UTC).strftime("%Y-%m-%d"),
            "embedder": embedder.id,
            "n_answers": len(rows),
            "n_questions": n_questions,
            "cv_folds": folds,
            "cv_average": table["scorer: coverage model (answer level)"]["average"],
            "cv_separation": separation,
            "negatives_per_question": negatives_per_question,
            "covered_threshold": round(fit.threshold, 4),
            "answer_model": {**fit.answer_model.to_json(), "l2": float(np.median(fit.lams))},
            "key_point_model": {**fit.kp_model.to_json(), "l2": float(np.median(fit.kp_lams))},
        }
        Path(output).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return report


def _features(
    rows: list[Row], embedder: Embedder, cache: Path | None, progress: Progress | None
) -> tuple[np.ndarray, list[str]]:
    """The answers' features, from ``cache`` when it holds them (written there when it does not)."""
    if cache is not None and Path(cache).is_file():
        cached = np.load(cache, allow_pickle=False)
        if str(cached["embedder"]) != embedder.id or len(cached["x"]) != len(rows):
            raise InputError(f"{cache} was computed for other data or another embedder; delete it")
        return cached["x"], [str(n) for n in cached["names"]]
    x_all, names = compute_features(rows, embedder, progress)
    if cache is not None:
        np.savez(cache, x=x_all, names=np.array(names), embedder=np.array(embedder.id))
    return x_all, names


def _negative_features(
    negatives: list[Row],
    names: list[str],
    embedder: Embedder,
    cache: Path | None,
    per_question: int,
    progress: Progress | None,
) -> np.ndarray:
    """The off-topic negatives' features, cached beside the answers' (``<cache>.negatives<N>.npz``)."""
    neg_cache = Path(f"{cache}.negatives{per_question}.npz") if cache is not None else None
    if neg_cache is not None and neg_cache.is_file():
        cached = np.load(neg_cache, allow_pickle=False)
        if str(cached["embedder"]) != embedder.id or len(cached["x"]) != len(negatives):
            raise InputError(f"{neg_cache} was computed for other data or another embedder; delete it")
        return np.asarray(cached["x"])
    if not negatives:
        return np.zeros((0, len(names)))
    x_neg, neg_names = compute_features(negatives, embedder, progress)
    if neg_names != names:
        raise InputError("the negatives' features differ from the answers'; delete the features cache")
    if neg_cache is not None:
        np.savez(neg_cache, x=x_neg, embedder=np.array(embedder.id))
    return x_neg


SCALE = 5.0  # the graders' scale


@dataclass
class _Data:
    """Everything the cross-validation reads: features, targets, folds, and the negatives beside them."""

    x_all: np.ndarray
    col: dict[str, int]
    g1: np.ndarray
    g2: np.ndarray
    avg: np.ndarray
    groups: list[str]
    fold: np.ndarray
    folds: int
    x_neg: np.ndarray
    neg_groups: list[str]
    neg_fold: np.ndarray

    @classmethod
    def of(
        cls,
        rows: list[Row],
        x_all: np.ndarray,
        names: list[str],
        folds: int,
        negatives: list[Row],
        x_neg: np.ndarray,
    ) -> _Data:
        g1 = np.array([r.grader1 for r in rows])
        g2 = np.array([r.grader2 for r in rows])
        groups = [r.question_id for r in rows]
        fold = group_folds(groups, folds)
        fold_of = dict(zip(groups, fold, strict=True))
        neg_groups = [r.question_id for r in negatives]
        neg_fold = np.array([fold_of[g] for g in neg_groups], dtype=int)
        col = {n: i for i, n in enumerate(names)}
        return cls(x_all, col, g1, g2, (g1 + g2) / 2, groups, fold, folds, x_neg, neg_groups, neg_fold)

    def versus(self, pred: np.ndarray) -> dict[str, dict[str, float]]:
        return {
            t: agreement(pred, v)
            for t, v in (("grader1", self.g1), ("grader2", self.g2), ("average", self.avg))
        }

    def x(self, feats: Sequence[str]) -> np.ndarray:
        return self.x_all[:, [self.col[n] for n in feats]]

    def extra(self, feats: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The negatives as extra training rows for :func:`_cv_predict` (grade 0)."""
        return (
            self.x_neg[:, [self.col[n] for n in feats]],
            np.zeros(len(self.neg_groups)),
            self.neg_fold,
            self.neg_groups,
        )


def _baselines(data: _Data, rows: list[Row]) -> dict[str, dict[str, dict[str, float]]]:
    """The agreement table's baselines: the two graders, the raw cosine, word recall of the reference."""
    avg, fold = data.avg, data.fold
    table: dict[str, dict[str, dict[str, float]]] = {}
    table["baseline: grader 1 vs grader 2"] = {"grader2": agreement(data.g1, data.g2)}
    # Cosine baseline: r is the raw cosine's; kappa and MAE need the 0-5 scale, so a linear map fit out of fold.
    cos = data.x_all[:, data.col["cos_reference"]]
    lin = np.zeros(len(cos))
    for k in range(data.folds):
        tr = fold != k
        a, b = np.polyfit(cos[tr], avg[tr], 1)
        lin[~tr] = np.clip(a * cos[~tr] + b, 0, SCALE)
    table["baseline: cosine(answer, reference)"] = data.versus(lin)
    table["baseline: cosine(answer, reference)"]["average"]["r"] = round(pearson(cos, avg), 4)
    recall = np.array([_word_recall(r.answer, r.reference) for r in rows])
    table["baseline: word recall of reference"] = {
        "average": {"r": round(pearson(recall, avg), 4), "qwk": float("nan"), "mae": float("nan")}
    }
    return table


@dataclass
class _Fit:
    """The cross-validated predictions and the models fitted on every row."""

    pred_answer: np.ndarray
    neg_pred: np.ndarray
    lams: list[float]
    kp_lams: list[float]
    threshold: float
    answer_model: LogisticLevel
    kp_model: LogisticLevel


def _cross_validate(
    data: _Data, table: dict[str, dict[str, dict[str, float]]], progress: Progress | None
) -> _Fit:
    """Out-of-fold agreement of the answer and key-point models (into ``table``), then the final fits."""
    y = data.avg / SCALE
    answer_x, kp_x = data.x(ANSWER_FEATURES), data.x(KEY_POINT_FEATURES)
    if progress:
        progress("cross-validation", 0, 2)
    pred_answer, lams, neg_pred = _cv_predict(
        answer_x, y, data.fold, ANSWER_FEATURES, data.folds, data.groups, data.extra(ANSWER_FEATURES)
    )
    table["scorer: coverage model (answer level)"] = data.versus(np.clip(pred_answer * SCALE, 0, SCALE))
    if progress:
        progress("cross-validation", 1, 2)
    pred_kp, kp_lams, _ = _cv_predict(
        kp_x, y, data.fold, KEY_POINT_FEATURES, data.folds, data.groups, data.extra(KEY_POINT_FEATURES)
    )
    table["scorer: key-point model (recall only)"] = data.versus(np.clip(pred_kp * SCALE, 0, SCALE))
    if progress:
        progress("cross-validation", 2, 2)
    # A key point counts as covered where the out-of-fold recall model best separates answers the graders
    # gave (nearly) full credit from the rest (balanced accuracy).
    threshold = _best_threshold(pred_kp, data.avg >= FULL_CREDIT)
    ex_answer, neg_y = data.extra(ANSWER_FEATURES)[:2]
    ex_kp = data.extra(KEY_POINT_FEATURES)[0]
    answer_model = fit_logistic(
        np.r_[answer_x, ex_answer], np.r_[y, neg_y], ANSWER_FEATURES, float(np.median(lams))
    )
    kp_model = fit_logistic(
        np.r_[kp_x, ex_kp], np.r_[y, neg_y], KEY_POINT_FEATURES, float(np.median(kp_lams))
    )
    return _Fit(pred_answer, neg_pred, lams, kp_lams, threshold, answer_model, kp_model)


def _separation(data: _Data, fit: _Fit) -> dict[str, float]:
    """Out of fold, 0-4 scale: AUC right vs wrong, mean levels, and the negatives' mean level."""
    right, wrong = data.avg >= RIGHT_FROM, data.avg <= WRONG_UP_TO
    level = 4.0 * fit.pred_answer
    neg_pred = fit.neg_pred
    return {
        "auc": round(auc(level[right | wrong], right[right | wrong]), 4),
        "right": round(float(level[right].mean()), 3),
        "wrong": round(float(level[wrong].mean()), 3),
        "wrong_high": round(float((level[wrong] >= 2.5).mean()), 4),
        "off_topic": round(float(4.0 * neg_pred.mean()), 3) if len(neg_pred) else float("nan"),
        "n_negatives": float(len(data.neg_groups)),
    }


TRAP_KINDS = ("strong", "partial", "wrong", "off_topic")


@dataclass
class TrapFigures:
    """How the scorer ranks the trap set's four answers per question (see tests/data/traps/README.md)."""

    n_questions: int
    means: dict[str, float]  # kind -> mean overall (0-4)
    ordered: float  # share of questions with strong > partial > wrong
    wrong_high: float  # share of wrong answers at >= 2.5
    per_question: dict[str, dict[str, float]]  # question id -> kind -> overall

    def lines(self, label: str = "trap set") -> list[str]:
        """Printable lines: means per kind, ordering rate."""
        m = self.means
        return [
            f"{label}: {self.n_questions} questions; mean overall strong {m['strong']:.2f}, partial "
            f"{m['partial']:.2f}, wrong {m['wrong']:.2f}, off-topic {m['off_topic']:.2f}; strong > partial > "
            f"wrong on {self.ordered:.0%}; wrong answers at >= 2.5: {self.wrong_high:.0%}"
        ]


def read_traps(root: Path) -> dict[str, dict[str, str]]:
    """The trap set under ``root`` (``<round>/<question-id>.yaml``): question id -> kind -> answer text.

    Files that lack one of the four kinds are skipped (a trap set being written is still readable).
    """
    out: dict[str, dict[str, str]] = {}
    for path in sorted(Path(root).glob("*/*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise InputError(f"cannot read the trap file {path}: {e}") from e
        answers = data.get("answers") or {}
        wrong = answers.get("wrong")
        texts = {
            "strong": answers.get("strong"),
            "partial": answers.get("partial"),
            "wrong": wrong.get("text") if isinstance(wrong, dict) else wrong,
            "off_topic": answers.get("off_topic"),
        }
        if data.get("question") and all(isinstance(t, str) and t.strip() for t in texts.values()):
            out[str(data["question"])] = {k: str(v) for k, v in texts.items()}
    return out


def trap_figures(
    traps: dict[str, dict[str, str]], score: Callable[[str, str], float], ids: Sequence[str] | None = None
) -> TrapFigures | None:
    """Score every trap answer with ``score(question_id, answer)`` (0-4); None when there is nothing to score.

    ``ids`` restricts to some questions (a held-out half); ids not in ``traps`` are ignored.
    """
    chosen = [q for q in (ids if ids is not None else sorted(traps)) if q in traps]
    if not chosen:
        return None
    per = {q: {k: float(score(q, traps[q][k])) for k in TRAP_KINDS} for q in chosen}
    means = {k: float(np.mean([per[q][k] for q in chosen])) for k in TRAP_KINDS}
    ordered = float(np.mean([per[q]["strong"] > per[q]["partial"] > per[q]["wrong"] for q in chosen]))
    wrong_high = float(np.mean([per[q]["wrong"] >= 2.5 for q in chosen]))
    return TrapFigures(len(chosen), means, ordered, wrong_high, per)


def held_out_half(question_id: str) -> bool:
    """The reporting half of a question-id split (stable: the first byte of the id's sha256 is odd).

    The same split as the trap set's loader (tests/support/traps.py, "heldout"): tune on the other half only.
    """
    return hashlib.sha256(question_id.encode()).digest()[0] % 2 == 1


def _best_threshold(pred: np.ndarray, positive: np.ndarray) -> float:
    """The cut on ``pred`` with the best balanced accuracy for ``positive``."""
    best, best_score = 0.5, -1.0
    for t in np.unique(np.round(pred, 3)):
        hit = pred >= t
        tpr = (hit & positive).sum() / max(1, positive.sum())
        tnr = (~hit & ~positive).sum() / max(1, (~positive).sum())
        if (tpr + tnr) / 2 > best_score:
            best, best_score = float(t), (tpr + tnr) / 2
    return best


def _word_recall(answer: str, reference: str) -> float:
    ref = set(words(reference))
    return len(ref & set(words(answer))) / len(ref) if ref else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m interviewer.scoring.calibrate [CSV] [--folds N] [--no-write]`` with a progress bar."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("csv", nargs="?", default=str(_default_csv()))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="report only; leave calibration.json alone")
    parser.add_argument("--features-cache", type=Path, default=None, help="reuse/save the features (.npz)")
    args = parser.parse_args(argv)
    with ProgressBar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
    ) as bar:
        tasks: dict[str, Any] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        report = run_calibration(
            args.csv, args.folds, tick, output=None if args.no_write else CALIBRATION_PATH
        )
    print(report.table())
    return 0


def _default_csv() -> Path:
    return MOHLER_CSV


if __name__ == "__main__":
    sys.exit(main())
