"""The LET export on the device (kernels/parallel_let.cu) against let.export, the numpy
reference, on the same device tree: cells, links and particles identical, for several boxes,
sizes and pp_leaf; and the output grown when it overflows. Needs CUDA (no MPI: one process)."""
import numpy as np
import pytest

from galaxyview.engines.parallel import let
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

pytestmark = [pytest.mark.gpu]


def _engine(n, theta, seed):
    from galaxyview.engines.parallel.gpu_rank import GPURank

    eng = GPURank(Params(theta=theta, dt=1 / 64, eps=0.05))
    eng.load(plummer_sphere(n, np.random.default_rng(seed)))
    eng.accelerations()  # a tree of the current positions
    return eng


def _reference(eng, box):
    from galaxyview.engines.gpu import inspect
    from galaxyview.engines.parallel.gpu_rank import host_tree

    cells = inspect.download_tree(eng)
    return let.export(host_tree(cells, eng.params.n_leaf), cells["r_open2"], box, eng.pp_leaf)


def _device(eng, boxes: list, skip):
    """Every box's device LET but boxes[skip]'s, as let.export's (cells, particles), and
    the attempts it took (an output too small is grown)."""
    with eng.activate():
        eng._boxes = boxes
        for tries in range(1, 4):
            eng._queue_export(skip)
            staged = eng._fetch()
            if staged is not None:
                break
    cells, parts, per_rank = staged
    split_c, split_p = np.cumsum(per_rank[:, 0])[:-1], np.cumsum(per_rank[:, 1])[:-1]
    return list(zip(np.split(cells.copy(), split_c), np.split(parts.copy(), split_p))), tries


def _let_mass(cells, parts):
    """The mass of the cells a walk that opens everything reaches: multipoles without
    children or particles, and the particles."""
    _, kids, _, bodies = let.links(cells).T
    ends = (kids == 0) & (bodies == 0)
    return cells[ends, 3].astype(np.float64).sum() + parts[:, 3].astype(np.float64).sum()


def _boxes(pos, rng):
    """Boxes near, inside, across and far from the particles (far: beyond every opening
    radius, so the root alone is sent); an empty one."""
    lo, hi = np.percentile(pos, 5, axis=0), np.percentile(pos, 95, axis=0)
    out = [np.r_[lo, hi], np.r_[lo + 2 * (hi - lo), hi + 2 * (hi - lo)],
           np.r_[[0.0, -0.2, -0.2], [0.5, 0.2, 0.2]],
           np.r_[[1e4, 1e4, 1e4], [1e4 + 1, 1e4 + 1, 1e4 + 1]],  # far beyond any root's reach
           np.r_[np.full(3, np.inf), np.full(3, -np.inf)]]
    for _ in range(3):
        c = rng.standard_normal(3)
        out.append(np.r_[c - 0.3 * rng.random(3), c + 0.3 * rng.random(3)])
    return [np.array(b, np.float32).reshape(1, 6) for b in out] + _group_like(pos)


def _group_like(pos):
    """A domain in two pieces (every other particle beyond |x| = 1.5) described by many
    boxes (its particles binned in cubes of side 0.5, a box each, as groups are compact),
    and the same domain by its bounding box (which holds the middle too)."""
    p = pos[np.abs(pos[:, 0]) > 1.5][::2]
    _, cube = np.unique(np.floor(p / 0.5), axis=0, return_inverse=True)
    order = np.argsort(cube.reshape(-1), kind="stable")
    p = p[order]
    at = np.flatnonzero(np.r_[True, np.diff(cube.reshape(-1)[order]) != 0])
    boxes = np.c_[np.minimum.reduceat(p, at), np.maximum.reduceat(p, at)].astype(np.float32)
    whole = np.r_[boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)].astype(np.float32)
    return [boxes, whole.reshape(1, 6)]


@pytest.mark.parametrize("n, theta, pp_leaf", [(3000, 0.5, None), (60_000, 0.75, None),
                                                (400_000, 0.6, 0)])
def test_device_export_equals_the_reference(n, theta, pp_leaf):
    from galaxyview.engines.gpu import inspect

    eng = _engine(n, theta, n)
    if pp_leaf is not None:
        eng.pp_leaf = pp_leaf
    try:
        boxes = _boxes(inspect.download_tree(eng)["pos"], np.random.default_rng(1))
        skip = 5  # "this rank's" box: no LET for it
        got, tries = _device(eng, boxes, skip)
        sizes = []
        for r, box in enumerate(boxes):
            cells, parts = got[r]
            ref_cells, ref_parts = let.empty() if r == skip else _reference(eng, box)
            assert cells.shape == ref_cells.shape and parts.shape == ref_parts.shape, r
            assert np.array_equal(cells.view(np.int32), ref_cells.view(np.int32)), r
            assert np.array_equal(parts, ref_parts), r
            sizes.append((len(cells), len(parts)))
        assert sizes[4] == (0, 0) and sizes[3] == (1, 0)  # empty; far: the root alone
        assert max(c for c, _ in sizes) > 100  # the near boxes open much of the tree
        # many boxes: a part of the LET of their bounding box
        assert sizes[8][0] <= sizes[9][0] and sizes[8][1] < sizes[9][1]
        if n >= 400_000:  # more rows than the first output holds: grown, queued again
            assert tries == 2
        total = float(eng.state().mass.astype(np.float64).sum())
        for r, (cells, parts) in enumerate(got):  # each LET carries all the mass once
            if len(cells):
                assert _let_mass(cells, parts) == pytest.approx(total, rel=1e-5), r
    finally:
        eng.close()


def _remote_lets(n, seed, pp_leaf):
    """LETs of three remote trees (let.export on the CPU): near, overlapping and far boxes,
    so some carry particles and one the root alone."""
    from galaxyview.engines.cpu.tree import build_tree

    rng = np.random.default_rng(seed)
    out = []
    for shift, box in (((3, 0, 0), [-1, -1, -1, 1, 1, 1]), ((0.5, 0, 0), [-2, -2, -2, 2, 2, 2]),
                       ((0, 0, 0), [1e4, 1e4, 1e4, 1e4 + 1, 1e4 + 1, 1e4 + 1])):
        st = plummer_sphere(n, rng)
        tree = build_tree((st.pos + shift).astype(np.float32), st.mass.astype(np.float32))
        out.append(let.export(tree, let.opening_radii2(tree, 0.6), np.array(box, np.float32),
                              pp_leaf))
    assert len(out[2][0]) == 1 and len(out[2][1]) == 0 and len(out[0][1]) > 0
    return out


@pytest.mark.parametrize("n_local, n_remote", [(5000, 3000), (100_000, 300_000)])
def test_device_forest_equals_the_reference(n_local, n_remote):
    """let_forest (the received rows uploaded as they are, laid out on the device) builds
    the forest let.device_forest builds: every cell's MAC, quadrupole and links, and the
    particles behind the local ones, bit for bit."""
    eng = _engine(n_local, 0.75, 3)
    try:
        lets = _remote_lets(n_remote, n_local, eng.pp_leaf)
        cells = np.concatenate([c for c, _ in lets])
        parts = np.concatenate([p for _, p in lets])
        with eng.activate():
            eng._recv = {"cells": cells, "parts": parts}
            eng._upload_forest(lets)
            eng._sync()
            p, n = eng.buf.ptr, eng._n
            ref = let.device_forest(lets, n)
            c = len(ref[0])
            for name, want in zip(("let_mac", "let_q0", "let_q1"), ref[:3]):
                got = eng._download(p(name), np.float32, 4 * c).reshape(c, 4)
                assert np.array_equal(got.view(np.int32), want.view(np.int32)), name
            link = eng._download(p("let_link"), np.int32, 2 * c).reshape(c, 2)
            assert np.array_equal(link, ref[3])
            pos = eng._download(p("let_pos"), np.float32, 4 * (n + len(parts))).reshape(-1, 4)
            local, _ = eng.buf.set_ptrs(eng._cur)
            assert np.array_equal(pos[:n], eng._download(local, np.float32, 4 * n).reshape(-1, 4))
            assert np.array_equal(pos[n:], ref[4])
        assert c == 1 + len(cells) and (ref[3][1:, 1] < 0).any()  # leaves with particles
    finally:
        eng.close()


@pytest.mark.parametrize("n", [5000, 300_000])
def test_group_boxes_are_the_walks_groups(n):
    """let_group_boxes: the boxes the domain is described by are its groups' (their
    particles' min and max), as the walk sees them."""
    from galaxyview.engines.gpu.constants import ST_GROUPS

    eng = _engine(n, 0.75, n + 1)
    try:
        with eng.activate():
            got = eng._domain_boxes(eng._events)
            b = eng.buf
            n_groups = int(eng._download(b.ptr("status"), np.uint64, 8)[ST_GROUPS])
            begin = eng._download(b.ptr("group_begin"), np.int32, n_groups)
            count = eng._download(b.ptr("group_count"), np.int32, n_groups)
            pos, _ = b.set_ptrs(eng._cur)
            pos = eng._download(pos, np.float32, 4 * eng._n).reshape(-1, 4)[:, :3]
        assert n_groups > n // 100 and count.sum() == n
        want = np.c_[np.minimum.reduceat(pos, begin), np.maximum.reduceat(pos, begin)]
        assert np.array_equal(got, want)
    finally:
        eng.close()


class _Rank:
    """What the migration reads of a communicator in one process: its rank."""

    def __init__(self, rank):
        self.rank = rank


def _by_id(eng):
    """(global id order) positions, velocities and forces of the engine's particles."""
    st = eng.state()
    b = eng.buf
    acc = eng._download(b.ptr("acc"), np.float32, 4 * eng._n).reshape(-1, 4)
    loaded = eng._download(b.ptr(f"id{eng._cur}"), np.uint32, eng._n).astype(np.int64)
    gid = eng.ids[loaded]
    forces = acc[np.argsort(gid)]
    order = np.argsort(eng.ids)
    return st.pos[order], st.vel[order], st.mass[order], forces


def test_device_keys_owners_and_the_leavers_round_trip():
    """domain_flags gives decompose's Hilbert keys and owners (a cube that clips some
    particles); the leavers' rows are those particles; sent back as arrivals, they take the
    freed slots and the particle set is the same, forces with it."""
    from galaxyview.engines.parallel import decompose
    from galaxyview.engines.cpu import keys as mkeys

    eng = _engine(200_000, 0.75, 3)
    try:
        n = eng._n
        eng.ids = np.arange(n, dtype=np.int64) * 3 + 7
        eng.comm = _Rank(1)
        before = _by_id(eng)
        with eng.activate():
            b = eng.buf
            pos, _ = b.set_ptrs(eng._cur)
            host = eng._download(pos, np.float32, 4 * n).reshape(-1, 4)[:, :3]
            loaded = eng._download(b.ptr(f"id{eng._cur}"), np.uint32, n).astype(np.int64)
            mid = np.median(host, axis=0)
            cube = mkeys.cube((mid - 3).astype(np.float32), (mid + 3).astype(np.float32))
            keys = decompose.particle_keys(host, cube)
            cuts = np.quantile(keys, [0.2, 0.5, 0.9]).astype(np.uint64)
            flag, owner, out = (b.per_particle(f"t_{s}", w) for s, w in
                                (("flag", 4), ("owner", 4), ("keys", 8)))
            b._alloc("t_cuts", 8 * len(cuts))
            eng._cuda.memcpy_htod(b.ptr("t_cuts"), cuts)
            eng.kernels.launch("domain_flags", (eng._grid(), 1, 1), (256, 1, 1), pos, n,
                               *(float(v) for v in cube[0]), float(cube[2]), b.ptr("t_cuts"),
                               len(cuts), 1, flag, owner, out)
            assert np.array_equal(eng._download(out, np.uint64, n), keys)
            want = decompose.owners(keys, cuts)
            assert np.array_equal(eng._download(owner, np.int32, n), want)
            assert np.array_equal(eng._download(flag, np.int32, n), want != 1)
            rows, lid, dest = eng._migration._split(cube, cuts)
        leave = want != 1
        assert 0.6 * n < len(lid) < 0.8 * n and np.array_equal(lid, loaded[leave])
        assert np.array_equal(dest, want[leave]) and np.array_equal(rows[:, :3], host[leave])
        with eng.activate():
            eng._migration._append(lid, rows, eng.ids[lid], n, n)
        assert eng._n == n and sorted(eng.ids) == sorted(np.arange(n) * 3 + 7)
        for a, b_ in zip(before, _by_id(eng)):
            assert np.array_equal(a, b_)
        # no room on the device for the arrivals: the whole set goes up again from the host
        with eng.activate():
            rows, lid, dest = eng._migration._split(cube, cuts[:1])
        eng._upload_rows(*eng._migration._whole(lid, rows, eng.ids[lid]))
        assert eng._n == n and eng.buf.n_cap >= 1.1 * n
        for a, b_ in zip(before, _by_id(eng)):
            assert np.array_equal(a, b_)
    finally:
        eng.comm = None
        eng.close()
