"""An archive append is complete or absent: an interruption at any stage of it (a second Ctrl-C,
a killed process) leaves the snapshots written before, a reader skips an incomplete last
snapshot (also one an older galaxyview left), and a restart from the archive is bit-exact."""
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

import galaxyview as gv
from galaxyview.cli.main import main
from galaxyview.snapshots import archive
from galaxyview.snapshots.archive import Archive, ArchiveWriter

N, DT = 200, 0.01


class Cut(BaseException):
    """Stands for the process ending there (SIGKILL): nothing after it runs."""


def _straight(steps):
    """The exact state of an uninterrupted run after `steps` steps."""
    with gv.open("plummer", backend="cpu", n=N, dt=DT, eps=0.05) as sim:
        sim.step(steps)
        return sim.engine.exact_state()


def _same(a, b):
    assert a.steps == b.steps and a.time == b.time
    for name in ("pos", "vel", "acc", "pot"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _fail_at(monkeypatch, stage, error):
    """Raise `error` inside the next append at `stage`: ("dataset", k) the k-th dataset
    written, "move" the group's move into /snapshots, "flush" the flush at its end."""
    if stage == "move":
        def move(self, *args):
            raise error
        monkeypatch.setattr(h5py.Group, "move", move)
    elif stage == "flush":
        def flush(self):
            raise error
        monkeypatch.setattr(h5py.File, "flush", flush)
    else:
        calls, original = [0], h5py.Group.create_dataset

        def create_dataset(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] == stage[1]:
                raise error
            return original(self, *args, **kwargs)
        monkeypatch.setattr(h5py.Group, "create_dataset", create_dataset)


STAGES = [("dataset", 1), ("dataset", 8), ("dataset", 10), ("dataset", 13), "move", "flush"]


@pytest.mark.parametrize("stage", STAGES, ids=str)
def test_a_cut_append_leaves_the_archive_at_its_previous_snapshot(tmp_path, monkeypatch, caplog,
                                                                 stage):
    """The process ends (nothing cleans up) at each stage of the third append: the archive
    loads, its last snapshot is a complete one and a restart from it is bit-exact."""
    path = tmp_path / "run.h5"
    with gv.open("plummer", backend="cpu", n=N, dt=DT, eps=0.05) as sim:
        writer = ArchiveWriter(path, sim.run_info())
        writer.append(sim.engine.exact_state())
        sim.step(5)
        writer.append(sim.engine.exact_state())
        sim.step(5)
        with monkeypatch.context() as m:
            m.setattr(ArchiveWriter, "_discard", lambda self, name: None,  # a killed process
                      raising=False)
            _fail_at(m, stage, Cut())
            with pytest.raises(Cut):
                writer.append(sim.engine.exact_state())
        writer._file.close()  # what HDF5 had written when the process ended
    # (at the flush the snapshot was whole and moved into place: it is there, and complete)
    kept = 3 if stage == "flush" else 2
    with caplog.at_level(logging.WARNING), Archive(path) as store:
        assert len(store) == kept
        assert [s.steps for s in store] == [0, 5, 10][:kept]
    assert not [r for r in caplog.records if "incomplete" in r.getMessage()]
    with gv.open(path, backend="cpu", index=-1) as sim:
        assert sim.engine.steps_done == 5 * (kept - 1)
        sim.step(15 - sim.engine.steps_done)
        _same(sim.engine.exact_state(), _straight(15))


@pytest.mark.parametrize("stage", STAGES, ids=str)
def test_an_append_stopped_by_ctrl_c_is_removed_and_can_be_made_again(tmp_path, monkeypatch,
                                                                      stage):
    path = tmp_path / "run.h5"
    with gv.open("plummer", backend="cpu", n=N, dt=DT, eps=0.05) as sim:
        writer = ArchiveWriter(path, sim.run_info())
        writer.append(sim.engine.exact_state())
        sim.step(5)
        with monkeypatch.context() as m:
            _fail_at(m, stage, KeyboardInterrupt())
            with pytest.raises(KeyboardInterrupt):
                writer.append(sim.engine.exact_state())
        assert writer.count == 1
        writer.append(sim.engine.exact_state())  # the run's last good state, again
        writer.close()
    with Archive(path) as store:
        assert [s.steps for s in store] == [0, 5]
        assert "writing" not in store._file or not len(store._file["writing"])


def test_a_second_ctrl_c_in_an_append_during_run_keeps_every_snapshot_whole(capsys, tmp_path,
                                                                           monkeypatch):
    """`run --archive`: KeyboardInterrupt in the middle of the step-8 append (a second Ctrl-C
    where signals are not held): the run stops, the message's snapshot is whole, a restart
    from the archive is bit-exact."""
    path = tmp_path / "run.h5"
    monkeypatch.chdir(tmp_path)  # (where a rescue file would go)
    calls, original = [0], h5py.Group.create_dataset
    per_snapshot = 13  # pos vel mass radius component galaxy ids acc pot, exact/ pos vel acc pot

    def create_dataset(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == 2 * per_snapshot + 10:  # the third snapshot (step 8), in exact/
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", create_dataset)
    code = main(["run", "plummer", "--n", str(N), "--dt", str(DT), "--eps", "0.05", "--steps",
                 "20", "--backend", "cpu", "--archive", str(path), "--every", "4"])
    err = capsys.readouterr().err
    monkeypatch.undo()
    assert code == 130, err
    assert "snapshot 2 of" in err and "step 8" in err
    with Archive(path) as store:
        assert [s.steps for s in store] == [0, 4, 8]
    with gv.open(path, backend="cpu", index=-1) as sim:
        sim.step(7)
        _same(sim.engine.exact_state(), _straight(15))


def _old_archive(path, partial: bool):
    """An archive as an older galaxyview wrote it (no complete marks), its last append cut
    before acc, pot and exact/ when `partial`."""
    with gv.open("plummer", backend="cpu", n=N, dt=DT, eps=0.05) as sim:
        writer = ArchiveWriter(path, sim.run_info())
        for _ in range(2):
            writer.append(sim.engine.exact_state())
            sim.step(5)
        writer.close()
        state = sim.engine.exact_state()
    with h5py.File(path, "a") as f:
        del f.attrs["complete_marks"]
        for g in f["snapshots"].values():
            del g.attrs["complete"]
        if partial:
            g = f["snapshots"].create_group("000002")
            g.attrs.update(time=state.time, steps=state.steps, kinetic=1.0, potential=-1.0,
                           params=f["snapshots/000001"].attrs["params"])
            for key in ("pos", "vel", "mass", "radius", "component", "galaxy", "ids"):
                g.create_dataset(key, data=getattr(state.state, key, None)
                                 if key != "ids" else np.arange(N, dtype=np.uint64))


def test_an_older_archive_loads_and_its_cut_last_snapshot_is_skipped(tmp_path, caplog):
    whole, cut = tmp_path / "whole.h5", tmp_path / "cut.h5"
    _old_archive(whole, partial=False)
    _old_archive(cut, partial=True)
    with caplog.at_level(logging.WARNING), Archive(whole) as store:
        assert [s.steps for s in store] == [0, 5]
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger=archive.__name__), Archive(cut) as store:
        assert [s.steps for s in store] == [0, 5]
    assert any("000002" in r.getMessage() and "incomplete" in r.getMessage()
               for r in caplog.records)
    with gv.open(cut, backend="cpu", index=-1) as sim:  # restarts from the last whole one
        assert sim.engine.steps_done == 5
        sim.step(10)
        _same(sim.engine.exact_state(), _straight(15))


def test_a_new_snapshot_without_its_mark_is_skipped(tmp_path, caplog):
    path = tmp_path / "run.h5"
    _old_archive(path, partial=False)
    with h5py.File(path, "a") as f:
        f.attrs["complete_marks"] = True
        f["snapshots/000000"].attrs["complete"] = True
    with caplog.at_level(logging.WARNING, logger=archive.__name__), Archive(path) as store:
        assert len(store) == 1
    assert any("incomplete" in r.getMessage() for r in caplog.records)


KILLED_WRITER = textwrap.dedent("""
    import sys
    import galaxyview as gv
    from galaxyview.snapshots.archive import ArchiveWriter
    with gv.open("plummer", backend="reference", n=20000, dt=0.01) as sim:
        writer = ArchiveWriter(sys.argv[1], sim.run_info())
        exact = sim.engine.exact_state()
        while True:
            writer.append(exact)
            print(writer.count, flush=True)
""")


@pytest.mark.slow
def test_a_writer_killed_in_mid_append_leaves_a_readable_archive(tmp_path):
    """SIGKILL at several moments of a stream of appends: every archive opens, and its
    snapshots are all whole."""
    for k, delay in enumerate((0.0, 0.013, 0.029, 0.047)):
        path = tmp_path / f"killed{k}.h5"
        proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)],
                                stdout=subprocess.PIPE, text=True)
        for _ in range(3):  # a few appends done, then one in hand
            assert proc.stdout.readline(), "the writer ended early"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        with Archive(path) as store:
            assert len(store) >= 3
            for snap in store:
                assert snap.state.n == 20000 and snap.acc is not None


def test_ctrl_c_during_an_append_comes_after_it(tmp_path, monkeypatch):
    """A real SIGINT in the middle of an append waits for its end; then KeyboardInterrupt."""
    path = tmp_path / "run.h5"
    with gv.open("plummer", backend="cpu", n=N, dt=DT, eps=0.05) as sim:
        writer = ArchiveWriter(path, sim.run_info())
        writer.append(sim.engine.exact_state())
        sim.step(5)
        calls, original = [0], h5py.Group.create_dataset

        def create_dataset(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] == 3:
                signal.raise_signal(signal.SIGINT)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(h5py.Group, "create_dataset", create_dataset)
        with pytest.raises(KeyboardInterrupt):
            writer.append(sim.engine.exact_state())
        monkeypatch.undo()
        assert calls[0] == 13 and writer.count == 2
        writer.close()
    with Archive(path) as store:
        assert [s.steps for s in store] == [0, 5]


def test_a_damaged_last_snapshot_is_reported_not_skipped(tmp_path):
    """A last 'snapshot' that is no group at all is damage, not a cut append: reading it
    says so (SnapshotError), opening the archive does not fail."""
    path = tmp_path / "run.h5"
    _old_archive(path, partial=False)
    with h5py.File(path, "a") as f:
        f["snapshots"].create_dataset("000002", data=np.zeros(3))
    with Archive(path) as store:
        assert len(store) == 3
        with pytest.raises(gv.SnapshotError, match="000002"):
            store[-1]
