"""`galaxyview bench BENCH`: each subcommand's options, its handler, its errors; plain `bench`
and the old mode flags (cli/bench.py)."""
import json
import re
import subprocess
import shutil
import sys

import pytest

import mpirun
from galaxyview.cli import bench
from galaxyview.cli.main import main

BACKEND = ["--backend", "--threads", "--device"]
OWN = {  # each bench's options, all of them
    ("engine",): ["--n", "--theta", "--steps", "--warmup", "--scene", *BACKEND, "--procs",
                  "--gpus", "--json"],
    ("cpu",): ["--n", "--theta", "--steps", "--sample", "--threads", "--json"],
    ("hermite",): ["--n", "--device", "--json"],
    ("rings",): ["--scene", "--n", "--steps", "--warmup", "--rebound-steps", "--rebound-max",
                 *BACKEND, "--json"],
    ("hierarchical", "solution"): ["--scene", "--n", "--theta", "--until", "--dt-max", "--eta",
                                   "--dt", "--refit", "--device", "--json"],
    ("hierarchical", "mac"): ["--scene", "--n", "--theta", "--alpha", "--steps", "--warmup",
                              "--device", "--json"],
    ("hierarchical", "equilibrium"): ["--scene", "--n", "--theta", "--until", "--dt-max",
                                      "--eta", "--device", "--json"],
    ("gpu-engine",): ["--n", "--theta", "--steps", "--cpu-error", "--selfcheck", "--json"],
    ("let",): ["--n", "--hold", "--theta", "--json"],
    ("domains",): ["--n", "--domains", "--theta", "--scene", "--repeats", "--no-check", "--snap",
                   "--group-parts", "--json"],
    ("render",): ["--scene", "--n", "--theta", "--render-n", "--frames", "--size", "--sweep",
                  "--png", "--png-steps", "--json"],
    ("movie",): ["--n", "--frames", "--size", "--theta", "--presets", "--record-presets",
                 "--out", *BACKEND, "--json"],
    ("mpi-wait",): ["--loops"],
}
GPU_ONLY = [("hermite",), ("hierarchical", "solution"), ("hierarchical", "mac"),
            ("hierarchical", "equilibrium"), ("gpu-engine",), ("let",), ("domains",),
            ("render",)]


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse: --help, errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_bench_help_lists_every_bench(capsys):
    code, out, _ = run_cli(capsys, "bench", "--help")
    assert code == 0
    for name in {b[0] for b in OWN}:
        assert re.search(rf"^\s+{name}\b", out, re.M), name
    assert {b[0] for b in OWN} == set(bench.NAMES)


@pytest.mark.parametrize("which", list(OWN), ids=" ".join)
def test_each_bench_help_lists_only_its_options(capsys, which):
    code, out, _ = run_cli(capsys, "bench", *which, "--help")
    assert code == 0
    assert out.startswith(f"usage: galaxyview bench {' '.join(which)} ")
    options = out[out.index("\noptions:"):]
    listed = re.findall(r"^  (?:-\w, )?(--[\w-]+)", options, re.M)
    assert sorted(set(listed) - {"--help"}) == sorted(OWN[which])


@pytest.mark.parametrize("argv, words", [
    (["cpu", "--backend", "cpu"], ["galaxyview bench cpu: error: unrecognized arguments: "
                                   "--backend cpu"]),
    (["hermite", "--theta", "0.5"], ["galaxyview bench hermite: error: unrecognized", "--theta"]),
    (["hierarchical", "mac", "--refit", "0.1"], ["galaxyview bench hierarchical mac: error: "
                                                 "unrecognized arguments: --refit"]),
    (["engine", "--sample", "64"], ["galaxyview bench engine: error: unrecognized", "--sample"]),
    (["rings", "--procs", "2"], ["galaxyview bench rings: error: unrecognized", "--procs"]),
    (["cpu", "--n", "0"], ["galaxyview bench cpu: error: argument --n", "must be >= 1"]),
    (["hierarchical"], ["galaxyview bench hierarchical: error:", "MODE"]),
    (["movie"], ["galaxyview bench movie: error:", "scene"]),
])
def test_wrong_options_are_errors_naming_the_bench(capsys, argv, words):
    code, _, err = run_cli(capsys, "bench", *argv)
    assert code == 2
    for word in words:
        assert word in err, err
    assert "Traceback" not in err


def test_bench_engine_runs_on_the_cpu(capsys):
    code, out, err = run_cli(capsys, "bench", "engine", "--backend", "reference", "--n", "2048",
                             "--theta", "0.75", "--steps", "1", "--warmup", "0", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["backend"] == "reference" and result["steps"] == 1
    (row,) = result["rows"]
    assert row["n"] == 2048 and row["theta"] == 0.75 and row["step_ms"] > 0
    assert "note" not in err


def test_plain_bench_is_bench_engine(capsys):
    code, out, err = run_cli(capsys, "bench", "--backend", "reference", "--n", "1024",
                             "--theta", "0.6", "--steps", "1", "--warmup", "0")
    assert code == 0, err
    assert "Plummer, eps 0.05, dt 1/16, medians of 1 steps after 0 warm-up" in out
    assert any(line.split()[:2] == ["1024", "0.60"] for line in out.splitlines())
    assert "note" not in err  # the engine table is what plain bench is


@pytest.mark.parametrize("old, new", [
    (["--compare", "--backend", "cpu", "--n", "2048"], ["cpu", "--n", "2048"]),
    (["--n", "4096", "--compare"], ["cpu", "--n", "4096"]),
    (["--hermite", "--backend", "gpu", "--json"], ["hermite", "--json"]),
    (["--hierarchical", "mac", "--alpha", "0.01"], ["hierarchical", "mac", "--alpha", "0.01"]),
    (["--hierarchical=solution", "--scene", "plummer"], ["hierarchical", "solution", "--scene",
                                                         "plummer"]),
    (["--scene", "saturn-a-ring", "--n", "600"], ["rings", "--scene", "saturn-a-ring", "--n",
                                                  "600"]),
    (["--scene=ring-equilibrium"], ["rings", "--scene", "ring-equilibrium"]),
])
def test_old_mode_flags_choose_their_bench_with_a_note(capsys, old, new):
    assert bench.legacy(["bench", *old]) == ["bench", *new]
    err = capsys.readouterr().err
    assert f"galaxyview: note: this is 'galaxyview bench {' '.join(new)}'" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("argv", [
    ["bench"], ["bench", "--n", "2048", "--json"], ["bench", "--scene", "mw-andromeda"],
    ["bench", "--scene", "no-such-scene"],  # (bench engine says what is wrong with it)
])
def test_plain_bench_and_a_galaxy_scene_are_bench_engine_without_a_note(capsys, argv):
    assert bench.legacy(argv) == ["bench", "engine", *argv[1:]]
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv", [["bench", "cpu", "--n", "5"], ["bench", "--help"],
                                  ["run", "--compare"]])
def test_subcommands_and_other_commands_are_left_alone(capsys, argv):
    assert bench.legacy(argv) == argv
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, words", [
    (["--compare", "--backend", "gpu"], ["bench --compare times the CPU engines",
                                         "galaxyview bench cpu"]),
    (["--hermite", "--compare"], ["one bench at a time", "galaxyview bench --help"]),
    (["--hierarchical"], ["name solution, mac or equilibrium"]),
    (["--scene", "plummer", "--rebound-steps", "2"], ["galaxyview bench engine: error: "
                                                      "unrecognized arguments: --rebound-steps"]),
])
def test_old_forms_that_cannot_work_say_which_bench(capsys, argv, words):
    code, _, err = run_cli(capsys, "bench", *argv)
    assert code == 2
    for word in words:
        assert word in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("which", GPU_ONLY, ids=" ".join)
def test_gpu_only_benches_without_a_gpu_say_so(capsys, monkeypatch, which):
    import galaxyview.engines

    monkeypatch.setattr(galaxyview.engines, "gpu_unavailable_reason",
                        lambda device=0: f"no CUDA device {device} here")
    device = ["--device", "1"] if "--device" in OWN[which] else []
    code, out, err = run_cli(capsys, "bench", *which, *device)
    assert code == 2 and out == ""
    number = 1 if device else 0
    assert err == (f"galaxyview: error: bench {' '.join(which)} needs a CUDA GPU: no CUDA "
                   f"device {number} here\n")


def test_a_ring_scene_is_refused_by_bench_engine_and_a_galaxy_by_bench_rings(capsys):
    code, _, err = run_cli(capsys, "bench", "engine", "--scene", "saturn-a-ring")
    assert code == 2 and "galaxyview bench rings --scene saturn-a-ring" in err
    code, _, err = run_cli(capsys, "bench", "rings", "--scene", "mw-andromeda")
    assert code == 2 and "galaxyview bench engine --scene mw-andromeda" in err


@pytest.mark.slow
def test_bench_compare_still_runs_as_bench_cpu(capsys):
    """The old form runs the CPU engines' comparison, saying which bench it is now."""
    pytest.importorskip("pytreegrav")  # (the bench extra)
    code, out, err = run_cli(capsys, "bench", "--backend", "cpu", "--compare", "--n", "2048",
                             "--theta", "0.75", "--steps", "1", "--sample", "64", "--json")
    assert code == 0, err
    assert "galaxyview: note: this is 'galaxyview bench cpu --n 2048" in err
    (row,) = json.loads(out)["rows"]
    assert row["n"] == 2048 and row["theta"] == 0.75
    assert row["cpu_ms"] > 0 and row["reference_ms"] > 0 and 0 < row["error"] < 1e-2


@pytest.mark.slow
def test_bench_movie_json_is_the_report_and_its_lines_go_to_stderr(capsys, tmp_path):
    """A tool bench (bench/movie.py main(args, out)) on the CPU engine: its lines on stderr,
    its figures as JSON on stdout, bench.json in --out."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed")
    code, out, err = run_cli(capsys, "bench", "movie", "plummer", "--n", "500", "--frames", "2",
                             "--size", "64x48", "--presets", "veryfast", "--record-presets",
                             "veryfast", "--backend", "reference", "--out", str(tmp_path),
                             "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["n"] == 500 and report["frames"] == 2 and report["size"] == [64, 48]
    assert [(r["preset"], r["overlap"]) for r in report["records"]] == [
        ("veryfast", True), ("veryfast", False)]
    assert report["stages"]["encode_fps"]["veryfast"] > 0
    assert "plummer: N = 500" in err and "best:" in err
    assert json.loads((tmp_path / "bench.json").read_text())["n"] == 500


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun (Open MPI) is not installed")
def test_bench_mpi_wait_runs_on_every_rank():
    """Under mpirun every rank runs mpi-wait's collectives (not rank 0 alone, the others
    serving an engine), and rank 0 prints a line a wait."""
    from galaxyview.engines.parallel.launch import mpirun_command

    cmd = mpirun_command(2, [sys.executable, "-m", "galaxyview", "bench", "mpi-wait",
                             "--loops", "5"])
    done = subprocess.run(cmd, env=mpirun.env(GALAXYVIEW_THREADS="1"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "last rank" in line]
    assert [line.split("  ")[0].strip() for line in lines] == ["polled", "watched Wait"]
    assert all(line.count(" us over") == 3 for line in lines)


@pytest.mark.parametrize("which", [b for b in bench.BENCHES if b.module], ids=lambda b: b.name)
def test_each_tool_bench_reads_only_its_subcommands_options(which):
    """bench/<module>.py main(args, out), also of the benches that need a GPU: every args.X
    it reads is an option of its subcommand."""
    import argparse
    import ast
    import importlib

    module = importlib.import_module(f"galaxyview.bench.{which.module}")
    tree = ast.parse(open(module.__file__).read())
    main_def = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    first = main_def.args.args[0].arg
    read = {n.attr for n in ast.walk(main_def) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == first}
    p = argparse.ArgumentParser()
    which.options(p)
    assert read and read <= {a.dest for a in p._actions}
