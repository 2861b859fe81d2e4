"""The particles that left their domain, moved between GPU ranks without the others.

Between two decompositions the particles drift across the domains' faces; left where they
are, every rank's domain reaches further into the others' each step, and so do the LETs
(2 H200, 1M Plummer, no rebalance: the LET grew 50k, 112k, 169k, 224k, 269k particles over
the first five evaluations). So every step, as Bonsai does, only the leavers move: on the
device each particle's Hilbert key in the decomposition's cube and its owner among the
splitters (kernels/parallel_domain.cu), the stayers compacted in order into the idle set and
the leavers' rows (pos, vel, acc) gathered; the leavers through the host to their owners;
the arrivals appended on the device. The host's arrays in loaded order (component, galaxy,
radius, global ids) give the leavers' slots to the arrivals (`slots`), so the device's ids
stay a permutation of 0..n-1 and only the moved particles are touched on the host.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines.parallel import decompose
from galaxyview.engines.parallel.let_device import T, scan
from galaxyview.engines.parallel.rank import (ACC, COMPONENT, GALAXY, MASS, POS, POT, RADIUS,
                                              VEL, pack)

HOST_ARRAYS = ("_component", "_galaxy", "_radius", "ids")  # the rank's, in loaded order


def slots(holes: np.ndarray, n: int, n_new: int, arrivals: int):
    """The loaded-order slots after `holes` (the leavers' ids among 0..n-1) left and
    `arrivals` came, n_new = n - len(holes) + arrivals: (the arrivals' slots, the survivors'
    ids at or beyond n_new, the slots they move to). Every slot of 0..n_new-1 is then taken
    once."""
    holes = np.sort(np.asarray(holes, np.int64))
    free = np.r_[holes[holes < n_new], np.arange(n, n_new, dtype=np.int64)]
    move_from = np.setdiff1d(np.arange(n_new, n, dtype=np.int64), holes, assume_unique=True)
    return free[:arrivals], move_from, free[arrivals:]


def with_ids(rows: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """float32 rows with the int64 ids behind them as two columns of their bits (one
    message, not two)."""
    both = np.empty((len(rows), rows.shape[1] + 2), np.float32)
    both[:, :-2] = rows
    both[:, -2:] = np.asarray(ids, np.int64)[:, None].view(np.float32)
    return both


def split_ids(both: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows and ids of with_ids."""
    return both[:, :-2], np.ascontiguousarray(both[:, -2:]).view(np.int64)[:, 0]


class Migration:
    """The leaver exchange of one GPU rank (its device scratch, its host arrays' room)."""

    def __init__(self, eng):
        self.eng = eng
        self._room: dict = {}  # host arrays with spare room, by name
        self._cuts = None  # the splitters on the device

    def run(self, cube, cuts: np.ndarray) -> dict:
        """Collective: every particle to the owner of its key. Returns what moved here and
        the ms of the parts: the device split with the leavers' download, the exchange, the
        arrivals' upload."""
        eng = self.eng
        t0 = perf_counter()
        with eng.activate():
            rows, lid, owner = self._split(cube, cuts)
        t1 = perf_counter()
        got, got_ids = split_ids(decompose.exchange(eng.comm, with_ids(rows, eng.ids[lid]),
                                                    owner))
        t2 = perf_counter()
        n, n_new = eng._n, eng._n - len(lid) + len(got)
        if n_new > eng.buf.n_cap:  # no room on the device: the whole set through the host
            eng._upload_rows(*self._whole(lid, got, got_ids))
        else:
            with eng.activate():
                self._append(lid, got, got_ids, n, n_new)
        return dict(moved_out=float(len(lid)), moved_in=float(len(got)),
                    moved_split=1e3 * (t1 - t0), moved_comm=1e3 * (t2 - t1),
                    moved_append=1e3 * (perf_counter() - t2))

    def _split(self, cube, cuts):
        """The device's part before the exchange: the leavers' rows (float32, rank.pack's
        columns), loaded-order ids and owners; the stayers compacted into the idle set."""
        eng, b, k = self.eng, self.eng.buf, self.eng.kernels
        n, cur = eng._n, eng._cur
        flag, owner, offs = (b.per_particle(f"mig_{s}", 4) for s in ("flag", "owner", "offs"))
        b._alloc("mig_ctl", 16)
        b._alloc("mig_sums", 4 * 1024)
        ctl = b.ptr("mig_ctl")
        cuts = np.ascontiguousarray(cuts, np.uint64)
        if self._cuts is None or not np.array_equal(self._cuts, cuts):  # new splitters only
            b._alloc("mig_cuts", 8 * max(len(cuts), 1))
            if len(cuts):
                eng._cuda.memcpy_htod(b.ptr("mig_cuts"), cuts)
            self._cuts = cuts
        lo, _, scale = cube
        pos, vel = b.set_ptrs(cur)
        grid = (eng._grid(), 1, 1)
        k.launch("domain_flags", grid, T, pos, n, *(float(v) for v in lo), float(scale),
                 b.ptr("mig_cuts"), len(cuts), eng.comm.rank, flag, owner, 0)
        eng._cuda.memset_d32(ctl, n, 1)
        scan(k, flag, ctl, offs, ctl + 4, b.ptr("mig_sums"), min(1024, 2 * eng._n_sm))
        left = int(eng._download(ctl + 4, np.int32, 1)[0])
        for name, width in (("mig_rows", 48), ("mig_lid", 4), ("mig_lowner", 4)):
            b._alloc(name, width * max(left, 1))
        spos, svel = b.set_ptrs(1 - cur)
        k.launch("domain_split", grid, T, n, flag, offs, owner, pos, vel, b.ptr("acc"),
                 b.ptr(f"id{cur}"), spos, svel, b.per_particle("mig_acc", 16),
                 b.ptr(f"id{1 - cur}"), b.ptr("mig_rows"), b.ptr("mig_lid"),
                 b.ptr("mig_lowner"))
        r = eng._download(b.ptr("mig_rows"), np.float32, 12 * left).reshape(left, 12)
        lid = eng._download(b.ptr("mig_lid"), np.uint32, left).astype(np.int64)
        dest = eng._download(b.ptr("mig_lowner"), np.int32, left).astype(np.int64)
        rows = pack(r[:, 0:3], r[:, 4:7], r[:, 8:11], r[:, 11], r[:, 3], eng._radius[lid],
                    eng._component[lid], eng._galaxy[lid], np.float32)
        return rows, lid, dest

    def _append(self, lid, got, got_ids, n: int, n_new: int) -> None:
        """The arrivals behind the stayers in the idle set, ids remapped, the set made
        current; the host arrays' slots filled."""
        eng, b, cuda = self.eng, self.eng.buf, self.eng._cuda
        new, stay = 1 - eng._cur, n - len(lid)
        at, move_from, move_to = slots(lid, n, n_new, len(got))
        spos, svel = b.set_ptrs(new)
        sacc, sid = b.ptr("mig_acc"), b.ptr(f"id{new}")
        if len(got):
            for ptr, cols in ((spos, (POS, MASS)), (svel, (VEL, COMPONENT)),
                              (sacc, (ACC, POT))):
                four = np.ascontiguousarray(np.c_[got[:, cols[0]], got[:, cols[1]]],
                                            np.float32)
                cuda.memcpy_htod(ptr + 16 * stay, four)
            cuda.memcpy_htod(sid + 4 * stay, at.astype(np.uint32))
        if len(move_from):
            remap = np.zeros(n - n_new, np.uint32)
            remap[move_from - n_new] = move_to
            b._alloc("mig_remap", 4 * len(remap))
            cuda.memcpy_htod(b.ptr("mig_remap"), remap)
            eng.kernels.launch("domain_remap", (eng._grid(stay), 1, 1), T, sid, stay,
                               np.uint32(n_new), b.ptr("mig_remap"))
        cuda.memcpy_dtod(b.ptr("acc"), sacc, 16 * max(n_new, 1))
        values = {"_component": got[:, COMPONENT].astype(np.uint8),
                  "_galaxy": got[:, GALAXY].astype(np.int16),
                  "_radius": got[:, RADIUS].astype(np.float32), "ids": got_ids}
        for name in HOST_ARRAYS:
            room = self._with_room(name, n_new)
            room[move_to] = room[move_from]
            room[at] = values[name]
            setattr(eng, name, room[:n_new])
        eng._n, eng._cur = n_new, new
        eng._moved()

    def _with_room(self, name: str, n_new: int) -> np.ndarray:
        """The buffer behind the engine's array `name` (its first n elements), with room for
        n_new: grown by a quarter when short; made anew when the array is not its view."""
        arr = getattr(self.eng, name)
        room = self._room.get(name)
        if room is None or arr.base is not room or len(room) < n_new:
            room = np.empty(max(n_new, int(1.25 * len(arr))), arr.dtype)
            room[:len(arr)] = arr
            self._room[name] = room
        return room

    def _whole(self, lid, got, got_ids):
        """The stayers (compacted on the device) and the arrivals as rows and global ids."""
        eng, b = self.eng, self.eng.buf
        stay, new = eng._n - len(lid), 1 - eng._cur
        with eng.activate():
            spos, svel = b.set_ptrs(new)
            p4 = eng._download(spos, np.float32, 4 * stay).reshape(-1, 4)
            v4 = eng._download(svel, np.float32, 4 * stay).reshape(-1, 4)
            a4 = eng._download(b.ptr("mig_acc"), np.float32, 4 * stay).reshape(-1, 4)
            sid = eng._download(b.ptr(f"id{new}"), np.uint32, stay).astype(np.int64)
        rows = pack(p4[:, :3], v4[:, :3], a4[:, :3], a4[:, 3], p4[:, 3], eng._radius[sid],
                    eng._component[sid], eng._galaxy[sid], np.float32)
        return np.concatenate([rows, got]), np.concatenate([eng.ids[sid], got_ids])
