"""The timeline (engines/timeline.py, Engine.checkpoint/restore): a rewind restores the exact
state, bitwise on the CPU engine, and a branch with another theta differs."""
import numpy as np
import pytest

from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.timeline import Timeline
from galaxyview.errors import EngineError, ParameterError
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

FIELDS = ("pos", "vel", "acc", "pot")


def _arrays(engine):
    s = engine.system
    return {k: getattr(s, k).copy() for k in FIELDS} | {"time": engine.time,
                                                         "steps": engine.steps_done}


def _same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in FIELDS) and a["time"] == b["time"] and \
        a["steps"] == b["steps"]


@pytest.fixture
def engine():
    e = CPUEngine(Params(theta=0.7, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(1500, np.random.default_rng(11)))
    yield e
    e.close()


def test_rewind_restores_the_exact_state_and_replays_bitwise(engine):
    t = Timeline(capacity=8, every=4)
    states = {}
    for _ in range(20):
        t.keep(engine)
        states[engine.steps_done] = _arrays(engine)
        engine.step(1)
    states[engine.steps_done] = _arrays(engine)
    assert [cp.steps_done for cp in t.entries] == [0, 4, 8, 12, 16]
    cp = t.rewind(engine, 2)
    assert cp.steps_done == 8 and _same(_arrays(engine), states[8])
    t.rewind(engine, 4)  # forward again: later states are still there before a step
    assert _same(_arrays(engine), states[16])
    t.rewind(engine, 2)
    t.branch()
    assert len(t.entries) == 3
    engine.step(12)
    assert _same(_arrays(engine), states[20])  # the replay is the same run, bit for bit


def test_a_branch_with_another_theta_differs(engine):
    t = Timeline(capacity=4, every=5)
    t.keep(engine)
    engine.step(10)
    original = _arrays(engine)
    t.rewind(engine, 0)
    engine.set_params(theta=0.3)  # "what if": a more accurate force
    t.branch()
    engine.step(10)
    branch = _arrays(engine)
    assert branch["steps"] == original["steps"] and branch["time"] == original["time"]
    assert not np.array_equal(branch["pos"], original["pos"])
    assert np.abs(branch["pos"] - original["pos"]).max() < 0.05  # a nearby history
    # rewinding with theta already changed re-evaluates the forces at the restored positions
    t.rewind(engine, 0)
    acc_now = engine.system.acc.copy()
    engine.set_params(theta=0.3)
    assert np.array_equal(acc_now, engine.system.acc)


def test_capacity_memory_and_bad_use(engine):
    t = Timeline(capacity=3, every=1)
    for _ in range(5):
        assert t.keep(engine)
        engine.step(1)
    assert [cp.steps_done for cp in t.entries] == [2, 3, 4]
    per = 1500 * (3 + 3 + 3 + 1 + 1 + 1) * 8  # pos vel acc, pot mass radius: float64
    assert t.nbytes == 3 * per and t.budget_bytes() == 3 * per
    assert "3/3 states every 1 steps" in t.describe() and "host memory" in t.describe()
    t.configure(capacity=2)
    assert [cp.steps_done for cp in t.entries] == [3, 4]
    with pytest.raises(ParameterError, match="no kept state 5"):
        t.rewind(engine, 5)
    with pytest.raises(ParameterError, match="capacity"):
        t.configure(capacity=0)
    other = CPUEngine(Params())
    other.load(plummer_sphere(100, np.random.default_rng(1)))
    with pytest.raises(EngineError, match="another particle set"):
        other.restore(t.entries[0])
    other.close()
    t.clear()
    assert t.entries == [] and t.nbytes == 0
    small = Timeline(capacity=10, every=1, budget_bytes=2.5 * per)  # room for two
    for _ in range(4):
        small.keep(engine)
        engine.step(1)
    assert len(small.entries) == 2 and small.limit == 2 and "2/2 states" in small.describe()


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1_048_576, 16_777_216])
def test_gpu_timeline_memory_and_rewind_time(n):
    import time

    from galaxyview.engines.gpu.engine import GPUEngine

    e = GPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(n, np.random.default_rng(2)))
    try:
        t = Timeline(capacity=4, every=2)
        before = e.state()
        t.keep(e)
        e.step(4)
        assert t.entries[0].nbytes == 52 * n and t.entries[0].on_device
        after = e.state()
        t0 = time.perf_counter()
        t.rewind(e, 0)
        rewind_ms = (time.perf_counter() - t0) * 1e3
        back = e.state()
        assert np.array_equal(back.pos, before.pos) and np.array_equal(back.vel, before.vel)
        assert e.time == before.time and e.steps_done == 0
        t.branch()
        e.step(4)
        replay = e.state()
        print(f"\nN={n}: checkpoint {t.entries[0].nbytes / 1e6:.0f} MB on the GPU, rewind "
              f"{rewind_ms:.2f} ms")
        assert np.allclose(replay.pos, after.pos, atol=1e-5)  # the same run again
        assert rewind_ms < 200
    finally:
        e.close()


def test_a_full_timeline_hands_its_oldest_state_to_the_next_checkpoint(engine, monkeypatch):
    t, handed = Timeline(capacity=3, every=1), []
    real = engine.checkpoint

    def checkpoint(reuse=None):
        handed.append(None if reuse is None else reuse.steps_done)
        return real(reuse)

    monkeypatch.setattr(engine, "checkpoint", checkpoint)
    for _ in range(5):
        t.keep(engine)
        engine.step(1)
    assert handed == [None, None, None, 0, 1]  # once full, the oldest goes to the new one
    assert [cp.steps_done for cp in t.entries] == [2, 3, 4]


@pytest.mark.gpu
def test_a_full_gpu_timeline_allocates_nothing_and_rewinds_exactly():
    import pycuda.driver as cuda

    from galaxyview.engines.gpu.engine import GPUEngine

    e = GPUEngine(Params(theta=0.75, dt=1 / 64, eps=0.05))
    e.load(plummer_sphere(200_000, np.random.default_rng(4)))
    try:
        t, kept, free = Timeline(capacity=3, every=1), {}, []
        for i in range(8):
            t.keep(e)
            kept[e.steps_done] = e.state()
            with e.activate():
                free.append(cuda.mem_get_info()[0])
            e.step(1)
        assert free[2] == free[-1]  # full after three: the later ones reuse the oldest's memory
        for index in range(3):
            cp = t.rewind(e, index)
            s = kept[cp.steps_done]
            back = e.state()
            assert np.array_equal(back.pos, s.pos) and np.array_equal(back.vel, s.vel)
    finally:
        e.close()
