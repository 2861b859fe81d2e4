"""Local essential trees (LET): what one rank's tree must show another rank.

Export: the local tree is walked against the bounding box of a remote domain with the walk's
MAC (engines/cpu/walk.py: distance from the box to the cell's centre of mass above
l/theta + delta). A cell accepted against the whole box is accepted by every group inside it,
so it is sent as a multipole without children; an opened leaf is sent with its particles; an
opened internal cell with its children. The cells keep the tree's breadth-first order (the
children of a sent cell stay contiguous), as one table of float32 rows (68 bytes a cell, the
link columns int32 bits: `links`), the particles as float32 x y z m (16 bytes): what the trees
hold, so nothing is rounded but the CPU trees' float64 extent and delta (the MARGIN covers it).
kernels/parallel_let.cu builds the same rows on the device (let_device.py).

Import: a LET becomes an extra tree of the local walk (`extra_tree`): the LET's particles
(sources only) followed by the local particles (targets, in the local groups), and the LET's
cells; the engine's own walk (numpy or numba) evaluates it, and the local particles' rows of
the result are added to the local forces.
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.cpu.cells import Tree, ranges

MARGIN = 1 + 1e-5  # accept against a box only with this margin (float32 rounding of the walk)
# columns of a LET cell row
_COM, _MASS, _QUAD, _EXTENT, _DELTA, _KID0, _KIDS, _BODY0, _BODIES, _ROPEN2 = \
    0, 3, 4, 10, 11, 12, 13, 14, 15, 16
CELL_WIDTH = 17
PARTICLE_WIDTH = 4  # x y z m
LINKS = slice(_KID0, _BODIES + 1)  # first child, children, first particle, particles (int32)


def links(cells: np.ndarray) -> np.ndarray:
    """(C, 4) int64 first child, children, first particle, particles of LET cell rows."""
    return cells[:, LINKS].view(np.int32).astype(np.int64)


def empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((0, CELL_WIDTH), np.float32), np.zeros((0, PARTICLE_WIDTH), np.float32)


def domain_box(pos32: np.ndarray) -> np.ndarray:
    """(6,) float32 lo, hi of a rank's particles (an empty domain: an inverted box)."""
    if len(pos32) == 0:
        return np.r_[np.full(3, np.inf), np.full(3, -np.inf)].astype(np.float32)
    return np.r_[pos32.min(axis=0), pos32.max(axis=0)].astype(np.float32)


def opening_radii2(tree: Tree, theta: float) -> np.ndarray:
    """The walk's squared opening radii (l/theta + delta)^2 in float32, as both walks square
    them."""
    ropen = (tree.extent / theta + tree.delta).astype(np.float32)
    return ropen * ropen


def valid_boxes(boxes) -> np.ndarray:
    """(B, 6) float32 boxes (lo, hi) without the empty (inverted) ones; the boxes as they are,
    without a copy, when none is empty (a domain's 145k groups every step)."""
    q = np.ascontiguousarray(boxes, np.float32).reshape(-1, 6)
    ok = (q[:, 0] <= q[:, 3]) & (q[:, 1] <= q[:, 4]) & (q[:, 2] <= q[:, 5])
    return q if ok.all() else np.ascontiguousarray(q[ok])


def box_d2(c: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(F,) float32: the squared distance from each point c (F, 3) to the nearest of `boxes`
    (B, 6) lo, hi, float32 term by term without fused multiply-adds (as the device's)."""
    d2 = np.full(len(c), np.inf, np.float32)
    for k in range(0, len(boxes), 64):  # a block of boxes at a time
        lo, hi = boxes[k:k + 64, None, :3], boxes[k:k + 64, None, 3:]
        dv = np.maximum(np.maximum(lo - c, c - hi), np.float32(0))
        d2 = np.minimum(d2, (dv[..., 0] * dv[..., 0] + dv[..., 1] * dv[..., 1]
                             + dv[..., 2] * dv[..., 2]).min(axis=0))
    return d2


def export(tree: Tree, r_open2: np.ndarray, box: np.ndarray, pp_leaf: int = 0):
    """(cells (C, CELL_WIDTH), particles (P, 4)) float32: the LET of `tree` (its cells'
    squared opening radii `r_open2`) for a domain covered by `box`: (6,) lo, hi, or (B, 6)
    boxes (e.g. its groups'): a cell is accepted when it is far from every box. An empty
    domain (no box, or inverted ones) needs nothing. pp_leaf: leaves of at most this many
    particles go with their particles even when accepted (the GPU walk takes their pairs
    rather than the multipole). The test is float32 without fused multiply-adds, term by term
    as the device's."""
    boxes = valid_boxes(box)
    if not len(boxes):
        return empty()
    com = tree.com
    ropen2 = r_open2.astype(np.float32) * np.float32(MARGIN)
    frontier = np.zeros(1, np.int64)
    sent, accepted = [], []
    while len(frontier):
        acc = box_d2(com[frontier], boxes) > ropen2[frontier]
        sent.append(frontier)
        accepted.append(acc)
        opened = frontier[~acc & (tree.child_count[frontier] > 0)]
        frontier = ranges(tree.child_begin[opened], tree.child_count[opened])
    cells = np.concatenate(sent)
    acc = np.concatenate(accepted)
    kids = np.where(acc, 0, tree.child_count[cells])
    leaf = (~acc | (tree.body_count[cells] <= pp_leaf)) & (tree.child_count[cells] == 0)
    bodies = np.where(leaf, tree.body_count[cells], 0)
    body0 = np.cumsum(bodies) - bodies
    rows = np.empty((len(cells), CELL_WIDTH), np.float32)
    rows[:, _COM:_COM + 3] = tree.com[cells]
    rows[:, _MASS] = tree.cell_mass[cells]
    rows[:, _QUAD:_QUAD + 6] = tree.quad[cells]
    if tree.extent is not None:  # the CPU walks' opening radii come from these
        rows[:, _EXTENT] = tree.extent[cells]
        rows[:, _DELTA] = tree.delta[cells]
    else:  # a GPU tree brings its r_open^2 only
        rows[:, _EXTENT:_DELTA + 1] = 0
    rows[:, LINKS].view(np.int32)[:] = np.c_[
        np.where(kids > 0, np.searchsorted(cells, tree.child_begin[cells]), 0), kids, body0,
        bodies]
    rows[:, _ROPEN2] = r_open2[cells]
    at = ranges(tree.body_begin[cells[leaf]], bodies[leaf])
    particles = np.c_[tree.pos[at], tree.mass[at]].astype(np.float32)
    return rows, particles


def extra_tree(local: Tree, cells: np.ndarray, particles: np.ndarray) -> Tree:
    """A Tree whose groups are `local`'s and whose cells and source particles are a LET's:
    walking it gives the LET's forces on the local particles, the last local.n rows of the
    walk's result. (The LET's particles come first: a group's box is the reduce of its
    particles up to the next group's start, or to the end for the last one.)"""
    n = len(particles)
    pos = np.concatenate([particles[:, :3].astype(np.float32), local.pos])
    mass = np.concatenate([particles[:, 3].astype(np.float32), local.mass])
    n_cells = len(cells)
    kid0, kids, body0, bodies = links(cells).T
    extent = cells[:, _EXTENT].astype(np.float64)
    return Tree(
        keys=np.zeros(len(pos), np.uint64), order=np.arange(len(pos)), pos=pos, mass=mass,
        lo=local.lo, L=local.L, scale=local.scale, n_leaf=local.n_leaf,
        level=np.zeros(n_cells, np.int64),
        body_begin=body0, body_count=bodies, child_begin=kid0, child_count=kids,
        parent=np.full(n_cells, -1, np.int64), level_begin=np.array([0, n_cells], np.int64),
        center=cells[:, _COM:_COM + 3].astype(np.float64),
        size=extent, extent=extent,
        cell_mass=cells[:, _MASS].astype(np.float32),
        com=cells[:, _COM:_COM + 3].astype(np.float32),
        quad=cells[:, _QUAD:_QUAD + 6].astype(np.float32),
        delta=cells[:, _DELTA].astype(np.float64),
        group_begin=local.group_begin + n, group_count=local.group_count, n_crit=local.n_crit)


def device_forest(lets: list, n_local: int):
    """The LETs of several ranks as one forest in the GPU walk's layout, under a root that is
    always opened: cell_mac (com, r_open^2), cell_q0 (3Q xx yy zz xy), cell_q1 (3Q xz yz,
    trQ/2, mass), float32 (C, 4); cell_link int32 (C, 2): (first child, children), or for a
    leaf (first particle, -particles), or (0, 0) for a cell sent as a multipole only; and the
    LETs' particles pos4 (P, 4), to be placed after the n_local local ones."""
    sizes = [len(c) for c, _ in lets]
    n_cells = 1 + sum(sizes)
    mac = np.zeros((n_cells, 4), np.float32)
    q0, q1 = np.zeros_like(mac), np.zeros_like(mac)
    link = np.zeros((n_cells, 2), np.int32)
    mac[0, 3] = np.inf  # the root of the forest: never accepted, its children the LET roots
    link[0] = 1, len(lets)
    pos4 = np.concatenate([p for _, p in lets]).astype(np.float32) if lets else \
        np.zeros((0, 4), np.float32)
    # LET k's root is cell 1 + k (the forest root's children are contiguous); its other
    # cells follow all the roots, LET after LET
    base, body0 = 1 + len(lets), n_local
    for k, ((cells, particles), size) in enumerate(zip(lets, sizes)):
        at = np.r_[1 + k, base + np.arange(size - 1)]
        q = 3 * cells[:, _QUAD:_QUAD + 6]
        mac[at, :3], mac[at, 3] = cells[:, _COM:_COM + 3], cells[:, _ROPEN2]
        q0[at] = q[:, :4]
        q1[at, :2] = q[:, 4:6]
        q1[at, 2] = 0.5 * cells[:, _QUAD:_QUAD + 3].sum(axis=1)
        q1[at, 3] = cells[:, _MASS]
        kid0, kids, first_body, bodies = links(cells).T
        first_kid = base + kid0 - 1  # children are never a root
        link[at, 0] = np.where(kids > 0, first_kid, np.where(bodies > 0, body0 + first_body, 0))
        link[at, 1] = np.where(kids > 0, kids, -bodies)
        base, body0 = base + size - 1, body0 + len(particles)
    return mac, q0, q1, link, pos4
