"""A ring scene in the viewer window (Xvfb, CPU engine): shaded spheres, the Ring group's live
restitution and optical depth, the views, the ring HUD line."""
import numpy as np
import pytest

Qt = pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6").Qt

pytestmark = pytest.mark.gui

N = 1500
WAIT_MS = 20_000


@pytest.fixture
def window(qtbot):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="reference"))
    w.open_source("ring-equilibrium", N)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.session.ring is not None, timeout=WAIT_MS)
    yield w
    w.close()
    assert wait_for_workers(WAIT_MS)


def test_ring_scene_draws_spheres_and_shows_ring_numbers(window, qtbot):
    p = window.panel
    assert p.ring_form.parentWidget().isVisible()
    assert window.look.spheres and window.look.colour_mode == "vz"
    assert p.colour.currentText() == "vz"
    image = window.canvas.render_image()
    assert np.asarray(image)[..., :3].std() > 5  # lit spheres on the background
    window.hud.show_info(window.hud_info())
    text = window.hud.text()
    assert "τ 0.5" in text and "orbits" in text and "collisions/step" in text
    assert "integrator sei" in text
    dt = window.sim.engine.params.dt  # seconds: the panel's dt control takes the scene's range
    assert p.dt.value() == pytest.approx(dt) and p.dt.lo < dt < p.dt.hi


def test_ring_time_is_in_seconds(window, qtbot):
    window.single_step()
    qtbot.waitUntil(lambda: window.session.last.time > 0, timeout=WAIT_MS)
    window.hud.show_info(window.hud_info())
    t = window.session.last.time
    assert f"t = {t:.4g} s" in window.hud.text() and "N-body" not in window.hud.text()


def test_restitution_changes_live_and_optical_depth_rebuilds(window, qtbot):
    p = window.panel
    p.restitution.setCurrentText("constant")
    p.eps_n.spin.setValue(0.25)
    qtbot.waitUntil(lambda: window.session.last is not None and
                    window.session.last.params.sheet.eps_n == 0.25, timeout=WAIT_MS)
    sheet = window.sim.engine.params.sheet
    assert sheet.restitution == "constant" and sheet.eps_n == 0.25
    lx = sheet.lx
    p.optical_depth.spin.setValue(1.0)
    qtbot.waitUntil(lambda: window.sim.engine.params.sheet.lx < lx, timeout=WAIT_MS)
    assert window.sim.engine.n == N
    assert window.sim.engine.params.sheet.lx == pytest.approx(lx / np.sqrt(2), rel=1e-6)
    assert p.scene.currentData() == "ring-equilibrium"


def test_views_and_ghost_images(window, qtbot):
    p, cam = window.panel, window.canvas.camera
    p.view_edge.click()
    assert abs(cam.elevation) < 1
    p.view_top.click()
    assert cam.elevation > 85
    p.ghosts.setChecked(True)
    assert window.look.ghosts
    window.canvas.update()  # the next paint sets the images at the drawn state's time
    qtbot.waitUntil(lambda: len(window.canvas.renderer.ghost_offsets) == 8, timeout=WAIT_MS)
    offsets = window.canvas.renderer.ghost_offsets
    sheet = window.sim.engine.params.sheet
    assert set(np.round(np.abs(offsets[:, 0]) / sheet.lx).astype(int)) == {0, 1}


def test_a_galaxy_after_a_ring_is_light_again(window, qtbot):
    window.open_source("plummer", 1000)
    assert not window.look.spheres
    assert window.panel.dt.hi == 0.5 and window.panel.dt.value() == pytest.approx(1 / 64)
    assert not window.panel.ring_form.parentWidget().isVisible()


def test_a_galaxy_after_a_ring_gets_its_colours_back(window, qtbot, tmp_path):
    from PyQt6.QtCore import QSettings

    from galaxyview.app import settings

    p = window.panel
    assert (window.look.colour_mode, window.look.colour_map) == ("vz", "coolwarm")
    kept = QSettings(str(tmp_path / "viewer.conf"), QSettings.Format.IniFormat)
    settings.save(window, kept)  # closed on a ring: the next galaxy is not coloured by vz
    assert kept.value("look/colour_mode") == "component"
    assert kept.value("look/colour_map") == "viridis"
    window.open_source("plummer", 1000)
    assert (window.look.colour_mode, window.look.colour_map) == ("component", "viridis")
    assert (p.colour.currentText(), p.colour_map.currentText()) == ("component", "viridis")
    qtbot.waitUntil(lambda: window.canvas.renderer.vertex_mode == "component", timeout=WAIT_MS)


def test_ring_line_says_when_pairs_wait_for_the_next_step():
    from galaxyview.app.hud import ring_line
    from galaxyview.model.ring_stats import RingStats

    stats = RingStats(0.5, 0.07, (4.2e-4, 2.3e-4, 2.7e-4), 2.3, 3.21)
    assert "deferred" not in ring_line(stats, 85)
    line = ring_line(stats, 85, 12)
    assert "85 collisions/step · 12 deferred: shorten dt" in line and "3.21 orbits" in line
