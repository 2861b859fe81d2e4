"""The window answers within 100 ms while a step takes far longer than a frame: the engine
steps in a worker thread. The step is slowed down on purpose (a real CPU engine, plus a sleep)."""
import threading
import time

import pytest

Qt = pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6").Qt

pytestmark = pytest.mark.gui

SLOW_STEP_S = 1.0
ANSWER_S = 0.1
WAIT_MS = 20_000


@pytest.mark.slow
def test_pause_camera_and_quit_answer_during_a_slow_step(qtbot):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source("plummer", 1000)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.energy_error is not None, timeout=WAIT_MS)
    engine = w.sim.engine
    in_step = threading.Event()
    original = engine.step

    def slow_step(n=1):
        in_step.set()
        time.sleep(SLOW_STEP_S)
        original(n)
        in_step.clear()

    engine.step = slow_step
    w.set_playing(True)
    qtbot.waitUntil(in_step.is_set, timeout=WAIT_MS)

    # a camera key is drawn at once
    drawn, azimuth = w.canvas.frames_drawn, w.canvas.camera.azimuth
    t0 = time.perf_counter()
    qtbot.keyClick(w.canvas.native, Qt.Key.Key_Left)
    qtbot.waitUntil(lambda: w.canvas.frames_drawn > drawn, timeout=1000)
    assert time.perf_counter() - t0 < ANSWER_S
    assert w.canvas.camera.azimuth != azimuth and in_step.is_set()

    # pause answers at once; the step in flight finishes and no other starts
    t0 = time.perf_counter()
    qtbot.mouseClick(w.panel.play, Qt.MouseButton.LeftButton)
    assert time.perf_counter() - t0 < ANSWER_S
    assert not w.playing and in_step.is_set()
    qtbot.waitUntil(lambda: w.worker.pending_steps == 0, timeout=WAIT_MS)
    done = engine.steps_done
    qtbot.wait(200)
    assert engine.steps_done == done and not in_step.is_set()

    # quit answers at once too; the worker ends after its step, off the GUI thread
    w.set_playing(True)
    qtbot.waitUntil(in_step.is_set, timeout=WAIT_MS)
    worker = w.worker
    t0 = time.perf_counter()
    w.close()
    assert time.perf_counter() - t0 < ANSWER_S
    assert not w.isVisible() and in_step.is_set()
    assert wait_for_workers(WAIT_MS) and worker.isFinished()
