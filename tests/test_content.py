"""The question bank: every rubric validates, every seed topic is covered, every link resolves."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from interviewer import prompts
from interviewer.content import Round, load_question
from interviewer.deep_dive import template_knowledge_links
from interviewer.errors import ContentError

from .conftest import REPO


def test_every_rubric_loads_and_the_bank_is_large(bank):
    files = sorted((REPO / "rubrics").glob("*/*.yaml"))
    assert len(bank.questions) == len([f for f in files if f.parent.name != "coding"])
    assert len(bank.questions) >= 250  # issue 14


@pytest.mark.parametrize("round_", [r for r in Round if r is not Round.DEEP_DIVE])
def test_each_round_has_twenty_questions_of_graded_difficulty(bank, round_):
    qs = bank.by_round(round_)
    assert len(qs) >= 20, f"{round_.value} has {len(qs)} questions"
    assert {q.difficulty for q in qs} >= {1, 2, 3} or len({q.difficulty for q in qs}) >= 2


def test_phone_screen_covers_its_four_shapes(bank):
    tracks = Counter(q.track for q in bank.by_round(Round.PHONE))
    assert {"theory", "applied", "hardware", "coding"} <= set(tracks)
    assert min(tracks[t] for t in ("theory", "applied", "hardware", "coding")) >= 4


def test_every_seed_topic_maps_to_a_question(bank):
    """The coverage table: removing the last question on a seed topic fails CI."""
    wanted = yaml.safe_load((REPO / "rubrics" / "seed_topics.yaml").read_text())
    table = {}
    missing = []
    for round_id, tags in wanted.items():
        for tag in tags:
            covering = [q.id for q in bank.by_round(round_id) if tag in q.seed_topics]
            table[(round_id, tag)] = covering
            if not covering:
                missing.append(f"{round_id}/{tag}")
    assert not missing, f"seed topics with no question: {missing}"
    assert len(table) >= 60


def test_every_knowledge_link_resolves_and_documents_are_substantial(bank):
    linked = {link for q in bank.questions.values() for link in q.knowledge}
    linked |= set(template_knowledge_links())  # the resume deep-dive rubric is packaged, not a bank file
    for link in linked:
        path = REPO / link
        assert path.is_file(), link
        text = path.read_text()
        assert text.startswith("# ") and "\n## " in text, f"{link} needs a title and sections"
        assert len(text.split()) >= 250, f"{link} is too short to study from"
    orphans = {str(p.relative_to(REPO)) for p in (REPO / "knowledge").rglob("*.md")} - linked
    assert not orphans, f"knowledge documents no question links to: {sorted(orphans)}"


def test_coding_questions_point_at_existing_tasks(bank):
    tasks = {p.parent.name for p in (REPO / "rubrics" / "coding").glob("*/task.yaml")}
    referenced = {q.coding_task for q in bank.questions.values() if q.coding_task}
    assert referenced, "no question uses a coding task"
    assert referenced <= tasks, f"unknown coding tasks: {referenced - tasks}"


def test_why_chains_are_authored_questions(bank):
    for q in bank.questions.values():
        l1, l2 = q.why(1), q.why(2)
        assert l1.fallback.rstrip().endswith("?") and l2.fallback.rstrip().endswith("?"), q.id
        assert l1.fallback != l2.fallback, q.id


def test_design_and_case_questions_carry_scenario_facts(bank):
    for q in bank.by_round(Round.DESIGN):
        assert q.scenario is not None and q.scenario.facts, q.id


def test_every_round_has_its_prompt_and_the_templates_need_their_variables():
    for r in Round:
        assert prompts.round_style(r.value)
    assert prompts.variables("followup") == {"answer", "history", "level", "intent"}
    with pytest.raises(ContentError, match="missing variables"):
        prompts.render("followup", answer="x")


def _write(tmp_path: Path, text: str, round_dir: str = "phone-screen") -> Path:
    d = tmp_path / "rubrics" / round_dir
    d.mkdir(parents=True, exist_ok=True)
    p = d / "bad.yaml"
    p.write_text(text)
    return p


def test_malformed_rubric_names_the_file_the_field_and_the_expectation(tmp_path):
    src = (REPO / "tests/fixtures/content/rubrics/phone-screen/fx.amdahl.yaml").read_text()
    p = _write(tmp_path, src.replace("difficulty: 1", "difficulty: 7"))
    with pytest.raises(ContentError) as e:
        load_question(p)
    assert (
        str(p) in str(e.value) and "difficulty" in str(e.value) and "less than or equal to 3" in str(e.value)
    )

    p = _write(tmp_path, src.replace("      4: Derives 4.7x and the 10x ceiling.\n", ""))
    with pytest.raises(ContentError, match=r"criteria\.0\.levels.*missing \[4\]"):
        load_question(p)

    p = _write(
        tmp_path,
        src.replace("fallback: Which assumption", "fallback: Tell me which assumption").replace(
            "4.7x figure rely on?", "4.7x figure rely on."
        ),
    )
    with pytest.raises(ContentError, match=r"why_chain\.0\.fallback.*must be a question"):
        load_question(p)

    p = _write(tmp_path, src + "\nunknown_field: 1\n")
    with pytest.raises(ContentError, match="unknown_field"):
        load_question(p)

    p = _write(tmp_path, src, round_dir="behavioral")
    with pytest.raises(
        ContentError, match="field 'round' is 'phone-screen' but the file is under 'behavioral/'"
    ):
        load_question(p)

    p = _write(tmp_path, "key: [unclosed")
    with pytest.raises(ContentError, match="not valid YAML"):
        load_question(p)


def test_gpu_kernel_round_has_coding_tasks_and_concepts(bank):
    """Issue #14: at least 22 questions, 6 of them kernels checked in the sandbox, 16 conceptual."""
    qs = bank.by_round(Round.GPU)
    coding = [q for q in qs if q.coding_task]
    assert len(qs) >= 22 and len(coding) >= 6 and len(qs) - len(coding) >= 16
    tasks = {q.coding_task for q in coding}
    assert all((REPO / "rubrics" / "coding" / t / "task.yaml").is_file() for t in tasks)
    assert {q.difficulty for q in qs} == {1, 2, 3}
    assert all(q.knowledge[0].startswith("knowledge/gpu-kernels/") for q in qs)


def _probe_rubric(tmp_path: Path, probe: dict) -> Path:
    src = REPO / "rubrics" / "inference-deep-dive" / "inference.attention.flash-attention.yaml"
    data = yaml.safe_load(src.read_text())
    data["probes"] = [probe]
    path = tmp_path / "inference-deep-dive" / "q.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        (
            {
                "point": "main.9",
                "kind": "named",
                "ask": "Which memory?",
                "accept": ["SRAM"],
                "reject": ["HBM"],
            },
            "main has 5 key points",
        ),
        (
            {
                "point": "main.0",
                "kind": "option",
                "ask": "Which?",
                "options": ["a", "A "],
                "true": "a",
                "wrong": ["A "],
            },
            "distinct options",
        ),
        (
            {
                "point": "why1.0",
                "kind": "option",
                "ask": "Which?",
                "options": ["a", "not stated"],
                "true": "a",
                "wrong": ["not stated"],
            },
            "implied",
        ),
        (
            {
                "point": "why2.0",
                "kind": "option",
                "ask": "Which?",
                "options": ["a", "b"],
                "true": "a",
                "wrong": ["a"],
            },
            "wrong must be other options",
        ),
        ({"point": "main.1", "kind": "number", "ask": "How many MiB?"}, "needs a value"),
        (
            {
                "point": "main.2",
                "kind": "named",
                "ask": "Which memory?",
                "accept": ["SRAM"],
                "reject": ["sram"],
            },
            "both accepted and rejected",
        ),
    ],
)
def test_a_malformed_reading_probe_is_refused_with_its_reason(tmp_path, probe, said):
    with pytest.raises(ContentError, match=said):
        load_question(_probe_rubric(tmp_path, probe))


def test_a_well_formed_reading_probe_loads_with_its_key_point(tmp_path):
    q = load_question(
        _probe_rubric(
            tmp_path,
            {"point": "why1.1", "kind": "number", "ask": "How many MiB?", "value": 128, "unit": "MiB"},
        )
    )
    assert (q.probes[0].part, q.probes[0].index, q.probes[0].value) == ("why1", 1, 128)


def _key_points(q) -> set[str]:
    return (
        {f"main.{i}" for i in range(len(q.key_points))}
        | {f"why1.{i}" for i in range(len(q.why(1).key_points))}
        | {f"why2.{i}" for i in range(len(q.why(2).key_points))}
    )


def test_every_key_point_of_every_concept_question_has_a_reading_probe(bank):
    """Coding questions are graded by the sandbox; every other key point is read by at least one probe."""
    concept = [q for q in bank.questions.values() if not q.coding_task]
    assert concept
    missing = [
        f"{q.id}: {pt}" for q in concept for pt in sorted(_key_points(q) - {p.point for p in q.probes})
    ]
    assert not missing, f"key points with no reading probe: {missing}"
    for q in concept:
        for p in q.probes:
            assert "candidate" in p.ask, f"{q.id}: probe '{p.ask}' must ask what the candidate's answer says"
            assert len({o.strip().casefold() for o in p.options}) == len(p.options), f"{q.id}: '{p.ask}'"


def test_every_design_and_case_question_has_whiteboard_components(bank):
    from interviewer.whiteboard import components_named

    for round_ in (Round.DESIGN, Round.CASE):
        for q in bank.by_round(round_):
            names = [c.name for c in q.components]
            assert len(names) >= 4, (
                f"{q.id} has {len(names)} expected components; a whiteboard design needs at least 4"
            )
            assert len({n.lower() for n in names}) == len(names), f"{q.id}: component names repeat: {names}"
            for c in q.components:
                assert c.aliases and all(a.strip() for a in c.aliases), f"{q.id}: {c.name} has an empty alias"
                assert c.why.strip() and c.ask.rstrip().endswith("?"), (
                    f"{q.id}: {c.name} needs a why and a question"
                )
                # A box labelled with the component's own name is recognised as that component and no other.
                assert components_named(c.name, q) == [c.name], (
                    f"{q.id}: a box named {c.name!r} reads as {components_named(c.name, q)}"
                )


def test_a_malformed_expected_flow_is_refused(tmp_path):
    data = yaml.safe_load((REPO / "rubrics" / "system-design" / "design.fraud-scoring.yaml").read_text())
    data["flows"] = [{"from": "API gateway", "to": "quantum router"}]
    path = tmp_path / "system-design" / "design.fraud-scoring.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ContentError, match="quantum router"):
        load_question(path)
