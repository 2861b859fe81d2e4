"""The parallel engine on 2 GPUs (one process each): forces, energies and the final state as
one GPU's and the CPU reference's within the tree's error, through steps that move the
particles crossing the domains' faces and new splitters every 4 steps. Needs CUDA, two GPUs,
Open MPI and mpi4py; skipped otherwise."""
import shutil

import numpy as np
import pytest

from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

import mpirun

pytestmark = [pytest.mark.gpu, pytest.mark.mpi]
STEPS = 12


def _gpus() -> int:
    try:
        import pycuda.driver as cuda

        cuda.init()
        return cuda.Device.count()
    except Exception:
        return 0


@pytest.fixture(scope="module", autouse=True)
def _need_two_gpus():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    pytest.importorskip("mpi4py")
    if _gpus() < 2:
        pytest.skip("needs two CUDA devices")


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


def _mpirun(k, n, out, path):
    done = mpirun.script(k, "parallel_run.py", "gpu", n, STEPS, out, timeout=600,
                         GALAXYVIEW_REBALANCE_EVERY="4", GALAXYVIEW_MIGRATE=path)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out)


@pytest.mark.parametrize("n, path", [(20_000, "device"), (400_000, "device"),
                                     (400_000, "host")])
def test_two_gpus_give_the_one_gpu_forces_and_energies(tmp_path, n, path):
    """The leavers device to device (CUDA IPC) and through the host give the same run."""
    from galaxyview.engines.cpu.direct import direct_forces
    from galaxyview.engines.gpu.engine import GPUEngine

    state = plummer_sphere(n, np.random.default_rng(7))
    one = GPUEngine(Params(theta=0.5, dt=1 / 64, eps=0.05))
    one.load(state)
    acc1, _ = one.accelerations()
    e0 = one.energies()
    one.step(STEPS)
    e1 = one.energies()
    pos1 = one.state().pos
    one.close()
    got = _mpirun(2, n, tmp_path / "k2.npz", path)
    err = _rel(got["acc"], acc1)
    assert np.median(err) < 5e-4 and np.percentile(err, 99) < 5e-3
    sample = np.arange(0, n, max(1, n // 2000))
    ref, _ = direct_forces(state.pos.astype(np.float64), state.mass.astype(np.float64), 0.05,
                           1.0, targets=sample)
    err_k, err_1 = _rel(got["acc"][sample], ref), _rel(acc1[sample], ref)
    assert np.median(err_k) < 1.3 * np.median(err_1)
    assert np.percentile(err_k, 99) < 1.5 * np.percentile(err_1, 99)
    assert got["e0"].sum() == pytest.approx(e0.total, rel=1e-4)
    assert got["e1"].sum() == pytest.approx(e1.total, rel=1e-4)
    assert abs(got["e1"].sum() - got["e0"].sum()) < 1e-3 * abs(got["e0"].sum())
    assert int(got["steps"]) == STEPS and (got["ms"] >= 0).all()
    # particles crossed the domains' faces each step and moved rank (migrate.py), every one
    # once: the gathered state is the one GPU's
    assert got["moved"] > 0 and got["device_path"] == (path == "device")
    assert np.percentile(np.linalg.norm(got["pos"] - pos1, axis=1), 99) < 1e-4


def test_more_gpus_than_present_is_refused_before_starting(tmp_path):
    k = _gpus() + 1
    done = mpirun.galaxyview("run", "plummer", "--n", "4096", "--steps", "1", "--gpus", k)
    assert done.returncode == 2
    assert f"--gpus {k}" in done.stderr and "no CUDA device" in done.stderr
