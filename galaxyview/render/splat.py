"""The GPU engine's draw path: CUDA splats the particles' light into a float buffer
(kernels/render_splat.cu), copies it into the light texture (registered with CUDA: a
device-to-device copy, where GL's pixel-buffer upload of the same texture took 0.7 ms at
1920x1080 on an H200), and the tone-map pass reads the texture.

GL point sprites with additive blending serialise on the dense cores of a galaxy (about 2 ns
per particle on an H200 whatever the sprite size); float atomics spread that work. The look is
the same: sprite size, gaussian profile, colours and light per particle as in the shaders.
The particles come from the GL vertex buffer, so drawing never touches the engine's arrays.
"""
from __future__ import annotations

import math

import numpy as np
from vispy import gloo

from galaxyview.cuda.context import pushed
from galaxyview.light.device import P_FLOATS, splat_params
from galaxyview.render.interop import (GLBufferResource, GLTextureResource, map_together,
                                       unmap_together)
from galaxyview.render.host_splat import light_view

BLOCK = 256


def gl_handle(gl_context, obj) -> int:
    """GL name of a gloo object, created in GL now if it is still queued."""
    gl_context.glir.associate(obj.glir)
    gl_context.flush_commands()
    return int(gl_context.shared.parser.get_object(obj.id).handle)


def light_texture(w: int, h: int):
    """A float (rgba32f) light texture of w x h for the tone-map pass."""
    return gloo.Texture2D(shape=(h, w, 4), format="rgba", internalformat="rgba32f",
                          interpolation="nearest")


def shared_light_texture(gl_context, w: int, h: int):
    """A light texture and its registration with CUDA (in the current context), for
    device-to-device copies into it; RenderError where GL cannot share it."""
    texture = light_texture(w, h)
    try:
        return texture, GLTextureResource(gl_handle(gl_context, texture))
    except BaseException:
        texture.delete()
        raise


class CudaSplatter:
    """Fills a float texture with the particles' light; call with the CUDA context current."""

    def __init__(self, gl_context, module, stream):
        import pycuda.driver as cuda

        self._cuda, self.gl_context, self.stream = cuda, gl_context, stream
        self._kernel = module.functions["splat"]  # prepared from its C signature
        self._params = cuda.mem_alloc(P_FLOATS * 4)
        self._host_params = cuda.pagelocked_zeros(P_FLOATS, np.float32)
        self._buffers = {}  # size -> (texture, its CUDA registration, light buffer)

    def _buffers_for(self, size, registered: bool):
        """Light texture (registered with CUDA, or with a page-locked host copy of the light
        for the host path) and CUDA light buffer of this size; the last two sizes are kept
        (the window's and a recording's)."""
        if size not in self._buffers:
            if len(self._buffers) >= 2:
                self._free(self._buffers.pop(next(iter(self._buffers))))
            w, h = size
            if registered:
                texture, target = shared_light_texture(self.gl_context, w, h)
            else:
                texture = light_texture(w, h)
                target = self._cuda.pagelocked_empty((h, w, 4), np.float32)
            self._buffers[size] = (texture, target, self._cuda.mem_alloc(16 * w * h))
        return self._buffers[size]

    def render_light(self, vertices, n: int, camera, look, size, colouring):
        """Splat n particles of the vertex buffer for this view; returns the light texture.
        colouring: ParticleRenderer.colouring() (mode, its code, (lo, hi), colour map).
        vertices: the registered GL vertex buffer (GLBufferResource), or device memory holding
        the vertices (the host path: the light then reaches the texture through the host)."""
        size = (int(size[0]), int(size[1]))
        registered = isinstance(vertices, GLBufferResource)
        texture, target, light = self._buffers_for(size, registered)
        if isinstance(target, GLTextureResource) != registered:  # the path changed
            self._free(self._buffers.pop(size))
            texture, target, light = self._buffers_for(size, registered)
        w, h = size
        s = self.stream
        s.synchronize()  # the last frame's copy of the parameters is done with them
        p = self._host_params
        p[:] = splat_params(light_view(camera, look, size, colouring, n))
        self._cuda.memcpy_htod_async(self._params, p, s)  # host to device: 3.4 kB
        self._cuda.memset_d32_async(light, 0, w * h * 4, s)
        if not registered:
            self._splat(int(vertices), n, light, w, h)
            self._cuda.memcpy_dtoh_async(target, light, s)
            s.synchronize()
            texture.set_data(target)  # uploaded by GL
            return texture
        both = (vertices, target)
        (vptr, _), array = map_together(both, s.handle)  # one GL-CUDA synchronisation
        try:
            self._splat(vptr, n, light, w, h)
            # the light into the texture: a device-to-device copy on the same stream
            target.copy_from(array, int(light), 16 * w, h, s.handle)
        finally:
            unmap_together(both, s.handle)
        return texture

    def _splat(self, vptr: int, n: int, light, w: int, h: int) -> None:
        if n:
            self._kernel.prepared_async_call((math.ceil(n / BLOCK), 1), (BLOCK, 1, 1),
                                             self.stream, vptr, n, int(self._params),
                                             int(light), w, h)

    @staticmethod
    def _free(buffers) -> None:
        texture, target, light = buffers
        if isinstance(target, GLTextureResource):
            target.unregister()
        texture.delete()
        light.free()

    def release(self) -> None:
        while self._buffers:
            self._free(self._buffers.popitem()[1])


class DeviceLight:
    """Shows a light image that lies in an engine's device memory (Engine.light_on_device: a
    parallel engine's sum on rank 0's GPU): copied into a light texture registered with CUDA,
    device to device, with no trip through the host. RenderError where the texture cannot be
    registered (the GL context on another GPU)."""

    def __init__(self, gl_context):
        self.gl_context = gl_context
        self._context = self._size = self._texture = self._target = None

    def show(self, context, ptr: int, size):
        """The light texture holding the (h, w, 4) float32 image at `ptr` (in `context`)."""
        w, h = int(size[0]), int(size[1])
        with pushed(context):
            if (w, h) != self._size or context is not self._context:
                self._free()
                self._texture, self._target = shared_light_texture(self.gl_context, w, h)
                self._size, self._context = (w, h), context
            (array,) = map_together([self._target])
            try:
                self._target.copy_from(array, int(ptr), 16 * w, h)
            finally:
                unmap_together([self._target])
        return self._texture

    def _free(self) -> None:
        if self._target is not None:
            self._target.unregister()  # in its context (pushed by the caller)
        if self._texture is not None:
            self._texture.delete()
        self._size = self._texture = self._target = None

    def release(self) -> None:
        if self._context is not None:
            with pushed(self._context):
                self._free()
            self._context = None
