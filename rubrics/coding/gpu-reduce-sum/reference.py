import math

import numpy as np
from numba import cuda, float32

TPB = 128  # threads per block: a power of two for the tree
MAX_BLOCKS = 64  # enough to fill a GPU many times over at this size; the grid-stride loop covers the rest


@cuda.jit
def zero(out):
    if cuda.grid(1) == 0:
        out[0] = 0.0


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    acc = float32(0.0)
    while i < x.shape[0]:  # grid-stride: coalesced loads, any n
        acc += x[i]
        i += cuda.gridsize(1)
    s[t] = acc  # every thread writes its slot, even with nothing to add
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:  # tree: half the threads add the other half's slots
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()  # every thread reaches it: the condition is inside
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])  # one atomic per block


def reduce_sum(x, out):
    """x: float32 device array (n,); out: float32 device array (1,) that receives sum(x)."""
    n = x.shape[0]
    zero[1, 32](out)
    if n == 0:
        return
    blocks = min(math.ceil(n / TPB), MAX_BLOCKS)
    block_sum[blocks, TPB](x, out)
