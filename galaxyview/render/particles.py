"""The particle renderer: additive gaussian sprites into a float light buffer, then bloom
(render/bloom.py), exposure and tone mapping, then the octree overlay. Works in whatever GL
context is current (gloo)."""
from __future__ import annotations

import math

import numpy as np
from vispy import gloo

from galaxyview.light.kernel import EQUIRECT
from galaxyview.model.state import Component
from galaxyview.render import RenderError
from galaxyview.render.bloom import Bloom
from galaxyview.render.camera import Camera
from galaxyview.render.look import (COMPONENT_COLOURS, GALAXY_COLOURS, POPULATION_COLOURS,
                                    TONE_MAPS, Look, colour_lut, mode_code, table)
from galaxyview.resources import shaders_dir

# One vertex per particle; kernels/render_pack.cu writes the same 6 floats. a_value: what the
# particle is coloured by (render/colour.py), speed by default; a_radius: its hard-sphere
# radius (0: a point mass), drawn as a shaded sphere when the look asks for spheres.
VERTEX_DTYPE = np.dtype([("a_position", np.float32, 3), ("a_component", np.float32),
                         ("a_value", np.float32), ("a_radius", np.float32)])
REFERENCE_N = 100_000  # light per particle scales as sqrt(REFERENCE_N / N)
REFERENCE_SIZE = (1920, 1080)  # ... and with the pixels of the image where sprites overlap
CONCENTRATION = 4.0  # the frame's pixels over those the particles cover (light_gain)


def load_shader(name: str) -> str:
    path = shaders_dir() / name
    try:
        return path.read_text()
    except OSError as exc:
        raise RenderError(f"shader {path} cannot be read ({exc.strerror}); reinstall galaxyview")


def host_vertices(pos: np.ndarray, vel: np.ndarray, component: np.ndarray,
                  value: np.ndarray | None = None, radius: np.ndarray | None = None) -> np.ndarray:
    """Vertex array from host particle arrays (the CPU upload path); value: what each particle
    is coloured by (default: its speed); radius: hard-sphere radii (default 0)."""
    v = np.empty(len(pos), VERTEX_DTYPE)
    v["a_position"] = pos
    v["a_component"] = component
    v["a_value"] = np.sqrt(np.einsum("ij,ij->i", vel, vel)) if value is None else value
    v["a_radius"] = 0.0 if radius is None else radius
    return v


def light_gain(n: int, size=REFERENCE_SIZE, point_size: float = 3.0) -> float:
    """Light per particle: fewer particles shine brighter so that small runs stay visible
    (sqrt(REFERENCE_N / n)). Where the sprites overlap, a pixel gathers the light of the
    particles it covers, so an image of fewer pixels would burn out: the gain follows the
    pixel count (relative to 1920x1080) there, and a view looks the same in a window, a 1080p
    movie and an 8K frame. Where they do not overlap (few particles, or many pixels), each
    sprite keeps its own brightness: the pixel factor enters by the overlap d / (1 + d), d the
    sprites covering a pixel where the particles are (a fitted camera puts them on about a
    quarter of the frame: CONCENTRATION)."""
    gain = float(np.clip(0.35 * (REFERENCE_N / max(n, 1)) ** 0.5, 0.01, 3.0))
    pixels = max(int(size[0]) * int(size[1]), 1)
    overlap = CONCENTRATION * max(n, 0) * math.pi * (0.5 * float(point_size)) ** 2 / pixels
    return gain * (pixels / (REFERENCE_SIZE[0] * REFERENCE_SIZE[1])) ** (overlap / (1 + overlap))


def eye_gain(n: int, eyes: np.ndarray, point_size: float) -> float:
    """light_gain for one eye of a projection (Camera.eyes rows: width and height at 18, 19)."""
    return light_gain(n, (int(eyes[0, 18]), int(eyes[0, 19])), point_size)


def box_edges(boxes: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """(M*24, 4) line vertices (x, y, z, level) for cubes given as (M, 4) centre xyz and size."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    pairs = [(a, b) for a in range(8) for b in range(a + 1, 8)
             if np.abs(corners[a] - corners[b]).sum() == 2]  # the 12 edges
    idx = np.array(pairs).ravel()
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    pts = boxes[:, None, :3] + 0.5 * boxes[:, None, 3:4] * corners[idx][None].astype(np.float32)
    lv = np.repeat(np.asarray(levels, np.float32), len(idx))
    return np.c_[pts.reshape(-1, 3), lv].astype(np.float32)


class ParticleRenderer:
    """Owns the GL programs and buffers; `vbo` is the particle vertex buffer (VERTEX_DTYPE)."""

    def __init__(self, look: Look | None = None):
        self.look = look or Look()
        self._points = gloo.Program(load_shader("particles.vert"), load_shader("particles.frag"))
        self._spheres = gloo.Program(load_shader("spheres.vert"), load_shader("spheres.frag"))
        self.ghost_offsets = np.zeros((0, 3), np.float32)  # images drawn with look.ghosts
        self._tonemap = gloo.Program(load_shader("tonemap.vert"), load_shader("tonemap.frag"))
        self._tonemap["a_xy"] = np.array([[-1, -1], [1, -1], [-1, 1], [1, 1]], np.float32)
        self._bloom = Bloom(load_shader("tonemap.vert"), load_shader("bloom.frag"))
        self._boxes = gloo.Program(load_shader("boxes.vert"), load_shader("boxes.frag"))
        self._outline = gloo.Program(load_shader("boxes.vert"), load_shader("boxes.frag"))
        self._outline_box = None
        components = table(COMPONENT_COLOURS, Component.STAR, 4)
        populations = table(POPULATION_COLOURS, Component.STAR, 3)
        for code in range(8):
            rgba = tuple(float(c) for c in components[code])
            self._points[f"u_component[{code}]"] = rgba
            self._points[f"u_galaxy[{code}]"] = GALAXY_COLOURS[code]
            self._points[f"u_population[{code}]"] = tuple(float(c) for c in populations[code])
            self._spheres[f"u_component[{code}]"] = rgba[:3]
        self._lut_name = self._sphere_lut = None
        self.vbo = None
        self.count = 0
        self.vertex_mode = None  # the colour mode the vertex values were made for
        self.ranges: dict = {}  # colour mode -> (lo, hi) of the colour map, when not given
        self.light_source = None  # makes the light texture itself (render/splat.py, host_splat.py)
        self.light_only = False  # the light source draws particles this holds no vertices of
        self._box_count = 0
        self._light = None
        self._light_fbo = None

    # -- data ------------------------------------------------------------------------------------
    def reserve(self, n: int) -> bool:
        """Make the vertex buffer hold exactly n particles; True when a new buffer was made."""
        if self.vbo is not None and self.count == n:
            return False
        if self.vbo is not None:
            self.vbo.delete()
        self.vbo = gloo.VertexBuffer(np.zeros(max(n, 1), VERTEX_DTYPE))
        for name in VERTEX_DTYPE.names:  # (the points draw no radius)
            if name != "a_radius":
                self._points[name] = self.vbo[name]
        self._spheres.bind(self.vbo)
        self.count = n
        return True

    def vbo_handle(self, gl_context) -> int:
        """The GL name of the vertex buffer, created in GL now if it is still queued."""
        gl_context.glir.associate(self.vbo.glir)  # gloo queues a buffer until first drawn
        gl_context.flush_commands()
        obj = gl_context.shared.parser.get_object(self.vbo.id)
        if obj is None:
            raise RenderError("the particle vertex buffer was not created in GL")
        return int(obj.handle)

    def colour_range(self, mode: str, values=None) -> tuple[float, float]:
        """The colour map's ends for `mode`: look.value_range, else the range made from the
        first values seen in this mode (auto_range), kept until `ranges` is cleared."""
        if self.look.value_range is not None:
            return tuple(float(v) for v in self.look.value_range)
        if mode not in self.ranges and values is not None:
            from galaxyview.render.colour import auto_range

            self.ranges[mode] = auto_range(mode, values)
        return self.ranges.get(mode, (0.0, 1.0))

    def colouring(self) -> tuple[str, int, tuple[float, float], np.ndarray]:
        """(mode, mode_code, (lo, hi), LUT) the vertex buffer is drawn with now."""
        mode = self.vertex_mode or self.look.colour_mode
        return mode, mode_code(mode), self.colour_range(mode), colour_lut(self.look.colour_map)

    def upload(self, vertices: np.ndarray, mode: str | None = None) -> None:
        """CPU path: copy a VERTEX_DTYPE array (values for colour `mode`) into the buffer."""
        if mode is not None:
            self.vertex_mode = mode
            self.colour_range(mode, vertices["a_value"])
        if not self.reserve(len(vertices)):
            self.vbo.set_data(vertices)
        else:
            self.vbo.set_data(vertices if len(vertices) else np.zeros(1, VERTEX_DTYPE))

    def set_boxes(self, boxes: np.ndarray | None, levels: np.ndarray | None = None) -> None:
        """Boxes of the tree overlay: (M, 4) centre xyz and size, with their levels."""
        if boxes is None or len(boxes) == 0:
            self._box_count = 0
            return
        edges = box_edges(boxes, levels if levels is not None else np.zeros(len(boxes)))
        self._boxes["a_edge"] = gloo.VertexBuffer(edges)
        self._box_count = len(edges)

    # -- drawing ---------------------------------------------------------------------------------
    def _light_buffer(self, size):
        w, h = size
        if self._light is None or self._light.shape[:2] != (h, w):
            self._light = gloo.Texture2D(shape=(h, w, 4), format="rgba", internalformat="rgba16f",
                                         interpolation="nearest")
            self._light_fbo = gloo.FrameBuffer(color=self._light,
                                               depth=gloo.RenderBuffer((h, w), "depth"))
        return self._light_fbo

    def _draw_spheres(self, camera: Camera, mvp, size) -> None:
        """Depth-tested shaded spheres (impostors: a point sprite each, its size the sphere's
        projected diameter) into the bound light buffer, once per ghost image."""
        w, h = size
        p = self._spheres
        gloo.set_state(blend=False, depth_test=True)
        gloo.clear(color=True, depth=True)
        _, code, (lo, hi), lut = self.colouring()
        p["u_mvp"] = mvp
        p["u_view"] = camera.view_matrix().T.astype(np.float32)
        p["u_scale"] = float(camera.projection_matrix(w / max(h, 1))[1, 1] * 0.5 * h)
        p["u_min_size"] = 1.5
        p["u_colour_mode"] = code
        p["u_range"] = (lo, hi)
        if self._sphere_lut != self.look.colour_map:
            for i, rgb in enumerate(lut):
                p[f"u_lut[{i}]"] = tuple(float(c) for c in rgb)
            self._sphere_lut = self.look.colour_map
        offsets = [np.zeros(3, np.float32)]
        if self.look.ghosts:
            offsets += list(self.ghost_offsets)
        for k, o in enumerate(offsets):
            p["u_offset"] = tuple(float(x) for x in o)
            p["u_dim"] = 1.0 if k == 0 else 0.45  # images fainter than the box itself
            p.draw("points")
        if self.look.sheet_box is not None:  # the box, a flat outline at z = 0
            if self._outline_box != self.look.sheet_box:
                lx, ly = self.look.sheet_box
                half = np.array([0.5 * lx, 0.5 * ly, 0.0])
                edges = box_edges(np.array([[0, 0, 0, 2.0]]), [0])
                edges[:, :3] *= half
                self._outline["a_edge"] = gloo.VertexBuffer(edges.astype(np.float32))
                self._outline_box = self.look.sheet_box
            gloo.set_state(blend=True, depth_test=True,
                           blend_func=("src_alpha", "one_minus_src_alpha"))
            self._outline["u_mvp"] = mvp
            self._outline["u_levels"] = (0.0, 1.0)
            self._outline.draw("lines")

    def _draw_sprites(self, camera: Camera, size) -> None:
        """GL point sprites into the bound light buffer, through each eye of the camera's
        projection (render/projections): its viewport, and for equirect the copies across the
        seam (a GL viewport three eyes wide, scissored to the eye's)."""
        look, p = self.look, self._points
        projection, eyes = camera.eyes(size)
        gloo.set_state(blend=True, depth_test=False, blend_func=("one", "one"))
        p["u_point_size"] = float(look.point_size)
        p["u_gain"] = eye_gain(self.count, eyes, look.point_size)
        _, code, (lo, hi), lut = self.colouring()
        p["u_colour_mode"] = code
        p["u_range"] = (lo, hi)
        if self._lut_name != look.colour_map:
            for i, rgb in enumerate(lut):
                p[f"u_lut[{i}]"] = tuple(float(c) for c in rgb)
            self._lut_name = look.colour_map
        p["u_projection"] = projection
        wraps = projection == EQUIRECT
        scissor = wraps or len(eyes) > 1
        gloo.set_state(scissor_test=scissor)
        for row in eyes:
            x, y, vw, vh = (int(v) for v in row[16:20])
            left = vw if wraps else 0
            p["u_mvp"] = row[:16].reshape(4, 4).T  # GLSL reads column-major
            p["u_eye_number"] = float(row[20])
            p["u_eye_size"] = (float(vw), float(vh))
            p["u_gl_span"] = (float(left), float(vw + 2 * left))
            gloo.set_viewport(x - left, y, vw + 2 * left, vh)
            if scissor:
                gloo.set_scissor(x, y, vw, vh)
            for shift in ((0, -vw, vw) if wraps else (0,)):
                p["u_shift"] = float(shift)
                p.draw("points")
        gloo.set_state(scissor_test=False)
        gloo.set_viewport(0, 0, *size)

    def draw(self, camera: Camera, size: tuple[int, int]) -> None:
        """Draw into the bound framebuffer (the canvas, or an FBO the caller activated)."""
        look = self.look
        w, h = int(size[0]), int(size[1])
        mvp = camera.mvp(w / max(h, 1)).T.astype(np.float32)  # GLSL reads column-major
        flat = camera.projection.name == "perspective"  # spheres and boxes: perspective only
        spheres = look.spheres and self.count and flat
        light = None
        if self.light_source is not None and (self.count or self.light_only) and not spheres:
            light = self.light_source.light(camera, look, (w, h))  # None: draw sprites
        if spheres:
            with self._light_buffer((w, h)):
                gloo.set_viewport(0, 0, w, h)
                gloo.set_clear_color((0, 0, 0, 0))
                self._draw_spheres(camera, mvp, (w, h))
            light = self._light
        elif light is None:
            with self._light_buffer((w, h)):
                gloo.set_viewport(0, 0, w, h)
                gloo.set_clear_color((0, 0, 0, 0))
                gloo.clear(color=True, depth=False)
                if self.count:
                    self._draw_sprites(camera, (w, h))
            light = self._light
        if look.bloom > 0 and not spheres:
            light = self._bloom.apply(light, (w, h), look.bloom, look.bloom_radius,
                                      look.exposure)
        self._tonemap["u_light"] = light
        gloo.set_viewport(0, 0, w, h)
        gloo.set_state(blend=False, depth_test=False)
        t = self._tonemap
        t["u_exposure"] = float(look.exposure)
        t["u_tone_map"] = TONE_MAPS.index("linear" if spheres else look.tone_map)
        t["u_background"] = tuple(look.background[:3])
        t["u_size"] = (float(w), float(h))
        dome = camera.projection.name == "fisheye"  # black beyond the dome master's circle
        t["u_disc"] = 0.5 * min(w, h) if dome else 0.0
        t.draw("triangle_strip")
        if look.boxes and self._box_count and not spheres and flat:
            gloo.set_state(blend=True, blend_func=("src_alpha", "one_minus_src_alpha"))
            self._boxes["u_mvp"] = mvp
            self._boxes["u_levels"] = tuple(float(x) for x in look.box_levels)
            self._boxes.draw("lines")
        gloo.set_clear_color((0, 0, 0, 1))  # Qt's canvas clears alpha with it: keep opaque
