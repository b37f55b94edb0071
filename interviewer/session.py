"""The interview engine's public names, kept where the rest of the code base (and stored imports in scripts)
has always found them. The engine itself lives in :mod:`interviewer.engine`: the façade is
:class:`interviewer.engine.interview.Interview`; the session state and :func:`apply` are in
:mod:`interviewer.engine.events`.
"""

from __future__ import annotations

from interviewer.engine.events import State, Turn, apply, hinted_levels, last_code_run_passed, replay
from interviewer.engine.followups import MAX_FOLLOWUP_CHARS, clean_followup, followup_problem, followup_read
from interviewer.engine.interview import Interview
from interviewer.engine.plan import DEFAULT_PER_ROUND, plan_bank, plan_questions
from interviewer.engine.ports import ChatModel, PassageLike, Ports, Retriever, Scorer, TruthJudge

__all__ = [
    "DEFAULT_PER_ROUND",
    "MAX_FOLLOWUP_CHARS",
    "ChatModel",
    "Interview",
    "PassageLike",
    "Ports",
    "Retriever",
    "Scorer",
    "State",
    "TruthJudge",
    "Turn",
    "apply",
    "clean_followup",
    "followup_problem",
    "followup_read",
    "hinted_levels",
    "last_code_run_passed",
    "plan_bank",
    "plan_questions",
    "replay",
]
