"""How late a rank learns that a collective is complete: a loop of one-value allreduces with
the last rank arriving 0, 0.2 and 1 ms late, waited for by polling with sleeps (as where MPI
lacks MPI_THREAD_MULTIPLE) and by the watched blocking Wait (mpi.Comm's default). Run it
under mpirun (docs/parallel.md, "Never a hang"):

    mpirun -n 2 galaxyview bench mpi-wait [--loops 400]
"""
from __future__ import annotations

import time

from galaxyview.engines.parallel.mpi import Comm

DELAYS_S = (0.0, 2e-4, 1e-3)


def measure(comm: Comm, loops: int) -> dict[float, float]:
    """us over the late rank's delay per allreduce, by delay."""
    out = {}
    for delay in DELAYS_S:
        comm.allreduce([0.0], what="the start")
        t0 = time.perf_counter()
        for _ in range(loops):
            if comm.rank == comm.size - 1:
                t = time.perf_counter()
                while time.perf_counter() - t < delay:
                    pass
            comm.allreduce([1.0], what="the measured allreduce")
        out[delay] = ((time.perf_counter() - t0) / loops - delay) * 1e6
    return out


def main(a, out) -> dict:
    """`galaxyview bench mpi-wait` on every rank (a: loops): rank 0 writes a line a wait to
    out(line); us over the delay, by wait and delay (ms)."""
    figures = {}
    for name, poll in (("polled", True), ("watched Wait", False)):
        comm = Comm(timeout=60, poll=poll)
        got = measure(comm, a.loops)
        figures[name] = {f"{d * 1e3:g}": us for d, us in got.items()}
        if comm.rank == 0:
            out(f"{name:13s}" + "".join(f"  last rank {d * 1e3:g} ms late: {us:6.1f} us over"
                                        for d, us in got.items()))
    return figures
