"""One rank's share of a distributed simulation: the CPU engines' shell on the particles of
its domain, with the decomposition at the start of every step and the LETs in the walk.

A step: new splitters from a key sample weighted by the last step's interactions per
particle, the particle exchange (each particle's pos, vel, acc, pot, mass, radius, id,
component, galaxy travel together), then the integrator's step on the local particles. The
keys are those of where the leapfrog's kick and drift take the particles, so the step's force
evaluation finds every particle in its domain. Each
force evaluation: the local tree (keys in the rank's own cube), the domain boxes exchanged,
a LET exported for every other domain, sent on a host thread while the local tree is walked,
the imported LETs walked as extra trees. The finiteness checks are collective, so every rank
raises together and keeps its last good state.
"""
from __future__ import annotations

import threading
from time import perf_counter

import numpy as np

from galaxyview.engines.integrators.leapfrog_cpu import kick_drift
from galaxyview.engines.parallel import decompose, density, let
from galaxyview.light import kernel as light
from galaxyview.errors import EngineError
from galaxyview.model.state import ParticleState, Selection

AFTER_ANOTHER = "another process stopped"  # a rank that stops because another failed

PHASES = ("decompose", "exchange", "let_build", "local_walk", "let_comm", "let_walk")
# a particle row: pos 3, vel 3, acc 3, pot, mass, radius, component, galaxy (the ids travel
# beside the rows, int64); float64 rows on the CPU ranks, float32 on the GPU ranks
POS, VEL, ACC = slice(0, 3), slice(3, 6), slice(6, 9)
POT, MASS, RADIUS, COMPONENT, GALAXY = 9, 10, 11, 12, 13


def pack(pos, vel, acc, pot, mass, radius, component, galaxy, dtype=np.float64) -> np.ndarray:
    """Particle rows of `dtype`, filled column by column (no float64 copy of them all: a
    rank's share of a billion); acc and pot may be 0."""
    rows = np.empty((len(mass), GALAXY + 1), dtype)
    for where, values in ((POS, pos), (VEL, vel), (ACC, acc), (POT, pot), (MASS, mass),
                          (RADIUS, radius), (COMPONENT, component), (GALAXY, galaxy)):
        rows[:, where] = values
    return rows


def rows_state(rows: np.ndarray, time: float, meta: dict) -> ParticleState:
    """The float32 ParticleState of particle rows."""
    return ParticleState(rows[:, POS], rows[:, VEL], rows[:, MASS], rows[:, COMPONENT],
                         rows[:, GALAXY], time, dict(meta), radius=rows[:, RADIUS])


class RankMixin:
    """What every rank's engine adds to its engine class: the communicator, the particles'
    global ids, the measured cost per particle, the decomposition and its phase times."""

    comm = None
    row_dtype = np.float64  # of the particle rows exchanged

    def attach(self, comm) -> None:
        self.comm = comm
        self.ids = np.zeros(0, np.int64)
        self.cost = 1.0  # interactions per particle of the last force evaluation
        self.parallel_ms = dict.fromkeys(PHASES, 0.0)

    def load_part(self, state: ParticleState, ids: np.ndarray, exact=None) -> None:
        """Load this rank's share of the initial particles (any share: the decomposition
        moves them to their domains before the first forces). exact: float64 (pos, vel)."""
        pos, vel = (state.pos, state.vel) if exact is None else exact
        rows = pack(pos, vel, 0.0, 0.0, state.mass, state.radius, state.component,
                    state.galaxy, self.row_dtype)
        rows, self.ids = self._redistribute(rows, ids)
        self._load_rows(rows, rows_state(rows, state.time, state.meta))

    def local_view(self, exact: bool) -> tuple:
        """(ids, pos, vel, mass, component, galaxy, radius) of the local particles, with
        (acc, pot) when exact."""
        raise NotImplementedError

    def local_sample(self, count: int) -> tuple[np.ndarray, ParticleState]:
        """(global ids, state) of about `count` of this rank's particles: every k-th of its
        order (GPURank: strided copies of the device's rows)."""
        ids, pos, vel, mass, component, galaxy, radius = self.local_view(False)
        pick = slice(None, None, max(1, len(ids) // max(int(count), 1)))
        return ids[pick], ParticleState(pos[pick], vel[pick], mass[pick], component[pick],
                                        galaxy[pick], self.time, radius=radius[pick])

    def local_centre(self, select) -> tuple:
        """(mass, mass-weighted sum of positions, sum of positions, count) of this rank's
        particles in `select`: a Selection, or a bool mask over all particles' global ids."""
        ids, pos, _, mass, component, galaxy, _ = self.local_view(False)
        pick = select.mask(component, galaxy) if isinstance(select, Selection) else select[ids]
        m, p = np.asarray(mass[pick], np.float64), np.asarray(pos[pick], np.float64)
        return float(m.sum()), (m[:, None] * p).sum(axis=0), p.sum(axis=0), int(pick.sum())

    def local_light(self, view) -> np.ndarray:
        """The light of this rank's particles for `view` (a galaxyview.light.LightView), from
        its own arrays with the host splat (GPURank splats on its device instead)."""
        part = self.local_view(view.mode in light.NEEDS_POTENTIAL)
        _, pos, vel, mass, component, galaxy, _ = part[:7]
        pot = part[8] if len(part) > 7 else None
        if view.code == 0:
            values = np.zeros(len(pos), np.float32)
        elif view.mode == "density":
            values = self.local_values("density")[1]
        else:
            values = light.particle_values(view.mode, pos, vel, mass, galaxy, pot)
        return light.splat(view, light.particle_points(pos, component, values))

    def local_values(self, mode: str, count: int | None = None):
        """(global ids, float32 values) of colour `mode` of this rank's particles, or of
        about `count` of them: 'density' (collective) the local density over all ranks'
        particles (density.py), another mode light.particle_values."""
        part = self.local_view(mode in light.NEEDS_POTENTIAL)
        ids, pos, vel, mass, _, galaxy, _ = part[:7]
        pick = slice(None, None, max(1, len(ids) // max(count, 1)) if count else 1)
        if mode != "density":
            pot = part[8][pick] if len(part) > 7 else None
            return ids[pick], light.particle_values(mode, pos[pick], vel[pick], mass[pick],
                                                    galaxy[pick], pot)
        keys = decompose.particle_keys(np.asarray(pos, np.float32), self.cube)
        rho = density.domain_density(self.comm, keys, mass, self.cuts, float(self.cube[1]))
        return ids[pick], np.log10(np.maximum(rho[pick], 1e-300)).astype(np.float32)

    def summed_light(self, view, on_device: bool = False) -> np.ndarray | None:
        """Collective: every rank's local_light for `view` summed on rank 0 (an MPI Reduce of
        the float images; no particle travels). The sum on rank 0, None elsewhere (on_device:
        GPU ranks only)."""
        error, image = None, None
        try:
            image = self.local_light(view)
        except Exception as exc:  # still take part in the reduce, or the others would wait
            error = exc
        if image is None:
            image = np.zeros(view.shape, np.float32)
        total = self.comm.reduce(image, what="the sum of the light images")
        if error is not None:
            raise error
        return total

    def agree(self, error: Exception | None, what: str) -> None:
        """Collective: raise on every rank when `error` happened on any (its own message
        where it happened)."""
        if self.comm.allreduce([error is not None], "max", what)[0]:
            if error is not None:
                raise error
            raise EngineError(f"{AFTER_ANOTHER}: {what} failed there (its message comes "
                              "first)")

    def _redistribute(self, rows: np.ndarray, ids: np.ndarray, dt: float = 0.0):
        """The new splitters from the key sample, then the exchange: (rows, ids) now here,
        sorted by id. With dt, of where the step's kick and drift will take the particles,
        so that its force evaluation finds the domains apart."""
        t0 = perf_counter()
        pos = kick_drift(rows[:, POS], rows[:, VEL], rows[:, ACC], dt)[0] if dt else rows[:, POS]
        pos32 = pos.astype(np.float32)
        cube = decompose.global_cube(self.comm, pos32)
        keys = decompose.particle_keys(pos32, cube)
        cuts = decompose.splitters(self.comm, keys, self.cost)
        self.cube, self.cuts = cube, cuts  # the domains until the next decomposition
        dest = decompose.owners(keys, cuts)
        t1 = perf_counter()
        rows = decompose.exchange(self.comm, rows, dest)
        ids = decompose.exchange(self.comm, ids.astype(np.int64)[:, None], dest)[:, 0]
        order = np.argsort(ids, kind="stable")
        rows, ids = rows[order], ids[order]
        empty = self.comm.allreduce([len(rows) == 0], "max", "the domain sizes")[0]
        if empty:
            raise EngineError(f"a domain got no particles: too few particles ({self.comm.size} "
                              "processes) or all at one point; use fewer processes")
        self.parallel_ms["decompose"] = 1e3 * (t1 - t0)
        self.parallel_ms["exchange"] = 1e3 * (perf_counter() - t1)
        return rows, ids


class CPURank(RankMixin):
    """Added in front of CPUEngine or NumbaEngine (make_rank_engine)."""

    # the compiled walk counts each particle's own softened pair and takes its -m/eps off
    # the potential: in an extra tree there is no own pair, so the rank puts it back
    own_pair_offset = False

    def _load_rows(self, rows: np.ndarray, local: ParticleState) -> None:
        self.load(local)
        s = self.system
        if not np.array_equal(s.pos, rows[:, POS]):  # float64 given: forces at those
            s.pos, s.vel = rows[:, POS].copy(), rows[:, VEL].copy()
            self.integrator.start()

    def local_view(self, exact: bool) -> tuple:
        s, loaded = self.system, self._loaded
        part = (self.ids, s.pos, s.vel, s.mass, loaded.component, loaded.galaxy, s.radius)
        return part + ((s.acc, s.pot) if exact else ())

    def _step(self) -> None:
        self.comm.waited()  # from here: this step's
        s, loaded = self.system, self._loaded
        rows = pack(s.pos, s.vel, s.acc, s.pot, s.mass, s.radius, loaded.component,
                    loaded.galaxy)
        rows, self.ids = self._redistribute(rows, self.ids, self.params.dt)
        s.pos, s.vel, s.acc = rows[:, POS].copy(), rows[:, VEL].copy(), rows[:, ACC].copy()
        s.pot, s.mass = rows[:, POT].copy(), rows[:, MASS].copy()
        s.radius, s.jerk = rows[:, RADIUS].copy(), None
        self._loaded = rows_state(rows, self._time, loaded.meta)
        super()._step()
        ms = self.parallel_ms
        ms.update(work=ms["local_walk"] + ms["let_walk"], particles=float(len(s.pos)),
                  mpi_wait=self.comm.waited())

    # -- collective checks -------------------------------------------------------------------
    def _check(self, a: np.ndarray, what: str) -> None:
        bad = not (np.isfinite(a).all() and (what != "positions" or
                                             np.abs(a).max(initial=0) < 3e38))
        if self.comm.allreduce([bad], "max", f"the check of {what}")[0]:
            if bad:
                super()._check(a, what)
            p = self.params
            raise EngineError(
                f"step {self.steps_done + 1}: {what} became non-finite in another process; "
                f"reduce dt (now {p.dt:g}) or increase eps (now {p.eps:g}). The state is kept "
                f"at t = {self._time:g}.")

    # -- the walk with the LETs --------------------------------------------------------------
    def _walk(self, tree, amac=None):  # Bonsai's MAC only (ParallelEngine checks)
        comm, ms = self.comm, self.parallel_ms
        t0 = perf_counter()
        boxes = comm.allgather(let.domain_box(tree.pos), "the domain boxes").astype(np.float32)
        r_open2 = let.opening_radii2(tree, self.params.theta)
        out = [let.export(tree, r_open2, boxes[r]) if r != comm.rank else let.empty()
               for r in range(comm.size)]
        t1 = perf_counter()
        got, failed = {}, []

        def send():
            try:
                got["cells"] = comm.alltoallv([o[0] for o in out], "the LET exchange")
                got["particles"] = comm.alltoallv([o[1] for o in out], "the LET exchange")
            except BaseException as exc:  # handed to the walking thread
                failed.append(exc)

        thread = threading.Thread(target=send, name="galaxyview-let", daemon=True)
        thread.start()
        acc, pot, pp, pc = super()._walk(tree)
        t2 = perf_counter()
        thread.join()
        if failed:
            raise failed[0]
        t3 = perf_counter()
        own, local = self._own_pair(tree), (pp, pc)
        for r in range(comm.size):
            cells = got["cells"][r]
            if r == comm.rank or len(cells) == 0:
                continue
            extra = let.extra_tree(tree, cells, got["particles"][r])
            a, p, pp_r, pc_r = super()._walk(extra)
            acc += a[-tree.n:]
            pot += p[-tree.n:] - own
            pp, pc = pp + pp_r, pc + pc_r
        t4 = perf_counter()
        n = max(tree.n, 1)
        ms.update(let_build=1e3 * (t1 - t0), local_walk=1e3 * (t2 - t1),
                  let_comm=1e3 * (t3 - t2), let_walk=1e3 * (t4 - t3),
                  let_pp=(pp - local[0]) / n, let_pc=(pc - local[1]) / n,
                  interactions=float(pp + pc))
        self.cost = (pp + pc) / n
        return acc, pot, pp, pc

    def _own_pair(self, tree):
        """What the walk adds to a particle's potential for its own pair (0 or m/eps)."""
        eps2 = np.float32(self.params.eps) * np.float32(self.params.eps)
        if not (self.own_pair_offset and eps2 > 0):
            return 0.0
        return self.params.G * tree.mass * (1.0 / np.sqrt(np.float64(eps2)))

