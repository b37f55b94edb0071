"""The tiny distance-bias attention model trained in attention-train (shipped into the box, used here too)."""

import math

import torch
from torch import nn


class TinyAttention(nn.Module):
    """One head of self-attention with bias[i, j] = -|i - j| and an output projection."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-2]
        pos = torch.arange(n)
        bias = -(pos[:, None] - pos[None, :]).abs().to(x.dtype)
        s = self.wq(x) @ self.wk(x).transpose(-2, -1) / math.sqrt(x.shape[-1]) + bias
        return self.wo(torch.softmax(s, dim=-1) @ self.wv(x))


NAMES = ("wq", "wk", "wv", "wo")


def load_weights(model: TinyAttention, weights: dict) -> None:
    """Copy float64 NumPy weights into the model."""
    with torch.no_grad():
        for name in NAMES:
            getattr(model, name).weight.copy_(torch.from_numpy(weights[name]))


def dump_weights(model: TinyAttention) -> dict:
    """The model's weights as NumPy arrays."""
    return {name: getattr(model, name).weight.detach().cpu().numpy().copy() for name in NAMES}
