"""A simulation: initial state from a scene, snapshot or archive, parameters, and the engine
running it; the object the Python API (`galaxyview.open`) hands out.

Shared by the command line, the viewer and the movie recorder, so they all pick scenes, particle
counts, parameters and engines the same way.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from galaxyview.engines import (BACKENDS, create_engine, module_kind, module_names, modules,
                                resolve_backend)
from galaxyview.engines.base import Energies, Engine
from galaxyview.engines.cpu.threads import count as cpu_threads
from galaxyview.engines.playback import PlaybackEngine
from galaxyview.errors import (EngineError, GalaxyviewError, ParameterError, SceneError,
                               SnapshotError)
from galaxyview.model import diagnostics
from galaxyview.model.arrays import in_nbody, is_quantity, particle_state, read_only
from galaxyview.model.exact import ExactState
from galaxyview.model.params import Params
from galaxyview.model.state import ParticleState
from galaxyview.model.units import UnitSystem
from galaxyview.snapshots import Snapshot, archive, open_source, params_of, registry
from galaxyview.snapshots.format import Contents, Format

INITIAL_SAMPLE = 1 << 18  # particles of an initial state made in parts kept on this host
PROGRESS_FROM = 1 << 20  # scenes of this many particles or more show their making (CLI, window)
# the command line's words in engine messages, and the API's for them
_API_WORDS = ((re.compile(r"--backend (\w+)"), r'backend="\1"'),
              (re.compile(r"--device (\d+)"), r"device=\1"),
              (re.compile(r"--device\b"), "device="), (re.compile(r"\(--n\)"), "(n=)"),
              (re.compile(r"--threads N\b"), "the GALAXYVIEW_THREADS environment variable"),
              (re.compile(r"--overwrite\b"), "overwrite=True"))


class CentreOfMass(NamedTuple):
    """Centre-of-mass position and velocity, (3,) float64 each, N-body units."""

    position: np.ndarray
    velocity: np.ndarray


@contextlib.contextmanager
def api_errors():
    """GalaxyviewErrors raised inside speak the API (backend="cpu"), not the command line
    (--backend cpu): the same exception, its message reworded."""
    try:
        yield
    except GalaxyviewError as exc:
        if exc.args and isinstance(exc.args[0], str):
            text = exc.args[0]
            for pattern, words in _API_WORDS:
                text = pattern.sub(words, text)
            exc.args = (text, *exc.args[1:])
        raise


def save_kind(path, format: str | None = None) -> Format:
    """The snapshot format `Simulation.save` writes `path` in: `format` (a writable format's
    name: galaxyview, tipsy, gadget4, ...) or, with None, the one its name gives
    (snapshots/registry.py); SnapshotError for a name that does not fit (checked before a
    run, not after)."""
    return registry.save_format(path, format)


@dataclass(repr=False)
class Simulation:
    """A loaded engine and where its state came from. A context manager (closes the engine).

    from_arrays(pos, vel, mass), add(...) before the first step, step(n), run(until=t) (ends
    on t exactly), positions, velocities, masses (read-only copies; assign whole arrays),
    momentum, angular_momentum, centre_of_mass, time, energies(), params (assign a dict or
    Params: checked), save(path). Quantities are in N-body units (G = 1); `units` is the
    physical unit system when there is one (`quantity` converts; astropy or unyt quantities
    are taken in).

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
    _start_steps: int = field(default=0, init=False)  # the engine's steps when the run began

    def __post_init__(self):
        if self.initial_sample is None:
            self.initial_sample = self.initial
        self._start_steps = self.engine.steps_done

    @classmethod
    def from_arrays(cls, pos, vel, mass, *, component=None, galaxy=None, time=0.0,
                    units: UnitSystem | None = None, backend: str = "auto", theta=None,
                    dt=None, eps=None, eta=None, gravity: str | None = None, device: int = 0,
                    integrator: str | None = None, name: str = "arrays") -> "Simulation":
        """A Simulation of the particles in `pos` (N, 3), `vel` (N, 3) and `mass` (N,) (or one
        number for all): numbers in N-body units (G = 1), or astropy/unyt quantities converted
        with `units` (a UnitSystem; default for quantities: 1 kpc, 1e10 Msun). component,
        galaxy: the tags (model/state.py Component codes; galaxy numbers), None: stars of
        galaxy 0. dt, eps (and time) may be quantities too."""
        with api_errors():
            device = check_choices(backend, gravity, device, integrator)
            if units is not None and not isinstance(units, UnitSystem):
                raise ParameterError(f"units must be a galaxyview.UnitSystem or None, got "
                                     f"{units!r}")
            if units is None and any(map(is_quantity, (pos, vel, mass, time, dt, eps))):
                units = UnitSystem()
            state = particle_state(pos, vel, mass, component, galaxy, time, units)
            where = "this simulation (units=None)"
            params = Params().with_(theta=theta, eta=eta, integrator=integrator,
                                    dt=in_nbody(dt, "time", "dt", units, where),
                                    eps=in_nbody(eps, "length", "eps", units, where))
            kind, why = resolve_backend(backend, device)
            _check_modules(params, module_kind(kind), None, {})
            engine, named = create_engine(kind, params, gravity=gravity, device=device)
            try:
                engine.load(state)
            except BaseException:
                engine.close()
                raise
        return cls(name, engine, state, named if kind == "gpu" else why, units, backend=kind)

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

    def _read_only(self, what: str, array: np.ndarray) -> np.ndarray:
        return read_only(array, f"sim.{what} is a read-only copy of the engine's state: "
                                f"assign a whole array to change it, e.g. a = sim.{what}.copy(); "
                                f"a[0] = ...; sim.{what} = a")

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) float32 positions now, N-body units: a read-only copy (assign a whole
        array to change them)."""
        return self._read_only("positions", self._live().state().pos)

    @positions.setter
    def positions(self, pos) -> None:
        self._change(pos=pos)

    @property
    def velocities(self) -> np.ndarray:
        """(N, 3) float32 velocities now: a read-only copy (assign a whole array)."""
        return self._read_only("velocities", self._live().state().vel)

    @velocities.setter
    def velocities(self, vel) -> None:
        self._change(vel=vel)

    @property
    def masses(self) -> np.ndarray:
        """(N,) float32 masses: a read-only copy (assign a whole array)."""
        return self._read_only("masses", self._live().state().mass)

    @masses.setter
    def masses(self, mass) -> None:
        self._change(mass=mass)

    def state(self) -> ParticleState:
        """A copy of the state (arrays the caller owns; changing them changes no engine)."""
        return self._live().state()

    @property
    def momentum(self) -> np.ndarray:
        """Total linear momentum sum m v, (3,) float64 (float64 sums of the float32 state)."""
        s = self._live().state()
        return diagnostics.linear_momentum(s.vel, s.mass)

    @property
    def angular_momentum(self) -> np.ndarray:
        """Total angular momentum about the origin, sum m x × v, (3,) float64."""
        s = self._live().state()
        return diagnostics.angular_momentum(s.pos, s.vel, s.mass)

    @property
    def centre_of_mass(self) -> CentreOfMass:
        """(position, velocity) of the centre of mass, (3,) float64 each."""
        s = self._live().state()
        return CentreOfMass(diagnostics.centre_of_mass(s.pos, s.mass),
                            diagnostics.centre_of_mass(s.vel, s.mass))

    def energies(self) -> Energies:
        """Kinetic, potential and total energy (N-body units)."""
        return self._live().energies()

    @property
    def params(self) -> Params:
        return self._live().params

    @params.setter
    def params(self, changes) -> None:
        """Assign a dict of theta, dt, eps (or a Params): checked now, ParameterError if bad;
        dt and eps may be quantities when the simulation has physical units."""
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
        kinds = {"theta": None, "dt": "time", "eps": "length"}
        changes = {k: v if kinds[k] is None else in_nbody(v, kinds[k], k, self.units, self.name)
                   for k, v in changes.items()}
        with api_errors():
            engine.set_params(**changes)

    # -- changing the particles ----------------------------------------------------------------
    def add(self, pos, vel=None, mass=None, *, component=None, galaxy=None) -> "Simulation":
        """Add particles before the first step: pos (3,) or (M, 3), vel likewise (None: at
        rest), mass one number or (M,); N-body units or quantities (sim.units). They join the
        initial state that reset() returns to."""
        engine = self._simulating("add particles")
        if engine.steps_done != self._start_steps:
            raise ParameterError(f"add particles before the first step: this simulation has "
                                 f"run {engine.steps_done - self._start_steps} steps (reset() "
                                 f"goes back to the start, or build the whole set with "
                                 f"Simulation.from_arrays)")
        if mass is None:
            raise ParameterError("add needs mass=: one number, or one per particle")
        new = particle_state(pos, vel, mass, component, galaxy, engine.time, self.units)
        exact = engine.exact_state()
        state = ParticleState.concatenate([exact.state, new])
        self._reload(state, np.concatenate([_own(exact.pos, exact.state.pos), new.pos]),
                     np.concatenate([_own(exact.vel, exact.state.vel), new.vel]), exact.steps)
        return self

    def _change(self, pos=None, vel=None, mass=None) -> None:
        """Replace the engine's positions, velocities or masses (checked as from_arrays
        does); the forces are evaluated again; before the first step, the initial state too."""
        engine = self._simulating("change the particles")
        exact = engine.exact_state()
        old = exact.state
        n = old.n
        new = particle_state(old.pos if pos is None else pos, old.vel if vel is None else vel,
                             old.mass if mass is None else mass, time=old.time,
                             units=self.units)
        if new.n != n:
            raise ParameterError(f"give one value per particle: {n} rows, not {new.n} (add() "
                                 f"adds particles)")
        state = ParticleState(new.pos, new.vel, new.mass, old.component, old.galaxy, old.time,
                              dict(old.meta), old.radius)
        self._reload(state, _own(exact.pos, old.pos) if pos is None else new.pos,
                     _own(exact.vel, old.vel) if vel is None else new.vel, exact.steps)

    def _reload(self, state: ParticleState, pos, vel, steps: int) -> None:
        """Load `state` (with the engine's own-precision pos, vel) at the same step count;
        the forces and the integrator start afresh. Before the first step it is the initial
        state (what reset() returns to)."""
        engine = self.engine
        start = engine.steps_done == self._start_steps
        with api_errors():  # (the GPU's memory may not hold them)
            engine.load_exact(ExactState(state, "api", engine.gravity, engine.params,
                                         np.asarray(pos, np.float64),
                                         np.asarray(vel, np.float64), steps=steps))
        if start:
            self.initial = self.initial_sample = state
            self.maker = None

    def _simulating(self, what: str) -> Engine:
        engine = self._live()
        if engine.frame_count is not None:
            raise ParameterError(f"cannot {what}: {self.name} plays back a stored run as it "
                                 f"was computed (open one of its snapshots with index= to "
                                 f"simulate from it)")
        return engine

    # -- work ----------------------------------------------------------------------------------
    def step(self, n: int = 1) -> "Simulation":
        """Advance n steps (a whole number >= 0)."""
        engine = self._live()
        with api_errors():
            engine.step(whole_count(n, "n", minimum=0))
        return self

    def run(self, until) -> "Simulation":
        """Advance to time `until` exactly (N-body units, or a time quantity when the
        simulation has physical units): whole steps of params.dt, the last one shortened to
        end on `until` (every integrator ends its step synchronised). A stored run (playback)
        moves to its first snapshot at or after `until`."""
        engine = self._live()
        target = self._nbody(until, "time", "until")
        if not math.isfinite(target):
            raise ParameterError(f"until must be a finite time, got {until!r}")
        if target < engine.time:
            raise ParameterError(f"until = {target!r} is before the current time "
                                 f"{engine.time!r}; simulations run forward (reset() goes back "
                                 f"to the start)")
        with api_errors():
            if engine.frame_count is not None:
                while engine.time < target and engine.frame_index < engine.frame_count - 1:
                    engine.step(1)
                return self
            dt = engine.params.dt
            whole = math.ceil((target - engine.time) / dt - 1e-9) - 1  # the last one apart
            if whole > 0:
                engine.step(whole)
            if engine.time < target:
                self._last_step(engine, target)
        return self

    @staticmethod
    def _last_step(engine: Engine, target: float) -> None:
        """One step ending on `target` exactly: its dt is the float that, added to the time,
        gives `target` (as engines add it); dt comes back afterwards."""
        time, dt = engine.time, engine.params.dt
        h = target - time
        for _ in range(8):  # the difference is exact but for time << target: an ulp or two
            if time + h == target:
                break
            h = float(np.nextafter(h, math.inf if time + h < target else -math.inf))
        if h == dt:
            engine.step(1)
            return
        engine.set_params(dt=h)
        try:
            engine.step(1)
        finally:
            engine.set_params(dt=dt)

    def reset(self) -> None:
        """Back to the initial state (made anew in parts where it was)."""
        engine = self._live()
        with api_errors():
            if self.maker is not None:
                engine.load_made(self.maker)
            else:
                engine.load(self.initial)
        self._start_steps = engine.steps_done

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
        if is_quantity(value) and np.ndim(value) == 0:
            return in_nbody(value, kind, name, self.units, self.name)
        raise ParameterError(f"{name} must be a number (N-body units) or, for a scene with "
                             f"physical units, a time quantity; got {value!r}")

    # -- files ---------------------------------------------------------------------------------
    def save(self, path, overwrite: bool = False, format: str | None = None) -> Path:
        """The current state in the format its name gives (snapshots/registry.py): a galaxyview
        snapshot (.h5, .hdf5: exact, restartable bit for bit) or Tipsy (.tipsy, .std, .bin,
        with its companion files); or in the writable format named: format="gadget4" a
        Gadget-4 HDF5 snapshot (.hdf5) that pynbody and yt open. An existing file is replaced
        only with overwrite=True."""
        if not isinstance(path, (str, os.PathLike)):
            raise ParameterError(f"path must be a file path (a str or pathlib.Path) ending in "
                                 f"{_save_suffixes()}, got {path!r}")
        overwrite = flag(overwrite, "overwrite")
        engine = self._live()
        path = Path(path).expanduser()
        state = engine.state

        def named_state():  # the galaxies' names, where a writer keeps them
            got = state()
            if self.initial_sample is not None and "galaxies" not in got.meta:
                got.meta["galaxies"] = self.initial_sample.meta.get("galaxies")
            return got

        contents = Contents(named_state, engine.exact_state,
                            lambda: engine.accelerations()[1], self.run_info, engine.params,
                            self.units)
        return save_kind(path, format).write(path, contents, overwrite)

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


def _own(exact, state):
    """An ExactState's own-precision array, or its float32 state's where it has none."""
    return state if exact is None else exact


def check_choices(backend, gravity, device, integrator=None, boundary=None,
                  collision=None) -> int:
    """The engine and module choices of galaxyview.open and Simulation.from_arrays, checked:
    ParameterError naming the argument; the device ordinal."""
    if backend not in BACKENDS:
        raise ParameterError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if gravity not in (None, "tree", "direct"):
        raise ParameterError(f"gravity must be 'tree', 'direct' or None (what the integrator "
                             f"needs), got {gravity!r}")
    for name, value in (("integrator", integrator), ("boundary", boundary),
                        ("collision", collision)):
        if value is not None and not isinstance(value, str):
            raise ParameterError(f"{name} must be a module name (a string), got {value!r}")
        if value is not None and value not in module_names(name):
            raise ParameterError(f"unknown {name} {value!r}; choose one of "
                                 f"{', '.join(module_names(name))}")
    return whole_count(device, "device", minimum=0)


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
    return registry.save_suffixes()


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
        for key, dimension in (("dt", "time"), ("eps", "length")):
            overrides[key] = in_nbody(overrides[key], dimension, key, units, name)
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
