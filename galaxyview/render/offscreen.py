"""Headless rendering of an engine's current state into numpy images (movies, screenshots,
benchmarks): EGL on the NVIDIA driver, otherwise Mesa's EGL without a display.

    r = OffscreenRenderer(1920, 1080)
    r.attach(engine)            # CUDA-GL interop for the GPU engine, host upload otherwise
    r.camera.orbit(0.5)         # camera: fit(), orbit(), zoom(), pan(), follow(point), fixed()
    r.look.exposure = 2.0       # Look: point_size, exposure, colour_mode, tone_map, boxes
    rgb = r.draw()              # (1080, 1920, 3) uint8
    i420 = r.read_i420()        # the same frame as yuv420p bytes, for the encoder
    r.close()
"""
from __future__ import annotations

import time

import numpy as np
from vispy import gloo
from vispy.gloo import gl

from galaxyview.errors import ParameterError
from galaxyview.render.boxes import engine_boxes
from galaxyview.render.camera import Camera
from galaxyview.render.headless import headless_canvas, made_current
from galaxyview.render.look import Look
from galaxyview.render.interop import read_gl_buffer
from galaxyview.render.particles import VERTEX_DTYPE, ParticleRenderer, load_shader
from galaxyview.render.sources import make_source
from galaxyview.render.yuv import I420Pass, Overlay

MAX_SIZE = 8192


class OffscreenRenderer:
    """Draws into its own framebuffer of width x height pixels; no window, no Qt."""

    def __init__(self, width: int, height: int, look: Look | None = None):
        for name, v in (("width", width), ("height", height)):
            if not isinstance(v, (int, np.integer)) or not 16 <= v <= MAX_SIZE:
                raise ParameterError(f"image {name} must be a whole number of pixels in "
                                     f"16..{MAX_SIZE}, got {v!r}")
        self.size = (int(width), int(height))
        self.camera = Camera()
        self.engine = None
        self.source = None
        self.timings: dict[str, float] = {}  # ms of the last frame: upload, render, read
        self._canvas = headless_canvas(*self.size)
        with made_current(self._canvas):
            self._renderer = ParticleRenderer(look or Look())
            self._frame = gloo.Texture2D(shape=self.size[::-1] + (4,), format="rgba",
                                         internalformat="rgba8", interpolation="nearest")
            self._target = gloo.FrameBuffer(color=self._frame)
            self._canvas.context.flush_commands()
        self._boxes_key = None
        self._i420 = None  # the I420 pass (render/yuv.py), made on first use

    @property
    def look(self) -> Look:
        return self._renderer.look

    @look.setter
    def look(self, look: Look) -> None:
        self._renderer.look = look.validate()

    @property
    def path(self) -> str:
        """'CUDA-GL interop' or 'host upload' (None before attach)."""
        return self.source.path if self.source else None

    @property
    def notice(self) -> str | None:
        """A drawing problem and its fix (CUDA-GL interop unavailable), once drawn."""
        return self.source.notice if self.source else None

    def attach(self, engine, fit: bool = True) -> None:
        """Draw `engine` from now on; fits the camera to its particles unless fit=False."""
        self.detach()
        self.engine = engine
        with made_current(self._canvas):
            self.source = make_source(engine, self._renderer, self._canvas.context)
        self.camera.fit_source = self.source.positions
        self._renderer.ranges.clear()  # colour map ranges come from the new engine's values
        if fit:
            self.camera.fit()  # on a sample of the state (source.positions)
        self._boxes_key = None

    def detach(self) -> None:
        """Stop drawing the engine (before closing it): frees the interop registration."""
        if self.source is not None:
            with made_current(self._canvas):
                self.source.close()
            self.source = None
        self.engine = None

    def _refresh_boxes(self) -> None:
        look = self.look
        if not look.boxes:
            return
        key = (self.engine.steps_done, tuple(look.box_levels))
        if key != self._boxes_key:
            found = engine_boxes(self.engine, *look.box_levels)
            self._renderer.set_boxes(*(found or (None, None)))
            self._boxes_key = key

    def render_frame(self) -> None:
        """Render the engine's current state into the framebuffer and wait for the GPU."""
        if self.engine is None:
            raise ParameterError("OffscreenRenderer.attach(engine) must come before drawing")
        with made_current(self._canvas):
            t0 = time.perf_counter()
            self.source.refresh()
            self._refresh_boxes()
            t1 = time.perf_counter()
            self.camera.update()
            with self._target:
                self._renderer.draw(self.camera, self.size)
            self._canvas.context.flush_commands()
            gl.glFinish()
            t2 = time.perf_counter()
        self.timings.update(upload=(t1 - t0) * 1e3, render=(t2 - t1) * 1e3)

    def read(self) -> np.ndarray:
        """The last rendered frame as (height, width, 3) uint8, top row first."""
        t0 = time.perf_counter()
        with made_current(self._canvas), self._target:  # read() reads the bound framebuffer
            rgb = self._target.read(mode="color", alpha=False)
        self.timings["read"] = (time.perf_counter() - t0) * 1e3
        return np.ascontiguousarray(rgb[..., :3])

    def read_i420(self, overlay: Overlay | None = None) -> np.ndarray:
        """The last rendered frame, with `overlay` (a caption) composed, as flat I420 bytes
        (yuv420p, BT.709, limited range: render/yuv.py), converted on the GPU."""
        t0 = time.perf_counter()
        with made_current(self._canvas):
            if self._i420 is None:
                self._i420 = I420Pass(*self.size, load_shader("tonemap.vert"),
                                      load_shader("yuv420.frag"))
            self._i420.convert(self._frame, overlay)
            frame = self._i420.read(self._canvas.context)
        self.timings["read"] = (time.perf_counter() - t0) * 1e3
        return frame

    def read_vertices(self) -> np.ndarray:
        """The particle vertex buffer read back through GL (VERTEX_DTYPE): tests, debugging."""
        r = self._renderer
        with made_current(self._canvas) as canvas:
            raw = read_gl_buffer(r.vbo_handle(canvas.context), r.count * VERTEX_DTYPE.itemsize)
        return np.frombuffer(raw, VERTEX_DTYPE)

    def draw(self) -> np.ndarray:
        """Render the engine's current state; (height, width, 3) uint8."""
        self.render_frame()
        return self.read()

    def close(self) -> None:
        if self._canvas is not None:
            self.detach()
            with made_current(self._canvas):
                if self._i420 is not None:
                    self._i420.close()
                self._canvas.close()
            self._canvas = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
