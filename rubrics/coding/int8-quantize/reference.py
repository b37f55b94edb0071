import numpy as np


def _reduce_axes(x, axis):
    if axis is None:
        return None
    axis = axis % x.ndim
    return tuple(i for i in range(x.ndim) if i != axis)


def _expand(v, ndim, axis):
    """Make a per-channel vector broadcast along `axis`."""
    v = np.asarray(v)
    if axis is None or v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def quantize(x: np.ndarray, mode: str = "symmetric", axis: int | None = None):
    """Return (q int8, scale float32, zero_point int) per tensor or per channel along axis."""
    x = np.asarray(x, dtype=np.float32)
    red = _reduce_axes(x, axis)
    if mode == "symmetric":
        amax = np.max(np.abs(x), axis=red)
        scale = (amax / 127.0).astype(np.float32)
        scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
        zp = np.zeros_like(scale, dtype=np.int32)
        q = np.clip(np.round(x / _expand(scale, x.ndim, axis)), -127, 127)
    elif mode == "asymmetric":
        lo = np.minimum(np.min(x, axis=red), 0.0)  # the range must contain 0
        hi = np.maximum(np.max(x, axis=red), 0.0)
        scale = ((hi - lo) / 255.0).astype(np.float32)
        scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
        zp = np.clip(np.round(-128.0 - lo / scale), -128, 127).astype(np.int32)
        q = np.clip(np.round(x / _expand(scale, x.ndim, axis)) + _expand(zp, x.ndim, axis), -128, 127)
    else:
        raise ValueError(f"mode must be 'symmetric' or 'asymmetric', not {mode!r}")
    return q.astype(np.int8), scale, zp


def dequantize(q: np.ndarray, scale, zero_point, axis: int | None = None) -> np.ndarray:
    """Return float32 (q - zero_point) * scale."""
    q = np.asarray(q)
    s = _expand(np.asarray(scale, dtype=np.float32), q.ndim, axis)
    z = _expand(np.asarray(zero_point, dtype=np.int32), q.ndim, axis)
    return ((q.astype(np.int32) - z) * s).astype(np.float32)
