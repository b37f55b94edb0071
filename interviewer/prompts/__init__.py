"""Prompt templates live in files beside this module, with named ``{variables}``; a missing one is an error."""

from __future__ import annotations

import string
from functools import cache
from pathlib import Path

from interviewer.errors import ContentError

PROMPT_DIR = Path(__file__).resolve().parent


@cache
def template(name: str) -> str:
    path = PROMPT_DIR / f"{name}.txt"
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ContentError(f"prompt template {path} is missing; reinstall the package") from e


def variables(name: str) -> set[str]:
    """The named variables a template uses."""
    return {field for _, field, _, _ in string.Formatter().parse(template(name)) if field}


def render(name: str, **values: str) -> str:
    """Fill a template; every variable it names must be given, and no unknown ones.

    Raises:
        ContentError: naming the template and the missing or unexpected variables.
    """
    needed = variables(name)
    missing = needed - values.keys()
    extra = values.keys() - needed
    if missing or extra:
        raise ContentError(
            f"prompt '{name}': missing variables {sorted(missing)}, unexpected {sorted(extra)}"
        )
    return template(name).format(**values)


def round_style(round_id: str) -> str:
    """The round's interviewer persona (``rounds/<round>.txt``)."""
    return template(f"rounds/{round_id}").strip()
