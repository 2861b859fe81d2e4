"""Initial conditions made in parts (model/ics/parts.py): any split gives the same
particles, and the whole is the model (a Plummer sphere) centred."""
import numpy as np
import pytest

from galaxyview.model.ics.parts import CHUNK, centred, moments
from galaxyview.model.ics.plummer import HENON_SCALE, PlummerParts


@pytest.mark.parametrize("cuts", [[0, 5, CHUNK - 1, CHUNK + 3, 2 * CHUNK + 7],
                                  [0, 2 * CHUNK + 7]])
def test_any_split_gives_the_same_particles(cuts):
    maker = PlummerParts(2 * CHUNK + 7, seed=4)
    whole = maker.part(0, maker.n)
    pieces = [maker.part(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])]
    for k in ("pos", "vel", "mass"):
        assert np.array_equal(np.concatenate([getattr(p, k) for p in pieces]),
                              getattr(whole, k))
    other = PlummerParts(2 * CHUNK + 7, seed=5).part(0, 100)
    assert not np.array_equal(other.pos, whole.pos[:100])  # another seed, other particles


def test_the_whole_is_a_centred_plummer_sphere():
    maker = PlummerParts(200_000, seed=2, mass=3.0, scale=2.0)
    state = maker.whole()
    assert state.n == 200_000 and state.mass.sum() == pytest.approx(3.0, rel=1e-5)
    total = moments(state)
    assert np.abs(total[1:]).max() < 1e-6 * 3.0 * 2.0  # at the centre of mass, at rest
    # the median radius: where Plummer's m(r) = r^3 (1 + r^2)^(-3/2) (a = 1; a = 3 pi / 16
    # times the virial radius) holds half of the 99.9% of the mass drawn (1.305 a uncut)
    r = np.linalg.norm(state.pos.astype(np.float64), axis=1)
    half = 1 / np.sqrt((0.999 / 2) ** (-2 / 3) - 1)
    assert half == pytest.approx(1.305, rel=2e-3)
    assert np.median(r) == pytest.approx(half * HENON_SCALE * 2.0, rel=0.01)
    # virial: 2K = -W, with W = -3 pi G M^2 / (32 a) for a Plummer sphere
    kinetic = 0.5 * (state.mass * (state.vel.astype(np.float64) ** 2).sum(axis=1)).sum()
    w = -3 * np.pi * 9.0 / (32 * HENON_SCALE * 2.0)
    assert 2 * kinetic == pytest.approx(-w, rel=0.02)


def test_centred_moves_by_the_summed_moments():
    maker = PlummerParts(5000, seed=1)
    a, b = maker.part(0, 2000), maker.part(2000, 3000)
    total = moments(a) + moments(b)
    ca, cb = centred(a, total), centred(b, total)
    both = moments(ca) + moments(cb)
    assert np.abs(both[1:]).max() < 1e-6


def test_a_part_outside_the_model_is_refused():
    with pytest.raises(ValueError, match="not in"):
        PlummerParts(100).part(50, 60)
