import math

from numba import cuda, int32

TPB = 128
MAX_BINS = 512  # the shared histogram's capacity (nbins <= 512)


@cuda.jit
def hist_kernel(x, hist):
    h = cuda.shared.array(MAX_BINS, int32)  # this block's private histogram
    t = cuda.threadIdx.x
    nbins = hist.shape[0]
    # TODO: clear h[0:nbins] (there may be more bins than threads), synchronise, count this thread's share of
    # x into h with shared atomics, synchronise, then add each non-zero bin into hist with one global atomic.


def histogram(x, hist):
    """x: int32 device array of values in [0, nbins); hist: int32 device array (nbins,) of counts."""
    n = x.shape[0]
    blocks = max(1, math.ceil(n / TPB))
    hist_kernel[blocks, TPB](x, hist)
