import torch


def attention(q, k, v, mask=None, scale=None, alpha=1.0):
    """Scaled dot-product attention with bias[i, j] = -|i - j|; returns (out, weights)."""
    raise NotImplementedError
