import numpy as np


def quantize(x: np.ndarray, mode: str = "symmetric", axis: int | None = None):
    """Return (q int8, scale float32, zero_point int) per tensor or per channel along axis."""
    raise NotImplementedError


def dequantize(q: np.ndarray, scale, zero_point, axis: int | None = None) -> np.ndarray:
    """Return float32 (q - zero_point) * scale."""
    raise NotImplementedError
