"""cpp-debug-project: submission format, sanitizer report parsing, and real ASan/LSan/TSan runs."""

from __future__ import annotations

import pytest

from interviewer.checker import channel, check, get_task
from interviewer.checker.cpp_tasks import debug_project as D
from interviewer.checker.sandbox import Sandbox
from interviewer.errors import InputError

TASK = "cpp-debug-project"
ALLOWED = {"pool.cpp", "pool.hpp", "stats.cpp", "stats.hpp", "work_queue.hpp"}
ASAN = "AddressSanitizer + LeakSanitizer + UBSan"


def _reference() -> str:
    return get_task(TASK).reference_code()


def _only(text: str, name: str) -> str:
    """One file's section of a multi-file submission."""
    files = D.split_submission(text, ALLOWED)
    return D.join_files({name: files[name]})


def _failed(v) -> dict[str, str]:
    return {t.name: t.message for t in v.tests if not t.passed}


def test_starter_is_the_shipped_project_in_the_submission_format() -> None:
    task = get_task(TASK)
    assert task.starter_code == D.starter_text(task.path)
    assert set(D.split_submission(task.starter_code, ALLOWED)) == ALLOWED
    assert 3 <= len(ALLOWED) <= 5


def test_submission_format_errors_say_what_to_do() -> None:
    with pytest.raises(InputError, match="no file markers"):
        D.split_submission("int x;", ALLOWED)
    with pytest.raises(InputError, match="text before the first"):
        D.split_submission("hello\n// === file: pool.cpp ===\n", ALLOWED)
    with pytest.raises(InputError, match="hidden test driver"):
        D.split_submission("// === file: main.cpp ===\nint main() {}\n", ALLOWED)
    with pytest.raises(InputError, match=r"unknown file 'util\.cpp'"):
        D.split_submission("// === file: util.cpp ===\n", ALLOWED)
    with pytest.raises(InputError, match="submitted twice"):
        D.split_submission("// === file: pool.cpp ===\n// === file: pool.cpp ===\n", ALLOWED)


def test_silencing_a_sanitizer_is_refused_before_anything_runs() -> None:
    hook = '\n// === file: work_queue.hpp ===\nextern "C" const char* __lsan_default_options() { return "detect_leaks=0"; }\n'
    with pytest.raises(InputError, match="__lsan_default_options"):
        check(TASK, _reference() + hook, sandbox=Sandbox())  # raises before the sandbox is used
    attr = '// === file: stats.cpp ===\n__attribute__((no_sanitize("thread"))) void f() {}\n'
    with pytest.raises(InputError, match="no_sanitize"):
        check(TASK, attr, sandbox=Sandbox())


def _signed(key: str, *lines: str) -> str:
    return "".join(f"{channel.sign(key, ln.encode())} {ln}\n" for ln in lines)


def test_summaries_are_checked_against_values_computed_here() -> None:
    key = channel.new_key()
    scenarios = [(2, [[1.0, -2.0], [], [3.5]])]
    line = "summary 0 3 2.5 -2 3.5 0.83333333333333337"
    assert D._check_summaries(_signed(key, line, "end 1"), key, scenarios) is None
    assert "did not reach its end" in (D._check_summaries(_signed(key, line, "end 2"), key, scenarios) or "")
    wrong = line.replace(" 3.5 0.8", " 2.2250738585072014e-308 0.8")
    msg = D._check_summaries(_signed(key, wrong, "end 1"), key, scenarios) or ""
    assert "max is 2.2250738585072014e-308, expected 3.5" in msg
    # Lines the driver did not sign (printed by project code) are not believed.
    assert "no summary" in (D._check_summaries(f"{line}\nend 1\n", key, scenarios) or "")


def test_sanitizer_reports_are_reduced_to_the_project_frames() -> None:
    stderr = (
        "==12==WARNING: ThreadSanitizer: data race (pid=12)\n"
        "  Write of size 8 at 0x7b0c000000f0 by thread T2:\n"
        "    #0 RunningStats::merge(RunningStats const&) /box/stats.cpp:17 (prog+0x1)\n"
        "    #1 operator() /box/pool.cpp:24 (prog+0x2)\n"
        "    #2 std::thread::_State_impl<...>::_M_run() /usr/include/c++/12/bits/std_thread.h:211 (prog+0x3)\n"
        "  Previous write of size 8 at 0x7b0c000000f0 by thread T1:\n"
        "    #0 RunningStats::merge(RunningStats const&) /box/stats.cpp:17 (prog+0x1)\n"
        "SUMMARY: ThreadSanitizer: data race /box/stats.cpp:17 in RunningStats::merge\n"
    )
    report = D._sanitizer_report(stderr, {"stats.cpp", "pool.cpp"}) or ""
    assert report.splitlines()[0] == "WARNING: ThreadSanitizer: data race"
    assert "Write of size 8 by thread T2:" in report and "Previous write of size 8 by thread T1:" in report
    assert "stats.cpp:17 in RunningStats::merge" in report and "pool.cpp:24 in a lambda" in report
    assert "std_thread.h" not in report
    assert D._sanitizer_report("all good\n", {"stats.cpp"}) is None


@pytest.mark.sandbox
def test_reference_fix_is_clean_under_every_sanitizer(sandbox: Sandbox) -> None:
    v = check(TASK, _reference(), sandbox=sandbox)
    assert v.passed, v.render_text()
    assert [t.name for t in v.tests] == ["results", ASAN, "ThreadSanitizer"]


@pytest.mark.sandbox
def test_fix_that_removes_the_race_but_keeps_the_leak(sandbox: Sandbox) -> None:
    code = (
        _reference()
        .replace("                std::unique_ptr<Job> owned(job);\n", "")
        .replace("owned->values", "job->values")
    )
    v = check(TASK, code, sandbox=sandbox)
    failed = _failed(v)
    assert set(failed) == {ASAN}, v.render_text()
    assert "LeakSanitizer: detected memory leaks" in failed[ASAN] and "pool.cpp:" in failed[ASAN]


@pytest.mark.sandbox
def test_fix_that_frees_the_jobs_but_keeps_the_race(sandbox: Sandbox) -> None:
    code = _reference().replace("                std::lock_guard<std::mutex> lock(total_mutex);\n", "")
    v = check(TASK, code, sandbox=sandbox)
    failed = _failed(v)
    assert "ThreadSanitizer" in failed and ASAN not in failed, v.render_text()
    assert "data race" in failed["ThreadSanitizer"] and "stats.cpp:" in failed["ThreadSanitizer"]


@pytest.mark.sandbox
def test_fixing_leak_and_race_but_not_the_logic_error(sandbox: Sandbox) -> None:
    v = check(TASK, _only(_reference(), "pool.cpp"), sandbox=sandbox)
    failed = _failed(v)
    assert set(failed) == {"results"}, v.render_text()
    assert "max is 2.2250738585072014e-308" in failed["results"]


@pytest.mark.sandbox
def test_freeing_the_job_too_early_is_a_use_after_free(sandbox: Sandbox) -> None:
    code = _reference().replace(
        "                std::unique_ptr<Job> owned(job);\n", "                delete job;\n"
    )
    code = code.replace("owned->values", "job->values")
    v = check(TASK, code, sandbox=sandbox)
    failed = _failed(v)
    assert "heap-use-after-free" in failed[ASAN], v.render_text()
    assert "not all tests ran" in failed["results"]


def test_long_batches_travel_as_a_rule_the_driver_expands() -> None:
    g = D.Generated(5, 15_999, 3)
    assert D._batch_line(g) == "g 5 15999 3"
    # value i is ((a + i*b) mod 16000 - 8000) / 8, the same formula the driver uses
    assert g.values().tolist() == [999.875, -999.75, -999.375, -999.0, -998.625]
    count, total, lo, hi, mean = D.expected([[1.0, 2.0], g])
    assert (count, lo, hi) == (7, -999.75, 999.875)
    assert total == 3.0 + sum(g.values().tolist()) and mean == total / 7
