"""Checker logic that needs no sandbox: discovery, verdicts, loop detection, parsing untrusted data."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from interviewer.checker import check, get_task, list_tasks
from interviewer.checker.models import TestResult, Verdict
from interviewer.checker.numeric import parse_answers
from interviewer.checker.python_tasks.common import Case, _npz_arrays, compare_array, find_loops
from interviewer.checker.sandbox import RunResult, Sandbox
from interviewer.errors import CheckerError, ContentError, InputError, SandboxUnavailable

PY_TASKS = {
    "numpy-conv2d": "numpy",
    "attention-distance-bias": "torch",
    "attention-train": "torch",
    "int8-quantize": "numpy",
    "unique-triplets": "python",
    "merge-intervals": "python",
    "numeric-amdahl": "numeric",
    "numeric-stage-speedup": "numeric",
    "numeric-littles-law": "numeric",
}


def test_every_python_task_is_discovered_with_its_kind_and_starter() -> None:
    tasks = {t.id: t for t in list_tasks()}
    for tid, kind in PY_TASKS.items():
        assert tid in tasks, tid
        t = tasks[tid]
        assert t.kind == kind and t.title and t.statement.strip()
        assert t.starter_code.strip(), f"{tid} has no starter code"
        assert t.runner.startswith("interviewer.checker.")


def test_unknown_task_names_the_known_ones() -> None:
    with pytest.raises(ContentError, match="numpy-conv2d"):
        get_task("no-such-task")


def test_empty_submission_is_an_input_error() -> None:
    with pytest.raises(InputError):
        check("merge-intervals", "   \n")


def test_verdict_passed_is_derived_not_trusted() -> None:
    ok = TestResult(name="a", passed=True)
    bad = TestResult(name="b", passed=False, message="wrong")
    assert Verdict(task_id="t", passed=True, tests=[ok, bad]).passed is False
    assert Verdict(task_id="t", passed=True, tests=[]).passed is False
    assert Verdict(task_id="t", passed=True, tests=[ok], error="time limit").passed is False
    v = Verdict(task_id="t", tests=[ok])
    assert v.passed and "PASSED (1/1" in v.render_text()
    text = Verdict(task_id="t", tests=[ok, bad], warnings=["loop at line 3"]).render_text()
    assert "FAILED (1/2" in text and "[FAIL] b: wrong" in text and "warning: loop at line 3" in text


def test_loops_are_found_on_the_syntax_tree_with_lines() -> None:
    code = "import numpy as np\nfor i in range(3):\n    pass\nx = [i for i in y]\nf = np.vectorize(g)\nwhile 0:\n    pass\n"
    assert [line for line, _ in find_loops(code)] == [2, 4, 5, 6]
    assert find_loops("import numpy as np\ny = np.einsum('ij->i', x)\n") == []


def test_numeric_answers_parse_units_and_percent_hint() -> None:
    assert parse_answers("End_to_end_ms: 70 ms\ncut_percent: 30 %", ["end_to_end_ms", "cut_percent"]) == {
        "end_to_end_ms": 70.0,
        "cut_percent": 30.0,
    }
    assert parse_answers("about 4.7x", ["speedup"]) == {"speedup": 4.7}
    v = check("numeric-stage-speedup", "end_to_end_ms: 70\ncut_percent: 0.3")
    assert not v.passed and "give a percentage: 30" in v.render_text()


@pytest.mark.parametrize(
    ("task_id", "good", "bad", "message"),
    [
        ("numeric-amdahl", "speedup_8: 4.71\nmax_speedup: 10", "speedup_8: 8\nmax_speedup: 10", "not within"),
        (
            "numeric-stage-speedup",
            "end_to_end_ms: 70\ncut_percent: 30",
            "end_to_end_ms: 50\ncut_percent: 50",
            "not within",
        ),
        ("numeric-littles-law", "in_flight: 60\nreplicas: 4", "in_flight: 26.7\nreplicas: 2", "not within"),
        ("numeric-littles-law", "in_flight: 60\nreplicas: 4", "in_flight: 60", "no number found"),
    ],
)
def test_numeric_tasks(task_id: str, good: str, bad: str, message: str) -> None:
    assert check(task_id, good).passed
    v = check(task_id, bad)
    assert not v.passed and message in v.render_text()


def test_hostile_npz_is_refused_before_decompression() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r0.npy", b"\0" * (80 * 1024 * 1024))  # compresses to ~80 KB: a zip bomb in miniature
    with pytest.raises(ValueError, match="larger than"):
        _npz_arrays(buf.getvalue())
    obj = io.BytesIO()
    np.savez(obj, r0=np.array([object()], dtype=object))
    with pytest.raises(ValueError):
        _npz_arrays(obj.getvalue())  # pickled object arrays never load


def test_compare_array_messages_name_shape_error_and_input() -> None:
    case = Case(name="c", func="f", arrays={"x": np.zeros((2, 3))}, scalars={"stride": 2})
    assert "shape (2, 2), expected (2, 3)" in (compare_array(np.zeros((2, 2)), np.zeros((2, 3)), case) or "")
    msg = compare_array(np.array([1.0, 2.5]), np.array([1.0, 2.0]), case) or ""
    assert "max abs error 0.5 at index (1,)" in msg and "stride=2" in msg


def test_strict_mode_refuses_when_isolation_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    sb = Sandbox("strict")
    monkeypatch.setattr(sb, "status", lambda: (False, "bubblewrap is not installed"))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap is not installed.*INTERVIEWER_SANDBOX=weak"):
        sb.run({"a.py": "print(1)"}, ["python3", "a.py"])
    with pytest.raises(SandboxUnavailable):
        check("merge-intervals", "def merge_intervals(a, b):\n    return []\n", sandbox=sb)


def test_weak_mode_runs_with_a_visible_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    sb = Sandbox("weak")
    monkeypatch.setattr(sb, "status", lambda: (False, "no user namespaces"))
    code = (
        "def merge_intervals(a, b):\n"
        "    out = []\n"
        "    for s, e in sorted([*a, *b]):\n"
        "        if out and s <= out[-1][1]:\n"
        "            out[-1][1] = max(out[-1][1], e)\n"
        "        else:\n"
        "            out.append([s, e])\n"
        "    return out\n"
    )
    v = check("merge-intervals", code, sandbox=sb)
    assert v.passed, v.render_text()
    assert v.warnings and v.warnings[0].startswith("WEAK SANDBOX") and "no user namespaces" in v.warnings[0]


def test_bad_sandbox_mode_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from interviewer.checker import default_sandbox

    monkeypatch.setenv("INTERVIEWER_SANDBOX", "off")
    with pytest.raises(
        CheckerError, match=r"INTERVIEWER_SANDBOX: Input should be .strict. or .weak. \(got .off.\)"
    ):
        default_sandbox()


def test_file_names_must_stay_in_the_box() -> None:
    sb = Sandbox("strict")
    for name in ("../x", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(CheckerError):
            sb.run({name: "x"}, ["true"])


def test_run_result_is_plain_data() -> None:
    r = RunResult(returncode=0, stdout="", stderr="", timed_out=False, killed_reason=None, wall_seconds=0.1)
    assert r.files == {}


def test_weak_mode_still_caps_the_box_disk_and_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from interviewer.checker.sandbox import Limits

    sb = Sandbox("weak")
    monkeypatch.setattr(sb, "status", lambda: (False, "test"))
    fill = "i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * (8 << 20))\n    i += 1\n"
    r = sb.run({"a.py": fill}, [sys.executable, "a.py"], Limits(wall_seconds=10))
    assert r.killed_reason and r.killed_reason.startswith("disk limit"), r
    r = sb.run({"a.py": "import time\ntime.sleep(30)\n"}, [sys.executable, "a.py"], Limits(wall_seconds=1))
    assert r.timed_out and r.killed_reason == "wall-clock limit 1 s"


def test_weak_mode_does_not_hand_the_hosts_secrets_to_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("INTERVIEWER_API_KEY", "sk-other")
    sb = Sandbox("weak")
    monkeypatch.setattr(sb, "status", lambda: (False, "test"))
    r = sb.run({"a.py": "import os\nprint(sorted(os.environ))\n"}, [sys.executable, "a.py"])
    assert r.returncode == 0, r
    assert "PATH" in r.stdout and "API_KEY" not in r.stdout


def test_sandbox_mode_comes_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from interviewer.checker import default_sandbox

    monkeypatch.setenv("INTERVIEWER_SANDBOX", "weak")
    assert default_sandbox().mode == "weak"
    monkeypatch.setenv("INTERVIEWER_SANDBOX", "strict")
    assert default_sandbox().mode == "strict"


def test_results_channel_parser_is_bounded_and_verifies_signatures() -> None:
    """#15 item 4: nothing the box writes can raise in the grader or pass unsigned."""
    from interviewer.checker import channel

    for text, why in (
        ("[" * 100_000 + "]" * 100_000, "nested 100000 levels"),
        ("[" + "9" * 5000 + "]", "5000 digits"),
        ('"' + "A" * (15 << 20) + '"', "the limit is"),
        ("{not json", "not valid JSON"),
    ):
        with pytest.raises(channel.ResultError, match=why):
            channel.loads_bounded(text)
    assert channel.loads_bounded('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    key = channel.new_key()
    good = b'{"seq": 0, "msg": "{}"}'
    data = b"\n".join(
        [
            channel.sign(key, good).encode() + b" " + good,
            channel.sign(channel.new_key(), good).encode() + b" " + good,  # another run's key
            b"deadbeef " + good,
            good,
            channel.sign(key, b"[" * 5000).encode() + b" " + b"[" * 5000,  # signed but malformed
        ]
    )
    recs = channel.read_signed(data, key)
    assert recs.items == [{"seq": 0, "msg": "{}"}]
    assert recs.forged == 3 and len(recs.problems) == 1
