"""Fit the coverage model against human grades with question-level cross-validation.

``run_calibration`` reads a CSV in the Mohler layout (question_id, question, reference_answer, student_answer,
score_grader1, score_grader2, score_avg; grades 0-5), computes the coverage features of every answer with the
offline embedder, cross-validates with folds split by question (no question is ever in both the training and
the test fold), prints agreement with each grader and their average next to two baselines, then fits on all
rows and writes the parameters to ``calibration.json``. Rerun: ``python -m interviewer.scoring.calibrate``.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
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
        lines.extend(self.notes)
        if self.output:
            lines.append(f"parameters (fit on all rows) written to {self.output}")
        return "\n".join(lines)


def compute_features(
    rows: list[Row], embedder: Embedder, progress: Progress | None = None
) -> tuple[np.ndarray, list[str]]:
    """Feature matrix (rows x features) with every feature :func:`answer_features` returns."""
    enc = TextEncoder(embedder)
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
    x: np.ndarray, y: np.ndarray, fold: np.ndarray, names: Sequence[str], folds: int, groups: Sequence[str]
) -> tuple[np.ndarray, list[float]]:
    """Out-of-fold predictions; L2 strength picked per outer fold by an inner question-level CV."""
    pred = np.zeros(len(y))
    chosen: list[float] = []
    g = np.array(groups)
    for k in range(folds):
        train = fold != k
        inner = group_folds(list(g[train]), min(4, folds - 1))
        best, best_r = LAMBDAS[0], -2.0
        for lam in LAMBDAS:
            inner_pred = np.zeros(train.sum())
            for j in range(inner.max() + 1):
                m = fit_logistic(x[train][inner != j], y[train][inner != j], names, lam)
                inner_pred[inner == j] = _predict(m, x[train][inner == j])
            r = pearson(inner_pred, y[train])
            if r > best_r:
                best, best_r = lam, r
        chosen.append(best)
        model = fit_logistic(x[train], y[train], names, best)
        pred[~train] = _predict(model, x[~train])
    return pred, chosen


def run_calibration(
    csv_path: Path | str,
    folds: int = 5,
    progress: Progress | None = None,
    *,
    embedder: Embedder | None = None,
    output: Path | None = CALIBRATION_PATH,
    features_cache: Path | None = None,
) -> CalibrationReport:
    """Cross-validate the coverage model by question, report agreement, and write the fitted parameters.

    Args:
        csv_path: graded answers in the Mohler layout (grades 0-5).
        folds: number of question-level folds.
        progress: called as ``progress(stage, done, total)``.
        embedder: the embedding model (the packaged MiniLM by default).
        output: where to write calibration.json (None: do not write).
        features_cache: an .npz to reuse the features from (written when absent), to refit without re-embedding.

    Returns:
        The report; ``report.table()`` is the printable table.
    """
    rows = read_rows(Path(csv_path))
    if not rows:
        raise InputError(f"{csv_path} has no rows")
    embedder = embedder or default_embedder()
    if features_cache is not None and Path(features_cache).is_file():
        cached = np.load(features_cache, allow_pickle=False)
        if str(cached["embedder"]) != embedder.id or len(cached["x"]) != len(rows):
            raise InputError(f"{features_cache} was computed for other data or another embedder; delete it")
        x_all, names = cached["x"], [str(n) for n in cached["names"]]
    else:
        x_all, names = compute_features(rows, embedder, progress)
        if features_cache is not None:
            np.savez(features_cache, x=x_all, names=np.array(names), embedder=np.array(embedder.id))
    col = {n: i for i, n in enumerate(names)}
    g1 = np.array([r.grader1 for r in rows])
    g2 = np.array([r.grader2 for r in rows])
    avg = (g1 + g2) / 2
    scale = 5.0
    groups = [r.question_id for r in rows]
    fold = group_folds(groups, folds)
    targets = {"grader1": g1, "grader2": g2, "average": avg}

    def versus(pred: np.ndarray) -> dict[str, dict[str, float]]:
        return {t: agreement(pred, v) for t, v in targets.items()}

    table: dict[str, dict[str, dict[str, float]]] = {}
    table["baseline: grader 1 vs grader 2"] = {"grader2": agreement(g1, g2)}
    # Cosine baseline: r is the raw cosine's; kappa and MAE need the 0-5 scale, so a linear map fit out of fold.
    cos = x_all[:, col["cos_reference"]]
    lin = np.zeros(len(cos))
    for k in range(folds):
        tr = fold != k
        a, b = np.polyfit(cos[tr], avg[tr], 1)
        lin[~tr] = np.clip(a * cos[~tr] + b, 0, scale)
    table["baseline: cosine(answer, reference)"] = versus(lin)
    table["baseline: cosine(answer, reference)"]["average"]["r"] = round(pearson(cos, avg), 4)
    recall = np.array([_word_recall(r.answer, r.reference) for r in rows])
    table["baseline: word recall of reference"] = {
        "average": {"r": round(pearson(recall, avg), 4), "qwk": float("nan"), "mae": float("nan")}
    }

    answer_x = x_all[:, [col[n] for n in ANSWER_FEATURES]]
    kp_x = x_all[:, [col[n] for n in KEY_POINT_FEATURES]]
    if progress:
        progress("cross-validation", 0, 2)
    pred_answer, lams = _cv_predict(answer_x, avg / scale, fold, ANSWER_FEATURES, folds, groups)
    table["scorer: coverage model (answer level)"] = versus(np.clip(pred_answer * scale, 0, scale))
    if progress:
        progress("cross-validation", 1, 2)
    pred_kp, kp_lams = _cv_predict(kp_x, avg / scale, fold, KEY_POINT_FEATURES, folds, groups)
    table["scorer: key-point model (recall only)"] = versus(np.clip(pred_kp * scale, 0, scale))
    if progress:
        progress("cross-validation", 2, 2)

    # A key point counts as covered where the out-of-fold recall model best separates answers the graders
    # gave (nearly) full credit from the rest (balanced accuracy).
    threshold = _best_threshold(pred_kp, avg >= FULL_CREDIT)
    final_lam = float(np.median(lams))
    answer_model = fit_logistic(answer_x, avg / scale, ANSWER_FEATURES, final_lam)
    kp_model = fit_logistic(kp_x, avg / scale, KEY_POINT_FEATURES, float(np.median(kp_lams)))
    notes = [
        "qwk rounds both sides half up to integers 0-5; the cosine baseline's r is the raw cosine's, its "
        "qwk/mae use a linear map fit out of fold; word recall: raw r only",
        f"L2 strength per outer fold (inner question-level CV): {lams}; key-point model: {kp_lams}",
        f"key point covered from a recall-model fraction of {threshold:.3f} (best balanced accuracy for "
        f"'graders' average >= {FULL_CREDIT}', out of fold)",
    ]
    report = CalibrationReport(
        len(rows), len(set(groups)), folds, table, lams, output if output is not None else None, notes
    )
    if output is not None:
        payload: dict[str, Any] = {
            "about": "Coverage scorer parameters: level = 4 * sigmoid(bias + sum(weights * (x - mean) / std)). "
            "Fitted by `python -m interviewer.scoring.calibrate` on human grades (0-5, divided by 5).",
            "dataset": str(Path(csv_path).name),
            "fitted": datetime.now(UTC).strftime("%Y-%m-%d"),
            "embedder": embedder.id,
            "n_answers": len(rows),
            "n_questions": len(set(groups)),
            "cv_folds": folds,
            "cv_average": table["scorer: coverage model (answer level)"]["average"],
            "covered_threshold": round(threshold, 4),
            "answer_model": {**answer_model.to_json(), "l2": final_lam},
            "key_point_model": {**kp_model.to_json(), "l2": float(np.median(kp_lams))},
        }
        Path(output).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return report


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
    import argparse

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("csv", nargs="?", default=str(_default_csv()))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="report only; leave calibration.json alone")
    parser.add_argument("--features-cache", type=Path, default=None, help="reuse/save the features (.npz)")
    args = parser.parse_args(argv)
    with Progress(
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
