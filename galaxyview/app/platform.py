"""Can Qt open an OpenGL window here? Checked before Qt is asked, because Qt aborts the process
on a display it cannot reach or a platform plugin it cannot find, and with a platform that has
no OpenGL (offscreen, minimal) the canvas only prints warnings and never draws."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
import sys
from pathlib import Path

NO_GL_HINT = ("the viewer needs an OpenGL window: unset QT_QPA_PLATFORM to use the X display, "
              "or make a picture without one: xvfb-run galaxyview SCENE --screenshot out.png, "
              "or galaxyview record SCENE -o movie.mp4")
XVFB_HINT = ("for a picture without a display use xvfb-run (xvfb-run galaxyview SCENE "
             "--screenshot out.png --frames 10) or galaxyview record")


def _platform() -> str:
    return os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()


def _plugin_names() -> list[str] | None:
    """Qt platform plugins installed with PyQt6 (None when the folder cannot be found)."""
    from PyQt6.QtCore import QLibraryInfo

    folder = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    if not folder.is_dir():
        return None
    return sorted(p.name[len("libq"):].split(".")[0] for p in folder.glob("libq*"))


def x_display_problem(display: str) -> str | None:
    """None when an X server answers on `display` (checked with libxcb, which Qt's xcb plugin
    uses too); otherwise what is wrong. Without libxcb nothing is said here."""
    name = ctypes.util.find_library("xcb")
    try:
        xcb = ctypes.CDLL(name or "libxcb.so.1")
    except OSError:
        return None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = xcb.xcb_connect(display.encode(), None)
    try:
        failed = not conn or xcb.xcb_connection_has_error(conn) != 0
    finally:
        if conn:
            xcb.xcb_disconnect(conn)
    if failed:
        return (f"no X server answers on DISPLAY={display}; start one or point DISPLAY at a "
                f"running one, or {XVFB_HINT}")
    return None


def display_problem() -> str | None:
    """None when Qt can open a window here; otherwise one line saying what to do."""
    if sys.platform != "linux":
        return None
    platform = _platform()
    plugins = _plugin_names()
    if platform and plugins is not None and platform not in plugins:
        return (f"QT_QPA_PLATFORM={platform}: no such Qt platform plugin (installed: "
                f"{', '.join(plugins)}); unset it to use the X display")
    if platform in ("offscreen", "minimal"):
        return f"QT_QPA_PLATFORM={platform} gives no OpenGL window; {NO_GL_HINT}"
    if platform in ("", "xcb"):
        display = os.environ.get("DISPLAY")
        if display:
            return x_display_problem(display)
        if platform == "xcb" or not os.environ.get("WAYLAND_DISPLAY"):
            return f"no display: set DISPLAY to an X server, or {XVFB_HINT}"
        return wayland_problem()
    if platform == "wayland":
        return wayland_problem()
    return _child_problem(platform)  # eglfs, linuxfb, vnc ...: Qt may abort, so ask a child


def wayland_problem() -> str | None:
    """None when a Wayland compositor answers on $WAYLAND_DISPLAY (default wayland-0, in
    $XDG_RUNTIME_DIR), as Qt's wayland plugin looks for it; otherwise what is wrong."""
    import socket

    name = os.environ.get("WAYLAND_DISPLAY") or "wayland-0"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not os.path.isabs(name) and not runtime:
        return (f"Wayland: XDG_RUNTIME_DIR is not set, so no compositor can be found for "
                f"WAYLAND_DISPLAY={name}; log in to a Wayland session, or unset "
                f"QT_QPA_PLATFORM and WAYLAND_DISPLAY to use the X display, or {XVFB_HINT}")
    where = Path(name) if os.path.isabs(name) else Path(runtime) / name
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5.0)
            s.connect(str(where))
    except OSError as exc:
        return (f"no Wayland compositor answers on {where} (WAYLAND_DISPLAY={name}: "
                f"{exc.strerror or exc}); start one, or unset QT_QPA_PLATFORM and "
                f"WAYLAND_DISPLAY to use the X display, or {XVFB_HINT}")
    return None


PROBE = ("import sys\nfrom PyQt6.QtWidgets import QApplication\napp = QApplication(sys.argv[:1])\n"
         "from galaxyview.app.platform import opengl_problem\nproblem = opengl_problem()\n"
         "print(problem or '')\nsys.exit(3 if problem else 0)\n")


def _child_problem(platform: str, timeout_s: float = 30.0) -> str | None:
    """Start Qt on `platform` in a child process: None when it gives an OpenGL context."""
    try:
        r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return (f"QT_QPA_PLATFORM={platform}: Qt did not start within {timeout_s:.0f} s; "
                f"{NO_GL_HINT}")
    if r.returncode == 0:
        return None
    if r.returncode == 3 and r.stdout.strip():
        return r.stdout.strip().splitlines()[-1]
    said = (r.stderr.strip().splitlines() or ["no message"])[-1]
    return f"QT_QPA_PLATFORM={platform}: Qt cannot start here ({said}); {NO_GL_HINT}"


def opengl_problem() -> str | None:
    """With the QApplication made: None when Qt gives an OpenGL context, else what to do."""
    from PyQt6.QtGui import QOffscreenSurface, QOpenGLContext
    from PyQt6.QtWidgets import QApplication

    name = QApplication.platformName()
    context = QOpenGLContext()
    if context.create():
        surface = QOffscreenSurface()
        surface.create()
        if context.makeCurrent(surface):
            context.doneCurrent()
            return None
    return f"Qt's {name!r} platform gives no OpenGL context; {NO_GL_HINT}"
