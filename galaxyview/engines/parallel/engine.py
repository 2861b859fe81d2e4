"""The distributed engine as one Engine: `ParallelEngine` on rank 0 drives the ranks' engines
(engines/parallel/rank.py); the other ranks run `serve()`.

Rank 0 runs the application (the job, the window, the recorder); each call of an Engine
method is broadcast as a command, every rank runs its part on its own domain (rank 0 too),
and rank 0 gathers the answers: states are gathered into the loaded order by particle id,
energies and centres of mass are sums over the ranks, a failure on any rank raises
EngineError on rank 0 with that rank's message. The other ranks wait for commands without a
time-out (the window may pause for hours); the collectives inside a command time out.
"""
from __future__ import annotations

import numpy as np

from galaxyview import interrupt
from galaxyview.engines.base import PHASES as BASE_PHASES, Energies, Engine, StepStats
from galaxyview.engines.cpu import threads
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.parallel.launch import too_few
from galaxyview.engines.parallel.mpi import Comm, local_rank_from_env
from galaxyview.engines.parallel.mpi import default_timeout as mpi_default_timeout
from galaxyview.engines.parallel.rank import AFTER_ANOTHER, PHASES, CPURank
from galaxyview.errors import EngineError
from galaxyview.model.exact import ExactState
from galaxyview.model.ics.parts import moments
from galaxyview.model.state import ParticleState, Selection


def make_rank_engine(backend: str, params, gravity, comm):
    """The rank's engine: the numba engine ("cpu"), the numpy one ("reference") or the GPU
    engine on the GPU of the process's local rank ("gpu")."""
    if backend == "cpu":
        from galaxyview.engines.cpu_numba.engine import NumbaEngine as base
    elif backend == "reference":
        base = CPUEngine
    elif backend == "gpu":  # one GPU a process: the host's local rank picks it
        from galaxyview.engines.parallel.gpu_rank import make_gpu_rank
        from galaxyview.engines.parallel.launch import rank_gpu

        return make_gpu_rank(params, gravity, comm, rank_gpu(local_rank_from_env()))
    else:
        raise EngineError(f"the parallel engine has no {backend!r} ranks")
    cls = type(f"Rank{base.__name__}", (CPURank, base), {"own_pair_offset": backend == "cpu"})
    engine = cls(params, gravity=gravity)
    engine.attach(comm)
    return engine


SUPPORTED = {"integrator": ("leapfrog",), "boundary": ("open",), "collision": ("none",),
             "mac": ("bonsai",)}  # the LET export applies Bonsai's MAC to remote boxes
_engines: dict = {}  # this rank's engines by id
_lit: dict = {}  # rank 0: the summed light image of the last light command, by engine id


# -- what every rank does for a command (rank 0 through ParallelEngine) -----------------------
def _create(key, comm, data, backend, params, gravity):
    _engines[key] = make_rank_engine(backend, params, gravity, comm)
    return _engines[key].device_name


def _costs(e):
    """What the last force evaluation (or step) cost here, and the time now."""
    return e.stats, dict(e.parallel_ms), e.time


def _load(key, comm, data, exact):
    part = comm.scatter(data, what="the initial particles")
    state, ids, arrays = part
    _engines[key].load_part(state, ids, arrays if exact else None)
    return _costs(_engines[key])


def _load_made(key, comm, data, maker):
    """This rank's share of maker's particles, made here, centred by the sums of all."""
    cuts = np.linspace(0, maker.n, comm.size + 1).astype(np.int64)
    a, b = int(cuts[comm.rank]), int(cuts[comm.rank + 1])
    part, error = None, None
    try:  # (the CLI gives a rank its share of CPUs)
        part = maker.part(a, b - a, threads.count())
    except (EngineError, MemoryError) as exc:  # every rank stops, with this one's message
        error = exc
    _engines[key].agree(error, "making the particles")
    total = comm.allreduce(moments(part), "sum", "the centre of mass")
    _engines[key].load_part(maker.finish(part, total), np.arange(a, b, dtype=np.int64))
    return _costs(_engines[key])


def _step(key, comm, data, n):
    _engines[key].step(n)
    return _costs(_engines[key])


def _set_params(key, comm, data, values):
    _engines[key].set_params(**values)  # new forces where theta or eps changed
    return _costs(_engines[key])


def _state(key, comm, data, exact):
    return _engines[key].local_view(exact)


def _light(key, comm, data, view, on_device=False):
    """Each rank splats its particles; the images add up on rank 0 (kept in _lit: the image,
    or with on_device its device pointer on rank 0's GPU)."""
    total = _engines[key].summed_light(view, on_device)
    if comm.rank == 0:
        _lit[key] = total


def _energies(key, comm, data):
    e = _engines[key].energies()
    return e.kinetic, e.potential


def _centre(key, comm, data, mask):
    return _engines[key].local_centre(mask)


def _sample(key, comm, data, count):
    return _engines[key].local_sample(count)


def _values(key, comm, data, mode, count):
    return _engines[key].local_values(mode, count)


def _boxes(key, comm, data, lo, hi):
    return _engines[key].tree_boxes(lo, hi)


def _memory(key, comm, data):
    return _engines[key].device_memory_bytes()


def _close(key, comm, data):
    engine = _engines.pop(key, None)
    if engine is not None:
        engine.close()


COMMANDS = {f.__name__.lstrip("_"): f for f in
            (_create, _load, _load_made, _step, _set_params, _state, _light, _energies, _centre,
             _sample, _values, _boxes, _memory, _close)}


def _run(comm, key, name, data, args):
    """Run one command here; (True, value) or (False, message)."""
    try:
        return True, COMMANDS[name](key, comm, data, *args)
    except EngineError as exc:
        return False, str(exc)
    except MemoryError:
        return False, (f"process {comm.rank}: out of memory; use more processes or fewer "
                       "particles")
    except Exception as exc:  # a fault here must still answer, or rank 0 would wait
        return False, f"process {comm.rank}: {name} failed: {type(exc).__name__}: {exc}"


def settings_error(gpu: bool) -> str | None:
    """What is wrong with this process's GALAXYVIEW_* settings (read again later, inside
    commands, where a failure on one process alone would leave the others in a collective),
    or None."""
    from galaxyview.engines.parallel import launch, mpi

    checks = [threads.count, mpi.default_timeout, launch.ranks_per_gpu]
    if gpu:
        from galaxyview.engines.gpu.engine import group_split, refit_fraction
        from galaxyview.engines.parallel import gpu_boxes, gpu_forces, gpu_let_walk, peers
        from galaxyview.engines.parallel.gpu_rank import rebalance_every

        checks += [peers.wanted, gpu_let_walk.let_walk, gpu_forces.let_export,
                   gpu_boxes.let_boxes, rebalance_every, refit_fraction, lambda: group_split(1)]
    try:
        for check in checks:
            check()
    except EngineError as exc:
        return str(exc)
    return None


def agree_set_up(comm: Comm, gpu: bool) -> str | None:
    """Collective, the job's first: None when every process's settings are good, else the
    first bad one's message (on every rank); comm's time-out from GALAXYVIEW_MPI_TIMEOUT."""
    mine = settings_error(gpu)
    if mine is None:
        comm.timeout = mpi_default_timeout()
    errors = comm.gather(mine and f"process {comm.rank}: {mine}", what="the processes' set-up")
    first = next((e for e in errors if e), None) if comm.rank == 0 else None
    return comm.bcast(first, what="the processes' set-up")


def serve(comm: Comm | None = None) -> int:
    """The loop of ranks 1..K-1: run rank 0's commands until it says stop. A fault outside a
    command (which answers its own) aborts the job with its message: the others never wait."""
    comm = comm or Comm()
    try:
        while True:
            msg = comm.bcast(None, what="the next command", timeout=float("inf"))
            if msg is None:
                return 0
            key, name, args = msg
            comm.gather(_run(comm, key, name, None, args), what=f"the answers to {name}")
    except Exception as exc:
        comm.abort(f"process {comm.rank}: {type(exc).__name__}: {exc}")
        raise


def stop_serving(comm: Comm) -> None:
    """Rank 0: let the other ranks leave serve()."""
    comm.bcast(None, what="the stop command")


class ParallelEngine(Engine):
    """One simulation over the processes of an MPI job; lives on rank 0."""

    distributed = True

    _next_key = 0

    def __init__(self, backend: str, params=None, gravity: str | None = None,
                 comm: Comm | None = None):
        super().__init__(params, "tree" if gravity is None else gravity)
        if self.gravity != "tree":
            raise EngineError("the parallel engine runs tree gravity only; use one process "
                              "for direct summation")
        for what, names in SUPPORTED.items():
            if getattr(self.params, what) not in names:
                raise EngineError(f"{what} {getattr(self.params, what)!r} does not run over "
                                  f"several processes yet; use {' or '.join(names)}, or one "
                                  "process")
        self.comm = comm or Comm()
        self.backend = backend
        self.name = f"{backend}-mpi"
        ParallelEngine._next_key += 1
        self._key = ParallelEngine._next_key
        self._n, self._time, self._meta = 0, 0.0, {}
        self.rank_ms: list[dict] = []  # each rank's PHASES of the last step
        self._device = self._call("create", None, backend, self.params, gravity)[0]

    def _call(self, name, data, *args) -> list:
        """Broadcast a command, run rank 0's part, gather every rank's answer. A stop (held
        on rank 0: interrupt.py) is raised before or after a command, never inside one."""
        interrupt.check()
        self.comm.bcast((self._key, name, args), what=name)
        mine = _run(self.comm, self._key, name, data, args)
        answers = self.comm.gather(mine, what=f"the answers to {name}")
        failed = [(rank, value) for rank, (ok, value) in enumerate(answers) if not ok]
        if failed:  # the first cause, before the processes that stopped because of it
            rank, value = min(failed, key=lambda f: f[1].startswith(AFTER_ANOTHER))
            raise EngineError(value if value.startswith("process") or self.comm.size == 1
                              else f"{value} (process {rank})")
        interrupt.check()
        return [value for _, value in answers]

    @property
    def device_name(self) -> str:
        return f"{self.comm.size} MPI processes, each {self._device}"

    # -- state -------------------------------------------------------------------------------
    def load(self, state: ParticleState, exact: ExactState | None = None) -> None:
        few = too_few(state.n, self.comm.size)
        if few:
            raise EngineError(few)
        state.validate()
        cuts = np.linspace(0, state.n, self.comm.size + 1).astype(np.int64)
        parts = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            part = state.take(slice(a, b))
            arrays = None if exact is None else (np.asarray(exact.pos[a:b], np.float64),
                                                 np.asarray(exact.vel[a:b], np.float64))
            parts.append((part, np.arange(a, b, dtype=np.int64), arrays))
        answers = self._call("load", parts, exact is not None)
        self._n, self._time, self._meta = state.n, float(state.time), dict(state.meta)
        self._collect_stats(answers)
        self.steps_done = 0

    def load_made(self, maker, workers: int = 1) -> None:
        """Every rank makes its share of the particles (nothing travels but the command), in
        as many worker processes as its CPU threads (`workers` is rank 0's alone)."""
        few = too_few(maker.n, self.comm.size)
        if few:
            raise EngineError(few)
        answers = self._call("load_made", None, maker)
        self._n, self._time, self._meta = maker.n, 0.0, dict(maker.meta)
        self._collect_stats(answers)
        self.steps_done = 0

    def load_exact(self, exact: ExactState) -> None:
        self.load(exact.state, exact if exact.pos is not None else None)
        self.steps_done = int(exact.steps)

    def _gather(self, exact: bool):
        parts = self._call("state", None, exact)
        ids = np.concatenate([p[0] for p in parts])
        order = np.argsort(ids)
        return [np.concatenate([p[k] for p in parts])[order] for k in range(1, len(parts[0]))]

    def state(self) -> ParticleState:
        self._need()
        pos, vel, mass, comp, gal, radius = self._gather(False)
        return ParticleState(pos, vel, mass, comp, gal, self._time, dict(self._meta),
                             radius=radius)

    def exact_state(self) -> ExactState:
        self._need()
        pos, vel, mass, comp, gal, radius, acc, pot = self._gather(True)
        state = ParticleState(pos, vel, mass, comp, gal, self._time, dict(self._meta),
                              radius=radius)
        return ExactState(state, self.name, self.gravity, self.params, pos, vel, acc, pot,
                          self.steps_done, {})

    def accelerations(self):
        self._need()
        *_, acc, pot = self._gather(True)
        return acc, pot

    @property
    def n(self) -> int:
        return self._n

    @property
    def time(self) -> float:
        return self._time

    # -- work --------------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        self._need()
        n = self._step_count(n)
        if n == 0:
            return
        answers = self._call("step", None, n)
        self._time = answers[0][2]
        self.steps_done += n
        self._collect_stats(answers)

    def _collect_stats(self, answers) -> None:
        """The step's phases: the slowest rank's time of each (the critical path)."""
        stats = [a[0] for a in answers]
        self.rank_ms = [a[1] for a in answers]
        ms = {k: max(s.timings_ms.get(k, 0.0) for s in stats) for k in BASE_PHASES}
        for k in PHASES:
            ms[k] = max(r[k] for r in self.rank_ms)
        ms["walk"] = ms.pop("local_walk")
        figures = {}  # a GPU rank's parts of the LET phases and the LET sizes (the largest)
        for r in self.rank_ms:
            for k in r:
                if k not in PHASES:
                    figures[k] = max(q.get(k, 0.0) for q in self.rank_ms)
        for k, name in (("work", "imbalance"), ("particles", "particles_spread"),
                        ("interactions", "interactions_spread")):
            values = [r[k] for r in self.rank_ms if k in r]
            if values and sum(values) > 0:  # the largest rank's over the mean
                figures[name] = max(values) * len(values) / sum(values)
        self.stats = StepStats(ms, sum(s.pp for s in stats), sum(s.pc for s in stats), self._n,
                               figures=figures)

    def set_params(self, theta=None, dt=None, eps=None, eta=None, mac=None,
                   alpha=None) -> None:
        if mac not in (None, "bonsai"):
            raise EngineError(f"mac {mac!r} does not run over several processes; the LET "
                              "export applies Bonsai's MAC (use one process)")
        values = dict(theta=theta, dt=dt, eps=eps, eta=eta, mac=mac, alpha=alpha)
        self.params = self.params.with_(**values)
        answers = self._call("set_params", None, values)
        if self._n:
            self._collect_stats(answers)

    splats_light = True

    def light(self, view) -> np.ndarray | None:
        """Every rank splats its own particles, the float images are summed on rank 0 (on
        its GPU, or an MPI Reduce): no particle travels (the density colouring: each rank's
        particles' density over all ranks', engines/parallel/density.py)."""
        return self._summed_light(view, False)

    def light_on_device(self, view):
        """GPU ranks: the sum left on rank 0's GPU (its light image), with that GPU's
        context."""
        if self.backend != "gpu":
            return None
        return _engines[self._key].context, self._summed_light(view, True)

    def colour_values(self, mode: str, count: int | None = None) -> np.ndarray | None:
        """Made by the ranks: about `count` values of any mode from the ranks' shares (no
        state gathered for a colour map's range); all of the density's (each rank's
        particles', over all ranks') in the loaded order."""
        if mode != "density" and count is None:
            return None
        self._need()
        share = None if count is None else -(-count // self.comm.size)
        parts = self._call("values", None, mode, share)
        values = np.concatenate([p[1] for p in parts])
        if count is not None:
            return values
        return values[np.argsort(np.concatenate([p[0] for p in parts]), kind="stable")]

    def _summed_light(self, view, on_device: bool):
        """The light command on every rank; rank 0's sum (an image, or on_device a device
        pointer)."""
        self._need()
        _lit.pop(self._key, None)
        self._call("light", None, view, on_device)
        return _lit.pop(self._key)

    def energies(self) -> Energies:
        self._need()
        parts = self._call("energies", None)
        return Energies(sum(p[0] for p in parts), sum(p[1] for p in parts))

    def sample_state(self, count: int) -> tuple[np.ndarray, ParticleState]:
        """About `count` particles, every k-th of each rank's (no state gathered), in the
        loaded order."""
        self._need()
        parts = self._call("sample", None, -(-int(count) // self.comm.size))
        ids = np.concatenate([p[0] for p in parts])
        order = np.argsort(ids, kind="stable")
        state = ParticleState.concatenate([p[1] for p in parts]).take(order)
        state.time, state.meta = self._time, dict(self._meta)
        return ids[order], state

    def centre_of_mass(self, mask: np.ndarray | Selection) -> np.ndarray:
        """Summed over the ranks; a Selection travels as itself, a mask whole."""
        self._need()
        if not isinstance(mask, Selection):
            mask = np.asarray(mask, bool)
        parts = self._call("centre", None, mask)
        m = sum(p[0] for p in parts)
        if m > 0:
            return sum(p[1] for p in parts) / m
        return sum(p[2] for p in parts) / max(1, sum(p[3] for p in parts))

    def sample_forces(self, targets: np.ndarray):
        from galaxyview.engines.cpu.direct import direct_forces

        self._need()
        pos, _, mass, *_, acc, _ = self._gather(True)
        targets = np.asarray(targets, np.int64)
        ref, _ = direct_forces(pos, mass, self.params.eps, self.params.G, targets=targets)
        return acc[targets].copy(), ref

    def tree_boxes(self, level_lo: int, level_hi: int):
        if not self._n:
            return None
        parts = [b for b in self._call("boxes", None, level_lo, level_hi) if b is not None]
        return np.concatenate(parts) if parts else None

    def device_memory_bytes(self) -> int | None:
        """Device memory of all the ranks together (None for CPU ranks)."""
        held = self._call("memory", None)
        return None if any(b is None for b in held) else int(sum(held))

    def close(self) -> None:
        if self._key is not None:
            self._call("close", None)
            self._key, self._n = None, 0

    def _need(self) -> None:
        if not self._n:
            raise EngineError("no particles loaded: call load(state) first")
