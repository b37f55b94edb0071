"""cpp-tiled-transpose: the reference passes; untiled, edge-broken and square-only versions fail clearly."""

from __future__ import annotations

import re

import numpy as np
import pytest

from interviewer.checker import channel, check, get_task
from interviewer.checker.cpp_tasks import transpose as T
from interviewer.checker.cpp_tasks._build import BoxRun, Check, build_and_run, to_verdict
from interviewer.checker.sandbox import Limits, RunResult, Sandbox

TASK = "cpp-tiled-transpose"


def _reference() -> str:
    return get_task(TASK).reference_code()


def _failing(verdict_tests: list, name_part: str) -> str:
    bad = [t for t in verdict_tests if not t.passed]
    assert bad, "expected a failing test"
    hit = [t for t in bad if name_part in t.name]
    assert hit, f"no failing test named like {name_part!r}: {[t.name for t in bad]}"
    return hit[0].message


def test_source_matrix_matches_the_harness_generator() -> None:
    # splitmix64 of (seed + 1 * golden) for seed 0 is a published test vector: 0xE220A8397B1DCDAF.
    first = T._mix(0, 1)[0]
    assert int(first) == 0xE220A8397B1DCDAF
    m = T.source_matrix(7, 3, 5)
    assert m.shape == (3, 5) and m.dtype == np.float32 and float(m.max()) < 65536


def test_shape_check_names_the_first_wrong_element_and_guard_writes() -> None:
    rows, cols = 3, 4
    want = T.source_matrix(11, rows, cols).T.reshape(-1)
    guard = np.full(T.GUARD, T.GUARD_VALUE, dtype=np.float32)
    good = np.concatenate([guard, want, guard])
    assert T._check_shape(11, 0, rows, cols, good) is None
    bad = good.copy()
    bad[T.GUARD + 5] = T.UNWRITTEN
    msg = T._check_shape(11, 0, rows, cols, bad)
    assert msg is not None and "dst[1][2]" in msg and "never written" in msg
    over = good.copy()
    over[T.GUARD + rows * cols] = 1.0
    assert "past the end" in (T._check_shape(11, 0, rows, cols, over) or "")


def _signed(key: str, *payloads: str) -> bytes:
    return b"".join(f"{channel.sign(key, p.encode())} {p}\n".encode() for p in payloads)


def test_report_records_are_verified_in_order_and_keep_the_best_of_each_loop() -> None:
    key = channel.new_key()
    recs = [
        '{"seq": 0, "shape": 0, "sha256": "aa"}',
        '{"seq": 1, "timing": [10, 12, 7, 5], "wrong": 0, "sum": 42}',
        '{"seq": 2, "timing": [8, 20, 5, 6], "wrong": 0, "sum": 43}',
        '{"seq": 3, "end": 2}',
    ]
    rep = T._parse_records(_signed(key, *recs), key)
    assert rep.problem is None and rep.finished and rep.shapes == {0: "aa"} and rep.sums == [42, 43]
    t = T._timing(rep.timings)
    assert t is not None and (t.rows_first, t.cols_first, t.tiled, t.cand, t.naive) == (8, 12, 5, 5, 8)
    assert t.ratio == pytest.approx(1.6) and t.machine_ratio == pytest.approx(1.6)
    # A record in the three-loop format (no tiled baseline) is not a timing record.
    old = [recs[0], '{"seq": 1, "timing": [10, 12, 5], "wrong": 0, "sum": 42}', '{"seq": 2, "end": 1}']
    assert T._parse_records(_signed(key, *old), key).timings == []
    # A dropped, repeated or reordered record, or one line the harness did not sign, voids the run.
    for tampered in ([recs[0], recs[2], recs[3]], [recs[0], recs[1], recs[1], recs[2], recs[3]]):
        assert "removed, repeated or reordered" in (
            T._parse_records(_signed(key, *tampered), key).problem or ""
        )
    forged = _signed(key, *recs) + b"0" * 64 + b' {"seq": 4, "timing": [9, 9, 9, 1], "wrong": 0, "sum": 1}\n'
    assert "not written by the test harness" in (T._parse_records(forged, key).problem or "")


DRAWN = (2560, 1536)


def _t(naive: float, tiled: float, cand: float, cols_first: float | None = None) -> T.Timing:
    """Best times in ms: the row-order naive loop, the harness's tiled loop and the candidate's."""
    cols = 2 * naive if cols_first is None else cols_first
    ns = [int(x * 1e6) for x in (naive, cols, tiled, cand)]
    return T.Timing(rows_first=ns[0], cols_first=ns[1], tiled=ns[2], cand=ns[3], reps=T.TIMING_REPS)


def test_speed_judge_passes_a_candidate_over_the_bar() -> None:
    c = T.judge_speed([(DRAWN, _t(10.0, 6.0, 6.5))])
    assert c.passed and c.warning is None
    assert "speedup over the faster naive loop 1.54x" in c.message and "2560x1536" in c.message


def test_speed_judge_fails_an_untiled_candidate_where_the_machine_tells_tiling_apart() -> None:
    c = T.judge_speed([(DRAWN, _t(10.0, 6.0, 10.2))])
    assert not c.passed and c.warning is None
    assert "not measurably faster" in c.message and f"need {T.MIN_SPEEDUP:.2f}x" in c.message
    assert "could not judge" not in c.message
    # One discriminating run is enough: the candidate is judged by the bar even if another run was not.
    c = T.judge_speed([(DRAWN, _t(8.0, 6.8, 8.1)), (T.THRASH_SHAPE, _t(20.0, 12.0, 19.0))])
    assert not c.passed and "could not judge" not in c.message


def test_speed_judge_passes_tiled_speed_code_when_no_run_could_tell_tiling_apart() -> None:
    # The CI case: the machine's own tiled loop reached 1.18x on the drawn shape and 1.12x on the thrash one.
    runs = [(DRAWN, _t(8.0, 6.8, 6.9, 16.0)), (T.THRASH_SHAPE, _t(20.0, 17.9, 18.5, 28.0))]
    c = T.judge_speed(runs)
    assert c.passed, c.message
    assert c.warning is not None and "timing could not judge tiling" in c.warning
    assert "1.18x the naive loop on 2560x1536" in c.message and "yours ran at 1.16x" in c.message
    assert "speedup" in c.message and f"need {T.MIN_SPEEDUP:.2f}x" in c.message


def test_an_unjudged_speed_test_passes_with_a_warning_the_verdict_shows() -> None:
    speed = T.judge_speed([(DRAWN, _t(8.0, 7.5, 7.6)), (T.THRASH_SHAPE, _t(20.0, 18.0, 18.2))])
    v = to_verdict(TASK, [Check("compiles", True, "ok"), Check("shape 1x1", True, "ok"), speed], 0.5)
    assert v.passed and len(v.warnings) == 1
    assert v.warnings[0].startswith(T.SPEED_TEST + ": the timing could not judge tiling")
    assert "warning: " + v.warnings[0] in v.render_text()


def test_speed_judge_fails_code_clearly_slower_than_the_tiled_loop_even_when_the_machine_cannot_judge() -> (
    None
):
    runs = [(DRAWN, _t(8.0, 7.0, 9.0)), (T.THRASH_SHAPE, _t(20.0, 18.0, 22.0))]
    c = T.judge_speed(runs)
    assert not c.passed and c.warning is None
    assert "not measurably faster" in c.message and "could not judge tiling" in c.message
    assert f"{min(9.0 / 7.0, 22.0 / 18.0):.2f}x its time" in c.message


def test_a_run_over_the_bar_but_far_behind_the_tiled_loop_is_not_taken_for_tiling() -> None:
    # An untiled loop's lucky run: 1.33x over the faster naive loop, yet 1.83x the tiled loop's time.
    lucky = _t(13.3, 5.45, 10.0)
    assert lucky.ratio >= T.MIN_SPEEDUP and lucky.vs_tiled > T.TILED_CEILING and not lucky.fast
    assert T.next_shape([(DRAWN, lucky)]) == DRAWN  # timed again, like a ratio just under the bar
    c = T.judge_speed([(DRAWN, lucky), (DRAWN, _t(10.0, 5.0, 10.1))])
    assert not c.passed and c.warning is None
    assert (
        "not measurably faster" in c.message
        and "1.83x the time of the grader's own 32x32 tiled loop" in c.message
    )
    assert f"need at most {T.TILED_CEILING:.2f}x" in c.message and "square tiles" in c.message
    # Tiled code slower than the harness's loop but well ahead of the naive one passes, on any run.
    tiled16 = _t(10.0, 5.5, 7.7)
    assert tiled16.fast
    assert T.judge_speed([(DRAWN, tiled16)]).passed
    c = T.judge_speed([(DRAWN, _t(10.0, 5.5, 9.0)), (DRAWN, tiled16)])
    assert c.passed and "1.40x the tiled loop's time" in c.message


def test_a_run_where_tiling_gained_little_cannot_pass_an_untiled_loop_on_speed() -> None:
    # The tiled loop 1.30x the naive one; an untiled loop's lucky run 1.25x over it, as fast as that tiled loop.
    weak = _t(10.0, 7.7, 8.0)
    assert weak.ratio >= T.MIN_SPEEDUP and weak.vs_tiled <= T.TILED_CEILING
    assert weak.machine_ratio < T.JUDGE_AT and not weak.discriminates and not weak.fast
    assert T.next_shape([(DRAWN, weak)]) == T.THRASH_SHAPE
    # Where the thrash shape tells them apart, the loop is judged there, and fails.
    c = T.judge_speed([(DRAWN, weak), (T.THRASH_SHAPE, _t(20.0, 10.0, 19.5))])
    assert not c.passed and c.warning is None and "not measurably faster" in c.message
    # Where no run could, it passes only as "not judged", with the warning saying so.
    c = T.judge_speed([(DRAWN, weak), (T.THRASH_SHAPE, _t(20.0, 17.0, 17.5))])
    assert c.passed and c.warning is not None and "timing could not judge tiling" in c.warning
    assert f"need {T.JUDGE_AT:.2f}x" in c.message


def test_retries_time_the_thrash_shape_until_a_run_tells_tiling_apart() -> None:
    fast = _t(10.0, 6.0, 6.0)
    assert T.next_shape([(DRAWN, fast)]) is None
    # The machine's tiled loop below the bar: the next run times the power-of-two shape.
    assert T.next_shape([(DRAWN, _t(8.0, 7.0, 7.1))]) == T.THRASH_SHAPE
    assert T.next_shape([(DRAWN, _t(8.0, 7.0, 12.0))]) == T.THRASH_SHAPE
    # A discriminating machine: noise retries on the shape that discriminated, only inside the retry band.
    assert T.next_shape([(DRAWN, _t(10.0, 6.0, 9.0))]) == DRAWN
    assert (
        T.next_shape([(DRAWN, _t(8.0, 7.0, 7.1)), (T.THRASH_SHAPE, _t(20.0, 12.0, 18.0))]) == T.THRASH_SHAPE
    )
    assert T.next_shape([(DRAWN, _t(10.0, 6.0, 12.0))]) is None


def _timed_run(shape: tuple[int, int], t: T.Timing, tseed: int = 5) -> T.Run:
    """A finished timing run whose every timed call was right and took the given best times."""
    rows, cols = shape
    sums = [T.expected_checksum(*T.timing_keys(tseed, k, rows, cols)) for k in range(T.TIMING_REPS)]
    row = (t.rows_first, t.cols_first, t.tiled, t.cand)
    box = BoxRun(True, "", RunResult(0, "", "", False, None, 1.0))
    return T.Run(box, tseed, T.Report({}, [row] * T.TIMING_REPS, [0] * T.TIMING_REPS, sums, True))


def test_speed_check_retries_on_the_thrash_shape_and_judges_every_run() -> None:
    by_shape = {DRAWN: _t(8.0, 6.8, 7.0), T.THRASH_SHAPE: _t(20.0, 12.0, 18.0)}
    asked: list[tuple[int, int]] = []

    def run(reps: int, shape: tuple[int, int]) -> T.Run:
        asked.append(shape)
        return _timed_run(shape, by_shape[shape])

    check = T._speed_check(_timed_run(DRAWN, by_shape[DRAWN]), run, DRAWN)
    # Run 1: not discriminating -> thrash shape; run 2 discriminates, candidate 1.11x: noise retry there.
    assert asked == [T.THRASH_SHAPE, T.THRASH_SHAPE]
    assert not check.passed and "not measurably faster" in check.message
    assert "on 2048x2048" in check.message and "could not judge" not in check.message


def test_speed_check_never_judges_a_wrong_timed_result() -> None:
    first = _timed_run(DRAWN, _t(8.0, 7.0, 7.0))
    first.report.sums[3] += 1

    def run(reps: int, shape: tuple[int, int]) -> T.Run:
        raise AssertionError("a wrong result must not be timed again")

    check = T._speed_check(first, run, DRAWN)
    assert not check.passed and "checksum mismatch" in check.message


def test_a_wrong_result_on_the_retry_shape_fails_the_speed_test() -> None:
    # Right on the drawn shape, on a machine that cannot judge it; wrong on the thrash shape the retry times.
    def run(reps: int, shape: tuple[int, int]) -> T.Run:
        again = _timed_run(shape, _t(20.0, 19.0, 1.0))
        again.report.wrong[0] = 5
        return again

    check = T._speed_check(_timed_run(DRAWN, _t(8.0, 7.0, 7.0)), run, DRAWN)
    assert not check.passed and "2048x2048 result of timed call(s) [1] is wrong" in check.message


def _function(source: str, name: str) -> str:
    """The definition of the top-level function ``name`` in ``source``: its signature line to its closing brace."""
    found = re.search(rf"^[^\n]*\bvoid {name}\(.*?^\}}$", source, re.S | re.M)
    assert found is not None, f"no function {name} in the source"
    return found.group(0)


def _body(definition: str) -> str:
    """A function's body with whitespace runs made one space: the loop nest, whatever the indentation."""
    return " ".join(definition.split("{", 1)[1].split())


def _harness_and_reference() -> tuple[str, str]:
    task = get_task(TASK)
    return (task.path / "harness.cpp").read_text(encoding="utf-8"), task.reference_code()


def test_the_harness_times_the_reference_solutions_tiled_loop_nest() -> None:
    harness, reference = _harness_and_reference()
    tiled = _body(_function(harness, "tiled_ref"))
    assert "constexpr std::size_t kTile = 32;" in tiled
    assert tiled == _body(_function(reference, "transpose"))


@pytest.mark.sandbox
def test_the_harness_tiled_loop_and_the_reference_write_the_same_transpose_on_ragged_shapes(
    sandbox: Sandbox,
) -> None:
    harness, reference = _harness_and_reference()
    # Shapes with partial tiles at both edges, tall and wide, and sides below one tile.
    shapes = [(45, 70), (70, 45), (97, 33), (1, 65), (65, 1), (31, 64)]
    driver = (
        reference
        + "\n#include <cstdio>\n#include <cstring>\n#include <vector>\n"
        + _function(harness, "tiled_ref").replace("__attribute__((noinline)) ", "")
        + """
int main() {
    const std::size_t shapes[][2] = {"""
        + ", ".join(f"{{{r}, {c}}}" for r, c in shapes)
        + """};
    for (const auto& s : shapes) {
        const std::size_t rows = s[0], cols = s[1], n = rows * cols;
        std::vector<float> src(n), ref(n, -1.0f), tiled(n, -1.0f);
        for (std::size_t k = 0; k < n; ++k) src[k] = static_cast<float>(k);
        transpose(src.data(), ref.data(), rows, cols);
        tiled_ref(src.data(), tiled.data(), rows, cols);
        bool right = true;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) right = right && ref[j * rows + i] == src[i * cols + j];
        const bool same = std::memcmp(ref.data(), tiled.data(), n * sizeof(float)) == 0;
        std::printf("%zux%zu %s %s\\n", rows, cols, right ? "right" : "wrong", same ? "same" : "differs");
    }
}
"""
    )
    run = build_and_run(sandbox, {"driver.cpp": driver}, ["-O2", "driver.cpp"], ["./prog"])
    assert run.built, run.build_log
    assert not run.crashed, run.result.stderr
    assert run.result.stdout.split("\n")[:-1] == [f"{r}x{c} right same" for r, c in shapes]


@pytest.mark.sandbox
def test_reference_passes_every_shape_and_the_speed_test(sandbox: Sandbox) -> None:
    v = check(TASK, _reference(), sandbox=sandbox)
    assert v.passed, v.render_text()
    speed = [t for t in v.tests if t.name == T.SPEED_TEST]
    assert speed and "speedup" in speed[0].message
    assert len(v.tests) == len(T.EDGE_SHAPES) + 2 + 1


@pytest.mark.sandbox
def test_correct_but_untiled_transpose_fails_on_speed_only(sandbox: Sandbox) -> None:
    v = check(TASK, get_task(TASK).starter_code, sandbox=sandbox)
    assert all(t.passed for t in v.tests if t.name.startswith("shape"))
    speed = next(t for t in v.tests if t.name == T.SPEED_TEST)
    if speed.passed:
        # Only where the grader's own tiled loop could not beat the naive loop by the bar in any run.
        assert "timing could not judge tiling" in speed.message, v.render_text()
        assert any("timing could not judge tiling" in w for w in v.warnings), v.render_text()
        return
    assert not v.passed
    msg = speed.message
    assert "not measurably faster" in msg and f"need {T.MIN_SPEEDUP:.2f}x" in msg


@pytest.mark.sandbox
def test_where_no_run_can_judge_tiling_the_grader_times_the_thrash_shape_and_compares_with_its_tiled_loop(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bar no tiled loop reaches stands in for a machine whose caches hide the naive loop's misses.
    monkeypatch.setattr(T, "JUDGE_AT", 100.0)
    seed = next(s for s in range(100) if T.timing_shape(np.random.default_rng(s)) != T.THRASH_SHAPE)
    task = get_task(TASK)
    ref = T.grade_checks(task.path, task.reference_code(), sandbox, seed=seed)[-1]
    assert ref.name == T.SPEED_TEST and ref.passed, ref.message
    assert ref.warning and "timing could not judge tiling" in ref.warning, ref.message
    runs = ref.message.split("run(s): ", 1)[1].split(";", 1)[0].split(", ")
    assert [r.split(" on ")[1] for r in runs[1:]] == ["2048x2048"] * T.RETRIES, ref.message
    naive = T.grade_checks(task.path, task.starter_code, sandbox, seed=seed)[-1]
    assert "timing could not judge tiling" in naive.message and "on 2048x2048" in naive.message
    if naive.passed:  # the naive loop within TILED_TOLERANCE of the tiled one: this machine cannot tell
        assert naive.warning, naive.message
    else:
        took = float(naive.message.rsplit("yours took ", 1)[1].split("x its time")[0])
        assert took > T.TILED_TOLERANCE and "not measurably faster" in naive.message


@pytest.mark.sandbox
def test_off_by_one_at_the_tile_edge_is_caught(sandbox: Sandbox) -> None:
    code = _reference().replace("std::min(ii + kTile, rows)", "std::min(ii + kTile, rows - 1)")
    v = check(TASK, code, sandbox=sandbox)
    msg = _failing(v.tests, "shape")
    assert "never written" in msg
    assert "faster" in v.tests[-1].name and "not timed" in v.tests[-1].message


@pytest.mark.sandbox
def test_full_tiles_past_the_edge_write_out_of_bounds(sandbox: Sandbox) -> None:
    code = _reference().replace(
        "const std::size_t j_end = std::min(jj + kTile, cols);", "const std::size_t j_end = jj + kTile;"
    )
    assert code != _reference()
    v = check(TASK, code, sandbox=sandbox)
    assert not v.passed
    msg = _failing(v.tests, "shape")
    assert "past the end of dst" in msg or "crashed" in msg or "elements wrong" in msg


@pytest.mark.sandbox
def test_square_only_stride_fails_on_rectangles_but_not_squares(sandbox: Sandbox) -> None:
    code = _reference().replace("dst[j * rows + i]", "dst[j * cols + i]")
    v = check(TASK, code, sandbox=sandbox)
    by_name = {t.name: t for t in v.tests}
    assert by_name["shape 32x32"].passed and by_name["shape 64x64"].passed
    assert not by_name["shape 1x37"].passed and not by_name["shape 100x7"].passed


@pytest.mark.sandbox
def test_compile_error_is_a_verdict_error_with_the_compiler_message(sandbox: Sandbox) -> None:
    v = check(TASK, "void transpose(const float* s, float* d, int r, int c) { return 1; }", sandbox=sandbox)
    assert not v.passed and v.error is not None
    assert "error" in v.error and "solution.cpp" in v.error


def test_closed_form_checksum_equals_the_checksum_of_the_built_transpose() -> None:
    for rows, cols in [(1, 1), (3, 5), (64, 17), (128, 128)]:
        row_key, col_key = T.timing_keys(12345, 3, rows, cols)
        src = np.array(row_key, dtype=np.uint64)[:, None] * cols + np.array(col_key, dtype=np.uint64)[None, :]
        dst = src.astype(np.float32).T.reshape(-1)
        assert T.checksum(dst) == T.expected_checksum(row_key, col_key)
        swapped = dst.copy()
        swapped[[0, -1]] = swapped[[-1, 0]]
        if dst.size > 1:
            assert T.checksum(swapped) != T.expected_checksum(row_key, col_key)


@pytest.mark.sandbox
def test_an_infinite_loop_is_stopped_by_the_limits_with_a_clear_message(sandbox: Sandbox) -> None:
    code = (
        "#include <cstddef>\nvoid transpose(const float*, float*, std::size_t, std::size_t) { for (;;) {} }\n"
    )
    checks = T.grade_checks(get_task(TASK).path, code, sandbox, limits=Limits(cpu_seconds=1, wall_seconds=4))
    failed = [c for c in checks if not c.passed]
    assert failed and failed[0].name == "shape 1x1"
    assert "CPU limit" in failed[0].message or "did not finish" in failed[0].message


@pytest.mark.sandbox
def test_including_a_hidden_host_file_fails_inside_the_box_without_leaking_it(sandbox: Sandbox) -> None:
    harness = get_task(TASK).path / "harness.cpp"
    v = check(TASK, f'#include "{harness}"\n', sandbox=sandbox)
    assert v.error is not None and "No such file or directory" in v.error
    assert "naive_rows" not in v.error and "kGuard" not in v.error
