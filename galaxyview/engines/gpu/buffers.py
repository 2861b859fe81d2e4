"""Device memory of the GPU engine: every buffer the step needs, allocated up front and grown
by a factor when N (or the tree) outgrows it; nothing is allocated in the step path.

Per particle (capacity n_cap): two sets of pos4 + vel4 (float4 each; the step's reorder
gathers from one set into the other), two id arrays (original index), acc4 (ax, ay, az, phi),
two key and two value arrays for the radix sort. Per cell (capacity cell_cap): level, begin,
count, child, nchild, parent (int32), cell_mac (com, r_open^2), cell_q0/q1 (Q and mass),
cell_link (child or body range). The float64 moments (80 B a cell) live in the idle particle
set, which is free once the reorder is done.

Buffers only some steps need (forces on an active subset, the relative MAC, refits) are
allocated when first asked for (`per_particle`, `per_cell`) and then grown with the others.
"""
from __future__ import annotations

from galaxyview.engines.gpu.constants import SCAN_TILE, SORT_TILE, STACK_CAP, STATUS_WORDS
from galaxyview.errors import EngineError

MOMENT_BYTES = 80
TREE_BLOCKS_PER_SM = 4  # the persistent grid of the tree kernels (phases.py)


def cell_capacity(n_cap: int) -> int:
    """Cells to reserve for n particles: a Plummer sphere needs ~0.23 N (N_leaf = 16)."""
    return int(0.3 * n_cap) + 4096


class Buffers:
    def __init__(self, cuda, device_name: str, gmax: int):
        self._cuda = cuda
        self.gmax = gmax
        self._device_name = device_name
        self._allocs: dict[str, object] = {}
        self._sizes: dict[str, int] = {}
        self.n_cap = 0
        self.cell_cap = 0
        self.group_cap = 0
        self.walk_grid = 0
        self.walk_threads = 0
        self.tree_blocks = 0
        self._extra_particle: dict[str, int] = {}  # name -> bytes a particle
        self._extra_cell: dict[str, int] = {}  # name -> bytes a cell

    # -- allocation ------------------------------------------------------------------------
    def _alloc(self, name: str, nbytes: int, zero: bool = False) -> bool:
        """Room for nbytes under `name`; True when it was allocated (anew) now."""
        nbytes = max(int(nbytes), 16)
        if self._sizes.get(name, -1) >= nbytes:
            return False
        old = self._allocs.pop(name, None)
        if old is not None:
            old.free()
            self._sizes.pop(name)
        try:
            self._allocs[name] = self._cuda.mem_alloc(nbytes)
        except self._cuda.MemoryError:
            free, total = self._cuda.mem_get_info()
            raise EngineError(
                f"out of GPU memory: {self.n_cap:,} particles need {self.total_bytes() / 2**20 + nbytes / 2**20:,.0f} MiB "
                f"on {self._device_name} ({free / 2**20:,.0f} of {total / 2**20:,.0f} MiB free); "
                "use fewer particles or --backend cpu") from None
        self._sizes[name] = nbytes
        if zero:
            self._cuda.memset_d8(self._allocs[name], 0, nbytes)
        return True

    def room(self, name: str, nbytes: int) -> bool:
        """Room for nbytes under `name`, grown to a quarter more when it is short (buffers
        whose size follows the step, e.g. the imported LETs); True when allocated now."""
        if self._sizes.get(name, -1) >= nbytes:
            return False
        return self._alloc(name, int(1.25 * nbytes))

    def ptr(self, name: str) -> int:
        return int(self._allocs[name])

    def total_bytes(self) -> int:
        return sum(self._sizes.values())

    def free(self) -> None:
        for alloc in self._allocs.values():
            alloc.free()
        self._allocs.clear()
        self._sizes.clear()

    # -- sizing ----------------------------------------------------------------------------
    def ensure(self, n: int, n_sm: int, walk_blocks_per_sm: int, walk_threads: int) -> None:
        """Room for n particles (grown by 1.25x beyond the last capacity)."""
        self.tree_blocks = TREE_BLOCKS_PER_SM * n_sm
        if n > self.n_cap:
            self.n_cap = n if self.n_cap == 0 else max(n, int(1.25 * self.n_cap))
            self.cell_cap = max(self.cell_cap, cell_capacity(self.n_cap))
            self._particles()
            self._cells()
        if not self.walk_grid:
            self.walk_grid = n_sm * walk_blocks_per_sm
            self.walk_threads = walk_threads
            self._alloc("stacks", self.walk_grid * (walk_threads // 32) * STACK_CAP * 4)
            self._alloc("status", STATUS_WORDS * 8)
            self._alloc("lb", 32 * 4)
            self._alloc("frame", 8 * 4)
            self._alloc("bbox", self.tree_blocks * 6 * 4)
            self._alloc("sums", 2 * 8)

    def per_particle(self, name: str, nbytes: int) -> int:
        """A buffer of nbytes a particle (allocated on first use, grown with N): its pointer."""
        self._extra_particle[name] = nbytes
        self._alloc(name, nbytes * self.n_cap, zero=name.startswith("desc"))
        return self.ptr(name)

    def per_cell(self, name: str, nbytes: int) -> int:
        """A buffer of nbytes a cell (allocated on first use, grown with the cells)."""
        self._extra_cell[name] = nbytes
        self._alloc(name, nbytes * self.cell_cap)
        return self.ptr(name)

    def grow_cells(self) -> None:
        self.cell_cap = int(1.5 * self.cell_cap)
        self._cells()

    def _particles(self) -> None:
        n = self.n_cap
        for s in (0, 1):
            self._alloc(f"set{s}", max(32 * n, MOMENT_BYTES * self.cell_cap))
            self._alloc(f"id{s}", 4 * n)
            self._alloc(f"keys{s}", 8 * n)
            self._alloc(f"vals{s}", 4 * n)
        self._alloc("acc", 16 * n)
        ntiles = -(-n // SORT_TILE)
        self._alloc("counts", 256 * ntiles * 4)
        self._alloc("offsets", 256 * ntiles * 4)
        for name, nbytes in self._extra_particle.items():
            self._alloc(name, nbytes * n, zero=name.startswith("desc"))

    def _cells(self) -> None:
        c = self.cell_cap
        for name in ("level", "begin", "count", "child", "nchild", "parent"):
            self._alloc(name, 4 * c)
        for name in ("cell_mac", "cell_q0", "cell_q1"):
            self._alloc(name, 16 * c)
        self._alloc("cell_link", 8 * c)
        self.group_cap = min(self.n_cap, c + self.n_cap // self.gmax) + 2
        self._alloc("group_begin", 4 * self.group_cap)
        self._alloc("group_count", 4 * self.group_cap)
        if MOMENT_BYTES * c > self._sizes["set0"]:  # the idle particle set is too small
            self._alloc("moments", MOMENT_BYTES * c)
        ntiles_sort_scan = -(-256 * -(-self.n_cap // SORT_TILE) // SCAN_TILE)
        # build_level: tiles of 32 cells or more, or of one where a level has no more cells
        # than the grid has blocks
        tiles = max(-(-c // 32), self.tree_blocks, ntiles_sort_scan) + 1
        self._alloc("desc", 8 * tiles, zero=True)
        for name, nbytes in self._extra_cell.items():
            self._alloc(name, nbytes * c)

    def set_ptrs(self, s: int) -> tuple[int, int]:
        """(pos4, vel4) device pointers of particle set s."""
        base = self.ptr(f"set{s}")
        return base, base + 16 * self.n_cap

    def moments_ptr(self, idle_set: int) -> int:
        if MOMENT_BYTES * self.cell_cap <= self._sizes[f"set{idle_set}"]:
            return self.ptr(f"set{idle_set}")
        return self.ptr("moments")
