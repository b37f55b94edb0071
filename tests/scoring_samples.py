"""Fixed answers for scorer tests: strong, partial and wrong answers to real rubrics, written for the tests."""

from __future__ import annotations

DECODE_ID = "inference.batching.decode-bandwidth-bound"
LAYOUT_ID = "cpp.row-vs-column-major"

ANSWERS: dict[str, dict[str, str]] = {
    DECODE_ID: {
        "strong": (
            "At batch one every decode step has to stream all of the weights from HBM: 7B parameters at two bytes "
            "is about 14 GB, and 14 GB divided by 2 TB/s gives 7 ms per token, so at best roughly 143 tokens/s "
            "for a single sequence. The step is memory-bound, not compute-bound, because each weight loaded does "
            "about one multiply-add. Batching more sequences reuses each weight read, so throughput grows almost "
            "linearly until compute or the KV cache takes over; with long contexts the KV-cache reads per step "
            "can exceed the weight traffic. Continuous batching adds and retires sequences at every step, and "
            "long prefills are chunked or sent to separate workers so they do not stall decoding."
        ),
        "partial": (
            "Decode is memory-bound because the weights have to be read for every token. Batching helps "
            "throughput since several requests share the work."
        ),
        "wrong": (
            "Token generation speed mostly depends on the tokenizer and the CPU clock, so I would use a faster "
            "tokenizer library and more CPU threads. Grouping requests only matters for training jobs."
        ),
        # Wrong but in the rubric's own vocabulary: offline coverage cannot tell it from the partial answer
        # (negation and false claims need a judge); kept to measure that limit, not in the ordering tests.
        "wrong_topical": (
            "I would estimate it from FLOPs: the GPU does hundreds of teraflops so each token takes microseconds. "
            "Batching does not really help decode because every request still needs its own compute, and prefill "
            "and decode are the same workload."
        ),
    },
    LAYOUT_ID: {
        "strong": (
            "In row-major storage element (i, j) sits at offset i * ncols + j; in column-major it is j * nrows + i. "
            "The CPU fetches 64-byte cache lines, 16 floats, so a row walk uses every byte of each line while a "
            "column walk jumps ncols * 4 bytes and uses only 4 bytes per line fetched. For large matrices the "
            "lines are evicted before the neighbouring columns reuse them, and the prefetcher loses the stream. "
            "So keep the inner loop on the contiguous dimension, which is i for column-major data. A row-major "
            "matrix is the column-major storage of its transpose, so with cuBLAS you swap the operands and "
            "compute C^T = B^T A^T without copying."
        ),
        "partial": (
            "Row-major means the offset is i * ncols + j, so rows are contiguous. Going down a column is slower "
            "because of cache misses."
        ),
        "wrong": (
            "Both loop orders cost the same because memory is random access; the compiler takes care of it. "
            "Column-major data does not change anything."
        ),
    },
}

WHY = {
    DECODE_ID: (
        "At batch one with a short context almost all the bytes moved per step are the weights, but with many "
        "long sequences the KV cache reads add up and can dominate the step.",
        "A long prefill is compute-heavy, so that step takes much longer and every decoding user waits for "
        "their next token; chunked prefill or separate prefill workers keep per-token latency steady.",
    ),
}
