"""Read a candidate's resume locally, split it into sections and projects, and index it per candidate.

Public API:

- :func:`load_resume` (a file path) and :func:`parse_resume` (pasted text) return a :class:`Resume` whose
  :attr:`Resume.projects` carry the candidate's own claims and numbers, the raw material of the deep dive.
- :func:`extract_text` reads PDF (pypdf), Markdown or plain text, decided by the file's bytes, not its name.
- :class:`ResumeIndex` keeps one Chroma collection per candidate (named from a hash of the owner id, never
  shared), with :meth:`ResumeIndex.delete` to forget it; it also satisfies the engine's ``Retriever`` protocol.
- :func:`privacy_note` says whether resume text leaves the machine under the current settings.

Every bad input raises :class:`~interviewer.errors.InputError` with a message that says what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import ipaddress
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from interviewer.config import Settings
from interviewer.embeddings import ChromaEmbeddingFunction, Embedder
from interviewer.errors import IndexError_, InputError
from interviewer.retrieval import ChromaBacked, Passage
from interviewer.scoring.guard import defang_document
from interviewer.text import clean, is_blank

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

MAX_RESUME_BYTES = 10 * 1024 * 1024  # a long text resume is ~100 KB; anything near 10 MB is not one
MAX_RESUME_CHARS = 200_000
MIN_RESUME_WORDS = 15

SectionKind = Literal["summary", "experience", "projects", "research", "education", "skills", "other"]

# -------------------------------------------------------------------------------------------- extraction

# Signatures of common files that are not documents we can read; the name is for the message.
_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"RIFF", "a RIFF media file (WebP, WAV or AVI)"),
    (b"PK\x03\x04", "a ZIP archive (a Word .docx or OpenDocument file is one)"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office file (.doc)"),
    (b"\x7fELF", "a Linux executable"),
    (b"MZ", "a Windows executable"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
    (b"{\\rtf", "an RTF document"),
    (b"ID3", "an MP3 file"),
    (b"OggS", "an Ogg media file"),
    (b"SQLite format 3", "an SQLite database"),
)
_ACCEPTED = "a PDF with text, a Markdown file or a plain-text file"


def _sniff(head: bytes) -> Literal["pdf", "text"]:
    """The document type from its first bytes; InputError for anything that is not a document."""
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"%PDF-":
        return "pdf"
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            raise InputError(
                f"this file is {what}, not a resume document: upload {_ACCEPTED}, or paste the text"
            )
    if b"\x00" in head:
        raise InputError(f"this file is binary, not a resume document: upload {_ACCEPTED}, or paste the text")
    return "text"


def _decode_text(data: bytes) -> str:
    for enc in ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",):
        with contextlib.suppress(UnicodeDecodeError):
            return data.decode(enc)
    # Windows-1252 resumes exist; accept them only if the bytes look like text, not a binary blob.
    text = data.decode("cp1252", errors="replace")
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    if printable < 0.95 * max(1, len(text)):
        raise InputError(f"this file is not text we can read: upload {_ACCEPTED}, or paste the text")
    return text


MAX_PDF_UNPACKED_BYTES = 32 * 1024 * 1024  # a text resume unpacks to well under 1 MB; a Flate bomb to GBs
# A resume is one to a few pages, an academic CV a few dozen; tens of thousands of empty pages cost a
# minute of CPU to walk and extract, so the page tree is counted (and its walk capped) before any text is read.
MAX_RESUME_PAGES = 50


def _too_many_pages(count: str) -> InputError:
    return InputError(
        f"this PDF has {count} pages; a resume has at most {MAX_RESUME_PAGES}. Upload the resume itself "
        "(not a portfolio or a thesis), or paste its text"
    )


def _page_count(reader: Any) -> int:
    """The number of pages, from the page tree, refusing a document with too many before any text is read.

    The declared ``/Count`` is checked first (free), then the tree is walked with a cap on its entries, since
    ``/Count`` may lie: a balanced tree of N pages has fewer than 2N entries.
    """
    from pypdf import apply_configuration
    from pypdf.errors import LimitReachedError
    from pypdf.generic import DictionaryObject

    tree = reader.root_object.get("/Pages")
    tree = tree.get_object() if tree is not None else None
    declared = tree.get("/Count") if isinstance(tree, DictionaryObject) else None
    if isinstance(declared, int) and declared > MAX_RESUME_PAGES:
        raise _too_many_pages(f"{declared:,}")
    try:
        with apply_configuration(page_tree_maximum_entries=2 * MAX_RESUME_PAGES + 16):
            count = len(reader.pages)
    except LimitReachedError as e:
        raise _too_many_pages("more than " + str(MAX_RESUME_PAGES)) from e
    if count > MAX_RESUME_PAGES:
        raise _too_many_pages(f"{count:,}")
    return count


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PdfReadError

    limit = MAX_PDF_UNPACKED_BYTES
    try:
        # Every stream is capped while it is unpacked, so a compression bomb stops at the cap, not at the RAM.
        with apply_configuration(
            zlib_maximum_output_length=limit,
            lzw_maximum_output_length=limit,
            run_length_maximum_output_length=limit,
            array_based_stream_maximum_output_length=limit,
            maximum_declared_stream_length=limit,
        ):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise InputError(
                    "this PDF is password-protected: export an unprotected copy, or paste the text instead"
                )
            _page_count(reader)
            pages = []
            for page in reader.pages:
                contents = page.get_contents()  # unpacked here first: extract_text hides a reached limit
                if contents is not None:
                    contents.get_data()
                pages.append(page.extract_text() or "")
                if sum(map(len, pages)) > MAX_RESUME_CHARS:
                    break  # parse_resume reports the length
    except InputError:
        raise
    except (DependencyError, FileNotDecryptedError, NotImplementedError) as e:
        raise InputError(
            "this PDF is encrypted (e.g. AES, for print or copy restrictions) and cannot be read here: "
            "export or print it to a new PDF without protection, upload the text version, or paste the text"
        ) from e
    except LimitReachedError as e:
        raise InputError(
            f"this PDF unpacks to more than {limit // (1024 * 1024)} MB (a compressed stream that expands "
            "enormously, as in a compression bomb): a resume never does. Re-export it from your editor, or "
            "paste the text"
        ) from e
    except MemoryError as e:
        raise InputError("this PDF needs too much memory to read: re-export it, or paste the text") from e
    except (PdfReadError, ValueError, KeyError, TypeError, OSError, RecursionError) as e:
        raise InputError(
            f"this PDF is damaged or unreadable ({type(e).__name__}): re-export it from your editor, "
            "or paste the text instead"
        ) from e
    text = "\n".join(pages)
    if not text.strip():
        raise InputError(
            f"this PDF has {len(pages)} page(s) but no extractable text: it looks scanned or image-only. "
            "Export it from your editor as a text PDF (not Print to image), upload the Markdown or text "
            "version, or paste the text"
        )
    return text


def extract_bytes(data: bytes, *, name: str = "resume") -> str:
    """Text of a resume given as bytes (PDF, Markdown or plain text, decided by the bytes themselves)."""
    if len(data) > MAX_RESUME_BYTES:
        raise InputError(
            f"{name} is {len(data) / 1e6:.1f} MB; the limit is {MAX_RESUME_BYTES // (1024 * 1024)} MB. "
            "A resume is rarely over 1 MB: export it without embedded images, or paste the text"
        )
    if not data.strip():
        raise InputError(f"{name} is empty: upload your resume ({_ACCEPTED}), or paste its text")
    text = _pdf_text(data) if _sniff(data[:64]) == "pdf" else _decode_text(data)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InputError(f"{name} has no text: upload your resume ({_ACCEPTED}), or paste its text")
    return text


def extract_text(path: Path | str, *, max_bytes: int = MAX_RESUME_BYTES) -> str:
    """Text of a resume file; the size is checked before the file is read."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise InputError(f"cannot open {p.name} ({e.strerror}): pick the file again") from e
    if p.is_dir():
        raise InputError(f"{p.name} is a folder: pick your resume file")
    if size > max_bytes:
        raise InputError(
            f"{p.name} is {size / 1e6:.1f} MB; the limit is {max_bytes / (1024 * 1024):.0f} MB. "
            "A resume is rarely over 1 MB: export it without embedded images, or paste the text"
        )
    if size == 0:
        raise InputError(f"{p.name} is empty (0 bytes): upload your resume ({_ACCEPTED}), or paste its text")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {p.name} ({e.strerror}): pick the file again") from e
    return extract_bytes(data, name=p.name)


# -------------------------------------------------------------------------------------------- structure

_SECTION_NAMES: dict[str, SectionKind] = {
    "summary": "summary",
    "profile": "summary",
    "about": "summary",
    "about me": "summary",
    "objective": "summary",
    "experience": "experience",
    "work experience": "experience",
    "professional experience": "experience",
    "employment": "experience",
    "work history": "experience",
    "industry experience": "experience",
    "relevant experience": "experience",
    "projects": "projects",
    "selected projects": "projects",
    "personal projects": "projects",
    "key projects": "projects",
    "side projects": "projects",
    "open source": "projects",
    "open-source": "projects",
    "research": "research",
    "research experience": "research",
    "research projects": "research",
    "publications": "research",
    "selected publications": "research",
    "education": "education",
    "skills": "skills",
    "technical skills": "skills",
    "technologies": "skills",
    "awards": "other",
    "honors": "other",
    "certifications": "other",
    "interests": "other",
    "languages": "other",
    "contact": "other",
}
_PROJECT_KINDS: frozenset[str] = frozenset({"experience", "projects", "research"})

_BULLET = re.compile(r"^\s*(?:[-*+•◦▪▸‣●○■□►–—·\x7f\uf0b7\uf0a7]|\d{1,2}[.)])\s+")
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"((?:{_MONTH}\s+)?(?:19|20)\d{{2}}|\d{{1,2}}/(?:19|20)\d{{2}})"
    rf"(?:\s*(?:-|–|—|to)\s*((?:{_MONTH}\s+)?(?:19|20)\d{{2}}|\d{{1,2}}/(?:19|20)\d{{2}}|present|now|current))?",
    re.I,
)
# A number with a unit or scale: the resume's own claims ("3.2x", "40%", "12 ms", "8 A100s", "2M users").
_NUMBER = re.compile(
    r"(?<![\w.])(?:~|≈)?\d[\d,]*(?:\.\d+)?\s?(?:x|×|%|ms|µs|us|ns|s\b|sec|seconds|minutes|hours|"
    r"gb/s|tb/s|gib|gb|tb|mb|kb|pb|k\b|m\b|b\b|million|billion|thousand|qps|rps|req/s|requests/s|requests|tokens/s|"
    r"tokens|images/s|fps|gpus?|nodes|servers|machines|users|customers|models|engineers|params|parameters|"
    r"tflops|gflops|w\b|watts|epochs)?",
    re.I,
)
_HAS_UNIT = re.compile(r"[^\d,.\s~≈]")

_HARDWARE = re.compile(
    r"\b(gpu|gpus|cuda|kernel|kernels|tensorrt|triton|cutlass|cudnn|nccl|nvlink|hbm|sram|fpga|asic|simd|avx|"
    r"neon|cache|warp|tensor cores?|a100|h100|h200|b200|v100|t4|l4|l40s?|a10g?|rtx\s?\d+|jetson|tpu|"
    r"firmware|embedded|memory bandwidth|roofline|nsight|profil\w*|quantiz\w*|int8|fp8|fp16|bf16|c\+\+|"
    r"vectoriz\w*|pcie|dma|rdma|infiniband|numa)\b",
    re.I,
)
_RESEARCH = re.compile(
    r"\b(research|paper|papers|publication|published|neurips|icml|iclr|cvpr|eccv|iccv|acl|emnlp|naacl|aaai|"
    r"kdd|mlsys|sosp|osdi|isca|arxiv|thesis|phd|ph\.d|master'?s|lab|advisor|ablation|novel|state[- ]of[- ]the[- ]art|"
    r"sota|hypothesis|dataset|benchmark suite|first author|co-?author|workshop)\b",
    re.I,
)
_PERFORMANCE = re.compile(
    r"\b(latency|throughput|speed-?up|faster|slower|reduced|cut|improved|optimi[sz]\w*|p50|p95|p99|tail|"
    r"bottleneck|profil\w*|qps|tokens/s|memory|bandwidth|cost|scal\w*|utili[sz]ation|batch\w*)\b",
    re.I,
)
_LEADERSHIP = re.compile(
    r"\b(led|lead|owned|architect\w*|mentor\w*|managed|drove|designed|founded|tech lead)\b", re.I
)


@dataclass(frozen=True)
class Project:
    """One entry of an experience, projects or research section: the raw material of a deep-dive question."""

    name: str  # the entry's heading (role, project or paper title), dates removed
    section: str  # the section heading it came from
    kind: SectionKind
    lines: tuple[str, ...]  # bullet and body lines, bullets stripped
    dates: str | None = None
    context: str | None = None  # e.g. the employer line under a role

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def claims(self) -> tuple[str, ...]:
        """The lines that state a number with a unit: the claims the why-chain probes."""
        return tuple(line for line in self.lines if numbers_in(line))

    @property
    def numbers(self) -> tuple[str, ...]:
        """Every unit-bearing number in the entry, in order, without duplicates."""
        return tuple(dict.fromkeys(n for line in self.lines for n in numbers_in(line)))

    def score(self, kind: str) -> float:
        """How well this entry suits a deep-dive ``kind`` (hardware, research, performance, senior-intro)."""
        body = f"{self.name} {self.context or ''} {self.text}"
        n = len(self.numbers)
        perf = len(_PERFORMANCE.findall(body))
        if kind == "hardware":
            return 3 * len(_HARDWARE.findall(body)) + perf + n
        if kind == "research":
            return 3 * len(_RESEARCH.findall(body)) + (4 if self.kind == "research" else 0) + n
        if kind == "senior-intro":
            return 3 * len(_LEADERSHIP.findall(body)) + perf + n
        return 2 * perf + 2 * n + len(_HARDWARE.findall(body))


@dataclass(frozen=True)
class Section:
    heading: str
    kind: SectionKind
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Resume:
    """A parsed resume; ``digest`` identifies its text (generated question ids derive from it)."""

    owner: str
    source: str
    text: str
    sections: tuple[Section, ...]
    projects: tuple[Project, ...]
    name: str | None = None
    digest: str = field(default="")
    removed: tuple[str, ...] = ()  # lines addressed to the model or the grader, left out of every prompt

    def project(self, name: str) -> Project:
        for p in self.projects:
            if p.name == name:
                return p
        raise InputError(f"no project called '{name}' in the resume")


def numbers_in(text: str) -> list[str]:
    """Unit-bearing numbers in ``text`` ("3.2x", "40%", "8 A100s" -> "8 A100s" is not, "8 GPUs" is)."""
    out = []
    for m in _NUMBER.finditer(text):
        token = m.group(0).strip()
        if not _HAS_UNIT.search(token.lstrip("~≈")):
            continue  # a bare number ("2021", "3") is a year or a count we cannot interpret
        out.append(token)
    return out


def _section_kind(heading: str) -> SectionKind | None:
    key = re.sub(r"[^a-z &/-]", "", heading.lower()).strip(" :-&/")
    key = key.replace("&", "and")
    if key in _SECTION_NAMES:
        return _SECTION_NAMES[key]
    for name, kind in _SECTION_NAMES.items():
        if len(name) > 5 and key.startswith(name) and len(key.split()) <= 4:
            return kind
    return None


def _is_caps_heading(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return (
        bool(letters) and len(line.split()) <= 5 and all(c.isupper() for c in letters) and len(letters) >= 4
    )


def _strip_md(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"(?<!\w)[*_](.+?)[*_](?!\w)", r"\1", text)
    text = re.sub(r"\[(.+?)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "").strip()


def _split_dates(line: str) -> tuple[str, str | None]:
    m = None
    for m in _DATE.finditer(line):  # noqa: B007 - the last date range on the line is the entry's
        pass
    if m is None:
        return line, None
    rest = (line[: m.start()] + line[m.end() :]).strip(" |,·–—-()\t")
    return re.sub(r"\s{2,}", " ", rest), m.group(0).strip()


@dataclass
class _Entry:
    name: str
    dates: str | None
    lines: list[str] = field(default_factory=list)
    context: str | None = None


def parse_resume(text: str, *, owner: str = "local", source: str = "pasted text") -> Resume:
    """Split resume text into sections and project entries (headings, bullets and date lines as cues).

    Raises:
        InputError: when the text is empty, too long, or too short to hold a project.
    """
    if text is None or is_blank(text):
        raise InputError("the resume is empty: upload your resume or paste its text")
    # Text at the boundary, then defanged like an answer: a resume line cannot speak to the model or close
    # the prompt's sections, and what it tried is kept as a note.
    screened = defang_document(clean(text.replace("\x7f", "•")))  # pypdf: a bullet glyph it cannot map
    text = screened.text
    if len(text) > MAX_RESUME_CHARS:
        raise InputError(
            f"the resume text is {len(text):,} characters; the limit is {MAX_RESUME_CHARS:,}. "
            "Paste the resume itself, not a portfolio"
        )
    if len(text.split()) < MIN_RESUME_WORDS:
        raise InputError(
            f"the resume has only {len(text.split())} words: paste the whole resume, with its projects"
        )
    raw_lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    sections: list[tuple[str, SectionKind, list[tuple[str, str]]]] = []  # heading, kind, (type, line)
    name: str | None = None
    current: tuple[str, SectionKind, list[tuple[str, str]]] = ("Header", "summary", [])
    sections.append(current)
    for raw in raw_lines:
        line = raw.strip()
        if not line or set(line) <= set("-=_*~ "):
            current[2].append(("blank", ""))
            continue
        md = _MD_HEADING.match(raw)
        heading = _strip_md(md.group(2)) if md else None
        candidate = heading or _strip_md(line)
        kind = _section_kind(candidate) if (md or len(candidate.split()) <= 4) else None
        if kind is not None and (
            md or _is_caps_heading(line) or candidate.endswith(":") or len(candidate) < 30
        ):
            current = (candidate.rstrip(":"), kind, [])
            sections.append(current)
            continue
        if md and md.group(1) == "#" and name is None and len(sections) == 1:
            name = heading
            continue
        if md:
            current[2].append(("entry", heading or ""))
        elif _BULLET.match(line):
            current[2].append(("bullet", _strip_md(_BULLET.sub("", line))))
        else:
            current[2].append(("text", _strip_md(line)))
    if name is None:
        first = next((ln.strip() for ln in raw_lines if ln.strip()), "")
        if len(first.split()) <= 5 and not _BULLET.match(first) and not numbers_in(first):
            name = _strip_md(first.lstrip("# "))

    out_sections: list[Section] = []
    projects: list[Project] = []
    for heading, kind, items in sections:
        lines = tuple(t for typ, t in items if typ != "blank" and t)
        if lines:
            out_sections.append(Section(heading, kind, lines))
        if kind in _PROJECT_KINDS:
            projects.extend(_entries(heading, kind, items))
    if not projects:
        projects = _fallback_projects(out_sections)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Resume(
        owner=owner,
        source=source,
        text=text,
        sections=tuple(out_sections),
        projects=tuple(projects),
        name=name,
        digest=digest,
        removed=tuple(screened.removed),
    )


def _looks_like_entry_title(line: str, next_type: str | None) -> bool:
    words = line.split()
    if not words or len(words) > 16 or line.endswith("."):
        return False
    _, dates = _split_dates(line)
    return dates is not None or next_type == "bullet" or "|" in line or " — " in line or " at " in line


def _entries(heading: str, kind: SectionKind, items: list[tuple[str, str]]) -> list[Project]:
    """Entries of a section: a title line (a sub-heading, or a short line with dates or before bullets)
    followed by its bullets and body lines."""
    entries: list[_Entry] = []
    cur: _Entry | None = None
    typed = [(t, s) for t, s in items if t != "blank"]
    in_bullet = False
    for i, (typ, line) in enumerate(typed):
        nxt = typed[i + 1][0] if i + 1 < len(typed) else None
        if typ == "text" and in_bullet and cur is not None and cur.lines and line[:1].islower():
            cur.lines[-1] = f"{cur.lines[-1]} {line}"  # a bullet wrapped onto the next lines (PDF layout)
            continue
        in_bullet = typ == "bullet"
        if typ == "entry" or (typ == "text" and _looks_like_entry_title(line, nxt)):
            title, dates = _split_dates(line)
            if cur is not None and not cur.lines and typ == "text":
                # A second title line before any bullet: the employer or the dates line under a role.
                if dates and not cur.dates:
                    cur.dates = dates
                if title:
                    cur.context = f"{cur.context}; {title}" if cur.context else title
                continue
            cur = _Entry(title or line, dates)
            entries.append(cur)
            continue
        if cur is None:
            cur = _Entry(heading, None)
            entries.append(cur)
        cur.lines.append(line)
    return [
        Project(
            name=e.name.strip(" :|-–—") or heading,
            section=heading,
            kind=kind,
            lines=tuple(e.lines),
            dates=e.dates,
            context=e.context,
        )
        for e in entries
        if e.lines
    ]


def _fallback_projects(sections: Sequence[Section]) -> list[Project]:
    """No recognisable project sections: each paragraph that states numbers becomes a project."""
    out: list[Project] = []
    for s in sections:
        if s.kind in ("education", "skills"):
            continue
        for line in s.lines:
            if numbers_in(line) and len(line.split()) >= 5:
                title = " ".join(line.split()[:6]).rstrip(",.;:")
                out.append(Project(name=title, section=s.heading, kind="projects", lines=(line,)))
    return out


def load_resume(path: Path | str, *, owner: str = "local") -> Resume:
    """Extract and parse a resume file (PDF, Markdown or plain text)."""
    p = Path(path)
    resume = parse_resume(extract_text(p), owner=owner, source=p.name)
    if not resume.projects:
        raise InputError(
            f"found no projects in {p.name}: give each project or role its own line with bullets under it "
            "that state what you did and the numbers"
        )
    return resume


# -------------------------------------------------------------------------------------------- privacy


def _is_local_url(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    if host in {"localhost", ""} or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def text_leaves_machine(settings: Settings) -> bool:
    """True when resume-derived text is sent to another host (a remote model or Chroma server)."""
    return any(url and not _is_local_url(url) for url in (settings.base_url, settings.chroma_url))


def privacy_note(settings: Settings) -> str:
    """One or two sentences for the UI: where the resume's text goes under these settings."""
    notes: list[str] = []
    if settings.base_url is None:
        notes.append("Your resume is read and indexed on this machine, and the built-in model runs here too")
    elif _is_local_url(settings.base_url):
        notes.append(
            f"Your resume is read and indexed on this machine; the model server at {settings.base_url} "
            "is on this machine as well"
        )
    else:
        host = urlparse(settings.base_url).hostname
        notes.append(
            f"Your resume is read on this machine, but the questions built from your projects, your answers "
            f"and excerpts of the resume are sent to the model server at {host}. Remove anything you would "
            "not share with that server before uploading"
        )
    if settings.chroma_url and not _is_local_url(settings.chroma_url):
        notes.append(
            f"The resume's text is stored on the Chroma server at {urlparse(settings.chroma_url).hostname}, "
            "in a collection of its own; delete it from there when you are done"
        )
    if not text_leaves_machine(settings):
        notes.append("Nothing leaves this machine")
    return ". ".join(notes) + "."


# -------------------------------------------------------------------------------------------- the index

RESUME_COLLECTION_PREFIX = "resume-"
MAX_CHUNK_WORDS = 160


def collection_name(owner: str) -> str:
    """The candidate's own collection: a hash of the owner id, so names neither collide nor reveal it."""
    if not owner or not owner.strip():
        raise InputError("a resume index needs a candidate id (owner)")
    return RESUME_COLLECTION_PREFIX + hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]


def resume_chunks(resume: Resume) -> list[tuple[str, str, dict[str, Any]]]:
    """(id, text, metadata) per project and per other section; long ones split on line boundaries."""
    out: list[tuple[str, str, dict[str, Any]]] = []

    def add(title: str, section: str, part: str, lines: Sequence[str]) -> None:
        buf: list[str] = []
        n = 0
        for line in [*lines, None]:
            if line is None or (buf and n + len(line.split()) > MAX_CHUNK_WORDS):
                if buf:
                    meta = {"owner": resume.owner, "section": section, "part": part, "source": resume.source}
                    out.append((f"{resume.digest[:12]}#{len(out)}", f"{title}\n" + "\n".join(buf), meta))
                buf, n = [], 0
            if line is not None:
                buf.append(line)
                n += len(line.split())

    for p in resume.projects:
        head = p.name + (f" ({p.context})" if p.context else "") + (f", {p.dates}" if p.dates else "")
        add(head, p.section, "project", p.lines)
    for s in resume.sections:
        if s.kind not in _PROJECT_KINDS:
            add(s.heading, s.heading, s.kind, s.lines)
    return out


class ResumeIndex(ChromaBacked):
    """One candidate's resume in a Chroma collection of its own. The constructor does no I/O.

    ``retrieve`` matches the engine's ``Retriever`` protocol, so the resume can ground deep-dive follow-ups.
    """

    def __init__(
        self,
        owner: str,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        client: ClientAPI | None = None,
    ) -> None:
        self.owner = owner
        self.name = collection_name(owner)
        self._settings = settings
        self._embedder = embedder
        self._client = client
        self._lock = threading.RLock()

    def _collection(self, create: bool) -> Collection | None:
        from chromadb.errors import NotFoundError

        ef = ChromaEmbeddingFunction(self.embedder)
        client = self._client_()
        try:
            if create:
                return client.get_or_create_collection(
                    self.name,
                    embedding_function=ef,  # type: ignore[arg-type]
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"owner_hash": self.name, "embedder": self.embedder.id},
                )
            return client.get_collection(self.name, embedding_function=ef)  # type: ignore[arg-type]
        except NotFoundError:
            return None
        except Exception as e:
            raise IndexError_(
                f"the resume index {self.name} cannot be opened ({e}); delete it and upload again"
            ) from e

    def add(self, resume: Resume) -> int:
        """Replace this candidate's indexed resume with ``resume``; returns the number of chunks."""
        if resume.owner != self.owner:
            raise InputError(f"this resume belongs to '{resume.owner}', not to '{self.owner}'")
        chunks = resume_chunks(resume)
        vectors = self.embedder.embed(
            [c[1] for c in chunks]
        )  # embed first: a model failure keeps the old index
        with self._lock:
            self.delete()
            col = self._collection(create=True)
            assert col is not None
            try:
                if chunks:
                    col.add(
                        ids=[c[0] for c in chunks],
                        documents=[c[1] for c in chunks],
                        embeddings=vectors,
                        metadatas=[c[2] for c in chunks],
                    )
            except Exception as e:
                raise IndexError_(
                    f"could not index the resume in {self.name} ({e}); try the upload again"
                ) from e
        return len(chunks)

    def count(self) -> int:
        col = self._collection(create=False)
        return 0 if col is None else col.count()

    def delete(self) -> bool:
        """Forget this candidate's resume; True when there was something to delete."""
        from chromadb.errors import NotFoundError

        with self._lock:
            try:
                self._client_().delete_collection(self.name)
            except (NotFoundError, ValueError):
                return False
            except Exception as e:
                raise IndexError_(f"could not delete the resume index {self.name} ({e})") from e
            return True

    def retrieve(
        self, query: str, *, round: str | None = None, topic: str | None = None, k: int = 4
    ) -> list[Passage]:
        """The ``k`` resume passages closest to ``query`` (only this candidate's; ``round``/``topic`` ignored)."""
        if not query.strip() or k <= 0:
            return []
        col = self._collection(create=False)
        if col is None:
            return []
        n = min(k, col.count())
        if n == 0:
            return []
        vector = self.embedder.embed([query])[0]
        try:
            res = col.query(
                query_embeddings=[vector],
                n_results=n,
                where={"owner": self.owner},  # belt and braces: the collection is already the owner's
                include=["documents", "metadatas", "distances"],
            )
        except Exception as e:
            raise IndexError_(f"the resume index {self.name} cannot be searched ({e}); upload again") from e
        docs = (res.get("documents") or [[]])[0]
        metas = (res.get("metadatas") or [[]])[0]
        dists = (res.get("distances") or [[]])[0]
        return [
            Passage(
                text=doc or "",
                source=f"resume:{(m or {}).get('source', '')}",
                round="resume-deep-dive",
                topic="resume",
                kind="resume",
                score=1.0 - float(d),
                part=str((m or {}).get("section", "")),
            )
            for doc, m, d in zip(docs, metas, dists, strict=True)
        ]


def delete_resume_index(owner: str, settings: Settings | None = None) -> bool:
    """Delete ``owner``'s resume collection (no embedding model needed); True when one existed."""
    return ResumeIndex(owner, settings, embedder=_NoEmbedder()).delete()


class _NoEmbedder:
    """Stands in where only the collection name matters (deletion)."""

    id = "none"
    dim = 1

    def embed(self, texts: list[str]) -> Any:
        raise IndexError_("no embedder configured for this resume index")


class CombinedRetriever:
    """The bank retriever (``base``), plus the candidate's resume passages first in deep-dive rounds."""

    def __init__(self, base: Any | None, resume: ResumeIndex | None) -> None:
        self.base = base
        self.resume = resume

    def retrieve(
        self,
        query: str,
        *,
        round: str | None = None,
        topic: str | None = None,
        k: int = 4,
        kind: Literal["knowledge", "rubric"] | None = None,
    ) -> Sequence[Any]:
        mine: list[Any] = []
        if self.resume is not None and round == "resume-deep-dive":
            mine = list(self.resume.retrieve(query, k=max(1, k // 2)))
        rest: list[Any] = []
        if self.base is not None and k - len(mine) > 0:
            rest = list(self.base.retrieve(query, round=round, topic=topic, k=k - len(mine), kind=kind))
        return [*mine, *rest][:k]
