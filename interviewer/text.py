"""Text at the boundary: what any user-supplied string becomes before the engine, the store or a prompt sees it.

One function, :func:`clean`: Unicode NFC, lone surrogates dropped (they cannot be encoded as UTF-8 and would
poison every later read), control and format characters dropped except newline and tab (zero-width spaces,
bidi overrides, NUL). :func:`is_blank` says whether nothing readable is left. :func:`clean_tree` applies
:func:`clean` to every string in a JSON-like value (the store repairs old rows with it on read).
"""

from __future__ import annotations

import html
import unicodedata
from typing import Any

_KEEP = frozenset("\n\t")


def _drop(ch: str) -> bool:
    if ch in _KEEP:
        return False
    if 0xD800 <= ord(ch) <= 0xDFFF:  # a lone surrogate (a paired one never reaches a Python str as two)
        return True
    return unicodedata.category(ch) in {"Cc", "Cf", "Cs"} and ch != "\u200d"


def clean(text: str | None) -> str:
    """``text`` as it is stored: NFC, no lone surrogates, no control or invisible format characters.

    The zero-width joiner is kept (emoji sequences need it) but never counts as content (see is_blank).
    """
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept = "".join(ch for ch in text if not _drop(ch))
    return unicodedata.normalize("NFC", kept)


def is_blank(text: str | None) -> bool:
    """True when the text has nothing a reader could see (whitespace and invisible characters only)."""
    return not clean(text).replace("\u200d", "").strip()


def clean_tree(value: Any) -> Any:
    """Every string in a JSON-like value cleaned (dict keys too); other values unchanged."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean_tree(k): clean_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_tree(v) for v in value]
    return value


def inert_markdown(text: str) -> str:
    """Candidate text for a Markdown view: shown as typed, never rendered as HTML, an image or a link.

    Raw HTML is escaped and brackets become entities, so ``![x](https://host/pixel)`` cannot make the
    browser fetch anything.
    """
    return html.escape(text, quote=False).replace("[", "&#91;").replace("]", "&#93;")
