"""Archives and long runs: bit-identical restarts on the CPU engine, `run --archive`, the last
good state after Ctrl-C or a NaN, a full disk, strict JSON."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import galaxyview as gv
from galaxyview.cli.main import main
from galaxyview.engines import modules
from galaxyview.engines.integrators.leapfrog_cpu import Leapfrog
from galaxyview.errors import EngineError
from galaxyview.snapshots import read

CPU = ("--backend", "cpu")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_restart_is_bit_identical_on_the_cpu(tmp_path):
    """200 steps straight equal 100 steps, a snapshot, a restart from it and 100 steps."""
    with gv.open("plummer", backend="cpu", n=300, dt=0.01, eps=0.05) as sim:
        sim.step(100)
        sim.save(tmp_path / "half.h5")
        sim.step(100)
        straight = sim.engine.exact_state()
    with gv.open(tmp_path / "half.h5", backend="cpu") as sim:
        assert sim.engine.steps_done == 100 and sim.params.dt == 0.01
        sim.step(100)
        again = sim.engine.exact_state()
    for name in ("pos", "vel", "acc", "pot"):
        assert getattr(again, name).dtype == np.float64
        assert np.array_equal(getattr(again, name), getattr(straight, name)), name
    assert again.time == straight.time and again.steps == 200


def test_changed_softening_recomputes_the_stored_forces(tmp_path):
    with gv.open("plummer", backend="cpu", n=200, dt=0.01, eps=0.05) as sim:
        sim.step(3)
        sim.save(tmp_path / "s.h5")
        acc_old = sim.engine.accelerations()[0]
    with gv.open(tmp_path / "s.h5", backend="cpu", eps=0.2) as sim:
        acc_new = sim.engine.accelerations()[0]
        assert sim.params.eps == 0.2
    assert not np.allclose(acc_new, acc_old)


def test_run_archive_then_continue_from_it(capsys, tmp_path):
    arc = tmp_path / "run.h5"
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "256", "--steps", "12", "--dt",
                           "0.02", *CPU, "--archive", str(arc), "--every", "4")
    assert code == 0, err
    store = read(arc, index=0)
    assert store.count == 4 and store.archive is not None  # steps 0, 4, 8, 12
    assert [s.steps for s in store.archive] == [0, 4, 8, 12]
    assert np.allclose(store.archive.times(), [0, 0.08, 0.16, 0.24])
    store.close()
    # continuing from snapshot 2 (step 8) for 4 steps gives snapshot 3 bit for bit
    out = tmp_path / "cont.h5"
    code, _, err = run_cli(capsys, "run", str(arc), "--index", "2", "--steps", "4", *CPU,
                           "--out", str(out))
    assert code == 0, err
    a, b = read(arc).exact, read(out).exact
    assert np.array_equal(a.pos, b.pos) and np.array_equal(a.vel, b.vel)
    # run continues an archive from its last snapshot
    code, out, err = run_cli(capsys, "run", str(arc), "--steps", "1", *CPU, "--json")
    assert code == 0 and json.loads(out)["t_start"] == pytest.approx(0.24)


class NanAfterFive(Leapfrog):
    def step(self, dt):
        advanced = super().step(dt)
        if self.system._engine.steps_done >= 5:
            self.system.vel[0, 0] = np.nan
        return advanced


@pytest.fixture
def nan_integrator():
    modules.INTEGRATORS.add("nan-after-five", cpu=NanAfterFive)
    yield "nan-after-five"
    modules.INTEGRATORS.remove("nan-after-five")


def test_a_nan_keeps_the_last_good_state_and_says_where(capsys, tmp_path, nan_integrator):
    arc = tmp_path / "run.h5"
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "128", "--steps", "50", *CPU,
                           "--integrator", nan_integrator, "--archive", str(arc), "--every",
                           "100")
    assert code == 1
    assert "stopped after 5 of 50 steps" in err and "NaN" in err
    assert str(arc) in err and "snapshot 1" in err
    last = read(arc)
    assert last.exact.steps == 5 and np.isfinite(last.exact.vel).all()
    # without --archive, --out takes the last good state
    out = tmp_path / "last.h5"
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "128", "--steps", "50", *CPU,
                           "--integrator", nan_integrator, "--out", str(out))
    assert code == 1 and str(out) in err
    assert read(out).exact.steps == 5


@pytest.mark.slow
def test_sigint_during_run_writes_a_readable_last_state(tmp_path):
    arc = tmp_path / "long.h5"
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen([sys.executable, "-m", "galaxyview", "run", "plummer", "--n", "500",
                             "--steps", "100000", *CPU, "--archive", str(arc), "--every",
                             "100000"], stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not arc.exists() and time.monotonic() < deadline:  # the first snapshot is written
        time.sleep(0.1)
    assert arc.exists(), "the archive's first snapshot never appeared"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and str(arc) in err
    last = read(arc)
    assert last.count == 2 and last.exact.steps > 0
    last.close()
    with gv.open(arc, backend="cpu", index=-1) as sim:  # restarts from it
        sim.step(1)


def test_preflight_refuses_a_run_that_would_not_fit(capsys, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**6, 10**6 - 5000, 5000))
    arc = tmp_path / "a.h5"
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "1000", "--steps", "10", *CPU,
                           "--archive", str(arc))
    assert code == 2 and "needs about" in err and "5.0 kB free" in err
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_disk(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_gives_a_clear_message_and_no_partial_file(capsys, tiny_disk,
                                                               monkeypatch):
    arc = tiny_disk / "a.h5"
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "2000", "--steps", "4", *CPU,
                           "--archive", str(arc))
    assert code == 2 and "needs about" in err  # the pre-flight check
    assert list(tiny_disk.iterdir()) == []
    # past the check (as when the disk fills during the run): the write itself fails
    monkeypatch.setattr("galaxyview.jobs.checkpoint.check_free_space", lambda *a: None)
    code, _, err = run_cli(capsys, "run", "plummer", "--n", "2000", "--steps", "4", *CPU,
                           "--archive", str(arc))
    assert code == 1 and "the disk is full" in err
    assert list(tiny_disk.iterdir()) == []  # no partial archive, no temporary file


@pytest.mark.filterwarnings("error::RuntimeWarning")  # nothing leaks to the terminal
def test_json_has_no_nan_for_massless_particles(capsys, tmp_path):
    from galaxyview.model.state import ParticleState
    from galaxyview.snapshots.tipsy import save_state

    rng = np.random.default_rng(0)
    path = save_state(tmp_path / "massless.tipsy",
                      ParticleState(rng.normal(size=(50, 3)), rng.normal(size=(50, 3)),
                                    np.zeros(50)))
    code, out, err = run_cli(capsys, "run", str(path), "--steps", "2", *CPU, "--json")
    assert code == 0, err
    summary = json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert summary["rel_energy_error"] is None
    assert "energy is 0" in summary["reasons"]["rel_energy_error"]


def test_counts_in_scientific_notation(capsys):
    code, out, err = run_cli(capsys, "run", "plummer", "--n", "2e2", "--steps", "1", *CPU,
                             "--json")
    assert code == 0 and json.loads(out)["n"] == 200
    with pytest.raises(SystemExit):
        main(["run", "plummer", "--n", "2.5"])
    assert "not a whole number" in capsys.readouterr().err


def test_engine_keeps_last_good_state_on_failure():
    with gv.open("plummer", backend="cpu", n=64, dt=0.01) as sim:
        sim.step(2)
        before = sim.engine.exact_state()
        sim.engine.system.pos[0, 0] = np.nan  # broken from outside: the step refuses it
        with pytest.raises(EngineError):
            sim.step(1)
        assert sim.engine.steps_done == 2 and np.isfinite(before.pos).all()
