"""Run under mpirun by tests/test_parallel_mpi.py: one rank misses a collective (argv[1]:
"hang" sleeps, "die" exits at once, "stuck" blocks inside the wait for a large transfer);
the others must stop within the time-out, not hang. The warm-up has a generous time-out (the
processes start at their own pace on a loaded machine); "stuck": only the stuck rank's
watchdog has the short one, so its message is the one that ends the job."""
import os
import sys
import time

from galaxyview.engines.parallel.mpi import Comm

SHORT = 3  # the time-out under test (s)
comm = Comm(timeout=120)
comm.allreduce([1.0], what="the warm-up")
stalls = comm.rank == comm.size - 1
if stalls or sys.argv[1] != "stuck":
    comm.timeout = SHORT
if stalls:
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
