"""The LET export beside the local walk, on one GPU: a parallel rank's share alone, exporting
against a neighbouring domain (its own groups' boxes moved by 0.6 of its extent), the export
queued after the walk or beside it with some of the walk's blocks held back (none joining
afterwards). CUDA-event medians: the walk, the export, and the export's end from the walk's
start. For the parallel engine's developers (docs/parallel.md, "The export beside the walk"):

    galaxyview bench let --n 4194304 --hold 0 4 8 16 64 [--json]
"""
from __future__ import annotations

import numpy as np

from galaxyview.model.ics.plummer import plummer_sphere
from galaxyview.model.params import Params


def _alone_rank(theta: float):
    """A GPURank with no other process, whose force evaluation queues the export against a
    neighbouring box set after the walk (hold None) or beside it (hold blocks held back)."""
    from galaxyview.engines.gpu.engine import GPUEngine
    from galaxyview.engines.parallel.gpu_rank import GPURank

    class AloneRank(GPURank):
        hold: int | None = None

        def _walk_launch_blocks(self) -> int:
            return self.buf.walk_grid - (self.hold or 0)

        def _before_walk(self, ev) -> None:
            if ev is not None:
                self._let_ev[0].record()
                self._queue_boxes(ev)

        def _force(self, ev, active=None, refit=False) -> None:
            GPUEngine._force(self, ev, active, refit)
            if ev is None:
                return
            mine = self._read_boxes()
            other = mine.copy()
            shift = 0.6 * float(mine[:, 3].max() - mine[:, 0].min())
            other[:, [0, 3]] += shift
            self._boxes = [mine, other]
            if self.hold is None:
                self._sync()  # the walk ends first
            self._export_stream.wait_for_event(self._let_ev[6])
            self._queue_export(0, self._export_stream, 2 * self.hold if self.hold else None)

    eng = AloneRank(Params(theta=theta, eps=0.05, dt=1 / 16))
    eng.attach(None)
    return eng


def measure(n: int, holds: list[int], theta: float = 0.75, steps: int = 4) -> list[dict]:
    """One row per case: the export after the walk, then beside it with each hold."""
    import pycuda.driver as cuda

    eng = _alone_rank(theta)
    rows = []
    try:
        eng.load(plummer_sphere(n, np.random.default_rng(1)))
        for hold in [None, *holds]:
            eng.hold = hold
            got = []
            with eng.activate():
                for _ in range(steps):
                    eng.step(1)
                    cuda.Context.synchronize()
                    e, x = eng._events, eng._let_ev
                    got.append((e[5].time_since(e[4]), x[2].time_since(x[1]),
                                x[2].time_since(e[4])))
            walk, export, end = np.median(np.array(got[1:]), axis=0)
            rows.append(dict(n=n, case="after" if hold is None else "beside", hold=hold or 0,
                             blocks=eng.buf.walk_grid, walk_ms=float(walk),
                             export_ms=float(export), export_end_ms=float(end)))
    finally:
        eng.close()
    return rows


def main(a, out) -> list[dict]:
    """`galaxyview bench let` (a: n, hold, theta): a line a case to out(line); the rows."""
    rows = measure(a.n, a.hold, a.theta)
    for r in rows:
        out(f"{r['case']:6s} hold {r['hold']:3d} of {r['blocks']}: walk {r['walk_ms']:6.2f} ms"
              f"  export {r['export_ms']:6.2f} ms  ends {r['export_end_ms']:6.2f} ms "
              "after the walk's start")
    return rows
