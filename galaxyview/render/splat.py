"""The GPU engine's draw path: CUDA splats the particles' light into a GL pixel buffer
(kernels/render_splat.cu), GL copies it into a float texture, and the tone-map pass reads it.

GL point sprites with additive blending serialise on the dense cores of a galaxy (about 2 ns
per particle on an H200 whatever the sprite size); float atomics spread that work. The look is
the same: sprite size, gaussian profile, colours and light per particle as in the shaders.
The particles come from the GL vertex buffer, so drawing never touches the engine's arrays.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np
from vispy import gloo

from galaxyview.model.state import Component
from galaxyview.render.interop import GLBufferResource
from galaxyview.render.look import COLOUR_MODES, COMPONENT_COLOURS
from galaxyview.render.particles import light_gain

BLOCK = 256
_GL_PIXEL_UNPACK_BUFFER, _GL_TEXTURE_2D, _GL_RGBA, _GL_FLOAT = 0x88EC, 0x0DE1, 0x1908, 0x1406


def _gl(name, argtypes):
    from vispy.gloo.gl import gl2

    return gl2._get_gl_func(name, None, argtypes)


def gl_handle(gl_context, obj) -> int:
    """GL name of a gloo object, created in GL now if it is still queued."""
    gl_context.glir.associate(obj.glir)
    gl_context.flush_commands()
    return int(gl_context.shared.parser.get_object(obj.id).handle)


class CudaSplatter:
    """Fills a float texture with the particles' light; call with the CUDA context current."""

    def __init__(self, gl_context, module, stream):
        import pycuda.driver as cuda

        self._cuda, self.gl_context, self.stream = cuda, gl_context, stream
        self._kernel = module.get_function("splat")
        self._params = cuda.mem_alloc(64 * 4)
        self._host_params = cuda.pagelocked_zeros(64, np.float32)
        self._buffers = {}  # size -> (texture, pixel buffer, its CUDA registration)
        u, i, vp = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p
        self._bind_buffer = _gl("glBindBuffer", (u, u))
        self._bind_texture = _gl("glBindTexture", (u, u))
        self._tex_sub_image = _gl("glTexSubImage2D", (u, i, i, i, i, i, u, u, vp))

    def _buffers_for(self, size):
        """Light texture and pixel buffer of this size; the last two sizes are kept (the
        window's and a recording's)."""
        if size not in self._buffers:
            if len(self._buffers) >= 2:
                self._free(self._buffers.pop(next(iter(self._buffers))))
            w, h = size
            texture = gloo.Texture2D(shape=(h, w, 4), format="rgba", internalformat="rgba32f",
                                     interpolation="nearest")
            pbo = gloo.VertexBuffer(np.zeros((w * h, 4), np.float32))  # any GL buffer will do
            self._buffers[size] = (texture, pbo, GLBufferResource(gl_handle(self.gl_context,
                                                                            pbo)))
        return self._buffers[size]

    def render_light(self, vertices: GLBufferResource, n: int, camera, look, size,
                     auto_speed_max: float):
        """Splat n particles of the vertex buffer for this view; returns the light texture."""
        size = (int(size[0]), int(size[1]))
        texture, pbo, resource = self._buffers_for(size)
        w, h = size
        s = self.stream
        s.synchronize()  # the last frame's copy of the parameters is done with them
        p = self._host_params
        p[:16] = camera.mvp(w / max(h, 1)).ravel()
        for code in range(8):
            p[16 + 4 * code:20 + 4 * code] = COMPONENT_COLOURS.get(
                code, COMPONENT_COLOURS[Component.STAR])
        p[48:52] = (look.point_size, light_gain(n), COLOUR_MODES.index(look.colour_mode),
                    look.speed_max or auto_speed_max)
        self._cuda.memcpy_htod_async(self._params, p, s)  # host to device: 256 bytes
        vptr, _ = vertices.map(s.handle)
        try:
            lptr, _ = resource.map(s.handle)
            try:
                self._cuda.memset_d32_async(lptr, 0, w * h * 4, s)
                if n:
                    self._kernel(np.uintp(vptr), np.int32(n), self._params, np.uintp(lptr),
                                 np.int32(w), np.int32(h), block=(BLOCK, 1, 1),
                                 grid=(math.ceil(n / BLOCK), 1), stream=s)
            finally:
                resource.unmap(s.handle)
        finally:
            vertices.unmap(s.handle)
        # GL copies the pixel buffer into the texture, on the GPU
        self._bind_buffer(_GL_PIXEL_UNPACK_BUFFER, gl_handle(self.gl_context, pbo))
        self._bind_texture(_GL_TEXTURE_2D, gl_handle(self.gl_context, texture))
        self._tex_sub_image(_GL_TEXTURE_2D, 0, 0, 0, w, h, _GL_RGBA, _GL_FLOAT, None)
        self._bind_texture(_GL_TEXTURE_2D, 0)
        self._bind_buffer(_GL_PIXEL_UNPACK_BUFFER, 0)
        return texture

    @staticmethod
    def _free(buffers) -> None:
        texture, pbo, resource = buffers
        resource.unregister()
        texture.delete()
        pbo.delete()

    def release(self) -> None:
        while self._buffers:
            self._free(self._buffers.popitem()[1])
