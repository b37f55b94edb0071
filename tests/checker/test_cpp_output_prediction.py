"""cpp-output-prediction: snippets come from the statement; ground truth from running them in the box."""

from __future__ import annotations

import pytest

from interviewer.checker import check, get_task
from interviewer.checker.cpp_tasks import output_prediction as O
from interviewer.checker.cpp_tasks import prepare
from interviewer.checker.sandbox import Sandbox
from interviewer.errors import InputError

TASK = "cpp-output-prediction"


def _replace_line(answer: str, section: str, old: str, new: str) -> str:
    """The answer with the first line equal to ``old`` in ``section`` replaced by ``new``."""
    lines = answer.split("\n")
    start = lines.index(f"=== {section} ===")
    k = next(i for i in range(start + 1, len(lines)) if lines[i] == old)
    assert not any(ln.startswith("===") for ln in lines[start + 1 : k])
    lines[k] = new
    return "\n".join(lines)


def test_snippets_and_starter_come_from_the_statement() -> None:
    task = get_task(TASK)
    items = O.snippets(task.statement)
    names = [s.name for s in items]
    assert names == ["pointers", "virtual-dispatch", "slicing", "overloads", "threads"]
    assert task.starter_code == O.answer_template(items)
    assert all("int main()" in s.code for s in items)


def test_answer_parsing_and_messages() -> None:
    with pytest.raises(InputError, match="no sections"):
        O.split_answer("30\n", ["pointers"])
    with pytest.raises(InputError, match="unknown snippet 'pointer'"):
        O.split_answer("=== pointer ===\n1\n", ["pointers"])
    got = O.split_answer("=== a ===\n\n x  \n2\n\n=== b ===\n", ["a", "b"])
    assert got == {"a": [" x", "2"], "b": []}
    c = O.compare("a", ["1", "3"], ["1", "2", "4"])
    assert not c.passed and "1/3 lines right" in c.message
    assert "line 2: you wrote '3', the program prints '2'" in c.message and "line 3: missing" in c.message
    assert O.compare("a", ["1"], ["1"]).passed


@pytest.mark.sandbox
def test_reference_answers_match_a_fresh_run_and_wrong_predictions_fail(sandbox: Sandbox) -> None:
    task = get_task(TASK)
    items = O.snippets(task.statement)
    O._truth_cache.clear()
    assert prepare(task, sandbox)  # a fresh compile and run of every snippet, kept for later checks
    truth = O.ground_truth(sandbox, items)
    ref = task.reference_code()
    assert O.split_answer(ref, [s.name for s in items]) == truth  # the authored answers are the real output
    v = check(TASK, ref, sandbox=sandbox)
    assert v.passed and v.seconds < 1.0  # prepared: no compile on the first check

    # Classic mistakes: virtual call from a base constructor, no slicing, overload by char, thread copy capture.
    cases = [
        ("virtual-dispatch", "Base::hello", "Derived::hello", "line 2"),
        ("slicing", "shape circle", "circle circle", "line 4"),
        ("overloads", "g(T)", "g(double)", "line 7"),
        ("threads", "2", "101", "line 4"),
        ("pointers", "20", "25", "line 3"),
    ]
    for section, old, new, where in cases:
        v = check(TASK, _replace_line(ref, section, old, new), sandbox=sandbox)
        failed = {t.name: t.message for t in v.tests if not t.passed}
        assert set(failed) == {section}, (section, v.render_text())
        assert where in failed[section] and f"you wrote {new!r}" in failed[section]
