"""The look on the GPU machine: the CUDA splat (kernels/render_splat.cu) draws the stellar
population colours and the bloom as the host splat (light/kernel.py) does."""
import numpy as np
import pytest

from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params
from galaxyview.model.state import Component

pytestmark = pytest.mark.gpu

N = 20_000


@pytest.fixture
def gpu_scene():
    from galaxyview.engines.gpu.engine import GPUEngine
    from galaxyview.render.offscreen import OffscreenRenderer

    state = plummer_sphere(N, np.random.default_rng(7))
    r = np.linalg.norm(state.pos, axis=1)
    state.component[:] = np.where(r < np.median(r), Component.BULGE, Component.DISK)
    state.component[::10] = Component.HALO
    engine = GPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    engine.load(state)
    renderer = OffscreenRenderer(320, 240)
    renderer.attach(engine)
    yield engine, renderer
    renderer.close()
    engine.close()


def _host_splat_frame(engine, renderer):
    """The same frame with the light splatted on the host from a host copy of the state."""
    from galaxyview.render.headless import made_current
    from galaxyview.render.sources import HostSource

    pr, device = renderer._renderer, renderer.source
    host = HostSource(engine, pr)  # becomes the renderer's light source
    try:
        with made_current(renderer._canvas):
            host.refresh()
        return renderer.draw().astype(int)
    finally:
        with made_current(renderer._canvas):
            host.close()
        pr.light_source = device


@pytest.mark.parametrize("look", [dict(colour_mode="population"),
                                  dict(colour_mode="population", bloom=0.6, exposure=3.0)])
def test_cuda_splat_draws_what_the_host_splat_draws(gpu_scene, look):
    engine, renderer = gpu_scene
    assert renderer.source.splatter is not None, renderer.source.splat_error
    renderer.look = renderer.look.with_(**look)
    cuda = renderer.draw().astype(int)
    host = _host_splat_frame(engine, renderer)
    diff = np.abs(cuda - host)
    assert (cuda.max(axis=-1) > 40).mean() > 0.01
    assert diff.mean() < 1.0 and np.percentile(diff, 99.9) <= 12, (look, diff.max())
