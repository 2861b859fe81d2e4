"""Initial conditions made in parts (model/ics/parts.py): any split gives the same
particles, and the whole is the model (a Plummer sphere, a scene's galaxies) as its build
draws it."""
import os

import numpy as np
import pytest

from galaxyview.model import ics
from galaxyview.model.ics.parts import CHUNK, MIN_WORKERS, WORKERS_FROM, centred, moments
from galaxyview.model.ics.plummer import HENON_SCALE, PlummerConfig, PlummerParts
from galaxyview.model.ics.plummer import maker as plummer_maker
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component


@pytest.mark.parametrize("cuts", [[0, 5, CHUNK - 1, CHUNK + 3, 2 * CHUNK + 7],
                                  [0, 2 * CHUNK + 7]])
@pytest.mark.slow
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


@pytest.mark.parametrize("name", ["mw-andromeda", "milky-way", "plummer"])
def test_scenes_made_in_parts_are_their_models(name):
    """A scene's maker draws its model: the components of every galaxy with the model's own
    one-stream draw's counts, masses, centres, sizes and spins; any split gives the same
    particles, and the scene's build is the maker's whole (the same particles on one process
    as on many)."""
    scene = load_scene(name)
    n = 60_000
    maker = scene.maker(n)
    made = maker.whole()
    built = ics.get_model(scene.model).build(scene.config, n, np.random.default_rng(scene.seed))
    again = scene.build(n)
    assert all(np.array_equal(getattr(again, k), getattr(made, k))
               for k in ("pos", "vel", "mass", "component", "galaxy", "radius"))
    assert made.n == n and made.meta["scene"] == again.meta["scene"] == scene.name
    assert made.meta.get("galaxies") == built.meta.get("galaxies")
    a, b = maker.part(0, 12_345), maker.part(12_345, n - 12_345)
    assert np.array_equal(np.r_[a.pos, b.pos], maker.part(0, n).pos)
    for g in np.unique(built.galaxy):
        mine = built.take(built.galaxy == g)
        scale = np.median(np.linalg.norm(mine.pos - mine.pos.mean(axis=0), axis=1))
        for c in np.unique(built.component[built.galaxy == g]):
            one, two = (s.take((s.galaxy == g) & (s.component == c)) for s in (built, made))
            assert one.n == two.n and two.mass.sum() == pytest.approx(one.mass.sum(), rel=1e-5)
            com = [np.average(s.pos, axis=0, weights=s.mass) for s in (one, two)]
            assert np.linalg.norm(com[0] - com[1]) < 0.02 * scale
            if one.n < 1000:
                continue
            radii = [np.linalg.norm(s.pos - m, axis=1) for s, m in zip((one, two), com)]
            assert _ks(*radii) < 1.95 * np.sqrt(4 / one.n)  # alpha 0.001; mirrored pairs
            vel = [np.average(s.vel, axis=0, weights=s.mass) for s in (one, two)]
            sigma = one.vel.std(axis=0).max()
            assert np.linalg.norm(vel[0] - vel[1]) < 0.05 * sigma
            spin = [np.cross(s.pos - m, s.vel - v).sum(axis=0) for s, m, v in
                    zip((one, two), com, vel)]
            if c == Component.DISK:  # spins about the same axis
                cos = spin[0] @ spin[1] / np.linalg.norm(spin[0]) / np.linalg.norm(spin[1])
                assert cos > 0.999


def _ks(a, b) -> float:
    """The two-sample Kolmogorov-Smirnov statistic."""
    x = np.sort(np.r_[a, b])
    return float(np.abs(np.searchsorted(np.sort(a), x, "right") / len(a) -
                        np.searchsorted(np.sort(b), x, "right") / len(b)).max())


def test_a_plummer_scene_made_in_parts_keeps_its_place():
    config = PlummerConfig(mass=2.0, radius=0.5, center=(1.0, -2.0, 3.0),
                           velocity=(0.5, 0.0, -0.25))
    state = plummer_maker(config, 20_000, 3, {}).whole()
    total = moments(state)
    assert total[1:4] / total[0] == pytest.approx([1.0, -2.0, 3.0], abs=1e-5)
    assert total[4:7] / total[0] == pytest.approx([0.5, 0.0, -0.25], abs=1e-5)


@pytest.mark.slow
def test_worker_processes_make_the_same_part():
    """A part of several chunks made by spawned workers (runs cut at chunk multiples, a
    galaxy's blocks cut across) is the part made here, bit for bit."""
    maker = load_scene("mw-andromeda").maker(2_600_000)
    start, count = 123_457, 2_300_000
    here, there = maker.part(start, count), maker.part(start, count, workers=MIN_WORKERS)
    for name in ("pos", "vel", "mass", "component", "galaxy", "radius"):
        np.testing.assert_array_equal(getattr(there, name), getattr(here, name), err_msg=name)
    assert there.meta == here.meta
    assert count >= WORKERS_FROM  # (else the workers would not be asked)


@pytest.mark.parametrize("workers", [1, MIN_WORKERS])
@pytest.mark.slow
def test_progress_counts_every_particle_once(workers):
    maker = load_scene("mw-andromeda").maker(2_600_000)
    made = []
    part = maker.part(5, 2_500_000, workers, progress=made.append)
    assert sum(made) == part.n == 2_500_000 and len(made) > 1 and min(made) > 0


class FailingParts(PlummerParts):
    """Fails in the worker processes (a part of one process's size)."""

    def part(self, start, count, workers=1):
        if workers == 1:
            raise MemoryError("no room for the particles")
        return super().part(start, count, workers)


def test_a_failing_worker_is_reported(monkeypatch):
    from pathlib import Path

    from galaxyview.errors import GalaxyviewError

    here = str(Path(__file__).parent)  # so that a worker finds FailingParts
    monkeypatch.setenv("PYTHONPATH", here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with pytest.raises(GalaxyviewError, match=r"failed .*MemoryError: no room.*THREADS"):
        FailingParts(WORKERS_FROM, 1).part(0, WORKERS_FROM, workers=MIN_WORKERS)
