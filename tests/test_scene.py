"""Scene files: shipped scenes, validation messages, models, loading scenes or snapshots."""
import dataclasses
import textwrap

import numpy as np
import pytest

from galaxyview.errors import ParameterError, SceneError, SnapshotError
from galaxyview.model.ics.cold_collapse import potential_energy
from galaxyview.model.params import Params
from galaxyview.model.scene import load_scene, shipped_scenes
from galaxyview.snapshots import load_source
from galaxyview.model.state import Component
from galaxyview.snapshots.tipsy import save_state
from galaxyview.resources import scenes_dir

GOOD = """\
[scene]
name = "test"
description = "a small test scene"
seed = 7
n_cpu = 300
n_gpu = 5000

[params]
theta = 0.5
dt = 0.01
eps = 0.02

[model]
type = "plummer"
mass = 2.0
"""


def write_scene(tmp_path, text, name="scene.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_shipped_scenes_are_listed_sorted():
    listed = shipped_scenes()
    names = [name for name, _, _ in listed]
    assert names == sorted(names)
    assert {"plummer", "cold-collapse"} <= set(names)
    for name, description, path in listed:
        assert path == scenes_dir() / f"{name}.toml" and description.strip()
        assert "\n" not in description


@pytest.mark.parametrize("name", [name for name, _, _ in shipped_scenes()])
def test_each_shipped_scene_builds_deterministically(name):
    scene = load_scene(name)
    cpu_n = scene.n_cpu if scene.n_cpu is not None else scene.cpu_pace().n
    assert scene.default_n("cpu") == cpu_n and scene.default_n("gpu") == scene.n_gpu
    a, b = scene.build(512), scene.build(512)
    assert a.n == b.n and abs(a.n - 512) <= 0.1 * 512
    for field in ("pos", "vel", "mass", "component", "galaxy"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    other = dataclasses.replace(scene, seed=scene.seed + 1).build(512)
    assert not np.array_equal(a.pos, other.pos)
    assert a.meta["scene"] == scene.name and a.meta["units"] == scene.units
    assert a.meta["source"] == str(scenes_dir() / f"{name}.toml")


def test_plummer_scene_values():
    scene = load_scene("plummer")
    assert (scene.n_cpu, scene.n_gpu, scene.units, scene.model) == (16384, 1048576, None, "plummer")
    assert scene.params.theta == 0.75 and scene.params.dt == 1 / 64
    state = scene.build(2000)
    assert np.isclose(state.mass.sum(), 1.0)
    assert np.all(state.component == Component.STAR)


def test_scene_by_path_with_params_and_model_keys(tmp_path):
    path = write_scene(tmp_path, GOOD)
    scene = load_scene(path)
    assert scene == load_scene(str(path))
    assert (scene.name, scene.seed, scene.source) == ("test", 7, path)
    assert scene.params == Params(theta=0.5, dt=0.01, eps=0.02)
    state = scene.build()
    assert state.n == 300 and np.isclose(state.mass.sum(), 2.0)
    assert scene.build(backend="gpu").n == 5000


def test_defaults_and_units(tmp_path):
    path = write_scene(tmp_path, """\
        [scene]
        name = "units"
        description = "physical keys"
        seed = 0
        n_cpu = 1000
        n_gpu = 1000

        [units]
        length_kpc = 2.0
        mass_1e10msun = 5.0

        [model]
        type = "plummer"
        mass = 10.0          # 1e10 Msun
        radius = 4.0         # kpc
        center = [20.0, 0, 0]
        velocity = [0, 0, 100.0]  # km/s
        """)
    scene = load_scene(path)
    assert scene.params == Params()
    assert scene.units.length_kpc == 2.0 and scene.units.mass_msun == 5e10
    assert scene.config.mass == 2.0 and scene.config.radius == 2.0
    assert scene.config.center == (10.0, 0.0, 0.0)
    assert np.isclose(scene.config.velocity[2], 100.0 / scene.units.velocity_kms)
    state = scene.build()
    assert np.allclose(state.pos.mean(axis=0), [10, 0, 0], atol=1e-4)
    assert np.allclose(state.vel.mean(axis=0), [0, 0, 100.0 / scene.units.velocity_kms], atol=1e-5)


BAD = [  # (change to GOOD, words the message must hold)
    (("[params]", "[params\n"), ["TOML syntax error", "line 8"]),
    (('seed = 7\n', ''), ["scene.seed", "missing"]),
    (('seed = 7', 'seed = "seven"'), ["scene.seed = 'seven'", "must be an integer"]),
    (('seed = 7', 'seed = -1'), ["scene.seed = -1", "must be an integer in [0,"]),
    (('n_gpu = 5000', 'n_gpu = 0'), ["scene.n_gpu = 0", "in [1,"]),
    (('n_cpu = 300', 'n_cpu = 3.5'), ["scene.n_cpu = 3.5", "must be an integer"]),
    (('n_cpu = 300\n', ''), ["scene.n_cpu is missing", "unless scene.story_time"]),
    (('n_cpu = 300', 'story_time = 0'), ["scene.story_time = 0", "must be > 0"]),
    (('theta = 0.5', 'theta = 2.0'), ["params.theta = 2.0", "(0, 1.5]"]),
    (('dt = 0.01', 'dt = 0'), ["params.dt = 0", "must be > 0"]),
    (('eps = 0.02', 'eps = -0.1'), ["params.eps = -0.1", "must be in [0, 1e+19]"]),
    (('theta = 0.5', 'thetta = 0.5'),
     ["unknown key(s) params.thetta", "known here: alpha, block_levels, boundary, collision, dt, eps, eta, integrator, mac, theta"]),
    (('[params]', '[parms]'), ["unknown key(s) parms", "known here:"]),
    (('seed = 7', 'seed = 7\nsed = 8'), ["scene.sed", "known here"]),
    (('type = "plummer"', 'type = "plumer"'),
     ["model.type = 'plumer'", "must be one of", "'cold_collapse'", "'plummer'"]),
    (('type = "plummer"\n', ''), ["model.type", "missing"]),
    (('mass = 2.0', 'mass = -2.0'), ["model.mass = -2.0", "must be > 0"]),
    (('mass = 2.0', 'center = [1, 2]'), ["model.center = [1, 2]", "list of 3 finite numbers"]),
    (('mass = 2.0', 'mas = 2.0'), ["unknown key(s) model.mas", "known here", "mass"]),
    (('[params]', '[units]\nlength_kpc = 0\n[params]'),
     ["units.length_kpc = 0", "must be > 0"]),
    (('name = "test"', 'name = " "'), ["scene.name = ' '", "must not be empty"]),
    (('[scene]\n', 'scene = "x"\n[unused]\n'), ["[scene] must be a table", "'x'"]),
]


@pytest.mark.parametrize("change, words", BAD, ids=[w[0] for _, w in BAD])
def test_bad_scene_files_say_what_is_wrong(tmp_path, change, words):
    text = GOOD.replace(*change)
    assert text != GOOD
    path = write_scene(tmp_path, text)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    message = str(info.value)
    assert message.startswith(str(path))
    for word in words:
        assert word in message, message


def test_cold_collapse_key_checks(tmp_path):
    text = GOOD.replace('type = "plummer"\nmass = 2.0', 'type = "cold_collapse"\nq_vir = 1.0')
    with pytest.raises(SceneError, match=r"model.q_vir = 1.0: must be in \[0, 1\)"):
        load_scene(write_scene(tmp_path, text))


def test_unknown_names_and_missing_files(tmp_path):
    with pytest.raises(SceneError) as info:
        load_scene("no-such-scene")
    assert "'no-such-scene'" in str(info.value)
    assert "shipped scenes:" in str(info.value)
    assert all(name in str(info.value) for name, _, _ in shipped_scenes())
    missing = tmp_path / "missing.toml"
    with pytest.raises(SceneError, match="missing.toml: no such scene file"):
        load_scene(missing)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SceneError, match="binary.toml: not UTF-8"):
        load_scene(binary)


def test_particle_count_is_checked():
    scene = load_scene("plummer")
    for bad in (0, -5, 2.5, True, 2**40):
        with pytest.raises(ParameterError, match="number of particles"):
            scene.build(bad)


def virial_ratio(state):
    x, m = state.pos.astype(np.float64), state.mass.astype(np.float64)
    w = 0.0
    for i in range(0, len(x), 500):
        d = np.linalg.norm(x[i:i + 500, None] - x[None], axis=-1)
        np.fill_diagonal(d[:, i:i + 500], np.inf)
        w -= 0.5 * (m[i:i + 500, None] * m[None] / d).sum()
    k = 0.5 * (m * (state.vel.astype(np.float64) ** 2).sum(axis=1)).sum()
    return k / abs(w), w


@pytest.mark.parametrize("q_vir", [0.0, 0.1, 0.5])
def test_cold_collapse_virial_ratio(tmp_path, q_vir):
    text = GOOD.replace('type = "plummer"\nmass = 2.0',
                        f'type = "cold_collapse"\nmass = 3.0\nradius = 2.0\nq_vir = {q_vir}')
    state = load_scene(write_scene(tmp_path, text)).build(2000)
    q, w = virial_ratio(state)
    assert abs(q - q_vir) <= 0.02 * max(q_vir, 0.01)
    assert abs(w / potential_energy(3.0, 2.0, 2000) - 1) < 0.02
    r = np.linalg.norm(state.pos - state.pos.mean(axis=0), axis=1)
    assert r.max() < 2.0 * 1.05 and np.isclose(np.median(r), 2.0 * 0.5 ** (1 / 3), rtol=0.03)
    assert np.allclose(state.vel.mean(axis=0), 0, atol=1e-6)
    if q_vir == 0:
        assert not state.vel.any()


def test_cold_collapse_scene_resolves_the_free_fall():
    scene = load_scene("cold-collapse")
    assert scene.model == "cold_collapse"
    t_ff = np.pi / 2 * np.sqrt(scene.config.radius ** 3 / (2 * scene.config.mass))
    assert 100 <= t_ff / scene.params.dt <= 2000


def test_initial_state_from_scene_or_snapshot(tmp_path):
    state, scene, _ = load_source("plummer", n=100)
    assert scene.name == "plummer" and state.n == 100
    for name in ("snap.tipsy", "snap.dat"):  # by extension, and by sniffing
        path = save_state(tmp_path / name, state)
        loaded, none, _ = load_source(path)
        assert none is None and np.array_equal(loaded.pos, state.pos)
        assert loaded.meta["units"] is None
    with pytest.raises(ParameterError, match="applies to scenes only"):
        load_source(tmp_path / "snap.tipsy", n=50)
    (tmp_path / "broken.bin").write_bytes(b"\0" * 40)
    with pytest.raises(SnapshotError, match="broken.bin"):
        load_source(tmp_path / "broken.bin")
    scene_file = write_scene(tmp_path, GOOD)
    assert load_source(scene_file)[1].name == "test"
