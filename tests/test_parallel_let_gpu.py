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


def _device(eng, boxes, skip):
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
    """Boxes near, inside, across and far from the particles; an empty one."""
    lo, hi = np.percentile(pos, 5, axis=0), np.percentile(pos, 95, axis=0)
    out = [np.r_[lo, hi], np.r_[lo + 2 * (hi - lo), hi + 2 * (hi - lo)],
           np.r_[[0.0, -0.2, -0.2], [0.5, 0.2, 0.2]],
           np.r_[[1e4, 1e4, 1e4], [1e4 + 1, 1e4 + 1, 1e4 + 1]],  # far beyond any root's reach
           np.r_[np.full(3, np.inf), np.full(3, -np.inf)]]
    for _ in range(3):
        c = rng.standard_normal(3)
        out.append(np.r_[c - 0.3 * rng.random(3), c + 0.3 * rng.random(3)])
    return np.array(out, np.float32)


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
        if n >= 400_000:  # more rows than the first output holds: grown, queued again
            assert tries == 2
        total = float(eng.state().mass.astype(np.float64).sum())
        for r, (cells, parts) in enumerate(got):  # each LET carries all the mass once
            if len(cells):
                assert _let_mass(cells, parts) == pytest.approx(total, rel=1e-5), r
    finally:
        eng.close()
