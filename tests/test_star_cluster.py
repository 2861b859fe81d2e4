"""Star-cluster scenes: units in pc and Msun, the Kroupa IMF, core and Lagrangian radii, and
`galaxyview run` reporting them."""
import json

import numpy as np
import pytest

from galaxyview.cli.main import main
from galaxyview.errors import SceneError
from galaxyview.model import cluster
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.ics.star_cluster import kroupa_masses
from galaxyview.model.scene import load_scene, parse_scene


def test_kroupa_imf():
    m = kroupa_masses(200_000, np.random.default_rng(0), 0.1, 100.0)
    assert m.min() >= 0.1 and m.max() <= 100.0
    # the fraction above the break and the mean from integrating the two power laws
    a1, a2, b = 1.3, 2.3, 0.5

    def integral(p, lo, hi):  # int m^p dm
        return (hi ** (p + 1) - lo ** (p + 1)) / (p + 1)

    k2 = b ** (a2 - a1)
    n_lo, n_hi = integral(-a1, 0.1, b), k2 * integral(-a2, b, 100.0)
    m_lo, m_hi = integral(1 - a1, 0.1, b), k2 * integral(1 - a2, b, 100.0)
    assert (m > b).mean() == pytest.approx(n_hi / (n_lo + n_hi), abs=0.005)
    assert m.mean() == pytest.approx((m_lo + m_hi) / (n_lo + n_hi), rel=0.03)
    # the slope above the break: dN/dlog m ~ m^-1.3
    hist, edges = np.histogram(np.log10(m[m > 1]), bins=8, range=(0, 2))
    slope = np.polyfit(0.5 * (edges[1:] + edges[:-1]), np.log10(hist), 1)[0]
    assert slope == pytest.approx(-1.3, abs=0.1)


def test_cluster_scenes_in_physical_units():
    sc = load_scene("cluster-imf")
    assert sc.units.length_kpc == pytest.approx(1e-3) and sc.params.integrator == "hermite4"
    state = sc.build(4096)
    msun = state.mass.astype(float) * sc.units.mass_msun
    assert msun.min() >= 0.0999 and msun.max() <= 100.01
    star = load_scene("star-cluster")
    s = star.build(2048)
    assert s.mass.sum() == pytest.approx(1.0, rel=1e-5)  # 10^4 Msun in units of 10^4 Msun
    assert star.units.time_myr == pytest.approx(0.1491, rel=1e-3)


def test_units_take_one_of_each_pair(tmp_path):
    text = """[scene]\nname = "c"\ndescription = "c"\nseed = 1\nn_cpu = 10\nn_gpu = 10
[units]\nlength_pc = 2.0\nlength_kpc = 0.002\n[model]\ntype = "plummer"\n"""
    import tomllib

    with pytest.raises(SceneError, match="length_kpc or length_pc, not both"):
        parse_scene(tomllib.loads(text), tmp_path / "c.toml")
    kroupa = text.replace("length_kpc = 0.002\n", "").replace(
        '[units]\nlength_pc = 2.0\n', "").replace('"plummer"', '"star_cluster"\nimf = "kroupa"')
    with pytest.raises(SceneError, match="needs|give the scene"):
        parse_scene(tomllib.loads(kroupa), tmp_path / "c.toml")


def test_core_and_lagrangian_radii_of_a_plummer_sphere():
    s = plummer_sphere(50_000, np.random.default_rng(1), mass_cut=1.0)
    st = cluster.structure(s.pos, s.mass)
    a = 3 * np.pi / 16  # Plummer scale length in Henon units
    for f, r in st.lagrangian.items():  # m(r) = r^3 / (r^2 + a^2)^(3/2)
        assert r == pytest.approx(a / np.sqrt(f ** (-2 / 3) - 1), rel=0.05)
    assert np.linalg.norm(st.centre) < 0.05
    assert 0.5 * a < st.core_radius < a  # the density-weighted radius lies inside a
    shrunk = cluster.structure(0.5 * s.pos, s.mass)
    assert shrunk.core_radius == pytest.approx(0.5 * st.core_radius, rel=1e-6)


def test_run_reports_cluster_structure_and_block_steps(capsys):
    assert main(["run", "star-cluster", "--backend", "cpu", "--n", "256", "--steps", "2",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["modules"]["integrator"] == "hermite4"
    assert out["rel_energy_error"] < 1e-6
    assert set(out["cluster_end"]["lagrangian_radii"]) == {"0.01", "0.1", "0.5", "0.9"}
    assert out["cluster_start"]["core_radius"] > 0
    assert out["time_steps"]["levels"] >= 2 and out["time_steps"]["block_steps"] >= 2
    assert main(["run", "plummer", "--backend", "cpu", "--n", "300", "--steps", "1"]) == 0
    text = capsys.readouterr().out
    assert "core radius" in text and "block time steps" not in text


def test_cluster_movie_coloured_by_mass_on_the_reference_engine(tmp_path):
    out = tmp_path / "imf.mp4"
    assert main(["record", "cluster-imf", "--backend", "reference", "--n", "300", "-o",
                 str(out), "--frames", "2", "--size", "160x96", "--colour", "mass"]) == 0
    assert out.stat().st_size > 0
