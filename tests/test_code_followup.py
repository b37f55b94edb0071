"""Coding follow-ups grounded in the run: the kind follows the verdict and the code, hidden values stay hidden."""

from __future__ import annotations

import re

import pytest

from interviewer import checker, prompts
from interviewer import code_followup as cf
from interviewer.checker.models import TaskInfo, TestResult, Verdict
from interviewer.errors import ModelError
from interviewer.llm.fake import ScriptedChatModel

TASK_IDS = [t.id for t in checker.list_tasks()]
LEAK = "states a hidden test's expected value or input"
PASS_KINDS = {"complexity", "design", "stability", "efficiency"}


class FakePort:
    """The chat port's streaming side over the scripted fake model."""

    name = "scripted"

    def __init__(self, *replies: object) -> None:
        self.model = ScriptedChatModel(chunk_size=5).queue(*replies)  # type: ignore[arg-type]

    def stream(self, messages, key=None):
        for chunk in self.model.stream(list(messages)):
            yield str(chunk.content)


def _code(task: TaskInfo) -> str:
    if task.reference:
        return task.reference_code()
    return "\n".join(f"{a['name']}: {a['value']}" for a in task.config["answers"])


def _expected_outputs(task: TaskInfo, verdict: Verdict) -> list[str]:
    """What the hidden tests expected, read independently of the module: answers, printed lines, messages."""
    out = [f"{a['value']:g}" for a in task.config.get("answers", [])]
    if task.language == "text" and task.reference:
        out += [ln.strip() for ln in task.reference_code().splitlines() if re.search(r"[A-Za-z]{3}", ln)]
        out = [o for o in out if not o.startswith("===")]
    for t in verdict.tests:
        if not t.passed:
            for m in re.finditer(r"expected (-?\d[\d.e+-]*|\[[^\]]*\])", t.message):
                v = m.group(1).rstrip(".")
                if v.startswith("[") or abs(float(v)) >= 2 or float(v) != int(float(v)):
                    out.append(v)
    return sorted(set(out))


def _contains(text: str, value: str) -> bool:
    text = re.sub(r"\blines? \d+(?:(?:, | and )\d+)*", "line", text)  # line numbers are the candidate's own
    if value.startswith("[") or re.search(r"[A-Za-z]", value):
        return re.sub(r"\s+", "", value).lower() in re.sub(r"\s+", "", text).lower()
    return bool(re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", text))


def _synthetic_failing(task: TaskInfo) -> Verdict:
    """A failing run built through the checker's models, whose message names an expected output."""
    if task.config.get("answers"):
        expected = f"{task.config['answers'][0]['value']:g}"
    elif task.language == "text":
        expected = next(ln for ln in task.reference_code().splitlines() if re.search(r"[A-Za-z]{3}", ln))
        expected = f"'{expected.strip()}'"
    else:
        expected = "[3, 17]"
    return Verdict(
        task_id=task.id,
        tests=[
            TestResult(name="a plain case", passed=True),
            TestResult(
                name="first list empty", passed=False, message=f"got [9, 4], expected {expected}; input: a=[]"
            ),
        ],
    )


def _passing(task: TaskInfo) -> Verdict:
    return Verdict(task_id=task.id, tests=[TestResult(name="a plain case", passed=True)])


# -- every task, verdicts built through the checker's models -------------------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_failing_and_passing_runs_choose_the_followup_kind_on_every_task(task_id):
    task = checker.get_task(task_id)
    code = _code(task)
    facts = cf.code_facts(code, task.language, task.kind)
    fail = cf.choose(cf.CodeRun.from_verdict(_synthetic_failing(task)), facts, task)
    assert fail.kind == "failing_case" and fail.case is not None and fail.case.edge == "empty input"
    ok = cf.choose(cf.CodeRun.from_verdict(_passing(task)), facts, task)
    assert ok.kind in {"complexity", "design", "stability"}


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_reply_stating_the_expected_output_is_replaced_by_the_authored_question(task_id):
    task = checker.get_task(task_id)
    code, verdict = task.starter_code or "x", _synthetic_failing(task)  # what failed: the unfinished starter
    expected = _expected_outputs(task, verdict)
    assert expected
    for value in expected:
        run = cf.CodeRun.from_verdict(verdict)
        plan = cf.choose(run, cf.code_facts(code, task.language, task.kind), task)
        leaky = (
            f"Your code gave something else, but the right output is {value}, so why does your loop differ?"
        )
        fu = cf.write(plan, FakePort(leaky), task=task, code=code, run=run, verdict=verdict)
        assert cf.leaks_hidden(leaky, task, verdict, allowed=[code]), value
        # A printed line such as g<int> is also refused as markup; either way the authored question is asked.
        assert fu.source == "fallback" and fu.fallback_reason in (LEAK, "echoes markup"), fu
        assert not _contains(fu.text, value), (value, fu.text)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_prompt_holds_the_code_and_the_public_summary_never_the_failure_messages(task_id):
    task = checker.get_task(task_id)
    code, verdict = _code(task), _synthetic_failing(task)
    run = cf.CodeRun.from_verdict(verdict)
    plan = cf.choose(run, cf.code_facts(code, task.language, task.kind), task)
    fake = FakePort("Why does that case need its own branch in your code?")
    cf.write(plan, fake, task=task, code=code, run=run, verdict=verdict)
    (prompt,) = fake.model.calls
    text = str(prompt[-1].content)
    assert "first list empty" in text and "1 of 2 hidden tests passed" in text
    assert verdict.tests[1].message not in text and "got [9, 4]" not in text
    first_code_line = next(ln for ln in code.splitlines() if ln.strip())
    assert first_code_line.replace("<", "‹").replace(">", "›") in text
    assert re.search(r"<candidate_answer id=[0-9a-f]+>", text)


# -- every task, real runs in the sandbox --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_real_runs_of_the_starter_and_the_reference_lead_to_grounded_followups(task_id):
    """The starter fails (unwritten, naive or empty), the reference passes; neither follow-up tells an answer."""
    task = checker.get_task(task_id)
    runs = []
    for code in (task.starter_code or "x", _code(task)):
        verdict = checker.check(task_id, code, prewarm=False)
        run = cf.CodeRun.from_verdict(verdict)
        plan = cf.choose(run, cf.code_facts(code, task.language, task.kind), task)
        runs.append((code, verdict, run, plan))
    (_, bad, bad_run, bad_plan), (_, good, good_run, good_plan) = runs
    # A timing check can miss on a loaded machine; the reference is then "slow", which asks the efficiency why.
    assert not bad.passed and (good.passed or set(good_run.flags) == {"slow"})
    assert bad_plan.kind in {"failing_case", "efficiency"}
    if bad_run.failing is not None and bad_run.error_kind != "time limit":
        assert bad_plan.kind == "failing_case" and bad_plan.case == bad_run.failing
    else:
        assert bad_plan.flags, bad_run
    assert good_plan.kind in PASS_KINDS
    expected = _expected_outputs(task, bad)
    for code, verdict, run, plan in runs:
        honest = cf.write(plan, None, task=task, code=code, run=run, verdict=verdict)
        assert honest.text.endswith("?") and honest.kind == plan.kind
        assert not cf.leaks_hidden(honest.text, task, bad, allowed=[code])
        for value in expected:
            assert not _contains(honest.text, value), (value, honest.text)
    bad_code, _, bad_run, bad_plan = runs[0]
    for value in expected:  # what the failing code did not produce: a reply stating it is refused
        leaky = f"Since the answer should be {value}, what does your version return there?"
        fu = cf.write(bad_plan, FakePort(leaky), task=task, code=bad_code, run=bad_run, verdict=bad)
        assert fu.source == "fallback", (value, fu)
        assert not _contains(fu.text, value)
    for code, verdict, run, plan in runs:
        prompt_fake = FakePort("Why did you write it this way?")
        cf.write(plan, prompt_fake, task=task, code=code, run=run, verdict=verdict)
        sent = str(prompt_fake.model.calls[0][-1].content)
        for t in verdict.tests:
            if t.message and "expected" in t.message:
                assert t.message not in sent


# -- the choice and the reading of code -----------------------------------------------------------------


def _task(**kw) -> TaskInfo:
    base = {"id": "t", "title": "T", "statement": "s", "language": "python", "kind": "python", "runner": "x"}
    return TaskInfo.model_validate(base | kw)


def test_python_facts_name_nested_loops_allocations_and_an_unguarded_exp_with_their_lines():
    code = "\n".join(
        [
            "import numpy as np",
            "def f(x):",
            "    out = np.zeros_like(x)",
            "    for i in range(3):",
            "        for j in range(3):",
            "            out[i, j] = x[i, j]",
            "    return np.exp(out) / np.exp(out).sum()",
        ]
    )
    facts = {f.kind: f for f in cf.code_facts(code, "python", "numpy")}
    assert facts["nested-loops"].lines == (5,) and "2 deep" in facts["nested-loops"].detail
    assert facts["allocations"].lines == (3,)
    assert facts["exp-without-max"].lines == (7,)
    guarded = code.replace("np.exp(out)", "np.exp(out - out.max())")
    assert "exp" in {f.kind for f in cf.code_facts(guarded, "python", "numpy")}


def test_cpp_facts_follow_unbraced_nested_loops_locks_and_atomics():
    code = "\n".join(
        [
            "#include <mutex>",
            "std::mutex m; // for (int k = 0; k < 9; ++k)",
            "std::atomic<int> hits{0};",
            "void t(const float* s, float* d, int r, int c) {",
            "    if (r > 0)",
            "        for (int i = 0; i < r; ++i)",
            "            for (int j = 0; j < c; ++j) d[j * r + i] = s[i * c + j];",
            '    const char* msg = "for (;;) {";',
            "    std::lock_guard<std::mutex> g(m);",
            "    hits.fetch_add(1);",
            "}",
        ]
    )
    facts = {f.kind: f for f in cf.code_facts(code, "cpp")}
    assert facts["nested-loops"].lines == (7,) and "2 deep" in facts["nested-loops"].detail
    assert 9 in facts["mutex"].lines and 10 in facts["atomics"].lines


def test_kernel_facts_name_barriers_and_shared_arrays():
    code = "\n".join(
        [
            "from numba import cuda, float32",
            "@cuda.jit",
            "def k(x, out):",
            "    s = cuda.shared.array(128, float32)",
            "    s[cuda.threadIdx.x] = x[cuda.grid(1)]",
            "    cuda.syncthreads()",
            "    cuda.atomic.add(out, 0, s[0])",
        ]
    )
    facts = {f.kind: f.lines for f in cf.code_facts(code, "python", "cuda")}
    assert facts["shared-array"] == (4,) and facts["syncthreads"] == (6,) and facts["atomics"] == (7,)


def test_a_failing_check_of_how_code_runs_asks_the_efficiency_why_and_a_pass_skips_kinds_already_asked():
    task = _task(kind="numpy")
    code = "import numpy as np\ndef f(x):\n    for i in x:\n        for j in x:\n            pass\n    return np.zeros(3)\n"
    facts = cf.code_facts(code, "python", "numpy")
    loops = Verdict(
        task_id="t",
        tests=[
            TestResult(name="no Python loops", passed=False, message="line 3: for"),
            TestResult(name="a", passed=True),
        ],
    )
    plan = cf.choose(cf.CodeRun.from_verdict(loops), facts, task)
    assert plan.kind == "efficiency" and plan.flags == ("loops",) and plan.lines == (4,)
    timed = Verdict(task_id="t", tests=[TestResult(name="400 numbers (timed)", passed=False, message="x")],
                    error="time limit: the run used more than 10 s of CPU")  # fmt: skip
    assert cf.choose(cf.CodeRun.from_verdict(timed), facts, task).kind == "efficiency"
    wrong_timed = Verdict(task_id="t", tests=[TestResult(name="400 numbers (timed)", passed=False, message="missing 2 triplets")])  # fmt: skip
    assert cf.choose(cf.CodeRun.from_verdict(wrong_timed), facts, task).kind == "failing_case"
    ok = cf.CodeRun.from_verdict(_passing(task))
    assert cf.choose(ok, facts, task).kind == "complexity"
    assert cf.choose(ok, facts, task, asked=["complexity"]).kind == "design"


def test_a_race_flag_asks_about_the_threads_on_the_barrier_lines():
    task = _task(kind="cuda")
    code = "from numba import cuda\n@cuda.jit\ndef k(x):\n    cuda.syncthreads()\n"
    v = Verdict(
        task_id="t",
        tests=[
            TestResult(name="no data races (racecheck: same element)", passed=False, message="s[3] written by 2 threads"),
            TestResult(name="a case [x (9,) float32]", passed=True),
        ],
    )  # fmt: skip
    plan = cf.choose(cf.CodeRun.from_verdict(v), cf.code_facts(code, "python", "cuda"), task)
    assert plan.kind == "failing_case" and plan.flags == ("races",) and plan.lines == (4,)
    assert "data race" in cf.fallback(plan, task) and "line 4" in cf.fallback(plan, task)


def test_the_failing_case_keeps_input_shapes_and_drops_the_expected_output():
    msg = "shape (2, 3, 4, 4), expected (2, 3, 5, 5) (input: x shape (2, 3, 9, 9) float64, stride=2)"
    v = Verdict(task_id="t", tests=[TestResult(name="stride 2 with padding 2", passed=False, message=msg)])
    run = cf.CodeRun.from_verdict(v)
    assert run.failing is not None and run.failing.shapes == ("x (2, 3, 9, 9) float64",)
    assert run.failing.edge == "stride or padding"
    assert "(2, 3, 5, 5)" not in run.summary() and "stride=2" not in run.summary()
    assert cf.leaks_hidden("Is the output (2, 3, 5, 5)?", _task(), v)
    assert not cf.leaks_hidden(
        "What does your code do with a 9 by 9 input?", _task(), v, allowed=[run.summary()]
    )


def test_numeric_answers_leak_within_their_tolerance_and_not_outside_it():
    task = checker.get_task("numeric-amdahl")
    assert cf.leaks_hidden("Would 4.71x be right on eight GPUs?", task)
    assert cf.leaks_hidden("Is the speedup about 4.7?", task)
    assert not cf.leaks_hidden("Why did you get 3.2 on eight GPUs?", task)
    assert not cf.leaks_hidden("Why did you say 4.7?", task, allowed=["speedup_8: 4.7"])


def test_line_numbers_of_the_candidates_code_are_never_taken_for_hidden_values():
    task = checker.get_task("numeric-amdahl")
    # a line number that happens to equal a hidden answer is a place in the code, not the answer
    assert not cf.leaks_hidden("What happens on lines 4, 10 and 26 when the fraction is zero?", task)
    assert not cf.leaks_hidden("What does line 10 return for eight GPUs?", task)
    assert cf.leaks_hidden("What does your code return for 10 workers?", task)  # not a line: a value
    assert cf.leaks_hidden("On line 3, why is the speedup 4.7?", task)  # the answer itself still leaks


# -- writing the question --------------------------------------------------------------------------------


def _plan_and_run(task_id: str = "merge-intervals"):
    task = checker.get_task(task_id)
    code = _code(task)
    verdict = _synthetic_failing(task)
    run = cf.CodeRun.from_verdict(verdict)
    return task, code, verdict, run, cf.choose(run, cf.code_facts(code, task.language, task.kind), task)


def test_a_grounded_model_question_is_kept_and_a_model_failure_falls_back():
    task, code, verdict, run, plan = _plan_and_run()
    good = "What does your loop on line 5 do when the first list is empty?"
    fu = cf.write(plan, FakePort(good), task=task, code=code, run=run, verdict=verdict, key="s1")
    assert fu.source == "model" and fu.text == good and fu.kind == "failing_case" and fu.model == "scripted"
    broken = cf.write(plan, FakePort(ModelError("no model at http://127.0.0.1:9/v1")), task=task, code=code,
                      run=run, verdict=verdict)  # fmt: skip
    assert broken.source == "fallback" and broken.fallback_reason.startswith("model error")
    assert broken.text == cf.fallback(plan, task)


def test_a_repeated_or_narrating_reply_is_rejected():
    task, code, verdict, run, plan = _plan_and_run()
    earlier = "What does your loop on line 5 do when the first list is empty?"
    again = cf.write(plan, FakePort(earlier), task=task, code=code, run=run, verdict=verdict, asked=[earlier])
    assert again.source == "fallback" and again.fallback_reason == "repeats an earlier question"
    narrates = cf.write(plan, FakePort("The interviewer asks: what happens?"), task=task, code=code, run=run)
    assert narrates.source == "fallback"


def test_the_prompt_template_needs_its_variables():
    assert prompts.variables("code_followup") == {"title", "run_summary", "kind", "target", "lines", "code"}


def test_run_history_lists_each_run_with_its_flags_and_the_question_asked():
    task, code, verdict, run, plan = _plan_and_run()
    fu = cf.write(plan, None, task=task, code=code, run=run, verdict=verdict)
    slow = Verdict(task_id=task.id, tests=[TestResult(name="long lists", passed=True)], error="time limit")
    history = [
        {"verdict": verdict.model_dump(mode="json"), "at": 0.0, **cf.event_payload(run, plan, fu)},
        {"verdict": slow.model_dump(mode="json"), "at": "2026-01-01T10:00:00"},
    ]
    md = cf.run_history_markdown(history)
    first, second = md.split("\n2. ")
    assert first.startswith("1. 00:00:00 UTC: 1/2 passed") and "first list empty (empty input)" in first
    assert "asked (failing case)" in first and "first list empty" in first
    assert "expected" not in md and "[3, 17]" not in md
    assert (
        second.startswith("2026-01-01T10:00:00: 1/1 passed")
        and "time limit" in second
        and "flags: slow" in second
    )
    assert cf.run_history_markdown([]) == "_No test runs._"


# -- the real embedded server ----------------------------------------------------------------------------


@pytest.mark.embedded
@pytest.mark.slow
def test_a_coding_followup_through_the_embedded_server(tmp_path):
    from interviewer.config import load_settings
    from interviewer.runtime import Runtime

    settings = load_settings(embedded_model="smollm2-135m", data_dir=tmp_path, max_tokens=48, timeout=120)
    rt = Runtime(settings)
    try:
        port = rt.model_or_none()
        assert port is not None
        task, code, verdict, run, plan = _plan_and_run("unique-triplets")
        fu = cf.write(plan, port, task=task, code=code, run=run, verdict=verdict, key="embedded-test")
        assert fu.model == port.name and fu.seconds is not None  # the server answered (kept or vetted away)
        assert fu.text.endswith("?") and fu.kind == "failing_case"
        assert not cf.leaks_hidden(fu.text, task, verdict, allowed=[code])
    finally:
        rt.close()


def test_a_question_off_the_plan_is_replaced_and_every_authored_question_is_on_it():
    task, code, verdict, run, plan = _plan_and_run()
    generic = cf.write(plan, FakePort("What does the line with sorted do in your code?"), task=task, code=code,
                       run=run, verdict=verdict)  # fmt: skip
    assert generic.source == "fallback" and generic.fallback_reason == "off the plan (failing case)"
    ok = cf.choose(cf.CodeRun.from_verdict(_passing(task)), cf.code_facts(code, "python"), task)
    vague = cf.write(ok, FakePort("How does your code handle disjoint intervals in the lists?"), task=task,
                     code=code, run=run)  # fmt: skip
    assert ok.kind == "complexity" and vague.source == "fallback"
    for task_id in TASK_IDS:
        t = checker.get_task(task_id)
        c = _code(t)
        facts = cf.code_facts(c, t.language, t.kind)
        for v in (_synthetic_failing(t), _passing(t)):
            p = cf.choose(cf.CodeRun.from_verdict(v), facts, t)
            assert not cf.off_kind(cf.fallback(p, t), p), (task_id, p.kind)


def test_the_run_history_reads_code_run_events_from_the_session_store(tmp_path):
    from interviewer.store import SessionStore

    task, code, verdict, run, plan = _plan_and_run()
    fu = cf.write(plan, None, task=task, code=code, run=run, verdict=verdict)
    store = SessionStore(tmp_path / "s.db")
    sid = store.create("me", "coding", {"rounds": ["ml-coding"]})
    payload = {"qid": "q1", "verdict": verdict.model_dump(mode="json"), **cf.event_payload(run, plan, fu)}
    store.append(sid, "code_run", payload, ts=3600.0)
    store.append(sid, "code_run", {"qid": "q2", "verdict": _passing(task).model_dump(mode="json")})
    history = cf.history_from_events(store.events(sid), "q1")
    assert [h["at"] for h in history] == [3600.0]
    md = cf.run_history_markdown(history)
    assert md.startswith("1. 01:00:00 UTC: 1/2 passed") and "asked (failing case)" in md and "\n2." not in md


def test_a_question_echoing_the_coding_rubric_is_replaced():
    from pathlib import Path

    from interviewer.content import load_question

    q = load_question(Path(__file__).parent.parent / "rubrics/phone-screen/phone.coding.merge-intervals.yaml")
    assert q.coding_task == "merge-intervals"
    task, code, verdict, run, plan = _plan_and_run()
    echo = f"When the first list is empty, {q.why(1).target.rstrip('.?')}?"
    fu = cf.write(plan, FakePort(echo), task=task, code=code, run=run, verdict=verdict, question=q)
    assert fu.source == "fallback" and fu.fallback_reason.startswith("leaks the rubric's wording")


def test_an_efficiency_question_in_plain_words_is_kept():
    task = checker.get_task("unique-triplets")
    code = "def three_sum(nums, target):\n    for i in nums:\n        for j in nums:\n            for k in nums:\n                pass\n"
    timed = Verdict(task_id=task.id, tests=[TestResult(name="a", passed=True)], error="time limit exceeded")
    run = cf.CodeRun.from_verdict(timed)
    plan = cf.choose(run, cf.code_facts(code, "python"), task)
    asked = "Why does the code take so long to find the triplets on large inputs?"
    fu = cf.write(plan, FakePort(asked), task=task, code=code, run=run, verdict=timed)
    assert plan.kind == "efficiency" and fu.source == "model" and fu.text == asked
