"""Scene files: TOML descriptions of initial conditions, fully validated before any work.

  [scene]  name, description, seed, n_gpu; n_cpu (optional with story_time); story_time
  [units]  optional: length_kpc or length_pc, mass_1e10msun or mass_msun (without it: N-body
           units); or system = "si" (metres, kg, seconds: G = 6.6743e-11, the ring scenes)
  [params] optional: theta, dt, eps, eta, block_levels, mac, alpha (N-body units, or SI;
           defaults from Params); integrator, boundary, collision (physics modules by name)
  [model]  type = "<registered model>" plus that model's own keys
docs/scene-format.md describes the format for users and model writers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from galaxyview.errors import GalaxyviewError, ParameterError, SceneError
from galaxyview.files import read_bytes
from galaxyview.model import ics
from galaxyview.model.pace import Pace, cpu_pace
from galaxyview.model.params import (BLOCK_LEVELS_MAX, EPS_MAX, MACS, MODULE_KINDS, THETA_MAX,
                                     Params, check_module_name)
from galaxyview.model.state import ParticleState
from galaxyview.model.units import G_SI, UnitSystem
from galaxyview.model.validate import Table, parse_toml
from galaxyview.resources import scenes_dir

N_MAX = 2**28  # most particles a scene may ask for
SEED_MAX = 2**53  # the integer rule (model/params.py INT_MAX)


@dataclass(frozen=True)
class Scene:
    """A validated scene: `config` is what the model's parse() returned (N-body units)."""

    name: str
    description: str
    seed: int
    n_cpu: int | None  # None: the CPU pace's count (story_time is then given)
    n_gpu: int
    units: UnitSystem | None
    params: Params
    model: str
    config: Any
    source: Path
    story_time: float | None = None  # N-body time by which the scene's story has unfolded

    def default_n(self, backend: str = "cpu") -> int:
        """Particle count for a backend: n_gpu for "gpu", otherwise n_cpu or the CPU pace's."""
        if backend == "gpu":
            return self.n_gpu
        return self.n_cpu if self.n_cpu is not None else self.cpu_pace(backend=backend).n

    def cpu_pace(self, n: int | None = None, backend: str = "cpu") -> Pace | None:
        """The viewer's pace on CPU backend `backend` (model/pace.py) for n particles (default:
        the scene's n_cpu, else the pace's own count); None without story_time."""
        if self.story_time is None:
            return None
        return cpu_pace(self.story_time, self.params.dt, self.params.theta,
                        self.n_cpu if n is None else n, engine=backend)

    def build(self, n: int | None = None, backend: str = "cpu") -> ParticleState:
        """The initial state: the same scene, seed and n always give identical arrays; the
        same particles as `maker`'s (made in parts by a distributed engine) where it has one."""
        maker = self.maker(n, backend)
        if maker is not None:
            return maker.whole()
        n = self.default_n(backend) if n is None else check_n(n)
        state = ics.get_model(self.model).build(self.config, n, np.random.default_rng(self.seed))
        state.meta.update(self._meta())
        return state

    def _meta(self) -> dict:
        """What an initial state's meta says of its scene."""
        return dict(scene=self.name, description=self.description, model=self.model,
                    seed=self.seed, source=str(self.source), units=self.units)

    def maker(self, n: int | None = None, backend: str = "cpu"):
        """The initial state made in parts (model/ics/parts.py PartMaker: each process of a
        distributed engine makes its share), where the model offers it; else None."""
        model = ics.get_model(self.model)
        if model.maker is None:
            return None
        n = self.default_n(backend) if n is None else check_n(n)
        return model.maker(self.config, n, self.seed, self._meta())


def check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= N_MAX:
        raise ParameterError(f"the number of particles must be an integer in [1, {N_MAX}], "
                             f"got {n!r}")
    return int(n)


def _models() -> list[str]:
    return ics.model_names()


def parse_scene(data: dict, source: str | Path) -> Scene:
    """Validate parsed TOML; SceneError naming file, key, value and what is allowed."""
    root = Table(data, source)
    head = root.table("scene")
    name = head.string("name")
    if not name.strip():
        raise head.error("name", name, "must not be empty")
    description = head.string("description")
    seed = head.integer("seed", lo=0, hi=SEED_MAX)
    story_time = head.number("story_time", None, lo=0, lo_open=True)
    n_cpu = head.integer("n_cpu", None, lo=1, hi=N_MAX)
    if n_cpu is None and story_time is None:
        raise SceneError(f"{source}: scene.n_cpu is missing (required unless scene.story_time "
                         "is given, whose CPU pace then picks the particle count)")
    n_gpu = head.integer("n_gpu", lo=1, hi=N_MAX)
    head.finish()
    units_table = root.table("units", None)
    si = units_table is not None and units_table.string("system", "nbody",
                                                        choices=("nbody", "si")) == "si"
    if si:
        units_table.finish()  # SI stands alone: no length_* or mass_* beside it
    units = None if si else _units(units_table)
    params = _params(root.table("params", None))
    if si:
        params = params.with_(G=G_SI)
    table = root.table("model")
    kind = table.string("type", choices=_models())
    try:
        config = ics.get_model(kind).parse(table, units)
    except SceneError:
        raise
    except GalaxyviewError as exc:
        raise SceneError(f"{source}: [model] {exc}") from None
    table.finish()
    root.finish()
    return Scene(name, description, seed, n_cpu, n_gpu, units, params, kind, config, Path(source),
                 story_time)


def _units(table: Table | None) -> UnitSystem | None:
    """length_kpc or length_pc, mass_1e10msun or mass_msun (one of each pair; galaxies use
    the first, star clusters the second)."""
    if table is None:
        return None

    length = _one_of(table, "length_kpc", "length_pc", 1e-3)
    mass = _one_of(table, "mass_1e10msun", "mass_msun", 1e-10)
    table.finish()
    return UnitSystem(length_kpc=length, mass_msun=mass * 1e10)


def _one_of(table: Table, key: str, other: str, scale: float) -> float:
    """table[key], or table[other] * scale; 1 when neither is given; both is an error."""
    a = table.number(key, None, lo=0, lo_open=True)
    b = table.number(other, None, lo=0, lo_open=True)
    if a is not None and b is not None:
        raise table.error(other, b, f"give {key} or {other}, not both")
    return a if a is not None else (b * scale if b is not None else 1.0)


def _params(table: Table | None) -> Params:
    default = Params()
    if table is None:
        return default
    theta = table.number("theta", default.theta, lo=0, hi=THETA_MAX, lo_open=True)
    dt = table.number("dt", default.dt, lo=0, lo_open=True)
    eps = table.number("eps", default.eps, lo=0, hi=EPS_MAX)
    eta = table.number("eta", default.eta, lo=0, hi=1, lo_open=True)
    levels = table.integer("block_levels", default.block_levels, lo=0, hi=BLOCK_LEVELS_MAX)
    mac = table.string("mac", default.mac)
    if mac not in MACS:
        raise table.error("mac", mac, f"choose one of {', '.join(MACS)}")
    alpha = table.number("alpha", default.alpha, lo=0, hi=1, lo_open=True)
    names = {}
    for kind in MODULE_KINDS:
        name = table.string(kind, getattr(default, kind))
        try:
            names[kind] = check_module_name(kind, name)
        except ParameterError as exc:
            raise table.error(kind, name, str(exc)) from None
    table.finish()
    return default.with_(theta=theta, dt=dt, eps=eps, eta=eta, block_levels=levels, mac=mac,
                          alpha=alpha, **names)


# -- finding and loading ------------------------------------------------------------------------
def _shipped_dir() -> Path:
    try:
        return scenes_dir()
    except FileNotFoundError as exc:
        raise SceneError(str(exc)) from None


def _shipped_names() -> list[str]:
    return sorted(p.stem for p in _shipped_dir().glob("*.toml"))


def _is_path(name_or_path) -> bool:
    text = str(name_or_path)
    return (isinstance(name_or_path, Path) or "/" in text or "\\" in text
            or text.endswith(".toml") or Path(text).is_file())


def scene_path(name_or_path) -> Path:
    """The file of a shipped scene name, or the given path; SceneError for an unknown name."""
    if _is_path(name_or_path):
        return Path(name_or_path)
    path = _shipped_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        raise SceneError(f"unknown scene {str(name_or_path)!r}; shipped scenes: "
                         f"{', '.join(_shipped_names()) or 'none'} (or give the path of a "
                         f".toml scene file or a snapshot)")
    return path


def load_scene(name_or_path) -> Scene:
    """Load and validate a shipped scene (by name) or a scene file (by path)."""
    path = scene_path(name_or_path)
    try:
        text = read_bytes(path, SceneError, "scene (.toml) or snapshot file")
    except FileNotFoundError:
        raise SceneError(f"{path}: no such scene file; shipped scenes: "
                         f"{', '.join(_shipped_names()) or 'none'}") from None
    except IsADirectoryError:
        raise SceneError(f"{path}: is a folder; give the path of a .toml scene file") from None
    except OSError as exc:
        raise SceneError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    data = parse_toml(text, path)
    return parse_scene(data, path)


def shipped_scenes() -> list[tuple[str, str, Path]]:
    """(name for load_scene, description, path) of every shipped scene, sorted by name."""
    return [(name, load_scene(name).description, scene_path(name))
            for name in _shipped_names()]
