"""Run under mpirun by tests/test_parallel_mpi.py: one rank misses a collective (argv[1]:
"hang" sleeps, "die" exits at once, "stuck" blocks inside the wait for a large transfer);
the others must stop within the time-out, not hang."""
import os
import sys
import time

from galaxyview.engines.parallel.mpi import Comm

comm = Comm(timeout=3)
comm.allreduce([1.0], what="the warm-up")
if comm.rank == comm.size - 1:
    if sys.argv[1] == "die":
        os._exit(1)
    if sys.argv[1] == "stuck":  # a blocking Wait that never returns: the watchdog aborts

        class Stuck:
            def Wait(self):
                time.sleep(120)

        comm.wait(Stuck(), "the test transfer", nbytes=1 << 30)
    time.sleep(120)
comm.allreduce([1.0], what="the test collective")
print("not reached", flush=True)
