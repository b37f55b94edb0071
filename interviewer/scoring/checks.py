"""Deterministic checks from the rubric: numbers with tolerances (unit-aware) and required facts.

Both read meaning through :mod:`interviewer.scoring.claims`: a fact passes only when a clause asserts it
("no object slicing" does not pass "object slicing"), and a number passes only when it is asserted (not asked
about, not denied: "not 16384"), in any equal unit (16 KiB = 16384 bytes, 0.03 s = 30 ms), and not merely
copied from the question's own text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from interviewer.content.models import FactCheck, NumericCheck
from interviewer.scoring.claims import clauses, find_assertion, negated_before
from interviewer.scoring.models import CheckResult


@dataclass(frozen=True)
class Quantity:
    """A number found in an answer, with the unit written after it (if any) and the exact text span."""

    value: float
    unit: str | None
    text: str


# unit spelling -> (dimension, factor to the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {}


def _add(dimension: str, factor: float, *names: str) -> None:
    for n in names:
        _UNITS[n] = (dimension, factor)


_add("time", 1e-9, "ns", "nanosecond", "nanoseconds")
_add("time", 1e-6, "us", "µs", "μs", "microsecond", "microseconds")
_add("time", 1e-3, "ms", "msec", "millisecond", "milliseconds")
_add("time", 1.0, "s", "sec", "secs", "second", "seconds")
_add("time", 60.0, "min", "mins", "minute", "minutes")
_add("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
_add("bytes", 1.0, "byte", "bytes")
_add("bytes", 1e3, "kb")
_add("bytes", 1e6, "mb")
_add("bytes", 1e9, "gb")
_add("bytes", 1e12, "tb")
_add("bytes", 2.0**10, "kib")
_add("bytes", 2.0**20, "mib")
_add("bytes", 2.0**30, "gib")
_add("bytes", 2.0**40, "tib")
_add("bandwidth", 1e9, "gb/s", "gbps", "gb per second")
_add("bandwidth", 1e12, "tb/s", "tbps", "tb per second")
_add("bandwidth", 1e6, "mb/s", "mb per second")
_add("percent", 1.0, "%", "percent", "per cent")
_add("ratio", 1.0, "x", "×", "times")
_add(
    "rate", 1.0, "tokens/s", "tok/s", "tokens per second", "token/s", "tokens/sec", "tps", "/s", "per second"
)
_add("flops", 1.0, "flop", "flops")
_add("flops", 1e12, "tflops", "tflop/s", "tflops/s")
_add("count", 1e3, "thousand")
_add("count", 1e6, "million")
_add("count", 1e9, "billion")

_MULTIPLIER = {"k": 1e3, "m": 1e6, "b": 1e9, "bn": 1e9}
# Longest unit spellings first, so "ms" is not read as "m" and "gb/s" not as "gb".
_UNIT_RE = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    r"(?<![\w.])(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?:(?P<mult>k|K|M|bn|B)(?![A-Za-z]))?"
    rf"(?:\s*(?P<unit>{_UNIT_RE})(?![A-Za-z]))?",
    re.IGNORECASE,
)


def extract_quantities(text: str) -> list[Quantity]:
    """Every number in ``text`` with its multiplier (7B, 2k) applied and the unit that follows it."""
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        value = float(m.group("num").replace(",", ""))
        if m.group("exp"):
            value *= 10.0 ** int(m.group("exp"))
        mult = m.group("mult")
        unit = m.group("unit")
        if mult:
            # "7B" is seven billion, but "7 B"/"7B/s" style byte units are matched as units first.
            value *= _MULTIPLIER[mult.lower()]
            if unit is None:
                unit = "count"
        out.append(Quantity(value, unit.lower() if unit else None, m.group(0).strip()))
    return out


def _unit_of(unit: str | None) -> tuple[str, float] | None:
    if unit is None:
        return None
    key = unit.strip().lower()
    if key == "count":
        return ("count", 1.0)
    return _UNITS.get(key)


def _candidates(q: Quantity, expected_unit: str | None) -> list[float]:
    """Values of ``q`` expressed in the expected unit; empty when the units cannot be the same quantity."""
    want = _unit_of(expected_unit)
    have = _unit_of(q.unit) if q.unit else None
    if q.unit and have is None:
        have = ("other:" + q.unit, 1.0)
    if want is None:
        # The rubric gave no (or an unknown) unit: compare numbers, but a number with a known different
        # dimension ("7B" parameters for a time) is not the answer.
        if have is None or (expected_unit and have[0] == "other:" + expected_unit.lower()):
            return [q.value]
        if have[0] == "ratio":
            return [q.value]
        # No unit in the rubric ("expected 16384"): a quantity with a known unit counts in its base unit
        # (16 KiB -> 16384 bytes, 30 ms -> 0.03 s) as well as at face value.
        return [q.value, q.value * have[1]] if not have[0].startswith("other:") else []
    if have is None:
        values = [q.value]
        if want[0] == "percent":  # 0.3 means 30%
            values.append(q.value * 100.0)
        return values
    if have[0] == want[0]:
        return [q.value * have[1] / want[1]]
    if want[0] == "rate" and have[0] == "other:" + (expected_unit or "").lower():
        return [q.value]
    return []


def asserted_quantities(answer: str) -> list[Quantity]:
    """Numbers the answer states: not in a question, not denied ("it is not 16384"), in order."""
    out: list[Quantity] = []
    for c in clauses(answer):
        if c.question:
            continue
        for m in _NUMBER.finditer(c.text):
            if negated_before(c.text[: m.start()], scope=3):  # "is not 16384", not "instead of 100, so 70"
                continue
            out.extend(extract_quantities(m.group(0)))
    return out


def _echoed(q: Quantity, question_quantities: list[Quantity]) -> bool:
    """Whether ``q`` repeats a number of the question's own text (same value, same or no unit)."""
    return any(
        abs(q.value - g.value) <= 1e-9 * max(1.0, abs(g.value))
        and (q.unit == g.unit or not q.unit or not g.unit)
        for g in question_quantities
    )


def check_number(answer: str, check: NumericCheck, question: str = "") -> CheckResult:
    """Pass when a number the answer asserts (in a compatible unit) is within tolerance of an accepted value.

    Numbers copied from ``question`` do not count, unless an accepted value is itself in the question (then a
    restatement cannot be told from an answer).
    """
    accepted = [check.value, *check.also_accept]
    tol = check.tolerance + 1e-9 * max(1.0, abs(check.value))
    unit = f" {check.unit}" if check.unit else ""
    expected = f"{check.value:g}{unit} ± {check.tolerance:g}"
    if check.also_accept:
        expected += " (also " + ", ".join(f"{v:g}" for v in check.also_accept) + ")"
    given = extract_quantities(question) if question else []
    if any(abs(g.value - a) <= tol for g in given for a in accepted):
        given = []
    quantities = [q for q in asserted_quantities(answer) if not _echoed(q, given)]
    for q in quantities:
        for v in _candidates(q, check.unit):
            if any(abs(v - a) <= tol for a in accepted):
                return CheckResult(name=check.name, passed=True, expected=expected, found=q.text)
    # Report the closest compatible number so the feedback can say what the candidate said instead.
    closest: tuple[float, str] | None = None
    for q in quantities:
        for v in _candidates(q, check.unit):
            d = min(abs(v - a) for a in accepted)
            if closest is None or d < closest[0]:
                closest = (d, q.text)
    return CheckResult(
        name=check.name, passed=False, expected=expected, found=closest[1] if closest else None
    )


def check_fact(answer: str, check: FactCheck) -> CheckResult:
    """Pass when a clause of ``answer`` asserts one of the phrases (case, hyphens, articles and spacing
    ignored, whole words; denied, attributed and asked occurrences do not count)."""
    expected = " or ".join(check.any_of)
    for phrase in check.any_of:
        found = find_assertion(answer, phrase)
        if found is not None:
            return CheckResult(name=check.name, passed=True, expected=expected, found=found.clause)
    return CheckResult(name=check.name, passed=False, expected=expected, found=None)


def run_checks(
    answer: str, numeric: list[NumericCheck], facts: list[FactCheck], question: str = ""
) -> list[CheckResult]:
    """All of a question's deterministic checks against the candidate's text."""
    return [check_number(answer, c, question) for c in numeric] + [check_fact(answer, c) for c in facts]
