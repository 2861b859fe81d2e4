"""The window's controls, one row each: widget, range, what it sets, settings key, shortcut.

The panel's widgets (app/panel.py), their wiring (app/control_wiring.py), the settings
(app/settings.py), the menus and Help > Shortcuts (app/shortcuts.py) and the table in
docs/viewer.md (`python -m galaxyview.app.control_table docs/viewer.md`) are all built from
CONTROLS; Help > Shortcuts and its table in the docs also list the window's other keys
(KEYS_FIRST, KEYS_LAST: app/shortcuts.py makes their menu items). No Qt here."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from galaxyview.model.params import THETA_MAX
from galaxyview.model.sheet import RESTITUTION_LAWS
from galaxyview.render.look import COLOUR_MAPS, COLOUR_MODES, MAX_TREE_LEVEL, TONE_MAPS, Look

KINDS = ("slider", "spin", "combo", "check")
GROUPS = ("physics", "ring", "run", "camera", "look")  # the panel's boxes (ring: ring scenes)
SETS = ("param", "sheet", "look", "window")  # Params, the ring's Sheet, Look, a window method
# where a control can act (off elsewhere); `sim` is the window's Simulation
CONDITIONS = {
    "simulating": lambda sim: sim.engine.frame_count is None,  # not a stored run played back
    "tree": lambda sim: sim.engine.gravity == "tree",
    "eta": lambda sim: sim.engine.uses_eta,  # the integrator's steps follow eta
}


@dataclass(frozen=True)
class Key:
    """A shortcut: a check toggles, a combo takes its next choice, a slider multiplies its
    value by `by` on a log scale (adds it on a linear one), a spin box adds `by`."""

    key: str  # as QKeySequence reads it
    text: str  # what it does: the menu item and Help > Shortcuts
    by: float = 1.0


@dataclass(frozen=True)
class Control:
    name: str  # the panel's attribute
    label: str
    kind: str  # KINDS
    group: str  # GROUPS
    sets: str  # SETS
    field: str  # the Params / Sheet / Look field, or the window method given the value
    range: tuple | None = None  # (lo, hi) of a slider or spin box
    default: object = None  # the value shown first (None: the Look's for a look field)
    decimals: int = 3  # slider
    log: bool = False  # slider on a log scale
    zero_at_min: bool = False  # a log slider's lowest position means 0
    step: int = 1  # spin box
    unit: str = ""
    choices: tuple = ()  # combo
    tooltip: str = ""
    setting: str | None = None  # QSettings key, kept between runs
    keys: tuple = ()  # Key, ...
    line: str | None = None  # placed on this named line of the panel's group
    applies: tuple = ()  # CONDITIONS keys: off where any is false

    def start(self, look: Look):
        """The value the widget shows before a scene opens."""
        return getattr(look, self.field) if self.default is None else self.default


_PARAM = ("simulating",)
_LOOK = Look()

CONTROLS: list[Control] = [
    Control("theta", "θ", "slider", "physics", "param", "theta", (0.05, THETA_MAX), 0.75,
            applies=(*_PARAM, "tree"),
            tooltip="Opening angle: smaller is more accurate and slower"),
    Control("dt", "dt", "slider", "physics", "param", "dt", (1e-5, 0.5), 1 / 64, decimals=6,
            log=True, unit="N-body (s for rings)", applies=_PARAM,
            tooltip="Time step (N-body units; seconds for ring scenes): the shared step, or the "
                    "largest one (dt_max) with individual time steps"),
    Control("eta", "η", "slider", "physics", "param", "eta", (1e-3, 1.0), 0.02, decimals=4,
            log=True, applies=(*_PARAM, "eta"),
            tooltip="Accuracy of individual time steps (leapfrog-hier, Hermite): smaller gives "
                    "smaller steps, more accurate and slower"),
    Control("eps", "ε", "slider", "physics", "param", "eps", (1e-4, 2.0), 0.05, decimals=4,
            log=True, zero_at_min=True, unit="N-body", applies=_PARAM,
            tooltip="Plummer softening length (N-body units)"),
    Control("accuracy", "Force error readout", "check", "physics", "window", "check_accuracy",
            default=True, setting="panel/accuracy",
            tooltip="Tree force error against direct summation on a random sample, live in "
                    "the HUD (a few times a second at most)"),
    Control("restitution", "Restitution", "combo", "ring", "sheet", "restitution",
            default=RESTITUTION_LAWS[0], choices=RESTITUTION_LAWS,
            tooltip="Normal coefficient of restitution: constant ε_n, or Bridges et al. "
                    "(1984): (v_n / v_c)^-0.234, at most 1"),
    Control("eps_n", "ε_n", "slider", "ring", "sheet", "eps_n", (0.0, 1.0), 0.5, decimals=2,
            tooltip="The constant coefficient of restitution"),
    Control("optical_depth", "Optical depth", "slider", "ring", "window", "set_optical_depth",
            (0.05, 2.0), 0.5, decimals=2,
            tooltip="Optical depth: the scene is built again with it"),
    Control("ghosts", "Ghost boxes", "check", "ring", "look", "ghosts", line="ring views",
            tooltip="Draw the 8 neighbouring images of the box too"),
    Control("steps_per_frame", "Steps per frame", "spin", "run", "window",
            "set_steps_per_frame", (1, 1000), 1,
            tooltip="Engine steps between drawn frames (the scene's CPU pace, or 1)"),
    Control("fly", "Fly", "check", "camera", "window", "set_fly_mode", default=False,
            setting="panel/fly", line="camera", keys=(Key("G", "fly mode on / off"),),
            tooltip="Fly mode: drag looks around, W/A/S/D/Q/E move (G)"),
    Control("auto_orbit", "Turn", "check", "camera", "window", "set_auto_orbit", default=False,
            setting="panel/auto_orbit", line="camera",
            keys=(Key("T", "turn the camera slowly"),),
            tooltip="Turn slowly about the vertical axis (T)"),
    Control("point_size", "Point size", "slider", "look", "look", "point_size", (0.5, 16.0),
            decimals=1, unit="px", setting="look/point_size",
            tooltip="Sprite diameter in pixels"),
    Control("exposure", "Exposure", "slider", "look", "look", "exposure", (0.01, 100.0),
            decimals=2, log=True, setting="look/exposure",
            keys=(Key("[", "exposure down", 1 / 1.25), Key("]", "exposure up", 1.25)),
            tooltip="Multiplies the light before tone mapping ([ and ])"),
    Control("colour", "Colour by", "combo", "look", "look", "colour_mode", choices=COLOUR_MODES,
            setting="look/colour_mode",
            keys=(Key("C", "colour by the next property (component, galaxy, speed, ...)"),),
            tooltip="Colour by component, galaxy of origin, speed, potential, binding energy "
                    "or local density (C: the next one)"),
    Control("colour_map", "Colour map", "combo", "look", "look", "colour_map",
            choices=COLOUR_MAPS, setting="look/colour_map",
            tooltip="Colour map (vispy.color) for speed, potential, energy, density and mass"),
    Control("tone_map", "Tone map", "combo", "look", "look", "tone_map", choices=TONE_MAPS,
            setting="look/tone_map",
            tooltip="exp: 1 - e^-x, reinhard: x/(1+x), linear: clipped"),
    Control("bloom", "Bloom", "slider", "look", "look", "bloom", (0.0, 1.0), decimals=2,
            setting="look/bloom",
            tooltip="Glow around the brightest light, for shows (0: off)"),
    Control("boxes", "Tree boxes", "check", "look", "look", "boxes", setting="look/boxes",
            line="boxes", keys=(Key("B", "tree boxes on / off"),), tooltip="Octree overlay (B)"),
    Control("box_lo", "levels", "spin", "look", "window", "set_box_lo", (0, MAX_TREE_LEVEL),
            _LOOK.box_levels[0], line="boxes", tooltip="The tree boxes' first level"),
    Control("box_hi", "to", "spin", "look", "window", "set_box_hi", (0, MAX_TREE_LEVEL),
            _LOOK.box_levels[1], line="boxes", tooltip="The tree boxes' last level"),
]


KEYS_FIRST = [  # the window's own keys, listed before the table's
    ("Space", "play / pause"), ("N", "one step"), ("F", "fit the camera to the particles"),
    ("K", "add a camera keyframe"), ("P", "camera follows the keyframe path on / off"),
]
KEYS_LAST = [  # ... and after them
    ("Arrows", "orbit (canvas focused)"), ("+  -", "zoom (canvas focused)"),
    ("W A S D Q E", "fly forward, left, back, right, down, up (fly mode)"),
    ("Mouse", "drag: orbit · right or shift drag: pan · wheel: zoom"),
    ("Ctrl+R", "reset to the initial state"), ("Ctrl+O", "open a scene or snapshot"),
    ("Ctrl+M", "record a movie / stop recording"), ("Ctrl+Shift+S", "save a screenshot"),
    ("F11", "full screen on / off"), ("Ctrl+=  Ctrl+-", "larger / smaller text (HUD, captions)"),
    ("F1", "the shortcut list"), ("Ctrl+Q", "quit"),
]


def shortcuts(table=None) -> list:
    """(key, what it does) of the window: Help > Shortcuts."""
    rows = CONTROLS if table is None else table
    return KEYS_FIRST + [(k.key, k.text) for row in rows for k in row.keys] + KEYS_LAST


def control(name: str, table=None) -> Control:
    return next(c for c in (CONTROLS if table is None else table) if c.name == name)


def check(table: list[Control]) -> None:
    """Raise ValueError on a row the panel could not build (names, kinds, ranges, a key
    already taken)."""
    names = [c.name for c in table]
    if len(set(names)) != len(names):
        raise ValueError(f"control names repeat: {names}")
    taken = {key for keys, _ in KEYS_FIRST + KEYS_LAST for key in keys.split()}
    for key in (k.key for c in table for k in c.keys):
        if key in taken:
            raise ValueError(f"the key {key} is taken twice: choose another for its control")
        taken.add(key)
    for c in table:
        if c.kind not in KINDS or c.group not in GROUPS or c.sets not in SETS:
            raise ValueError(f"control {c.name}: kind, group or sets not one of {KINDS}, "
                             f"{GROUPS}, {SETS}")
        if c.kind in ("slider", "spin") and (c.range is None or not c.range[0] < c.range[1]):
            raise ValueError(f"control {c.name}: a {c.kind} needs a range (lo, hi), lo < hi")
        if c.kind == "combo" and not c.choices:
            raise ValueError(f"control {c.name}: a combo needs choices")
        if c.sets != "look" and c.default is None:
            raise ValueError(f"control {c.name}: a default value is needed (only a look "
                             "field's comes from the Look)")
        if not set(c.applies) <= set(CONDITIONS):
            raise ValueError(f"control {c.name}: applies must be among {tuple(CONDITIONS)}")


def markdown(table=None) -> str:
    """The docs' table of the controls (docs/viewer.md, between the MARKS)."""
    rows = ["| control | group | widget | range | unit | sets | settings key | key | where |",
            "|---|---|---|---|---|---|---|---|---|"]
    for c in CONTROLS if table is None else table:
        span = (f"{c.range[0]:g} – {c.range[1]:g}" + (" (log)" if c.log else "")
                if c.range else " ".join(c.choices))
        sets = f"{c.sets} `{c.field}`"
        keys = " ".join(k.key for k in c.keys)
        where = ", ".join((*c.applies, *(("ring scenes",) if c.group == "ring" else ())))
        rows.append(f"| {c.label} (`{c.name}`) | {c.group} | {c.kind} | {span} | {c.unit} | "
                    f"{sets} | {c.setting or ''} | {keys} | {where or 'all'} |")
    return "\n".join(rows) + "\n"


def shortcuts_markdown() -> str:
    rows = ["| key | action |", "|---|---|"]
    rows += [f"| {key} | {text} |" for key, text in shortcuts()]
    return "\n".join(rows) + "\n"


TOOL = "python -m galaxyview.app.control_table docs/viewer.md"
TABLES = {"controls": markdown, "shortcuts": shortcuts_markdown}  # docs/viewer.md's, made here


def with_table(text: str) -> str:
    """`text` (a doc page) with the TABLES between their marks made again."""
    for name, make in TABLES.items():
        begin, end = f"<!-- {name} table: {TOOL} -->\n", f"<!-- end of the {name} table -->\n"
        head, found, rest = text.partition(begin)
        _, found_end, tail = rest.partition(end)
        if not (found and found_end):
            raise ValueError(f"the page has no {name} table marks")
        text = head + begin + make() + end + tail
    return text


def main(argv=None) -> None:
    """Print the controls table, or make the tables of the page named again."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(markdown(), end="")
        return
    page = Path(args[0])
    page.write_text(with_table(page.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
