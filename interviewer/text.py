"""Text at the boundary: what any user-supplied string becomes before the engine, the store or a prompt sees it.

One function, :func:`clean`: Unicode NFC, lone surrogates dropped (they cannot be encoded as UTF-8 and would
poison every later read), control and format characters dropped except newline and tab (zero-width spaces,
bidi overrides, NUL). :func:`is_blank` says whether nothing readable is left. :func:`clean_tree` applies
:func:`clean` to every string in a JSON-like value (the store repairs old rows with it on read).
"""

from __future__ import annotations

import html
import re
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


# -- stop words ------------------------------------------------------------------------------------------
# One list of English function words (no topic). The offline scorer's coverage features were calibrated on
# human grades with exactly this list: changing it means refitting interviewer/scoring/calibration.json.
STOP_WORDS: frozenset[str] = frozenset(
    (
        "a about all also an and any are as at be been being between but by can could did do does during each for "
        "from had has have he here how i if in into is it its just may me might more most must my no not of on "
        "one only or other our over own same shall she should so some such than that the their them then there "
        "these they this those through to under us very was we were what when where which who whom why will with "
        "would you your"
    ).split()
)
# The commonest of them (articles, pronouns, question words, auxiliaries): all the hashing fake embedder drops,
# so texts keep enough words to have neighbours.
CORE_STOP_WORDS: frozenset[str] = frozenset(
    (
        "a an and are as at be by can do does for from how i in is it its of on or that the this to was what when "
        "which who why will with you your"
    ).split()
)

# Each other reader of text was tuned with its own benchmark (retrieval, listening, clarifying, follow-up
# checks), so its list is the one list plus the words it adds and minus the ones it keeps.
# Retrieval (BM25 queries): also the words of a question's template ("how would you explain the difference").
RETRIEVAL_STOP_WORDS: frozenset[str] = STOP_WORDS | frozenset(
    (
        "actually describe difference different ever example explain get give still tell time use used using "
        "versus vs walk"
    ).split()
)
# Clarifying questions (matched to the scenario's facts): also the words of asking ("can I assume", "do you
# need"), with fewer function words.
CLARIFY_STOP_WORDS: frozenset[str] = (
    STOP_WORDS
    | frozenset(
        (
            "assume assuming clarification clarify every expect expected get go it's know like many much need needed "
            "needs ok okay per please question tell use want what's"
        ).split()
    )
) - frozenset(
    (
        "all being between during he more most no not one only other over own same shall she such than their them "
        "then through under very whom"
    ).split()
)
# Listening to an answer: also filler and talk about the answer ("I think it basically means").
LISTEN_STOP_WORDS: frozenset[str] = (
    STOP_WORDS
    | frozenset(
        (
            "actually answer basically because both down even every explain get got guess it's know least less like "
            "lot made make makes many mean mine much off out per question really said say still sure tell thing "
            "things think two up use used using via way ways well yes yours"
        ).split()
    )
) - frozenset(("between during own same through us").split())
# Follow-up validation (what a model-written follow-up shares with the answer): also talk about the answer.
FOLLOW_UP_STOP_WORDS: frozenset[str] = (
    STOP_WORDS
    | frozenset(("answer every explain it's least less mine question said say tell two yes yours").split())
) - frozenset(("all between during only over own same through under us").split())


_PLAIN_WORD = re.compile(r"[a-z0-9]+")


def plain_words(text: str) -> list[str]:
    """The words and numbers of ``text``, lower-case and in order, case, punctuation and spacing aside: two texts
    say the same thing word for word when these agree ("6.1e-5" is "6 1e 5")."""
    return _PLAIN_WORD.findall(text.lower())


_STEM_WORD = re.compile(r"[a-z0-9][a-z0-9+\-_.]*")
_SUFFIX = re.compile(r"(?:ing|ed|es|s|ly)$")


def _stem(word: str) -> str:
    return (_SUFFIX.sub("", word) if len(word) > 4 else word)[:6]


def stems(text: str) -> set[str]:
    """Content-word stems of ``text`` (a common suffix dropped, then a 6-character prefix): what a listener
    compares when it asks whether two texts say the same words."""
    words = {w.strip(".-_") for w in _STEM_WORD.findall(text.lower().replace("\u2019", "'"))}
    return {_stem(w) for w in words if len(w) > 2 and w not in LISTEN_STOP_WORDS}
