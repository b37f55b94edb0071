import math

import torch


def attention(q, k, v, mask=None, scale=None, alpha=1.0):
    """Scaled dot-product attention with bias[i, j] = -|i - j|; returns (out, weights)."""
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    i = torch.arange(lq, device=q.device)[:, None]
    j = torch.arange(lk, device=q.device)[None, :]
    bias = -(i - j).abs().to(q.dtype)
    scores = scale * (q @ k.transpose(-2, -1)) + alpha * bias
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # over the keys
    return weights @ v, weights
