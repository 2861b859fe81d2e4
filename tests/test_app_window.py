"""The viewer window under Xvfb with Mesa, on the CPU engine with a small Plummer sphere."""
import numpy as np
import pytest

Qt = pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6").Qt

pytestmark = pytest.mark.gui

N = 2000
WAIT_MS = 20_000


def open_window(qtbot):
    from galaxyview.app.window import MainWindow, ViewOptions

    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source("plummer", N)
    qtbot.addWidget(w)
    w.show()
    return w


@pytest.fixture
def window(qtbot):
    from galaxyview.app.window import wait_for_workers

    w = open_window(qtbot)
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.step_frames == 0 and w.energy_error is not None, timeout=WAIT_MS)
    yield w
    w.close()
    assert wait_for_workers(WAIT_MS)


def idle(w):
    return not w.session.busy


def test_window_shows_engine_path_and_particle_count(window):
    p = window.panel
    assert window.sim.engine.n == N and p.n.value() == N
    assert "CPU" in p.engine.text() and "host upload" in p.engine.text()
    assert p.scene.currentData() == "plummer"
    info = window.hud_info()
    assert info.n == N and info.path == "host upload" and info.energy_error == 0.0


def test_window_shows_the_physics_modules(window):
    modules = window.sim.engine.modules
    assert modules["integrator"] == "leapfrog"
    text = window.panel.modules.text()
    assert all(f"{kind} {name}" in text for kind, name in modules.items())
    window.hud.show_info(window.hud_info())
    assert "integrator leapfrog" in window.hud.text()


@pytest.mark.parametrize("name, value", [("theta", 0.42), ("dt", 0.002), ("eps", 0.011)])
def test_spin_box_sets_the_engine_parameter(window, qtbot, name, value):
    control = getattr(window.panel, name)
    control.spin.setValue(value)
    qtbot.waitUntil(lambda: getattr(window.sim.engine.params, name) == control.value(),
                    timeout=WAIT_MS)
    assert control.value() == pytest.approx(value)
    assert window.plot.markers[-1][1].endswith(f"={control.value():g}")


def test_softening_change_rebases_the_energy_reference(window, qtbot):
    """A new eps changes the potential energy at once; dE/E measures the integration alone."""
    window.panel.eps.spin.setValue(1.5)
    qtbot.waitUntil(lambda: window.sim.engine.params.eps == 1.5 and idle(window),
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.session.last.kind == "params", timeout=WAIT_MS)
    assert abs(window.session.last.energy_jump) > 0.01  # the potential did change
    assert abs(window.energy_error) < 1e-6
    window.single_step()
    qtbot.waitUntil(lambda: window.sim.engine.steps_done >= 1 and idle(window), timeout=WAIT_MS)
    assert abs(window.energy_error) < 1e-3


@pytest.mark.parametrize("name", ["theta", "dt", "eps"])
def test_slider_sets_the_engine_parameter(window, qtbot, name):
    control = getattr(window.panel, name)
    before = getattr(window.sim.engine.params, name)
    control.slider.setValue(control.slider.value() // 2)  # a key or groove click commits
    qtbot.waitUntil(lambda: getattr(window.sim.engine.params, name) == control.value(),
                    timeout=WAIT_MS)
    assert getattr(window.sim.engine.params, name) != before
    # the box shows the slider's value, rounded to the box's decimals
    assert control.value() == pytest.approx(control.from_slider(control.slider.value()),
                                            abs=0.51 * 10 ** -control.spin.decimals())


def test_play_pause_single_step_and_steps_per_frame(window, qtbot):
    engine = window.sim.engine
    window.panel.step.click()
    qtbot.waitUntil(lambda: engine.steps_done == 1 and idle(window), timeout=WAIT_MS)
    window.panel.steps_per_frame.setValue(3)
    window.panel.play.click()
    assert window.playing and window.panel.play.text() == "Pause"
    qtbot.waitUntil(lambda: window.step_frames >= 3, timeout=WAIT_MS)
    window.panel.play.click()
    assert not window.playing
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    done = engine.steps_done
    assert done >= 1 + 3 * 2 and (done - 1) % 3 == 0  # whole batches of 3 after the one step
    qtbot.wait(100)
    assert engine.steps_done == done  # paused means paused
    assert engine.time == pytest.approx(done * engine.params.dt)


def test_reset_goes_back_to_the_initial_state(window, qtbot):
    engine = window.sim.engine
    window.panel.steps_per_frame.setValue(2)
    window.panel.step.click()
    qtbot.waitUntil(lambda: engine.steps_done == 1 and idle(window), timeout=WAIT_MS)
    assert engine.time > 0
    window.panel.reset.click()
    qtbot.waitUntil(lambda: engine.time == 0.0 and idle(window), timeout=WAIT_MS)
    assert np.array_equal(engine.state().pos, window.sim.initial.pos)


def test_look_controls_change_the_renderer(window, qtbot):
    p, look = window.panel, window.look
    p.point_size.spin.setValue(5.5)
    p.exposure.spin.setValue(3.0)
    p.colour.setCurrentText("speed")
    p.tone_map.setCurrentText("reinhard")
    assert (look.point_size, look.exposure) == (5.5, 3.0)
    assert (look.colour_mode, look.tone_map) == ("speed", "reinhard")
    assert window.canvas.renderer.look is look
    p.box_lo.setValue(1)
    p.box_hi.setValue(3)
    p.boxes.setChecked(True)
    assert look.boxes and tuple(look.box_levels) == (1, 3)
    qtbot.waitUntil(lambda: window.canvas.renderer._box_count > 0, timeout=WAIT_MS)
    tree = window.sim.engine.tree
    n_cells = int(((tree.level >= 1) & (tree.level <= 3)).sum())
    assert window.canvas.renderer._box_count == 24 * n_cells  # 12 edges per cell box
    p.box_lo.setValue(5)  # lo above hi pulls hi along
    assert tuple(look.box_levels) == (5, 5)


def test_camera_controls(window, qtbot):
    cam, p = window.canvas.camera, window.panel
    centre, distance = cam.centre.copy(), cam.distance
    cam.pan(1.0, 0.0)
    cam.zoom(0.1)
    p.fit.click()
    qtbot.waitUntil(lambda: np.allclose(cam.centre, centre) and cam.distance == distance,
                    timeout=WAIT_MS)
    p.fly.setChecked(True)
    assert window.canvas.fly_mode
    eye = cam.eye
    window.canvas.handle_key("W")
    assert np.linalg.norm(cam.eye - eye) > 0
    p.auto_orbit.setChecked(True)
    az = cam.azimuth
    qtbot.waitUntil(lambda: cam.azimuth != az, timeout=WAIT_MS)


def test_keyboard_shortcuts(window, qtbot):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert window.playing
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert not window.playing
    qtbot.keyClick(window, Qt.Key.Key_B)
    assert window.look.boxes
    qtbot.keyClick(window, Qt.Key.Key_C)
    assert window.look.colour_mode == "galaxy"  # the next mode
    qtbot.keyClick(window, Qt.Key.Key_G)
    assert window.canvas.fly_mode
    exposure = window.look.exposure
    qtbot.keyClick(window, Qt.Key.Key_BracketRight)
    assert window.look.exposure == pytest.approx(exposure * 1.25)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_N)
    qtbot.waitUntil(lambda: window.sim.engine.steps_done == 1, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    assert "fly" in window.help_dialog.text()
    window.help_dialog.close()


@pytest.mark.slow
def test_screenshot_is_lit_and_successive_frames_differ(window, qtbot):
    first = window.canvas.render_image()
    h, w = first.shape[:2]
    assert (w, h) == tuple(window.canvas.physical_size)
    lit = (first.max(axis=-1) > 40).mean()
    assert lit > 0.002
    frames = []
    window.set_playing(True)
    for _ in range(2):  # two batches on from what was drawn last (frames may come fast)
        seen = window.step_frames
        qtbot.waitUntil(lambda: window.step_frames >= seen + 2, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: window.frame_shown, timeout=WAIT_MS)
        frames.append(window.canvas.render_image())
    window.set_playing(False)
    assert not np.array_equal(first, frames[0]) and not np.array_equal(frames[0], frames[1])


def test_each_batch_is_drawn_once_while_the_next_one_steps(window, qtbot):
    """Host path: the next batch is posted as a paint takes its state, so the worker steps
    while the GUI draws; every frame drawn is one batch on from the one before."""
    session, drawn = window.session, []
    sync, draw = session.sync, window.canvas.renderer.draw

    def recording_sync(look):
        frame = session.frame
        shown = sync(look)
        if shown:
            drawn.append([frame.steps_done, None])
        return shown

    def recording_draw(*args):
        if drawn and drawn[-1][1] is None:
            drawn[-1][1] = session.worker.pending_steps  # batches in flight while drawing
        draw(*args)

    session.sync, window.canvas.renderer.draw = recording_sync, recording_draw
    window.set_playing(True)
    qtbot.waitUntil(lambda: len(drawn) >= 8, timeout=WAIT_MS)
    window.set_playing(False)
    steps = [d[0] for d in drawn]
    per_frame = window.steps_per_frame
    assert steps == list(range(steps[0], steps[0] + per_frame * len(steps), per_frame)), steps
    assert all(d[1] == 1 for d in drawn[:-1]), drawn


def test_bad_scene_file_shows_the_error_and_keeps_the_scene(window, qtbot, tmp_path):
    engine = window.sim.engine
    bad = tmp_path / "broken.toml"
    bad.write_text('[scene]\nname = "broken"\nseed = "not a number"\n')
    assert window.load(str(bad)) is False
    assert window.error_dialog.isVisible()
    assert "broken.toml" in window.error_dialog.text()
    window.error_dialog.close()
    junk = tmp_path / "junk.tipsy"
    junk.write_bytes(b"\x00\x01 not a snapshot" * 3)
    assert window.load(str(junk)) is False
    assert "junk.tipsy" in window.error_dialog.text()
    window.error_dialog.close()
    assert window.sim.engine is engine and window.panel.scene.currentData() == "plummer"
    window.panel.step.click()  # the old scene still runs
    qtbot.waitUntil(lambda: engine.steps_done == 1, timeout=WAIT_MS)


def test_open_another_scene_and_particle_count(window, qtbot):
    old = window.sim.engine
    window.panel.n.setValue(1500)
    window.panel.n.editingFinished.emit()
    qtbot.waitUntil(lambda: window.sim.engine.n == 1500, timeout=WAIT_MS)
    assert window.sim.engine is not old
    assert window.sim.engine.steps_done == 0 and window.panel.n.value() == 1500


def test_theta_is_off_for_direct_summation(qtbot):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu", gravity="direct"))  # as star clusters run
    qtbot.addWidget(w)
    w.open_source("plummer", 500)
    p = w.panel
    assert w.sim.engine.gravity == "direct"
    assert not p.theta.isEnabled() and p.dt.isEnabled() and p.eps.isEnabled()
    assert not p.eta.isEnabled()  # a shared-step leapfrog: eta sets nothing
    w.options = ViewOptions(backend="cpu")
    w.open_source("plummer", 500)  # the tree again, with the shared-step leapfrog
    assert w.sim.engine.gravity == "tree" and p.theta.isEnabled() and not p.eta.isEnabled()
    for integrator in ("leapfrog-hier", "hermite4"):  # their steps come from eta
        w.options = ViewOptions(backend="cpu", engine={"integrator": integrator})
        w.open_source("plummer", 500)
        assert p.eta.isEnabled(), integrator
    w.close()
    assert wait_for_workers(WAIT_MS)


def test_window_closes_cleanly(qtbot):
    from galaxyview.app.window import wait_for_workers

    w = open_window(qtbot)
    w.set_playing(True)
    qtbot.waitUntil(lambda: w.step_frames >= 1, timeout=WAIT_MS)
    worker = w.worker
    assert w.close()
    assert wait_for_workers(WAIT_MS) and worker.isFinished()
    assert w.worker is None and w.sim is None


def test_colour_by_property_while_paused_with_a_colour_bar(window, qtbot):
    from galaxyview.render.colour import LABELS, auto_range, engine_values
    from galaxyview.render.look import COLOUR_MODES

    p, r = window.panel, window.canvas.renderer
    assert [p.colour.itemText(i) for i in range(p.colour.count())] == list(COLOUR_MODES)
    assert not window.playing
    for mode in ("density", "energy", "galaxy"):
        p.colour.setCurrentText(mode)
        qtbot.waitUntil(lambda: r.vertex_mode == mode and idle(window), timeout=WAIT_MS)
        window._show_overlays()
        bar = window.colour_bar
        assert bar.isVisible() and bar.title == LABELS[mode]
        with window.worker.engine_lock:
            expected = auto_range(mode, engine_values(window.sim.engine, mode))
        assert r.colour_range(mode) == pytest.approx(expected)
        assert (bar.ends[0] != "") == (mode != "galaxy")
    p.colour_map.setCurrentText("fire")
    assert window.look.colour_map == "fire"


def test_live_force_error_follows_theta_in_the_hud(window, qtbot):
    s = window.session
    qtbot.waitUntil(lambda: s.accuracy is not None, timeout=WAIT_MS)
    first = s.accuracy
    window.set_param("theta", 0.2)  # far more accurate: checked at once
    qtbot.waitUntil(lambda: s.accuracy is not first and s.accuracy.p50 < first.p50 / 2,
                    timeout=WAIT_MS)
    window.hud.show_info(window.hud_info())
    assert "force error p50" in window.hud.text() and "sampled" in window.hud.text()
    window.panel.accuracy.setChecked(False)
    window.hud.show_info(window.hud_info())
    assert "force error" not in window.hud.text() and s.worker.accuracy_targets is None


@pytest.mark.slow
def test_timeline_scrub_rewinds_and_a_branch_follows_in_the_energy_plot(window, qtbot):
    bar, s = window.timeline_bar, window.session
    bar.every.setValue(2)
    window.panel.steps_per_frame.setValue(2)
    window.set_playing(True)
    qtbot.waitUntil(lambda: len(bar.times) >= 4, timeout=WAIT_MS)
    window.set_playing(False)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    t_end = s.last.time
    before = bar.times
    target = before[1]
    bar.slider.setValue(1)
    bar.rewind.emit(1)  # as letting go of the slider does
    qtbot.waitUntil(lambda: s.last.kind == "rewind" and idle(window), timeout=WAIT_MS)
    assert s.last.time == target and window.sim.engine.time == target
    assert max(t for t, _ in window.plot.points) <= target < t_end
    assert "states every 2 steps" in bar.label.text() and "host memory" in bar.label.text()
    window.set_param("theta", 0.3)  # what if
    window.set_playing(True)
    qtbot.waitUntil(lambda: max(t for t, _ in window.plot.points) > t_end, timeout=WAIT_MS)
    window.set_playing(False)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    kept = bar.times
    assert kept[:2] == before[:2] and all(b > a for a, b in zip(kept, kept[1:]))
    assert window.sim.engine.params.theta == pytest.approx(0.3)
    # the plot shows the branch: up to the rewind, the marker there, then the new history
    assert window.plot.markers[-1] == (target, "θ=0.3")


def test_hud_says_which_engine_runs_and_why(window):
    window.hud.show_info(window.hud_info())
    assert window.sim.why == "CPU engine (asked for)"
    assert "CPU engine (asked for) · host upload" in window.hud.text()


def test_status_line_while_a_large_scene_is_made(window, monkeypatch):
    """open_source hands open_simulation a progress callback that writes the status line."""
    import galaxyview.simulation

    real, seen = galaxyview.simulation.open_simulation, []

    def opening(*args, progress=None, **kwargs):
        for k in (1 << 20, 1 << 20, 100_000):  # as PartMaker.part reports a 2.2M scene
            progress(k, 2_197_152)
            seen.append(window.statusBar().currentMessage())
        return real(*args, **kwargs)

    monkeypatch.setattr(galaxyview.simulation, "open_simulation", opening)
    window.open_source("plummer", N)
    assert seen == ["making the particles: 1.0M of 2.2M", "making the particles: 2.1M of 2.2M",
                    "making the particles: 2.2M of 2.2M"]
    window._making(500, N)  # a small scene: no status line for it
    assert window.statusBar().currentMessage() == seen[-1]


def test_values_beyond_a_controls_range_show_as_they_are(qtbot):
    from galaxyview.app.controls import NumberControl

    c = NumberControl(1e-4, 2.0, 0.05, decimals=4, log=True, zero_at_min=True)
    qtbot.addWidget(c)
    for value in (5.0, 1e-5, 3.2e-7, 0.05):
        c.set_value(value)
        assert c.value() == pytest.approx(value, rel=0.05), value
    assert (c.spin.minimum(), c.spin.maximum(), c.spin.decimals()) == (0.0, 2.0, 4)
