"""The launches of one force evaluation, phase by phase (all asynchronous; no host copies).

keys_sort: bounding cube, keys, 8 radix passes of 8 bits (histogram, scan, stable scatter),
reorder of pos4/vel4/id into the idle particle set, which becomes current.
build: root, one launch per level (split + link with a look-back scan), groups (runs of the
sorted order, split where loose).
multipoles: one launch per level, deepest first (float64, stored as float32 for the walk).
walk: the persistent group-wise tree walk.
"""
from __future__ import annotations

from galaxyview.engines.gpu.constants import (MAX_LEVEL, SCAN_TILE, SORT_TILE, ST_WALK_NEXT,
                                              STATUS_WORDS)
from galaxyview.errors import EngineError

RADIX_PASSES = 8  # 63-bit keys, 8 bits a pass
T256 = (256, 1, 1)


def run_force(eng, ev) -> None:
    """Accelerations and potentials of the current positions into buf 'acc' (sorted order).
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
    sm = eng._n_sm
    grid = (eng._grid(), 1, 1)
    persistent = (sm * 4, 1, 1)
    # -- keys_sort
    pos, vel = b.set_ptrs(eng._cur)
    k.launch("bbox_partial", (sm * 4, 1, 1), T256, pos, n, p("bbox"), p("status"))
    k.launch("bbox_final", (1, 1, 1), (32, 1, 1), p("bbox"), sm * 4, p("frame"))
    k.launch("make_keys", grid, T256, pos, n, p("frame"), p("keys0"), p("vals0"))
    ntiles = -(-n // SORT_TILE)
    ncounts = 256 * ntiles
    scan_grid = (max(1, min(-(-ncounts // SCAN_TILE), sm * 4)), 1, 1)
    src = 0
    for r in range(RADIX_PASSES):
        shift, dst = 8 * r, 1 - src
        k.launch("radix_hist", (ntiles, 1, 1), T256, p(f"keys{src}"), n, shift, p("counts"),
                 ntiles)
        counter, epoch = eng.next_slot()
        k.launch("scan_excl", scan_grid, T256, p("counts"), p("offsets"), ncounts, p("desc"),
                 counter, epoch)
        k.launch("radix_scatter", (ntiles, 1, 1), T256, p(f"keys{src}"), p(f"vals{src}"),
                 p(f"keys{dst}"), p(f"vals{dst}"), n, shift, p("counts"), p("offsets"), ntiles)
        src = dst
    new = 1 - eng._cur
    npos, nvel = b.set_ptrs(new)
    k.launch("reorder", grid, T256, p(f"vals{src}"), n, pos, vel, p(f"id{eng._cur}"), npos, nvel,
             p(f"id{new}"))
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
    counter, epoch = eng.next_slot()
    k.launch("make_groups", persistent, T256, n, b.gmax, eng.group_split, b.group_cap, p("lb"),
             keys, p("group_begin"), p("group_count"), p("status"), p("desc"), counter, epoch)
    if ev:
        ev[3].record()
    # -- multipoles
    mom = b.moments_ptr(1 - new)
    for lev in range(MAX_LEVEL, -1, -1):
        k.launch("multipoles_level", persistent, T256, lev, float(eng.params.theta), p("lb"),
                 p("begin"), p("count"), p("child"), p("nchild"), keys, npos, p("frame"), mom,
                 p("cell_mac"), p("cell_q0"), p("cell_q1"), p("cell_link"), p("status"))
    if ev:
        ev[4].record()
    # -- walk
    walk = ("walk", (b.walk_grid, 1, 1), (b.walk_threads, 1, 1), npos, p("cell_mac"),
            p("cell_q0"), p("cell_q1"), p("cell_link"), p("group_begin"), p("group_count"),
            p("acc"), p("stacks"), p("status"), eps2, G, eng.pp_leaf)
    k.launch(*walk, 0.0, 0.0, 0.0, 0)
    for o in eng._ghosts():  # periodic images: the tree walked again by targets moved by -o
        cuda.memset_d32_async(p("status") + 8 * ST_WALK_NEXT, 0, 2)
        k.launch(*walk, float(o[0]), float(o[1]), float(o[2]), 1)
    if ev:
        ev[5].record()
