"""The parallel engine on 2 GPUs (one process each): forces, energies and the final state as
one GPU's and the CPU reference's within the tree's error, through steps that move the
particles crossing the domains' faces and new splitters every 4 steps. On a host with one
GPU the processes share it (GALAXYVIEW_RANKS_PER_GPU): the same code paths, CUDA IPC between
processes on one device. Needs CUDA, Open MPI and mpi4py; skipped otherwise."""
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
def _need_gpus():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun (Open MPI) is not installed")
    pytest.importorskip("mpi4py")
    if _gpus() < 1:
        pytest.skip("needs a CUDA device")


def _per_gpu(k: int) -> str:
    """Processes a GPU for k processes over the host's GPUs (all on one where one is
    present)."""
    return str(-(-k // min(k, _gpus())))


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


def _mpirun(k, n, out, path, walk="apart", export="beside", *more):
    done = mpirun.script(k, "parallel_run.py", "gpu", n, STEPS, out, *more, timeout=600,
                         GALAXYVIEW_REBALANCE_EVERY="4", GALAXYVIEW_PEERS=path,
                         GALAXYVIEW_RANKS_PER_GPU=_per_gpu(k), GALAXYVIEW_LET_WALK=walk,
                         GALAXYVIEW_LET_EXPORT=export)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out)


@pytest.mark.parametrize("n, path, k", [(20_000, "device", 2), (400_000, "device", 2),
                                        (400_000, "host", 2), (400_000, "device", 4),
                                        (800_000, "device", 8)])
def test_two_gpus_give_the_one_gpu_forces_and_energies(tmp_path, n, path, k):
    """The leavers and the LETs device to device (CUDA IPC) and through the host give the
    same run; and so do 4 processes on 2 GPUs (2 a GPU: 4 domains, 3 LETs each) and 8 on 4
    (two a GPU: CUDA IPC within a device and across devices)."""
    if k == 8 and _gpus() < 4:
        pytest.skip("8 processes need a host of 4 GPUs or more (two a GPU)")
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
    got = _mpirun(k, n, tmp_path / f"k{k}.npz", path)
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
    # the first step made new splitters (by the ranks' measured interactions), not the 4th
    assert got["first_cuts"] > 0
    counts = got["rank_interactions"]  # each rank's, adding up to the step's
    assert len(counts) == k and (counts > 0).all()
    assert counts.sum() == got["step_interactions"]
    assert got["balance"][3] == pytest.approx(counts.max() / counts.mean())
    # the LETs came device to device (copied from the other rank's export) or through MPI
    peer_copy, upload, particles_in = got["let_in"]
    assert particles_in > 0 and upload > 0
    assert (peer_copy > 0) == (path == "device")
    assert np.percentile(np.linalg.norm(got["pos"] - pos1, axis=1), 99) < 1e-4


@pytest.mark.parametrize("k, path", [(2, "device"), (4, "device"), (2, "host")])
def test_the_export_beside_the_walk_gives_the_same_run(tmp_path, k, path):
    """GALAXYVIEW_LET_EXPORT=beside (the default: the local walk starts once the tree is
    built, some of its blocks held back for the export queued beside it, then joining the
    walk; the LET walk behind them on the export stream) gives the run of the export before
    the walk bit for bit: the same forces, interactions (local and LET apart) and final
    state, on 2 and 4 domains, the LETs device to device and through the host."""
    got = {e: _mpirun(k, 400_000, tmp_path / f"{e}.npz", path, export=e)
           for e in ("before", "beside")}
    beside, before = got["beside"], got["before"]
    assert np.array_equal(beside["acc"], before["acc"])
    assert np.array_equal(beside["acc1"], before["acc1"])
    assert np.array_equal(beside["rank_interactions"], before["rank_interactions"])
    assert beside["rank_interactions"].min() > 400_000 / k * 100
    assert np.array_equal(beside["let_pp"], before["let_pp"])  # the LET walks' share
    assert 0 < beside["let_pp"][1] < beside["let_pp"][0]
    assert np.array_equal(beside["pos"], before["pos"])
    assert beside["let_in"][2] == before["let_in"][2] > 0


def test_a_tree_rebuilt_mid_run_exports_its_lets_after_the_walk(tmp_path):
    """When a rank's tree outgrows its arrays (the cells cut to an eighth between two steps),
    the build is made again in grown arrays and the LETs are exported after the walk, against
    the domains' bounding boxes: the export beside the walk and before it take that path
    alike (bit for bit), and the run stays the plain run's within the tree's error."""
    got = {e: _mpirun(2, 400_000, tmp_path / f"{e}.npz", "device", "apart", e, "shrink")
           for e in ("before", "beside")}
    plain = _mpirun(2, 400_000, tmp_path / "plain.npz", "device")
    beside, before = got["beside"], got["before"]
    assert beside["builds"] > plain["builds"] > 0  # built again after the cut
    assert beside["builds"] == before["builds"]
    assert np.array_equal(beside["acc1"], before["acc1"])
    assert np.array_equal(beside["pos"], before["pos"])
    err = _rel(beside["acc1"], plain["acc1"])
    assert np.median(err) < 1e-4 and np.percentile(err, 99) < 2e-3
    assert np.percentile(np.linalg.norm(beside["pos"] - plain["pos"], axis=1), 99) < 1e-5


@pytest.mark.parametrize("k", [2, 4])
def test_one_walk_of_the_tree_and_the_lets_is_the_two_walks(tmp_path, k):
    """GALAXYVIEW_LET_WALK=one (the local tree and the imported LETs walked together,
    walk_roots) makes the same interactions as the local and LET walks apart, on 2 and on 4
    domains (3 LETs each), and the same run to float32 rounding."""
    got = {w: _mpirun(k, 400_000, tmp_path / f"{w}.npz", "device", walk=w)
           for w in ("apart", "one")}
    one, apart = got["one"], got["apart"]
    assert np.array_equal(one["interactions"], apart["interactions"])
    assert apart["interactions"].min() > 400_000 * 100
    err = _rel(one["acc"], apart["acc"])
    assert np.median(err) < 2e-6 and err.max() < 1e-3
    assert one["e1"].sum() == pytest.approx(apart["e1"].sum(), rel=1e-6)
    assert np.percentile(np.linalg.norm(one["pos"] - apart["pos"], axis=1), 99) < 1e-5
    assert one["let_in"][2] == apart["let_in"][2] > 0  # the same LETs came


def test_two_gpus_sum_their_light_on_one_gpu(tmp_path):
    """engine.light(view) on 2 GPUs: each splats its particles on its device; the images are
    summed on rank 0's GPU (the other's read through CUDA IPC) and equal the host splat of the
    whole state within the CUDA splat's tolerance, and the sum through the host (an MPI
    Reduce) to float rounding; offscreen frames gather no particles and take the sum from
    rank 0's GPU into their texture without the host."""
    got = {}
    for path in ("device", "host"):
        done = mpirun.script(2, "light_run.py", "gpu", 20000, tmp_path / f"{path}.npz",
                             timeout=300, GALAXYVIEW_PEERS=path,
                             GALAXYVIEW_RANKS_PER_GPU=_per_gpu(2))
        assert done.returncode == 0, done.stderr[-3000:]
        got[path] = mpirun.last_json(done.stdout)
        assert got[path]["peer_path"] == path
        assert len(got[path]["errors"]) == 10
        for name, (err, scale, _) in got[path]["errors"].items():
            assert scale > 1 and err < 3e-3, (path, name)  # the CUDA splat against the host's
        err, _, distinct, sampled, in_made = got[path]["density"]  # made on the devices
        assert err < 1e-4 and distinct > 20 and 500 <= sampled <= 2000 and in_made
        assert got[path]["density_frames"] == 0
        assert (got[path]["at_attach"], got[path]["first_frame"],
                got[path]["later_frames"]) == (0, 0, 0)
        # a sample of the state from the ranks' rows: the whole state's rows at its ids
        count, ascending, equal = got[path]["sampled"]
        assert 500 <= count <= 2000 and ascending and equal
        assert got[path]["com_err"] < 1e-5  # a Selection's centre of mass, summed over the ranks
        assert max(got[path]["fit_err"]) < 0.05  # framed on the sample as on the whole state
        for count, err in got[path]["ranges"].values():  # the colour maps' ends, sampled
            assert 1000 <= count <= 4000 and err < 0.1
        assert all(lit > 0.05 for lit in got[path]["lit"])
        # frames: the sum copied into the light texture on rank 0's GPU (either path), the
        # same frame as through the host's upload (rgba16f there: a level or two)
        assert got[path]["on_device"]
        mean, worst = got[path]["frame_diff"]
        assert mean < 0.05 and worst <= 3
    device, host = np.load(tmp_path / "device.npz"), np.load(tmp_path / "host.npz")
    assert sorted(device.files) == sorted(host.files) == sorted(got["device"]["errors"])
    for name in device.files:  # (float atomics: the splats' sums in another order)
        scale = float(host[name].max())
        np.testing.assert_allclose(device[name], host[name], rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("k, n, scene", [(2, 300_000, "mw-andromeda"), (4, 1_000_000, "plummer")])
def test_the_density_colouring_over_gpus_is_the_whole_sets(k, n, scene):
    """Each rank's particles' density on its device (kernels/parallel_density.cu), the
    domains' end cells through MPI, equals key_density of the whole gathered state (4
    domains: 2 on each GPU); kept until the next step. After a step no particle strays out
    of its domain: the migration sent each where the step's drift took it."""
    done = mpirun.script(k, "density_run.py", "gpu", n, scene, 3, timeout=300,
                         GALAXYVIEW_RANKS_PER_GPU=_per_gpu(k))
    assert done.returncode == 0, done.stderr[-3000:]
    got = mpirun.last_json(done.stdout)
    assert got["max_err"] < 1e-4 and got["off"] == 0, got  # (float32 log10)
    assert got["distinct"] > 1000 and got["spread"] > 2
    assert got["same_again"] and got["renewed"]
    assert got["strays"] == 0 and got["came"] == 0, got


def test_more_gpus_than_present_is_refused_before_starting(tmp_path):
    k = _gpus() + 1
    done = mpirun.galaxyview("run", "plummer", "--n", "4096", "--steps", "1", "--gpus", k)
    assert done.returncode == 2
    assert f"--gpus {k}" in done.stderr and "no CUDA device" in done.stderr
