"""Heads-up display: a translucent label over the canvas with rates, time and energy error."""
from __future__ import annotations

from dataclasses import dataclass

from PyQt6.QtWidgets import QLabel


@dataclass
class HudInfo:
    fps: float = 0.0
    step_ms: float = 0.0
    draw_ms: float = 0.0
    n: int = 0
    time: float = 0.0  # N-body units
    time_myr: float | None = None  # when the scene has physical units
    energy_error: float | None = None  # (E - E0) / |E0|
    engine: str = ""
    path: str = ""  # how positions reach the GL buffer
    playing: bool = False
    recording: bool = False


def hud_text(info: HudInfo) -> str:
    t = f"t = {info.time:.4g} N-body"
    if info.time_myr is not None:
        t = f"t = {info.time_myr:,.1f} Myr ({info.time:.4g} N-body)"
    de = "dE/E = –" if info.energy_error is None else f"dE/E = {info.energy_error:+.2e}"
    state = "playing" if info.playing else "paused"
    if info.recording:
        state += " · REC"
    return "\n".join([
        f"{info.fps:5.1f} fps   step {info.step_ms:7.2f} ms   draw {info.draw_ms:6.2f} ms",
        f"N = {info.n:,}   {t}",
        f"{de}   {state}",
        f"{info.engine} · {info.path}",
    ])


class Hud(QLabel):
    def __init__(self, parent):
        super().__init__(parent)
        self.setStyleSheet("QLabel { color: #e8f0ff; background: rgba(0, 0, 0, 140); "
                           "font-family: monospace; font-size: 11px; padding: 4px; }")
        self.move(8, 8)

    def show_info(self, info: HudInfo) -> None:
        self.setText(hud_text(info))
        self.adjustSize()
