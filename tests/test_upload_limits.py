"""Hostile resume files get clear messages (compression bombs, encryption pypdf cannot open), and an uploaded
resume does not stay on the server after it was read."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from gradio_client import handle_file

from interviewer.errors import InputError
from interviewer.resume import MAX_RESUME_PAGES, extract_bytes

from .resume_samples import RESUME_TXT_LINES
from .test_privacy import _Live


def _pdf(objs: list[bytes], trailer_extra: bytes = b"") -> bytes:
    out = bytearray(b"%PDF-1.6\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offsets:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R " % (len(objs) + 1) + trailer_extra
    out += b">>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _page_with(content: bytes, extra: bytes = b"") -> list[bytes]:
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d " % len(content) + extra + b">>\nstream\n" + content + b"\nendstream",
    ]


def flate_bomb(mb: int = 300) -> bytes:
    """300 KB on disk, 300 MB once its one content stream is inflated."""
    return _pdf(_page_with(zlib.compress(b"0" * (mb * 1024 * 1024), 9), b"/Filter /FlateDecode "))


def certificate_encrypted() -> bytes:
    """Encrypted for a certificate holder (/Adobe.PubSec): pypdf has no handler for it."""
    enc = b"<< /Filter /Adobe.PubSec /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 /Length 128 /Recipients [<3082>] >>"
    ids = b"/ID [<" + b"ab" * 16 + b"> <" + b"ab" * 16 + b">] "
    return _pdf([*_page_with(b"01234567"), enc], b"/Encrypt 5 0 R " + ids)


def page_flood(pages: int, declared: int | None = None) -> bytes:
    """``pages`` empty pages, each its own object, in one flat page tree (whose /Count may lie)."""
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
    count = pages if declared is None else declared
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Count %d /Kids [%s] >>" % (count, kids),
            *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages,
        ]
    )


@pytest.mark.parametrize("declared", [None, 1], ids=["honest-count", "lying-count"])
def test_a_page_flood_pdf_is_refused_from_its_page_tree_before_any_text_is_read(
    declared: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pypdf import PageObject

    data = page_flood(60_000, declared)  # ~6 MB of empty pages: a minute of CPU to extract page by page
    extracted: list[int] = []
    real = PageObject.extract_text
    monkeypatch.setattr(
        PageObject, "extract_text", lambda self, *a, **k: extracted.append(1) or real(self, *a, **k)
    )
    with pytest.raises(
        InputError, match=rf"has (60,000|more than {MAX_RESUME_PAGES}) pages; a resume has at most"
    ):
        extract_bytes(data)
    assert extracted == [], f"{len(extracted)} pages were extracted before the refusal"


def test_a_resume_at_the_page_cap_is_still_read() -> None:
    text = b"BT /F1 12 Tf 72 720 Td (Jane Doe, ML engineer) Tj ET"
    objs = _page_with(text)
    objs[2] = objs[2].replace(b"/Contents 4 0 R", b"/Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >>")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = b" ".join([b"3 0 R"] * MAX_RESUME_PAGES)  # one page object shown MAX_RESUME_PAGES times
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, MAX_RESUME_PAGES)
    assert extract_bytes(_pdf(objs)).count("Jane Doe") == MAX_RESUME_PAGES


def test_a_flate_bomb_is_named_not_inflated() -> None:
    with pytest.raises(InputError, match="unpacks to more than 32 MB"):
        extract_bytes(flate_bomb())


def test_an_encryption_pypdf_cannot_open_is_named() -> None:
    with pytest.raises(InputError, match="encrypted"):
        extract_bytes(certificate_encrypted())


def test_uploads_get_clear_messages_and_are_deleted_after_parsing(tmp_path: Path) -> None:
    app = _Live(tmp_path / "data")
    try:
        bomb = tmp_path / "resume.pdf"
        bomb.write_bytes(flate_bomb())
        with pytest.raises(Exception, match="unpacks to more than"):
            app.client.predict(
                "resume-deep-dive", 1, False, None, "", handle_file(str(bomb)), api_name="/start"
            )
        flood = tmp_path / "flood.pdf"
        flood.write_bytes(page_flood(60_000))
        with pytest.raises(Exception, match="60,000 pages; a resume has at most"):
            app.client.predict(
                "resume-deep-dive", 1, False, None, "", handle_file(str(flood)), api_name="/start"
            )
        good = tmp_path / "priya.txt"
        good.write_text("\n".join(RESUME_TXT_LINES))
        # A bank round with a resume: the resume is not needed, and its upload goes all the same.
        app.client.predict("phone-screen", 1, False, None, "", handle_file(str(good)), api_name="/start")
        cache = Path(app.demo.GRADIO_CACHE)
        left = [p.name for p in cache.rglob("*") if p.name in {"resume.pdf", "flood.pdf", "priya.txt"}]
        assert left == [], f"uploads left on the server: {left}"
    finally:
        app.close()


def test_an_upload_over_the_cap_is_refused_before_parsing(tmp_path: Path) -> None:
    from ui.app import MAX_UPLOAD

    app = _Live(tmp_path / "data", max_file_size=MAX_UPLOAD)  # as ui.app.launch serves it
    try:
        big = tmp_path / "resume.txt"
        big.write_bytes(b"word " * (11 * 1024 * 1024 // 5))  # 11 MB
        with pytest.raises(Exception, match=r"(?i)file size|too large|exceeds"):
            app.client.predict(
                "resume-deep-dive", 1, False, None, "", handle_file(str(big)), api_name="/start"
            )
        assert not [p for p in Path(app.demo.GRADIO_CACHE).rglob("resume.txt")]
    finally:
        app.close()
