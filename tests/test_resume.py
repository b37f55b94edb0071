"""Resume upload: extraction, splitting, bad input, per-candidate index, and a deep-dive round on the fake model."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from interviewer.config import Settings
from interviewer.content.models import Round
from interviewer.deep_dive import (
    DEEP_DIVE_KINDS,
    deep_dive_mix,
    deep_dive_questions,
    load_template,
)
from interviewer.embeddings import HashingEmbedder
from interviewer.errors import ContentError, InputError
from interviewer.llm.client import ChatPort
from interviewer.llm.fake import ScriptedChatModel
from interviewer.resume import (
    MAX_RESUME_BYTES,
    ResumeIndex,
    collection_name,
    delete_resume_index,
    extract_text,
    load_resume,
    numbers_in,
    parse_resume,
    privacy_note,
    text_leaves_machine,
)
from interviewer.session import Interview, Ports
from interviewer.store import SessionStore

from .resume_samples import OTHER_MD, RESUME_MD, RESUME_TXT_LINES, write_image_only_pdf, write_pdf

# -- extraction and splitting ---------------------------------------------------------------------


def test_markdown_resume_splits_into_projects_with_their_numbers(tmp_path):
    p = tmp_path / "dana.md"
    p.write_text(RESUME_MD)
    r = load_resume(p, owner="dana")
    assert r.name == "Dana Okafor" and r.source == "dana.md"
    assert [s.kind for s in r.sections] == ["summary", "experience", "projects", "education", "skills"]
    names = [x.name for x in r.projects]
    assert names == [
        "Senior ML Engineer, Streamline AI",
        "ML Engineer, Parcel Robotics",
        "Sparse attention for long documents",
    ]
    stream = r.projects[0]
    assert stream.dates == "Jan 2021 - Present" and stream.kind == "experience"
    # A bullet wrapped onto the next line stays one claim.
    assert any("480 ms to 190 ms" in c and "A10G" in c for c in stream.claims)
    assert {"480 ms", "190 ms", "2,600 requests/s", "120 GPUs"} <= set(stream.numbers)
    assert "2018" not in stream.numbers  # years are dates, not claims
    assert r.projects[2].numbers[:2] == ("16k", "2.3x")


def test_plain_text_and_pdf_resumes_give_the_same_projects(tmp_path):
    txt = tmp_path / "priya.txt"
    txt.write_text("\n".join(RESUME_TXT_LINES))
    pdf = write_pdf(tmp_path / "priya.pdf", RESUME_TXT_LINES)
    from_txt = load_resume(txt, owner="p")
    from_pdf = load_resume(pdf, owner="p")
    for r in (from_txt, from_pdf):
        assert [x.name for x in r.projects] == [
            "Inference Engineer, Tensorloom",
            "Int8 kernels for recommendation",
        ]
        assert {"42 ms", "17 ms"} <= set(r.projects[0].numbers)
        assert "2.4x" in r.projects[1].numbers
        assert r.projects[0].dates == "Mar 2020 - Present"


def test_numbers_need_a_unit_to_count_as_claims():
    assert numbers_in("from 480 ms to 190 ms, 3.1x faster, 40% less, in 2021 on 3 nodes") == [
        "480 ms",
        "190 ms",
        "3.1x",
        "40%",
        "3 nodes",
    ]


def test_text_without_sections_still_yields_projects():
    r = parse_resume(
        "I built a caching layer that cut page load from 900 ms to 300 ms for 2M users.\n\n"
        "Before that I wrote reports and answered tickets for the finance team for years."
    )
    assert len(r.projects) == 1 and "900 ms" in r.projects[0].numbers


# -- bad input ------------------------------------------------------------------------------------


def test_image_only_pdf_says_so_and_what_to_do(tmp_path):
    p = write_image_only_pdf(tmp_path / "scan.pdf")
    with pytest.raises(InputError, match=r"no extractable text.*scanned or image-only.*paste the text"):
        extract_text(p)


def test_empty_file_and_blank_file(tmp_path):
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"empty\.pdf is empty \(0 bytes\)"):
        extract_text(empty)
    blank = tmp_path / "blank.md"
    blank.write_text("\n   \n\t\n")
    with pytest.raises(InputError, match="is empty"):
        extract_text(blank)


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    big = tmp_path / "huge.pdf"
    with big.open("wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: 50 MB on paper, nothing written

    def no_reading(self: Path) -> bytes:
        raise AssertionError("the size check must come before reading")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    with pytest.raises(InputError, match=r"huge\.pdf is 52\.4 MB; the limit is 10 MB"):
        extract_text(big)
    assert MAX_RESUME_BYTES == 10 * 1024 * 1024


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "a PNG image"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 64, "a JPEG image"),
        (b"\x7fELF\x02\x01\x01" + b"\x00" * 64, "a Linux executable"),
        (b"\x00\x01\x02\x03binary" * 10, "binary"),
    ],
)
def test_files_that_are_not_documents_are_named(tmp_path, payload, message):
    p = tmp_path / "resume.pdf"  # the name lies; the bytes decide
    p.write_bytes(payload)
    with pytest.raises(InputError, match=rf"{message}.*not a resume document"):
        extract_text(p)


def test_word_documents_and_damaged_pdfs_get_advice(tmp_path):
    docx = tmp_path / "resume.docx"
    with zipfile.ZipFile(docx, "w") as z:
        z.writestr("word/document.xml", "<w:document/>")
    with pytest.raises(InputError, match=r"ZIP archive \(a Word \.docx"):
        extract_text(docx)
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n" + b"this is not really a pdf body\n" * 20)
    with pytest.raises(InputError, match=r"damaged or unreadable|no extractable text"):
        extract_text(broken)


def test_too_short_and_projectless_resumes(tmp_path):
    with pytest.raises(InputError, match="only 3 words"):
        parse_resume("Dana. Engineer. Toronto.")
    p = tmp_path / "plain.md"
    p.write_text(
        "# Sam\n\n## Education\nBSc Physics, University of Leeds, 2015, with honours in optics and lasers\n"
    )
    with pytest.raises(InputError, match=r"found no projects in plain\.md"):
        load_resume(p)


# -- per-candidate index ----------------------------------------------------------------------------


def test_each_candidate_gets_a_private_collection_and_never_sees_another(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    emb = HashingEmbedder()
    dana = parse_resume(RESUME_MD, owner="dana@example.com")
    lee = parse_resume(OTHER_MD, owner="lee@example.com")
    a = ResumeIndex("dana@example.com", settings, embedder=emb)
    b = ResumeIndex("lee@example.com", settings, embedder=emb)
    assert a.name != b.name and "dana" not in a.name and a.name == collection_name("dana@example.com")
    assert a.add(dana) >= 3 and b.add(lee) >= 1

    # Lee asks about Dana's work: only Lee's own chunks come back.
    hits = b.retrieve("CUDA kernel p99 latency 480 ms A10G speech-to-text", k=10)
    assert hits and all("Streamline" not in h.text and "480 ms" not in h.text for h in hits)
    assert all("Harbor" in h.text or "Statistics" in h.text for h in hits)
    top = a.retrieve("fused CUDA kernel latency", k=1)[0]
    assert "480 ms" in top.text and top.source == "resume:pasted text"

    # A new upload replaces the old one; deleting one candidate leaves the other intact.
    assert a.add(dana) == a.count()
    assert delete_resume_index("dana@example.com", settings) is True
    assert a.count() == 0 and a.retrieve("latency") == []
    assert b.count() >= 1 and delete_resume_index("dana@example.com", settings) is False
    with pytest.raises(InputError, match=r"belongs to 'dana@example\.com'"):
        b.add(dana)


def test_privacy_note_says_when_text_leaves_the_machine(monkeypatch):
    local = Settings()
    assert "Nothing leaves this machine" in privacy_note(local) and not text_leaves_machine(local)
    monkeypatch.setenv("INTERVIEWER_BASE_URL", "http://127.0.0.1:8000/v1")
    assert "Nothing leaves this machine" in privacy_note(Settings())
    monkeypatch.setenv("INTERVIEWER_BASE_URL", "https://api.example.com/v1")
    remote = Settings()
    note = privacy_note(remote)
    assert text_leaves_machine(remote) and "sent to the model server at api.example.com" in note
    assert "Nothing leaves" not in note
    monkeypatch.delenv("INTERVIEWER_BASE_URL")
    shared_chroma = Settings(chroma_url="http://chroma.internal:8000")
    assert "stored on the Chroma server at chroma.internal" in privacy_note(shared_chroma)


# -- deep-dive questions ----------------------------------------------------------------------------


def test_every_kind_asks_about_the_candidates_own_projects_and_numbers():
    r = parse_resume(RESUME_MD, owner="dana")
    by_kind = {k: deep_dive_questions(r, 1, k)[0] for k in DEEP_DIVE_KINDS}
    perf = by_kind["performance"]
    assert perf.round is Round.DEEP_DIVE and perf.id.startswith("resume.") and perf.id.endswith(".1")
    assert "Streamline AI" in perf.question and "480 ms to 190 ms" in perf.question
    assert "480 ms" in perf.why(1).fallback and "baseline" in perf.why(1).fallback
    assert "without that change" in perf.why(2).fallback
    assert "A10G" in by_kind["hardware"].why(1).fallback
    assert "Sparse attention for long documents" in by_kind["research"].question
    assert "ICLR" in by_kind["research"].question and "16k" in by_kind["research"].why(1).fallback
    # The generic rubric, applied: six criteria, and key points and checks carry the resume's own figures.
    assert [c.name for c in perf.criteria] == [
        "scale",
        "bottleneck",
        "measurement discipline",
        "causality",
        "trade-off",
        "ownership",
    ]
    assert "480 ms, 190 ms" in perf.key_points[0]
    assert "480 ms" in perf.fact_checks[-1].any_of
    assert perf.knowledge == ["knowledge/resume-deep-dive/project-deep-dive.md"]
    ids = {q.id for q in [*by_kind.values(), *deep_dive_mix(r, ["performance", "hardware"])]}
    assert len(ids) == 6  # ids differ across kinds and within a mix


def test_unknown_kind_and_a_broken_template_are_clear_errors(tmp_path):
    r = parse_resume(RESUME_MD, owner="dana")
    with pytest.raises(InputError, match="unknown deep-dive kind 'poetry'"):
        deep_dive_questions(r, 1, "poetry")
    src = (Path(__file__).parents[1] / "interviewer" / "deep_dive.yaml").read_text()
    bad = tmp_path / "t.yaml"
    bad.write_text(src.replace("You quoted {number}.", "You quoted {figure}."))
    with pytest.raises(ContentError, match=r"kinds\.performance\.why\.0\.fallback.*\['figure'\]"):
        load_template(bad)


def test_a_deep_dive_round_on_the_fake_model_is_grounded_in_the_resume(tmp_path):
    r = parse_resume(RESUME_MD, owner="dana")
    model = ScriptedChatModel().queue(
        # Rephrasing question 1: keeps the project and every number, so it is used.
        "Let's talk about Senior ML Engineer, Streamline AI: you cut p99 from 480 ms to 190 ms with one "
        "CUDA kernel. What limited the service, and what were the numbers before and after?",
        # Rephrasing question 2: drops the numbers, so the authored template stands.
        "Tell me about your robotics job?",
        # The why-chain of question 1.
        "You say the fused kernel took p99 from 480 ms to 190 ms: how did you measure the bottleneck on the A10G?",
        "Without the fused kernel, what would have broken first at 2,600 requests/s?",
    )
    port = ChatPort(model, name="scripted")
    questions = deep_dive_questions(r, 2, "hardware", model=port)
    assert questions[0].variants and "480 ms" in questions[0].question
    assert "Parcel Robotics" in questions[1].question and "3.1x" in questions[1].question
    assert not questions[1].variants  # the rejected rephrasing left the template in place

    store = SessionStore(tmp_path / "s.db")
    from interviewer.content import load_bank

    from .conftest import FIXTURE_CONTENT

    ports = Ports(bank=load_bank(FIXTURE_CONTENT), store=store, model=port)
    it = Interview.start(
        ports, [Round.DEEP_DIVE], question_ids=[q.id for q in questions], extra_questions=questions
    )
    opening = it.advance_all()
    assert "**Resume deep dive.**" in opening and "Streamline AI" in opening and "480 ms" in opening
    why1 = "".join(it.reply("We fused attention into one kernel and p99 went from 480 ms to 190 ms."))
    assert "A10G" in why1 or "480 ms" in why1
    it.submit("Nsight Systems showed launch overhead; baseline was the unfused decoder on the same A10G.")
    why2 = it.advance_all()
    assert "2,600 requests/s" in why2
    it.submit("Tail latency would have blown the 250 ms budget at peak.")
    second = it.advance_all()
    assert "Parcel Robotics" in second and "3.1x" in second
    asked = [e.payload for e in store.events(it.session_id) if e.kind == "asked"]
    assert [a["source"] for a in asked] == ["authored", "model", "model", "authored"]
    # The generated questions live with the session, so it resumes without the resume.
    again = Interview.resume(Ports(bank=load_bank(FIXTURE_CONTENT), store=store), it.session_id)
    assert again.question is not None and again.question.id == questions[1].id


def test_the_offline_scorer_rates_a_grounded_answer_above_a_vague_one():
    from interviewer.scoring.scorer import RubricScorer

    q = deep_dive_questions(parse_resume(RESUME_MD, owner="dana"), 1)[0]
    scorer = RubricScorer(embedder=HashingEmbedder())
    grounded = scorer.score(
        q,
        [
            "p99 went from 480 ms to 190 ms on the A10G; I profiled with Nsight Systems against the unfused "
            "decoder at batch 1 as the baseline.",
            "The bottleneck was kernel launch overhead: forty small kernels per decoding step.",
            "Without the fusion we would have missed the 250 ms budget at peak; the cost is a custom kernel "
            "we maintain.",
        ],
    )
    vague = scorer.score(q, ["It was a great project and the team made it faster.", "Not sure.", "Slower."])
    assert grounded.overall > vague.overall + 0.5
    assert {c.criterion for c in grounded.criteria} == {
        "scale",
        "bottleneck",
        "measurement discipline",
        "causality",
        "trade-off",
        "ownership",
    }


def test_deep_dive_follow_ups_can_draw_on_the_candidates_own_resume(tmp_path):
    from interviewer.resume import CombinedRetriever

    class Bank:
        def retrieve(self, query, *, round=None, topic=None, k=4, kind=None):
            return [f"bank:{round}:{k}"]

    index = ResumeIndex("dana", Settings(data_dir=tmp_path), embedder=HashingEmbedder())
    index.add(parse_resume(RESUME_MD, owner="dana"))
    combined = CombinedRetriever(Bank(), index)
    deep = combined.retrieve("INT8 TensorRT Jetson", round="resume-deep-dive", k=4)
    assert "Parcel Robotics" in deep[0].text and deep[-1] == "bank:resume-deep-dive:2"
    assert combined.retrieve("INT8 TensorRT Jetson", round="phone-screen", k=4) == ["bank:phone-screen:4"]
