"""The local density of a GPU rank's particles on its device: density.py's scheme, the keys,
sort and cells in kernels/parallel_density.cu, only the strays and the end cells through MPI.

The keys are those of the migration (domain_flags: Peano-Hilbert in the decomposition's
cube). The strays' rows (key, mass, index) are compacted into an outbox and sorted last; the
ones that came are appended; the set is sorted by key (7 passes: bits 8 to 63, enough for
levels <= 16); the masses' prefix sums (float64) give a cell's mass from its two ends, found
by galloping from the particle. The values stay on the device for the splat, in the current
order, until the next force evaluation reorders the particles.
"""
from __future__ import annotations

from time import perf_counter

import numpy as np

from galaxyview.engines.gpu.constants import SCAN_TILE, SORT_TILE
from galaxyview.engines.gpu.phases import radix_sort
from galaxyview.engines.parallel import density
from galaxyview.engines.parallel.let_device import T

STRAYS_MIN = 4096  # rows of the first outbox
PREFIX_TILE = 2048  # sorted positions a block of the prefix sums
WHAT = "the density colouring"


class DeviceDensity:
    """One GPU rank's density (log10, float32, the current order) in buffer 'density_values'
    (`values()`), kept until its evaluation count changes."""

    def __init__(self, rank):
        self.rank = rank
        self.made_at = None  # the rank's evaluation count when the values were made
        self.strays_out = self.strays_in = 0
        self.ms = 0.0  # what the last values took (wall clock, the exchanges included)

    def values(self) -> int:
        """Collective: the device pointer of the values, made anew after a force
        evaluation."""
        r = self.rank
        if self.made_at != r.evaluations:
            self.made_at = None
            t0 = perf_counter()
            self._make()
            self.made_at, self.ms = r.evaluations, 1e3 * (perf_counter() - t0)
        return r.buf.ptr("density_values")

    def _make(self) -> None:
        """Collective. A part that fails here skips this rank's later parts; the exchanges
        still run (with nothing from here), then every rank raises (RankMixin.agree)."""
        r, failed = self.rank, []

        def local(work, *args, empty=None):
            if failed:
                return empty
            try:
                with r.activate():
                    return work(*args)
            except Exception as exc:  # noqa: BLE001 (raised after the exchanges)
                failed.append(exc)
                return empty
        rows = local(self._input, empty=np.zeros((0, 4), np.uint32))
        keys = rows[:, 0].astype(np.uint64) | (rows[:, 1].astype(np.uint64) << np.uint64(32))
        mass = rows[:, 2].view(np.float32).astype(np.float64)
        _, order, got_keys, got_mass, came = density.send_strays(r.comm, keys, mass, r.cuts)
        ends, placed = local(self._sort, got_keys, got_mass, len(rows),
                             empty=(np.zeros((density.LEVELS, density.ROW), np.uint64), None))
        shared = density.shared_ends(r.comm, ends)
        got = local(self._values, ends, shared, len(got_keys), placed,
                    empty=np.zeros(len(got_keys)))
        local(self._put, rows[order, 3], density.return_strays(r.comm, got, came))
        r.agree(failed[0] if failed else None, WHAT)
        self.strays_out, self.strays_in = len(rows), len(got_keys)

    def _input(self) -> np.ndarray:
        """(in the context) Keys, values and masses of the sort's input; the strays' rows
        (m, 4) uint32: key low and high word, mass bits, index."""
        r = self.rank
        b, n, p = r.buf, r._n, r.buf.ptr
        r._sync()
        cuts = np.ascontiguousarray(r.cuts, np.uint64)
        b._alloc("density_cuts", max(cuts.nbytes, 8))
        if len(cuts):
            r._cuda.memcpy_htod(p("density_cuts"), cuts)
        for name, width in (("density_flag", 4), ("density_owner", 4)):
            b.room(name, width * n)
        self._room(n)
        return self._fill()

    def _fill(self) -> np.ndarray:
        """(in the context) _input's work on the device; the strays' rows."""
        r = self.rank
        b, k, n, p = r.buf, r.kernels, r._n, r.buf.ptr
        lo, _, scale = r.cube
        pos, _ = b.set_ptrs(r._cur)
        grid = (r._grid(), 1, 1)
        k.launch("domain_flags", grid, T, pos, n, float(lo[0]), float(lo[1]), float(lo[2]),
                 float(scale), p("density_cuts"), len(r.cuts), r.comm.rank, p("density_flag"),
                 p("density_owner"), p("density_keys1"), 0, 0, 0.0, 0.0)
        cap = max(STRAYS_MIN, b._sizes.get("density_strays", 0) // 16)
        while True:
            b.room("density_strays", 16 * cap)
            r._cuda.memset_d32(p("density_count"), 0, 1)
            k.launch("density_input", grid, T, pos, n, p("density_flag"), p("density_keys1"),
                     p("density_keys0"), p("density_vals0"), p("density_mass"),
                     p("density_strays"), cap, p("density_count"))
            count = int(r._download(p("density_count"), np.int32, 1)[0])
            if count <= cap:
                break
            cap = count
        return r._download(p("density_strays"), np.uint32, 4 * count).reshape(-1, 4)

    def _room(self, n: int) -> bool:
        """(in the context) Room for a set of n; True where the sort's input was moved (its
        buffers grown: _fill again)."""
        b, grown = self.rank.buf, False
        for name, width in (("density_keys0", 8), ("density_keys1", 8), ("density_vals0", 4),
                            ("density_vals1", 4), ("density_mass", 4), ("density_P", 8)):
            grown = b.room(name, width * (n + 1)) or grown
        tiles = -(-n // SORT_TILE) * 256  # radix_sort's digit counts
        b.room("density_counts", 4 * tiles)
        b.room("density_offsets", 4 * tiles)
        b.room("density_sums", 8 * (n // PREFIX_TILE + 1))
        b._alloc("density_count", 4)
        b._alloc("density_ctr", 8 * 8)
        b._alloc("density_desc", 8 * (tiles // SCAN_TILE + 2), zero=True)  # epochs: zeros once
        return grown

    def _sort(self, got_keys: np.ndarray, got_mass: np.ndarray, out: int):
        """(in the context) The strays that came appended, the set sorted, the masses'
        prefix sums: (this set's end cells (density.end_cells' rows), where the set lies:
        (the sorted buffers' set, its size, the end of its first cell and the start of its
        last, at each level))."""
        r = self.rank
        b, k, n, p, cuda = r.buf, r.kernels, r._n, r.buf.ptr, r._cuda
        m = len(got_keys)
        total = n + m
        if self._room(total):
            self._fill()
        if m:
            cuda.memcpy_htod(p("density_keys0") + 8 * n, np.ascontiguousarray(got_keys))
            cuda.memcpy_htod(p("density_vals0") + 4 * n, np.arange(n, total, dtype=np.uint32))
            cuda.memcpy_htod(p("density_mass") + 4 * n, got_mass.astype(np.float32))
        cuda.memset_d32(p("density_ctr"), 0, 16)
        passes = iter(range(8))

        def slot():  # a tile counter of the density's own, zeroed above, a pass
            return p("density_ctr") + 8 * next(passes), r.next_epoch()
        src = radix_sort(r, ("density_keys0", "density_keys1"),
                         ("density_vals0", "density_vals1"), total, range(8, 64, 8),
                         ("density_counts", "density_offsets", "density_desc"), slot)
        s = total - out
        ends = np.zeros((density.LEVELS, density.ROW), np.uint64)
        if s == 0:
            return ends, (src, 0, None, None)
        keys, vals = p(f"density_keys{src}"), p(f"density_vals{src}")
        blocks = s // PREFIX_TILE + 1
        k.launch("density_block_sums", (blocks, 1, 1), T, vals, p("density_mass"), s,
                 p("density_sums"))
        k.launch("density_scan_sums", (1, 1, 1), (1024, 1, 1), p("density_sums"), blocks)
        k.launch("density_prefix", (blocks, 1, 1), T, vals, p("density_mass"), s,
                 p("density_sums"), p("density_P"))
        b._alloc("density_ends", 8 * 6 * density.LEVELS)
        k.launch("density_ends", (1, 1, 1), (32, 1, 1), keys, s, p("density_P"),
                 p("density_ends"))
        e = r._download(p("density_ends"), np.uint64, 6 * density.LEVELS).reshape(-1, 6)
        f_end, g_start = e[:, 2].astype(np.int64), e[:, 3].astype(np.int64)
        counts = np.stack([f_end, s - g_start], axis=1).astype(np.float64)
        ends[:, 0], ends[:, 1], ends[:, 2] = 1, e[:, 0], e[:, 1]
        ends[:, 3], ends[:, 5] = counts[:, 0].view(np.uint64), counts[:, 1].view(np.uint64)
        ends[:, 4], ends[:, 6] = e[:, 4], e[:, 5]
        return ends, (src, s, f_end, g_start)

    def _values(self, ends: np.ndarray, shared: np.ndarray, m: int, placed) -> np.ndarray:
        """(in the context) Every sorted position's value; the strays that came, theirs
        (float64, in the order they came). placed: _sort's."""
        r = self.rank
        src, s, f_end, g_start = placed
        b, k, n, p = r.buf, r.kernels, r._n, r.buf.ptr
        b.room("density_values", 4 * n)
        b.room("density_came", 4 * max(m, 1))
        if s == 0:
            return np.zeros(0)
        mine = ends[:, 3:].view(np.float64)  # count, mass of the first; of the last
        glob = np.stack([f_end, g_start, mine[:, 0] + shared[:, 0], mine[:, 1] + shared[:, 1],
                         mine[:, 2] + shared[:, 2], mine[:, 3] + shared[:, 3]], axis=1)
        b._alloc("density_glob", 8 * glob.size)
        r._cuda.memcpy_htod(p("density_glob"), np.ascontiguousarray(glob, np.float64))
        k.launch("density_values", (-(-s // 256), 1, 1), T, p(f"density_keys{src}"),
                 p(f"density_vals{src}"), s, p("density_P"), p("density_glob"),
                 float(r.cube[1]), n, p("density_values"), p("density_came"))
        return r._download(p("density_came"), np.float32, m).astype(np.float64)

    def _put(self, index: np.ndarray, values: np.ndarray) -> None:
        """(in the context) This rank's strays' values (back from their hosts) into place."""
        r = self.rank
        b, p, m = r.buf, r.buf.ptr, len(index)
        if m:
            b.room("density_back", 8 * m)
            r._cuda.memcpy_htod(p("density_back"), np.ascontiguousarray(index, np.uint32))
            r._cuda.memcpy_htod(p("density_back") + 4 * m, values.astype(np.float32))
            r.kernels.launch("density_put", (r._grid(m), 1, 1), T, p("density_values"),
                             p("density_back"), p("density_back") + 4 * m, m)
        r._sync()
