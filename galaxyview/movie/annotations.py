"""The scale bar and the galaxies' names (render/annotations.py: their geometry) drawn into
movie frames, composed as the captions are (movie/caption.py: white, dark outline)."""
from __future__ import annotations

import numpy as np

from galaxyview.movie.caption import blend_text, caption_px, text_mask


def draw_scale_bar(rgb: np.ndarray, bar) -> np.ndarray:
    """The bar (a render.annotations.ScaleBar) at the bottom right of rgb, its length written
    above it (in place)."""
    if bar is None:
        return rgb
    height, width = rgb.shape[:2]
    px = caption_px(height)
    margin = max(4, px // 2)
    thick = max(2, height // 270)
    length = int(round(bar.pixels))
    x1 = width - margin
    x0 = max(x1 - length, 0)
    y1 = height - margin
    y0 = y1 - thick
    mask = np.zeros((thick, x1 - x0), np.float32)
    mask[:] = 1.0
    blend_text(rgb, mask, x0, y0)
    text = text_mask(bar.text, px)
    tx = (x0 + x1) // 2 - text.shape[1] // 2
    blend_text(rgb, text, min(tx, width - margin - text.shape[1]), y0 - margin // 2 - text.shape[0])
    return rgb


def draw_labels(rgb: np.ndarray, labels) -> np.ndarray:
    """Each label's name centred over its point, a small mark at the point (in place)."""
    height = rgb.shape[0]
    px = max(10, caption_px(height) * 3 // 4)
    tick = max(2, px // 4)
    for label in labels:
        x, y = int(round(label.x)), int(round(label.y))
        blend_text(rgb, np.ones((1, 2 * tick + 1), np.float32), x - tick, y)
        blend_text(rgb, np.ones((2 * tick + 1, 1), np.float32), x, y - tick)
        text = text_mask(label.text, px)
        blend_text(rgb, text, x - text.shape[1] // 2, y - 3 * tick - text.shape[0])
    return rgb
