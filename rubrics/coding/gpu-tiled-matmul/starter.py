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
    # TODO: for each tile along K, load one element of A and one of B into sa/sb (zero past the edges),
    # synchronise, accumulate sa[ty, :] . sb[:, tx], synchronise; finally write c[row, col] if in range.


def matmul(a, b, c):
    """a: (M, K), b: (K, N), c: (M, N) float32 device arrays; c = a @ b."""
    m, n = a.shape[0], b.shape[1]
    grid = (math.ceil(n / TILE), math.ceil(m / TILE))
    matmul_kernel[grid, (TILE, TILE)](a, b, c)
