"""Where the particle vertices come from: host upload (CPU engine) or CUDA-GL interop (GPU)."""
from __future__ import annotations

import contextlib
import math

import numpy as np

from galaxyview.model.state import Component
from galaxyview.render import RenderError
from galaxyview.render.particles import VERTEX_DTYPE, ParticleRenderer, host_vertices
from galaxyview.resources import kernels_dir

BLOCK = 256
SHUFFLE_STRIDE = 2_147_483_647  # prime, so coprime with any particle count (see render_pack.cu)


def is_gpu_engine(engine) -> bool:
    return getattr(engine, "name", "") == "gpu" and hasattr(engine, "device_arrays")


def speed_scale(vel: np.ndarray) -> float:
    """Top of the speed colour map: the 99th percentile speed."""
    if len(vel) == 0:
        return 1.0
    speeds = np.linalg.norm(np.asarray(vel[:: max(1, len(vel) // 100_000)], float), axis=1)
    return float(max(np.percentile(speeds, 99), 1e-6))


def framing_positions(pos: np.ndarray, component: np.ndarray) -> np.ndarray:
    """The particles a camera fit should frame: the luminous ones (not the dark halo), unless
    there are none."""
    lit = np.asarray(component) != Component.HALO
    return pos[lit] if lit.any() else pos


class HostSource:
    """CPU path: vertices built from a host copy of the state and uploaded with glBufferData."""

    path = "host upload"

    def __init__(self, engine, renderer: ParticleRenderer):
        self.engine, self.renderer = engine, renderer

    def positions(self) -> np.ndarray:
        s = self.engine.state()
        return framing_positions(s.pos, s.component)

    def refresh(self, vertices: np.ndarray | None = None) -> None:
        if vertices is None:
            s = self.engine.state()
            vertices = host_vertices(s.pos, s.vel, s.component)
        self.renderer.upload(vertices)

    def close(self) -> None:
        pass


@contextlib.contextmanager
def pushed(context):
    """Make a pycuda context current on this thread for the block."""
    context.push()
    try:
        yield
    finally:
        context.pop()


def _ptr(x) -> int:
    return int(getattr(x, "gpudata", x))


class DeviceSource:
    """GPU path: the GL vertex buffer is registered with CUDA once; each refresh maps it, runs
    kernels/render_pack.cu on the engine's pos4/vel4 and unmaps it: no host round trip. Drawing
    then splats the light from that buffer with CUDA (render/splat.py), on a stream of its own,
    so it neither touches the engine's arrays nor waits for the engine's kernels."""

    path = "CUDA-GL interop"

    def __init__(self, engine, renderer: ParticleRenderer, gl_context,
                 stride: int = SHUFFLE_STRIDE):
        import pycuda.driver as cuda  # GPU machines only

        self.engine, self.renderer, self.gl_context = engine, renderer, gl_context
        self.stride = stride  # vertex j is particle (j * stride) mod n; 1: the engine's order
        self.resource = None
        self.splatter, self.splat_error = None, None
        with pushed(engine.context):
            self.stream = cuda.Stream(flags=1)  # CU_STREAM_NON_BLOCKING
            self._pack = _compile("render_pack.cu").get_function("pack_vertices")
            self._pack.prepare("PPPiQ")
            try:
                from galaxyview.render.splat import CudaSplatter

                self.splatter = CudaSplatter(gl_context, _compile("render_splat.cu"),
                                             self.stream)
            except RenderError as exc:  # draw with GL sprites instead
                self.splat_error = str(exc)
        if self.splatter is not None:
            renderer.light_source = self

    def positions(self) -> np.ndarray:
        s = self.engine.state()  # a host copy, only when the camera is fitted
        return framing_positions(s.pos, s.component)

    def _gl_handle(self) -> int:
        return self.renderer.vbo_handle(self.gl_context)

    def refresh(self, vertices=None) -> None:
        """The engine's current particles into the vertex buffer (the engine must be idle)."""
        from galaxyview.render.interop import GLBufferResource

        with pushed(self.engine.context):
            arrays = self.engine.device_arrays()  # pointers move with each step's reorder
            n = int(arrays["n"])
            if self.resource is not None and n != self.renderer.count:
                self.resource.unregister()  # before GL deletes the old buffer
                self.resource = None
            self.renderer.reserve(n)
            if self.resource is None:  # read back by the splat kernel: no WRITE_DISCARD
                self.resource = GLBufferResource(self._gl_handle(), flags=0)
            if n == 0:
                return
            h = self.stream.handle
            ptr, size = self.resource.map(h)
            try:
                if size < n * VERTEX_DTYPE.itemsize:
                    raise RenderError(f"GL vertex buffer holds {size} bytes, {n} particles "
                                      f"need {n * VERTEX_DTYPE.itemsize}")
                self._pack.prepared_async_call((math.ceil(n / BLOCK), 1), (BLOCK, 1, 1),
                                               self.stream, _ptr(arrays["pos4"]),
                                               _ptr(arrays["vel4"]), ptr, n, int(self.stride))
            finally:
                self.resource.unmap(h)
            self.stream.synchronize()  # done reading pos4 before the engine's next step

    def light(self, camera, look, size, auto_speed_max: float):
        """The light texture for this view, splatted from the vertex buffer."""
        with pushed(self.engine.context):
            return self.splatter.render_light(self.resource, self.renderer.count, camera,
                                              look, size, auto_speed_max)

    def close(self) -> None:
        if self.renderer.light_source is self:
            self.renderer.light_source = None
        with pushed(self.engine.context):
            if self.splatter is not None:
                self.splatter.release()
            if self.resource is not None:
                self.resource.unregister()
                self.resource = None


def _compile(name: str):
    """A kernels/ file compiled for the current device (pycuda caches the binary)."""
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    from galaxyview.engines.gpu.probe import find_nvcc

    major, minor = cuda.Context.get_device().compute_capability()
    try:
        return SourceModule((kernels_dir() / name).read_text(), nvcc=find_nvcc() or "nvcc",
                            no_extern_c=True, arch=f"sm_{major}{minor}", options=["-O3"])
    except (cuda.CompileError, OSError) as exc:
        raise RenderError(f"kernels/{name} did not compile ({exc}); check the CUDA toolkit, "
                          "or use --backend cpu") from None


def make_source(engine, renderer: ParticleRenderer, gl_context):
    """The GPU interop path for the GPU engine, the host upload path for any other."""
    if is_gpu_engine(engine):
        return DeviceSource(engine, renderer, gl_context)
    return HostSource(engine, renderer)
