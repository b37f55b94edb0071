"""AES-encrypted resume PDFs (issue 15, item 11): an empty user password reads like any PDF, a real password
gets a clear message in the app (never Gradio's generic error), and so does an install without an AES handler."""

from __future__ import annotations

import io
from pathlib import Path

import pypdf._encryption
import pytest
from gradio_client import handle_file
from pypdf import PdfWriter
from pypdf._crypt_providers import _fallback

from interviewer.errors import InputError
from interviewer.resume import extract_bytes

from .resume_samples import RESUME_TXT_LINES, write_pdf
from .test_privacy import _Live


def aes_pdf(tmp_path: Path, user_password: str) -> bytes:
    """A text resume PDF encrypted by pypdf with AES-256 (revision 6), as Acrobat's "restrict" does."""
    plain = write_pdf(tmp_path / "plain.pdf", RESUME_TXT_LINES)
    writer = PdfWriter(clone_from=str(plain))
    writer.encrypt(user_password=user_password, owner_password="owner-only", algorithm="AES-256")
    buf = io.BytesIO()
    writer.write(buf)
    data = buf.getvalue()
    assert b"/AESV3" in data and b"Priya" not in data  # really encrypted, with AES-256
    return data


def test_aes_pdf_with_an_empty_user_password_reads(tmp_path: Path) -> None:
    text = extract_bytes(aes_pdf(tmp_path, ""))
    assert RESUME_TXT_LINES[0].split()[0] in text  # the name on the first line
    assert "Tensorloom" in text


def test_aes_pdf_with_a_user_password_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="password-protected: export an unprotected copy, or paste the text"):
        extract_bytes(aes_pdf(tmp_path, "s3cret"))


def test_without_an_aes_handler_the_message_still_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without `cryptography` (pypdf's fallback has no AES): a clear message, not a crash."""
    data = aes_pdf(tmp_path, "")
    for fn in ("aes_cbc_decrypt", "aes_ecb_decrypt"):
        monkeypatch.setattr(pypdf._encryption, fn, getattr(_fallback, fn))
    with pytest.raises(InputError, match=r"this PDF is encrypted .* paste the text"):
        extract_bytes(data)


def test_the_app_reads_or_names_an_aes_upload_and_deletes_it(tmp_path: Path) -> None:
    app = _Live(tmp_path / "data")
    try:
        locked = tmp_path / "locked.pdf"
        locked.write_bytes(aes_pdf(tmp_path, "s3cret"))
        with pytest.raises(Exception, match="this PDF is password-protected") as err:
            app.client.predict(
                "resume-deep-dive", 1, False, None, "", handle_file(str(locked)), api_name="/start"
            )
        assert "export an unprotected copy" in str(err.value)
        restricted = tmp_path / "restricted.pdf"
        restricted.write_bytes(aes_pdf(tmp_path, ""))
        chat, sid, *_ = app.client.predict(
            "resume-deep-dive", 1, False, None, "", handle_file(str(restricted)), api_name="/start"
        )
        assert sid and "Tensorloom" in str(chat), f"the first question does not come from the resume: {chat}"
        cache = Path(app.demo.GRADIO_CACHE)
        left = [p.name for p in cache.rglob("*.pdf") if p.name in {"locked.pdf", "restricted.pdf"}]
        assert left == [], f"uploads left on the server: {left}"
    finally:
        app.close()
