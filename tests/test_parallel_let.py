"""The parallel engine's pieces in one process: LET export and import, splitters."""
import numpy as np
import pytest

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.tree import build_tree
from galaxyview.engines.parallel import decompose, let
from galaxyview.model.ics.plummer import plummer_sphere


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


def _split_forces(pos, mass, mine, theta, eps, walk=tree_forces):
    """Forces on the particles `mine` from their own tree plus the LET of the others' tree,
    in the order of `mine`'s tree, and that tree's order."""
    local = build_tree(pos[mine], mass[mine])
    other = np.setdiff1d(np.arange(len(pos)), mine)
    remote = build_tree(pos[other], mass[other])
    acc, pot, _, _ = walk(local, theta, eps)
    cells, particles = let.export(remote, let.opening_radii2(remote, theta),
                                  let.domain_box(local.pos))
    a, p, _, _ = walk(let.extra_tree(local, cells, particles), theta, eps)
    return acc + a[-local.n:], pot + p[-local.n:], mine[local.order], len(cells), len(particles)


@pytest.mark.parametrize("n, cut", [(4000, 0.0), (6000, 0.6)])
def test_let_forces_match_direct_sum_like_one_tree(n, cut):
    rng = np.random.default_rng(n)
    pos = (rng.standard_normal((n, 3)) * [1, 1, 0.3]).astype(np.float32)
    mass = np.full(n, 1.0 / n, np.float32)
    theta, eps = 0.5, 0.01
    mine = np.flatnonzero(pos[:, 0] < cut)
    acc, pot, at, n_cells, n_particles = _split_forces(pos, mass, mine, theta, eps)
    ref, ref_pot = direct_forces(pos.astype(np.float64), mass.astype(np.float64), eps, 1.0,
                                 targets=at)
    err = _rel(acc, ref)
    one = build_tree(pos, mass)
    acc1, _, _, _ = tree_forces(one, theta, eps)
    where = np.empty(n, np.int64)
    where[one.order] = np.arange(n)
    err1 = _rel(acc1[where[at]], ref)
    # the LET is a small part of the other domain, yet the errors are the tree's own
    assert 0 < n_particles < n - len(mine) and n_cells < one.n_cells
    assert np.median(err) < 1.5 * np.median(err1) and np.median(err) < 3e-4
    assert np.percentile(err, 99) < 3 * np.percentile(err1, 99)
    assert np.abs(pot - ref_pot).max() < 1e-3 * np.abs(ref_pot).max()


def test_let_walk_is_the_same_with_the_compiled_walk():
    pytest.importorskip("numba")
    from galaxyview.engines.cpu_numba import walk

    rng = np.random.default_rng(5)
    pos = rng.standard_normal((3000, 3)).astype(np.float32)
    mass = np.full(3000, 1 / 3000, np.float32)
    mine = np.flatnonzero(pos[:, 1] > 0.3)
    acc, pot, *_ = _split_forces(pos, mass, mine, 0.6, 0.02)
    acc_n, pot_n, *_ = _split_forces(pos, mass, mine, 0.6, 0.02, walk.tree_forces)
    # the compiled walk adds back the own pair's -m/eps, absent from an extra tree
    own = mass[0] / np.sqrt(np.float64(np.float32(0.02) ** 2))  # equal masses
    assert np.percentile(_rel(acc_n, acc), 99) < 1e-4
    assert np.allclose(pot_n - own, pot, rtol=1e-4)


def test_an_empty_or_far_domain_needs_little():
    rng = np.random.default_rng(1)
    tree = build_tree(rng.standard_normal((2000, 3)).astype(np.float32),
                      np.ones(2000, np.float32))
    far = np.array([100, 100, 100, 101, 101, 101], np.float32)
    cells, particles = let.export(tree, let.opening_radii2(tree, 0.5), far)
    assert len(cells) == 1 and len(particles) == 0  # the root as one multipole
    assert cells[0, 3] == pytest.approx(2000)
    empty = let.domain_box(np.zeros((0, 3), np.float32))
    assert [len(a) for a in let.export(tree, let.opening_radii2(tree, 0.5), empty)] == [0, 0]


def test_splitters_cut_the_weighted_sample_evenly():
    keys = np.arange(1000, dtype=np.uint64)
    cuts = decompose.split_sample(keys, np.ones(1000), 4, tolerance=0)
    assert list(np.bincount(decompose.owners(keys, cuts), minlength=4)) == [250] * 4
    # particles of the upper half cost three times as much: they are spread over more ranks
    weight = np.where(keys < 500, 1.0, 3.0)
    owner = decompose.owners(keys, decompose.split_sample(keys, weight, 4, tolerance=0))
    cost = np.bincount(owner, weights=weight, minlength=4)
    assert cost.max() / cost.mean() < 1.01
    assert np.bincount(owner)[0] > 2 * np.bincount(owner)[3]


def test_cuts_move_to_the_coarsest_cell_boundary_within_the_tolerance():
    one = 1 << 3 * 20  # a cell of level 1 (the cube's eighth) spans 8 of these
    keys = np.sort(np.random.default_rng(1).integers(0, 8 * one, 10000).astype(np.uint64))
    for tolerance in (0.02, 0.1):
        cuts = decompose.split_sample(keys, np.ones(len(keys)), 2, tolerance)
        assert int(cuts[0]) % (4 * one) == 0  # the cube's half: the middle key is within 2%
        part = np.bincount(decompose.owners(keys, cuts), minlength=2)
        assert abs(part[0] - 5000) <= tolerance * 5000
    # the coarsest boundary within reach (2 octants: a quarter), or the exact cut
    assert decompose.coarsest_boundary(3 * one - 5, 3 * one + 7, 4 * one + 9) == 4 * one
    assert decompose.coarsest_boundary(8 * one + 5, 8 * one + 7, 8 * one + 9) == 8 * one + 8
    assert decompose.coarsest_boundary(7, 7, 7) == 7
    assert decompose.coarsest_boundary(one - 64, one - 10, one + 3) == one


@pytest.mark.parametrize("n, leave, arrive", [(100, 10, 3), (100, 3, 10), (50, 7, 7),
                                               (20, 20, 0), (20, 0, 5), (30, 12, 0)])
def test_arrivals_take_the_leavers_slots_and_every_slot_is_taken_once(n, leave, arrive):
    from galaxyview.engines.parallel.migrate import slots

    rng = np.random.default_rng(n + leave)
    holes = rng.choice(n, leave, replace=False)
    n_new = n - leave + arrive
    at, move_from, move_to = slots(holes, n, n_new, arrive)
    survivors = np.setdiff1d(np.arange(n), holes)
    final = survivors.copy()  # each survivor's slot after the move
    final[np.searchsorted(survivors, move_from)] = move_to
    taken = np.r_[final, at]
    assert len(at) == arrive and sorted(taken) == list(range(n_new))
    assert set(move_from) <= set(survivors) and (move_from >= n_new).all()


def test_meta_rides_with_the_rows_bit_for_bit():
    """The device's meta words give back the global ids (any int64), radii, components and
    galaxies (negative too) as they went in."""
    from galaxyview.engines.parallel.migrate import pack_meta, unpack_meta

    ids = np.array([0, 1, 2**40 + 5, 2**62 + 3, 0x7FC00000FFC00001, -1], np.int64)
    radius = np.array([0, 1e-30, 2.5, np.inf, 3e38, 7e-3], np.float32)
    component = np.array([0, 1, 2, 255, 7, 3], np.uint8)
    galaxy = np.array([0, -1, 1, 32767, -32768, 5], np.int16)
    meta = pack_meta(ids, radius, component, galaxy)
    assert meta.dtype == np.int32 and meta.shape == (6, 4)
    got = unpack_meta(meta.view(np.float32).copy().view(np.int32))  # rows travel as float32
    for a, b in zip(got, (ids, radius, component, galaxy)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


class _OneRank:
    """A communicator of one rank standing for `size`: allgather hands back its row."""
    rank = 0

    def __init__(self, size):
        self.size = size

    def allgather(self, values, what="", dtype=np.float64):
        return np.asarray(values, dtype).reshape(1, -1)


class _Table:
    """Ranks' allgather rows, recorded one rank at a time (rows None), then handed back whole:
    what each of `size` ranks would see."""
    rank = 0

    def __init__(self, size, rows=None):
        self.size, self.rows, self.sent = size, rows, None

    def allgather(self, values, what="", dtype=np.float64):
        self.sent = np.asarray(values, dtype).reshape(-1)
        return np.stack(self.rows) if self.rows is not None else self.sent[None]


def _allgathered(fn, parts):
    """fn(comm, part) on every part as the ranks of one allgather would run it."""
    rows = []
    for part in parts:
        rec = _Table(len(parts))
        fn(rec, part)
        rows.append(rec.sent)
    return [fn(_Table(len(parts), rows), part) for part in parts]


def test_every_rank_finds_the_same_cube_and_splitters_from_one_allgather():
    pos = _pair(60000)
    pos[:, 2] += np.float32(0.5)
    parts = np.array_split(pos[np.random.default_rng(1).permutation(len(pos))][:50000],
                           [9000, 30000])  # three ranks of unequal sizes
    cubes = _allgathered(decompose.global_cube, parts)
    lo, size, _ = cubes[0]
    assert all(np.array_equal(c[0], lo) and c[1] == size for c in cubes)
    whole = np.concatenate(parts)  # the centre halves the mass on every axis
    assert np.abs((whole < lo + size / 2).mean(axis=0) - 0.5).max() < 0.005
    assert (whole >= lo).all() and (whole < lo + size).all()
    keys = [decompose.particle_keys(p, cubes[0]) for p in parts]
    cuts = _allgathered(lambda comm, k: decompose.splitters(comm, k, 1.0), keys)
    assert all(np.array_equal(c, cuts[0]) for c in cuts) and len(cuts[0]) == 2
    counts = np.bincount(decompose.owners(np.concatenate(keys), cuts[0]), minlength=3)
    assert np.abs(counts - len(whole) / 3).max() < 2 * decompose.SNAP_TOLERANCE * len(whole) / 3


def _pair(n):
    pos = plummer_sphere(n, np.random.default_rng(5)).pos.astype(np.float32)
    pos[: n // 2] += np.float32([3, 1, 0])  # two spheres, as in a merger
    pos[n // 2:] -= np.float32([3, 1, 0])
    return pos


def test_the_cube_is_centred_on_the_median_point_and_holds_everything():
    pos = plummer_sphere(20000, np.random.default_rng(2)).pos.astype(np.float32) + 1
    pos[0] = [40, 0, 0]  # an outlier stretches the bounding box, not the centre
    lo, size, scale = decompose.global_cube(_OneRank(2), pos)
    assert np.allclose(lo + size / 2, np.median(pos, axis=0), atol=0.05)
    assert (pos >= lo).all() and (pos < lo + size).all()


def test_two_domains_of_a_galaxy_pair_are_halves_with_small_lets():
    n, comm = 100000, _OneRank(2)
    pos, mass = _pair(n), np.full(n, 1.0 / n)
    keys = decompose.particle_keys(pos, decompose.global_cube(comm, pos))
    owner = decompose.owners(keys, decompose.splitters(comm, keys, 1.0))
    assert abs(np.bincount(owner)[0] - n // 2) < decompose.SNAP_TOLERANCE * n / 2
    # each galaxy on one rank (their centres are 6.3 apart: the cut passes between them)
    assert (owner[: n // 2] == owner[0]).mean() > 0.99
    trees = [build_tree(pos[owner == r], mass[owner == r]) for r in (0, 1)]
    for a, b in ((0, 1), (1, 0)):
        boxes = np.array([np.r_[trees[b].pos[g:g + c].min(0), trees[b].pos[g:g + c].max(0)]
                          for g, c in zip(trees[b].group_begin, trees[b].group_count)])
        _, parts = let.export(trees[a], let.opening_radii2(trees[a], 0.75), boxes, 2)
        assert len(parts) < 0.1 * n / 2  # one box a domain, unsnapped cuts: over half


def test_device_forest_links_every_let_under_one_open_root():
    rng = np.random.default_rng(3)
    lets, masses = [], []
    for k in range(3):  # three remote domains seen from a box at the origin
        pos = (rng.standard_normal((1500, 3)) + [4.0 * (k + 1), 0, 0]).astype(np.float32)
        tree = build_tree(pos, np.full(1500, 0.5, np.float32))
        box = np.array([-1, -1, -1, 1, 1, 1], np.float32)
        lets.append(let.export(tree, let.opening_radii2(tree, 0.8), box))
        masses.append(750.0)
    n_local = 1000
    mac, q0, q1, link, pos4 = let.device_forest(lets, n_local)
    assert np.isinf(mac[0, 3]) and tuple(link[0]) == (1, 3)
    assert len(mac) == 1 + sum(len(c) for c, _ in lets)
    assert len(pos4) == sum(len(p) for _, p in lets)

    def mass_below(c):  # the mass a walk that opens everything would find
        first, count = link[c]
        if count > 0:
            return sum(mass_below(k) for k in range(first, first + count))
        if count < 0:
            return float(pos4[first - n_local:first - n_local - count, 3].sum())
        return float(q1[c, 3])  # a multipole only

    for k in range(3):
        root = link[0, 0] + k
        assert mass_below(root) == pytest.approx(masses[k], rel=1e-6)
        assert q1[root, 3] == pytest.approx(masses[k], rel=1e-6)
    cells = lets[0][0]
    at = np.r_[1, 4 + np.arange(len(cells) - 1)]  # the first LET: its root, then its cells
    assert np.allclose(np.c_[q0[at], q1[at, :2]] / 3, cells[:, 4:10], rtol=1e-6, atol=1e-9)
    assert np.allclose(q1[at, 2], 0.5 * cells[:, 4:7].sum(axis=1), rtol=1e-6, atol=1e-9)


def _walk_device_forest(x, mac, cell_mass, link, pos_all, pp_leaf):
    """The GPU walk's decisions (kernels/nbody_walk.cu) for one target point: the mass it
    reaches and its monopole acceleration (cells at their centre of mass, pairs exact)."""
    mass, acc, stack = 0.0, np.zeros(3), [0]
    while stack:
        c = stack.pop()
        d = mac[c, :3].astype(np.float64) - x
        far = float(d @ d) > mac[c, 3]
        first, count = link[c]
        if count < 0 and (not far or -count <= pp_leaf):
            src = pos_all[first:first - count]
            r = src[:, :3].astype(np.float64) - x
            mass += src[:, 3].sum()
            acc += (src[:, 3, None] * r / np.linalg.norm(r, axis=1)[:, None] ** 3).sum(0)
        elif far:
            m = cell_mass[c]
            mass += m
            acc += m * d / np.linalg.norm(d) ** 3
        else:
            stack.extend(range(first, first + count))
    return mass, acc


@pytest.mark.parametrize("pp_leaf", [0, 8])
def test_device_forest_walked_as_the_gpu_walks_reaches_all_remote_mass(pp_leaf):
    """No cell sent as a multipole only is opened by a particle inside the domain box, so
    every remote particle's mass is reached once; the forces match the direct sum."""
    rng = np.random.default_rng(11)
    local = rng.uniform(-1, 1, (200, 3)).astype(np.float32)
    lets, remote = [], []
    for shift in ([2.5, 0, 0], [0, -2.2, 0.5]):
        pos = (rng.standard_normal((3000, 3)) * 0.6 + shift).astype(np.float32)
        tree = build_tree(pos, np.full(3000, 1 / 3000, np.float32))
        lets.append(let.export(tree, let.opening_radii2(tree, 0.4), let.domain_box(local),
                               pp_leaf))
        remote.append(pos)
    mac, q0, q1, link, pos4 = let.device_forest(lets, len(local))
    pos_all = np.concatenate([np.c_[local, np.zeros(len(local))], pos4]).astype(np.float32)
    src = np.concatenate(remote).astype(np.float64)
    for x in local[:25].astype(np.float64):
        m, a = _walk_device_forest(x, mac, q1[:, 3], link, pos_all, pp_leaf)
        assert m == pytest.approx(2.0, rel=1e-5)
        r = src - x
        ref = (r / np.linalg.norm(r, axis=1)[:, None] ** 3).sum(0) / 3000
        assert np.linalg.norm(a - ref) < 0.02 * np.linalg.norm(ref)  # monopoles at theta 0.4


def test_hilbert_keys_walk_the_grid_one_neighbour_at_a_time():
    side = np.arange(8, dtype=np.uint64)
    grid = np.stack(np.meshgrid(side, side, side, indexing="ij"), -1).reshape(-1, 3)
    keys = decompose.hilbert_keys(grid + np.uint64(1 << 10))  # an aligned block inside
    assert len(np.unique(keys)) == 512
    assert int(keys.max() - keys.min()) == 511  # an aligned block is one stretch of keys
    path = grid[np.argsort(keys)].astype(np.int64)
    assert (np.abs(np.diff(path, axis=0)).sum(axis=1) == 1).all()  # each step to a neighbour


def test_a_gpu_tree_on_the_host_exports_the_same_let():
    """gpu_exchange.host_tree (the device tree in download_tree's terms, r_open^2 as stored)
    gives the LET the CPU tree gives."""
    from galaxyview.engines.parallel.gpu_exchange import host_tree

    rng = np.random.default_rng(2)
    tree = build_tree(rng.standard_normal((4000, 3)).astype(np.float32),
                      np.full(4000, 0.25, np.float32))
    r_open2 = let.opening_radii2(tree, 0.6)
    cells = dict(pos=tree.pos, mass=tree.mass, body_begin=tree.body_begin,
                 body_count=tree.body_count, child_begin=tree.child_begin,
                 child_count=tree.child_count, com=tree.com, r_open2=r_open2,
                 cell_mass=tree.cell_mass, quad=tree.quad)
    box = np.array([2, -1, -1, 4, 1, 1], np.float32)
    cpu_cells, cpu_particles = let.export(tree, r_open2, box, pp_leaf=4)
    gpu_cells, gpu_particles = let.export(host_tree(cells, 16), r_open2, box, pp_leaf=4)
    keep = np.r_[0:10, 12:17]  # all but the CPU walks' size and delta
    assert np.array_equal(cpu_cells[:, keep], gpu_cells[:, keep])
    assert np.array_equal(cpu_particles, gpu_particles)
    assert 1 < len(gpu_cells) < tree.n_cells


@pytest.mark.parametrize("n", [1, 8, 9, 1000, 70_000])
def test_the_device_exports_box_tree_holds_its_boxes(n):
    """let_test skips a node whose union is far: every node is the union of its (up to 8)
    children, the last level's children are the boxes, the root holds them all."""
    from galaxyview.engines.parallel.let_device import FAN, box_tree

    rng = np.random.default_rng(n)
    lo = rng.standard_normal((n, 3)).astype(np.float32)
    boxes = np.c_[lo, lo + rng.random((n, 3), dtype=np.float32)]
    nodes, start, count = box_tree(boxes)
    depth = len(start)
    assert count[-1] == n and len(count) == depth + 1 and FAN ** depth >= n
    assert depth == 0 or (count[0] == 1 and len(nodes) == count[:-1].sum())
    for lev in range(depth):
        below = boxes if lev + 1 == depth else nodes[start[lev + 1]:start[lev + 1] + count[lev + 1]]
        for j in range(count[lev]):
            kids = below[FAN * j:FAN * (j + 1)]
            assert len(kids) > 0
            node = nodes[start[lev] + j]
            assert np.array_equal(node, np.r_[kids[:, :3].min(axis=0), kids[:, 3:].max(axis=0)])
        assert count[lev] == -(-len(below) // FAN)
    if depth:
        assert np.array_equal(nodes[0], np.r_[boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)])


@pytest.mark.parametrize("n", [1, 20, 5000, 60_000])
def test_the_export_stops_at_the_trees_deepest_level(n):
    """The device export walks levels 0 .. deepest_level(lb) of the build's level starts
    (lb[l]: the first cell of level l; the levels below the deepest are empty); a build
    that overflowed (lb not a tree's) says MAX_LEVEL: every level."""
    from galaxyview.engines.gpu.constants import MAX_LEVEL
    from galaxyview.engines.parallel.let_device import deepest_level

    s = plummer_sphere(n, np.random.default_rng(n))
    tree = build_tree(s.pos, s.mass, n_leaf=16)
    deepest = int(tree.level.max())
    lb = np.full(MAX_LEVEL + 3, tree.n_cells, np.int32)
    for lev in range(deepest + 1):
        lb[lev] = np.searchsorted(tree.level, lev)
    assert deepest_level(lb) == deepest and (n > 1) == (deepest > 0)
    assert deepest_level(np.zeros(MAX_LEVEL + 3, np.int32)) == MAX_LEVEL
    lb[3] = lb[2] - 1  # a level that ends before it begins
    assert deepest_level(lb) == MAX_LEVEL


def test_export_against_many_boxes_is_the_export_against_each():
    """A cell goes as a multipole only when it is far from every box: the LET against
    several boxes holds what the LET against each holds, and no more than their union box's."""
    rng = np.random.default_rng(5)
    pos = rng.standard_normal((5000, 3)).astype(np.float32)
    tree = build_tree(pos, np.full(5000, 2e-4, np.float32))
    r2 = let.opening_radii2(tree, 0.6)
    boxes = np.array([[2, 2, 2, 2.5, 2.5, 2.5], [-3, -3, -3, -2.5, -2.5, -2.5]], np.float32)
    both = let.export(tree, r2, boxes)
    union = let.export(tree, r2, np.r_[boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)])
    each = [let.export(tree, r2, b) for b in boxes]
    assert len(both[1]) >= max(len(p) for _, p in each) and len(both[1]) < len(union[1])
    assert len(both[0]) < len(union[0])
    held = {tuple(r) for r in both[1]}
    assert all(tuple(r) in held for _, p in each for r in p)


def test_processes_share_gpus_when_asked(monkeypatch):
    from galaxyview.engines.parallel import launch
    from galaxyview.errors import EngineError

    monkeypatch.delenv("GALAXYVIEW_RANKS_PER_GPU", raising=False)
    assert [launch.rank_gpu(r) for r in range(4)] == [0, 1, 2, 3]
    monkeypatch.setenv("GALAXYVIEW_RANKS_PER_GPU", "2")
    assert [launch.rank_gpu(r) for r in range(4)] == [0, 0, 1, 1]
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("GALAXYVIEW_RANKS_PER_GPU", bad)
        with pytest.raises(EngineError, match="GALAXYVIEW_RANKS_PER_GPU.*whole number"):
            launch.rank_gpu(1)


def test_the_parallel_settings_name_their_choices(monkeypatch):
    """GALAXYVIEW_LET_WALK, _LET_BOXES, _LET_EXPORT and _PEERS: unset, the default; a value
    of their own, taken; anything else, an error naming the choices."""
    from galaxyview.engines.parallel import gpu_boxes, gpu_forces, gpu_let_walk, peers
    from galaxyview.errors import EngineError

    for var, read, choices in (("GALAXYVIEW_LET_WALK", gpu_let_walk.let_walk, ("apart", "one")),
                               ("GALAXYVIEW_LET_BOXES", gpu_boxes.let_boxes,
                                ("groups", "domain")),
                               ("GALAXYVIEW_LET_EXPORT", gpu_forces.let_export,
                                ("beside", "before")),
                               ("GALAXYVIEW_PEERS", peers.wanted, ("auto", "device", "host"))):
        monkeypatch.delenv(var, raising=False)
        assert read() == choices[0]
        monkeypatch.setenv(var, choices[-1])
        assert read() == choices[-1]
        monkeypatch.setenv(var, "sideways")
        with pytest.raises(EngineError, match=f"{var}='sideways': give {' or '.join(choices)}"):
            read()


def test_the_head_start_is_sized_to_end_just_after_the_lets_come():
    """LETWalkMixin._size_head (GPURank's): a head start that ended before the LETs came grows
    by the wait (plus the margin), one that outlasted them shrinks; at most twofold a time,
    within HEAD_SHARES."""
    from types import SimpleNamespace

    from galaxyview.engines.parallel.gpu_let_walk import (HEAD_MARGIN_MS, HEAD_SHARE,
                                                          HEAD_SHARES, LETWalkMixin)

    rank = SimpleNamespace(_head_share=HEAD_SHARE)
    LETWalkMixin._size_head(rank, 2.0, 1.0)  # the LETs came 1 ms after the head start's end
    assert rank._head_share == pytest.approx(HEAD_SHARE * (3.0 + HEAD_MARGIN_MS) / 2.0)
    grown = rank._head_share
    LETWalkMixin._size_head(rank, 4.0, -2.0)  # they came 2 ms before its end
    assert rank._head_share == pytest.approx(grown * (2.0 + HEAD_MARGIN_MS) / 4.0)
    LETWalkMixin._size_head(rank, 1.0, 30.0)  # far too short: twice the share, no more
    assert rank._head_share == pytest.approx(grown * (2.0 + HEAD_MARGIN_MS) / 4.0 * 2)
    for _ in range(20):
        LETWalkMixin._size_head(rank, 1.0, 30.0)
    assert rank._head_share == HEAD_SHARES[1]
    for _ in range(20):
        LETWalkMixin._size_head(rank, 10.0, -10.0)
    assert rank._head_share == HEAD_SHARES[0]


def test_the_device_export_is_queued_again_until_it_fits_then_gives_up():
    """ExchangeMixin._export_fitted (GPURank's; its logic, no device): queued again while
    _fetch says the list or output grew, the first fitting result returned; past
    EXPORT_TRIES a clear error."""
    from galaxyview.engines.parallel import gpu_exchange
    from galaxyview.errors import EngineError

    class Rank:
        _export_fitted = gpu_exchange.ExchangeMixin._export_fitted

        def __init__(self, fits_at):
            self.tries, self.fits_at, self.skips = 0, fits_at, []

        def _queue_export(self, skip):
            self.tries += 1
            self.skips.append(skip)

        def _fetch(self, copy):
            return ("rows", copy) if self.tries >= self.fits_at else None

    fits = Rank(3)
    assert fits._export_fitted(2, copy=False) == ("rows", False)
    assert fits.tries == 3 and fits.skips == [2, 2, 2]
    never = Rank(gpu_exchange.EXPORT_TRIES + 1)
    with pytest.raises(EngineError, match="no room on the device"):
        never._export_fitted(0)
    assert never.tries == gpu_exchange.EXPORT_TRIES
