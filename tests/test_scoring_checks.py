"""Deterministic checks: numbers with tolerances and unit variants, required facts."""

from __future__ import annotations

import pytest

from interviewer.content.models import FactCheck, NumericCheck
from interviewer.scoring.checks import check_fact, check_number, extract_quantities, run_checks

MS = NumericCheck(name="time per token", ask="?", value=7, tolerance=0.2, unit="ms")
PCT = NumericCheck(name="share", ask="?", value=30, tolerance=1, unit="%")
GB = NumericCheck(name="kv", ask="?", value=16.8, tolerance=0.3, unit="GB", also_accept=[15.6])
RATE = NumericCheck(name="rate", ask="?", value=143, tolerance=3, unit="tokens/s")


@pytest.mark.parametrize(
    ("answer", "check", "passed"),
    [
        ("the floor is about 7 ms per token", MS, True),
        ("7.1ms", MS, True),
        ("0.007 s per step", MS, True),
        ("7000 us", MS, True),
        ("7,000 microseconds", MS, True),
        ("roughly 7", MS, True),  # a bare number is read in the rubric's unit
        ("a 7B model needs 9 ms", MS, False),  # 7B is a count, 9 ms is out of tolerance
        ("7.5 ms", MS, False),
        ("7 GB", MS, False),  # a different dimension is never the answer
        ("30%", PCT, True),
        ("30 percent of the time", PCT, True),
        ("a fraction of 0.3", PCT, True),
        ("0.3%", PCT, False),
        ("16.8 GB per step", GB, True),
        ("15.6 GB", GB, True),  # also_accept
        ("16800 MB", GB, True),
        ("15.65 GiB", GB, True),  # 15.65 GiB = 16.8 GB
        ("17.5 GB", GB, False),
        ("about 143 tokens/s", RATE, True),
        ("142 tokens per second", RATE, True),
        ("150 tok/s", RATE, False),
    ],
)
def test_numbers_with_units_and_tolerance(answer: str, check: NumericCheck, passed: bool) -> None:
    result = check_number(answer, check)
    assert result.passed is passed, result
    if passed:
        assert result.found and result.found in answer


def test_failed_number_reports_the_closest_compatible_value() -> None:
    result = check_number("it takes 9 ms, and the model has 7B parameters", MS)
    assert not result.passed and result.found == "9 ms"
    assert "7" in result.expected and "ms" in result.expected


def test_quantity_extraction() -> None:
    got = [(q.value, q.unit) for q in extract_quantities("7B at 2 TB/s, 1,024 tokens, 1e-3 s, 2x")]
    assert got == [(7e9, "count"), (2.0, "tb/s"), (1024.0, None), (0.001, "s"), (2.0, "x")]


@pytest.mark.parametrize(
    ("answer", "passed", "found"),
    [
        ("Decode is memory bound at batch one.", True, "Decode is memory bound at batch one."),
        ("decode is MEMORY-BOUND", True, "decode is MEMORY-BOUND"),
        ("we rely on continuous batching", True, "we rely on continuous batching"),
        ("decode is not memory bound at all", False, None),
        ("is decode memory bound?", False, None),
        ("memorybound", False, None),
        ("the memory is bounded by", False, None),
    ],
)
def test_facts(answer: str, passed: bool, found: str | None) -> None:
    check = FactCheck(name="fact", any_of=["memory-bound", "continuous batching"])
    result = check_fact(answer, check)
    assert result.passed is passed and result.found == found


def test_fact_with_symbols() -> None:
    assert check_fact("written in C++ with RAII", FactCheck(name="lang", any_of=["C++"])).passed
    assert not check_fact("written in C with macros", FactCheck(name="lang", any_of=["C++"])).passed


def test_run_checks_orders_numbers_then_facts() -> None:
    results = run_checks("7 ms; memory bound", [MS], [FactCheck(name="mb", any_of=["memory bound"])])
    assert [r.name for r in results] == ["time per token", "mb"] and all(r.passed for r in results)


# --- checks that read meaning (#11 item 2) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "phrase", "passed"),
    [
        ("Passing a Derived by value to a Base parameter causes object slicing.", "object slicing", True),
        ("There is no object slicing here because we pass by reference.", "object slicing", False),
        ("Some people think renames are atomic on S3, but they are not.", "renames are atomic", False),
        (
            "People often think renames are atomic, but it is a server-side COPY and a DELETE.",
            "copy and delete",
            True,
        ),
        ("The model is 2x faster, not the service.", "service is 2x faster", False),
        ("The service is not 2x faster; only the model step is.", "not 2x", True),
        ("It's not true that the service is not 2x faster.", "not 2x", False),
        ("Would you say the kernel is memory bound?", "memory bound", False),
        ("We timed it without a synchronize call.", "synchronize", False),
    ],
)
def test_facts_are_read_per_clause_with_negation_contrast_attribution_and_questions(
    answer: str, phrase: str, passed: bool
) -> None:
    assert check_fact(answer, FactCheck(name="f", any_of=[phrase])).passed is passed


def test_a_number_in_another_unit_counts_when_equal() -> None:
    bytes_ = NumericCheck(name="tile bytes", ask="bytes", value=16384)
    assert check_number("The tile takes 16 KiB of shared memory.", bytes_).passed
    assert not check_number("The tile takes 16 KB of shared memory.", bytes_).passed  # 16000 bytes
    ms = NumericCheck(name="latency", ask="ms", value=30, unit="ms")
    assert check_number("each step is about 0.03 s", ms).passed
    assert not check_number("each step is about 0.3 s", ms).passed


def test_a_number_copied_from_the_question_is_not_an_answer() -> None:
    question = (
        "A stage takes 60 ms of a 100 ms request and becomes 2x faster. What is the end-to-end speedup?"
    )
    check = NumericCheck(name="speedup", ask="x", value=1.43, tolerance=0.02, unit="x")
    echo = check_number("It went from 100 ms, and the stage is 2x faster, so it's 2x.", check, question)
    assert not echo.passed
    assert check_number("70 ms instead of 100, so about 1.43x.", check, question).passed
    # when the accepted value is itself in the question, a restatement cannot be told apart: accept it
    same = NumericCheck(name="batch", ask="n", value=8)
    assert check_number("we keep a batch of 8", same, "Why a batch of 8?").passed


def test_a_number_must_be_asserted_not_asked_or_denied() -> None:
    check = NumericCheck(name="bytes", ask="bytes", value=16384)
    assert not check_number("Is it 16384 bytes? I really don't know.", check).passed
    assert not check_number("It is not 16384 bytes, it's 8192.", check).passed
    assert check_number("I doubted it at first, but it is 16384 bytes.", check).passed
