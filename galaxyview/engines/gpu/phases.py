"""The launches of one force evaluation, phase by phase (all asynchronous; no host copies).

keys_sort: bounding cube, keys, 8 radix passes of 8 bits (histogram, scan, stable scatter),
reorder of pos4/vel4/id into the idle particle set, which becomes current.
build: root, one launch per level (split + link with a look-back scan), groups (runs of the
sorted order, split where loose).
multipoles: one launch per level, deepest first (float64, stored as float32 for the walk), with
each cell's particle box for the MAC's l and delta.
walk: the persistent group-wise tree walk.

Forces on an active subset (engines/system.py DeviceActive) either rebuild the tree or refit
it (keys_sort and build skipped: the cells of the last build get new moments and boxes of
their particles, which bound where they have moved); then the active particles are compacted
in the sorted order and cut into groups of their own, which alone walk (walk_ext). The
relative MAC (params.mac = "acceleration", once every particle has an acceleration) carries
the accelerations through the sort and walks with walk_ext.
"""
from __future__ import annotations

from galaxyview.engines.gpu.constants import (MAX_LEVEL, SCAN_TILE, SORT_TILE, ST_WALK_NEXT,
                                              STATUS_WORDS)
from galaxyview.errors import EngineError

RADIX_PASSES = 8  # 63-bit keys, 8 bits a pass
ACTIVE_GMAX_MIN = 8  # smallest groups of active particles (a quarter warp)
T256 = (256, 1, 1)


def run_force(eng, ev, active=None, refit: bool = False) -> None:
    """Accelerations and potentials of the current positions into buf 'acc' (sorted order):
    of all particles, or of `active` (a DeviceActive) on a rebuilt or (refit) refitted tree.
    ev: event list (records 2..5 after each phase) or None."""
    cuda, k, b, n = eng._cuda, eng.kernels, eng.buf, eng._n
    p = b.ptr
    cuda.memset_d32_async(p("status"), 0, 2 * STATUS_WORDS)
    eng._slot = 0
    eps2, G = float(eng.params.eps) ** 2, float(eng.params.G)
    if eng.gravity == "direct":
        if len(eng._ghosts()):
            raise EngineError("ghost boxes (the shearing sheet's self-gravity) need tree "
                              "gravity on the GPU engine; leave the gravity unset")
        pos, _ = b.set_ptrs(eng._cur)
        if ev:
            ev[4].record()
        k.launch("direct_forces", (-(-n // 256), 1, 1), T256, pos, n, eps2, G, p("acc"))
        if ev:
            ev[5].record()
        return
    grid = (eng._grid(), 1, 1)
    persistent = (eng.buf.tree_blocks, 1, 1)
    relative = eng.params.mac == "acceleration"
    amac = relative and eng._acc_valid  # else Bonsai's MAC, as GADGET's first evaluation
    if refit:
        npos, _ = b.set_ptrs(eng._cur)
        k.launch("bbox_partial", persistent, T256, npos, n, p("bbox"), p("status"))  # NaN
        if ev:
            ev[2].record()
    else:
        npos = _sort_and_build(eng, ev, grid, persistent, relative, groups=active is None)
    keys = p("keys0")  # the sorted keys (an even number of radix passes ends in set 0)
    if active is not None:
        _active_groups(eng, active, keys, persistent)
    if ev:
        ev[3].record()
    # -- multipoles
    theta = 1.0 if amac else float(eng.params.theta)  # the relative MAC's part d > l + delta
    box = b.per_cell("cell_box", 24)  # the particles' box a cell (the MAC's l and delta)
    ml2 = b.per_cell("cell_ml2", 4) if amac else 0
    mom = b.moments_ptr(1 - eng._cur)
    for lev in range(MAX_LEVEL, -1, -1):
        k.launch("multipoles_level", persistent, T256, lev, theta, p("lb"), p("begin"),
                 p("count"), p("child"), p("nchild"), keys, npos, p("frame"), mom,
                 p("cell_mac"), p("cell_q0"), p("cell_q1"), p("cell_link"), p("status"),
                 box, ml2)
    eng._before_walk(ev)
    if ev:
        ev[4].record()
    # -- walk
    walk_args = walk_arguments(eng, npos)
    idx = 0 if active is None else p("active_idx")
    ext = ("walk_ext", (b.walk_grid, 1, 1), (b.walk_threads, 1, 1), *walk_args, idx, ml2,
           float(eng.params.alpha))
    if active is None and not amac:
        if not eng._walk_later(ev):  # (a parallel rank may walk its tree later, with the LETs)
            k.launch("walk", (eng._walk_launch_blocks(), 1, 1), (b.walk_threads, 1, 1),
                     *walk_args)
    else:
        k.launch(*ext, 0.0, 0.0, 0.0, 0)
    for o in eng._ghosts():  # periodic images: the tree walked again by targets moved by -o
        cuda.memset_d32_async(p("status") + 8 * ST_WALK_NEXT, 0, 2)
        k.launch(*ext, float(o[0]), float(o[1]), float(o[2]), 1)
    if ev:
        ev[5].record()


def walk_arguments(eng, pos: int, cells: str = "cell_", out: str = "acc",
                   stacks: int | None = None) -> tuple:
    """The arguments the walk kernels (walk, walk_ext, walk_roots) begin with: positions
    `pos`, the cells `cells` + mac, q0, q1, link, the groups, the output buffer `out`, the
    warps' stacks (None: buf 'stacks' from its start), status, eps^2, G, the leaf p-p bound."""
    p = eng.buf.ptr
    return (pos, *(p(cells + k) for k in ("mac", "q0", "q1", "link")), p("group_begin"),
            p("group_count"), p(out), p("stacks") if stacks is None else stacks, p("status"),
            float(eng.params.eps) ** 2, float(eng.params.G), eng.pp_leaf)


def _active_groups(eng, active, keys, persistent) -> None:
    """The active particles (sorted order) compacted into active_idx / active_keys and cut
    into groups as make_groups cuts all particles."""
    k, b, n = eng.kernels, eng.buf, eng._n
    p = b.ptr
    idx, akeys = b.per_particle("active_idx", 4), b.per_particle("active_keys", 8)
    desc = b.per_particle("desc_active", 1)  # a descriptor a tile of 256
    counter, epoch = eng.next_slot()
    k.launch("compact_active", persistent, T256, n, p(f"id{eng._cur}"), active.level,
             active.kmin, keys, idx, akeys, desc, counter, epoch)
    counter, epoch = eng.next_slot()
    k.launch("make_groups", persistent, T256, active.count, active_gmax(eng, active.count),
             eng.group_split, b.group_cap, p("lb"), akeys, p("group_begin"), p("group_count"),
             p("status"), p("desc"), counter, epoch)


def active_gmax(eng, count: int) -> int:
    """Group size for `count` active particles: smaller groups (down to ACTIVE_GMAX_MIN) when
    full ones would leave the walk's warps idle (at least 2 groups a warp)."""
    b = eng.buf
    warps = b.walk_grid * (b.walk_threads // 32)
    g = b.gmax
    while g > ACTIVE_GMAX_MIN and count < 2 * warps * g:
        g //= 2
    return g


def radix_sort(eng, keys: tuple, vals: tuple, n: int, shifts,
               scratch: tuple = ("counts", "offsets", "desc"), next_slot=None) -> int:
    """Queue the stable sort of n uint64 keys with their uint32 values, 8 bits a pass from
    each of `shifts`, between the buffers keys[0], keys[1] (vals[0], vals[1]), starting in
    set 0; returns the set holding the result. scratch: the digit counts, their offsets and
    the look-back tiles (sized for n); next_slot() -> (tile counter, epoch) of a pass's scan
    (the engine's by default)."""
    k, p = eng.kernels, eng.buf.ptr
    counts, offsets, desc = (p(name) for name in scratch)
    ntiles = -(-n // SORT_TILE)
    ncounts = 256 * ntiles
    scan_grid = (max(1, min(-(-ncounts // SCAN_TILE), eng.buf.tree_blocks)), 1, 1)
    src = 0
    for shift in shifts:
        dst = 1 - src
        k.launch("radix_hist", (ntiles, 1, 1), T256, p(keys[src]), n, shift, counts, ntiles)
        counter, epoch = (next_slot or eng.next_slot)()
        k.launch("scan_excl", scan_grid, T256, counts, offsets, ncounts, desc, counter, epoch)
        k.launch("radix_scatter", (ntiles, 1, 1), T256, p(keys[src]), p(vals[src]),
                 p(keys[dst]), p(vals[dst]), n, shift, counts, offsets, ntiles)
        src = dst
    return src


def _sort_and_build(eng, ev, grid, persistent, relative: bool, groups: bool) -> int:
    """keys_sort and build (groups of all particles when `groups`); the new current pos4.
    relative: the accelerations follow the particles through the reorder."""
    cuda, k, b, n = eng._cuda, eng.kernels, eng.buf, eng._n
    p = b.ptr
    # -- keys_sort
    pos, vel = b.set_ptrs(eng._cur)
    k.launch("bbox_partial", persistent, T256, pos, n, p("bbox"), p("status"))
    k.launch("bbox_final", (1, 1, 1), (32, 1, 1), p("bbox"), persistent[0], p("frame"))
    k.launch("make_keys", grid, T256, pos, n, p("frame"), p("keys0"), p("vals0"))
    src = radix_sort(eng, ("keys0", "keys1"), ("vals0", "vals1"), n,
                     range(0, 8 * RADIX_PASSES, 8))
    new = 1 - eng._cur
    npos, nvel = b.set_ptrs(new)
    k.launch("reorder", grid, T256, p(f"vals{src}"), n, pos, vel, p(f"id{eng._cur}"), npos, nvel,
             p(f"id{new}"))
    if relative:
        acc_in = b.per_particle("acc_in", 16)
        cuda.memcpy_dtod_async(acc_in, p("acc"), 16 * n)
        k.launch("reorder_acc", grid, T256, p(f"vals{src}"), n, acc_in, p("acc"))
    eng._cur = new
    keys = p(f"keys{src}")
    if ev:
        ev[2].record()
    # -- build
    cells = (p("lb"), p("level"), p("begin"), p("count"), p("child"), p("nchild"), p("parent"))
    k.launch("tree_init", (1, 1, 1), (32, 1, 1), n, p("lb"), p("level"), p("begin"), p("count"),
             p("parent"))
    for lev in range(MAX_LEVEL + 1):
        counter, epoch = eng.next_slot()
        k.launch("build_level", persistent, T256, lev, eng.params.n_leaf, b.cell_cap, keys,
                 *cells, p("status"), p("desc"), counter, epoch)
    if groups:
        counter, epoch = eng.next_slot()
        k.launch("make_groups", persistent, T256, n, b.gmax, eng.group_split, b.group_cap,
                 p("lb"), keys, p("group_begin"), p("group_count"), p("status"), p("desc"),
                 counter, epoch)
    return npos
