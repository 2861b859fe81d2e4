"""`galaxyview bench --backend cpu --compare` (bench/cpu.py): says at once what it measures and
about how long, a line per case, and the rows of the table."""
import numpy as np
import pytest

from galaxyview.bench import cpu as bench_cpu


def test_estimate_grows_with_the_work():
    c = bench_cpu.PTG_COMPILE_S  # once, whatever the sizes
    small = bench_cpu.estimate_s([16384], [0.5], 5, 1024)
    assert c < small
    assert bench_cpu.estimate_s([16384, 262144], [0.5, 0.75], 5, 1024) - c > 10 * (small - c)
    assert bench_cpu.estimate_s([16384], [0.5], 5, 1024, reference=False) < small


def test_a_busy_machine_is_named(monkeypatch):
    monkeypatch.setattr(bench_cpu.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bench_cpu.os, "getloadavg", lambda: (5.3, 5.0, 4.0))
    assert bench_cpu._busy() == "; the machine is busy (load 5.3 on 2 CPUs): longer"
    monkeypatch.setattr(bench_cpu.os, "getloadavg", lambda: (0.4, 0.5, 0.5))
    assert bench_cpu._busy() == ""


def test_at_error_interpolates_in_log_log():
    curve = [(0.4, 1e-4, 400.0), (0.6, 4e-4, 100.0)]
    theta, ms = bench_cpu.at_error(curve, 2e-4)
    assert theta == pytest.approx(0.5) and ms == pytest.approx(200.0)
    assert bench_cpu.at_error(curve, 1e-3) == (None, None)


@pytest.mark.slow
def test_compare_says_what_it_does_then_each_case(capsys):
    pytest.importorskip("pytreegrav")
    done = []
    rows = bench_cpu.compare([3000], [0.6, 0.9], steps=1, sample=64, progress=done.append)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("comparing the cpu and reference engines and pytreegrav")
    assert "N = 3000, theta 0.6, 0.9" in err[0] and "about" in err[0]
    assert any(line.startswith("pytreegrav: compiled in") for line in err)
    cases = [line for line in err if line.startswith("N 3000 theta")]
    assert len(cases) == 2 and done == [1, 1]
    for row in rows:
        assert row.n == 3000 and 0 < row.error < 0.05 and row.cpu_ms > 0 and row.reference_ms > 0
        # pytreegrav's error brackets the engine's: its time is read off at that error
        assert row.pytreegrav_ms > 0 and 0.2 <= row.pytreegrav_theta <= 1.2
        errors = [e for _, e, _ in row.pytreegrav_curve]
        assert min(errors) <= row.error <= max(errors)
    assert rows[0].error < rows[1].error  # a larger opening angle, a larger error
    # about two pytreegrav angles per theta, not a fixed sweep of nine
    assert len(rows[0].pytreegrav_curve) <= 5
    assert np.isfinite([r.vs_reference for r in rows]).all()
