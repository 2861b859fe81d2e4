"""bench/domain_walks.py: the domains cut as the parallel engine cuts them (CPU), and on the
GPU each domain's forces (its local walk plus the LETs of the others) against a float64 direct
sum, its interactions against one GPU's, its LETs walked apart and as one walk."""
import numpy as np
import pytest

from galaxyview.bench import domain_walks
from galaxyview.engines.parallel import decompose
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params


def test_the_domains_are_stretches_of_the_key_curve_weighed_by_cost():
    s = plummer_sphere(30000, np.random.default_rng(2))
    owner = domain_walks.cut(s.pos, 3)
    counts = np.bincount(owner, minlength=3)
    assert counts.sum() == 30000 and counts.min() > 0.95 * 10000  # by count: near equal
    keys = decompose.particle_keys(s.pos, decompose.global_cube(domain_walks._One(), s.pos))
    assert np.all(np.diff(owner[np.argsort(keys)]) >= 0)  # contiguous along the curve
    weighed = domain_walks.cut(s.pos, 3, np.array([3.0, 1.0, 1.0]), owner)
    new = np.bincount(weighed, minlength=3)
    assert new[0] < 0.6 * counts[0]  # the costly domain gives particles away
    cost = np.array([3.0, 1.0, 1.0])[owner]
    work = np.bincount(weighed, weights=cost, minlength=3)
    assert work.max() < 1.1 * work.mean()  # and the work is shared out evenly


@pytest.mark.gpu
@pytest.mark.parametrize("k", [2, 3])
def test_each_domain_walked_with_the_others_lets_gets_one_trees_forces(k):
    state = plummer_sphere(60000, np.random.default_rng(3))
    out = domain_walks.measure(state, Params(theta=0.6, eps=0.05, dt=1 / 16), [k],
                               repeats=1, log=lambda *_: None, group_parts=3)
    one_p50, one_p99 = out["error"]
    (got,) = out["domains"]
    assert sum(r["n"] for r in got["rows"]) == 60000
    for row in got["rows"]:
        p50, p99 = row["error"]
        assert p50 < 2 * one_p50 + 1e-4 and p99 < 2 * one_p99 + 1e-3
        assert row["particles_in"] > 0 and row["pc"] > 0 and row["walk"] > 0
        assert row["one"] > 0 and row["export"] > 0
    # cutting the tree costs interactions, but not many
    assert 0.7 < got["interaction_bound"] < 1.0
    # the LET walk by ranges of groups: the same walk, its interactions split among them
    for row, parts in zip(got["rows"], got["group_parts"]):
        assert len(parts) == 3 and all(p["ms"] > 0 for p in parts)
        assert sum(p["interactions"] for p in parts) == row["pp"] + row["pc"]
