"""The window on an NVIDIA GPU: the Qt window stepping the GPU engine and drawing through CUDA-GL
interop, as a user runs it. Needs a display whose GL context is on the GPU (the device kit's
Xvfb with __GLX_VENDOR_LIBRARY_NAME=nvidia, docs/viewer.md); under Mesa's GL (a hybrid laptop,
GLX_MODE=glx-mesa) interop cannot work and the frames go through the host: the tests marked
`any_gl` check that those frames are the same."""
import gc

import numpy as np
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

pytestmark = [pytest.mark.gui, pytest.mark.gpu]

WAIT_MS = 120_000
SIZE = (640, 360)  # the frames compared, window and recorder alike
INTEROP = "CUDA-GL interop"


def _window(qtbot, source="plummer", n=100_000, backend="gpu"):
    from galaxyview.app.window import MainWindow, ViewOptions

    w = MainWindow(ViewOptions(backend=backend))
    qtbot.addWidget(w)
    w.open_source(source, n)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.energy_error is not None and w.frame_shown, timeout=WAIT_MS)
    return w


def _close(w):
    from galaxyview.app.window import wait_for_workers

    w.close()
    assert wait_for_workers(WAIT_MS)


@pytest.fixture
def window(qtbot):
    w = _window(qtbot)
    yield w
    _close(w)


def _idle(w):
    return not w.session.busy and w.frame_shown


def _play(w, qtbot, frames):
    """Exactly `frames` step batches, drawn; paused after."""
    w.stop_at_frame = w.step_frames + frames  # no batch beyond it is posted
    w.set_playing(True)
    qtbot.waitUntil(lambda: w.step_frames >= w.stop_at_frame and _idle(w), timeout=WAIT_MS)
    w.stop_at_frame = None


def _recorder_frame(w, size=SIZE):
    """The same engine state drawn by the headless recorder's renderer (EGL) with the window's
    camera and look."""
    from galaxyview.render.offscreen import OffscreenRenderer

    cam = w.canvas.camera
    with w.worker.engine_lock, OffscreenRenderer(*size, look=w.look) as r:
        r.attach(w.sim.engine, fit=False)
        for name in ("centre", "distance", "azimuth", "elevation", "fov_deg"):
            setattr(r.camera, name, np.copy(getattr(cam, name)))
        image = r.draw()
        r.detach()
    return image


def _same(a, b):
    """Equal within rounding: the splat adds light with float atomics in an order that varies,
    and another GL (Mesa's, where the window's context is not on the GPU) rounds the tone map
    its own way."""
    assert a.shape == b.shape
    assert (a.max(axis=-1) > 40).mean() > 0.005  # lit: not a blank frame
    diff = np.abs(a.astype(int) - b.astype(int))
    assert diff.max() <= 2 and diff.mean() < 0.05, (diff.max(), diff.mean())


def _device_free_mb():
    import pycuda.driver as cuda

    cuda.init()
    ctx = cuda.Device(0).retain_primary_context()
    ctx.push()
    try:
        return cuda.mem_get_info()[0] / 2**20
    finally:
        ctx.pop()
        ctx.detach()


def test_the_window_steps_the_gpu_engine_through_interop(window, qtbot):
    s = window.session
    assert window.sim.engine.on_gpu and s.source.path == INTEROP and s.source.notice is None
    t0 = window.sim.engine.time
    _play(window, qtbot, 5)
    assert window.sim.engine.time > t0 and s.shown_time == window.sim.engine.time
    window.hud.show_info(window.hud_info())
    assert INTEROP in window.hud.text() and window.sim.engine.device_name in window.hud.text()


def test_open_and_close_ten_times_no_traceback_no_device_leak(qtbot, capfd):
    free = []
    for i in range(10):
        w = _window(qtbot, n=50_000)
        assert w.session.source.path == INTEROP
        _play(w, qtbot, 3)
        _close(w)
        gc.collect()
        free.append(_device_free_mb())
    err = capfd.readouterr().err
    print("device memory free after each close (MB):", [round(f, 1) for f in free])
    for bad in ("Traceback", "QObject::setParent", "LogicError", "cannot pop", "warning",
                "PyCUDA WARNING"):
        assert bad not in err, err
    # the first window compiles and loads the kernels; after it the device memory is flat
    assert max(free[1:]) - min(free[1:]) < 16, free


@pytest.mark.any_gl
@pytest.mark.parametrize("mode", ["component", "speed", "density"])
def test_the_window_frame_equals_the_recorders(window, qtbot, mode):
    window.set_look(colour_mode=mode)
    _play(window, qtbot, 3)
    window.canvas.camera.orbit(20, -10)
    own = window.canvas.render_image(SIZE)
    _same(own, _recorder_frame(window))
    if mode != "component":
        drawn = window.canvas.frames_drawn
        window.set_look(colour_mode="component")  # the worker measures, the paint repacks
        qtbot.waitUntil(lambda: window.session.last.kind == "measure" and window.frame_shown
                        and window.canvas.frames_drawn > drawn, timeout=WAIT_MS)
        assert not np.array_equal(own, window.canvas.render_image(SIZE))  # the colours moved


@pytest.mark.any_gl
def test_the_window_frame_equals_the_recorders_at_1m(qtbot):
    w = _window(qtbot, "antennae", 1_000_000)
    try:
        _play(w, qtbot, 2)
        for size in (SIZE, (1280, 720)):
            _same(w.canvas.render_image(size), _recorder_frame(w, size))
    finally:
        _close(w)


@pytest.mark.parametrize("name, value", [("theta", 0.42), ("dt", 0.002), ("eps", 0.011)])
def test_panel_changes_reach_the_gpu_engine(window, qtbot, name, value):
    control = getattr(window.panel, name)
    control.spin.setValue(value)
    qtbot.waitUntil(lambda: getattr(window.sim.engine.params, name) == control.value(),
                    timeout=WAIT_MS)
    t0 = window.sim.engine.time
    _play(window, qtbot, 2)
    if name == "dt":
        steps = 2 * window.steps_per_frame
        assert window.sim.engine.time == pytest.approx(t0 + steps * control.value(), rel=1e-5)
    assert window.plot.markers[-1][1].endswith(f"={control.value():g}")


def test_the_timeline_rewinds_on_the_gpu(window, qtbot):
    bar, s, engine = window.timeline_bar, window.session, window.sim.engine
    bar.every.setValue(2)
    window.panel.steps_per_frame.setValue(2)
    window.set_playing(True)
    qtbot.waitUntil(lambda: len(bar.times) >= 4, timeout=WAIT_MS)
    window.set_playing(False)
    qtbot.waitUntil(lambda: _idle(window), timeout=WAIT_MS)
    target = bar.times[1]
    assert "GPU memory" in bar.label.text()  # the GPU keeps its states on the device
    bar.rewind.emit(1)
    qtbot.waitUntil(lambda: s.last.kind == "rewind" and _idle(window), timeout=WAIT_MS)
    assert engine.time == target and s.shown_time == target
    rewound = window.canvas.render_image(SIZE)
    _play(window, qtbot, 1)  # steps on from the rewound state; the picture follows
    assert engine.time > target and not np.array_equal(rewound, window.canvas.render_image(SIZE))


def test_the_accuracy_readout_on_the_gpu(window, qtbot):
    window.panel.accuracy.setChecked(True)
    _play(window, qtbot, 2)
    qtbot.waitUntil(lambda: window.session.accuracy is not None, timeout=WAIT_MS)
    a = window.session.accuracy
    assert 0 < a.p50 < a.p99 < 0.05 and a.sample > 100
    window.hud.show_info(window.hud_info())
    assert "force error p50" in window.hud.text()


def test_the_hud_splits_the_frame_time(window, qtbot):
    window.set_playing(True)
    qtbot.waitUntil(lambda: window.canvas.clock.split().states >= 5, timeout=WAIT_MS)
    info = window.hud_info()
    window.set_playing(False)
    assert info.step_ms > 0 and info.draw_ms > 0 and info.limit in ("step", "draw")
    window.hud.show_info(info)
    assert f"({info.limit} limits)" in window.hud.text()


def test_the_show_plays_two_scenes_on_the_gpu(qtbot, tmp_path):
    from galaxyview.app.show import ShowController
    from galaxyview.app.window import MainWindow, ViewOptions
    from galaxyview.model.playlist import load_playlist

    f = tmp_path / "two.toml"
    f.write_text('[show]\nfade = 0.2\n[[item]]\nscene = "plummer"\nduration = 2\nn = 60000\n'
                 '[[item]]\nscene = "antennae"\nduration = 2\nn = 60000\n')
    w = MainWindow(ViewOptions(backend="gpu"))
    qtbot.addWidget(w)
    show = ShowController(w, load_playlist(f), fullscreen=False, items=2)
    show.start()
    try:
        qtbot.waitUntil(lambda: w.sim is not None and w.step_frames > 3, timeout=WAIT_MS)
        assert w.sim.name == "plummer" and w.session.source.path == INTEROP
        qtbot.waitUntil(lambda: w.sim.name == "antennae" and w.step_frames > 3,
                        timeout=WAIT_MS)
        assert w.sim.engine.on_gpu and w.session.source.path == INTEROP
    finally:
        _close(w)


def test_forced_fallback_gives_the_interop_frames(qtbot, monkeypatch):
    """GALAXYVIEW_INTEROP=off: registration fails as when the GL context is on another GPU."""
    frames = []
    for off in (False, True):
        if off:
            monkeypatch.setenv("GALAXYVIEW_INTEROP", "off")
        w = _window(qtbot, n=100_000)
        try:
            path = w.session.source.path
            assert (path == INTEROP) != off, path
            _play(w, qtbot, 3)
            w.canvas.camera.orbit(30, 5)
            frames.append(w.canvas.render_image(SIZE))
        finally:
            _close(w)
    _same(*frames)
