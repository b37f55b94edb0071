"""The sandbox attack suite: every hostile submission in tests/checker/test_attacks.py, tried for real.

Each test item is one attack (or one family run on several tasks) against the real strict sandbox and the
real graders; "blocked" means the test passed: the attack failed with the expected clear verdict and the host
was left untouched. Grouped by the part of the checker under attack.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_sandbox_attacks.py   (prints a table, exits 1 if any got
through; needs bubblewrap and g++ like the tests, about 2-4 minutes on 2 cores)
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUITE = REPO / "tests" / "checker" / "test_attacks.py"

GROUPS = {
    "containment: limits, network, files, environment, leftovers": (
        "infinite_loop", "sleep", "huge_allocation", "fork_bomb", "network", "hidden_tests", "writes_outside",
        "filling_the_disk", "stdout_flood", "orphaned", "limits_are", "prewarmed", "a_fork_bomb",
        "boxes_of_a_killed", "hosts_secrets",
    ),
    "weak mode: the grader's own /proc/<pid>/environ": ("graders_proc_environ",),
    "forged Python passes (patched comparisons, fake files, early exits)": ("forged_passes",),
    "NumPy-only rule (exec/eval, torch, getattr, importlib, ctypes at run time)": ("numpy_only",),
    "NumPy-only rule: np.vectorize aliases, recursion, the audit hook's state through gc/frames": (
        "vectorize_under", "recursion", "audit_hook_state",
    ),
    "results channel (forged lines, key hunt, frame flood, deep JSON, huge ints, 15 MB values)": ("results_channel", "hostile_result", "deep_json", "out_of_reach", "flood_of_result"),
    "forged C++ passes (skipped timed calls, drawn timed shape, sanitizer hooks)": ("transpose", "sanitizer_hooks"),
    "C++ timing: report rewritten by a destructor, remembered results replayed, work in a helper process": ("timing_report", "replayed_result", "helper_process"),
    "C++ sanitizers: options via environment + re-exec, ifuncs, pasted no_sanitize, driver output printed by project code": (
        "sanitizer_options", "no_sanitize_attribute", "ifunc_resolver", "exec_guard", "printed_by_project",
    ),
    "hidden C++ drivers (.incbin)": ("incbin",),
}  # fmt: skip


class Tally:
    """A pytest plugin that records the outcome of each test item's call phase."""

    def __init__(self) -> None:
        self.outcomes: dict[str, bool] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.nodeid] = report.passed


def group_of(nodeid: str) -> str:
    name = nodeid.split("::")[-1].split("[")[0]  # the test function, not its parameters
    for group, keys in GROUPS.items():
        if any(k in name for k in keys):
            return group
    return "other"


def main() -> int:
    tally = Tally()
    pytest.main([str(SUITE), "-q", "-p", "no:cacheprovider", "--no-header", "-rN"], plugins=[tally])
    rows: dict[str, list[bool]] = defaultdict(list)
    for nodeid, ok in tally.outcomes.items():
        rows[group_of(nodeid)].append(ok)
    print("\n| attack group | tried | blocked |\n|---|---|---|")
    for group in [*GROUPS, "other"]:
        if rows.get(group):
            print(f"| {group} | {len(rows[group])} | {sum(rows[group])} |")
    tried = sum(len(v) for v in rows.values())
    blocked = sum(sum(v) for v in rows.values())
    print(f"| **total** | **{tried}** | **{blocked}** |")
    for nodeid, ok in tally.outcomes.items():
        if not ok:
            print(f"GOT THROUGH: {nodeid}")
    return 0 if tried and blocked == tried else 1


if __name__ == "__main__":
    sys.exit(main())
