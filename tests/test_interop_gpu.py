"""CUDA-OpenGL interop on the GPU machine (headless EGL canvas, no Qt): the GL vertex buffer
holds exactly the engine's positions, and drawing a frame copies nothing to the host."""
import numpy as np
import pytest

from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

pytestmark = pytest.mark.gpu

N = 20_000


@pytest.fixture
def gpu_scene():
    from galaxyview.engines.gpu.engine import GPUEngine
    from galaxyview.render.offscreen import OffscreenRenderer

    engine = GPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    engine.load(plummer_sphere(N, np.random.default_rng(7)))
    renderer = OffscreenRenderer(320, 240)
    renderer.attach(engine)
    yield engine, renderer
    renderer.close()
    engine.close()


def _device_pos4(engine):
    import pycuda.driver as cuda

    arrays = engine.device_view().particles()
    pos4 = np.empty((arrays.n, 4), np.float32)
    vel4 = np.empty_like(pos4)
    with engine.activate():
        cuda.memcpy_dtoh(pos4, arrays.pos4)
        cuda.memcpy_dtoh(vel4, arrays.vel4)
    return pos4, vel4


def _rows_sorted(a):
    return a[np.lexsort(a.T[::-1])]


def test_gl_buffer_holds_the_engine_positions_after_a_step(gpu_scene):
    engine, renderer = gpu_scene
    assert renderer.path == "CUDA-GL interop"
    before = renderer.draw()
    engine.step(1)
    after = renderer.draw()
    verts = renderer.read_vertices()  # through GL
    pos4, vel4 = _device_pos4(engine)
    # vertex j is particle (j * stride) mod n of the engine's order, bit for bit
    j = np.arange(N, dtype=np.uint64)
    src = (j * np.uint64(renderer.source.stride) % np.uint64(N)).astype(np.int64)
    assert len(np.unique(src)) == N
    assert np.array_equal(verts["a_position"], pos4[src, :3])
    assert np.array_equal(verts["a_component"], vel4[src, 3])
    assert np.allclose(verts["a_value"], np.linalg.norm(vel4[src, :3], axis=1), rtol=1e-6)
    # the same particles as the engine's host state, whatever order the engine keeps them in
    state = engine.state()
    assert np.array_equal(_rows_sorted(verts["a_position"]), _rows_sorted(state.pos))
    assert (after.sum(-1) > 0).mean() > 0.01 and not np.array_equal(before, after)


def test_no_device_to_host_copy_per_frame(gpu_scene, monkeypatch):
    import pycuda.driver as cuda
    import pycuda.gpuarray as gpuarray

    engine, renderer = gpu_scene
    copies = []

    def counting(name, fn):
        def wrapped(*args, **kwargs):
            copies.append(name)
            return fn(*args, **kwargs)
        return wrapped

    for name in ("memcpy_dtoh", "memcpy_dtoh_async", "from_device", "from_device_like"):
        if hasattr(cuda, name):
            monkeypatch.setattr(cuda, name, counting(name, getattr(cuda, name)))
    monkeypatch.setattr(gpuarray.GPUArray, "get",
                        counting("GPUArray.get", gpuarray.GPUArray.get))
    engine.state()  # the counter sees copies: a host copy of the state makes some
    assert copies
    renderer.render_frame()
    for _ in range(10):
        engine.step(1)
        copies.clear()
        renderer.render_frame()  # interop + draw, no read-back of the image
        assert copies == []


def test_cuda_splat_draws_what_gl_sprites_draw(gpu_scene):
    engine, renderer = gpu_scene
    source, pr = renderer.source, renderer._renderer
    assert source.splatter is not None, source.splat_error
    from galaxyview.render.look import COLOUR_MODES

    for mode in COLOUR_MODES:  # galaxy and density through the host, the others on the device
        renderer.look.colour_mode = mode
        splat = renderer.draw().astype(int)
        pr.light_source = None  # the GL sprite path
        try:
            sprites = renderer.draw().astype(int)
        finally:
            pr.light_source = source
        diff = np.abs(splat - sprites)
        assert (splat.max(axis=-1) > 40).mean() > 0.01
        assert diff.mean() < 1.0 and np.percentile(diff, 99.9) <= 12, (mode, diff.max())


def test_device_values_for_potential_and_energy(gpu_scene):
    """render_pack.cu writes the potential and v^2/2 + phi from the engine's acc4 and vel4, and
    log10 of the mass from pos4."""
    import pycuda.driver as cuda

    engine, renderer = gpu_scene
    arrays = engine.device_view().particles()
    acc4 = np.empty((arrays.n, 4), np.float32)
    with engine.activate():
        cuda.memcpy_dtoh(acc4, arrays.acc4)
    pos4, vel4 = _device_pos4(engine)
    j = np.arange(N, dtype=np.uint64)
    src = (j * np.uint64(renderer.source.stride) % np.uint64(N)).astype(np.int64)
    phi = acc4[src, 3]
    v2 = (vel4[src, :3].astype(np.float64) ** 2).sum(axis=1)
    try:
        mass = np.log10(pos4[src, 3].astype(np.float64))
        for mode, expected in (("potential", phi), ("energy", 0.5 * v2 + phi), ("mass", mass)):
            renderer.look.colour_mode = mode
            renderer.draw()
            got = renderer.read_vertices()["a_value"]
            assert np.allclose(got, expected, rtol=1e-5, atol=1e-6), mode
            assert renderer._renderer.ranges[mode][0] < renderer._renderer.ranges[mode][1]
    finally:
        renderer.look.colour_mode = "component"


def test_engine_gives_galaxy_and_density_values_on_the_device():
    """Colour by galaxy and by tree density without host copies: the engine's values equal
    the host definitions (model/density.py) particle by particle."""
    import pycuda.driver as cuda

    from galaxyview.engines.gpu.engine import GPUEngine
    from galaxyview.model.density import tree_density

    s = plummer_sphere(50_000, np.random.default_rng(4))
    s.galaxy[::3] = 2
    e = GPUEngine(Params(theta=0.6, dt=1 / 64, eps=0.05))
    try:
        e.load(s)
        e.step(1)
        view = e.device_view()
        st = e.state()
        with e.activate():
            ids = np.empty(e.n, np.uint32)
            cuda.memcpy_dtoh(ids, e.buf.ptr(f"id{e._cur}"))
            out = {}
            for mode in ("galaxy", "density"):
                dev = np.empty(e.n, np.float32)
                cuda.memcpy_dtoh(dev, view.values(mode))
                out[mode] = np.empty_like(dev)
                out[mode][ids] = dev
        assert np.array_equal(out["galaxy"], s.galaxy.astype(np.float32))
        host = np.log10(tree_density(st.pos, st.mass))
        diff = np.abs(out["density"] - host)
        print(f"\ndensity on the device vs the host: median |dlog rho| {np.median(diff):.1e}, "
              f"{(diff < 1e-4).mean():.4f} within 1e-4")
        assert np.median(diff) < 1e-5 and (diff < 1e-4).mean() > 0.98
        assert view.values("speed") is None
    finally:
        e.close()
