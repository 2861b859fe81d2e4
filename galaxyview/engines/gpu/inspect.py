"""Host copies of the GPU engine's tree and a float64 direct-summation reference, for tests and
diagnostics (device-to-host copies; never called in the step path)."""
from __future__ import annotations

import numpy as np

from galaxyview.engines.gpu.constants import MAX_LEVEL, ST_CELLS, ST_GROUPS


def download_tree(eng) -> dict:
    """The last tree in the shared layout's terms (cells breadth first, sorted particles)."""
    if not eng._have_tree:
        raise ValueError("no tree: the engine runs direct gravity or has nothing loaded")
    b, n = eng.buf, eng._n
    with eng.activate():
        eng._sync()
        get = eng._download
        lb = get(b.ptr("lb"), np.int32, MAX_LEVEL + 3).astype(np.int64)
        n_cells = int(eng._host_status[ST_CELLS])
        n_groups = int(eng._host_status[ST_GROUPS])
        depth = int(np.searchsorted(lb, n_cells, side="left"))  # first l with lb[l] == n_cells
        cell = {name: get(b.ptr(name), np.int32, n_cells).astype(np.int64)
                for name in ("level", "begin", "count", "child", "nchild", "parent")}
        mac = get(b.ptr("cell_mac"), np.float32, 4 * n_cells).reshape(-1, 4)
        q0 = get(b.ptr("cell_q0"), np.float32, 4 * n_cells).reshape(-1, 4)
        q1 = get(b.ptr("cell_q1"), np.float32, 4 * n_cells).reshape(-1, 4)
        pos, _ = b.set_ptrs(eng._cur)
        p4 = get(pos, np.float32, 4 * n).reshape(-1, 4)
        tree = dict(
            keys=get(b.ptr("keys0"), np.uint64, n),
            order=get(b.ptr(f"id{eng._cur}"), np.uint32, n).astype(np.int64),
            pos=p4[:, :3].copy(), mass=p4[:, 3].copy(),
            frame=get(b.ptr("frame"), np.float32, 5),
            level_begin=lb[:depth + 1],
            level=cell["level"], body_begin=cell["begin"], body_count=cell["count"],
            child_begin=cell["child"], child_count=cell["nchild"], parent=cell["parent"],
            com=mac[:, :3].copy(), r_open2=mac[:, 3].copy(), cell_mass=q1[:, 3].copy(),
            quad=np.concatenate([q0, q1[:, :2]], axis=1) / np.float32(3),  # stored as 3Q
            group_begin=get(b.ptr("group_begin"), np.int32, n_groups).astype(np.int64),
            group_count=get(b.ptr("group_count"), np.int32, n_groups).astype(np.int64),
        )
    return tree


def direct_reference(eng, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float64 direct-summation (acc (T, 3), pot (T,)) at the particles `targets` (indices in
    the loaded order), self pair excluded, from the engine's current positions."""
    targets = np.asarray(targets, dtype=np.int64)
    b, n = eng.buf, eng._n
    with eng.activate():
        eng._sync()
        ids = eng._download(b.ptr(f"id{eng._cur}"), np.uint32, n)
        where = np.empty(n, np.int32)
        where[ids] = np.arange(n, dtype=np.int32)
        sorted_targets = where[targets]
        b._alloc("ref_targets", 4 * len(targets))
        b._alloc("ref_out", 32 * len(targets))
        eng._cuda.memcpy_htod(b.ptr("ref_targets"), sorted_targets)
        pos, _ = b.set_ptrs(eng._cur)
        eng.kernels.launch("direct_sample_f64", (len(targets), 1, 1), (256, 1, 1), pos, n,
                           b.ptr("ref_targets"), float(eng.params.eps) ** 2,
                           float(eng.params.G), b.ptr("ref_out"))
        eng._sync()
        out = eng._download(b.ptr("ref_out"), np.float64, 4 * len(targets)).reshape(-1, 4)
    return out[:, :3], out[:, 3]


def sample_forces(eng, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(engine acc (T, 3), reference acc (T, 3)) at `targets` (loaded order), on the device:
    the reference sums float32 pair terms in float64 (kernels/nbody_direct.cu
    sample_forces_mixed), over the box and each ghost box; 48 bytes a target come back, no
    whole-array copy (the live readout)."""
    targets = np.ascontiguousarray(targets, dtype=np.int32)
    b, n, k = eng.buf, eng._n, eng.kernels
    with eng.activate():
        b._alloc("where", 4 * n)
        b._alloc("ref_targets", 4 * len(targets))
        b._alloc("ref_out", 48 * len(targets))
        eng._cuda.memcpy_htod(b.ptr("ref_targets"), targets)
        eng._cuda.memset_d8(b.ptr("ref_out"), 0, 48 * len(targets))  # the boxes add up there
        pos, _ = b.set_ptrs(eng._cur)
        k.launch("invert_ids", (eng._grid(), 1, 1), (256, 1, 1), b.ptr(f"id{eng._cur}"), n,
                 b.ptr("where"))
        for offset in np.vstack([np.zeros((1, 3)), eng._ghosts()]):
            k.launch("sample_forces_mixed", (len(targets), 1, 1), (256, 1, 1), pos,
                     b.ptr("acc"), n, b.ptr("where"), b.ptr("ref_targets"),
                     float(eng.params.eps) ** 2, *(float(v) for v in offset),
                     float(eng.params.G), b.ptr("ref_out"))
        eng._sync()
        out = eng._download(b.ptr("ref_out"), np.float64, 6 * len(targets)).reshape(-1, 6)
    return out[:, 3:], out[:, :3]


def poison_outputs(eng) -> None:
    """Fill the accelerations and potentials with NaN, so that unwritten entries show."""
    with eng.activate():
        eng._cuda.memset_d32(eng.buf.ptr("acc"), 0x7FC00000, 4 * eng._n)


def relative_errors(acc: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|a - a_ref| / |a_ref| per particle."""
    ref = np.asarray(ref, dtype=np.float64)
    return np.linalg.norm(np.asarray(acc, np.float64) - ref, axis=1) / np.linalg.norm(ref, axis=1)
