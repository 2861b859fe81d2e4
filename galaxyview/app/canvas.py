"""The vispy canvas inside the window: draws the particle renderer, moves the camera with the
mouse and keys, and reports frame rate and draw time."""
from __future__ import annotations

import time

import numpy as np
from vispy import app, gloo
from vispy.gloo import gl

from galaxyview.app.frame_clock import FrameClock
from galaxyview.render.camera import Camera
from galaxyview.render.look import Look
from galaxyview.render.particles import ParticleRenderer

ORBIT_DEG_PER_PIXEL = 0.3
KEY_ORBIT_DEG = 5.0
FLY_STEP = 0.04  # of the camera distance per key press


class ViewerCanvas(app.Canvas):
    """Mouse: left drag orbits (looks around in fly mode), right or shift drag pans, the wheel
    zooms. Keys: arrows orbit, +/- zoom; in fly mode W/S forward/back, A/D left/right, Q/E
    down/up. `before_draw` (a callable) runs in the GL context before each frame is drawn,
    `after_draw` once its GL work has finished."""

    def __init__(self, look: Look | None = None, size=(960, 720)):
        super().__init__(app="pyqt6", size=size, keys=None, show=False, title="galaxyview")
        self.camera = Camera()
        self.set_current()  # gloo objects below belong to this canvas's context
        self.renderer = ParticleRenderer(look or Look())
        self.fly_mode = False
        self.auto_orbit_deg = 0.0  # degrees per frame while playing demos
        self.before_draw = None
        self.after_draw = None  # runs after the frame's GL work has finished
        self.frames_drawn = 0
        self.draw_ms = 0.0
        self.frame_rate = 0.0
        self.clock = FrameClock()  # draw and wait per frame (the HUD's split)
        self._fps_count, self._fps_t0 = 0, time.perf_counter()
        self.native.setFocusPolicy(self.native.focusPolicy().StrongFocus)

    # -- drawing ---------------------------------------------------------------------------------
    def on_draw(self, event) -> None:
        t0 = time.perf_counter()
        if self.before_draw is not None:
            self.before_draw()
        if self.auto_orbit_deg:
            self.camera.orbit(self.auto_orbit_deg)
        self.camera.update()
        self.renderer.draw(self.camera, self.physical_size)
        self.context.flush_commands()
        gl.glFinish()
        now = time.perf_counter()
        self.draw_ms = (now - t0) * 1e3
        self.clock.painted(t0, now)
        if self.after_draw is not None:
            self.after_draw()
        self.frames_drawn += 1
        self._fps_count += 1
        if now - self._fps_t0 >= 0.5:
            self.frame_rate = self._fps_count / (now - self._fps_t0)
            self._fps_count, self._fps_t0 = 0, now

    def on_resize(self, event) -> None:
        gloo.set_viewport(0, 0, *event.physical_size)

    def render_image(self, size=None) -> np.ndarray:
        """What the canvas shows, drawn again into an offscreen buffer of `size` (width, height)
        (default: the canvas size); (height, width, 3) uint8."""
        w, h = size or self.physical_size
        self.set_current()
        fbo = gloo.FrameBuffer(color=gloo.RenderBuffer((h, w), format="color"))
        with fbo:
            self.renderer.draw(self.camera, (w, h))
            rgb = fbo.read(mode="color", alpha=False)
        fbo.delete()
        return np.ascontiguousarray(rgb[..., :3])

    # -- camera ----------------------------------------------------------------------------------
    def on_mouse_move(self, event) -> None:
        if not event.is_dragging or event.last_event is None:
            return
        dx, dy = np.subtract(event.pos, event.last_event.pos)
        button = event.press_event.button if event.press_event is not None else 1
        if button == 2 or "Shift" in [k.name for k in event.modifiers]:
            h = max(self.size[1], 1)
            self.camera.pan(-dx / h, dy / h)
        elif self.fly_mode:
            self.camera.turn(-dx * ORBIT_DEG_PER_PIXEL, dy * ORBIT_DEG_PER_PIXEL)
        else:
            self.camera.orbit(-dx * ORBIT_DEG_PER_PIXEL, dy * ORBIT_DEG_PER_PIXEL)
        self.update()

    def on_mouse_wheel(self, event) -> None:
        self.camera.zoom(1.1 ** event.delta[1])
        self.update()

    def on_key_press(self, event) -> None:
        if self.handle_key(event.key.name if event.key is not None else ""):
            self.update()

    def handle_key(self, name: str) -> bool:
        """Camera keys; True when the key moved the camera."""
        cam = self.camera
        moves = {"Left": (cam.orbit, (-KEY_ORBIT_DEG, 0)), "Right": (cam.orbit, (KEY_ORBIT_DEG, 0)),
                 "Up": (cam.orbit, (0, KEY_ORBIT_DEG)), "Down": (cam.orbit, (0, -KEY_ORBIT_DEG)),
                 "+": (cam.zoom, (1.25,)), "=": (cam.zoom, (1.25,)), "-": (cam.zoom, (0.8,))}
        if self.fly_mode:
            moves.update({"W": (cam.fly, (FLY_STEP, 0, 0)), "S": (cam.fly, (-FLY_STEP, 0, 0)),
                          "A": (cam.fly, (0, -FLY_STEP, 0)), "D": (cam.fly, (0, FLY_STEP, 0)),
                          "Q": (cam.fly, (0, 0, -FLY_STEP)), "E": (cam.fly, (0, 0, FLY_STEP))})
        if name not in moves:
            return False
        fn, args = moves[name]
        fn(*args)
        return True
