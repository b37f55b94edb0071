"""Fixture resumes built in the tests: Markdown, plain text and a PDF drawn with reportlab."""

from __future__ import annotations

from pathlib import Path

RESUME_MD = """\
# Dana Okafor

Senior ML engineer working on inference performance. dana@example.com

## Experience

### Senior ML Engineer, Streamline AI | Jan 2021 - Present
- Cut p99 latency of the speech-to-text service from 480 ms to 190 ms by fusing the decoder's attention into
  one CUDA kernel, profiled with Nsight Systems on A10G GPUs
- Raised throughput from 900 to 2,600 requests/s per node with dynamic batching in a 4 ms window
- Led a team of 4 engineers and owned the rollout to 120 GPUs

### ML Engineer, Parcel Robotics | 2018 - 2020
- Quantized the grasp-detection CNN to INT8 with TensorRT on Jetson Xavier: 3.1x faster at 0.4% mAP loss
- Built the labelling pipeline for 2M images

## Projects

### Sparse attention for long documents (2022)
- Research project, paper at an ICLR workshop: block-sparse attention reaching 16k tokens with 2.3x lower
  memory than dense attention
- Ablation over 5 block sizes on an arXiv summarization dataset

## Education
MSc Computer Science, University of Toronto, 2018

## Skills
C++, CUDA, PyTorch, TensorRT, Triton
"""

# A different candidate: nothing in common with Dana's projects.
OTHER_MD = """\
# Lee Marsh

## Experience

### Data Engineer, Harbor Freight Analytics | 2019 - 2024
- Rebuilt the nightly Spark job that joins shipment events, from 7 hours to 50 minutes by salting skewed keys
- Moved 300 TB of parquet files to object storage with idempotent, checksummed uploads

## Education
BSc Statistics, 2019
"""

RESUME_TXT_LINES = [
    "Priya Raman",
    "EXPERIENCE",
    "Inference Engineer, Tensorloom    Mar 2020 - Present",
    "• Reduced LLM decode latency from 42 ms to 17 ms per token with a paged KV cache on H100 GPUs",
    "• Served 3 models from one shared memory pool, cutting GPU count from 24 to 16",
    "PROJECTS",
    "Int8 kernels for recommendation (2019)",
    "• Wrote AVX-512 int8 GEMM kernels, 2.4x faster than the FP32 baseline at 0.1% accuracy loss",
    "EDUCATION",
    "MS Computer Engineering, 2019",
]


def write_pdf(path: Path, lines: list[str]) -> Path:
    """A one-page text PDF with ``lines`` drawn top to bottom."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter)
    y = 740
    for line in lines:
        c.drawString(60, y, line)
        y -= 16
    c.showPage()
    c.save()
    return path


def write_image_only_pdf(path: Path) -> Path:
    """A PDF with shapes and no text layer, like a scanned resume."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter)
    c.rect(80, 300, 400, 300, fill=1)
    c.circle(300, 200, 50, fill=1)
    c.showPage()
    c.save()
    return path
