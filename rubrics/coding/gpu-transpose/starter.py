import math

from numba import cuda, float32

TILE = 32
ROWS = 8  # a 32 x 8 block moves a 32 x 32 tile, four rows per thread


@cuda.jit
def transpose_kernel(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)  # think about bank conflicts on the transposed read
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    # TODO: copy the block's TILE x TILE tile of a into shared memory with coalesced reads (guard the edges),
    # synchronise, then write the transposed tile to out with coalesced writes.


def transpose(a, out):
    """a: float32 device array (rows, cols); out: float32 device array (cols, rows) = a.T."""
    rows, cols = a.shape[0], a.shape[1]
    grid = (math.ceil(cols / TILE), math.ceil(rows / TILE))
    transpose_kernel[grid, (TILE, ROWS)](a, out)
