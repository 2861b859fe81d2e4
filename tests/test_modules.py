"""Physics modules by name: toy modules registered here, in the test, run on both engines
without touching engine code; unknown names fail with the choices."""
import numpy as np
import pytest

from galaxyview.engines import create_engine, modules
from galaxyview.engines.cpu.direct import direct_forces, direct_forces_jerk
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.errors import EngineError, SceneError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params


class DriftKickDriftCPU(modules.Integrator):
    """x += v dt/2; v += a(x) dt; x += v dt/2."""

    def step(self, dt):
        s = self.system
        s.pos = s.pos + 0.5 * dt * s.vel
        s.forces()
        s.vel = s.vel + dt * s.acc
        s.pos = s.pos + 0.5 * dt * s.vel
        return dt


class DriftKickDriftGPU(modules.Integrator):
    kernels = r'''
extern "C" __global__ void dkd_drift(float4* pos, const float4* vel, int n, float h)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i]; const float4 v = vel[i];
        p.x += v.x * h; p.y += v.y * h; p.z += v.z * h;
        pos[i] = p;
    }
}
extern "C" __global__ void dkd_kick(float4* vel, const float4* acc, int n, float dt)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = vel[i]; const float4 a = acc[i];
        v.x += a.x * dt; v.y += a.y * dt; v.z += a.z * dt;
        vel[i] = v;
    }
}
'''

    def step(self, dt):
        s = self.system
        p = s.particles()
        s.launch("dkd_drift", p.pos4, p.vel4, p.n, 0.5 * dt)
        s.forces()
        p = s.particles()
        s.launch("dkd_kick", p.vel4, p.acc4, p.n, dt)
        s.launch("dkd_drift", p.pos4, p.vel4, p.n, 0.5 * dt)
        return dt


BOX = 3.0


class PeriodicCubeCPU(modules.Boundary):
    """Positions wrapped into the cube [-BOX/2, BOX/2)^3."""

    def apply(self):
        s = self.system
        s.pos = s.pos - BOX * np.floor(s.pos / BOX + 0.5)


class PeriodicCubeGPU(modules.Boundary):
    kernels = r'''
extern "C" __global__ void wrap_cube(float4* pos, int n, float box)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 p = pos[i];
        p.x -= box * floorf(p.x / box + 0.5f);
        p.y -= box * floorf(p.y / box + 0.5f);
        p.z -= box * floorf(p.z / box + 0.5f);
        pos[i] = p;
    }
}
'''

    def apply(self):
        p = self.system.particles()
        self.system.launch("wrap_cube", p.pos4, p.n, BOX)


@pytest.fixture
def toys():
    modules.INTEGRATORS.add("dkd", cpu=DriftKickDriftCPU, gpu=DriftKickDriftGPU)
    modules.BOUNDARIES.add("periodic-cube", cpu=PeriodicCubeCPU, gpu=PeriodicCubeGPU)
    yield
    modules.INTEGRATORS.remove("dkd")
    modules.BOUNDARIES.remove("periodic-cube")


def _run(backend, state, steps, gravity="direct", **names):
    engine, _ = create_engine(backend, Params(dt=0.1, eps=0.05, **names), gravity=gravity)
    try:
        engine.load(state)
        engine.step(steps)
        return engine.state(), engine.modules
    finally:
        engine.close()


def test_toy_integrator_on_the_cpu_engine_is_exactly_drift_kick_drift(toys):
    state = plummer_sphere(500, np.random.default_rng(3))
    out, names = _run("cpu", state, 3, integrator="dkd")
    assert names["integrator"] == "dkd"
    x, v, m = (state.pos.astype(np.float64), state.vel.astype(np.float64),
               state.mass.astype(np.float64))
    for _ in range(3):  # the same operations by hand
        x = x + 0.05 * v
        a, _ = direct_forces(x, m, 0.05)
        v = v + 0.1 * a
        x = x + 0.05 * v
    np.testing.assert_array_equal(out.pos, x.astype(np.float32))
    kdk, _ = _run("cpu", state, 3)
    assert np.abs(kdk.pos - out.pos).max() > 1e-3  # the two schemes differ visibly at dt 0.1


def test_toy_boundary_wraps_every_step_on_the_cpu_engine(toys):
    rng = np.random.default_rng(4)
    state = plummer_sphere(400, rng)
    state.mass[:] = 1e-7  # nearly free particles: open and periodic runs differ by the wrap
    state.vel[:] = rng.normal(0, 2.0, state.vel.shape)
    wrapped, names = _run("cpu", state, 10, boundary="periodic-cube")
    free, _ = _run("cpu", state, 10)
    assert names["boundary"] == "periodic-cube"
    assert np.all(np.abs(wrapped.pos) <= BOX / 2 + 1e-6)
    outside = np.abs(free.pos).max(axis=1) > BOX / 2
    assert outside.sum() > 50  # many particles did cross
    np.testing.assert_allclose(wrapped.pos, free.pos - BOX * np.floor(free.pos / BOX + 0.5),
                               atol=1e-4)


@pytest.mark.gpu
def test_toy_modules_on_the_gpu_engine_match_the_cpu_engine(toys):
    state = plummer_sphere(2048, np.random.default_rng(5))
    gpu, names = _run("gpu", state, 5, integrator="dkd")
    cpu, _ = _run("cpu", state, 5, integrator="dkd")
    kdk, _ = _run("cpu", state, 5)
    assert names["integrator"] == "dkd"
    err, schemes = np.abs(gpu.pos - cpu.pos).max(), np.abs(kdk.pos - cpu.pos).max()
    assert schemes > 5e-3 and err < 0.05 * schemes, (err, schemes)
    rng = np.random.default_rng(6)
    state.mass[:] = 1e-7
    state.vel[:] = rng.normal(0, 2.0, state.vel.shape)
    g, _ = _run("gpu", state, 10, gravity="tree", boundary="periodic-cube")
    c, _ = _run("cpu", state, 10, gravity="tree", boundary="periodic-cube")
    assert np.all(np.abs(g.pos) <= BOX / 2 + 1e-5)
    d = g.pos - c.pos
    d -= BOX * np.round(d / BOX)  # a particle on the face may wrap on one side only
    assert np.abs(d).max() < 1e-4


def test_hooks_run_at_their_fixed_points(toys):
    calls = []

    class Recording(modules.Collision):
        def resolve(self):
            calls.append(("collision", self.system.n))

    class RecordingBoundary(modules.Boundary):
        def apply(self):
            calls.append(("boundary", self.system.n))

    modules.COLLISIONS.add("recording", cpu=Recording)
    modules.BOUNDARIES.add("recording", cpu=RecordingBoundary)
    try:
        eng = CPUEngine(Params(collision="recording", boundary="recording"), gravity="direct")
        eng.load(plummer_sphere(100, np.random.default_rng(1)))
        assert calls == [("boundary", 100)]
        eng.step(2)
        assert calls[1:] == [("boundary", 100), ("collision", 100)] * 2
    finally:
        modules.COLLISIONS.remove("recording")
        modules.BOUNDARIES.remove("recording")


def test_a_failed_step_keeps_the_last_good_state():
    class Exploding(modules.Integrator):
        def step(self, dt):
            self.system.vel = self.system.vel * np.inf
            return dt

    modules.INTEGRATORS.add("exploding", cpu=Exploding)
    try:
        eng = CPUEngine(Params(integrator="exploding"), gravity="direct")
        state = plummer_sphere(100, np.random.default_rng(1))
        eng.load(state)
        with pytest.raises(EngineError, match="velocities became"):
            eng.step()
        np.testing.assert_array_equal(eng.state().vel, state.vel)
        assert eng.steps_done == 0
    finally:
        modules.INTEGRATORS.remove("exploding")


def test_unknown_names_fail_with_the_choices(tmp_path):
    with pytest.raises(EngineError, match="unknown integrator 'nope'; choose one of leapfrog"):
        create_engine("cpu", Params(integrator="nope"))
    modules.INTEGRATORS.add("gpu-only", gpu=DriftKickDriftGPU)
    try:
        with pytest.raises(EngineError, match="not available on the CPU engine"):
            create_engine("cpu", Params(integrator="gpu-only"))
    finally:
        modules.INTEGRATORS.remove("gpu-only")
    scene = tmp_path / "s.toml"
    scene.write_text('[scene]\nname = "s"\ndescription = "d"\nseed = 1\nn_cpu = 100\n'
                     'n_gpu = 100\n[params]\nboundary = "shearing"\n[model]\ntype = "plummer"\n'
                     'mass = 1.0\nradius = 1.0\n')
    from galaxyview.simulation import open_simulation

    with pytest.raises(SceneError, match=r"s.toml: params.boundary: unknown boundary 'shearing'"):
        open_simulation(str(scene), backend="cpu", n=100)


def test_active_subset_forces_on_the_cpu_engine():
    eng = CPUEngine(Params(), gravity="direct")
    state = plummer_sphere(300, np.random.default_rng(2))
    eng.load(state)
    s = eng.system
    full = s.acc.copy()
    s.pos = s.pos * 1.01  # move everyone, then refresh only some
    active = np.array([3, 50, 299])
    s.forces(active=active)
    ref, _ = direct_forces(s.pos, s.mass, 0.05, targets=active)
    np.testing.assert_allclose(s.acc[active], ref, rtol=1e-12)
    others = np.setdiff1d(np.arange(300), active)
    np.testing.assert_array_equal(s.acc[others], full[others])
    s.forces(active=active, jerk=True)  # direct gravity gives the jerk (Hermite)
    _, _, jerk = direct_forces_jerk(s.pos, s.vel, s.mass, 0.05, targets=active)
    np.testing.assert_allclose(s.jerk[active], jerk, rtol=1e-12)
    tree = CPUEngine(Params())
    tree.load(state)
    with pytest.raises(EngineError, match="no jerk"):
        tree.system.forces(jerk=True)
