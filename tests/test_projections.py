"""Projections (render/projections): the maths of each (known directions on known pixels), the
host splat (light/kernel.py) against the GL sprites (shaders/particles.vert) under Mesa, the
seam and the dome's rim; the CUDA splat against the host splat in tests/test_projections_gpu.py."""
import math

import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.errors import ParameterError
from galaxyview.light.kernel import EQUIRECT, FISHEYE, PERSPECTIVE, place
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component, ParticleState
from galaxyview.render.camera import Camera
from galaxyview.render.offscreen import OffscreenRenderer
from galaxyview.render.projections import PROJECTIONS, Projection

W, H = 256, 128
X, Y, Z = np.eye(3)


def along_x(distance=5.0) -> Camera:
    """A camera at (-distance, 0, 0) looking along +x, level: right is -y, up is +z."""
    cam = Camera()
    cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), distance, 180.0, 0.0
    return cam


def where(cam, direction, size=(W, H), far=3.0):
    """The pixels (x, y up) of a point `far` from the eye along `direction`, one per eye."""
    code, rows = cam.eyes(size)
    return [place(code, row, cam.eye + far * np.asarray(direction, float)) for row in rows]


def test_registry_and_settings_are_checked():
    assert set(PROJECTIONS) == {"perspective", "fisheye", "equirect", "stereo-sbs", "stereo-tb",
                                "ods"}
    for bad, match in [({"name": "cube"}, "projection must be one of"),
                       ({"fov": 170}, "field of view"), ({"fov": 240}, "field of view"),
                       ({"tilt": 100}, "tilt"), ({"eye_sep": 0.0}, "eye separation"),
                       ({"eye_sep": math.inf}, "eye separation")]:
        with pytest.raises(ParameterError, match=match):
            Projection(**bad).validate()


def test_perspective_is_the_cameras_mvp():
    cam = along_x()
    code, rows = cam.eyes((W, H))
    assert code == PERSPECTIVE and len(rows) == 1
    assert np.allclose(rows[0, :16].reshape(4, 4), cam.mvp(W / H))
    pts = np.array([[0, 0, 0], [0.5, -0.3, 0.2]])
    ours = [place(code, rows[0], p) for p in pts]
    theirs = cam.project(pts, (W, H))
    for (x, y), (px, py) in zip(ours, theirs):
        assert abs(x - px) < 1e-3 and abs((H - y) - py) < 1e-3


def test_dome_master_zenith_centre_horizon_rim_and_tilt():
    cam = along_x()
    r = 0.5 * H  # the inscribed circle
    cam.projection = Projection("fisheye", fov=180)
    assert cam.eyes((W, H))[0] == FISHEYE
    (centre,) = where(cam, Z)  # the zenith: the camera's up
    assert np.allclose(centre, (W / 2, H / 2), atol=1e-3)
    (front,) = where(cam, X)  # the target, on the horizon: the rim at the bottom
    assert np.allclose(front, (W / 2, H / 2 - r), atol=1e-3)
    (right,) = where(cam, -Y)
    assert np.allclose(right, (W / 2 + r, H / 2), atol=1e-3)
    (left,) = where(cam, Y)
    assert np.allclose(left, (W / 2 - r, H / 2), atol=1e-3)
    assert where(cam, -Z) == [None] and where(cam, (-1, 0, -0.1)) == [None]  # beyond the rim
    (half_up,) = where(cam, X + Z)  # 45 degrees up: half way to the rim, equidistant
    assert np.allclose(half_up, (W / 2, H / 2 - r / 2), atol=1e-3)
    cam.projection = Projection("fisheye", fov=220)
    (front,) = where(cam, X)
    assert np.allclose(front, (W / 2, H / 2 - r * 180 / 220), atol=1e-3)
    (below,) = where(cam, (1, 0, -math.tan(math.radians(20))))  # 20 degrees below: the rim
    assert np.allclose(below, (W / 2, H / 2 - r), atol=1e-2)
    cam.projection = Projection("fisheye", fov=180, tilt=30)  # the zenith towards the front
    (centre,) = where(cam, (math.sin(math.radians(30)), 0, math.cos(math.radians(30))))
    assert np.allclose(centre, (W / 2, H / 2), atol=1e-3)
    (front,) = where(cam, X)  # the target 60 degrees from the axis
    assert np.allclose(front, (W / 2, H / 2 - r * 60 / 90), atol=1e-3)
    cam.projection = Projection("fisheye", fov=180, tilt=90)  # the target at the centre
    (centre,) = where(cam, X)
    assert np.allclose(centre, (W / 2, H / 2), atol=1e-3)


def test_equirect_centre_column_poles_and_seam():
    cam = along_x()
    cam.elevation = 25.0  # a camera looking down keeps the poles on world z
    cam.projection = Projection("equirect")
    assert cam.eyes((W, H))[0] == EQUIRECT
    (front,) = where(cam, X)
    assert np.allclose(front, (W / 2, H / 2), atol=1e-3)
    (top,) = where(cam, Z)
    assert abs(top[1] - H) < 1e-3
    (bottom,) = where(cam, -Z)
    assert abs(bottom[1]) < 1e-3
    (right,) = where(cam, -Y)
    assert np.allclose(right, (3 * W / 4, H / 2), atol=1e-3)
    (left,) = where(cam, Y)
    assert np.allclose(left, (W / 4, H / 2), atol=1e-3)
    (behind,) = where(cam, (-1, -1e-4, 0))  # turned right almost all the way: the right edge
    assert behind[0] > 0.99 * W and abs(behind[1] - H / 2) < 1e-3
    (behind,) = where(cam, (-1, 1e-4, 0))  # turned left almost all the way: the left edge
    assert behind[0] < 0.01 * W and abs(behind[1] - H / 2) < 1e-3
    (up30,) = where(cam, (math.cos(math.radians(30)), 0, math.sin(math.radians(30))))
    assert np.allclose(up30, (W / 2, H / 2 + H * 30 / 180), atol=1e-3)


@pytest.mark.parametrize("name", ["stereo-sbs", "stereo-tb"])
def test_stereo_eyes_are_the_separation_apart(name):
    cam = along_x(5.0)
    cam.projection = Projection(name, eye_sep=0.4)
    code, rows = cam.eyes((W, H))
    assert code == PERSPECTIVE and len(rows) == 2
    left_vp, right_vp = rows[0, 16:20], rows[1, 16:20]
    if name == "stereo-sbs":
        assert list(left_vp) == [0, 0, W / 2, H] and list(right_vp) == [W / 2, 0, W / 2, H]
    else:  # the left eye on top
        assert list(left_vp) == [0, H / 2, W, H / 2] and list(right_vp) == [0, 0, W, H / 2]
    # the centre (the convergence point) lands in the middle of both eyes' frames
    for row in rows:
        x0, y0, vw, vh = row[16:20]
        x, y = place(code, row, cam.centre)
        assert abs(x - (x0 + vw / 2)) < 1e-3 and abs(y - (y0 + vh / 2)) < 1e-3
    # each eye sees the points of its own line of sight (its position, along the camera's
    # forward) on one pixel whatever their depth: the eyes are at -+0.2 along the right (-y)
    for row, offset in zip(rows, (0.2 * Y, -0.2 * Y)):
        xs = [place(code, row, cam.eye + offset + d * X)[0] for d in (2.0, 8.0, 100.0)]
        assert max(xs) - min(xs) < 1e-2, xs
        xs = [place(code, row, cam.eye + d * X)[0] for d in (2.0, 8.0, 100.0)]
        assert max(xs) - min(xs) > 3, xs  # the camera's own eye is not where this eye is


def test_ods_eyes_look_along_the_tangents_of_their_circle():
    cam = along_x()
    cam.projection = Projection("ods", eye_sep=1.0)
    code, rows = cam.eyes((W, H))
    assert code == EQUIRECT and len(rows) == 2
    assert list(rows[0, 16:20]) == [0, H / 2, W, H / 2]  # left eye on top
    d = 4.0
    left, right = where(cam, X, far=d)
    shift = math.asin(0.5 / d) / (2 * math.pi) * W
    assert np.allclose(left, (W / 2 + shift, H * 3 / 4), atol=1e-3)
    assert np.allclose(right, (W / 2 - shift, H / 4), atol=1e-3)
    assert where(cam, X, far=0.4) == [None, None]  # inside the eye circle


def _one_particle(renderer, point, size=9.0):
    state = ParticleState(np.array([point], np.float32), np.zeros((1, 3), np.float32),
                          np.ones(1), np.full(1, Component.STAR, np.uint8))
    e = CPUEngine(Params(), gravity="direct")
    e.load(state)
    renderer.attach(e, fit=False)
    renderer.look.point_size = size
    return e


@pytest.fixture
def splat_always(monkeypatch):
    """The host splat draws however few the particles (else GL sprites draw a few)."""
    monkeypatch.setattr("galaxyview.render.sources.PIXELS_PER_SPLAT", 10**9)


def _both_paths(renderer):
    """(host splat frame, GL sprite frame) as ints."""
    pr, source = renderer._renderer, renderer.source
    assert pr.light_source is source
    calls, render_light = [], source.splatter.render_light
    source.splatter.render_light = lambda *a: calls.append(1) or render_light(*a)
    try:
        splat = renderer.draw().astype(int)
    finally:
        source.splatter.render_light = render_light
    assert calls  # the host splat drew it
    pr.light_source = None
    try:
        sprites = renderer.draw().astype(int)
    finally:
        pr.light_source = source
    return splat, sprites


@pytest.fixture(scope="module")
def renderer():
    r = OffscreenRenderer(W, H)
    yield r
    r.close()


def test_a_sprite_across_the_seam_is_drawn_on_both_sides(renderer, splat_always):
    cam = renderer.camera
    eye = np.array([-5.0, 0.0, 0.0])
    e = _one_particle(renderer, eye + 3 * np.array([-1.0, -0.004, 0.0]))  # at the right edge
    try:
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, 180.0, 0.0
        cam.projection = Projection("equirect")
        for img in _both_paths(renderer):
            lit = img.max(axis=-1) > 30
            cols = np.flatnonzero(lit.any(axis=0))
            assert 0 in cols and W - 1 in cols, cols  # both edges
            assert not lit[:, 10:W - 10].any()  # and nowhere else
    finally:
        cam.projection = Projection()
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


def test_the_dome_master_drops_what_lies_beyond_its_rim(renderer, splat_always):
    cam = renderer.camera
    eye = np.array([-5.0, 0.0, 0.0])
    e = _one_particle(renderer, eye + 3 * np.array([1.0, 0.0, -0.1]))  # 5.7 degrees below
    try:
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, 180.0, 0.0
        cam.projection = Projection("fisheye", fov=180)
        for img in _both_paths(renderer):
            assert img.max() < 15  # beyond the rim: clipped
        cam.projection = Projection("fisheye", fov=200)
        theta = 90 + math.degrees(math.atan(0.1))
        for img in _both_paths(renderer):
            lit = np.argwhere(img.max(axis=-1) > 60)
            assert len(lit)
            y = H - 0.5 - lit[:, 0].mean()  # rows top first; y up from the bottom
            assert abs(y - (H / 2 - H / 2 * theta / 100)) < 1.5, y
    finally:
        cam.projection = Projection()
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


def test_stereo_sprites_stay_in_their_eyes_half(renderer, splat_always):
    cam = renderer.camera
    e = _one_particle(renderer, (0.0, 0.0, 0.0), size=20.0)
    try:
        cam.centre, cam.distance, cam.azimuth, cam.elevation = np.zeros(3), 5.0, 180.0, 0.0
        cam.projection = Projection("stereo-sbs", eye_sep=0.1)
        cam.centre = np.array([0.0, 1.9, 0.0])  # the particle near the right of each half
        code, rows = cam.eyes((W, H))
        x, _ = place(code, rows[0], (0, 0, 0))
        assert W / 2 - 8 < x < W / 2, x
        for img in _both_paths(renderer):
            lit = img.max(axis=-1) > 30
            cols = np.flatnonzero(lit.any(axis=0))
            assert cols[cols < W // 2].max() == W // 2 - 1  # cut at the left eye's edge
            assert cols.max() == W - 1 and 0 < len(cols[cols >= W // 2]) < 14  # and the right's
            assert not lit[:, W // 2:W // 2 + 3].any()  # nothing spilled across the middle
    finally:
        cam.projection = Projection()
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


@pytest.mark.parametrize("name", ["fisheye", "equirect", "stereo-sbs", "stereo-tb", "ods"])
def test_host_splat_draws_what_gl_sprites_draw(renderer, name):
    e = CPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(3000, np.random.default_rng(3)))
    cam = renderer.camera
    try:
        renderer.attach(e)
        cam.projection = Projection(name, tilt=60.0)
        if name in ("fisheye", "equirect", "ods"):
            cam.distance = 1.5  # inside the halo: particles all around
        for size in (3.0, 7.0):
            renderer.look.point_size = size
            splat, sprites = _both_paths(renderer)
            diff = np.abs(splat - sprites)
            assert (splat.max(axis=-1) > 40).mean() > 0.01
            assert diff.mean() < 1.0 and np.percentile(diff, 99.9) <= 12, (size, diff.max())
        cam.projection = Projection()
        assert not np.array_equal(renderer.draw().astype(int), splat)
    finally:
        cam.projection = Projection()
        renderer.look.point_size = 3.0
        renderer.detach()
        e.close()


def test_spheres_and_tree_boxes_are_drawn_in_perspective_only(renderer):
    e = CPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(2000, np.random.default_rng(5)))
    cam, look = renderer.camera, renderer.look
    try:
        renderer.attach(e)
        frames = {}
        for name in ("perspective", "fisheye"):
            cam.projection = Projection(name, tilt=90.0)
            for spheres, boxes in ((False, False), (True, False), (False, True)):
                look.spheres, look.boxes, look.box_levels = spheres, boxes, (1, 3)
                frames[name, spheres, boxes] = renderer.draw().astype(int)
        plain = frames["perspective", False, False]
        assert not np.array_equal(frames["perspective", True, False], plain)
        assert not np.array_equal(frames["perspective", False, True], plain)
        dome = frames["fisheye", False, False]
        assert (dome.max(axis=-1) > 40).mean() > 0.005
        assert np.array_equal(frames["fisheye", True, False], dome)  # sprites, projected
        assert np.array_equal(frames["fisheye", False, True], dome)  # no boxes
    finally:
        look.spheres = look.boxes = False
        cam.projection = Projection()
        renderer.detach()
        e.close()
