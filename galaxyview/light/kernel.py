"""The light of particles for one view, splatted on the host (numba): additive gaussian sprites
into a float (h, w, 4) image, row 0 at the bottom, the same sprites as shaders/particles.{vert,
frag} and kernels/render_splat.cu: a gaussian exp(-4 r^2) over the pixels whose centres lie in
the point's square, the same colours and light per particle.

`LightView` is everything a splat needs (matrices, sizes, the colouring and its tables), small
and picklable: the renderer makes it (render/host_splat.py), and a parallel engine broadcasts it
so that each process splats its own particles; the images then add up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

MAX_RADIUS = 32  # as kernels/render_splat.cu: at most 2 * MAX_RADIUS + 1 pixels a side
NEEDS_POTENTIAL = ("potential", "energy")


@dataclass(frozen=True)
class LightView:
    """One frame's view: width x height pixels, mvp (4, 4) float32 for column vectors, the
    sprite size in pixels, the light per particle (gain), the colour mode (its name, code and
    the map's ends lo, hi), the colour map lut (L, 3) and the colour tables (components (8, 4):
    RGB and weight; galaxies (8, 3))."""

    width: int
    height: int
    mvp: np.ndarray
    point_size: float
    gain: float
    mode: str
    code: int
    lo: float
    hi: float
    lut: np.ndarray
    components: np.ndarray
    galaxies: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.height, self.width, 4


def particle_values(mode: str, pos, vel, mass, galaxy, pot=None) -> np.ndarray:
    """(N,) float32 value of each particle for colour `mode` (not 'density', which needs the
    tree: render/colour.py); the speed for 'component', which does not use it."""
    if mode == "galaxy":
        return np.asarray(galaxy, np.float32)
    if mode == "mass":
        return np.log10(np.maximum(mass, 1e-30)).astype(np.float32)
    if mode in ("vz", "z"):
        return np.array((vel if mode == "vz" else pos)[:, 2], np.float32)
    v2 = np.einsum("ij,ij->i", vel, vel)
    if mode in ("speed", "component"):
        return np.sqrt(v2).astype(np.float32)
    if mode not in NEEDS_POTENTIAL:
        raise ValueError(f"colour mode {mode!r} has no per-particle value here")
    if pot is None:
        raise ValueError(f"colour mode {mode!r} needs the potential")
    if mode == "potential":
        return np.asarray(pot, np.float32)
    return (0.5 * v2 + pot).astype(np.float32)  # energy


def splat(view: LightView, points: np.ndarray, light: np.ndarray | None = None) -> np.ndarray:
    """Add the light of `points` ((N, >= 5) float32: x y z, component, value, ...) for `view`
    into `light` (view.shape float32; a new zero image when None); returns it."""
    if light is None:
        light = np.zeros(view.shape, np.float32)
    _splat(np.ascontiguousarray(points, np.float32), np.asarray(view.mvp, np.float32),
           np.asarray(view.components, np.float32), np.asarray(view.galaxies, np.float32),
           np.asarray(view.lut, np.float32), np.float32(view.point_size), np.float32(view.gain),
           int(view.code), np.float32(view.lo), np.float32(view.hi), light)
    return light


def particle_points(pos, component, value) -> np.ndarray:
    """(N, 5) float32 splat input from particle arrays."""
    points = np.empty((len(pos), 5), np.float32)
    points[:, :3] = pos
    points[:, 3] = component
    points[:, 4] = value
    return points


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
