"""Captions burnt into movie frames: scene name and simulation time, bottom left.

Text is rasterised with Pillow (imageio's own dependency) into a coverage mask, with a dark
outline so it reads on bright and dark regions alike; blended onto an RGB frame in numpy
(draw_caption), or handed to the GPU as an Overlay composed while the frame becomes I420.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from galaxyview.errors import GalaxyviewError
from galaxyview.render.yuv import Overlay


def caption_text(name: str, time_nbody: float, time_myr_per_unit: float | None,
                 seconds: bool = False) -> str:
    """'mw-andromeda   t = 412.5 Myr', the time in seconds for a scene in SI units (the
    rings), else in N-body units."""
    if time_myr_per_unit:
        return f"{name}   t = {time_nbody * time_myr_per_unit:.1f} Myr"
    if seconds:
        return f"{name}   t = {time_nbody:,.0f} s"
    return f"{name}   t = {time_nbody:.3f} (N-body units)"


@lru_cache(maxsize=4)
def _font(px: int):
    try:
        from PIL import ImageFont
    except ImportError:
        raise GalaxyviewError("captions need Pillow (pip install pillow), or record without "
                              "--caption") from None
    try:
        return ImageFont.load_default(size=px)
    except (TypeError, AttributeError, OSError):  # Pillow < 10.1 or no FreeType: bitmap font
        return ImageFont.load_default()


@lru_cache(maxsize=64)
def _word(word: str, px: int) -> np.ndarray:
    """Coverage of one word drawn at (0, 0): rows from the line's top, uint8."""
    from PIL import Image, ImageDraw

    font = _font(px)
    _, _, right, bottom = font.getbbox(word)
    image = Image.new("L", (max(1, right), max(1, bottom)))
    ImageDraw.Draw(image).text((0, 0), word, fill=255, font=font)
    return np.asarray(image)


def caption_px(height: int) -> int:
    """The captions' text height in a frame `height` high."""
    return max(12, height // 27)


def blend_text(rgb: np.ndarray, mask: np.ndarray, x0: int, y0: int) -> np.ndarray:
    """Blend white glyphs (coverage `mask`) with a dark outline into rgb (in place), the mask's
    top-left at pixel (x0, y0) (top row 0); what falls outside the frame is left out."""
    height, width = rgb.shape[:2]
    h, w = mask.shape
    # outline: the mask dilated by one pixel in each direction
    outline = np.zeros((h + 2, w + 2), np.float32)
    for dy in range(3):
        for dx in range(3):
            np.maximum(outline[dy:dy + h, dx:dx + w], mask, out=outline[dy:dy + h, dx:dx + w])
    glyphs = np.zeros_like(outline)
    glyphs[1:h + 1, 1:w + 1] = mask
    top, left = y0 - 1, x0 - 1  # the outline's corner in the frame
    ya, yb = max(top, 0), min(top + h + 2, height)
    xa, xb = max(left, 0), min(left + w + 2, width)
    if ya >= yb or xa >= xb:
        return rgb
    outline = outline[ya - top:yb - top, xa - left:xb - left]
    glyphs = glyphs[ya - top:yb - top, xa - left:xb - left]
    region = rgb[ya:yb, xa:xb, :3].astype(np.float32)
    region *= (1.0 - 0.8 * outline)[..., None]  # darken under and around the glyphs
    region += (255.0 - region) * glyphs[..., None]  # then white glyphs
    rgb[ya:yb, xa:xb, :3] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
    return rgb


def text_mask(text: str, px: int) -> np.ndarray:
    """Coverage (h, w) float32 in [0, 1] of `text` at about `px` pixels high."""
    return text_coverage(text, px).astype(np.float32) / 255.0


def text_coverage(text: str, px: int) -> np.ndarray:
    """Coverage (h, w) uint8 of `text` at about `px` pixels high. Words are drawn once and
    kept (a caption changes only in its time), each placed at its advance in the line."""
    font = _font(px)
    left, top, right, bottom = font.getbbox(text)
    line = np.zeros((max(1, bottom), max(1, right)), np.uint8)
    start = 0
    for word in text.split(" "):
        if word:
            x = int(round(font.getlength(text[:start]))) if start else 0
            glyphs = _word(word, px)[:line.shape[0], :max(0, line.shape[1] - x)]
            h, w = glyphs.shape
            np.maximum(line[:h, x:x + w], glyphs, out=line[:h, x:x + w])
        start += len(word) + 1
    return line[top:, left:]


def caption_overlay(text: str, width: int, height: int) -> Overlay | None:
    """The caption of a width x height frame: white glyphs (mask) with a dark outline (the
    mask dilated by one pixel), bottom left; None where the frame is too small for it."""
    px = caption_px(height)
    mask = text_coverage(text, px)
    margin = max(4, px // 2)
    h = min(mask.shape[0], height - 2 * margin - 2)
    w = min(mask.shape[1], width - 2 * margin - 2)
    if h <= 0 or w <= 0:
        return None
    glyphs = np.zeros((h + 2, w + 2), np.uint8)
    glyphs[1:h + 1, 1:w + 1] = mask[:h, :w]
    outline = np.zeros((h + 2, w + 2), np.uint8)
    for dy in range(3):
        for dx in range(3):
            np.maximum(outline[dy:dy + h, dx:dx + w], mask[:h, :w],
                       out=outline[dy:dy + h, dx:dx + w])
    return Overlay(glyphs, outline, margin - 1, height - margin - h - 1)


def draw_caption(rgb: np.ndarray, text: str) -> np.ndarray:
    """Blend white `text` with a dark outline into the bottom-left corner of rgb (in place);
    the same composition as the GPU's (render/yuv.py, shaders/yuv420.frag)."""
    over = caption_overlay(text, rgb.shape[1], rgb.shape[0])
    if over is None:
        return rgb
    mask = over.mask[1:-1, 1:-1].astype(np.float32) / 255.0
    return blend_text(rgb, mask, over.x + 1, over.y + 1)
