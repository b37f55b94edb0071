"""Candidate text at the boundary: one normal form before anything is stored, shown or scored.

- :func:`clean` makes any string safe to store and encode: lone UTF-16 surrogates (which JSON and Python
  strings carry but UTF-8 cannot) become U+FFFD, the text is NFC-normalised, and invisible formatting
  characters (zero-width spaces and joiners, BOM, bidirectional overrides) and control characters other than
  newline and tab are dropped.
- :func:`is_blank` says whether nothing visible is left (an answer of only zero-width characters is empty).
- :func:`for_display` neutralises Markdown images and raw HTML so that showing the candidate's words never
  makes the browser fetch anything (``![x](https://...)`` becomes ``[image: x]``).
"""

from __future__ import annotations

import re
import unicodedata

_SURROGATE = re.compile("[\ud800-\udfff]")
# Zero-width and bidirectional formatting characters, BOM, and C0/C1 controls except \t and \n.
_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_HTML_TAG = re.compile(r"<(/?[A-Za-z][^>]*)>")


def clean(text: str | None) -> str:
    """The text as it will be stored: valid Unicode, NFC, no invisible or control characters (\\r\\n -> \\n)."""
    if not text:
        return ""
    text = _SURROGATE.sub("\ufffd", str(text))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFC", text)
    return _INVISIBLE.sub("", text)


def is_blank(text: str | None) -> bool:
    """Whether nothing visible remains after :func:`clean` (whitespace and invisible characters only)."""
    return not clean(text).strip()


def for_display(text: str) -> str:
    """Candidate text to show in Markdown: no images to fetch, no raw HTML tags (kept as visible text)."""
    text = _MD_IMAGE.sub(lambda m: f"[image: {m.group(1) or 'no description'}]", clean(text))
    return _HTML_TAG.sub(lambda m: f"&lt;{m.group(1)}&gt;", text)
