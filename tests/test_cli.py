"""The headless commands: run, accuracy, bench, scenes, and how bad values are reported."""
import json
import os
import pty
import subprocess
import sys

import pytest

from galaxyview.cli.main import main
from galaxyview.snapshots.tipsy import load_snapshot


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_help_on_every_command():
    for cmd in ([], ["run"], ["accuracy"], ["bench"], ["scenes"], ["record"], ["view"]):
        proc = subprocess.run([sys.executable, "-m", "galaxyview", *cmd, "--help"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "usage: galaxyview" in proc.stdout


def test_scenes_lists_every_shipped_scene(capsys):
    code, out, _ = run_cli(capsys, "scenes")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    for name in ("plummer", "cold-collapse", "milky-way", "mw-andromeda", "antennae",
                 "bonsai-merger", "minor-mergers"):
        assert name in names
    assert all(len(line.split()) > 2 for line in out.splitlines())  # each has a description


def test_run_json_reports_conservation_and_writes_snapshot(capsys, tmp_path):
    out_file = tmp_path / "end.tipsy"
    code, out, err = run_cli(capsys, "run", "plummer", "--n", "1024", "--steps", "8",
                             "--backend", "cpu", "--theta", "0.6", "--dt", "0.01",
                             "--out", str(out_file), "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["n"] == 1024 and summary["steps"] == 8
    assert summary["theta"] == 0.6 and summary["dt"] == 0.01
    assert summary["t_end"] == pytest.approx(0.08)
    assert 0 < summary["rel_energy_error"] < 1e-3
    assert summary["momentum_drift"] < 1e-3
    assert "CPU engine" in err  # says which engine and why
    state = load_snapshot(out_file)
    assert state.n == 1024 and state.time == pytest.approx(0.08, rel=1e-6)
    # the final state is not the initial one
    code, _, err = run_cli(capsys, "run", str(out_file), "--steps", "1", "--backend", "cpu",
                           "--out", str(out_file))
    assert code == 2 and "exists" in err and "--overwrite" in err


def test_run_continues_from_a_snapshot(capsys, tmp_path):
    first = tmp_path / "a.tipsy"
    assert run_cli(capsys, "run", "plummer", "--n", "512", "--steps", "2", "--backend", "cpu",
                   "--out", str(first))[0] == 0
    code, out, err = run_cli(capsys, "run", str(first), "--steps", "2", "--backend", "cpu",
                             "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["n"] == 512 and summary["t_start"] > 0


@pytest.mark.parametrize("argv, words", [
    (["run", "no-such-scene"], ["unknown scene", "plummer"]),
    (["run", "plummer", "--theta", "0"], ["theta must be in (0, 1.5]"]),
    (["run", "plummer", "--theta", "abc"], ["not a number"]),
    (["run", "plummer", "--dt", "-1"], ["dt must be a positive number"]),
    (["run", "plummer", "--eps", "-0.1"], ["eps"]),
    (["run", "plummer", "--n", "0"], ["must be >= 1"]),
    (["run", "plummer", "--backend", "tpu"], ["invalid choice", "cpu"]),
    (["run", "missing/file.toml"], ["missing/file.toml"]),
    (["bench", "--theta", "2"], ["theta must be in"]),
    (["accuracy", "--plummer", "-5"], ["must be >= 1"]),
])
def test_bad_values_exit_nonzero_with_one_line_reason(capsys, argv, words):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = exc.code
    _, err = capsys.readouterr()
    assert code != 0
    for word in words:
        assert word in err, err
    assert "Traceback" not in err


def test_run_out_refuses_a_missing_folder_before_work(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "plummer", "--backend", "cpu",
                           "--out", str(tmp_path / "nope" / "x.tipsy"))
    assert code == 2 and "does not exist" in err


def test_run_out_refuses_a_name_it_cannot_save_before_work(capsys, monkeypatch, tmp_path):
    import galaxyview.simulation

    def opened(*args, **kwargs):
        raise AssertionError("the scene was opened before --out was checked")

    monkeypatch.setattr(galaxyview.simulation, "open_simulation", opened)
    code, _, err = run_cli(capsys, "run", "plummer", "--backend", "cpu",
                           "--out", str(tmp_path / "final.txt"))
    assert code == 2 and "give a name ending in .h5" in err and "Tipsy" in err
    assert not (tmp_path / "final.txt").exists()


@pytest.mark.slow
def test_open_simulation_reports_the_particles_made(monkeypatch):
    import io
    import sys

    from galaxyview.cli.output import making_bar
    from galaxyview.simulation import open_simulation

    got = []
    sim = open_simulation("plummer", "reference", 1_100_000,
                          progress=lambda k, n: got.append((k, n)))
    assert sum(k for k, _ in got) == sim.engine.n == 1_100_000 and {n for _, n in got} == {
        1_100_000}
    sim.engine.close()

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for least, shown in ((1 << 20, True), (1 << 21, False)):  # small scenes: no bar
        monkeypatch.setattr(sys, "stderr", Terminal())
        with making_bar(least) as update:
            for k, n in got:
                update(k, n)
        text = sys.stderr.getvalue()
        assert ("making the particles" in text and "1.10M/1.10M" in text) == shown, text


def test_gpu_backend_without_gpu_says_why(capsys, monkeypatch):
    import galaxyview.engines as engines

    monkeypatch.setattr(engines, "gpu_unavailable_reason", lambda device=0: "no CUDA device found")
    code, _, err = run_cli(capsys, "run", "plummer", "--backend", "gpu", "--steps", "1")
    assert code == 2 and "no CUDA device found" in err and "--backend cpu" in err
    code, out, err = run_cli(capsys, "run", "plummer", "--n", "256", "--steps", "1", "--json")
    assert code == 0 and "CPU engine (no CUDA device found)" in err


def test_accuracy_errors_grow_with_theta(capsys):
    code, out, err = run_cli(capsys, "accuracy", "--plummer", "2048", "--theta", "0.3", "0.75",
                             "--backend", "cpu", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [r["theta"] for r in rows] == [0.3, 0.75]
    assert rows[0]["p50"] < rows[1]["p50"] and rows[0]["p99"] < rows[1]["p99"]
    assert rows[0]["pp_per_particle"] + rows[0]["pc_per_particle"] > \
        rows[1]["pp_per_particle"] + rows[1]["pc_per_particle"]
    assert all(0 < r["p50"] < 1e-2 for r in rows)


def test_bench_times_a_scene_with_its_parameters(capsys):
    """bench --scene of a galaxy scene: the same table on its particles, its eps and dt."""
    code, out, err = run_cli(capsys, "bench", "--backend", "cpu", "--scene", "mw-andromeda",
                             "--n", "3000", "--theta", "0.6", "--steps", "1", "--warmup", "0")
    assert code == 0, err
    from galaxyview.model.scene import load_scene

    p = load_scene("mw-andromeda").params
    assert f"mw-andromeda, eps {p.eps:g}, dt {p.dt:g}" in out
    row = next(line for line in out.splitlines() if line.split()[:2] == ["3000", "0.60"])
    assert float(row.split()[7]) > 0  # the step's ms (its phases')
    assert float(row.split()[8]) >= float(row.split()[7])  # its wall clock, host time too
    assert "wall" in out.splitlines()[1].split()


@pytest.mark.slow
def test_bench_json_on_a_terminal_is_json_alone(tmp_path):
    """On a terminal (mpirun gives its ranks one) --json prints the JSON and nothing after:
    numba, compiling the CPU engine, would colour its errors through colorama, whose exit
    handler writes a terminal reset to stdout."""
    import colorama  # noqa: F401  (a test dependency: without it there is no reset to fear)

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    proc = subprocess.Popen([sys.executable, "-m", "galaxyview", "bench", "--backend", "cpu",
                             "--n", "2048", "--steps", "1", "--warmup", "1", "--json"],
                            stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # (the terminal closed with the process)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=300) == 0
    out = b"".join(chunks).decode()
    assert out.rstrip().endswith("}")
    assert json.loads(out)["rows"][0]["n"] == 2048


def test_bench_reports_phases_and_rates(capsys):
    code, out, err = run_cli(capsys, "bench", "--backend", "cpu", "--n", "2048", "--theta",
                             "0.75", "--steps", "2", "--warmup", "1", "--json")
    assert code == 0, err
    result = json.loads(out)
    (row,) = result["rows"]
    assert set(row["phases_ms"]) == {"keys_sort", "build", "multipoles", "walk", "integrate"}
    assert all(v > 0 for v in row["phases_ms"].values())
    assert row["step_ms"] == pytest.approx(sum(row["phases_ms"].values()))
    assert row["pp_per_particle"] > 0 and row["pc_per_particle"] > 0
    assert row["walk_tflops"] > 0
    assert row["particles_per_s"] == pytest.approx(2048 / (row["step_ms"] / 1e3))
    assert row["bonsai"] is None  # Bonsai figures exist only for the GPU sizes
    assert row["device_bytes_per_particle"] is None  # a host engine holds no device memory
    # the mean step: of 2 steps, each phase's median is its mean, so the sums agree
    assert row["figures"]["step_mean_ms"] == pytest.approx(row["step_ms"])
    # each step's wall clock holds its phases (timed inside it), and a bit of host time more
    assert row["step_ms"] <= row["figures"]["wall_ms"] < 2 * row["step_ms"] + 50
