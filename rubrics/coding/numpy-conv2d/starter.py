import numpy as np


def conv2d(x: np.ndarray, w: np.ndarray, stride=1, padding=0) -> np.ndarray:
    """Cross-correlate x (N, C_in, H, W) with w (C_out, C_in, KH, KW); no Python loops."""
    raise NotImplementedError
