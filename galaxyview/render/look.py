"""How particles look: sprite size, exposure, colouring, tone mapping and the octree overlay."""
from __future__ import annotations

from dataclasses import dataclass, replace

from galaxyview.errors import ParameterError
from galaxyview.model.params import TREE_MAX_LEVEL as MAX_TREE_LEVEL
from galaxyview.model.state import Component

COLOUR_MODES = ("component", "speed")
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


@dataclass
class Look:
    """Display settings of the particle renderer; change fields freely between frames.

    point_size: sprite diameter in pixels (the gaussian profile fades to the edge);
    exposure: multiplies the accumulated light before tone mapping;
    colour_mode: 'component' (disk, bulge, halo, black hole, satellite) or 'speed';
    tone_map: 'exp', 'reinhard' or 'linear' (exp and reinhard keep dense cores from burning out);
    boxes: draw the boxes of the engine's current tree, levels box_levels[0]..box_levels[1];
    speed_max: speed at the top of the speed colour map (None: the 99th percentile at attach).
    """

    point_size: float = 3.0
    exposure: float = 1.0
    colour_mode: str = "component"
    tone_map: str = "exp"
    boxes: bool = False
    box_levels: tuple = (0, 4)
    speed_max: float | None = None
    background: tuple = (0.0, 0.0, 0.015)

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
        if self.tone_map not in TONE_MAPS:
            raise ParameterError(f"tone_map must be one of {', '.join(TONE_MAPS)}, "
                                 f"got {self.tone_map!r}")
        lo, hi = self.box_levels
        if not (0 <= int(lo) <= int(hi) <= MAX_TREE_LEVEL):
            raise ParameterError(f"box_levels must satisfy 0 <= lo <= hi <= {MAX_TREE_LEVEL}, "
                                 f"got {self.box_levels!r}")
        if self.speed_max is not None and not float(self.speed_max) > 0:
            raise ParameterError(f"speed_max must be > 0 or None, got {self.speed_max!r}")
        return self

    def with_(self, **changes) -> "Look":
        return replace(self, **changes)
