"""The window's frame-time split (app/frame_clock.py): draw, and the wait for the next state."""
import pytest

from galaxyview.app.frame_clock import FrameClock


def _run(step_ms, draw_ms, frames=20):
    """A worker stepping while the GUI draws: a state arrives every max(step, draw) ms (the
    next batch is posted as a paint takes its state) and is drawn at once."""
    clock, t = FrameClock(span_s=10.0), 0.0
    period = max(step_ms, draw_ms) / 1e3
    for _ in range(frames):
        t += period
        clock.state_arrived(t)
        clock.painted(t, t + draw_ms / 1e3)
    return clock.split()


def test_a_long_step_shows_as_the_guis_wait():
    s = _run(step_ms=8.0, draw_ms=2.0)
    assert s.draw_ms == pytest.approx(2.0) and s.wait_ms == pytest.approx(6.0)
    assert s.states == 19 and s.limit(8.0) == "step"  # the first came before any paint


def test_a_long_draw_leaves_no_wait():
    s = _run(step_ms=1.0, draw_ms=5.0)
    assert s.draw_ms == pytest.approx(5.0) and s.wait_ms == pytest.approx(0.0, abs=1e-9)
    assert s.limit(1.0) == "draw"


def test_only_the_recent_span_counts():
    clock = FrameClock(span_s=0.5)
    clock.painted(0.0, 0.1)  # a slow paint long ago
    for i in range(10):
        t = 10.0 + 0.01 * i
        clock.state_arrived(t)
        clock.painted(t, t + 0.002)
    s = clock.split()
    assert s.draw_ms == pytest.approx(2.0) and s.states == 10


def test_the_hud_names_what_limits():
    pytest.importorskip("PyQt6.QtWidgets", reason="the HUD is a Qt label")
    from galaxyview.app.hud import HudInfo, hud_text

    line = hud_text(HudInfo(fps=120, step_ms=6.0, draw_ms=2.0, wait_ms=4.0, limit="step"))
    assert "step    6.00 ms" in line and "wait   4.00 ms (step limits)" in line
    assert "wait" not in hud_text(HudInfo(fps=60, step_ms=6.0, draw_ms=2.0)).splitlines()[0]
