"""The LET export on the device (kernels/parallel_let.cu) against let.export, the numpy
reference, on the same device tree: cells, links and particles identical, for several boxes,
sizes and pp_leaf; and the output grown when it overflows. Needs CUDA (no MPI: one process)."""
import numpy as np
import pytest

from galaxyview.engines.parallel import let
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

pytestmark = [pytest.mark.gpu]


def _engine(n, theta, seed, room=1.0):
    from galaxyview.engines.parallel.gpu_rank import GPURank

    eng = GPURank(Params(theta=theta, dt=1 / 64, eps=0.05))
    if room > 1:
        with eng.activate():
            eng.buf.ensure(int(room * n), eng._n_sm, eng._walk_blocks, eng._walk_threads)
    eng.load(plummer_sphere(n, np.random.default_rng(seed)))
    eng.accelerations()  # a tree of the current positions
    return eng


def _reference(eng, box):
    from galaxyview.engines.gpu import inspect
    from galaxyview.engines.parallel.gpu_exchange import host_tree

    cells = inspect.download_tree(eng)
    return let.export(host_tree(cells, eng.params.n_leaf), cells["r_open2"], box, eng.pp_leaf)


def _device(eng, boxes: list, skip):
    """Every box's device LET but boxes[skip]'s, as let.export's (cells, particles), and
    the attempts it took (an output too small is grown)."""
    with eng.activate():
        eng._boxes = boxes
        for tries in range(1, 6):
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
    from galaxyview.engines.gpu.constants import MAX_LEVEL
    from galaxyview.engines.parallel.let_device import deepest_level

    eng = _engine(n, theta, n)
    if pp_leaf is not None:
        eng.pp_leaf = pp_leaf
    try:
        tree = inspect.download_tree(eng)
        boxes = _boxes(tree["pos"], np.random.default_rng(1))
        skip = 5  # "this rank's" box: no LET for it
        got, tries = _device(eng, boxes, skip)  # every level down to MAX_LEVEL
        eng._depth = int(tree["level"].max())  # down to the tree's deepest level only
        assert eng._depth < MAX_LEVEL - 4
        with eng.activate():
            lb = np.zeros(MAX_LEVEL + 3, np.int32)
            eng._cuda.memcpy_dtoh(lb, eng.buf.ptr("lb"))
        assert deepest_level(lb) == eng._depth
        shallow, _ = _device(eng, boxes, skip)
        for (cells, parts), (c2, p2) in zip(got, shallow):
            assert np.array_equal(cells.view(np.int32), c2.view(np.int32))
            assert np.array_equal(parts, p2)
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
            assert tries >= 2
        total = float(eng.state().mass.astype(np.float64).sum())
        for r, (cells, parts) in enumerate(got):  # each LET carries all the mass once
            if len(cells):
                assert _let_mass(cells, parts) == pytest.approx(total, rel=1e-5), r
    finally:
        eng.close()


def test_a_frontier_list_too_short_is_grown_and_the_export_queued_again():
    """All domains' LETs are walked in one frontier list; cut to a tiny share of the cells, it
    overflows, is flagged, grown (doubled) and the export queued again until it fits, with
    the same LETs as with room enough from the start. (These eleven box sets need more
    entries than the tree has cells, so the first export grows the list too.)"""
    from galaxyview.engines.gpu import inspect

    eng = _engine(60_000, 0.75, 12)
    try:
        boxes = _boxes(inspect.download_tree(eng)["pos"], np.random.default_rng(3))
        want, _ = _device(eng, boxes, 5)
        ex = eng._export
        ex.list_share = 1 / 256
        with eng.activate():
            eng._boxes = boxes
            for tries in range(1, 12):
                eng._queue_export(5)
                staged = eng._fetch()
                if staged is not None:
                    break
        assert tries >= 2 and staged is not None and ex.list_share >= 2 / 256
        cells, parts, per_rank = staged
        got = zip(np.split(cells, np.cumsum(per_rank[:, 0])[:-1]),
                  np.split(parts, np.cumsum(per_rank[:, 1])[:-1]))
        for r, ((c, q), (ref_c, ref_q)) in enumerate(zip(got, want)):
            assert np.array_equal(c.view(np.int32), ref_c.view(np.int32)), r
            assert np.array_equal(q, ref_q), r
    finally:
        eng.close()


def test_boxes_read_on_the_device_give_the_same_export():
    """Boxes in device memory (DeviceBoxes: another rank's group boxes, read through CUDA
    IPC on one host) give the export of the same boxes handed over from the host, bit for
    bit: the single boxes, the domain of many boxes and its bounding box."""
    from galaxyview.engines.gpu import inspect
    from galaxyview.engines.parallel.let_device import DeviceBoxes

    eng = _engine(60_000, 0.75, 11)
    held = []
    try:
        boxes = _boxes(inspect.download_tree(eng)["pos"], np.random.default_rng(2))
        skip = 5
        want, _ = _device(eng, boxes, skip)
        on_device = []
        with eng.activate():
            for r, q in enumerate(boxes):
                if r == 4:  # the empty box: a host array (device boxes are never empty)
                    on_device.append(q)
                    continue
                held.append(eng._cuda.to_device(np.ascontiguousarray(q, np.float32)))
                on_device.append(DeviceBoxes(int(held[-1]), len(q)))
        assert len(on_device[-2]) > 100  # the domain of many boxes
        got, _ = _device(eng, on_device, skip)
        for r, ((cells, parts), (ref_cells, ref_parts)) in enumerate(zip(got, want)):
            assert np.array_equal(cells.view(np.int32), ref_cells.view(np.int32)), r
            assert np.array_equal(parts, ref_parts), r
        assert sum(len(c) for c, _ in got) > 100
    finally:
        with eng.activate():
            for m in held:
                m.free()
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
            eng._upload_forest([(len(c), len(q)) for c, q in lets])
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
    particles' min and max), as the walk sees them; on the device path they stay on the
    device (DeviceBoxes), the same boxes."""
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
            eng._peer_path = "device"  # the boxes stay on the device for the others to read
            kept = eng._domain_boxes(eng._events)
            on_device = eng._download(kept.ptr, np.float32, 6 * len(kept)).reshape(-1, 6)
        assert n_groups > n // 100 and count.sum() == n
        want = np.c_[np.minimum.reduceat(pos, begin), np.maximum.reduceat(pos, begin)]
        assert np.array_equal(got, want)
        assert len(kept) == n_groups and np.array_equal(on_device, want)
    finally:
        eng.close()


@pytest.mark.parametrize("n_boxes", [1, 9, 70_000])
def test_device_box_tree_is_box_tree(n_boxes):
    """let_box_union builds the numpy box_tree's nodes exactly, for every rank's boxes."""
    from galaxyview.engines.parallel.let_device import box_tree

    eng = _engine(3000, 0.75, 1)
    rng = np.random.default_rng(n_boxes)
    lo = rng.standard_normal((n_boxes, 3)).astype(np.float32)
    boxes = np.c_[lo, lo + rng.random((n_boxes, 3), dtype=np.float32)]
    try:
        with eng.activate():
            per_rank = [boxes, boxes[::-1][:max(1, n_boxes // 3)].copy()]
            table = eng._export._upload_boxes(per_rank)  # where each rank's lie, in floats
            where = eng._download(table, np.int32, 5 * len(per_rank)).reshape(-1, 5)
            base = eng.buf.ptr("let_boxes")
            for (box_at, node_at, start_at, count_at, depth), q in zip(where.tolist(), per_rank):
                box_at, node_at, start_at, count_at = (base + 4 * int(v) for v in
                                                       (box_at, node_at, start_at, count_at))
                assert np.array_equal(eng._download(box_at, np.float32, q.size), q.reshape(-1))
                nodes, start, count = box_tree(q)
                assert depth == len(start)
                assert np.array_equal(eng._download(start_at, np.int32, depth), start)
                assert np.array_equal(eng._download(count_at, np.int32, depth + 1), count)
                got = eng._download(node_at, np.float32, nodes.size).reshape(-1, 6)
                assert np.array_equal(got, nodes)
    finally:
        eng.close()


@pytest.mark.parametrize("mode", ["component", "galaxy", "speed", "potential"])
def test_a_gpu_ranks_light_is_the_host_splat(mode):
    """A GPU rank splats its particles on its device (render_pack.cu, render_splat.cu) into
    the image the host splat (light.kernel, numba) makes of the same particles."""
    from galaxyview.engines.parallel.rank import RankMixin
    from galaxyview.light import LightView

    eng = _engine(30_000, 0.75, 2)
    rng = np.random.default_rng(4)
    try:
        n = eng._n
        eng.ids = np.arange(n, dtype=np.int64)
        eng._galaxy = (np.arange(n) % 3).astype(np.int16)
        code = {"component": 0, "galaxy": 1}.get(mode, 2)
        lo, hi = {"speed": (0.0, 1.2), "potential": (-3.0, -0.5)}.get(mode, (0.0, 1.0))
        view = LightView(200, 150, np.diag([0.6, 0.8, 0.1, 1.0]).astype(np.float32), 3.0,
                         0.05, mode, code, lo, hi, rng.random((256, 3), dtype=np.float32),
                         rng.random((8, 4), dtype=np.float32),
                         rng.random((8, 3), dtype=np.float32))
        got = eng.local_light(view)
        want = RankMixin.local_light(eng, view)
    finally:
        eng.close()
    assert got.shape == want.shape == (150, 200, 4) and want[..., :3].min() >= 0
    assert (want[..., :3] > 0).mean() > 0.05 and want.max() > 0.1  # a lit frame
    assert got[..., :3].sum() == pytest.approx(want[..., :3].sum(), rel=1e-3)
    # a pixel at a sprite's edge may take or miss it (rounding): such a sprite adds < 1e-3
    np.testing.assert_allclose(got[..., :3], want[..., :3], rtol=2e-3, atol=2e-3)


class _Rank:
    """What the migration's device parts read of a communicator in one process."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size


def _by_id(eng):
    """{global id: (pos, vel, mass, force)} of the engine's particles (duplicates kept apart
    by their ids)."""
    st = eng.state()
    b = eng.buf
    acc = eng._download(b.ptr("acc"), np.float32, 4 * eng._n).reshape(-1, 4)
    loaded = eng._download(b.ptr(f"id{eng._cur}"), np.uint32, eng._n).astype(np.int64)
    assert np.array_equal(np.sort(loaded), np.arange(eng._n))  # the device ids: a permutation
    force = np.empty_like(acc)
    force[loaded] = acc
    rows = np.c_[st.pos, st.vel, st.mass, force]
    assert len(set(eng.ids.tolist())) == eng._n
    return {int(g): tuple(r) for g, r in zip(eng.ids, rows)}


def _outbox(eng, left):
    """The outbox's rows (left, 16) float32, owners, the leavers' loaded slots and their
    places in the set."""
    m, b = eng._migration, eng.buf
    box = b.ptr("mig_box")
    rows = eng._download(box, np.float32, 16 * left).reshape(left, 16)
    owners = eng._download(box + 64 * m.cap, np.int32, left)
    lid, lpos = (eng._download(b.ptr(f"mig_{s}"), np.uint32, left).astype(np.int64)
                 for s in ("lid", "lpos"))
    return rows, owners, lid, lpos


def _places(eng, count=None):
    """The current set's float32 pos rows by place (its first `count`)."""
    pos, _ = eng.buf.set_ptrs(eng._cur)
    count = eng._n if count is None else count
    return eng._download(pos, np.float32, 4 * count).reshape(-1, 4)


def _to_inbox(eng, rows, owners):
    m = eng._migration
    m._ensure_inbox(len(rows))
    eng._cuda.memcpy_htod(eng.buf.ptr("mig_in"), np.ascontiguousarray(rows, np.float32))
    eng._cuda.memcpy_htod(eng.buf.ptr("mig_in") + 64 * m.in_cap,
                          np.ascontiguousarray(owners, np.int32))


def _migrate(eng, cube, cuts, back):
    """Split, then back(rows, owners, lid) -> the inbox's (rows, owners) arrive: the
    particles expected after (by id), the slots the device gave (ids of the mirrors)."""
    from galaxyview.engines.parallel.migrate import slots, unpack_meta

    mig, n, me = eng._migration, eng._n, eng.comm.rank
    before = _by_id(eng)
    old_ids = eng.ids.copy()
    with eng.activate():
        eng._meta_to_device()
        placed = _places(eng)
        left, counts = mig._split(cube, cuts)
        rows, owners, lid, lpos = _outbox(eng, left)
        got, got_owners = back(rows, owners, lid)
        _to_inbox(eng, got, got_owners)
        arrivals = int((got_owners == me).sum())
        n_new = n - left + arrivals
        mig._arrive(len(got), left, arrivals, n, n_new)
        now = _places(eng)
    # the stayers below the new size keep their places; the arrivals fill the holes in order
    assert np.array_equal(lpos, np.sort(lpos)) and np.array_equal(placed[lpos, :3], rows[:, :3])
    kept = np.ones(n, bool)
    kept[lpos] = False
    kept = np.flatnonzero(kept[:min(n, n_new)])
    assert np.array_equal(now[kept], placed[kept])
    mine, a = got[got_owners == me], min(arrivals, left)
    assert np.array_equal(now[lpos[:a], :3], mine[:a, :3])
    assert np.array_equal(now[n:n_new, :3], mine[left:, :3])  # past the holes, when more came
    assert np.array_equal(counts, np.bincount(owners, minlength=eng.comm.size))
    gone = set(unpack_meta(rows[:, 12:].view(np.int32))[0].tolist())
    came = unpack_meta(mine[:, 12:].view(np.int32))[0]
    want = {g: r for g, r in before.items() if g not in gone}
    for g, r in zip(came, mine):  # pos, vel, mass, force of a row
        want[int(g)] = tuple(np.r_[r[0:3], r[4:7], r[3], r[8:12]])
    after = _by_id(eng)
    assert after.keys() == want.keys()
    assert all(np.array_equal(np.float32(after[g]), np.float32(want[g])) for g in want)
    at, move_from, move_to = slots(lid, n, n_new, arrivals)  # the reference's slots
    assert np.array_equal(eng.ids[at], came)
    assert np.array_equal(eng.ids[move_to], old_ids[move_from])
    return left, n_new


def test_the_leavers_are_those_the_drift_takes_out():
    """With the step's dt, domain_flags keys each particle where kick_drift will put it: the
    migration sends it to the domain it is in at the force evaluation."""
    from galaxyview.engines.parallel import decompose
    from galaxyview.engines.cpu import keys as mkeys

    eng = _engine(100_000, 0.75, 5)
    try:
        n, dt = eng._n, 1 / 16
        b = eng.buf
        with eng.activate():
            pos, vel = b.set_ptrs(eng._cur)
            host = eng._download(pos, np.float32, 4 * n).reshape(-1, 4)[:, :3]
            cube = mkeys.cube(host.min(axis=0) - 1, host.max(axis=0) + 1)
            cuts = np.quantile(decompose.particle_keys(host, cube), [0.25, 0.5, 0.75])
            cuts = cuts.astype(np.uint64)
            b._alloc("t_cuts", 8 * len(cuts))
            eng._cuda.memcpy_htod(b.ptr("t_cuts"), cuts)
            got = {}
            for name, drift in (("ahead", (vel, b.ptr("acc"), 0.5 * dt, dt)),
                                ("now", (0, 0, 0.0, 0.0))):
                flag, owner, out = (b.per_particle(f"t_{name}_{s}", w) for s, w in
                                    (("flag", 4), ("owner", 4), ("keys", 8)))
                eng.kernels.launch("domain_flags", (eng._grid(), 1, 1), (256, 1, 1), pos, n,
                                   *(float(v) for v in cube[0]), float(cube[2]),
                                   b.ptr("t_cuts"), len(cuts), 1, flag, owner, out, *drift)
                got[name] = eng._download(owner, np.int32, n)
            eng.kernels.launch("kick_drift", (eng._grid(), 1, 1), (256, 1, 1), pos, vel,
                               b.ptr("acc"), n, np.float32(0.5 * dt), np.float32(dt))
            after = eng._download(pos, np.float32, 4 * n).reshape(-1, 4)[:, :3]
        owners = decompose.owners(decompose.particle_keys(after, cube), cuts)
        assert np.array_equal(got["ahead"], owners)  # bit for bit where the drift took them
        changed = np.sum(got["now"] != owners)  # particles that crossed a face in the drift
        assert 0.001 * n < changed < 0.1 * n
    finally:
        eng.close()


def test_device_keys_owners_and_the_leavers_round_trip():
    """domain_flags gives decompose's Hilbert keys and owners (a cube that clips some
    particles), and so does the splitters' strided sample; the outbox holds the leavers'
    rows with their meta; arrivals take the slots of migrate.slots and the particles come
    with their forces, bit for bit: the same set back, fewer (and rows for another rank
    skipped), more; and the whole set through the host where the device has no room."""
    from galaxyview.engines.parallel import decompose
    from galaxyview.engines.parallel.migrate import pack_meta, unpack_meta
    from galaxyview.engines.cpu import keys as mkeys

    eng = _engine(200_000, 0.75, 3, room=1.5)
    try:
        n = eng._n
        eng.ids = np.arange(n, dtype=np.int64) * 3 + 7
        eng._galaxy = (np.arange(n) % 3 - 1).astype(np.int16)
        eng.comm = _Rank(1, 4)
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
                               len(cuts), 1, flag, owner, out, 0, 0, 0.0, 0.0)
            assert np.array_equal(eng._download(out, np.uint64, n), keys)
            want = decompose.owners(keys, cuts)
            assert np.array_equal(eng._download(owner, np.int32, n), want)
            assert np.array_equal(eng._download(flag, np.int32, n), want != 1)
            eng._meta_to_device()
            left, counts = eng._migration._split(cube, cuts)
            rows, owners, lid, lpos = _outbox(eng, left)
        eng.cube = cube  # the splitters' sample: every k-th particle's key, on the device
        stride, m = eng._stride(5000)
        assert m > 4000 and np.array_equal(eng._sample_keys(5000), keys[::stride])
        leave = want != 1
        assert 0.6 * n < left < 0.8 * n and np.array_equal(lid, loaded[leave])
        assert np.array_equal(lpos, np.flatnonzero(leave))  # their places in the set
        assert np.array_equal(owners, want[leave]) and np.array_equal(rows[:, :3], host[leave])
        ids, radius, component, galaxy = unpack_meta(rows[:, 12:].view(np.int32))
        assert np.array_equal(ids, eng.ids[lid]) and np.array_equal(galaxy, eng._galaxy[lid])
        assert np.array_equal(component, eng._component[lid])
        cuts = cuts[:2]  # to ranks 0 and 2 from here on
        # the same set back (the rank's own leavers, as another rank's outbox would give them)
        left, n_new = _migrate(eng, cube, cuts, lambda r, o, lid: (r, np.full(len(r), 1)))
        assert n_new == n and left > 0
        # only rank 0's back; rank 2's rows in the inbox too, for rank 2: fewer particles
        left, n_new = _migrate(eng, cube, cuts,
                               lambda r, o, lid: (r, np.where(o == 0, 1, 2)))
        assert n_new < n
        # all back, and as many more (new ids): more particles
        def twice(r, o, lid):
            extra = r.copy()
            ids, radius, component, galaxy = unpack_meta(r[:, 12:].view(np.int32))
            extra[:, 12:] = pack_meta(ids + 10**12, radius, component, galaxy).view(np.float32)
            return np.r_[r, extra], np.full(2 * len(r), 1)
        m = eng._n
        left, n_new = _migrate(eng, cube, cuts, twice)
        assert n_new == m + left <= eng.buf.n_cap
        # no room on the device for the arrivals: the whole set goes up again from the host
        before = _by_id(eng)
        with eng.activate():
            left, _ = eng._migration._split(cube, cuts)
            rows, *_ = _outbox(eng, left)
            _to_inbox(eng, rows, np.full(left, 1))
            whole = eng._migration._whole(left, left)
        eng._upload_rows(*whole)
        assert _by_id(eng).keys() == before.keys()
        after = _by_id(eng)
        assert all(np.array_equal(np.float32(after[g]), np.float32(before[g])) for g in before)
    finally:
        eng.comm = None
        eng.close()
