"""The light of particles for one view, splatted on the host (numba): additive gaussian sprites
into a float (h, w, 4) image, row 0 at the bottom, the same sprites as shaders/particles.{vert,
frag} and kernels/render_splat.cu: a gaussian exp(-4 r^2) over the pixels whose centres lie in
the point's square, the same colours and light per particle.

Projections (render/projections/): each particle's position is projected on its own (points
have no edges, so a per-point projection is exact for sprites) through one or two eyes, each a
row of EYE_FLOATS: a 4x4 matrix (row major, for column vectors), its viewport (x, y, width,
height in pixels, y up) and one number. PERSPECTIVE: the matrix is the mvp. FISHEYE (the
azimuthal equidistant dome master): the matrix takes a point into the dome's frame (right,
image up, axis), the number is half the field of view in radians; the axis lands at the
viewport's centre and half the field of view on the inscribed circle. EQUIRECT (and
omni-directional stereo): the matrix takes a point into (right, world up, forward) from the
eye, the number is the signed radius of the eye circle (ODS: + left eye, - right; 0 mono).
A sprite whose particle lies beyond the field of view is dropped (clipped); in EQUIRECT a
sprite crossing the seam at +-180 degrees is drawn on both sides (duplicated). A sprite never
lights pixels outside its eye's viewport.

`LightView` is everything a splat needs (matrices, sizes, the colouring and its tables), small
and picklable: the renderer makes it (render/host_splat.py), and a parallel engine broadcasts it
so that each process splats its own particles; the images then add up.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from galaxyview.numba_setup import kernel

MAX_RADIUS = 32  # as kernels/render_splat.cu: at most 2 * MAX_RADIUS + 1 pixels a side
PERSPECTIVE, FISHEYE, EQUIRECT = 0, 1, 2  # projection codes (shaders, render_splat.cu alike)
EYE_FLOATS = 21  # matrix (16), viewport (4), the projection's number (1)
NEEDS_POTENTIAL = ("potential", "energy")


@dataclass(frozen=True)
class LightView:
    """One frame's view: width x height pixels, mvp (4, 4) float32 for column vectors, the
    sprite size in pixels, the light per particle (gain), the colour mode (its name, code and
    the map's ends lo, hi), the colour map lut (L, 3) and the colour tables (components (8, 4):
    RGB and weight; galaxies (8, 3); populations (8, 3): RGB per component code, None: black)."""

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
    projection: int = PERSPECTIVE
    eyes: np.ndarray | None = None  # (E, EYE_FLOATS); None: one perspective eye, mvp, full frame
    populations: np.ndarray | None = None

    def population_rows(self) -> np.ndarray:
        """(8, 3) float32: the colour of each component code's stars (mode 'population')."""
        if self.populations is None:
            return np.zeros((8, 3), np.float32)
        return np.asarray(self.populations, np.float32).reshape(8, 3)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.height, self.width, 4

    def eye_rows(self) -> np.ndarray:
        """(E, EYE_FLOATS) float32: the eyes the particles are projected through."""
        if self.eyes is not None:
            return np.asarray(self.eyes, np.float32).reshape(-1, EYE_FLOATS)
        return eye_row(self.mvp, (0, 0, self.width, self.height))[None]


def eye_row(matrix, viewport, number: float = 0.0) -> np.ndarray:
    """(EYE_FLOATS,) float32: one eye's matrix (4, 4), viewport (x, y, w, h) and number."""
    row = np.zeros(EYE_FLOATS, np.float32)
    row[:16] = np.asarray(matrix, np.float32).ravel()
    row[16:20] = viewport
    row[20] = number
    return row


def particle_values(mode: str, pos, vel, mass, galaxy, pot=None) -> np.ndarray:
    """(N,) float32 value of each particle for colour `mode` (not 'density', which needs the
    tree: render/colour.py); the speed for 'component' and 'population', which do not use it."""
    if mode == "galaxy":
        return np.asarray(galaxy, np.float32)
    if mode == "mass":
        return np.log10(np.maximum(mass, 1e-30)).astype(np.float32)
    if mode in ("vz", "z"):
        return np.array((vel if mode == "vz" else pos)[:, 2], np.float32)
    v2 = np.einsum("ij,ij->i", vel, vel)
    if mode in ("speed", "component", "population"):
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
    _splat(np.ascontiguousarray(points, np.float32), int(view.projection), view.eye_rows(),
           np.asarray(view.components, np.float32), np.asarray(view.galaxies, np.float32),
           view.population_rows(), np.asarray(view.lut, np.float32),
           np.float32(view.point_size), np.float32(view.gain),
           int(view.code), np.float32(view.lo), np.float32(view.hi), light)
    return light


def place(projection: int, eye: np.ndarray, point) -> tuple[float, float] | None:
    """Where the splat puts a particle at `point` (3 numbers) through `eye` (an eye row):
    (x, y) in pixels of the whole image, y up (pixel centres at half-integers), or None where
    it is dropped."""
    eye = np.asarray(eye, np.float32)
    x, y, z = (np.float32(v) for v in point)
    ok, xw, yw = _place(int(projection), eye, x, y, z)
    return (float(eye[16] + xw), float(eye[17] + yw)) if ok else None


@kernel()
def _place(projection, e, x, y, z):
    """(kept, x, y): the particle at x, y, z in pixels of eye e's viewport, y up."""
    cx = e[0] * x + e[1] * y + e[2] * z + e[3]
    cy = e[4] * x + e[5] * y + e[6] * z + e[7]
    cz = e[8] * x + e[9] * y + e[10] * z + e[11]
    vw, vh = e[18], e[19]
    if projection == PERSPECTIVE:
        cw = e[12] * x + e[13] * y + e[14] * z + e[15]
        if not cw > 0 or abs(cx) > cw or abs(cy) > cw or abs(cz) > cw:
            return False, np.float32(0), np.float32(0)  # GL drops such points
        return (True, np.float32((cx / cw + np.float32(1)) * np.float32(0.5) * vw),
                np.float32((cy / cw + np.float32(1)) * np.float32(0.5) * vh))
    if projection == FISHEYE:  # (cx, cy, cz): right, image up, the dome's axis
        r = math.sqrt(cx * cx + cy * cy)
        theta = math.atan2(r, cz)
        if theta > e[20] or r + abs(cz) < np.float32(1e-30):
            return False, np.float32(0), np.float32(0)
        k = theta / e[20] * np.float32(0.5) * min(vw, vh) / max(r, np.float32(1e-30))
        return True, np.float32(0.5 * vw + cx * k), np.float32(0.5 * vh + cy * k)
    # EQUIRECT: (cx, cy, cz): right, up, forward; e[20] the eye circle's signed radius
    rho2 = cx * cx + cz * cz
    if (e[20] != 0 and rho2 <= e[20] * e[20] * np.float32(1.0001)) or (
            rho2 + cy * cy < np.float32(1e-30)):  # inside the eye circle, or at the eye
        return False, np.float32(0), np.float32(0)
    rho = math.sqrt(rho2)
    lon = math.atan2(cx, cz) + math.asin(e[20] / rho)
    if lon > math.pi:
        lon -= 2 * math.pi
    elif lon < -math.pi:
        lon += 2 * math.pi
    lat = math.atan2(cy, math.sqrt(rho2 - e[20] * e[20]))
    return (True, np.float32((0.5 + lon / (2 * math.pi)) * vw),
            np.float32((0.5 + lat / math.pi) * vh))


def particle_points(pos, component, value) -> np.ndarray:
    """(N, 5) float32 splat input from particle arrays."""
    points = np.empty((len(pos), 5), np.float32)
    points[:, :3] = pos
    points[:, 3] = component
    points[:, 4] = value
    return points


@kernel()
def _splat(vertices, projection, eyes, components, galaxies, populations, lut, point_size, gain,
           mode, lo, hi, light):
    """Add the light of `vertices` (N, >= 5 float32: x y z, component, value, ...) into light
    (h, w, 4) float32, row 0 at the bottom, through each eye of `eyes` (E, EYE_FLOATS)."""
    for i in range(vertices.shape[0]):
        x, y, z = vertices[i, 0], vertices[i, 1], vertices[i, 2]
        code = min(max(int(vertices[i, 3] + np.float32(0.5)), 0), 7)
        size = np.float32(2.5) * point_size if code == 3 else point_size
        rgb = components[code]
        if mode == 1:
            rgb = galaxies[int(max(vertices[i, 4], np.float32(0)) + np.float32(0.5)) & 7]
        elif mode == 2:
            t = min(max((vertices[i, 4] - lo) / (hi - lo), np.float32(0)), np.float32(1))
            rgb = lut[int(t * np.float32(lut.shape[0] - 1) + np.float32(0.5))]
        elif mode == 3:
            rgb = populations[code]
        s = components[code, 3] * gain * np.float32(9) / max(size * size, np.float32(1))
        half = np.float32(0.5) * size
        for k in range(eyes.shape[0]):
            e = eyes[k]
            kept, xw, yw = _place(projection, e, x, y, z)
            if not kept:
                continue
            for shift in range(-1, 2):  # EQUIRECT: the copy across the seam, where it crosses
                if shift != 0 and (projection != EQUIRECT
                                   or not (xw - half < 0 if shift == 1 else xw + half > e[18])):
                    continue
                _sprite(light, rgb, s, half, e[16] + xw + shift * e[18], e[17] + yw,
                        int(e[16]), int(e[17]), int(e[16] + e[18]) - 1, int(e[17] + e[19]) - 1)


@kernel(inline="always")
def _sprite(light, rgb, s, half, xw, yw, vx0, vy0, vx1, vy1):
    """One sprite centred at pixel (xw, yw), within the viewport's pixels vx0..vx1, vy0..vy1."""
    inv = np.float32(1) / half
    # pixels whose centre lies in the point's square, as GL rasterises points
    x0 = max(int(math.ceil(xw - half - np.float32(0.5))), vx0)
    x1 = min(int(math.floor(xw + half - np.float32(0.5))), vx1, x0 + 2 * MAX_RADIUS)
    y0 = max(int(math.ceil(yw - half - np.float32(0.5))), vy0)
    y1 = min(int(math.floor(yw + half - np.float32(0.5))), vy1, y0 + 2 * MAX_RADIUS)
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
