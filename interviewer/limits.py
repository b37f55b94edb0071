"""Caps on what a visitor can send the web app: every text field has a type and a size limit, checked when the
request arrives, before any work (a database read, a model prompt, a sandbox run) is done for it.

The engine checks the same limits again where it uses the text (an answer in ``Interview.validate_answer``,
code in ``checker.check``, ...), so the CLI and the page agree; these checks make sure that no handler, however
it is reached, starts work on an oversized or mistyped value.
"""

from __future__ import annotations

from collections.abc import Mapping

from interviewer.errors import InputError

MAX_PER_ROUND = 10  # questions per round: the page's slider goes this far
MAX_ID_CHARS = 128  # a session id is 32 hex characters
MAX_CHOICE_CHARS = 128  # a round or loop preset id
MAX_URL_CHARS = 2_048
MAX_SECRET_CHARS = 4_096  # an API key or the admin token
MAX_MODEL_CHARS = 256


def _caps(max_answer_chars: int) -> dict[str, tuple[str, int, str]]:
    """Field name (as the handlers call it) -> (what the visitor calls it, its most characters, what to do)."""
    from interviewer.checker import MAX_CODE_CHARS
    from interviewer.clarify import MAX_CLARIFY_CHARS
    from interviewer.posting import MAX_POSTING_CHARS
    from interviewer.whiteboard import MAX_CHARS as MAX_DIAGRAM_CHARS

    trim = "Trim it to the part you would say out loud"
    return {
        "answer": ("the answer", max_answer_chars, trim),
        "typed": ("the answer", max_answer_chars, trim),  # the text in the answer box before a recording
        "asked": ("the clarifying question", MAX_CLARIFY_CHARS, "Ask one short question at a time"),
        "code": ("the code", MAX_CODE_CHARS, "Submit only your solution"),
        "diagram": ("the diagram", MAX_DIAGRAM_CHARS, "Draw the main parts and arrows only"),
        "posting": ("the job posting", MAX_POSTING_CHARS, "Paste only the role description and requirements"),
        "choice": ("the round", MAX_CHOICE_CHARS, "Pick one from the list"),
        "loop": ("the loop preset", MAX_CHOICE_CHARS, "Pick one from the list"),
        "sid": ("the session id", MAX_ID_CHARS, "Copy it from Past sessions"),
        "base_url": (
            "the base URL",
            MAX_URL_CHARS,
            "Give the server's address, e.g. http://127.0.0.1:8000/v1",
        ),
        "api_key": ("the API key", MAX_SECRET_CHARS, "Check the key"),
        "model": ("the model name", MAX_MODEL_CHARS, "Pick a model the server lists"),
        "admin_token": ("the admin token", MAX_SECRET_CHARS, "Check the token"),
    }


def check_fields(fields: Mapping[str, object], *, max_answer_chars: int) -> None:
    """Raise InputError for the first field that is not text (None passes) or is longer than its cap.

    ``per_round`` is checked as a number of questions from 1 to :data:`MAX_PER_ROUND`.
    """
    caps = _caps(max_answer_chars)
    for name, value in fields.items():
        if name == "per_round":
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 1 <= value <= MAX_PER_ROUND
            ):
                raise InputError(f"questions per round must be a number from 1 to {MAX_PER_ROUND}")
            continue
        what, cap, advice = caps[name]  # a name missing here is a handler's bug, not a visitor's
        if value is None:
            continue
        if not isinstance(value, str):
            raise InputError(f"{what} must be text, not {type(value).__name__}")
        if len(value) > cap:
            raise InputError(f"{what} is {len(value):,} characters; the limit is {cap:,}. {advice}")
