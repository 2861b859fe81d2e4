"""The CPU engine's draw path: the particles' light splatted on the host (galaxyview/light, the
numba kernel), then uploaded into the light texture that the tone-map pass reads.

Under Mesa's llvmpipe (no GPU), GL turns each point sprite into two triangles set up one by one;
splatting 20,000 particles here takes a few milliseconds on one core, less than half the CPU
time of the sprites, which leaves more of the machine to the engine's step.
"""
from __future__ import annotations

import numpy as np
from vispy import gloo

from galaxyview.light import LightView, splat
from galaxyview.model.state import Component
from galaxyview.render.look import COMPONENT_COLOURS, GALAXY_COLOURS, POPULATION_COLOURS, table
from galaxyview.render.particles import eye_gain

_COMPONENTS = table(COMPONENT_COLOURS, Component.STAR, 4)
_GALAXIES = np.array(GALAXY_COLOURS, np.float32)
_POPULATIONS = table(POPULATION_COLOURS, Component.STAR, 3)


def light_view(camera, look, size, colouring, n: int) -> LightView:
    """The LightView of this camera, look and size (w, h) for n particles; colouring:
    ParticleRenderer.colouring() (mode, its code, (lo, hi), colour map)."""
    w, h = int(size[0]), int(size[1])
    mode, code, (lo, hi), lut = colouring
    projection, eyes = camera.eyes((w, h))
    return LightView(w, h, eyes[0, :16].reshape(4, 4), float(look.point_size),
                     eye_gain(n, eyes, look.point_size), mode, int(code), float(lo), float(hi),
                     np.asarray(lut, np.float32), _COMPONENTS, _GALAXIES, projection, eyes,
                     _POPULATIONS)


class HostSplatter:
    """Fills the light texture from host vertices (render.particles.VERTEX_DTYPE), or shows a
    light image made elsewhere (a parallel engine's processes)."""

    def __init__(self):
        self._light = None  # (h, w, 4) float32 on the host
        self._texture = None

    def _buffers(self, w: int, h: int) -> np.ndarray:
        if self._light is None or self._light.shape[:2] != (h, w):
            self._light = np.zeros((h, w, 4), np.float32)
            self._texture = gloo.Texture2D(shape=(h, w, 4), format="rgba",
                                           internalformat="rgba16f", interpolation="nearest")
        return self._light

    def render_light(self, vertices: np.ndarray, camera, look, size, colouring):
        """Splat `vertices` for this view; returns the light texture. colouring:
        ParticleRenderer.colouring() (mode, its code, (lo, hi), colour map)."""
        view = light_view(camera, look, size, colouring, len(vertices))
        light = self._buffers(view.width, view.height)
        light.fill(0.0)
        splat(view, vertices.view(np.float32).reshape(len(vertices), -1), light)
        self._texture.set_data(light)
        return self._texture

    def show(self, light: np.ndarray):
        """The light texture holding `light` ((h, w, 4) float32)."""
        self._buffers(light.shape[1], light.shape[0])
        self._texture.set_data(np.ascontiguousarray(light, np.float32))
        return self._texture

    def release(self) -> None:
        if self._texture is not None:
            self._texture.delete()
        self._light = self._texture = None
