"""What the show and `record` write over the picture besides the caption: a scale bar and
the galaxies' names, as geometry (pixels, text); movie/annotations.py draws them into frames.

The scale bar: a round length (1, 2 or 5 x 10^k of the scene's unit: kpc, or pc below 1 kpc;
metres or km for a scene in SI units; N-body lengths without units) about a fifth of the frame
wide, at the camera's focus distance (its centre): the length there across the view, the
scale of what lies at the centre's depth; nearer things look bigger. Only the perspective
projection has one scale across the frame: the fisheye, equirect, stereo and ods frames get
no bar (None).

The names: each galaxy's centre of mass (its luminous particles, not the dark halo), placed
through the camera's projection as the splats place a particle (light/kernel.py `place`), in
each eye of a stereo frame; one behind the camera or out of the field of view gets none.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from galaxyview.light.kernel import place
from galaxyview.model.state import Component, Selection
from galaxyview.model.units import UnitSystem

BAR_FRACTION = 0.2  # the bar's length at most, of the frame's width
LUMINOUS = tuple(int(c) for c in Component if c != Component.HALO)


@dataclass(frozen=True)
class ScaleBar:
    length: float  # in `unit`
    unit: str
    pixels: float  # the bar's length in the frame

    @property
    def text(self) -> str:
        return f"{self.length:g} {self.unit}".strip()


@dataclass(frozen=True)
class Label:
    text: str
    x: float  # the galaxy's centre in the frame, px, x right
    y: float  # ... y down (top row 0), as the frames are read


def length_units(units: UnitSystem | None, si: bool) -> list[tuple[float, str]]:
    """(how many of the unit one scene length unit is, its name), largest unit first: the bar
    takes the first in which its length is at least 1."""
    if units is not None:
        return [(units.length_kpc, "kpc"), (units.length_kpc * 1e3, "pc")]
    if si:
        return [(1e-3, "km"), (1.0, "m")]
    return [(1.0, "(N-body length)")]


def round_length(most: float) -> float:
    """The largest of 1, 2, 5 x 10^k not above `most` (> 0)."""
    k = math.floor(math.log10(most))
    for m in (5, 2, 1):
        if m * 10.0 ** k <= most * (1 + 1e-9):
            return m * 10.0 ** k
    return 10.0 ** k


def pixels_per_length(camera, size) -> float | None:
    """Pixels one scene length unit spans at the camera's focus distance (perspective), or
    None (the other projections have no one scale)."""
    if camera.projection.name != "perspective":
        return None
    h = int(size[1])
    return 0.5 * h / (camera.distance * math.tan(math.radians(camera.fov_deg) / 2))


def scale_bar(camera, size, units: UnitSystem | None = None, si: bool = False,
              fraction: float = BAR_FRACTION) -> ScaleBar | None:
    """The scale bar of this view for a frame of `size` (w, h), or None (no one scale)."""
    per_length = pixels_per_length(camera, size)
    if per_length is None or not per_length > 0:
        return None
    most = fraction * int(size[0]) / per_length  # scene lengths
    choices = length_units(units, si)
    for amount, unit in choices:
        if most * amount >= 1 or (amount, unit) == choices[-1]:
            length = round_length(most * amount)
            return ScaleBar(length, unit, length / amount * per_length)


def galaxy_selections(galaxies) -> list[tuple[Selection, Selection]]:
    """For galaxy_centres: each galaxy index's luminous particles, and all of its particles.
    Made once and passed again, so that an engine keeps each mask (GPU: on the device)."""
    return [(Selection(int(g), LUMINOUS), Selection(int(g))) for g in galaxies]


def galaxy_centres(engine, selections) -> list[np.ndarray]:
    """The centre of mass of each galaxy's luminous particles (all of its particles where it
    has no others), from galaxy_selections; the engine must be idle."""
    out = []
    for luminous, every in selections:
        centre = engine.centre_of_mass(luminous)
        if not np.all(np.isfinite(centre)):
            centre = engine.centre_of_mass(every)
        out.append(np.asarray(centre, np.float64))
    return out


def galaxy_labels(camera, size, centres, names) -> list[Label]:
    """A Label at each centre (scene coordinates) the camera's projection shows, in each eye."""
    w, h = int(size[0]), int(size[1])
    projection, eyes = camera.eyes((w, h))
    labels = []
    for centre, name in zip(centres, names):
        for eye in eyes:
            at = place(projection, eye, centre)
            if at is not None:
                labels.append(Label(str(name), at[0], h - at[1]))
    return labels
