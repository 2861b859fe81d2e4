"""CUDA-OpenGL buffer sharing through the CUDA driver API (ctypes on libcuda).

Stock pycuda is built without pycuda.gl, so the graphics calls are made directly. All calls
must run with the engine's pycuda context current and the GL context current.
"""
from __future__ import annotations

import ctypes
import os

from galaxyview.render import RenderError

FORCE_OFF = "GALAXYVIEW_INTEROP"  # =off: registration fails as across GPUs (tests, comparisons)
OS_CALL_FAILED = 304  # CUDA_ERROR_OPERATING_SYSTEM: what the driver says when GL is elsewhere
WRITE_DISCARD = 2  # CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD: CUDA overwrites the whole buffer

_lib = None
GL_TEXTURE_2D = 0x0DE1
_DEVICE, _ARRAY = 2, 3  # CUmemorytype


class _Memcpy2D(ctypes.Structure):  # CUDA_MEMCPY2D
    _fields_ = [(f"{side}{name}", kind) for side in ("src", "dst") for name, kind in (
        ("XInBytes", ctypes.c_size_t), ("Y", ctypes.c_size_t), ("MemoryType", ctypes.c_int),
        ("Host", ctypes.c_void_p), ("Device", ctypes.c_uint64), ("Array", ctypes.c_void_p),
        ("Pitch", ctypes.c_size_t))] + [("WidthInBytes", ctypes.c_size_t),
                                        ("Height", ctypes.c_size_t)]


def libcuda():
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise RenderError(f"CUDA-GL interop needs the NVIDIA driver's libcuda.so.1 ({exc})")
        vp, u = ctypes.c_void_p, ctypes.c_uint
        lib.cuGraphicsGLRegisterBuffer.argtypes = [ctypes.POINTER(vp), u, u]
        lib.cuGraphicsMapResources.argtypes = [u, ctypes.POINTER(vp), vp]
        lib.cuGraphicsUnmapResources.argtypes = [u, ctypes.POINTER(vp), vp]
        lib.cuGraphicsResourceGetMappedPointer_v2.argtypes = [
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), vp]
        lib.cuGraphicsUnregisterResource.argtypes = [vp]
        lib.cuGraphicsGLRegisterImage.argtypes = [ctypes.POINTER(vp), u, u, u]
        lib.cuGraphicsSubResourceGetMappedArray.argtypes = [ctypes.POINTER(vp), vp, u, u]
        lib.cuMemcpy2DAsync_v2.argtypes = [ctypes.POINTER(_Memcpy2D), vp]
        lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _lib = lib
    return _lib


def _check(rc: int, what: str) -> None:
    if rc != 0:
        msg = ctypes.c_char_p()
        libcuda().cuGetErrorString(rc, ctypes.byref(msg))
        text = msg.value.decode() if msg.value else "unknown error"
        raise RenderError(f"CUDA-GL interop: {what} failed with CUDA error {rc} ({text}); "
                          "the GL context and the CUDA device must be the same GPU")


def _register(call, *args) -> int:
    """A cuGraphicsGLRegister* call's result (OS_CALL_FAILED when FORCE_OFF=off)."""
    if os.environ.get(FORCE_OFF, "").lower() == "off":
        return OS_CALL_FAILED
    return call(*args)


class GLBufferResource:
    """A GL buffer object registered once with CUDA; map() gives its device pointer."""

    def __init__(self, gl_buffer: int, flags: int = WRITE_DISCARD):
        self.gl_buffer = int(gl_buffer)
        self._res = ctypes.c_void_p()
        _check(_register(libcuda().cuGraphicsGLRegisterBuffer, ctypes.byref(self._res),
                         self.gl_buffer, flags), "cuGraphicsGLRegisterBuffer")
        self.mapped = False

    def map(self, stream: int = 0) -> tuple[int, int]:
        """Map for CUDA; returns (device pointer, size in bytes)."""
        return map_together((self,), stream)[0]

    def _mapped(self):
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        _check(libcuda().cuGraphicsResourceGetMappedPointer_v2(
            ctypes.byref(ptr), ctypes.byref(size), self._res),
            "cuGraphicsResourceGetMappedPointer")
        return int(ptr.value), int(size.value)

    def unmap(self, stream: int = 0) -> None:
        """Hand the buffer back to GL (work queued on `stream` before this completes first)."""
        if self.mapped:
            self.mapped = False
            _check(libcuda().cuGraphicsUnmapResources(1, ctypes.byref(self._res),
                                                      ctypes.c_void_p(stream)),
                   "cuGraphicsUnmapResources")

    def unregister(self) -> None:
        if self._res.value:
            self.unmap()
            libcuda().cuGraphicsUnregisterResource(self._res)
            self._res = ctypes.c_void_p()


class GLTextureResource(GLBufferResource):
    """A GL 2D texture registered once with CUDA; map() gives the CUDA array of level 0, and
    copy_from() fills it from linear device memory (a device-to-device copy)."""

    def __init__(self, gl_texture: int, flags: int = WRITE_DISCARD):
        self.gl_buffer = int(gl_texture)
        self._res = ctypes.c_void_p()
        _check(_register(libcuda().cuGraphicsGLRegisterImage, ctypes.byref(self._res),
                         self.gl_buffer, GL_TEXTURE_2D, flags), "cuGraphicsGLRegisterImage")
        self.mapped = False

    def _mapped(self):
        array = ctypes.c_void_p()
        _check(libcuda().cuGraphicsSubResourceGetMappedArray(ctypes.byref(array), self._res,
                                                             0, 0),
               "cuGraphicsSubResourceGetMappedArray")
        return array.value

    @staticmethod
    def copy_from(array, src: int, row_bytes: int, rows: int, stream: int = 0) -> None:
        """Rows of row_bytes at device address src into a mapped texture's array."""
        d = _Memcpy2D(srcMemoryType=_DEVICE, srcDevice=src, srcPitch=row_bytes,
                      dstMemoryType=_ARRAY, dstArray=array, WidthInBytes=row_bytes,
                      Height=rows)
        _check(libcuda().cuMemcpy2DAsync_v2(ctypes.byref(d), ctypes.c_void_p(stream)),
               "cuMemcpy2DAsync (light buffer to texture)")


def map_together(resources, stream: int = 0) -> list:
    """Map several registered resources for CUDA in one call (one GL-CUDA synchronisation);
    returns each one's view: (device pointer, size in bytes) for a buffer, the CUDA array
    handle for a texture."""
    handles = (ctypes.c_void_p * len(resources))(*(r._res for r in resources))
    _check(libcuda().cuGraphicsMapResources(len(resources), handles, ctypes.c_void_p(stream)),
           "cuGraphicsMapResources")
    for r in resources:
        r.mapped = True
    return [r._mapped() for r in resources]


def unmap_together(resources, stream: int = 0) -> None:
    """Hand mapped buffers back to GL in one call."""
    mapped = [r for r in resources if r.mapped]
    if mapped:
        for r in mapped:
            r.mapped = False
        handles = (ctypes.c_void_p * len(mapped))(*(r._res for r in mapped))
        _check(libcuda().cuGraphicsUnmapResources(len(mapped), handles, ctypes.c_void_p(stream)),
               "cuGraphicsUnmapResources")


def read_gl_buffer(gl_buffer: int, nbytes: int) -> bytes:
    """The first nbytes of a GL buffer object, read through GL (tests and debugging)."""
    from vispy.gloo.gl import gl2

    get = gl2._get_gl_func("glGetBufferSubData", None, (ctypes.c_uint, ctypes.c_ssize_t,
                                                         ctypes.c_ssize_t, ctypes.c_void_p))
    bind = gl2._get_gl_func("glBindBuffer", None, (ctypes.c_uint, ctypes.c_uint))
    array_buffer = 0x8892
    out = ctypes.create_string_buffer(nbytes)
    bind(array_buffer, gl_buffer)
    get(array_buffer, 0, nbytes, out)
    bind(array_buffer, 0)
    return out.raw
