"""Rendering of particles and tree boxes with vispy.gloo; no Qt, so it runs headless too.

OffscreenRenderer (render.offscreen) draws an engine's state to numpy images; the Qt window
(galaxyview.app) drives the same ParticleRenderer inside its canvas.
"""
from galaxyview.errors import GalaxyviewError


class RenderError(GalaxyviewError):
    """The renderer cannot run: no OpenGL context, a missing shader, a failed CUDA-GL interop."""


__all__ = ["RenderError"]
