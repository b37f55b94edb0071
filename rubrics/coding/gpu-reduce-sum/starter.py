import math

import numpy as np
from numba import cuda, float32

TPB = 128  # threads per block


@cuda.jit
def block_sum(x, out):
    s = cuda.shared.array(TPB, float32)  # one slot per thread of the block
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    # TODO: load (or accumulate) this thread's share of x into s[t], reduce s in a tree with
    # cuda.syncthreads() between the steps, then add the block's total into out[0].


def reduce_sum(x, out):
    """x: float32 device array (n,); out: float32 device array (1,) that receives sum(x)."""
    n = x.shape[0]
    blocks = max(1, math.ceil(n / TPB))
    block_sum[blocks, TPB](x, out)
