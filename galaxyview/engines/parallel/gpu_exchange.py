"""A GPU rank's LET export and exchange (GPURank's): the export queued (let_device.py), its
sizes and rows fetched on a side stream; on one host only the sizes go through MPI and each
rank copies its part of the others' outputs device to device (CUDA IPC); otherwise the
compact output goes to pinned host memory and a host thread exchanges it over MPI (the MPI
need not be CUDA-aware). A rebuilt tree's export follows the walk, grown until it fits.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines.cpu.cells import Tree
from galaxyview.engines.gpu.constants import FLAG_CELLS, FLAG_GROUPS, ST_CELLS, ST_FLAGS
from galaxyview.engines.parallel import let, let_device
from galaxyview.errors import EngineError

EXPORT_TRIES = 6  # the export queued again while its list or output grows (doubled, +25%)


def host_tree(cells: dict, n_leaf: int) -> Tree:
    """The device tree's cells (in gpu/inspect.download_tree's terms) as a Tree for
    let.export: what the export reads (particles, links, multipoles), the rest left empty."""
    n, n_cells = len(cells["mass"]), len(cells["cell_mass"])
    return Tree(keys=np.zeros(n, np.uint64), order=np.zeros(0, np.int64), pos=cells["pos"],
                mass=cells["mass"], lo=np.zeros(3, np.float32), L=np.float32(1),
                scale=np.float32(1), n_leaf=n_leaf, level=np.zeros(n_cells, np.int64),
                body_begin=cells["body_begin"], body_count=cells["body_count"],
                child_begin=cells["child_begin"], child_count=cells["child_count"],
                parent=np.zeros(n_cells, np.int64), level_begin=np.array([0, n_cells]),
                cell_mass=cells["cell_mass"], com=cells["com"], quad=cells["quad"])


class ExchangeMixin:
    """Before GPUEngine in GPURank's bases (GPURank holds the export, `_export`, the staging
    buffers and the received rows)."""

    def _queue_export(self, skip: int, stream=None, blocks: int | None = None) -> None:
        """The export against every box of self._boxes but boxes[skip], between two events,
        on `stream` (None: the engine's), `blocks` a launch (None: DeviceExport's)."""
        self._let_ev[1].record(stream)
        self._export.queue(self._boxes, skip, self._depth, stream, blocks)
        self._let_ev[2].record(stream)

    def _fetch(self, copy: bool = True):
        """After the queued export (waited for on the side stream, beside the walk): (cells,
        particles, rows per rank) in pinned host memory (without `copy`: None, None, rows per
        rank), or None when the tree build or the export's output overflowed (both grown)."""
        side, b = self._side_stream, self.buf
        side.wait_for_event(self._let_ev[2])
        status = self._pinned("status", 8, np.uint64)
        self._cuda.memcpy_dtoh_async(status, b.ptr("status"), side)
        counts = self._export.counts(side)
        self._cells_built = int(status[ST_CELLS])  # (the tree the LETs' walk joins)
        if counts is None or int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS):
            return None
        per_rank = self._export.per_rank(counts, len(self._boxes))
        if not copy:
            return None, None, per_rank
        cells, parts = self._export.copy(side, counts.sum(axis=0))
        side.synchronize()
        return cells, parts, per_rank

    def _pinned(self, name: str, count: int, dtype) -> np.ndarray:
        """A page-locked host array of at least `count` elements (kept, grown as needed);
        made in the engine's context, which the LET thread (receiving into it) lacks."""
        buf = self._staging.get(name)
        if buf is None or buf.size < count or buf.dtype != dtype:
            with self.activate():
                buf = self._staging[name] = let_device.pinned(self._cuda, count, dtype)
        return buf[:count]

    def _recv_rows(self, name: str, rows: int, width: int) -> np.ndarray:
        """Pinned (rows, width) float32 that the LETs are received into (uploaded as they
        are); self._recv[name] is the whole of it."""
        self._recv.pop(name, None)  # a buffer outgrown is freed in the context, not here
        out = self._pinned("recv_" + name, rows * width, np.float32).reshape(rows, width)
        self._recv[name] = out
        return out

    def _pinned_copy(self, name: str, values: np.ndarray) -> np.ndarray:
        out = self._pinned(name, values.size, values.dtype)
        out[:] = values.reshape(-1)
        return out

    def _exchange_in_thread(self, staged) -> None:
        try:
            self._lets = self._exchange(staged)
        except BaseException as exc:  # handed to the evaluating thread
            self._lets = exc

    def _exchange(self, staged):
        """Collective: the LET exchange; the imported (cells, particles) of the other ranks.
        staged: (cells, particles, rows per rank), or None (the local evaluation failed:
        nothing sent)."""
        comm = self.comm
        if staged is None:
            staged = (*let.empty(), np.zeros((comm.size, 2), np.int64))
        cells, parts, per_rank = staged
        self._sent_bytes = cells.nbytes + parts.nbytes
        got_cells = comm.alltoallv_rows(cells, per_rank[:, 0], "the LET exchange",
                                        lambda n: self._recv_rows("cells", n, let.CELL_WIDTH))
        got_parts = comm.alltoallv_rows(parts, per_rank[:, 1], "the LET exchange",
                                        lambda n: self._recv_rows("parts", n,
                                                                  let.PARTICLE_WIDTH))
        return [(len(c), len(p)) for r, (c, p) in enumerate(zip(got_cells, got_parts))
                if r != comm.rank and len(c)]

    def _exchange_peers(self, staged) -> list:
        """Collective, on one host: the LET exchange device to device. Every rank's LET
        sizes (and its output buffers' generations) through MPI; then the other ranks'
        outputs, opened through CUDA IPC, give this rank its part, copied on the side stream
        into the import buffers (events 7, 8). Their exports are done (each rank waited
        for its own before the allgather), and none writes its output again before the
        next evaluation, which starts after this one's last collective: this rank's copies
        are done by then (its LET walk waited for them). Returns the LETs' sizes, as
        _exchange. staged: as _exchange's."""
        comm, ex, cuda = self.comm, self._export, self._cuda
        k, me = comm.size, comm.rank
        per_rank = staged[2] if staged is not None else np.zeros((k, 2), np.int64)
        with self.activate():
            ex.ensure()  # (a rank whose evaluation failed before its export offers one too)
        table = comm.allgather(np.r_[per_rank.reshape(-1), ex.cells.gen, ex.parts.gen],
                               "the LET sizes")
        counts = table[:, :2 * k].astype(np.int64).reshape(k, k, 2)  # [from, to]
        before = counts[:, :me].sum(axis=1)  # rows ahead of this rank's in each output
        sources = [r for r in range(k) if r != me and counts[r, me, 0] > 0]
        sizes = counts[sources, me].reshape(-1, 2)
        self._sent_bytes = 4 * int(let.CELL_WIDTH * per_rank[:, 0].sum() +
                                   let.PARTICLE_WIDTH * per_rank[:, 1].sum())
        cw, pw = 4 * let.CELL_WIDTH, 4 * let.PARTICLE_WIDTH
        with self.activate():
            ex.cells.open(self, table[:, -2])
            ex.parts.open(self, table[:, -1])
            try:  # (no collective follows: the error waits for the evaluation's agreement)
                self._import_buffers(*(int(v) for v in sizes.sum(axis=0)))
            except EngineError as exc:
                self._import_error = exc
                return []
            p, side, (c_at, p_at) = self.buf.ptr, self._side_stream, (0, self._n)
            self._let_ev[7].record(side)
            for r, (nc, npart) in zip(sources, sizes.tolist()):
                c0, p0 = (int(v) for v in before[r])
                cuda.memcpy_dtod_async(p("let_rows") + cw * c_at, ex.cells[r] + cw * c0,
                                       cw * nc, side)
                if npart:
                    cuda.memcpy_dtod_async(p("let_pos") + pw * p_at, ex.parts[r] + pw * p0,
                                           pw * npart, side)
                c_at, p_at = c_at + nc, p_at + npart
            self._let_ev[8].record(side)
        return [tuple(int(v) for v in row) for row in sizes]

    def _export_after_walk(self, error, copy: bool = True):
        """The export of a rebuilt tree (output grown as needed), not beside the walk; None
        after a failed local evaluation."""
        if error is not None:
            return None
        if self._boxes is None:  # no first attempt reached the walk
            self._boxes = self._share_boxes(np.zeros((0, 6), np.float32))
        t0 = perf_counter()
        with self.activate():
            staged = self._export_fitted(self.comm.rank, copy)
        self._fetch_ms = 1e3 * (perf_counter() - t0)
        return staged

    def _export_fitted(self, skip: int, copy: bool = True):
        """(in the context) The export against self._boxes but boxes[skip], waited for and
        queued again while its list or output grows: _fetch's (cells, particles, rows per
        rank)."""
        for _ in range(EXPORT_TRIES):
            self._queue_export(skip)
            staged = self._fetch(copy)
            if staged is not None:
                return staged
        raise EngineError("the LET export found no room on the device; "
                          "use fewer particles per GPU")
