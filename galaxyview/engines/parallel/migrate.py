"""The particles that left their domain, moved between GPU ranks without the others.

Between two decompositions the particles drift across the domains' faces; left where they
are, every rank's domain reaches further into the others' each step, and so do the LETs
(2 H200, 1M Plummer, no rebalance: the LET grew 50k, 112k, 169k, 224k, 269k particles over
the first five evaluations). So every step, as Bonsai does, only the leavers move: those
that the step's kick and drift will take out of the domain, to the domain they will be in
when the forces are evaluated (moved when they had left, a layer of each domain lay across
its faces at the force evaluation: 4 domains made 14% more interactions). On the device
(kernels/parallel_domain.cu): each particle's Hilbert key in the decomposition's cube (of its
drifted position) and its owner among the splitters, the leavers' rows (pos, vel, acc and their
meta: global id, radius, component, galaxy) in an outbox; the stayers stay where they are.
The ranks exchange only their counts; then each fills its inbox with the rows of the others'
outboxes: device to device through CUDA IPC where every rank is on one host
with peer access (the "device" path, peers.py), through the host and MPI otherwise ("host";
GALAXYVIEW_PEERS=auto|device|host). The arrivals fill the holes the leavers left in the set
(when fewer came, the stayers beyond the new size fill the rest), and take the loaded-order
slots the leavers freed (`slots`, the same on the device), so the device's ids stay a
permutation of 0..n-1; the meta stays on the device (the rank's host arrays are read back
when asked for). Nothing is copied but the leavers and the arrivals (the split that
compacted the stayers into the idle set took 0.76 ms a step at 8M a rank on an H200).
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines.parallel.let_device import T, scan
from galaxyview.engines.parallel.peers import PeerBuffers
from galaxyview.engines.parallel.rank import pack
from galaxyview.errors import EngineError

ROW = 64  # bytes of a row: pos, vel, acc, meta (4 x 16)
MAX_RANKS = 1024  # domain_owner_counts' histogram


def pack_meta(ids, radius, component, galaxy) -> np.ndarray:
    """(n, 4) int32 of the device's meta: the global id's low and high words, the radius's
    float32 bits, component | galaxy << 8 (galaxy as 16 bits)."""
    n = len(ids)
    meta = np.empty((n, 4), np.int32)
    meta[:, :2] = np.asarray(ids, np.int64).reshape(-1, 1).view(np.int32).reshape(n, 2)
    meta[:, 2] = np.asarray(radius, np.float32).view(np.int32)
    gal = np.asarray(galaxy, np.int16).view(np.uint16).astype(np.int32)
    meta[:, 3] = np.asarray(component, np.uint8).astype(np.int32) | (gal << 8)
    return meta


def unpack_meta(meta: np.ndarray):
    """(ids int64, radius float32, component uint8, galaxy int16) of pack_meta's rows."""
    meta = np.ascontiguousarray(meta, np.int32)
    ids = meta[:, :2].copy().view(np.int64)[:, 0]
    radius = meta[:, 2].copy().view(np.float32)
    component = (meta[:, 3] & 0xFF).astype(np.uint8)
    galaxy = ((meta[:, 3] >> 8) & 0xFFFF).astype(np.uint16).view(np.int16)
    return ids, radius, component, galaxy


def slots(lid: np.ndarray, n: int, n_new: int, arrivals: int):
    """The loaded-order slots after the leavers (their slots `lid`, in leaver order) left and
    `arrivals` came, n_new = n - len(lid) + arrivals, as the device's slot kernels give them:
    (the arrivals' slots, the survivors' slots at or beyond n_new, the slots they move to).
    Every slot of 0..n_new-1 is then taken once."""
    lid = np.asarray(lid, np.int64)
    none = np.zeros(0, np.int64)
    if n_new >= n:
        return np.r_[lid, np.arange(n, n + arrivals - len(lid))][:arrivals], none, none
    low = lid[lid < n_new]
    survivor = np.ones(n - n_new, bool)
    survivor[lid[lid >= n_new] - n_new] = False
    return low[:arrivals], n_new + np.flatnonzero(survivor), low[arrivals:]


class Migration:
    """The leaver exchange of one GPU rank: its device scratch, outbox and inbox, and the
    other ranks' outboxes opened through CUDA IPC."""

    def __init__(self, eng):
        self.eng = eng
        self._cuts = None  # the splitters on the device
        self.cap = self.in_cap = 0  # rows of the outbox, of the inbox
        self.path = None  # "device" or "host": the rank's peer path, at the first run
        self._outboxes = PeerBuffers("the outboxes", "mig_box")  # its rows, then owners

    def close(self) -> None:
        """Close the other ranks' outboxes (within the engine's context)."""
        self._outboxes.close()

    def run(self, cube, cuts: np.ndarray, dt: float = 0.0) -> dict:
        """Collective: every particle to the owner of its key (with dt: of where the step's
        kick and drift will take it). Returns what moved here and the ms of the parts: the
        device split, the counts' exchange with the inbox's filling, the arrivals' placing."""
        eng, comm = self.eng, self.eng.comm
        t0 = perf_counter()
        if self.path is None:
            if comm.size > MAX_RANKS:
                raise EngineError(f"{comm.size} processes: the GPU engine's particle exchange "
                                  f"counts up to {MAX_RANKS}; use fewer processes")
            self.path = eng.peer_path()
        with eng.activate():
            eng._meta_to_device()
            left, counts = self._split(cube, cuts, dt)
        t1 = perf_counter()
        table = comm.allgather(np.r_[left, self._outboxes.gen, self.cap, counts],
                               "the leavers' counts")
        arrivals = int(table[:, 3 + comm.rank].sum())
        n, n_new = eng._n, eng._n - left + arrivals
        with eng.activate():
            m = self._fill_inbox(table, left)
            t2 = perf_counter()
            whole = self._whole(m, left) if n_new > eng.buf.n_cap else None
            if whole is None:
                self._arrive(m, left, arrivals, n, n_new)
            eng._cuda.Context.synchronize()  # the others' outboxes read: free to be rewritten
        if whole is not None:  # no room on the device: the whole set through the host
            eng._upload_rows(*whole)
        return dict(moved_out=float(left), moved_in=float(arrivals),
                    moved_device=float(self.path == "device"),
                    moved_split=1e3 * (t1 - t0), moved_comm=1e3 * (t2 - t1),
                    moved_append=1e3 * (perf_counter() - t2))

    # -- this rank's leavers ---------------------------------------------------------------
    def _split(self, cube, cuts, dt: float = 0.0):
        """The leavers' rows into the outbox (the set unchanged): the number of leavers and
        how many go to each rank. dt: the owners are those of where the leapfrog's kick and
        drift of dt take the particles (0: where they are)."""
        eng, b, k = self.eng, self.eng.buf, self.eng.kernels
        n, cur, size = eng._n, eng._cur, eng.comm.size
        flag, owner, offs = (b.per_particle(f"mig_{s}", 4) for s in ("flag", "owner", "offs"))
        b._alloc("mig_ctl", 32)
        b._alloc("mig_sums", 4 * 1024)
        b._alloc("mig_counts", 4 * size)
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
        drift = (vel, b.ptr("acc"), 0.5 * dt, dt) if dt else (0, 0, 0.0, 0.0)
        k.launch("domain_flags", grid, T, pos, n, *(float(v) for v in lo), float(scale),
                 b.ptr("mig_cuts"), len(cuts), eng.comm.rank, flag, owner, 0, *drift)
        eng._cuda.memset_d32(ctl, n, 1)
        scan(k, flag, ctl, offs, ctl + 4, b.ptr("mig_sums"), self._blocks())
        if not self.cap:
            self._grow(max(1024, n // 64))
        host = eng._pinned("mig_host", 1 + size, np.int32)
        while True:
            box = b.ptr("mig_box")
            k.launch("domain_leavers", grid, T, n, flag, offs, owner, pos, vel, b.ptr("acc"),
                     b.ptr(f"id{cur}"), b.ptr("meta"), box, box + ROW * self.cap,
                     b.ptr("mig_lid"), b.ptr("mig_lpos"), self.cap)
            eng._cuda.memset_d32(b.ptr("mig_counts"), 0, size)
            k.launch("domain_owner_counts", (self._blocks(), 1, 1), T, box + ROW * self.cap,
                     ctl + 4, self.cap, size, b.ptr("mig_counts"))
            eng._cuda.memcpy_dtoh_async(host[:1], ctl + 4)
            eng._cuda.memcpy_dtoh_async(host[1:], b.ptr("mig_counts"))
            eng._cuda.Context.synchronize()
            left = int(host[0])
            if left <= self.cap:
                return left, host[1:].astype(np.int64)
            self._grow(left)

    def _grow(self, rows: int) -> None:
        """An outbox (and the scratch sized by it) for `rows` leavers and a quarter more."""
        b = self.eng.buf
        self.cap = int(1.25 * rows) + 1024
        self._outboxes.grow(b, (ROW + 4) * self.cap)  # rows, then their owners
        for name in ("lid", "lpos", "hflag", "hoff", "surv", "soff", "remap", "move_to"):
            b._alloc(f"mig_{name}", 4 * self.cap)

    def _blocks(self) -> int:
        return min(1024, 2 * self.eng._n_sm)

    # -- the inbox ---------------------------------------------------------------------------
    def _fill_inbox(self, table: np.ndarray, left: int) -> int:
        """The other ranks' rows for this rank into the inbox (rows, then owners): device to
        device (every outbox that has rows for this rank, whole: the rows not for this rank
        are skipped later) or through the host (only this rank's). Returns its rows."""
        eng, b, comm = self.eng, self.eng.buf, self.eng.comm
        me = comm.rank
        if self.path == "device":
            self._outboxes.open(eng, table[:, 1])
            senders = [r for r in range(comm.size) if r != me and table[r, 3 + me] > 0]
            m = int(sum(table[r, 0] for r in senders))
            self._ensure_inbox(m)
            inbox, at = b.ptr("mig_in"), 0
            for r in senders:
                rows, cap = int(table[r, 0]), int(table[r, 2])
                src = self._outboxes[r]
                eng._cuda.memcpy_dtod_async(inbox + ROW * at, src, ROW * rows)
                eng._cuda.memcpy_dtod_async(inbox + ROW * self.in_cap + 4 * at,
                                            src + ROW * cap, 4 * rows)
                at += rows
            return m
        box = b.ptr("mig_box")
        rows = eng._download(box, np.float32, 16 * left).reshape(left, 16)
        owners = eng._download(box + ROW * self.cap, np.int32, left)
        order = np.argsort(owners, kind="stable")
        per = np.bincount(owners, minlength=comm.size)
        got = comm.alltoallv_rows(rows[order], per, "the particle exchange")
        got = np.concatenate(got) if got else np.zeros((0, 16), np.float32)
        m = len(got)
        self._ensure_inbox(m)
        if m:
            eng._cuda.memcpy_htod(b.ptr("mig_in"), np.ascontiguousarray(got))
            eng._cuda.memset_d32(b.ptr("mig_in") + ROW * self.in_cap, me, m)
        return m

    def _ensure_inbox(self, m: int) -> None:
        if self.in_cap and m <= self.in_cap:
            return
        self.in_cap = int(1.25 * m) + 1024
        b = self.eng.buf
        b._alloc("mig_in", (ROW + 4) * self.in_cap)
        for name in ("in_flag", "in_offs", "at"):
            b._alloc(f"mig_{name}", 4 * self.in_cap)

    # -- the arrivals ------------------------------------------------------------------------
    def _arrive(self, m: int, left: int, arrivals: int, n: int, n_new: int) -> None:
        """The inbox's rows for this rank into the holes the leavers left (past them n, n + 1,
        ...; when fewer came, the stayers beyond n_new fill the rest) and into the loaded
        slots the leavers freed (`slots`), the loaded slots beyond n_new remapped."""
        eng, b, k = self.eng, self.eng.buf, self.eng.kernels
        cuda, p, me, cur = eng._cuda, b.ptr, eng.comm.rank, eng._cur
        ctl, sums, blocks = p("mig_ctl"), p("mig_sums"), self._blocks()
        pos, vel = b.set_ptrs(cur)
        parts = (pos, vel, p("acc"), p(f"id{cur}"))
        if n_new >= n:
            if arrivals:
                k.launch("slot_grow", (eng._grid(arrivals), 1, 1), T, p("mig_lid"), left, n,
                         arrivals, p("mig_at"))
        else:
            span = n - n_new
            cuda.memset_d32(p("mig_surv"), 1, span)
            cuda.memset_d32(ctl + 8, left, 1)
            cuda.memset_d32(ctl + 16, span, 1)
            k.launch("slot_flags", (eng._grid(left), 1, 1), T, p("mig_lid"), left,
                     np.uint32(n_new), p("mig_hflag"), p("mig_surv"))
            scan(k, p("mig_hflag"), ctl + 8, p("mig_hoff"), ctl + 12, sums, blocks)
            scan(k, p("mig_surv"), ctl + 16, p("mig_soff"), ctl + 20, sums, blocks)
            k.launch("slot_holes", (eng._grid(left), 1, 1), T, p("mig_lid"), left,
                     p("mig_hflag"), p("mig_hoff"), arrivals, p("mig_at"), p("mig_move_to"))
            k.launch("slot_survivors", (eng._grid(span), 1, 1), T, p("mig_surv"),
                     p("mig_soff"), span, np.uint32(n_new), p("mig_move_to"), p("mig_remap"),
                     p("meta"))
            k.launch("domain_fill", (eng._grid(span), 1, 1), T, span, n_new,
                     p("mig_flag"), p("mig_offs"), p("mig_lpos"), arrivals, *parts)
        if m:
            cuda.memset_d32(ctl + 24, m, 1)
            k.launch("domain_mine", (eng._grid(m), 1, 1), T, p("mig_in") + ROW * self.in_cap, m,
                     me, p("mig_in_flag"))
            scan(k, p("mig_in_flag"), ctl + 24, p("mig_in_offs"), ctl + 28, sums, blocks)
            k.launch("domain_arrive", (eng._grid(m), 1, 1), T, m, p("mig_in"),
                     p("mig_in_flag"), p("mig_in_offs"), n, left, p("mig_lpos"), p("mig_at"),
                     *parts, p("meta"))
        if n_new < n:  # every place below n_new now holds a stayer or an arrival
            k.launch("domain_remap", (eng._grid(n_new), 1, 1), T, p(f"id{cur}"), n_new,
                     np.uint32(n_new), p("mig_remap"))
        eng._n = n_new
        eng._moved()
        if left or arrivals:
            eng._meta_stale = True

    def _whole(self, m: int, left: int):
        """The stayers and the inbox's arrivals as rank.pack rows and global ids, for the host
        to load anew (the set as _split left it)."""
        eng, b, me, n = self.eng, self.eng.buf, self.eng.comm.rank, self.eng._n
        eng._meta_to_host()
        pos, vel = b.set_ptrs(eng._cur)
        stay = eng._download(b.ptr("mig_flag"), np.int32, n) == 0
        p4 = eng._download(pos, np.float32, 4 * n).reshape(-1, 4)[stay]
        v4 = eng._download(vel, np.float32, 4 * n).reshape(-1, 4)[stay]
        a4 = eng._download(b.ptr("acc"), np.float32, 4 * n).reshape(-1, 4)[stay]
        sid = eng._download(b.ptr(f"id{eng._cur}"), np.uint32, n)[stay].astype(np.int64)
        rows = pack(p4[:, :3], v4[:, :3], a4[:, :3], a4[:, 3], p4[:, 3], eng._radius[sid],
                    eng._component[sid], eng._galaxy[sid], np.float32)
        inbox = eng._download(b.ptr("mig_in"), np.float32, 16 * m).reshape(m, 16)
        mine = eng._download(b.ptr("mig_in") + ROW * self.in_cap, np.int32, m) == me
        got = inbox[mine]
        ids, radius, component, galaxy = unpack_meta(got[:, 12:].view(np.int32))
        arrived = pack(got[:, 0:3], got[:, 4:7], got[:, 8:11], got[:, 11], got[:, 3], radius,
                       component, galaxy, np.float32)
        return np.concatenate([rows, arrived]), np.concatenate([eng.ids[sid], ids])
