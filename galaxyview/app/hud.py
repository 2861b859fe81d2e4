"""Heads-up display: a translucent label over the canvas with rates, time, energy error, the
engine and its physics modules; what it shows is gathered from the running session here."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from PyQt6.QtWidgets import QLabel

from galaxyview.model.units import in_seconds


@dataclass
class HudInfo:
    fps: float = 0.0
    step_ms: float = 0.0
    draw_ms: float = 0.0
    wait_ms: float = 0.0  # the GUI's wait for the engine's next state, per state drawn
    limit: str = ""  # 'step' or 'draw': which sets the frame rate while playing
    n: int = 0
    time: float = 0.0  # N-body units
    time_myr: float | None = None  # when the scene has physical units
    seconds: bool = False  # time in seconds: a scene in SI units (the ring scenes)
    energy_error: float | None = None  # (E - E0) / |E0|
    engine: str = ""
    why: str = ""  # which engine runs and why (Simulation.why)
    path: str = ""  # how positions reach the GL buffer
    modules: str = ""  # modules_line() of the engine
    blocks: str = ""  # blocks_line() of block time steps, if the integrator has them
    notice: str = ""  # a drawing problem and its fix (e.g. CUDA-GL interop unavailable)
    accuracy: object = None  # the live force check (jobs.accuracy.LiveAccuracy)
    playing: bool = False
    recording: str = ""  # what a movie being recorded gets: "1280x720 window"; "": none
    ring: str = ""  # ring_line() of a ring scene


def modules_line(modules: dict) -> str:
    """'integrator leapfrog · boundary open · collision none' from Engine.modules."""
    return " · ".join(f"{kind} {name}" for kind, name in modules.items())


def blocks_line(ts) -> str:
    """'block steps: 9 levels · 412 blocks a step · 0.81% active' and the occupation of the
    levels ('levels 2-10: 61% 22% ... <1%') from Engine.time_steps()."""
    if ts is None:
        return ""
    line = (f"block steps: {ts.levels} levels · {ts.block_steps:,} blocks a step · "
            f"{100 * ts.active_fraction:.2f}% active")
    used = np.flatnonzero(ts.counts)
    if used.size:
        lo, hi = int(used[0]), int(used[-1])
        share = 100 * ts.counts[lo:hi + 1] / ts.counts.sum()
        line += f"\nlevels {lo}-{hi}: " + " ".join(
            f"{s:.0f}%" if s >= 1 or s == 0 else "<1%" for s in share)
    return line


def ring_line(stats, collisions: int, deferred: int = 0) -> str:
    """'τ 0.50 · FF 0.07 · σ 0.42 0.23 0.27 mm/s · 85 collisions/step · 3.21 orbits', and the
    pairs deferred to the next step when there are any."""
    if stats is None:
        return ""
    sig = " ".join(f"{1e3 * s:.3g}" for s in stats.dispersion)
    late = f" · {deferred:,} deferred: shorten dt" if deferred else ""
    return (f"τ {stats.optical_depth:.3g} · FF {stats.filling_factor:.3g} · σ {sig} mm/s · "
            f"{collisions:,} collisions/step{late} · {stats.orbits:.2f} orbits")


def describe(session, canvas, playing: bool, recording: str = "") -> HudInfo:
    """The HUD's numbers for `session` (None: rates only) drawn on `canvas`."""
    split = canvas.clock.split()
    if session is None:
        return HudInfo(fps=canvas.frame_rate, draw_ms=split.draw_ms, recording=recording)
    f, units, engine = session.last, session.sim.units, session.engine
    t = f.time if f else 0.0
    step_ms = f.step_ms if f and f.step_ms else 0.0
    return HudInfo(
        fps=canvas.frame_rate, step_ms=step_ms, draw_ms=split.draw_ms,
        wait_ms=split.wait_ms if playing else 0.0,
        limit=split.limit(step_ms) if playing and split.states else "", n=engine.n, time=t,
        time_myr=t * units.time_myr if units else None, seconds=in_seconds(engine.params.G),
        energy_error=session.energy_error,
        engine=engine.device_name, why=session.sim.why, path=session.source.path,
        notice=session.source.notice or "", accuracy=session.accuracy,
        modules=modules_line(engine.modules),
        blocks=blocks_line(f.time_steps) if f else "", playing=playing, recording=recording,
        ring=ring_line(session.ring, f.collisions if f else 0, f.deferred if f else 0))


def hud_text(info: HudInfo) -> str:
    t = f"t = {info.time:.4g} {'s' if info.seconds else 'N-body'}"
    if info.time_myr is not None:
        t = f"t = {info.time_myr:,.1f} Myr ({info.time:.4g} N-body)"
    de = "dE/E = –" if info.energy_error is None else f"dE/E = {info.energy_error:+.2e}"
    state = "playing" if info.playing else "paused"
    if info.recording:
        state += f" · REC {info.recording}"
    rates = f"{info.fps:5.1f} fps   step {info.step_ms:7.2f} ms   draw {info.draw_ms:6.2f} ms"
    if info.limit:
        rates += f"   wait {info.wait_ms:6.2f} ms ({info.limit} limits)"
    lines = [
        rates,
        f"N = {info.n:,}   {t}",
        f"{de}   {state}",
        f"{info.why or info.engine} · {info.path}",
    ]
    a = info.accuracy
    if a is not None:
        lines.append(f"force error p50 {a.p50:.1e}  p99 {a.p99:.1e}  ({a.sample:,} sampled, "
                     f"{a.ms:.1f} ms)")
    return "\n".join(lines + [x for x in (info.ring, info.modules, info.blocks, info.notice) if x])


FONT_PX = 11  # the HUD's text at text scale 1
TEXT_SCALES = (0.75, 4.0)  # the text scale's range (a projector wants 2 or more)


class Hud(QLabel):
    """The HUD's label: light text on a dark backing, readable over bright particles; its
    size follows the window's text scale (set_scale)."""

    def __init__(self, parent):
        super().__init__(parent)
        self.set_scale(1.0)
        self.move(8, 8)

    def set_scale(self, scale: float) -> None:
        px = round(FONT_PX * scale)
        self.setStyleSheet(f"QLabel {{ color: #f0f4ff; background: rgba(0, 0, 0, 170); "
                           f"font-family: monospace; font-size: {px}px; "
                           f"padding: {max(4, px // 3)}px; }}")
        self.adjustSize()

    def show_info(self, info: HudInfo) -> None:
        self.setText(hud_text(info))
        self.adjustSize()
