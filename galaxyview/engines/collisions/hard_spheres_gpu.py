"""Inelastic hard spheres, GPU engine (kernels/collision_hard_spheres.cu): touching pairs from
a cell list across the shear-periodic box's images, resolved once each in priority rounds
(the same result as one after the other in priority order; model/collide.py on the CPU).

Columns of the cell list are at least 2 r_max wide in x and y, so a particle's contacts lie in
the 3 x 3 columns around it. The host reads back the pair count once a step (to grow the
list) and the pending count every ROUNDS_PER_READ rounds; after collide.ROUNDS_MAX rounds the
pairs still pending are left for the next step, as on the CPU."""
from __future__ import annotations

import numpy as np

from galaxyview.engines.modules import Collision
from galaxyview.errors import EngineError
from galaxyview.model.collide import ROUNDS_MAX, separate, step_seed

ROUNDS_PER_READ = 4
LAWS = {"constant": 0, "bridges": 1}


class HardSpheres(Collision):
    kernels = "collision_hard_spheres.cu"

    def __init__(self, system):
        super().__init__(system)
        import pycuda.driver as cuda

        self._cuda = cuda
        self._mem: dict = {}
        self._sizes: dict = {}
        self._r_max = None
        self._host = self._ev = None  # made in the engine's context, at first use
        self.timings_ms = {"collide_search": 0.0, "collide_resolve": 0.0}
        self.pair_count = 0
        self.rounds = 0  # rounds the last resolve took (a multiple of ROUNDS_PER_READ)
        self.rounds_max = ROUNDS_MAX

    def _ready(self) -> None:
        if self._ev is None:
            self._host = self._cuda.pagelocked_zeros(2, np.uint64)
            self._ev = [self._cuda.Event() for _ in range(3)]

    def _buf(self, name: str, nbytes: int) -> int:
        nbytes = max(int(nbytes), 16)
        if self._sizes.get(name, 0) < nbytes:
            if name in self._mem:
                self._mem[name].free()
            self._mem[name] = self._cuda.mem_alloc(nbytes)
            self._sizes[name] = nbytes
        return int(self._mem[name])

    def _geometry(self, p):
        """(lx, ly, shift, nx, ny, shear) of the box now, or without a sheet a single box."""
        s = self.system
        if self._r_max is None:
            if not p.radius:
                raise EngineError("hard-sphere collisions need particle radii; this state has "
                                  "none (all radii 0)")
            r = np.empty(p.n, np.float32)
            self._cuda.memcpy_dtoh(r, p.radius)
            self._r_max = float(r.max())
        sheet = s.params.sheet
        if sheet is None or s.params.boundary != "shear-periodic":
            raise EngineError("hard spheres on the GPU engine run in the shearing sheet: "
                              "set boundary = \"shear-periodic\" and a ring model")
        reach = 2.0 * self._r_max
        nx, ny = int(sheet.lx // reach), int(sheet.ly // reach)
        if min(nx, ny) < 3:
            raise EngineError(f"the box ({sheet.lx:g} x {sheet.ly:g}) is less than 3 particle "
                              f"diameters ({reach:g}) across: make it larger")
        return sheet.lx, sheet.ly, sheet.shift(s.time), nx, ny, -1.5 * sheet.omega, sheet

    def find(self):
        """Touching pairs now, on the device: (pairs pointer, count); also kept for tests."""
        s, cuda = self.system, self._cuda
        self._ready()
        p = s.particles()
        lx, ly, shift, nx, ny, _, _ = self._geometry(p)
        n, m = p.n, nx * ny
        counts, starts = self._buf("counts", 4 * m), self._buf("starts", 4 * m)
        cell, rank, order = (self._buf(k, 4 * n) for k in ("cell", "rank", "sorted"))
        cuda.memset_d32(counts, 0, m)
        s.launch("cl_count", p.pos4, n, lx, ly, nx, ny, cell, rank, counts)
        s.launch("cl_scan", counts, m, starts, grid=1)
        s.launch("cl_fill", cell, rank, starts, n, order)
        cap = max(self._sizes.get("pairs", 0) // 16, 4 * n)
        while True:
            pairs, found = self._buf("pairs", 16 * cap), self._buf("npairs", 8)
            cuda.memset_d32(found, 0, 2)
            s.launch("cl_pairs", p.pos4, p.radius, p.ids, n, lx, ly, nx, ny, shift, starts,
                     counts, order, pairs, cap, found)
            cuda.memcpy_dtoh(self._host[:1], found)
            count = int(self._host[0])
            if count <= cap:
                break
            cap = int(1.25 * count)
        self.pair_count = count
        return pairs, count

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The last pairs found, on the host: original indices i < j (loaded order) and the
        (P, 2) x-y offsets of j's image (tests)."""
        s, p = self.system, self.system.particles()
        n_p = self.pair_count
        raw = np.empty((n_p, 4), np.int32)
        if n_p:
            self._cuda.memcpy_dtoh(raw, self._mem["pairs"])
        ids = np.empty(s.n, np.uint32)
        self._cuda.memcpy_dtoh(ids, p.ids)
        i, j = ids[raw[:, 0]].astype(np.int64), ids[raw[:, 1]].astype(np.int64)
        return i, j, raw[:, 2:].view(np.float32)

    def start(self) -> None:
        """Separate the spheres that overlap at the start (positions only; on the host, once:
        model/collide.py separate)."""
        s, cuda = self.system, self._cuda
        p = s.particles()
        *_, sheet = self._geometry(p)
        pos4 = np.empty((p.n, 4), np.float32)
        radius = np.empty(p.n, np.float32)
        cuda.memcpy_dtoh(pos4, p.pos4)
        cuda.memcpy_dtoh(radius, p.radius)
        pos, sweeps = separate(pos4[:, :3], radius, pos4[:, 3],
                               sheet.ghost_offsets(s.time, 1)[0])
        if sweeps:
            pos4[:, :3] = pos
            cuda.memcpy_htod(p.pos4, pos4)

    def resolve(self) -> None:
        s, cuda = self.system, self._cuda
        self._ready()
        ev = self._ev
        ev[0].record()
        pairs, n_p = self.find()
        ev[1].record()
        p = s.particles()
        *_, shear, sheet = self._geometry(p)
        seed = step_seed(s.time)
        resolved = rounds = deferred = 0
        if n_p:
            first, state = self._buf("first", 8 * p.n), self._buf("state", n_p)
            counters = self._buf("counters", 16)
            cuda.memset_d8(state, 1, n_p)
            cuda.memset_d32(counters, 0, 4)
            s.launch("col_fill", first, p.n)
            while rounds < self.rounds_max:
                for _ in range(min(ROUNDS_PER_READ, self.rounds_max - rounds)):
                    cuda.memset_d32(counters + 8, 0, 2)
                    s.launch("col_claim", pairs, n_p, state, p.ids, seed, first)
                    s.launch("col_apply", pairs, n_p, state, p.ids, seed, first, p.pos4,
                             p.vel4, shear, LAWS[sheet.restitution], sheet.eps_n, sheet.v_c,
                             counters)
                    s.launch("col_reset", pairs, n_p, state, first)
                    rounds += 1
                cuda.memcpy_dtoh(self._host, counters)
                if int(self._host[1]) == 0:
                    break
            resolved, deferred = int(self._host[0]), int(self._host[1])
        ev[2].record()
        ev[2].synchronize()
        self.resolved, self.rounds, self.deferred = resolved, rounds, deferred
        self.timings_ms = {"collide_search": ev[1].time_since(ev[0]),
                           "collide_resolve": ev[2].time_since(ev[1])}

    def close(self) -> None:
        for mem in self._mem.values():
            mem.free()
        self._mem.clear()
        self._sizes.clear()
