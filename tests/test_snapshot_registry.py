"""The snapshot formats' registry (snapshots/registry.py): a format added in one class and one
line is read by its suffix and by its content, written, and listed wherever formats are; each
shipped format's sniff takes its own files and no other's."""
import h5py
import numpy as np
import pytest

import galaxyview as gv
from galaxyview.cli.main import main
from galaxyview.errors import SnapshotError
from galaxyview.model.state import ParticleState
from galaxyview.model.units import KPC_CM, MSUN_G, UnitSystem
from galaxyview.snapshots import FORMATS, read, registry
from galaxyview.snapshots.format import Format
from galaxyview.snapshots.snapshot import Snapshot

COLUMNS = "x y z vx vy vz m"


class Csv(Format):
    """A text format: a header line, then one particle a line."""

    name = "csv"
    title = "CSV columns (x y z vx vy vz m)"
    suffixes = (".csv",)
    writable = True

    def sniff(self, path):
        with open(path, "rb") as f:
            return f.read(len(COLUMNS)) == COLUMNS.encode()

    def read(self, path, index=None):
        rows = np.loadtxt(path, skiprows=1, ndmin=2)
        return Snapshot(ParticleState(rows[:, :3], rows[:, 3:6], rows[:, 6]), self.name, path)

    def write(self, path, contents, overwrite=False):
        state = contents.state()
        np.savetxt(path, np.c_[state.pos, state.vel, state.mass], header=COLUMNS, comments="")
        return path


@pytest.fixture
def csv_format():
    FORMATS.add(Csv, before="pynbody")  # the one registry line
    yield
    FORMATS.remove("csv")


def particles(n=20, seed=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.normal(size=(n, 3)) * 0.1, np.full(n, 1.0 / n)


def csv_file(path, n=20):
    pos, vel, mass = particles(n)
    np.savetxt(path, np.c_[pos, vel, mass], header=COLUMNS, comments="")
    return pos


def test_an_added_format_is_listed_everywhere(csv_format, capsys):
    assert "csv" in FORMATS.names() and FORMATS.names().index("csv") < FORMATS.names().index(
        "pynbody")
    assert "*.csv" in registry.open_filter().split(";;")[0]
    assert "CSV columns (x y z vx vy vz m) (*.csv)" in registry.open_filter()
    assert "CSV columns" in registry.accepted_formats()
    assert ".csv for CSV columns" in registry.save_suffixes()
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "{galaxyview,gadget4,tipsy,csv}" in capsys.readouterr().out


def test_an_added_format_is_read_by_suffix_and_by_content(csv_format, tmp_path, capsys):
    by_name = tmp_path / "particles.csv"
    pos = csv_file(by_name)
    snap = gv.load(by_name)
    assert snap.format == "csv" and np.allclose(snap.state.pos, pos, atol=1e-6)
    by_content = tmp_path / "particles.txt"  # no suffix of any format: its first line tells
    by_content.write_bytes(by_name.read_bytes())
    assert gv.load(by_content).format == "csv"
    for source in (by_name, by_content):
        with gv.open(str(source), backend="reference") as sim:
            assert sim.snapshot.format == "csv" and sim.n == 20
            sim.step(1)
        assert main(["run", str(source), "--steps", "2", "--backend", "reference"]) == 0, \
            capsys.readouterr().err


def test_an_added_format_is_written_by_suffix(csv_format, tmp_path, capsys):
    out = tmp_path / "end.csv"
    assert main(["run", "plummer", "--n", "64", "--steps", "1", "--backend", "reference",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    assert out.read_text().startswith(COLUMNS) and read(out).state.n == 64
    with gv.Simulation.from_arrays(*particles(), backend="reference") as sim:
        sim.step(1)
        back = read(sim.save(tmp_path / "api.csv", format="csv")).state
        assert np.allclose(back.pos, sim.positions, atol=1e-6)


def test_a_file_no_format_takes_names_every_format(csv_format, tmp_path):
    other = tmp_path / "notes.csv"
    other.write_text("a, b, c\n1, 2, 3\n")
    with pytest.raises(SnapshotError, match="not a format galaxyview knows") as info:
        gv.load(other)
    assert "CSV columns" in str(info.value) and "Tipsy" in str(info.value)


def test_without_its_registry_line_a_format_is_unknown(tmp_path):
    path = tmp_path / "particles.txt"
    csv_file(path)
    assert "csv" not in FORMATS.names() and "*.csv" not in registry.open_filter()
    with pytest.raises(gv.SceneError):  # a text file no format takes: read as a scene file
        gv.open(str(path), backend="reference")


def swift_file(path):
    with h5py.File(path, "w") as f:
        f.create_group("Header").attrs["NumPart_ThisFile"] = np.array([0, 4, 0, 0, 0, 0, 0])
        units = f.create_group("Units")
        units.attrs["Unit length in cgs (U_L)"] = KPC_CM
        units.attrs["Unit mass in cgs (U_M)"] = MSUN_G * 1e10
        units.attrs["Unit time in cgs (U_t)"] = KPC_CM / 1e5
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"], g["Masses"] = np.eye(4, 3), np.zeros((4, 3)), np.ones(4)


def test_each_format_sniffs_its_own_files_and_no_other(tmp_path):
    files = {"swift": tmp_path / "swift.hdf5"}
    swift_file(files["swift"])
    with gv.Simulation.from_arrays(*particles(), units=UnitSystem(1.0, 1e10),
                                   backend="reference") as sim:
        files["galaxyview"] = sim.save(tmp_path / "own.h5")
        files["gadget-hdf5"] = sim.save(tmp_path / "export.hdf5", format="gadget4")
        files["tipsy"] = sim.save(tmp_path / "snap.tipsy")
    text = tmp_path / "scene.toml"
    text.write_text("[model]\ntype = 'plummer'\n")
    for name, path in files.items():
        takes = [f.name for f in FORMATS.all() if not f.fallback and f.sniff(path)]
        assert takes == [name], path
        assert read(path).format == name
    assert not [f.name for f in FORMATS.all() if not f.fallback and f.sniff(text)]
