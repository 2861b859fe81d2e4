"""How particles look: sprite size, exposure, colouring, tone mapping, bloom and the octree overlay.

The one definition of the colours the three draw paths use (GL sprites in
shaders/particles.vert, the host splat in light/kernel.py, the CUDA splat in
kernels/render_splat.cu): per-component colours and weights, the stellar population colours,
the galaxy palette, and colour maps from vispy.color sampled into LUT_SIZE entries
(colour_lut)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from galaxyview.errors import ParameterError
from galaxyview.light.device import LUT_SIZE  # render_splat.cu's colour map entries
from galaxyview.model.params import TREE_MAX_LEVEL as MAX_TREE_LEVEL
from galaxyview.model.state import Component

# by component colour; by galaxy of origin; by stellar population; the rest through the map
COLOUR_MODES = ("component", "galaxy", "population", "speed", "potential", "energy", "density",
                "mass", "vz", "z")
COLOUR_MAPS = ("viridis", "inferno", "magma", "fire", "ice", "coolwarm", "cubehelix", "hot")
# galaxies of origin 0..7 (more wrap around): distinct hues of even brightness
GALAXY_COLOURS = ((0.35, 0.65, 1.0), (1.0, 0.55, 0.25), (0.45, 0.95, 0.45), (1.0, 0.4, 0.7),
                  (0.95, 0.9, 0.35), (0.6, 0.45, 1.0), (0.3, 0.95, 0.9), (0.9, 0.9, 0.9))
TONE_MAPS = ("exp", "reinhard", "linear")  # exp: 1 - exp(-x); linear: clipped

# Per component: linear RGB and a brightness weight (dark matter halo faint, black hole bright).
COMPONENT_COLOURS = {
    Component.DISK: (0.55, 0.70, 1.00, 1.0),
    Component.BULGE: (1.00, 0.78, 0.45, 1.0),
    Component.HALO: (0.45, 0.30, 0.75, 0.06),
    Component.BLACK_HOLE: (1.00, 1.00, 1.00, 40.0),
    Component.SATELLITE: (1.00, 0.45, 0.35, 1.0),
    Component.STAR: (1.00, 0.92, 0.80, 1.0),
}
# Per component, the colour of its stars (linear RGB; the weights are COMPONENT_COLOURS'): the
# bulge's old K and G giants orange-yellow, the disk's young O, B and A stars blue-white, a
# satellite's old population yellow-orange, a star cluster's mixed one (Sun-like) pale yellow;
# the dark halo as in the component colours (faint).
POPULATION_COLOURS = {
    Component.DISK: (0.62, 0.76, 1.00),
    Component.BULGE: (1.00, 0.66, 0.32),
    Component.HALO: (0.45, 0.30, 0.75),
    Component.BLACK_HOLE: (1.00, 1.00, 1.00),
    Component.SATELLITE: (1.00, 0.76, 0.45),
    Component.STAR: (1.00, 0.86, 0.66),
}
BY_COMPONENT = ("component", "population")  # modes coloured by the component code alone


@dataclass
class Look:
    """Display settings of the particle renderer; change fields freely between frames.

    point_size: sprite diameter in pixels (the gaussian profile fades to the edge);
    exposure: multiplies the accumulated light before tone mapping;
    colour_mode: 'component' (disk, bulge, halo, black hole, satellite), 'galaxy' (of origin),
    'population' (the colour of each component's stars: old bulge warm, young disk
    blue-white, dark halo faint), or through colour_map: 'speed', 'potential', 'energy'
    (specific binding energy v^2/2 + phi), 'density' (log10 of the local density from the
    tree, model/density.py) or 'mass' (log10 of the particle mass: star clusters with an IMF);
    colour_map: a vispy.color map name (COLOUR_MAPS);
    value_range: (lo, hi) at the ends of the colour map (None: from the values when the mode
    is chosen, render/colour.py auto_range);
    tone_map: 'exp', 'reinhard' or 'linear' (exp and reinhard keep dense cores from burning out);
    boxes: draw the boxes of the engine's current tree, levels box_levels[0]..box_levels[1];
    'vz' and 'z': vertical velocity and height (rings);
    spheres: draw particles as depth-tested shaded spheres at their radius (ring scenes), not
    as light; ghosts: with spheres, also the periodic images (the renderer's ghost_offsets);
    sheet_box: (Lx, Ly) of a ring's box, outlined with the spheres;
    bloom: the glow of the brightest light (render/bloom.py), the fraction 0..1 of the light
    above the tone map's knee moved into a gaussian around it (0: off, the frame untouched);
    bloom_radius: the gaussian's sigma in pixels of a 1080-line frame (scaled with the frame).
    """

    point_size: float = 3.0
    exposure: float = 1.0
    colour_mode: str = "component"
    tone_map: str = "exp"
    boxes: bool = False
    box_levels: tuple = (0, 4)
    colour_map: str = "viridis"
    value_range: tuple | None = None
    background: tuple = (0.0, 0.0, 0.015)
    spheres: bool = False
    ghosts: bool = False
    sheet_box: tuple | None = None  # (Lx, Ly): with spheres, the ring's box is outlined
    bloom: float = 0.0
    bloom_radius: float = 8.0

    def __post_init__(self):
        self.validate()

    def validate(self) -> "Look":
        if not 0.5 <= float(self.point_size) <= 64:
            raise ParameterError(f"point_size must be in [0.5, 64] pixels, got {self.point_size!r}")
        if not 0 < float(self.exposure) <= 1e4:
            raise ParameterError(f"exposure must be in (0, 1e4], got {self.exposure!r}")
        if self.colour_mode not in COLOUR_MODES:
            raise ParameterError(f"colour_mode must be one of {', '.join(COLOUR_MODES)}, "
                                 f"got {self.colour_mode!r}")
        if not 0 <= float(self.bloom) <= 1:
            raise ParameterError(f"bloom must be in [0, 1] (0: off), got {self.bloom!r}")
        if not 0.5 <= float(self.bloom_radius) <= 32:
            raise ParameterError(f"bloom_radius must be in [0.5, 32] pixels (of a 1080-line "
                                 f"frame), got {self.bloom_radius!r}")
        if self.tone_map not in TONE_MAPS:
            raise ParameterError(f"tone_map must be one of {', '.join(TONE_MAPS)}, "
                                 f"got {self.tone_map!r}")
        lo, hi = self.box_levels
        if not (0 <= int(lo) <= int(hi) <= MAX_TREE_LEVEL):
            raise ParameterError(f"box_levels must satisfy 0 <= lo <= hi <= {MAX_TREE_LEVEL}, "
                                 f"got {self.box_levels!r}")
        if self.colour_map not in COLOUR_MAPS:
            raise ParameterError(f"colour_map must be one of {', '.join(COLOUR_MAPS)}, "
                                 f"got {self.colour_map!r}")
        if self.sheet_box is not None:
            lx, ly = (float(v) for v in self.sheet_box)
            if not (np.isfinite(lx) and np.isfinite(ly) and lx > 0 and ly > 0):
                raise ParameterError(f"sheet_box must be (Lx, Ly) > 0, got {self.sheet_box!r}")
        if self.value_range is not None:
            lo, hi = (float(v) for v in self.value_range)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ParameterError(f"value_range must be finite (lo, hi) with lo < hi, got "
                                     f"{self.value_range!r}")
        return self

    def with_(self, **changes) -> "Look":
        return replace(self, **changes)


@lru_cache(maxsize=None)
def colour_lut(name: str) -> np.ndarray:
    """(LUT_SIZE, 3) float32 RGB of a vispy.color map, from its low end to its high end."""
    from vispy.color import get_colormap

    rgba = get_colormap(name).map(np.linspace(0.0, 1.0, LUT_SIZE)[:, None])
    lut = np.ascontiguousarray(np.asarray(rgba, np.float32)[:, :3])
    lut.setflags(write=False)
    return lut


def mode_code(mode: str) -> int:
    """How the shader and the splat kernels colour: 0 by component, 1 by galaxy (the vertex
    value is the galaxy index), 2 through the colour map (the vertex value, scaled by range),
    3 by stellar population (the component's POPULATION_COLOURS)."""
    return {"component": 0, "galaxy": 1, "population": 3}.get(mode, 2)


def table(colours: dict, fallback, width: int) -> np.ndarray:
    """(8, width) float32 rows of a per-component table for component codes 0..7 (codes
    without an entry take `fallback`'s)."""
    return np.array([colours.get(c, colours[fallback])[:width] for c in range(8)], np.float32)
