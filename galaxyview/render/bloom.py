"""Bloom: a glow around the brightest light, for shows. The light above a threshold (the
bright part) is blurred by a gaussian and a fraction of it (the look's `bloom`) is moved into
that blur, on the float light image before the tone map, so dense cores glow without the frame
getting brighter: the total light stays but for what the glow carries past the frame's edges.

The blur runs on blocks of `factor` x `factor` pixels (the bright part summed into each, a
separable gaussian of sigma / factor blocks, then interpolated bilinearly back to the pixels),
so its cost hardly grows with the radius: a few passes over the frame.

One GL post pass for every draw path (shaders/bloom.frag): the GL sprites, the host splat and
the CUDA splat all hand the tone map a float light texture (render/particles.py), so the glow
is made where that texture lives (the GPU, or Mesa on the CPU) whichever path made it.
`bloom_image` is the same arithmetic in numpy (the reference the tests hold the pass to).
"""
from __future__ import annotations

import math

import numpy as np
from vispy import gloo

THRESHOLD = 1.0  # light x exposure above this is bright (the exp tone map at 63 %)
REFERENCE_LINES = 1080  # bloom_radius is in pixels of a frame this high
MAX_FACTOR = 8  # block side at most, px
BLOCK_SIGMA = 2.0  # the blocks' size: about this many to the gaussian's sigma


def sigma_px(radius: float, height: int) -> float:
    """The gaussian's sigma in pixels for a look's bloom_radius in a frame `height` high: the
    glow is the same part of the picture in a window, a 1080p movie and an 8K frame."""
    return max(float(radius) * height / REFERENCE_LINES, 0.5)


def blocks(sigma: float) -> tuple[int, float, int]:
    """(block side px, sigma in blocks, taps each side) of a gaussian of `sigma` px."""
    factor = int(min(max(sigma // BLOCK_SIGMA, 1), MAX_FACTOR))
    s = sigma / factor
    return factor, s, int(math.ceil(3.0 * s))


def bloom_image(light: np.ndarray, strength: float, sigma: float,
                threshold: float) -> np.ndarray:
    """(h, w, >= 3) float32 light with bloom of `strength` and a gaussian of `sigma` px, as
    shaders/bloom.frag makes it."""
    from scipy.ndimage import convolve1d

    h, w = light.shape[:2]
    f, s, n = blocks(sigma)
    out = np.array(light, np.float32, copy=True)
    rgb = np.maximum(out[..., :3].astype(np.float64), 0.0)
    bright = np.maximum(rgb - threshold, 0.0)
    bh, bw = -(-h // f), -(-w // f)
    padded = np.zeros((bh * f, bw * f, 3))
    padded[:h, :w] = bright
    summed = padded.reshape(bh, f, bw, f, 3).sum(axis=(1, 3))
    k = np.arange(-n, n + 1)
    weights = np.exp(-0.5 * k * k / (s * s))
    weights /= weights.sum()
    summed = convolve1d(convolve1d(summed, weights, axis=1, mode="constant"), weights, axis=0,
                        mode="constant")

    def bilinear(count, size):  # per frame pixel: the two blocks and the weight of the second
        u = (np.arange(count) + 0.5) / f - 0.5
        i0 = np.floor(u)
        return (np.clip(i0, 0, size - 1).astype(int), np.clip(i0 + 1, 0, size - 1).astype(int),
                (u - i0)[:, None])

    y0, y1, ty = bilinear(h, bh)
    x0, x1, tx = bilinear(w, bw)
    rows = summed[y0] * (1 - ty[..., None]) + summed[y1] * ty[..., None]
    glow = (rows[:, x0] * (1 - tx) + rows[:, x1] * tx) / (f * f)
    out[..., :3] = rgb + strength * (glow - bright)
    return out


class Bloom:
    """The bloom passes and their float textures, in the current GL context."""

    def __init__(self, vertex: str, fragment: str):
        self._program = gloo.Program(vertex, fragment)
        self._program["a_xy"] = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
        self._key = None
        self._textures = self._fbos = ()

    def _targets(self, frame, block):
        if self._key != (frame, block):
            self.release()
            shapes = (block, block, frame)  # the blocks twice (the blur's two passes), the frame
            self._textures = tuple(
                gloo.Texture2D(shape=(h, w, 4), format="rgba", internalformat="rgba32f",
                               interpolation="nearest") for w, h in shapes)
            self._fbos = tuple(gloo.FrameBuffer(color=t) for t in self._textures)
            self._key = (frame, block)
        return self._textures, self._fbos

    def apply(self, light, size, strength: float, radius: float, exposure: float):
        """The texture of `light` (a float light texture of `size` (w, h)) with bloom."""
        w, h = int(size[0]), int(size[1])
        f, s, n = blocks(sigma_px(radius, h))
        bw, bh = -(-w // f), -(-h // f)
        (a, b, out), (to_a, to_b, to_out) = self._targets((w, h), (bw, bh))
        p = self._program
        p["u_light"] = light
        p["u_frame"] = (float(w), float(h))
        p["u_factor"] = float(f)
        p["u_sigma"] = s
        p["u_taps"] = n
        p["u_threshold"] = THRESHOLD / float(exposure)
        p["u_strength"] = float(strength)
        gloo.set_state(blend=False, depth_test=False)
        for fbo, source, source_size, step, direction in (
                (to_a, light, (w, h), 0, (0.0, 0.0)),  # the bright part into blocks
                (to_b, a, (bw, bh), 1, (1.0, 0.0)),  # blurred across
                (to_a, b, (bw, bh), 1, (0.0, 1.0)),  # and down
                (to_out, a, (bw, bh), 2, (0.0, 0.0))):  # back to the frame's pixels
            p["u_source"] = source
            p["u_size"] = tuple(float(v) for v in source_size)
            p["u_pass"] = step
            p["u_dir"] = direction
            with fbo:
                gloo.set_viewport(0, 0, *((w, h) if step == 2 else (bw, bh)))
                p.draw("triangle_strip")
        return out

    def release(self) -> None:
        for fbo in self._fbos:
            fbo.delete()
        for texture in self._textures:
            texture.delete()
        self._textures = self._fbos = ()
        self._key = None
