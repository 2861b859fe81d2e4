"""A simulation: initial state from a scene, snapshot or archive, parameters, and the engine
running it; the object the Python API (`galaxyview.open`) hands out.

Shared by the command line, the viewer and the movie recorder, so they all pick scenes, particle
counts, parameters and engines the same way.
"""
from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from galaxyview.engines import create_engine, module_kind, modules, resolve_backend
from galaxyview.engines.base import Energies, Engine
from galaxyview.engines.cpu.threads import count as cpu_threads
from galaxyview.engines.playback import PlaybackEngine
from galaxyview.errors import EngineError, ParameterError, SceneError, SnapshotError
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import Snapshot, archive, export, open_source, params_of

INITIAL_SAMPLE = 1 << 18  # particles of an initial state made in parts kept on this host
PROGRESS_FROM = 1 << 20  # scenes of this many particles or more show their making (CLI, window)


SAVE_FORMATS = ("galaxyview", "tipsy", "gadget4")


def save_kind(path, format: str | None = None) -> str:
    """"archive" (.h5, .hdf5: a galaxyview snapshot), "tipsy" (.tipsy, .std, .bin) or, with
    format="gadget4", "gadget4" (.hdf5: snapshots/export.py) for `Simulation.save`;
    SnapshotError for a name that does not fit (checked before a run, not after)."""
    from galaxyview.model.tipsy import SUFFIXES

    suffix = Path(path).suffix.lower()
    if format not in (None, *SAVE_FORMATS):
        raise ParameterError(f"format must be one of {', '.join(SAVE_FORMATS)} (or None: by "
                             f"the file's name), got {format!r}")
    if format == "gadget4":
        if suffix not in export.SUFFIXES:
            raise SnapshotError(f"{path}: a Gadget-4 snapshot is an HDF5 file; give a name "
                                f"ending in .hdf5")
        return "gadget4"
    kind = "archive" if suffix in archive.SUFFIXES else "tipsy" if suffix in SUFFIXES else None
    if kind is None or (format is not None and (format == "tipsy") != (kind == "tipsy")):
        raise SnapshotError(f"{path}: give a name ending in {_save_suffixes()}")
    return kind


@dataclass(repr=False)
class Simulation:
    """A loaded engine and where its state came from. A context manager (closes the engine).

    step(n), run(until=t), positions, velocities, masses, time, energies(), params (assign a
    dict or Params: checked), save(path). Quantities are in N-body units (G = 1); `units` is
    the scene's physical unit system when it has one (`quantity` converts).

    `initial` is the initial state, or None where a distributed engine made it in parts on its
    processes (from `maker`: no whole copy on this host); `initial_sample` is the initial
    state or a sample of it spread over the system (for framing, its meta and time)."""

    name: str
    engine: Engine
    initial: ParticleState | None
    why: str  # why this engine was chosen, one line
    units: UnitSystem | None = None
    scene: object = None  # the Scene, when started from one
    snapshot: Snapshot | None = None  # the Snapshot, when started from a file
    backend: str = "cpu"
    maker: object = None  # the model/ics/parts.py PartMaker the engine made the particles from
    initial_sample: ParticleState | None = None
    closed: bool = field(default=False, init=False)  # close() was called: the engine is gone

    def __post_init__(self):
        if self.initial_sample is None:
            self.initial_sample = self.initial

    def __repr__(self) -> str:
        source = self.snapshot.source if self.snapshot is not None else self.name
        if self.closed:
            return f"<Simulation {source}: closed>"
        e = self.engine
        return (f"<Simulation {source}: N = {e.n}, {self.backend}, t = {e.time:g}, "
                f"{e.steps_done} steps>")

    def _live(self) -> Engine:
        """The engine; EngineError once the simulation is closed."""
        if self.closed:
            raise EngineError(f"the simulation of {self.name} is closed (close() or the end of "
                              f"its with block); open a new one with galaxyview.open")
        return self.engine

    # -- what the engine holds -----------------------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time, N-body units."""
        return self._live().time

    @property
    def time_myr(self) -> float | None:
        time = self._live().time
        return time * self.units.time_myr if self.units else None

    @property
    def n(self) -> int:
        return self._live().n

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) float32 positions now (a copy), N-body units."""
        return self._live().state().pos

    @property
    def velocities(self) -> np.ndarray:
        return self._live().state().vel

    @property
    def masses(self) -> np.ndarray:
        return self._live().state().mass

    def state(self) -> ParticleState:
        return self._live().state()

    def energies(self) -> Energies:
        """Kinetic, potential and total energy (N-body units)."""
        return self._live().energies()

    @property
    def params(self) -> Params:
        return self._live().params

    @params.setter
    def params(self, changes) -> None:
        """Assign a dict of theta, dt, eps (or a Params): checked now, ParameterError if bad."""
        engine = self._live()
        if isinstance(changes, Params):
            changes = {k: getattr(changes, k) for k in ("theta", "dt", "eps")}
        if not isinstance(changes, dict):
            raise ParameterError(f"params takes a dict of theta, dt, eps or a Params, got "
                                 f"{type(changes).__name__}")
        unknown = set(changes) - {"theta", "dt", "eps"}
        if unknown:
            raise ParameterError(f"only theta, dt and eps change while running; not "
                                 f"{', '.join(sorted(unknown))}")
        engine.set_params(**changes)

    # -- work ----------------------------------------------------------------------------------
    def step(self, n: int = 1) -> "Simulation":
        """Advance n steps (a whole number >= 0)."""
        self._live().step(whole_count(n, "n", minimum=0))
        return self

    def run(self, until: float) -> "Simulation":
        """Advance whole steps until the time reaches `until` (N-body units, or a quantity
        with time units when the scene has physical units)."""
        engine = self._live()
        target = self._nbody(until, "time", "until")
        if not math.isfinite(target):
            raise ParameterError(f"until must be a finite time, got {until!r}")
        remaining = target - engine.time
        if remaining > 0:
            engine.step(math.ceil(remaining / engine.params.dt - 1e-9))
        return self

    def reset(self) -> None:
        """Back to the initial state (made anew in parts where it was)."""
        engine = self._live()
        if self.maker is not None:
            engine.load_made(self.maker)
        else:
            engine.load(self.initial)

    # -- units ---------------------------------------------------------------------------------
    def quantity(self, what: str, library: str = "astropy"):
        """positions (kpc), velocities (km/s), masses (Msun) or time (Myr) as an astropy or unyt
        quantity; needs a scene with physical units and the library installed."""
        scales = {"positions": "length_kpc", "velocities": "velocity_kms",
                  "masses": "mass_msun", "time": "time_myr"}
        names = {"positions": "kpc", "velocities": "km/s", "masses": "Msun", "time": "Myr"}
        if what not in scales:
            raise ParameterError(f"quantity of {what!r}? choose one of {', '.join(scales)}")
        self._live()
        if self.units is None:
            raise ParameterError(f"{self.name} is in N-body units without a physical scale; "
                                 "its scene has no [units]")
        value = self.time if what == "time" else getattr(self, what)
        value = np.asarray(value, np.float64) * getattr(self.units, scales[what])
        return _quantity(value, names[what], library)

    def _nbody(self, value, kind: str, name: str) -> float:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        unit = getattr(value, "unit", None) or getattr(value, "units", None)
        if unit is not None and self.units is not None and kind == "time":
            myr = float(_quantity_in(value, "Myr"))
            return myr / self.units.time_myr
        raise ParameterError(f"{name} must be a number (N-body units) or, for a scene with "
                             f"physical units, a time quantity; got {value!r}")

    # -- files ---------------------------------------------------------------------------------
    def save(self, path, overwrite: bool = False, format: str | None = None) -> Path:
        """The current state: a galaxyview snapshot (.h5, .hdf5: exact, restartable bit for
        bit) or Tipsy (.tipsy, .std, .bin, with its companion files); format="gadget4": a
        Gadget-4 HDF5 snapshot (.hdf5) that pynbody and yt open. An existing file is replaced
        only with overwrite=True."""
        if not isinstance(path, (str, os.PathLike)):
            raise ParameterError(f"path must be a file path (a str or pathlib.Path) ending in "
                                 f"{_save_suffixes()}, got {path!r}")
        overwrite = flag(overwrite, "overwrite")
        engine = self._live()
        path = Path(path).expanduser()
        kind = save_kind(path, format)
        if kind == "archive":
            return archive.save_exact(path, engine.exact_state(), self.run_info(), overwrite)
        if kind == "gadget4":
            state = engine.state()
            if self.initial_sample is not None and "galaxies" not in state.meta:
                state.meta["galaxies"] = self.initial_sample.meta.get("galaxies")
            return export.write_gadget4(path, state, self.units, overwrite)
        from galaxyview.model.tipsy import save_state

        _, pot = engine.accelerations()
        return save_state(path, engine.state(), engine.params, pot, units=self.units,
                          overwrite=overwrite)

    def run_info(self) -> archive.RunInfo:
        toml = None
        if self.scene is not None:
            try:
                toml = Path(self.scene.source).read_text(encoding="utf-8")
            except OSError:
                toml = None
        elif self.snapshot is not None and self.snapshot.run is not None:
            toml = self.snapshot.run.scene_toml
        return archive.RunInfo(self.name, self.engine.name, self.engine.device_name,
                               self.engine.gravity, self.units, toml)

    def close(self) -> None:
        """Free the engine and the snapshot file; a second call does nothing."""
        if self.closed:
            return
        self.closed = True
        try:
            self.engine.close()
        finally:
            if self.snapshot is not None:
                self.snapshot.close()

    def __enter__(self) -> "Simulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def whole_count(value, name: str, minimum: int = 1) -> int:
    """An int (or a float with a whole value such as 1e5) >= minimum; ParameterError else."""
    ok = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer())
    if isinstance(value, bool) or not ok or value < minimum:
        raise ParameterError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def flag(value, name: str, allowed: str = "True or False") -> bool:
    """A bool (numpy's too); ParameterError for anything else: 'x', 1 and None are no flags."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ParameterError(f"{name} must be {allowed}, got {value!r}")


def _save_suffixes() -> str:
    from galaxyview.model.tipsy import SUFFIXES

    return f"{', '.join(archive.SUFFIXES)} (a galaxyview snapshot) or {', '.join(SUFFIXES)} (Tipsy)"


def _quantity(value, unit: str, library: str):
    if library == "astropy":
        try:
            import astropy.units as u
        except ImportError:
            raise ParameterError("astropy quantities need astropy: pip install astropy") from None
        return value * u.Unit(unit.replace("Msun", "solMass"))
    if library == "unyt":
        try:
            import unyt
        except ImportError:
            raise ParameterError("unyt quantities need unyt: pip install unyt") from None
        return unyt.unyt_array(value, unit)
    raise ParameterError(f"library must be 'astropy' or 'unyt', got {library!r}")


def _quantity_in(value, unit: str) -> float:
    if hasattr(value, "to_value"):  # astropy
        return float(value.to_value(unit))
    return float(value.to(unit).value)  # unyt


def open_simulation(source, backend: str = "auto", n: int | None = None,
                    theta: float | None = None, dt: float | None = None,
                    eps: float | None = None, gravity: str | None = None, device: int = 0,
                    integrator: str | None = None, boundary: str | None = None,
                    collision: str | None = None, index: int | None = None,
                    playback: bool | None = None, progress=None) -> Simulation:
    """Load `source` (a scene name, a .toml file, a snapshot or archive), pick the engine
    and load it.

    The scene's default particle count depends on the engine, so the backend is resolved first.
    A snapshot's own parameters (dt, theta, eps, modules) apply unless overridden; a galaxyview
    snapshot restarts exactly (Engine.load_exact). An archive of several snapshots plays back
    (no simulation) unless `playback=False` or an `index` is given: then its snapshot `index`
    (default the last) is the start. integrator, boundary, collision: physics modules by name.
    A distributed engine makes a scene's particles in parts where they live (Simulation.maker).
    progress(k, n): k more of a scene's n particles made here (one process).
    """
    kind, why = resolve_backend(backend, device)
    scene, snap = open_source(source, n, index)
    overrides = dict(theta=theta, dt=dt, eps=eps, integrator=integrator, boundary=boundary,
                     collision=collision)
    try:
        if snap is not None and snap.archive is not None and playback is not False \
                and index is None:
            return _playback(snap, overrides, why)
        maker = scene.maker(n, kind) if scene is not None else None
        state = snap.state if snap is not None else scene.build(n, kind) if maker is None \
            else None  # made once the engine says where
        meta = state.meta if state is not None else maker.meta
        name = scene.name if scene else str(meta.get("scene") or Path(source).stem)
        base = scene.params if scene else params_of(snap)
        if meta.get("sheet") is not None and base.sheet is None:
            base = base.with_(sheet=meta["sheet"])  # a ring model's box follows its N
        units = scene.units if scene else snap.units
        params = base.with_(**overrides)
        _check_modules(params, module_kind(kind), scene, overrides)
        engine, named = create_engine(kind, params, gravity=gravity, device=device)
    except BaseException:
        if snap is not None:
            snap.close()
        raise
    why = named if kind == "gpu" else why  # the GPU's name, or why the CPU runs
    try:
        if snap is not None and snap.exact is not None:
            engine.load_exact(snap.exact)
        elif state is None and engine.distributed:  # each process makes its share
            engine.load_made(maker)
        else:
            if state is None:
                report = (lambda k: progress(k, maker.n)) if progress else None
                state = maker.whole(cpu_threads(), report)
            engine.load(state)
        sample = state if state is not None else engine.sample_state(INITIAL_SAMPLE)[1]
    except BaseException:
        engine.close()
        if snap is not None:
            snap.close()
        raise
    made = maker if state is None else None
    return Simulation(name, engine, state, why, units, scene, snap, kind, made, sample)


def _playback(snap: Snapshot, overrides: dict, why: str) -> Simulation:
    given = [k for k, v in overrides.items() if v is not None]
    if given:
        raise ParameterError(f"{snap.source} is a stored run of {snap.count} snapshots, played "
                             f"back as computed: {', '.join(given)} cannot change it (restart "
                             f"from one of its snapshots to simulate with other values)")
    engine = PlaybackEngine(snap.archive, label=snap.source.name)
    engine.load(snap.state)
    name = snap.run.name if snap.run and snap.run.name else snap.source.stem
    return Simulation(name, engine, engine.state(), f"playback of {snap.count} stored "
                      f"snapshots", snap.units, None, snap, "playback")


def _check_modules(params: Params, kind: str, scene, chosen: dict) -> None:
    """An unknown module name fails before any work, naming the scene key it came from."""
    for what, registry in modules.REGISTRIES.items():
        try:
            registry.get(getattr(params, what), kind)
        except EngineError as exc:
            if scene is None or chosen[what] is not None:
                raise
            raise SceneError(f"{scene.source}: params.{what}: {exc}") from None
