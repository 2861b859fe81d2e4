"""The CPU engine's draw path: the particles' light splatted on the host, compiled with numba,
then uploaded into the light texture that the tone-map pass reads.

The same sprites as shaders/particles.{vert,frag} and kernels/render_splat.cu: a gaussian
exp(-4 r^2) over the pixels whose centres lie in the point's square, the same colours and light
per particle. Under Mesa's llvmpipe (no GPU), GL turns each point sprite into two triangles set
up one by one; splatting 20,000 particles here takes a few milliseconds on one core, less than
half the CPU time of the sprites, which leaves more of the machine to the engine's step.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from vispy import gloo

from galaxyview.model.state import Component
from galaxyview.render.look import COMPONENT_COLOURS, GALAXY_COLOURS
from galaxyview.render.particles import light_gain

MAX_RADIUS = 32  # as kernels/render_splat.cu: at most 2 * MAX_RADIUS + 1 pixels a side
_COMPONENTS = np.array([COMPONENT_COLOURS.get(c, COMPONENT_COLOURS[Component.STAR])
                        for c in range(8)], np.float32)
_GALAXIES = np.array(GALAXY_COLOURS, np.float32)


@njit(cache=True, nogil=True, error_model="numpy")
def _splat(vertices, mvp, components, galaxies, lut, point_size, gain, mode, lo, hi, light):
    """Add the light of `vertices` (N, >= 5 float32: x y z, component, value, ...) into light
    (h, w, 4) float32, row 0 at the bottom; mvp (4, 4) for column vectors."""
    h, w = light.shape[0], light.shape[1]
    for i in range(vertices.shape[0]):
        x, y, z = vertices[i, 0], vertices[i, 1], vertices[i, 2]
        cx = mvp[0, 0] * x + mvp[0, 1] * y + mvp[0, 2] * z + mvp[0, 3]
        cy = mvp[1, 0] * x + mvp[1, 1] * y + mvp[1, 2] * z + mvp[1, 3]
        cz = mvp[2, 0] * x + mvp[2, 1] * y + mvp[2, 2] * z + mvp[2, 3]
        cw = mvp[3, 0] * x + mvp[3, 1] * y + mvp[3, 2] * z + mvp[3, 3]
        if not cw > 0 or abs(cx) > cw or abs(cy) > cw or abs(cz) > cw:
            continue  # GL drops points whose centre is outside the view volume
        code = min(max(int(vertices[i, 3] + np.float32(0.5)), 0), 7)
        size = np.float32(2.5) * point_size if code == 3 else point_size
        rgb = components[code]
        if mode == 1:
            rgb = galaxies[int(max(vertices[i, 4], np.float32(0)) + np.float32(0.5)) & 7]
        elif mode == 2:
            t = min(max((vertices[i, 4] - lo) / (hi - lo), np.float32(0)), np.float32(1))
            rgb = lut[int(t * np.float32(lut.shape[0] - 1) + np.float32(0.5))]
        s = components[code, 3] * gain * np.float32(9) / max(size * size, np.float32(1))
        xw = (cx / cw + np.float32(1)) * np.float32(0.5) * w
        yw = (cy / cw + np.float32(1)) * np.float32(0.5) * h
        half = np.float32(0.5) * size
        inv = np.float32(1) / half
        # pixels whose centre lies in the point's square, as GL rasterises points
        x0 = max(int(math.ceil(xw - half - np.float32(0.5))), 0)
        x1 = min(int(math.floor(xw + half - np.float32(0.5))), w - 1, x0 + 2 * MAX_RADIUS)
        y0 = max(int(math.ceil(yw - half - np.float32(0.5))), 0)
        y1 = min(int(math.floor(yw + half - np.float32(0.5))), h - 1, y0 + 2 * MAX_RADIUS)
        for py in range(y0, y1 + 1):
            dy = (py + np.float32(0.5) - yw) * inv
            for px in range(x0, x1 + 1):
                dx = (px + np.float32(0.5) - xw) * inv
                r2 = dx * dx + dy * dy
                if r2 > 1:
                    continue
                f = s * math.exp(np.float32(-4) * r2)
                light[py, px, 0] += rgb[0] * f
                light[py, px, 1] += rgb[1] * f
                light[py, px, 2] += rgb[2] * f


class HostSplatter:
    """Fills the light texture from host vertices (render.particles.VERTEX_DTYPE)."""

    def __init__(self):
        self._light = None  # (h, w, 4) float32 on the host
        self._texture = None

    def render_light(self, vertices: np.ndarray, camera, look, size, colouring):
        """Splat `vertices` for this view; returns the light texture. colouring:
        ParticleRenderer.colouring() (mode, its code, (lo, hi), colour map)."""
        w, h = int(size[0]), int(size[1])
        if self._light is None or self._light.shape[:2] != (h, w):
            self._light = np.zeros((h, w, 4), np.float32)
            self._texture = gloo.Texture2D(shape=(h, w, 4), format="rgba",
                                           internalformat="rgba16f", interpolation="nearest")
        light = self._light
        light.fill(0.0)
        _, code, (lo, hi), lut = colouring
        flat = vertices.view(np.float32).reshape(len(vertices), -1)  # VERTEX_DTYPE's floats
        _splat(flat, camera.mvp(w / max(h, 1)).astype(np.float32), _COMPONENTS, _GALAXIES,
               np.asarray(lut, np.float32), np.float32(look.point_size),
               np.float32(light_gain(len(vertices))), int(code), np.float32(lo), np.float32(hi),
               light)
        self._texture.set_data(light)
        return self._texture

    def release(self) -> None:
        if self._texture is not None:
            self._texture.delete()
        self._light = self._texture = None
