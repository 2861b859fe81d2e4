"""The walks of K domains, one at a time on one GPU: the device work each rank of a K-GPU run
does in its force evaluation, measured without K GPUs. The particles are cut into K domains as
the parallel engine cuts them (Peano-Hilbert keys in the cube about the median point, splitters
by count, then weighed three times by each domain's measured interactions); each domain is a
parallel GPU rank on its own, whose local walk, export of the LETs against the other domains'
group boxes and walk of the imported LETs (apart, and with the local tree as one walk) are
timed with CUDA events (medians). The one-GPU engine walks all particles for comparison, and
a float64 direct sum on a sample checks the domains' forces (local + LETs). For the parallel
engine's developers (docs/parallel.md, "The domains' walks on one GPU"):

    galaxyview bench domains --n 16777216 --domains 2 4 [--scene NAME]
        [--theta T] [--snap S] [--group-parts P] [--no-check] [--json]

--group-parts P walks each domain's LETs again in P ranges of its groups (a long tail's
groups and their boxes).
"""
from __future__ import annotations

import logging
from time import perf_counter

import numpy as np

from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.parallel import decompose
from galaxyview.model.diagnostics import force_error_percentiles
from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params

SAMPLE_KEYS = 65536  # keys the splitters are cut from
CHECK_TARGETS = 64  # particles of each domain checked against the float64 direct sum
WEIGHINGS = 3  # cuts weighed by the last cut's interactions (the engine's new splitters)


class _One:
    """The collectives of one process (decompose.global_cube's allgather)."""

    size, rank = 1, 0

    def allgather(self, values, what: str = "", dtype=np.float64) -> np.ndarray:
        return np.asarray(values, dtype)[None]


def cut(pos: np.ndarray, k: int, cost: np.ndarray | None = None,
        owner: np.ndarray | None = None, snap: float | None = None) -> np.ndarray:
    """The domain (0..k-1) of each particle: splitters from a key sample, each key weighed by
    its particle's domain's cost a particle (`cost` by `owner`; None: by count), each moved to
    a coarse cell within `snap` of a part's weight (None: the engine's SNAP_TOLERANCE)."""
    keys = decompose.particle_keys(pos, decompose.global_cube(_One(), pos))
    at = np.linspace(0, len(keys) - 1, min(SAMPLE_KEYS, len(keys))).astype(np.int64)
    weight = np.ones(len(at)) if cost is None else cost[owner[at]]
    snap = decompose.SNAP_TOLERANCE if snap is None else snap
    cuts = decompose.split_sample(keys[at], weight, k, snap)
    return decompose.owners(keys, cuts).astype(np.int64)


def _domain_rank(params):
    """A GPURank on its own that reads its groups' boxes at each force evaluation."""
    from galaxyview.engines.parallel.gpu_rank import GPURank

    class DomainRank(GPURank):
        def _before_walk(self, ev) -> None:
            if ev is not None:
                self._let_ev[0].record()
                self._queue_boxes(ev)

    eng = DomainRank(params)
    eng.attach(None)
    eng.peer_path()  # (alone: the LETs go up from host memory)
    return eng


def _local(eng) -> dict:
    """One force evaluation of the domain's own tree: its walk's ms and interactions."""
    with eng.activate():
        eng._evaluate()
        ev = eng._events
        return {"walk": ev[5].time_since(ev[4]), "pp": eng.stats.pp, "pc": eng.stats.pc,
                "boxes": eng._read_boxes()}


def _export(src, boxes: list, me: int) -> tuple[float, list]:
    """The source domain's export against every other domain's boxes (one queue, as a rank
    exports): its ms and each destination's (cells, particles) rows (None for itself)."""
    from galaxyview.engines.parallel.let import CELL_WIDTH

    with src.activate():
        src._boxes = boxes
        cells, parts, per_rank = src._export_fitted(me)
        ms = src._let_ev[2].time_since(src._let_ev[1])
    out, c0, p0 = [], 0, 0
    for r, (nc, npart) in enumerate(per_rank.tolist()):
        out.append(None if r == me else (cells[c0:c0 + nc].reshape(-1, CELL_WIDTH).copy(),
                                         parts[p0:p0 + npart].copy()))
        c0, p0 = c0 + nc, p0 + npart
    return ms, out


def _let_walk(tgt, lets: list, one: bool) -> dict:
    """The imported LETs walked (after a fresh local evaluation): apart (the forest alone, added
    to the local forces) or, with `one`, the local tree and the forest in one walk."""
    from galaxyview.engines.gpu.constants import ST_CELLS, ST_PC, ST_PP
    from galaxyview.engines.parallel.let import CELL_WIDTH, PARTICLE_WIDTH

    local = _local(tgt)
    with tgt.activate():
        tgt._read_status()
        pp0, pc0 = int(tgt._host_status[ST_PP]), int(tgt._host_status[ST_PC])
        cells = np.concatenate([c for c, _ in lets]) if lets else np.zeros((0, CELL_WIDTH))
        parts = np.concatenate([q for _, q in lets]) if lets else np.zeros((0, PARTICLE_WIDTH))
        tgt._recv_rows("cells", len(cells), CELL_WIDTH)[:] = cells
        tgt._recv_rows("parts", len(parts), PARTICLE_WIDTH)[:] = parts
        tgt._walk_left, tgt._head = one, 0
        tgt._cells_built = int(tgt._host_status[ST_CELLS])
        tgt._queue_walk([(len(c), len(q)) for c, q in lets])
        ev = tgt._let_ev
        ev[9].synchronize()
        tgt._read_status()
        tgt._walk_left = False
        pp, pc = int(tgt._host_status[ST_PP]) - pp0, int(tgt._host_status[ST_PC]) - pc0
        return {"local": local["walk"], "local_pp": local["pp"], "local_pc": local["pc"],
                "upload": ev[5].time_since(ev[3]), "walk": ev[9].time_since(ev[5]),
                "pp": pp, "pc": pc, "cells_in": len(cells), "particles_in": len(parts)}


def _errors(eng, state, params, idx: np.ndarray, targets: np.ndarray) -> tuple:
    """(median, 99th percentile) relative force error of eng's particles `targets` (places in
    its particles, which are state's `idx`) against the float64 direct sum."""
    acc, _ = eng.accelerations()
    ref, _ = direct_forces(state.pos.astype(np.float64), state.mass, params.eps, params.G,
                           targets=idx[targets])
    return force_error_percentiles(acc[targets], ref, (50, 99))


def measure(state, params, domains: list[int], repeats: int = 3, check: bool = True,
            log=None, snap: float | None = None, group_parts: int = 0) -> dict:
    """The one-GPU walk of `state` and, for each K in `domains`, each domain's local walk,
    export and LET walk (apart and as one): medians of `repeats`. Each result also goes to
    log(line) as it is measured (default: the module's logger, at INFO)."""
    log = log or logging.getLogger(__name__).info
    from galaxyview.engines.gpu.engine import GPUEngine

    n, rng = len(state.mass), np.random.default_rng(5)
    out = {"n": n, "theta": params.theta, "domains": []}
    whole = GPUEngine(params)
    try:
        whole.load(state)
        runs = []
        for _ in range(repeats + 1):
            with whole.activate():
                whole._evaluate()
                runs.append((whole._events[5].time_since(whole._events[4]),
                             whole.stats.pp + whole.stats.pc))
        out["walk"], out["interactions"] = (float(v) for v in np.median(runs[1:], axis=0))
        if check:
            tg = rng.choice(n, min(CHECK_TARGETS, n), False)
            out["error"] = _errors(whole, state, params, np.arange(n), tg)
        log(f"one GPU: walk {out['walk']:.2f} ms, {out['interactions'] / n:.0f} "
            "interactions a particle" + (", error p50 {:.2e} p99 {:.2e}".format(*out["error"])
                                         if check else ""))
    finally:
        whole.close()
    for k in domains:
        ranks = [_domain_rank(params) for _ in range(k)]
        try:
            out["domains"].append(_domains(ranks, state, params, repeats, check, rng, log,
                                           snap, group_parts))
        finally:
            for e in ranks:
                e.close()
    _summary(out, log)
    return out


def _round(ranks: list, state, params, idx: list, rows: list, check, rng) -> None:
    """Each domain's local walk, export (against all others) and LET walks, apart and as one,
    appended to its row; the forces checked (check) against a float64 direct sum."""
    k = len(ranks)
    boxes = [_local(e)["boxes"] for e in ranks]
    lets = [[None] * k for _ in range(k)]  # [to][from]
    for s in range(k):
        ms, sent = _export(ranks[s], boxes, s)
        rows[s]["export"].append(ms)
        for t in range(k):
            lets[t][s] = sent[t]
    for t in range(k):
        mine = [x for x in lets[t] if x is not None]
        one = _let_walk(ranks[t], mine, one=True)
        apart = _let_walk(ranks[t], mine, one=False)  # (its forest stays: _by_group_parts)
        if check:
            tg = rng.choice(len(idx[t]), min(CHECK_TARGETS, len(idx[t])), False)
            rows[t]["error"] = _errors(ranks[t], state, params, idx[t], tg)
        rows[t]["local"].append(apart["local"])
        rows[t]["walk"].append(apart["walk"])
        rows[t]["one"].append(one["walk"])
        rows[t].update({key: apart[key] for key in ("local_pp", "local_pc", "pp", "pc",
                                                    "cells_in", "particles_in", "upload")})


def _domains(ranks: list, state, params, repeats: int, check: bool, rng, log,
             snap: float | None = None, group_parts: int = 0) -> dict:
    """The K = len(ranks) domains, cut by count, then WEIGHINGS times weighed by each one's
    interactions (local and LET walks), as the parallel engine weighs its ranks at each new
    decomposition; medians of `repeats`."""
    k = len(ranks)
    owner = cut(state.pos, k, snap=snap)
    for last in [False] * WEIGHINGS + [True]:
        idx = [np.flatnonzero(owner == r) for r in range(k)]
        for r in range(k):
            ranks[r].load(state.take(idx[r]))
        rows = [dict(rank=r, n=len(idx[r]), export=[], local=[], walk=[], one=[])
                for r in range(k)]
        if not last:
            _round(ranks, state, params, idx, rows, False, rng)
            cost = np.array([(w["local_pp"] + w["local_pc"] + w["pp"] + w["pc"]) / max(w["n"], 1)
                             for w in rows])
            owner = cut(state.pos, k, cost, owner, snap)
    for rep in range(repeats):
        _round(ranks, state, params, idx, rows, check and rep == 0, rng)
    for row in rows:
        for key in ("export", "local", "walk", "one"):
            row[key] = float(np.median(row[key]))
        m = max(row["n"], 1)
        log(f"K={k} domain {row['rank']}: {row['n']} particles, local walk {row['local']:.2f} "
            f"ms ({(row['local_pp'] + row['local_pc']) / m:.0f} a particle), LET walk "
            f"{row['walk']:.2f} ms ({(row['pp'] + row['pc']) / m:.0f}; {row['particles_in']} "
            f"particles, {row['cells_in']} cells in), one walk {row['one']:.2f} ms, export "
            f"{row['export']:.2f} ms" + (", error p50 {:.2e} p99 {:.2e}".format(*row["error"])
                                         if "error" in row else ""))
    slowest = max(r["local"] + r["walk"] for r in rows)
    each = [r["local_pp"] + r["local_pc"] + r["pp"] + r["pc"] for r in rows]
    return dict(k=k, rows=rows, slowest_walks=slowest, slowest_one=max(r["one"] for r in rows),
                slowest_export=max(r["export"] for r in rows), total_interactions=sum(each),
                interactions_spread=max(each) * k / sum(each),
                imbalance=slowest * k / sum(r["local"] + r["walk"] for r in rows),
                group_parts=_by_group_parts(ranks, group_parts, log) if group_parts else [])


def _by_group_parts(ranks: list, parts: int, log) -> list:
    """Each domain's LET walk (the forest its last LET walk uploaded) again, `parts` ranges
    of its groups at a time: per range the ms, interactions and its groups' box widths (the
    groups of a long tail)."""
    import pycuda.driver as cuda

    from galaxyview.engines.gpu.constants import ST_GROUPS, ST_PC, ST_PP

    out = []
    for t, eng in enumerate(ranks):
        width = np.ptp(eng._read_boxes().reshape(-1, 2, 3), axis=1).max(axis=1)
        rows = []
        with eng.activate():
            eng._read_status()
            groups = int(eng._host_status[ST_GROUPS])
            for j in range(parts):
                lo, hi = groups * j // parts, groups * (j + 1) // parts
                eng._read_status()
                before = int(eng._host_status[ST_PP]) + int(eng._host_status[ST_PC])
                a, b = cuda.Event(), cuda.Event()
                a.record()
                eng._walk_roots(eng.buf.ptr("let_pos"), "let_", "let_acc", 0, -1, lo, hi)
                b.record()
                b.synchronize()
                eng._read_status()
                got = int(eng._host_status[ST_PP]) + int(eng._host_status[ST_PC]) - before
                w = width[lo:hi] if hi > lo else np.zeros(1)
                rows.append(dict(ms=b.time_since(a), interactions=got,
                                 width_median=float(np.median(w)), width_max=float(w.max())))
                log(f"   domain {t}, groups {lo}-{hi}: LET walk {rows[-1]['ms']:.2f} ms, "
                    f"{got / 1e6:.1f}M interactions, box width median "
                    f"{rows[-1]['width_median']:.3f} max {rows[-1]['width_max']:.3f}")
        out.append(rows)
    return out


def _summary(out: dict, log) -> None:
    """Against the one GPU: the slowest domain's walks, against a K-th of one GPU's walk, and
    the interactions' bound (one GPU's over the domains')."""
    for d in out["domains"]:
        k = d["k"]
        d["walk_efficiency"] = out["walk"] / (k * d["slowest_walks"])
        d["interaction_bound"] = out["interactions"] / d["total_interactions"]
        log(f"K={k}: the slowest domain walks {d['slowest_walks']:.2f} ms (as one walk "
            f"{d['slowest_one']:.2f}; export {d['slowest_export']:.2f}) against "
            f"{out['walk'] / k:.2f} ms, a K-th of one GPU's: walk efficiency "
            f"{d['walk_efficiency']:.3f}; interactions bound {d['interaction_bound']:.3f}; "
            f"imbalance {d['imbalance']:.3f} (interactions {d['interactions_spread']:.3f})")


def _state(scene: str | None, n: int):
    if scene is None:
        return plummer_sphere(n, np.random.default_rng(1)), Params(eps=0.05, dt=1 / 16)
    from galaxyview.model.scene import load_scene
    sc = load_scene(scene)
    return sc.build(n), sc.params


def main(a, out) -> dict:
    """`galaxyview bench domains` (a: n, domains, theta, scene, repeats, no_check, snap,
    group_parts): its lines to out(line) as they come; the figures."""
    t0 = perf_counter()
    state, params = _state(a.scene, a.n)
    figures = measure(state, params.with_(theta=a.theta), a.domains, a.repeats, not a.no_check,
                      log=out, snap=a.snap, group_parts=a.group_parts)
    out(f"({perf_counter() - t0:.0f} s)")
    return figures
