import math

from numba import cuda, float32

TPB = 64  # threads per row (one block per row)


@cuda.jit(device=True)
def combine(m1, s1, m2, s2):
    """Merge two (running max, sum of exp(x - max)) pairs: rescale both sums to the larger max."""
    m = max(m1, m2)
    if m == -math.inf:
        return m, 0.0
    return m, s1 * math.exp(m1 - m) + s2 * math.exp(m2 - m)


@cuda.jit
def softmax_kernel(x, out):
    sm = cuda.shared.array(TPB, float32)
    ss = cuda.shared.array(TPB, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    # Pass 1 (online): one read of each element keeps a running max and a sum rescaled when the max grows.
    m = -math.inf
    s = 0.0
    for j in range(t, cols, TPB):
        v = x[row, j]
        if v > m:
            s = s * math.exp(m - v) + 1.0
            m = v
        elif m != -math.inf:
            s += math.exp(v - m)
    sm[t] = m
    ss[t] = s
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:  # tree over the block's (max, sum) pairs
        if t < step:
            m2, s2 = combine(sm[t], ss[t], sm[t + step], ss[t + step])
            sm[t] = m2
            ss[t] = s2
        cuda.syncthreads()
        step //= 2
    row_max = sm[0]
    row_sum = ss[0]
    # Pass 2: the second and last read of x.
    for j in range(t, cols, TPB):
        out[row, j] = math.exp(x[row, j] - row_max) / row_sum


def softmax_rows(x, out):
    """x, out: float32 device arrays (rows, cols); out[r] = softmax(x[r])."""
    rows = x.shape[0]
    if rows == 0 or x.shape[1] == 0:
        return
    softmax_kernel[rows, TPB](x, out)
