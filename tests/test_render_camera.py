"""Camera and look: pure numpy, no GL."""
import numpy as np
import pytest

from galaxyview.errors import ParameterError
from galaxyview.render.camera import Camera
from galaxyview.render.look import Look
from galaxyview.render.particles import box_edges, host_vertices, light_gain

SIZE = (400, 300)


def test_fit_puts_the_particles_in_view():
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(5000, 3)) * [3.0, 1.0, 0.5] + [10.0, -4.0, 2.0]
    cam = Camera()
    cam.fit(pos)
    assert np.allclose(cam.centre, np.median(pos, axis=0))
    px = cam.project(pos, SIZE)
    inside = (px[:, 0] >= 0) & (px[:, 0] < SIZE[0]) & (px[:, 1] >= 0) & (px[:, 1] < SIZE[1])
    assert inside.mean() > 0.9
    # the centre projects to the middle of the image
    assert np.allclose(cam.project(cam.centre[None], SIZE)[0], [200, 150], atol=1e-6)


def test_orbit_keeps_distance_and_turns_the_eye():
    cam = Camera()
    cam.centre = np.array([1.0, 2.0, 3.0])
    eye0 = cam.eye
    cam.orbit(90.0)
    assert np.isclose(np.linalg.norm(cam.eye - cam.centre), cam.distance)
    assert not np.allclose(cam.eye, eye0)
    cam.orbit(0.0, 500.0)  # elevation is clamped short of the pole
    assert cam.elevation == 89.0


def test_zoom_pan_fly_and_turn():
    cam = Camera()
    d = cam.distance
    cam.zoom(2.0)
    assert np.isclose(cam.distance, d / 2)
    c0 = cam.centre.copy()
    cam.pan(0.5, 0.0)  # half a view height to the right, in the view plane
    forward, right, _ = cam.basis()
    assert np.isclose(np.dot(cam.centre - c0, forward), 0.0)
    assert np.dot(cam.centre - c0, right) > 0
    c1, eye1 = cam.centre.copy(), cam.eye
    cam.fly(forward=0.1)
    assert np.allclose(cam.eye - eye1, 0.1 * cam.distance * forward)
    eye2 = cam.eye
    cam.turn(30.0, 10.0)  # fly mode looks around from where the eye is
    assert np.allclose(cam.eye, eye2)
    assert not np.allclose(cam.centre, c1)


def test_follow_tracks_a_point_or_callable_and_fixed_stops():
    cam = Camera()
    target = {"p": np.array([1.0, 0.0, 0.0])}
    cam.follow(lambda: target["p"])
    target["p"] = np.array([5.0, 5.0, 5.0])
    cam.update()
    assert np.allclose(cam.centre, [5, 5, 5]) and cam.following
    cam.fixed()
    target["p"] = np.array([-9.0, 0.0, 0.0])
    cam.update()
    assert np.allclose(cam.centre, [5, 5, 5]) and not cam.following
    cam.follow([2, 3, 4])
    assert np.allclose(cam.centre, [2, 3, 4])


def test_look_rejects_bad_values_with_a_message():
    with pytest.raises(ParameterError, match="colour_mode"):
        Look(colour_mode="rainbow")
    with pytest.raises(ParameterError, match="tone_map"):
        Look(tone_map="aces")
    with pytest.raises(ParameterError, match="box_levels"):
        Look(box_levels=(5, 2))
    with pytest.raises(ParameterError, match="point_size"):
        Look(point_size=0)
    assert Look().with_(exposure=2.0).exposure == 2.0


def test_host_vertices_and_box_edges():
    pos = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    vel = np.array([[3, 4, 0], [0, 0, 0]], np.float32)
    v = host_vertices(pos, vel, np.array([0, 3], np.uint8))
    assert v.dtype.itemsize == 24  # the 6 floats kernels/render_pack.cu writes
    assert np.array_equal(v["a_position"], pos) and list(v["a_value"]) == [5.0, 0.0]
    assert list(v["a_radius"]) == [0.0, 0.0]
    v = host_vertices(pos, vel, np.array([0, 3], np.uint8), radius=np.array([1.5, 2.0]))
    assert list(v["a_radius"]) == [1.5, 2.0]
    edges = box_edges(np.array([[0, 0, 0, 2.0]]), [3])
    assert edges.shape == (24, 4) and set(np.unique(edges[:, :3])) == {-1.0, 1.0}
    seg = edges[:, :3].reshape(12, 2, 3)
    assert np.allclose(np.linalg.norm(seg[:, 0] - seg[:, 1], axis=1), 2.0)  # 12 unit edges
    assert light_gain(10_000) > light_gain(1_000_000)
