import math

from numba import cuda, float32

TILE = 16  # a TILE x TILE block of threads computes a TILE x TILE tile of C


@cuda.jit
def matmul_kernel(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    m = a.shape[0]
    k = a.shape[1]
    n = b.shape[1]
    acc = float32(0.0)
    for t0 in range(0, k, TILE):
        # Each thread loads one element of each tile (zeros past the edges), so every element of A and B
        # is read from global memory once per tile row/column of C instead of once per output.
        if row < m and t0 + tx < k:
            sa[ty, tx] = a[row, t0 + tx]
        else:
            sa[ty, tx] = 0.0
        if t0 + ty < k and col < n:
            sb[ty, tx] = b[t0 + ty, col]
        else:
            sb[ty, tx] = 0.0
        cuda.syncthreads()  # the tiles are complete before anyone reads them
        for kk in range(TILE):
            acc += sa[ty, kk] * sb[kk, tx]
        cuda.syncthreads()  # everyone is done reading before the next tile overwrites them
    if row < m and col < n:
        c[row, col] = acc


def matmul(a, b, c):
    """a: (M, K), b: (K, N), c: (M, N) float32 device arrays; c = a @ b."""
    m, n = a.shape[0], b.shape[1]
    grid = (math.ceil(n / TILE), math.ceil(m / TILE))
    matmul_kernel[grid, (TILE, TILE)](a, b, c)
