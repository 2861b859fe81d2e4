"""A headless GL context: EGL on the NVIDIA driver, else Mesa's EGL without a display."""
from __future__ import annotations

import contextlib
import ctypes
import os

from galaxyview.render import RenderError

_app = None
_glx = None


def nvidia_driver_present() -> bool:
    return os.path.exists("/proc/driver/nvidia/version")


def headless_app():
    """The vispy application of the 'egl' backend (made once per process).

    Without the NVIDIA driver, Mesa's EGL is asked for its 'surfaceless' platform, which needs
    no X server. The app is separate from any Qt app the process uses.
    """
    global _app
    if _app is not None:
        return _app
    from vispy import app

    saved = os.environ.get("EGL_PLATFORM")
    if not nvidia_driver_present() and saved is None:
        os.environ["EGL_PLATFORM"] = "surfaceless"
    try:
        _app = app.Application("egl")
    except Exception as exc:  # vispy wraps the EGL failure in a RuntimeError
        raise RenderError(
            f"no headless OpenGL context: EGL did not start ({str(exc).strip()}). Install the "
            "NVIDIA driver (with its EGL library) or Mesa's EGL (libegl1 and libegl-mesa0 on "
            "Debian/Ubuntu)") from None
    finally:
        if saved is None:
            os.environ.pop("EGL_PLATFORM", None)
    return _app


def release_glx() -> None:
    """glvnd lets a thread hold one API's context at a time: give up a current GLX context
    (a Qt window's, in the same process) before making an EGL one current."""
    global _glx
    if _glx is None:
        try:
            _glx = ctypes.CDLL("libGLX.so.0")
        except OSError:
            _glx = False
        else:
            _glx.glXGetCurrentContext.restype = ctypes.c_void_p
            _glx.glXGetCurrentDisplay.restype = ctypes.c_void_p
            _glx.glXMakeCurrent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
    if _glx and _glx.glXGetCurrentContext():
        _glx.glXMakeCurrent(_glx.glXGetCurrentDisplay(), 0, None)


def release_egl() -> None:
    """Leave no EGL context current on this thread (so a GLX one may be made current)."""
    from vispy.app.backends import _egl
    from vispy.ext import egl

    egl.eglMakeCurrent(_egl._EGL_DISPLAY, egl.EGL_NO_SURFACE, egl.EGL_NO_SURFACE,
                       egl.EGL_NO_CONTEXT)


@contextlib.contextmanager
def made_current(canvas):
    """Run a block with the headless canvas's context current, and release it after."""
    release_glx()
    canvas.set_current()
    try:
        yield canvas
    finally:
        release_egl()


def headless_canvas(width: int, height: int):
    """A hidden vispy canvas of the 'egl' backend (its context is released on return)."""
    from vispy import app

    app_ = headless_app()
    release_glx()
    try:
        return app.Canvas(app=app_, size=(width, height), show=False)
    finally:
        release_egl()
