"""The Record button writes what the canvas shows into an mp4 at a fixed frame rate."""
import time

import imageio
import pytest

pytestmark = pytest.mark.gui


def test_record_writes_a_movie_in_real_time(qtbot, tmp_path):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers

    w = MainWindow(ViewOptions(backend="cpu"))
    w.open_source("plummer", 1500)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    out = tmp_path / "demo.mp4"
    assert w.start_recording(out, fps=20)
    assert w.panel.record.isChecked() and w.hud_info().recording
    t0 = time.perf_counter()
    w.set_playing(True)
    qtbot.waitUntil(lambda: w.step_frames >= 3 and time.perf_counter() - t0 > 0.6,
                    timeout=20_000)
    seconds = time.perf_counter() - t0
    recorded_size = w.recorder.size
    cw, ch = w.canvas.physical_size
    assert recorded_size == (cw - cw % 2, ch - ch % 2)  # even sides for H.264
    assert w.hud_info().recording == f"{recorded_size[0]}x{recorded_size[1]} window"
    assert w.stop_recording() == out and not w.panel.record.isChecked()
    with imageio.get_reader(out, "ffmpeg") as movie:
        frames = [f for f in movie]
        size = movie.get_meta_data()["size"]
    assert tuple(size) == recorded_size
    assert 20 * seconds * 0.8 <= len(frames) <= 20 * seconds * 1.3 + 2  # wall-clock rate
    assert max(f.max() for f in frames) > 100 and not (frames[0] == frames[-1]).all()
    # a second recording to the same name needs overwrite: the window says so
    assert not w.start_recording(out)
    assert "already exists" in w.last_error
    w.error_dialog.close()
    w.close()
    assert wait_for_workers(20_000)
