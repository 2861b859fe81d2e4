"""Bounding cube and 63-bit Morton keys (21 bits per axis), the shared layout of both engines.

Integer coordinates c = floor((x - lo) * scale), clipped to [0, 2**21 - 1], in float32;
key bit 3b+2 holds bit b of cx, 3b+1 of cy, 3b of cz.
"""
from __future__ import annotations

import numpy as np

from galaxyview.model.params import TREE_MAX_LEVEL

KEY_BITS = TREE_MAX_LEVEL
MAX_LEVEL = KEY_BITS  # deepest cell level: one integer grid point per cell
_GRID = np.float32(2**KEY_BITS)
_PAD = np.float32(1 + 1e-5)

_SPREAD = (  # (shift, mask) steps spreading 21 bits to every third bit
    (32, 0x1F00000000FFFF),
    (16, 0x1F0000FF0000FF),
    (8, 0x100F00F00F00F00F),
    (4, 0x10C30C30C30C30C3),
    (2, 0x1249249249249249),
)


def bounding_cube(pos: np.ndarray) -> tuple[np.ndarray, np.float32, np.float32]:
    """(lo, L, scale) of float32 positions (N, 3), N >= 1, all in float32.

    lo: per-axis minimum; L: the largest extent times (1 + 1e-5), 1 when all points coincide;
    scale = 2**21 / L.
    """
    return cube(pos.min(axis=0), pos.max(axis=0))


def cube(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.float32, np.float32]:
    """bounding_cube of the per-axis minimum lo and maximum hi (float32)."""
    extent = np.float32((hi - lo).max())
    size = np.float32(extent * _PAD) if extent > 0 else np.float32(1.0)
    return lo, size, np.float32(_GRID / size)


def grid_coords(pos: np.ndarray, lo: np.ndarray, scale: np.float32) -> np.ndarray:
    """Integer coordinates (N, 3) uint64 in [0, 2**21 - 1] (separate float32 ops, no FMA)."""
    c = np.floor((pos - lo) * scale)
    np.clip(c, 0, 2**KEY_BITS - 1, out=c)
    return c.astype(np.uint64)


def spread_bits(v: np.ndarray) -> np.ndarray:
    """Move bit b of each 21-bit uint64 to bit 3b."""
    v = v & np.uint64(0x1FFFFF)
    for shift, mask in _SPREAD:
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def compact_bits(v: np.ndarray) -> np.ndarray:
    """Inverse of spread_bits: gather bits 0, 3, 6, ... into a 21-bit integer."""
    masks = [mask for _, mask in _SPREAD][::-1][1:] + [0x1FFFFF]
    v = v & np.uint64(_SPREAD[-1][1])
    for (shift, _), mask in zip(_SPREAD[::-1], masks):
        v = (v | (v >> np.uint64(shift))) & np.uint64(mask)
    return v


def morton_keys(coords: np.ndarray) -> np.ndarray:
    """63-bit keys (N,) uint64 from integer coordinates (N, 3)."""
    return ((spread_bits(coords[:, 0]) << np.uint64(2))
            | (spread_bits(coords[:, 1]) << np.uint64(1))
            | spread_bits(coords[:, 2]))


def decode_keys(keys: np.ndarray) -> np.ndarray:
    """Integer coordinates (N, 3) uint64 of keys (the inverse of morton_keys)."""
    return np.stack([compact_bits(keys >> np.uint64(s)) for s in (2, 1, 0)], axis=1)


def sort_by_key(pos: np.ndarray):
    """Keys of float32 positions and the stable sort: (lo, L, scale, sorted keys, order), where
    order[i] is the original index of the i-th particle in key order."""
    lo, size, scale = bounding_cube(pos)
    keys = morton_keys(grid_coords(pos, lo, scale))
    order = np.argsort(keys, kind="stable")
    return lo, size, scale, keys[order], order
