import math

from numba import cuda, float32

TILE = 32
ROWS = 8  # a 32 x 8 block moves a 32 x 32 tile, four rows per thread


@cuda.jit
def transpose_kernel(a, out):
    # One padding column: element (r, c) sits in bank (33 r + c) % 32, so a column of the tile spans all
    # 32 banks and the transposed read is conflict-free.
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    rows = a.shape[0]
    cols = a.shape[1]
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):  # coalesced reads: consecutive threads, consecutive columns
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):  # coalesced writes of the transposed tile
        if x < rows and y + j < cols:
            out[y + j, x] = tile[tx, ty + j]


def transpose(a, out):
    """a: float32 device array (rows, cols); out: float32 device array (cols, rows) = a.T."""
    rows, cols = a.shape[0], a.shape[1]
    if rows == 0 or cols == 0:
        return
    grid = (math.ceil(cols / TILE), math.ceil(rows / TILE))
    transpose_kernel[grid, (TILE, ROWS)](a, out)
