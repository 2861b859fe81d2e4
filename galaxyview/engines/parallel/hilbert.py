"""Skilling's axes-to-transpose step of the Peano-Hilbert index, compiled (numba)."""
from __future__ import annotations

import numpy as np

from galaxyview.numba_setup import kernel, prange


@kernel(parallel=True)
def transpose(coords, bits, out):
    """out[i]: the Hilbert transpose of the coordinates coords[i] (3 integers of `bits`
    bits); its bits interleaved x y z, most significant first, are the Hilbert index."""
    top = np.uint64(1) << np.uint64(bits - 1)
    one = np.uint64(1)
    for i in prange(coords.shape[0]):
        x0, x1, x2 = coords[i, 0], coords[i, 1], coords[i, 2]
        q = top
        while q > one:  # undo excess work
            p = q - one
            if x0 & q:
                x0 ^= p
            if x1 & q:
                x0 ^= p
            else:
                t = (x0 ^ x1) & p
                x0 ^= t
                x1 ^= t
            if x2 & q:
                x0 ^= p
            else:
                t = (x0 ^ x2) & p
                x0 ^= t
                x2 ^= t
            q >>= one
        x1 ^= x0  # Gray encode
        x2 ^= x1
        t = np.uint64(0)
        q = top
        while q > one:
            if x2 & q:
                t ^= q - one
            q >>= one
        out[i, 0], out[i, 1], out[i, 2] = x0 ^ t, x1 ^ t, x2 ^ t
