"""Boxes of the engine's current tree for the octree overlay."""
from __future__ import annotations

import numpy as np


def levels_from_sizes(sizes: np.ndarray, level_lo: int) -> np.ndarray:
    """Tree level of each box: the largest boxes are at level_lo, each level halves the size."""
    if len(sizes) == 0:
        return np.zeros(0, np.int32)
    ratio = float(np.max(sizes)) / np.maximum(sizes, 1e-30)
    return (level_lo + np.rint(np.log2(ratio))).astype(np.int32)


def engine_boxes(engine, level_lo: int, level_hi: int):
    """(boxes (M, 4): centre xyz and size, levels (M,)) of cells at levels level_lo..level_hi,
    or None when the engine keeps no tree (direct summation, nothing loaded yet)."""
    boxes = engine.tree_boxes(level_lo, level_hi)
    if boxes is None:
        return None
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    return boxes, levels_from_sizes(boxes[:, 3], level_lo)
