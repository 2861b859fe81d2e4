"""Frames for the encoder made on the GPU: the finished RGB frame (and its caption) converted to
I420 (yuv420p, BT.709, limited range: what the movie stores) by one GL pass, and read back as
one byte per luma pixel through a pixel buffer object.

A 1920x1080 RGB frame read as bytes is 6.2 MB and ffmpeg's own RGB -> YUV conversion then runs
on one core; the I420 frame is half of that, read in the GPU's native one-channel format, and
goes to x264 as it is. `i420_from_rgb` is the same conversion in numpy (the reference the GL
pass is tested against, and the path for frames made on the host).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from vispy import gloo

from galaxyview.render import RenderError

_K = np.array([0.2126, 0.7152, 0.0722])
_PIXEL_PACK_BUFFER, _STREAM_READ, _MAP_READ_BIT = 0x88EB, 0x88E1, 0x0001
_RED, _UNSIGNED_BYTE, _PACK_ALIGNMENT = 0x1903, 0x1401, 0x0D05


def i420_size(width: int, height: int) -> int:
    """Bytes of one I420 frame: a luma byte a pixel, a U and a V byte a 2x2 block."""
    return width * height * 3 // 2


def i420_from_rgb(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB (top row first, W and H even) -> flat I420 bytes: the Y plane, then
    U, then V (each chroma value the mean of a 2x2 block); BT.709, limited range."""
    c = np.asarray(rgb, dtype=np.float64)[..., :3] / 255.0
    h, w = c.shape[:2]
    y = 16.0 + 219.0 * (c @ _K)
    block = c.reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    luma = block @ _K
    u = 128.0 + 224.0 * (block[..., 2] - luma) / 1.8556
    v = 128.0 + 224.0 * (block[..., 0] - luma) / 1.5748
    planes = (y.ravel(), u.ravel(), v.ravel())
    return np.clip(np.rint(np.concatenate(planes)), 0, 255).astype(np.uint8)


def rgb_from_i420(i420: np.ndarray, width: int, height: int) -> np.ndarray:
    """The inverse (chroma repeated over its block), for tests and previews: (H, W, 3) uint8."""
    a = np.asarray(i420, dtype=np.float64)
    n, q = width * height, width * height // 4
    y = (a[:n].reshape(height, width) - 16.0) / 219.0
    u = (a[n:n + q].reshape(height // 2, width // 2) - 128.0) / 224.0 * 1.8556
    v = (a[n + q:].reshape(height // 2, width // 2) - 128.0) / 224.0 * 1.5748
    u, v = (np.repeat(np.repeat(p, 2, axis=0), 2, axis=1) for p in (u, v))
    r, b = y + v, y + u
    g = (y - _K[0] * r - _K[2] * b) / _K[1]
    return np.clip(np.rint(np.stack([r, g, b], -1) * 255.0), 0, 255).astype(np.uint8)


@dataclass
class Overlay:
    """Text to compose into a frame: coverage (h, w) `mask` and `outline` (uint8, 255: full),
    their top-left pixel at (x, y) of the frame (top row first)."""
    mask: np.ndarray
    outline: np.ndarray
    x: int
    y: int


@lru_cache(maxsize=None)
def _gl(name, restype, *argtypes):
    """The GL function `name` (looked up once)."""
    from vispy.gloo.gl import gl2

    return gl2._get_gl_func(name, restype, argtypes)


class I420Pass:
    """The GL pass and the read-back: convert(frame_texture, overlay) then read() in the
    caller's current GL context (the one that owns the frame)."""

    def __init__(self, width: int, height: int, vertex_shader: str, fragment_shader: str):
        if width % 2 or height % 2:
            raise RenderError(f"an I420 frame needs an even width and height, got "
                              f"{width}x{height}")
        self.size = (width, height)
        rows = height * 3 // 2
        self._target = gloo.Texture2D(shape=(rows, width, 1), format="red",
                                      internalformat="r8", interpolation="nearest")
        self._fbo = gloo.FrameBuffer(color=self._target)
        self._program = gloo.Program(vertex_shader, fragment_shader)
        self._program["a_xy"] = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
        self._program["u_size"] = (float(width), float(height))
        self._caption = gloo.Texture2D(np.zeros((1, 1, 4), np.uint8), format="rgba",
                                       internalformat="rgba8", interpolation="nearest")
        self._pbo = None
        self._nbytes = i420_size(width, height)

    def convert(self, frame: gloo.Texture2D, overlay: Overlay | None = None) -> None:
        """Queue the conversion of `frame` (with `overlay` composed) into the I420 target."""
        p = self._program
        p["u_frame"] = frame
        if overlay is not None and overlay.mask.size:
            four = np.zeros(overlay.mask.shape + (4,), np.uint8)
            four[..., 0] = overlay.mask
            four[..., 1] = overlay.outline
            self._caption.set_data(four)
            h, w = overlay.mask.shape
            p["u_caption"] = self._caption
            p["u_caption_box"] = (float(overlay.x), float(overlay.y), float(w), float(h))
        else:
            p["u_caption"] = self._caption
            p["u_caption_box"] = (0.0, 0.0, 0.0, 0.0)
        width, rows = self.size[0], self.size[1] * 3 // 2
        with self._fbo:
            gloo.set_viewport(0, 0, width, rows)
            gloo.set_state(blend=False, depth_test=False)
            p.draw("triangle_strip")

    def read(self, context) -> np.ndarray:
        """The converted frame as flat I420 bytes (a new array). `context`: the vispy context
        whose queued commands must run first."""
        width, rows = self.size[0], self.size[1] * 3 // 2
        with self._fbo:
            context.flush_commands()  # the pass has run and the target is bound
            if self._pbo is None:
                self._pbo = self._make_pbo()
            bind = _gl("glBindBuffer", None, ctypes.c_uint, ctypes.c_uint)
            bind(_PIXEL_PACK_BUFFER, self._pbo)
            try:
                _gl("glPixelStorei", None, ctypes.c_uint, ctypes.c_int)(_PACK_ALIGNMENT, 1)
                _gl("glReadPixels", None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                    ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)(
                    0, 0, width, rows, _RED, _UNSIGNED_BYTE, None)
                mapped = _gl("glMapBufferRange", ctypes.c_void_p, ctypes.c_uint,
                             ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_uint)(
                    _PIXEL_PACK_BUFFER, 0, self._nbytes, _MAP_READ_BIT)
                if not mapped:
                    raise RenderError("reading the frame back failed (glMapBufferRange); "
                                      "record with --png-dir or another --size")
                try:
                    view = (ctypes.c_ubyte * self._nbytes).from_address(mapped)
                    return np.array(np.ctypeslib.as_array(view), copy=True)
                finally:
                    _gl("glUnmapBuffer", ctypes.c_ubyte, ctypes.c_uint)(_PIXEL_PACK_BUFFER)
            finally:
                bind(_PIXEL_PACK_BUFFER, 0)

    def _make_pbo(self) -> int:
        name = ctypes.c_uint(0)
        _gl("glGenBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(1, ctypes.byref(name))
        bind = _gl("glBindBuffer", None, ctypes.c_uint, ctypes.c_uint)
        bind(_PIXEL_PACK_BUFFER, name.value)
        _gl("glBufferData", None, ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p,
            ctypes.c_uint)(_PIXEL_PACK_BUFFER, self._nbytes, None, _STREAM_READ)
        bind(_PIXEL_PACK_BUFFER, 0)
        return name.value

    def close(self) -> None:
        """Free the pixel buffer (GL objects of gloo go with the context)."""
        if self._pbo is not None:
            name = ctypes.c_uint(self._pbo)
            _gl("glDeleteBuffers", None, ctypes.c_int, ctypes.POINTER(ctypes.c_uint))(
                1, ctypes.byref(name))
            self._pbo = None
