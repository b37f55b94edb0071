"""Load and validate the question bank from ``rubrics/<round>/*.yaml``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from interviewer.content.models import Question, Round
from interviewer.errors import ContentError


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        parts.append(f"field '{loc}': {e['msg']}")
    return "; ".join(parts)


M = TypeVar("M", bound=BaseModel)


def load_yaml_model(path: Path, model: type[M], expected: str) -> M:
    """Parse one YAML file into ``model``.

    Raises:
        ContentError: naming the file, the field and what was expected (``expected`` describes the mapping).
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ContentError(f"{path}: not valid YAML ({e})") from e
    except OSError as e:
        raise ContentError(f"{path}: cannot read ({e.strerror})") from e
    if not isinstance(data, dict):
        raise ContentError(f"{path}: expected a mapping of {expected}, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ContentError(f"{path}: {_describe(e)}") from e


def load_question(path: Path) -> Question:
    """Parse one rubric file.

    Raises:
        ContentError: naming the file, the field and what was expected.
    """
    q = load_yaml_model(path, Question, "rubric fields")
    if path.parent.name != q.round.value:
        raise ContentError(
            f"{path}: field 'round' is '{q.round.value}' but the file is under '{path.parent.name}/'; "
            "move the file or fix the field"
        )
    return q


@dataclass
class Bank:
    """All questions, indexed by id and by round; ``root`` is the content root (holds rubrics/, knowledge/)."""

    root: Path
    questions: dict[str, Question] = field(default_factory=dict)

    def by_round(self, round_: Round | str) -> list[Question]:
        r = Round(round_)
        return sorted(
            (q for q in self.questions.values() if q.round == r), key=lambda q: (q.difficulty, q.id)
        )

    def rounds(self) -> list[Round]:
        present = {q.round for q in self.questions.values()}
        return [r for r in Round if r in present]

    def get(self, qid: str) -> Question:
        try:
            return self.questions[qid]
        except KeyError as e:
            raise ContentError(f"no question with id '{qid}' in {self.root / 'rubrics'}") from e

    def with_questions(self, extra: list[Question]) -> Bank:
        """A copy that also holds ``extra`` (e.g. questions generated from a candidate's resume)."""
        return Bank(root=self.root, questions={**self.questions, **{q.id: q for q in extra}})

    def knowledge_path(self, link: str) -> Path:
        return self.root / link

    def fingerprint(self) -> str:
        """A hash of every content file, so an index can tell whether it is stale."""
        h = hashlib.sha256()
        for sub in ("rubrics", "knowledge"):
            base = self.root / sub
            for p in sorted(base.rglob("*")) if base.exists() else []:
                if p.is_file() and p.suffix in {".yaml", ".yml", ".md"}:
                    h.update(str(p.relative_to(self.root)).encode())
                    h.update(p.read_bytes())
        return h.hexdigest()[:16]


def _rubric_files(root: Path) -> Iterable[Path]:
    base = root / "rubrics"
    for r in Round:
        folder = base / r.value
        if folder.is_dir():
            yield from sorted(folder.glob("*.yaml"))


def load_bank(root: Path) -> Bank:
    """Load every rubric under ``root/rubrics``; duplicate ids and dangling knowledge links are errors."""
    if not (root / "rubrics").is_dir():
        raise ContentError(f"no rubrics folder at {root / 'rubrics'}; set INTERVIEWER_CONTENT_DIR")
    bank = Bank(root=root)
    for path in _rubric_files(root):
        q = load_question(path)
        if q.id in bank.questions:
            raise ContentError(f"{path}: field 'id': '{q.id}' is already used by another rubric")
        for link in q.knowledge:
            if not (root / link).is_file():
                raise ContentError(f"{path}: field 'knowledge': '{link}' does not exist under {root}")
        bank.questions[q.id] = q
    if not bank.questions:
        raise ContentError(f"no rubric files under {root / 'rubrics'}")
    return bank
