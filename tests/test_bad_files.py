"""Bad files and values (issue 41): special files, damaged or lying headers and metadata, values
beyond float32. Each case ends in a GalaxyviewError naming the file (and the dataset or
attribute where known), or a good load."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from galaxyview.errors import GalaxyviewError, SceneError, SnapshotError
from galaxyview.model.scene import load_scene
from galaxyview.resources import scenes_dir
from galaxyview.snapshots import open_source, read


def finishes(call, timeout=60):
    """call() in a thread: (True, its exception or None) when it ends in `timeout` s."""
    box = {}

    def target():
        try:
            call()
            box["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    return "error" in box, box.get("error")


@pytest.mark.parametrize("loader", [open_source, read, load_scene])
def test_a_fifo_is_refused_not_waited_on(tmp_path, loader):
    fifo = tmp_path / "scene.toml"
    os.mkfifo(fifo)
    done, error = finishes(lambda: loader(fifo))
    if not done:  # unblock the reader left waiting, so the test run can end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert done, "reading a FIFO hangs"
    assert isinstance(error, GalaxyviewError) and "FIFO" in str(error) and str(fifo) in str(error)


def _memory_limit(limit=3 << 30):
    """A child's address space bounded: a reader that reads /dev/zero to its end fails there
    with MemoryError instead of taking the machine's memory."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


LOAD = """import sys
from galaxyview.errors import GalaxyviewError
from galaxyview.model.scene import load_scene
from galaxyview.snapshots import open_source, read
try:
    {loader}(sys.argv[1])
except GalaxyviewError as exc:
    print(exc)
"""


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("loader", ["open_source", "read", "load_scene"])
def test_dev_zero_is_refused_without_reading_it(tmp_path, loader):
    r = subprocess.run([sys.executable, "-c", LOAD.format(loader=loader), "/dev/zero"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       preexec_fn=_memory_limit())
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("/dev/zero: a character device, not a regular file")


def test_the_command_line_refuses_dev_zero_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "galaxyview", "run", "/dev/zero", "--steps", "1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       preexec_fn=_memory_limit())
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_a_scene_with_a_byte_order_mark_loads(tmp_path):
    text = (scenes_dir() / "plummer.toml").read_bytes()
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    assert load_scene(path).name == "plummer"


def test_deeply_nested_toml_is_a_scene_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000)
    with pytest.raises(SceneError, match="nested too deep"):
        load_scene(path)


# -- HDF5: lying sizes, damaged values (each a SnapshotError naming the file and object) ------
def _archive(path, n=8):
    from galaxyview.model.exact import ExactState
    from galaxyview.model.params import Params
    from galaxyview.model.state import ParticleState
    from galaxyview.snapshots import archive

    rng = np.random.default_rng(0)
    state = ParticleState(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), np.ones(n), time=0.5)
    exact = ExactState(state, "cpu", "tree", Params(), state.pos.astype(float),
                       state.vel.astype(float), np.zeros((n, 3)), np.zeros(n))
    return archive.save_exact(path, exact, archive.RunInfo("t", scene_toml="[scene]"))


def _gadget4(path, n=5, header_n=None):
    import h5py

    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, header_n or n, 0, 0, 0, 0], np.uint32)
        h.attrs["Time"] = 0.0
        p = f.create_group("Parameters")
        p.attrs["UnitLength_in_cm"] = 3.085678e21
        p.attrs["UnitMass_in_g"] = 1.989e43
        p.attrs["UnitVelocity_in_cm_per_s"] = 1e5
        g = f.create_group("PartType1")
        g["Coordinates"], g["Velocities"], g["Masses"] = np.ones((n, 3)), np.ones((n, 3)), np.ones(n)
    return path


def _read_limited(path, limit=2 << 30):
    """read(path) in a child with a bounded address space: (exit status, what it printed)."""
    code = ("import sys\nfrom galaxyview.errors import GalaxyviewError\n"
            "from galaxyview.snapshots import read\ntry:\n    read(sys.argv[1])\n    print('loaded')\n"
            "except GalaxyviewError as exc:\n    print(exc)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=120, preexec_fn=_memory_limit(limit))
    return r.returncode, r.stdout + r.stderr[-1500:]


def test_a_dataset_declaring_billions_of_particles_is_refused_by_size(tmp_path):
    import h5py

    path = _gadget4(tmp_path / "big.hdf5", header_n=4_000_000_000)
    with h5py.File(path, "r+") as f:  # a shape that promises 4e9 rows the file does not hold
        g = f["PartType1"]
        for key in ("Coordinates", "Velocities"):
            del g[key]
            g.create_dataset(key, shape=(4_000_000_000, 3), dtype="f8")
        del g["Masses"]
    assert path.stat().st_size < 1 << 20
    code, said = _read_limited(path)
    assert code == 0 and said.startswith(f"{path}: dataset /PartType1/Coordinates declares "
                                         "(4000000000, 3) values"), said


def test_a_header_count_beyond_the_datasets_is_refused(tmp_path):
    path = _gadget4(tmp_path / "count.hdf5", header_n=100_000_000)
    with pytest.raises(SnapshotError, match=r"/PartType1/Coordinates has shape \(5, 3\), "
                                            r"expected \(100000000, 3\)"):
        read(path)


def test_an_archive_dataset_beyond_the_file_is_refused(tmp_path):
    import h5py

    path = _archive(tmp_path / "a.h5")
    with h5py.File(path, "r+") as f:
        g = f["snapshots/000000"]
        del g["mass"]
        g.create_dataset("mass", shape=(3_000_000_000,), dtype="f4")
    code, said = _read_limited(path)
    assert code == 0 and "dataset /snapshots/000000/mass declares (3000000000,)" in said, said


@pytest.mark.parametrize("value, words", [
    (0.0, "must be a finite number > 0"), (-2.0, "must be a finite number > 0"),
    (np.nan, "must be a finite number > 0"), ("kpc", "must be a number"),
    (np.ones(2), "holds 2 values, not one number")])
def test_gadget_units_must_be_positive_numbers(tmp_path, value, words):
    import h5py

    path = _gadget4(tmp_path / "u.hdf5")
    with h5py.File(path, "r+") as f:
        f["Parameters"].attrs["UnitLength_in_cm"] = value
    with pytest.raises(SnapshotError) as info:
        read(path)
    assert str(info.value).startswith(f"{path}: attribute 'UnitLength_in_cm' of /Parameters")
    assert words in str(info.value)


@pytest.mark.parametrize("change, words", [
    (lambda g: g.__setitem__("Coordinates", np.ones((5, 2))),
     r"/PartType1/Coordinates has shape \(5, 2\), expected \(5, 3\)"),
    (lambda g: g.__setitem__("Masses", np.array([b"heavy"] * 5)),
     "/PartType1/Masses holds .S5 values, not numbers"),
])
def test_gadget_datasets_of_the_wrong_shape_or_kind(tmp_path, change, words):
    import h5py

    path = _gadget4(tmp_path / "s.hdf5")
    with h5py.File(path, "r+") as f:
        key = "Coordinates" if "Coordinates" in words else "Masses"
        del f["PartType1"][key]
        change(f["PartType1"])
    with pytest.raises(SnapshotError, match=words):
        read(path)


@pytest.mark.parametrize("where, key, value, words", [
    ("snapshots/000000", "params", "[1, 2]", "not a JSON object"),
    ("snapshots/000000", "time", np.nan, "attribute 'time' of /snapshots/000000 = nan"),
    ("run", "length_kpc", -1.0, "attribute 'length_kpc' of /run = -1"),
])
def test_archive_attributes_of_the_wrong_kind(tmp_path, where, key, value, words):
    import h5py

    path = _archive(tmp_path / "a.h5")
    with h5py.File(path, "r+") as f:
        f[where].attrs[key] = value
        if key == "length_kpc":
            f[where].attrs["mass_msun"] = 1e10
    with pytest.raises(SnapshotError) as info:
        read(path)
    assert str(info.value).startswith(str(path)) and words in str(info.value)


def test_archive_scene_text_not_utf8(tmp_path):
    import h5py

    path = _archive(tmp_path / "a.h5")
    with h5py.File(path, "r+") as f:
        del f["run/scene_toml"]
        f["run/scene_toml"] = np.void(b"\xff\xfe[scene]")
    with pytest.raises(SnapshotError, match="/run/scene_toml"):
        read(path)


def test_nan_in_an_archive_exact_array_is_refused_at_load(tmp_path):
    import h5py

    path = _archive(tmp_path / "a.h5")
    with h5py.File(path, "r+") as f:
        f["snapshots/000000/exact/vel"][2, 1] = np.nan
    with pytest.raises(SnapshotError, match=r"exact/vel holds NaN or infinite values \(1 entries, "
                                            r"first at particle 2\).*the file is damaged"):
        read(path)


def test_gadget_binary_mass_block_of_odd_length(tmp_path):
    import struct

    npart = [0, 0, 2, 0, 0, 0]
    header = struct.pack("<6i6d2d2i6I2i4d", *npart, *[0.0] * 6, 0.0, 0.0, 0, 0, *npart, 0, 1,
                         0.0, 0.0, 0.0, 1.0)
    header += b"\0" * (256 - len(header))
    out = b""
    for payload in (header, np.ones((2, 3), "<f4").tobytes(), np.ones((2, 3), "<f4").tobytes(),
                    np.arange(2, dtype="<u4").tobytes(), b"\0" * 9):
        out += struct.pack("<i", len(payload)) + payload + struct.pack("<i", len(payload))
    path = tmp_path / "snap_000"
    path.write_bytes(out)
    with pytest.raises(SnapshotError, match="the mass block holds 9 bytes"):
        read(path)


def test_gadget_hdf5_non_finite_time_is_refused(tmp_path):
    import h5py

    path = _gadget4(tmp_path / "t.hdf5")
    with h5py.File(path, "r+") as f:
        f["Header"].attrs["Time"] = np.inf
    with pytest.raises(SnapshotError, match="attribute 'Time' of /Header = inf"):
        read(path)


@pytest.mark.parametrize("value", ["inf", "nan", "0"])
def test_tipsy_param_units_must_be_finite_and_positive(tmp_path, value):
    from galaxyview.model.params import Params
    from galaxyview.model.state import ParticleState
    from galaxyview.snapshots.tipsy import save_state
    from galaxyview.model.units import UnitSystem

    state = ParticleState(np.eye(3), np.zeros((3, 3)), np.ones(3))
    path = save_state(tmp_path / "s.tipsy", state, Params(), units=UnitSystem(2.0, 1e10))
    param = tmp_path / "s.tipsy.param"
    param.write_text("\n".join(f"dKpcUnit = {value}" if line.startswith("dKpcUnit") else line
                               for line in param.read_text().splitlines()))
    with pytest.raises(SnapshotError, match=f"{param}: dKpcUnit and dMsolUnit must both be "
                                            "given, finite and > 0"):
        read(path)


# -- one rule for values: command line, scene, API, snapshot ----------------------------------
TOO_SMALL = "= 1e-320: is too small: galaxyview computes in float32 (a value other than 0 is at least 1.18e-38)"


def _scene_with(tmp_path, name, value):
    """plummer.toml with [params] `name` set to `value` (theta, dt, eps: all three set there)."""
    lines = (scenes_dir() / "plummer.toml").read_text().splitlines()
    text = "\n".join(f"{name} = {value}" if line.startswith(f"{name} =") else line
                     for line in lines)
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["dt", "eps", "theta"])
def test_a_value_below_float32_is_refused_alike_everywhere(tmp_path, name):
    from galaxyview.cli.common import dt_type, eps_type, theta_type
    from galaxyview.errors import ParameterError
    from galaxyview.model.params import Params
    import argparse

    parse = {"dt": dt_type, "eps": eps_type, "theta": theta_type}[name]
    with pytest.raises(argparse.ArgumentTypeError) as cli:
        parse("1e-320")
    with pytest.raises(ParameterError) as api:
        Params(**{name: 1e-320})
    with pytest.raises(SceneError) as scene:
        load_scene(_scene_with(tmp_path, name, "1e-320"))
    for error in (cli, api, scene):
        assert TOO_SMALL in str(error.value), str(error.value)


def test_a_snapshot_value_below_float32_is_refused_alike(tmp_path):
    from galaxyview.model.params import Params
    from galaxyview.model.state import ParticleState
    from galaxyview.snapshots.tipsy import save_state

    state = ParticleState(np.eye(3), np.zeros((3, 3)), np.ones(3))
    path = save_state(tmp_path / "s.tipsy", state, Params())
    param = tmp_path / "s.tipsy.param"
    param.write_text("\n".join("dDelta = 1e-320" if line.startswith("dDelta") else line
                               for line in param.read_text().splitlines()))
    with pytest.raises(SnapshotError, match=TOO_SMALL.replace("(", r"\(").replace(")", r"\)")):
        read(path)


def test_whole_numbers_beyond_2_53_are_refused_alike(tmp_path):
    import argparse

    from galaxyview.cli.common import count_type, steps_type, whole_number

    words = "is too large (a whole number is at most 2^53)"
    for parse in (count_type, steps_type, whole_number):
        for text in ("9007199254740993", "1e300"):
            if parse is not count_type and text == "1e300":
                continue
            with pytest.raises(argparse.ArgumentTypeError, match=r"at most 2\^53"):
                parse(text)
    with pytest.raises(SceneError) as scene:
        load_scene(_seeded(tmp_path, 2**60))
    assert words in str(scene.value)


def _seeded(tmp_path, seed):
    text = (scenes_dir() / "plummer.toml").read_text().replace("seed = 1", f"seed = {seed}")
    path = tmp_path / "seeded.toml"
    path.write_text(text)
    return path


def test_every_time_below_float32_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "galaxyview", "run", "plummer", "--archive",
                        str(tmp_path / "a.h5"), "--every-time", "1e-320", "--steps", "1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--every-time: 1e-320 is too small" in r.stderr
