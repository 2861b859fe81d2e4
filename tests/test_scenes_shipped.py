"""The shipped galaxy scenes: listed, runnable, tagged, consistent under --n, in equilibrium."""
import numpy as np
import pytest

from galaxyview.cli.main import main
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.model.ics.galaxy import build_galaxy, galaxy_counts
from galaxyview.model.scene import load_scene
from galaxyview.model.state import Component

GALAXY_SCENES = ["milky-way", "mw-andromeda", "antennae", "bonsai-merger", "minor-mergers"]
ALL_SCENES = GALAXY_SCENES + ["plummer", "cold-collapse"]


def galaxy_configs(scene):
    if scene.model == "disk_galaxy":
        return [scene.config]
    if scene.model == "encounter":
        return [m.galaxy for m in scene.config.members]
    return [scene.config.primary]


def test_galaxyview_scenes_lists_all_seven_with_descriptions(capsys):
    assert main(["scenes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line.split(None, 1)[1] for line in lines if line.strip()}
    for name in ALL_SCENES:
        assert len(listed[name]) > 20, name


@pytest.mark.parametrize("name", ALL_SCENES)
def test_galaxyview_run_works_for_each_scene(name, capsys):
    assert main(["run", name, "--n", "600", "--steps", "2", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "N = 600" in out and "relative energy error" in out


@pytest.mark.parametrize("name", GALAXY_SCENES)
def test_galaxy_scenes_state_units_and_tag_components(name):
    scene = load_scene(name)
    assert scene.units is not None and scene.units.time_myr == pytest.approx(4.714, rel=1e-3)
    assert scene.n_gpu >= 20 * scene.default_n("cpu") > 0
    state = scene.build(3000)
    assert state.n == 3000
    names = state.meta["galaxies"]
    assert sorted(np.unique(state.galaxy)) == list(range(len(names)))
    for k, config in enumerate(galaxy_configs(scene)):
        mine = state.component[state.galaxy == k]
        for comp, part in ((Component.DISK, config.disk), (Component.BULGE, config.bulge),
                           (Component.HALO, config.halo)):
            assert (mine == comp).any() == (part is not None), (name, k, comp)
        assert (mine == Component.BLACK_HOLE).sum() == (config.black_hole > 0)
    if scene.model == "swarm":
        assert np.all(state.component[state.galaxy > 0] == Component.SATELLITE)
        assert len(names) == 11


@pytest.mark.parametrize("name", GALAXY_SCENES)
def test_n_rescales_particle_numbers_keeping_masses(name):
    scene = load_scene(name)
    small, large = scene.build(2000), scene.build(8000)
    for k in np.unique(small.galaxy):
        for comp in np.unique(small.component):
            a = small.mass[(small.galaxy == k) & (small.component == comp)].sum()
            b = large.mass[(large.galaxy == k) & (large.component == comp)].sum()
            assert a == pytest.approx(b, rel=1e-5), (k, comp)
    assert np.bincount(large.component)[Component.DISK] == pytest.approx(
        4 * np.bincount(small.component)[Component.DISK], rel=0.01)


def test_bonsai_merger_is_the_seed_papers_setup():
    scene = load_scene("bonsai-merger")
    first, second = galaxy_configs(scene)
    assert first.total_mass / second.total_mass == pytest.approx(3.0, rel=0.02)
    assert first.black_hole > 0 and second.black_hole > 0
    assert scene.config.members[1].orbit.pericentre == pytest.approx(10.0)
    assert scene.config.members[1].orbit.eccentricity == 1.0


def test_minor_mergers_has_ten_satellites_at_one_to_ten():
    config = load_scene("minor-mergers").config
    assert config.count == 10 and config.mass_ratio == 10.0


def test_every_galaxy_of_the_shipped_scenes_starts_in_virial_equilibrium():
    """2K/|W| within 0.05 of 1 for each galaxy on its own (direct summation, 4000 particles)."""
    ratios = {}
    for name in GALAXY_SCENES:
        for k, config in enumerate(galaxy_configs(load_scene(name))):
            state = build_galaxy(config, galaxy_counts([config], 4000)[0],
                                 np.random.default_rng(k))
            m = state.mass.astype(float)
            v = state.vel.astype(float)
            _, pot = direct_forces(state.pos, m, eps=0.0)
            ratios[f"{name}/{config.name}"] = (m @ (v * v).sum(axis=1)) / abs(0.5 * m @ pot)
    assert all(abs(r - 1.0) < 0.05 for r in ratios.values()), ratios
