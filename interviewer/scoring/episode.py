"""Whether an answer tells a real past episode: what a "tell me about a time ..." question asks for.

A question marked ``episode`` in its rubric asks for something that happened. An answer tells one when a person
in it did something in the past ("I pushed back", "we measured", "my manager asked", "the job failed"), or when
the answer places itself in time ("last spring", "two years ago", "at my previous job", "in 2022"), which also
covers a story told in the present tense ("so last year I'm on call and ..."). A story told in the present
with no time in it is heard by how stories are told aloud: "so I'm at this startup", "there's this customer",
or someone in it doing one thing to the teller ("my manager comes to me", "the PM pings us"), outside a "when",
an "if" or a "usually". An answer with none of these tells no episode, however close its words are to the
rubric: a preference ("I like teams that ..."), a principle, a habit in the present tense ("when everything is
urgent I work on ..."), or a plan in the conditional ("I would first ..."). A routine tells none either, even in
the past tense and placed at a job: a sentence that says it happened every day, week or sprint ("at my last job
we held standups every morning"), unless it also names one time ("one day", "that week", "two years ago").

The reading is deliberately generous: one past-tense clause with a subject is enough, so a short but genuine
story is never taken for a non-answer. Pure functions, no model.
"""

from __future__ import annotations

import re

# Simple-past forms of irregular verbs (regular ones end in "-ed"); negated pasts by their stem ("didn't").
_IRREGULAR = (
    "was were had did made took went got found built wrote led ran saw knew spent gave chose told thought brought "
    "began became left kept felt sent met paid lost won broke fought taught caught sought bought held heard meant "
    "read said set put cut let shut hit quit understood stood grew drew threw flew forgot rode spoke woke fell sat "
    "shook swore tore hung dealt dug fed fled hid lent lit slid spun split spread struck stuck sank came "
    "didn wasn weren hadn couldn"
).split()
# Who acts in a story: a pronoun, or a short noun phrase ("my tech lead", "the storage team", "our p99").
_SUBJECT = r"(?:i|we|they|he|she|it|(?:my|our|the|his|her|their|that|this)(?:\s+[a-z0-9'-]+){1,2})"
_ADVERBS = r"(?:[a-z]+ly|then|also|just|first|never|finally|still|even|only|soon|later|again|both|all|once)"
# Words ending in "-ed" that are not pasts ("we need", "the first hundred").
_NOT_PAST = (
    "need speed seed feed indeed hundred embed proceed succeed exceed breed bleed red bed shed".split()
)
_PAST = re.compile(
    rf"\b{_SUBJECT}\s+(?:{_ADVERBS}\s+){{0,2}}"
    rf"(?:{'|'.join(_IRREGULAR)}|(?!(?:{'|'.join(_NOT_PAST)})\b)[a-z]{{2,}}ed)\b",
    re.IGNORECASE,
)
_TIME = re.compile(
    r"\b(?:last|previous|that)\s+(?:year|month|week|quarter|summer|winter|spring|autumn|fall|sprint|release|"
    r"job|role|company|team|project|time|employer)\b|"
    r"\b(?:a|an|one|two|three|four|five|six|few|several|many|\d+)\s+(?:years?|months?|weeks?|days?)\s+ago\b|"
    r"\bin\s+(?:19|20)\d\d\b|"
    r"\bat\s+my\s+(?:previous|last|old|former|first)\s+(?:job|company|team|role|employer|startup)\b|"
    r"\b(?:back\s+when|when\s+i\s+was|when\s+we\s+were)\b",
    re.IGNORECASE,
)


# A past form after these is a condition or a wish, not something that happened ("if I was wrong, I say so").
_UNREAL = re.compile(r"\b(?:if|whether|unless|wish|though|suppose)\s+$", re.IGNORECASE)
# A story in the present: "this" as a storyteller's "a" ("I'm at this startup", "there's this bug"), or a person
# in it doing one thing to the teller ("my lead pings me", "the customer calls us").
_ROLE = (
    r"(?:(?:my|our|the)\s+(?:[a-z-]+\s+)?(?:manager|boss|lead|director|vp|cto|ceo|pm|colleague|teammate|"
    r"customer|client|engineer|team|on-call)|he|she)"
)
_NARRATIVE = re.compile(
    r"\b(?:i'm|i am|we're|we are)\s+(?:[a-z]+\s+){0,2}(?:at|in|on|with|working on|building|running)\s+this\b|"
    r"\bthere(?:'s| is)\s+this\b|"
    rf"\b{_ROLE}\s+(?:just\s+|then\s+|suddenly\s+)?(?:comes|walks|calls|pings|messages|emails|tells|asks|"
    r"storms|shows|turns|drops|escalates)\s+(?:up\s+|in\s+|over\s+|to\s+)?(?:me|us)\b",
    re.IGNORECASE,
)
# ... unless the sentence so far makes it a habit or a condition ("when my manager asks me for an estimate").
_HABIT = re.compile(
    r"\b(?:when|whenever|if|unless|usually|often|always|typically|generally|normally|every time|each time)\b",
    re.IGNORECASE,
)
_SENTENCE_START = re.compile(r"[.!?;]\s+")
# A routine: something that happened again and again ("every morning", "each sprint", "on Fridays"). Not "used
# to": "I used to think ..." is a belief the story goes on to change.
_UNITS = (
    r"(?:day|morning|afternoon|evening|night|week|weekend|month|quarter|year|sprint|release|standup|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
)
_ROUTINE = re.compile(
    rf"\b(?:every|each)\s+(?:single\s+|other\s+)?{_UNITS}\b|\bon\s+{_UNITS}s\b", re.IGNORECASE
)
# ... unless the sentence also names one time: then it sets the scene for a story ("every week the job broke,
# and one night I ...").
_ONCE = re.compile(
    rf"\b(?:one|that|this\s+one|the)\s+(?:{_UNITS}|time|incident|outage)\b|\bonce\b|"
    r"\bat\s+one\s+point\b|\bsuddenly\b|\bago\b|\bin\s+(?:19|20)\d\d\b|"
    rf"\b(?:last|previous)\s+(?:{_UNITS}|summer|winter|spring|autumn|fall|january|february|march|april|may|june|"
    r"july|august|september|october|november|december)\b",
    re.IGNORECASE,
)
# A routine word inside a relative clause describes a thing, not the telling ("I set up a job that runs every
# night"): it counts only with no "that", "which", "who" or "where" between it and the clause's last comma.
_RELATIVE = re.compile(r"\b(?:that|which|who|where)\b", re.IGNORECASE)


def _routine(sentence: str) -> bool:
    """Whether a sentence tells a routine rather than one time."""
    if _ONCE.search(sentence):
        return False
    for m in _ROUTINE.finditer(sentence):
        clause = sentence[: m.start()].rsplit(",", 1)[-1]
        if not _RELATIVE.search(clause):
            return True
    return False


def tells_episode(text: str) -> bool:
    """Whether ``text`` tells something that happened: a past-tense clause with a subject (not a condition), a
    time anchor, or a story told in the present (not a habit), in a sentence that is not a routine."""
    flat = text.replace("\u2019", "'")
    return any(_tells(s) for s in _SENTENCE_START.split(flat) if not _routine(s))


def _tells(sentence: str) -> bool:
    """Whether one sentence tells something that happened (see :func:`tells_episode`)."""
    return (
        _TIME.search(sentence) is not None
        or any(not _UNREAL.search(sentence[: m.start()]) for m in _PAST.finditer(sentence))
        or any(not _HABIT.search(sentence[: m.start()]) for m in _NARRATIVE.finditer(sentence))
    )
