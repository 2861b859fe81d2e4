"""The window plays an archive back: the scrub bar moves through its snapshots."""
import pytest

pytest.importorskip("PyQt6.QtCore", reason="the window tests need PyQt6")

pytestmark = pytest.mark.gui
WAIT_MS = 20_000


def test_scrub_bar_seeks_the_stored_snapshots(qtbot, tmp_path):
    from galaxyview.app.window import MainWindow, ViewOptions, wait_for_workers
    from galaxyview.cli.main import main

    arc = tmp_path / "run.h5"
    assert main(["run", "plummer", "--n", "300", "--backend", "cpu", "--steps", "6",
                 "--archive", str(arc), "--every", "2"]) == 0
    w = MainWindow(ViewOptions(backend="cpu"))
    qtbot.addWidget(w)
    w.open_source(str(arc))
    w.show()
    qtbot.waitExposed(w)
    assert w.scrub.isVisible() and (w.scrub.minimum(), w.scrub.maximum()) == (0, 3)
    engine = w.session.engine
    w.scrub.setValue(2)  # as a drag would
    qtbot.waitUntil(lambda: engine.frame_index == 2 and engine.steps_done == 4, timeout=WAIT_MS)
    p = w.panel  # its parameters are those it was computed with: the physics is fixed
    assert not any(getattr(p, name).isEnabled() for name in ("theta", "dt", "eps", "eta"))
    w.open_source("plummer", 300)  # a simulation: no scrub bar
    assert not w.scrub.isVisible()
    assert all(getattr(p, name).isEnabled() for name in ("theta", "dt", "eps"))
    assert not p.eta.isEnabled()  # the shared-step leapfrog takes no eta
    w.close()
    assert wait_for_workers(WAIT_MS)
