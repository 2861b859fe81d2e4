"""Fuzz every snapshot and scene reader: damaged copies of small sound files, each loaded as
`galaxyview run FILE` would load it, in a worker process with a bounded address space.

    python tools/fuzz_readers.py [--cases 100] [--seed 1] [--formats tipsy,scene] [--show 3]

Prints, for each format, how the cases ended: clear error (a GalaxyviewError), good load,
traceback (any other exception), hang (no answer within --timeout s), crash/over-memory (the
worker died, or MemoryError under the address-space limit: a reader allocating far more than
the file's size). tests/test_fuzz_readers.py runs it as a standing check. The loads use
whatever `galaxyview` Python finds (PYTHONPATH=/path/to/a/checkout to fuzz another one).
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections import Counter
from pathlib import Path

FORMATS = ("galaxyview", "archive", "gadget2", "gadget4", "swift", "tipsy", "tipsy-param",
           "scene")
CATEGORIES = ("clear error", "good load", "traceback", "hang", "crash/over-memory")
ALLOWANCE = 384 << 20  # bytes of address space a load may take beyond the worker's own
PER_FILE_BYTE = 64  # ... plus this many bytes for each byte of the file

SCENE = """[scene]
name = "fuzz"
description = "a small Plummer sphere"
seed = 1
n_cpu = 64
n_gpu = 128

[units]
length_kpc = 2.0
mass_1e10msun = 0.5

[params]
theta = 0.75
dt = 0.015625
eps = 0.05
integrator = "leapfrog"

[model]
type = "plummer"
mass = 1.0
radius = 1.0
"""


# -- sound files -------------------------------------------------------------------------------
def _state(n=24, seed=3):
    import numpy as np

    from galaxyview.model.state import ParticleState

    rng = np.random.default_rng(seed)
    return ParticleState(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                         rng.uniform(0.1, 1, n), rng.choice([1, 2, 3], n).astype(np.uint8),
                         rng.integers(0, 2, n), time=0.5, radius=rng.uniform(0, 0.01, n))


def _exact(state, steps):
    import numpy as np

    from galaxyview.model.exact import ExactState
    from galaxyview.model.params import Params

    rng = np.random.default_rng(steps)
    return ExactState(state, "cpu", "tree", Params(dt=0.01, eps=0.05), state.pos.astype(float),
                      state.vel.astype(float), rng.normal(size=(state.n, 3)),
                      rng.normal(size=state.n), steps, {"levels": np.arange(state.n),
                                                        "dt_max": 0.25})


def _archive(path: Path, count: int) -> None:
    from galaxyview.model.units import UnitSystem
    from galaxyview.snapshots import archive

    writer = archive.ArchiveWriter(path, archive.RunInfo("fuzz", "cpu", "cpu", "tree",
                                                         UnitSystem(2.0, 5e9), SCENE))
    state = _state()
    for k in range(count):
        writer.append(_exact(state, k))
    writer.close()


def _gadget2(path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    npart, n = [0, 6, 4, 0, 0, 1], 11
    header = struct.pack("<6i6d2d2i6I2i4d", *npart, 0, 0.05, 0, 0, 0, 0, 0.5, 0.0, 0, 0,
                         *npart, 0, 1, 0.0, 0.0, 0.0, 1.0)
    header += b"\0" * (256 - len(header))
    out = b""
    for payload in (header, rng.normal(size=(n, 3)).astype("<f4").tobytes(),
                    rng.normal(size=(n, 3)).astype("<f4").tobytes(),
                    np.arange(n).astype("<u4").tobytes(),
                    rng.uniform(0.01, 0.02, 5).astype("<f4").tobytes()):
        out += struct.pack("<i", len(payload)) + payload + struct.pack("<i", len(payload))
    path.write_bytes(out)


def _gadget_hdf5(path: Path, swift: bool) -> None:
    import h5py
    import numpy as np

    rng = np.random.default_rng(2)
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["NumPart_ThisFile"] = np.array([0, 5, 3, 0, 0, 0], np.int32)
        h.attrs["NumPart_Total"] = np.array([0, 5, 3, 0, 0, 0], np.uint32)
        h.attrs["MassTable"] = np.array([0, 0.5, 0, 0, 0, 0])
        h.attrs["Time"] = 2.0
        h.attrs["NumFilesPerSnapshot"] = 1
        if swift:
            u = f.create_group("Units")
            u.attrs["Unit length in cgs (U_L)"] = [3.0857e24]
            u.attrs["Unit mass in cgs (U_M)"] = [1.98892e43]
            u.attrs["Unit time in cgs (U_t)"] = [3.0857e19]
            f.create_group("Cosmology").attrs["Cosmological run"] = [0]
        else:
            p = f.create_group("Parameters")
            p.attrs["UnitLength_in_cm"] = 6.0e21
            p.attrs["UnitMass_in_g"] = 1.989e43
            p.attrs["UnitVelocity_in_cm_per_s"] = 1e5
            p.attrs["ComovingIntegrationOn"] = 0
        for k, count in ((1, 5), (2, 3)):
            g = f.create_group(f"PartType{k}")
            g["Coordinates"] = rng.normal(size=(count, 3))
            g["Velocities"] = rng.normal(size=(count, 3)) * 100
            g["ParticleIDs"] = np.arange(count, dtype=np.uint64)
            if k == 2 or swift:
                g["Masses"] = rng.uniform(0.1, 0.3, count)


def _tipsy(path: Path) -> None:
    from galaxyview.model.params import Params
    from galaxyview.snapshots.tipsy import save_state
    from galaxyview.model.units import UnitSystem

    save_state(path, _state(), Params(dt=0.02, eps=0.05), units=UnitSystem(2.0, 5e9))


def make_seeds(folder: Path) -> dict[str, tuple[Path, Path]]:
    """format -> (the file to damage, the file to load) of sound files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    seeds = {}
    _archive(folder / "one.h5", 1)
    seeds["galaxyview"] = (folder / "one.h5",) * 2
    _archive(folder / "series.h5", 3)
    seeds["archive"] = (folder / "series.h5",) * 2
    _gadget2(folder / "snap_000")
    seeds["gadget2"] = (folder / "snap_000",) * 2
    _gadget_hdf5(folder / "gadget4.hdf5", swift=False)
    seeds["gadget4"] = (folder / "gadget4.hdf5",) * 2
    _gadget_hdf5(folder / "swift.hdf5", swift=True)
    seeds["swift"] = (folder / "swift.hdf5",) * 2
    _tipsy(folder / "run.tipsy")
    seeds["tipsy"] = (folder / "run.tipsy",) * 2
    seeds["tipsy-param"] = (folder / "run.tipsy.param", folder / "run.tipsy")
    (folder / "scene.toml").write_text(SCENE)
    seeds["scene"] = (folder / "scene.toml",) * 2
    return seeds


# -- damage ------------------------------------------------------------------------------------
EXTREMES = (b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00\x00\x00\x00",
            b"\x00\xca\x9a\x3b", b"\x00\x00\x80\x7f", b"\x00\x00\xc0\x7f",
            b"\xff\xff\xff\xff\xff\xff\xff\xff", b"\x00\x00\x00\x00\x00\x00\xf8\x7f",
            b"\x00\x00\x00\x00\x00\x00\xf0\x7f", b"\x00\x00\x00\x00\x00\x00\x00\x00")


def data_ranges(path: Path) -> list[tuple[int, int]]:
    """(start, end) of the raw data of an HDF5 file's contiguous datasets: damage elsewhere
    hits its metadata (headers, attributes, B-trees, heaps)."""
    import h5py

    ranges = []
    with h5py.File(path, "r") as f:
        def visit(_, obj):
            if isinstance(obj, h5py.Dataset) and obj.id.get_offset() is not None:
                ranges.append((obj.id.get_offset(), obj.id.get_offset() +
                               obj.id.get_storage_size()))
        f.visititems(visit)
    return ranges


def damage(data: bytes, rng: random.Random, avoid: list[tuple[int, int]]) -> bytes:
    """`data` with a few bytes flipped or set to extreme words, or cut short."""
    out = bytearray(data)
    if rng.random() < 0.08:
        return bytes(out[:rng.randrange(len(out))])

    def position():
        for _ in range(20):
            at = rng.randrange(len(out))
            if not any(a <= at < b for a, b in avoid) or rng.random() < 0.15:
                return at
        return at

    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        at = position()
        if rng.random() < 0.35:
            word = rng.choice(EXTREMES)
            out[at:at + len(word)] = word
            del out[len(data):]
        else:
            out[at] ^= rng.randrange(1, 256)
    return bytes(out)


HOSTILE = (0, -1, 0.0, -3.5, float("nan"), float("inf"), 2**40, 4_000_000_000, "text",
           b"\xff\xfe", [1.0, 2.0], [[1, 2], [3, 4]], "[1, 2]", '{"dt": "x"}', "[]")


def damage_values(path: Path, rng: random.Random) -> None:
    """Replace one attribute or dataset of HDF5 file `path` with a hostile value or shape."""
    import h5py
    import numpy as np

    with h5py.File(path, "r+") as f:
        items = []
        f.visititems(lambda name, obj: items.append(name))
        targets = [("attr", "", k) for k in f.attrs] + [
            ("attr", name, k) for name in items for k in f[name].attrs] + [
            ("data", name, None) for name in items if isinstance(f[name], h5py.Dataset)]
        kind, name, key = rng.choice(targets)
        if kind == "attr":
            value = rng.choice(HOSTILE)
            f[name or "/"].attrs[key] = np.void(value) if isinstance(value, bytes) else value
            return
        old = f[name]
        n = old.shape[0] if old.shape else 1
        value = rng.choice((np.zeros((n, 2)), np.full(old.shape, np.nan), np.zeros(0),
                            np.array([b"text"] * n), np.zeros(n + 1), np.zeros((n, 3, 2)),
                            np.array(1.0), np.full(old.shape, -1, np.int64),
                            np.array(b"\xff\xfe not utf-8")))
        del f[name]
        f[name] = value


TOKENS = ("nan", "inf", "-inf", "-1", "0", "1e-320", "1e400", "3.5e38", "9007199254740993",
          "99999999999999999999", '"text"', "[1, 2]", "{a = 1}", "true", '"\\u00e9"', "")


def damage_text(data: bytes, rng: random.Random) -> bytes:
    """`data` (key = value lines) with one value replaced by a hostile token."""
    lines = data.split(b"\n")
    at = rng.choice([i for i, line in enumerate(lines) if b"=" in line])
    key = lines[at].split(b"=")[0]
    lines[at] = key + b"= " + rng.choice(TOKENS).encode()
    return b"\n".join(lines)


# -- loading, in a worker ----------------------------------------------------------------------
def load(fmt: str, path: str) -> None:
    """What `galaxyview run FILE` reads of `path` before it simulates."""
    from galaxyview.snapshots import open_source, params_of

    scene, snap = open_source(path)
    if snap is None:
        scene.default_n()
        return
    try:
        params_of(snap)
        if snap.archive is not None:
            snap.archive.times()
            for i in range(len(snap.archive)):
                snap.archive[i]
    finally:
        snap.close()


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def worker(seeds: list[str], budget: int) -> None:
    """Load the cases named on stdin (JSON lines), one JSON line of result each on stdout,
    with the address space limited to what the warm-up loads took plus `budget` bytes."""
    import resource

    from galaxyview.errors import GalaxyviewError

    for line in seeds:
        try:
            load(*json.loads(line))
        except Exception:  # noqa: BLE001 - a warm-up: imports what the loads import
            pass
    limit = _vm_size() + budget
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    print(json.dumps({"ready": limit}), flush=True)
    for line in sys.stdin:
        fmt, path = json.loads(line)
        try:
            load(fmt, path)
            result = ("good load", "")
        except GalaxyviewError as exc:
            result = ("clear error", str(exc))
        except MemoryError:
            result = ("crash/over-memory", "MemoryError")
        except BaseException as exc:  # noqa: BLE001 - what the fuzz is after
            tb = traceback.extract_tb(exc.__traceback__)
            where = next((f"{Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb)
                          if "galaxyview" in fr.filename), "?")
            result = ("traceback", f"{type(exc).__name__} at {where}: {exc}"[:300])
        print(json.dumps(result), flush=True)


class Worker:
    """A worker process; restarted after a hang or a crash."""

    def __init__(self, seeds: list[str], budget: int):
        self.seeds, self.budget, self.proc = seeds, budget, None

    def start(self) -> None:
        env = dict(os.environ, PYTHONFAULTHANDLER="0", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(self.budget), *self.seeds],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, self.lines), daemon=True).start()
        ready = self.lines.get(timeout=120)
        if ready is None or "ready" not in json.loads(ready):
            raise RuntimeError("the fuzz worker did not start")

    @staticmethod
    def _pump(proc, lines) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def run(self, fmt: str, path: Path, timeout: float) -> tuple[str, str]:
        if self.proc is None:
            self.start()
        self.proc.stdin.write(json.dumps([fmt, str(path)]) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            return "hang", f"no answer within {timeout:g} s"
        if line is None:
            code = self.proc.wait()
            self.proc = None
            return "crash/over-memory", f"the worker died (exit status {code})"
        return tuple(json.loads(line))

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def fuzz(cases: int, seed: int = 1, formats=FORMATS, timeout: float = 60.0,
         folder: Path | None = None) -> list[tuple[str, str, str]]:
    """(format, category, detail) of `cases` damaged files of each format."""
    own = folder is None
    folder = Path(tempfile.mkdtemp(prefix="gv-fuzz-")) if own else folder
    try:
        seeds = make_seeds(folder / "seeds")
        size = max(p.stat().st_size for pair in seeds.values() for p in pair)
        warm = [json.dumps([fmt, str(seeds[fmt][1])]) for fmt in formats]
        pool = Worker(warm, ALLOWANCE + PER_FILE_BYTE * size)
        results = []
        try:
            for fmt in formats:
                rng = random.Random(f"{seed}-{fmt}")
                source, target = seeds[fmt]
                hdf5 = source.suffix in (".h5", ".hdf5")
                avoid = data_ranges(source) if hdf5 else []
                data = source.read_bytes()
                for k in range(cases):
                    case = folder / f"{fmt}-{k}"
                    shutil.copytree(source.parent, case)
                    damaged = case / source.name
                    if hdf5 and rng.random() < 0.4:
                        damage_values(damaged, rng)
                    elif not hdf5 and b"=" in data and rng.random() < 0.6:
                        damaged.write_bytes(damage_text(data, rng))
                    else:
                        damaged.write_bytes(damage(data, rng, avoid))
                    results.append((fmt, *pool.run(fmt, case / target.name, timeout)))
                    shutil.rmtree(case)
        finally:
            pool.stop()
        return results
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


def table(results) -> str:
    counts = Counter((fmt, cat) for fmt, cat, _ in results)
    formats = list(dict.fromkeys(fmt for fmt, _, _ in results))
    width = max(len(f) for f in (*formats, "format", "all"))
    head = f"{'format':<{width}}  {'cases':>5}" + "".join(f"  {c:>{len(c)}}" for c in CATEGORIES)
    rows = [head]
    for fmt in (*formats, "all"):
        mine = [r for r in results if fmt in ("all", r[0])]
        rows.append(f"{fmt:<{width}}  {len(mine):>5}" + "".join(
            f"  {sum(counts[(f, c)] for f in formats if fmt in ('all', f)):>{len(c)}}"
            for c in CATEGORIES))
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per format (default 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help=f"comma-separated, of {', '.join(FORMATS)}")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a load may take")
    parser.add_argument("--show", type=int, default=5,
                        help="distinct failures to print per format (default 5)")
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    results = fuzz(args.cases, args.seed, formats, args.timeout)
    import galaxyview
    print(f"galaxyview {galaxyview.__version__} from {Path(galaxyview.__file__).parent}")
    print(table(results))
    bad = [r for r in results if r[1] not in ("clear error", "good load")]
    for fmt in formats:
        seen = list(dict.fromkeys(d for f, c, d in bad if f == fmt))[:args.show]
        for detail in seen:
            print(f"{fmt}: {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[3:], int(sys.argv[2]))
    else:
        sys.exit(main())
