"""Where the particle vertices come from: host upload (CPU engine), CUDA-GL interop (GPU), or
no vertices at all: the light made by the engine (a parallel engine's processes)."""
from __future__ import annotations

import math

import numpy as np

from galaxyview.cuda.context import pushed
from galaxyview.errors import EngineError
from galaxyview.model.state import Component
from galaxyview.render import RenderError
from galaxyview.light.device import DEVICE_VALUES, SHUFFLE_STRIDE, VALUES_FROM_ENGINE
from galaxyview.render.colour import engine_values
from galaxyview.render.camera import FIT_SAMPLE
from galaxyview.render.look import BY_COMPONENT, mode_code
from galaxyview.render.particles import VERTEX_DTYPE, ParticleRenderer, host_vertices

BLOCK = 256
# host path: the light is splatted on the host from one particle per this many pixels (under
# llvmpipe the sprites cost about 0.9 us of CPU a particle, the splat's clear and upload about
# 15 ns a pixel: even at about 60 pixels a particle)
PIXELS_PER_SPLAT = 50
RANGE_SAMPLE = 200_000  # values a colour map's range is found from (an engine's own, once a mode)


def engine_vertices(engine, mode: str) -> np.ndarray:
    """Vertices of the engine's current state coloured for `mode` (host copies)."""
    s = engine.state()
    return host_vertices(s.pos, s.vel, s.component, engine_values(engine, mode, s), s.radius)


def framing_positions(pos: np.ndarray, component: np.ndarray) -> np.ndarray:
    """The particles a camera fit should frame: the luminous ones (not the dark halo), unless
    there are none."""
    lit = np.asarray(component) != Component.HALO
    return pos[lit] if lit.any() else pos


def sampled_framing(engine) -> np.ndarray:
    """What a camera fit frames of the engine's particles, from a sample of its state (no copy
    of it all)."""
    _, s = engine.sample_state(FIT_SAMPLE)
    return framing_positions(s.pos, s.component)


class HostSource:
    """CPU path: vertices built from a host copy of the state and uploaded with glBufferData;
    the light splatted from them on the host (render/host_splat.py) when numba compiles it,
    else drawn as GL sprites."""

    path = "host upload"
    notice = failure = None  # a drawing problem and its fix, for the HUD and the terminal
    worker_vertices = True  # the window's worker makes the vertices after each batch

    def __init__(self, engine, renderer: ParticleRenderer):
        self.engine, self.renderer = engine, renderer
        self.splatter, self.splat_error = None, None
        self._vertices = None
        try:
            from galaxyview.render.host_splat import HostSplatter

            self.splatter = HostSplatter()
        except Exception as exc:  # numba missing or failing: GL sprites instead
            self.splat_error = f"{type(exc).__name__}: {exc}"
        else:
            renderer.light_source = self

    def positions(self) -> np.ndarray:
        return sampled_framing(self.engine)

    def refresh(self, vertices: np.ndarray | None = None, mode: str | None = None) -> None:
        """Upload `vertices` (coloured for `mode`), or make them from the engine for the
        look's colour mode."""
        if vertices is None:
            mode = self.renderer.look.colour_mode
            vertices = engine_vertices(self.engine, mode)
        self.renderer.upload(vertices, mode)
        self._vertices = vertices

    def light(self, camera, look, size):
        """The light texture for this view, splatted from the last vertices uploaded; None
        (GL sprites) for fewer particles than one in PIXELS_PER_SPLAT pixels, where clearing
        and uploading the whole light buffer costs more than the sprites."""
        if self._vertices is None or len(self._vertices) * PIXELS_PER_SPLAT < size[0] * size[1]:
            return None
        return self.splatter.render_light(self._vertices, camera, look, size,
                                          self.renderer.colouring())

    def close(self) -> None:
        if self.renderer.light_source is self:
            self.renderer.light_source = None
        if self.splatter is not None:
            self.splatter.release()


class EngineLight(HostSource):
    """An engine that makes the light itself (Engine.splats_light: a parallel engine's
    processes each splat their own particles and the images are summed): the light comes from
    engine.light(view), rebuilt when the view or the state changed; no vertices, no state copy
    a frame. The colour map's ends are found once a mode from a host copy of the values, and
    positions (camera fits) only on demand. A colour mode the engine does not splat (None)
    goes through a host copy of the state as HostSource does. `guard(fn)` -> (ran, fn()):
    how engine calls are made (the window: only while its worker is idle)."""

    path = "light from the engine's processes"
    worker_vertices = False  # the light is asked for at paints, when the engine is idle

    def __init__(self, engine, renderer: ParticleRenderer, gl_context=None):
        super().__init__(engine, renderer)
        self.guard = lambda fn: (True, fn())
        self.host_mode = None  # the colour mode the engine did not splat
        self._state = 0  # counts refreshes: a new state
        self._key = self._texture = None  # of the light shown
        self.gl_context = gl_context
        self._device = None  # render/splat.py DeviceLight, while the light stays on the GPU
        self._on_device = gl_context is not None  # False once the device copy failed
        renderer.light_only = self.splatter is not None

    def refresh(self, vertices: np.ndarray | None = None, mode: str | None = None) -> None:
        r = self.renderer
        mode = r.look.colour_mode
        if self.splatter is None or mode == self.host_mode:
            r.light_only = False
            return super().refresh(vertices, mode)
        r.light_only, r.vertex_mode = True, mode
        if r.look.value_range is None and mode_code(mode) == 2 and mode not in r.ranges:
            r.colour_range(mode, engine_values(self.engine, mode, count=RANGE_SAMPLE))
        self._state += 1

    def light(self, camera, look, size):
        r = self.renderer
        if not r.light_only:
            return super().light(camera, look, size)
        from galaxyview.render.host_splat import light_view  # numba: imported with splatter

        view = light_view(camera, look, size, r.colouring(), self.engine.n)
        key = (self._state, view.width, view.height, view.projection, view.eye_rows().tobytes(),
               view.point_size,
               view.mode, view.lo, view.hi, view.lut.tobytes())
        if key == self._key:
            return self._texture
        if self._on_device:
            ran, texture = self.guard(lambda: self._device_light(view))
            if not ran:
                return self._texture
            if texture is not None:
                self._key, self._texture = key, texture
                return texture
        ran, image = self.guard(lambda: self.engine.light(view))
        if not ran:  # the engine is stepping: the last light
            return self._texture
        if image is None:  # not offered for this mode: through the host
            self.host_mode = view.mode
            self.guard(self.refresh)
            return super().light(camera, look, size)
        self._key, self._texture = key, self.splatter.show(image)
        return self._texture

    def _device_light(self, view):
        """The light texture filled on the GPU from the engine's sum there
        (Engine.light_on_device), or None (then through the host): not offered, or the
        texture could not be shared with CUDA (said once in `notice`)."""
        found = self.engine.light_on_device(view)
        if found is None:
            return None
        try:
            if self._device is None:
                from galaxyview.render.splat import DeviceLight

                self._device = DeviceLight(self.gl_context)
            return self._device.show(*found, (view.width, view.height))
        except RenderError as exc:
            self._on_device, self.failure = False, str(exc)
            self.notice = ("the light is summed on the GPU but reaches the window through "
                           f"the host (slower); {INTEROP_FIX}")
            if self._device is not None:
                self._device.release()
                self._device = None
            return None

    def close(self) -> None:
        self.renderer.light_only = False
        if self._device is not None:
            self._device.release()
            self._device = None
        super().close()


INTEROP_FIX = ("the OpenGL context is not on the CUDA GPU; on a hybrid-graphics laptop start "
               "with __NV_PRIME_RENDER_OFFLOAD=1 __GLX_VENDOR_LIBRARY_NAME=nvidia galaxyview "
               "(docs/viewer.md)")


class DeviceSource:
    """GPU path: the GL vertex buffer is registered with CUDA once; each refresh maps it, runs
    kernels/render_pack.cu on the engine's pos4/vel4 (its DeviceView) and unmaps it: no host
    round trip. Drawing then splats the light from that buffer with CUDA (render/splat.py), on
    a stream of its own, so it neither touches the engine's arrays nor waits for the engine's
    kernels.

    When the registration fails (the GL context on another GPU: hybrid graphics, WSL2, remote
    X) the engine keeps running and the frames go through the host: the vertices are packed
    into device memory and the splat's light is copied to the host and uploaded into the light
    texture (without the splat, the vertices are uploaded for GL sprites). `notice` then says
    so and how to get interop back."""

    path = "CUDA-GL interop"
    worker_vertices = False  # drawn from the engine's device arrays

    def __init__(self, engine, view, renderer: ParticleRenderer, gl_context,
                 stride: int = SHUFFLE_STRIDE):
        import pycuda.driver as cuda  # GPU machines only

        self._cuda = cuda
        self.engine, self.view = engine, view
        self.renderer, self.gl_context = renderer, gl_context
        self.stride = stride  # vertex j is particle (j * stride) mod n; 1: the engine's order
        self.resource = None
        self.notice = None  # set when interop failed and frames go through the host
        self.failure = None  # the registration's error then
        self._device_vertices = self._host_vertices = None  # the host path's buffers
        self._device_bytes = 0
        self.splatter, self.splat_error = None, None
        with pushed(view.context):
            self.stream = cuda.Stream(flags=1)  # CU_STREAM_NON_BLOCKING
            self._pack = _compile("render_pack.cu")
            try:
                from galaxyview.render.splat import CudaSplatter

                self.splatter = CudaSplatter(gl_context, _compile("render_splat.cu"),
                                             self.stream)
            except RenderError as exc:  # draw with GL sprites instead
                self.splat_error = str(exc)
        if self.splatter is not None:
            renderer.light_source = self

    @property
    def through_host(self) -> bool:
        return self.notice is not None

    def positions(self) -> np.ndarray:
        return sampled_framing(self.engine)

    def _gl_handle(self) -> int:
        return self.renderer.vbo_handle(self.gl_context)

    def _fall_back(self, exc: RenderError) -> None:
        self.failure = str(exc)
        self.notice = f"no CUDA-GL interop: drawing through host uploads (slower); {INTEROP_FIX}"
        self.path = "CUDA, host upload (no interop)"

    def _prepare(self, n: int) -> None:
        """A vertex buffer of n particles, registered with CUDA, or the host path's."""
        if self.resource is not None and n != self.renderer.count:
            self.resource.unregister()  # before GL deletes the old buffer
            self.resource = None
        self.renderer.reserve(n)
        if self.resource is None and not self.through_host:
            from galaxyview.render.interop import GLBufferResource

            try:  # read back by the splat kernel: no WRITE_DISCARD
                self.resource = GLBufferResource(self._gl_handle(), flags=0)
            except RenderError as exc:
                self._fall_back(exc)
        nbytes = n * VERTEX_DTYPE.itemsize
        if self.through_host and self._device_bytes < nbytes:
            if self._device_vertices is not None:
                self._device_vertices.free()
            self._device_vertices = self._cuda.mem_alloc(nbytes)
            self._device_bytes = nbytes

    def refresh(self, vertices=None) -> None:
        """The engine's current particles into the vertex buffer (the engine must be idle),
        coloured for the look's colour mode: speed, potential and energy are computed by
        render_pack.cu, the galaxy and the density by the engine on the device where it can
        (DeviceView.values), else from a host copy of the state."""
        r = self.renderer
        mode = r.look.colour_mode
        with pushed(self.view.context):
            arrays = self.view.particles()  # pointers move with each step's reorder
            n = arrays.n
            self._prepare(n)
            r.vertex_mode = mode
            if n == 0:
                return
            values = self.view.values(mode) if self.view.values is not None else None
            on_device = mode in BY_COMPONENT or mode in DEVICE_VALUES or values is not None
            host = None if on_device else engine_vertices(self.engine, mode)
            if host is not None:
                r.colour_range(mode, host["a_value"])
            elif (mode not in BY_COMPONENT and mode not in r.ranges
                  and r.look.value_range is None):  # the map's ends, once a mode
                r.colour_range(mode, self._device_array(values, n) if values is not None
                               else engine_values(self.engine, mode, count=RANGE_SAMPLE))
            if self.through_host and self.splatter is None:  # GL sprites from host vertices
                self._upload_through_host(arrays, host, mode, values)
                return
            h = self.stream.handle
            if self.through_host:
                ptr = int(self._device_vertices)
            else:
                ptr, size = self.resource.map(h)
            try:
                if not self.through_host and size < n * VERTEX_DTYPE.itemsize:
                    raise RenderError(f"GL vertex buffer holds {size} bytes, {n} particles "
                                      f"need {n * VERTEX_DTYPE.itemsize}")
                if host is not None:  # through page-locked memory, ordered on the stream
                    self._cuda.memcpy_htod_async(ptr, self._staged(host), self.stream)
                else:
                    self._pack_into(ptr, arrays, mode, values)
            finally:
                if not self.through_host:
                    self.resource.unmap(h)
            self.stream.synchronize()  # done reading pos4 before the engine's next step

    def _pack_into(self, ptr: int, arrays, mode: str, values: int | None = None) -> None:
        n = arrays.n
        code = DEVICE_VALUES.get(mode, 0) if values is None else VALUES_FROM_ENGINE
        self._pack.launch("pack_vertices", (math.ceil(n / BLOCK), 1, 1), (BLOCK, 1, 1),
                          arrays.pos4, arrays.vel4, arrays.acc4, values or 0, arrays.radius,
                          ptr, n, int(self.stride), code, stream=self.stream)

    def _device_array(self, ptr: int, n: int) -> np.ndarray:
        """n float32 values from the device (the engine's DeviceView.values), once a mode."""
        out = np.empty(n, np.float32)
        self._cuda.memcpy_dtoh(out, ptr)
        return out

    def _pinned(self, n: int) -> np.ndarray:
        """The page-locked host buffer of n vertices."""
        if self._host_vertices is None or len(self._host_vertices) != n:
            self._host_vertices = self._cuda.pagelocked_empty(n, VERTEX_DTYPE)
        return self._host_vertices

    def _staged(self, vertices: np.ndarray) -> np.ndarray:
        """`vertices` copied into the page-locked host buffer."""
        buf = self._pinned(len(vertices))
        buf[:] = vertices
        return buf

    def _upload_through_host(self, arrays, host, mode: str, values: int | None = None) -> None:
        """No interop and no splat: vertices to GL through the host."""
        if host is None:
            ptr = int(self._device_vertices)
            self._pack_into(ptr, arrays, mode, values)
            host = self._pinned(arrays.n)
            self._cuda.memcpy_dtoh_async(host, ptr, self.stream)
            self.stream.synchronize()
        self.renderer.upload(host, mode)

    def light(self, camera, look, size):
        """The light texture for this view, splatted from the vertex buffer."""
        r = self.renderer
        with pushed(self.view.context):
            vertices = self._device_vertices if self.through_host else self.resource
            return self.splatter.render_light(vertices, r.count, camera, look, size,
                                              r.colouring())

    def close(self) -> None:
        if self.renderer.light_source is self:
            self.renderer.light_source = None
        with pushed(self.view.context):
            if self.splatter is not None:
                self.splatter.release()
            if self.resource is not None:
                self.resource.unregister()
                self.resource = None
            if self._device_vertices is not None:
                self._device_vertices.free()
                self._device_vertices, self._device_bytes = None, 0
            self._host_vertices = None
            self._pack = self.splatter = None  # their modules unload in their context


def _compile(name: str):
    """A kernels/ file compiled for the current device (pycuda caches the binary)."""
    from galaxyview.cuda.compile import Module, read_kernel

    try:
        return Module(read_kernel(name), what=f"renderer's kernels/{name}")
    except EngineError as exc:
        raise RenderError(str(exc)) from None


def make_source(engine, renderer: ParticleRenderer, gl_context):
    """The GPU interop path for an engine with a device view, the host upload path otherwise."""
    view = engine.device_view()
    if view is not None:
        return DeviceSource(engine, view, renderer, gl_context)
    if engine.splats_light:
        return EngineLight(engine, renderer, gl_context)
    return HostSource(engine, renderer)
