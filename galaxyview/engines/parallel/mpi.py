"""A small MPI wrapper (mpi4py): collectives that give up after a time-out instead of hanging.

Every collective is started non-blocking; when it does not complete within `timeout` seconds,
the message says which collective waited and the whole job is aborted (MPI_Abort): a rank
that died or hangs never leaves the others waiting. Inside a command (a step's collectives)
it is waited for with a blocking Wait, which answers within microseconds and runs without the
GIL, under a watchdog: one thread that looks at the waits in progress every WATCH_S and
aborts one past its deadline (where MPI allows a thread to abort while another waits, i.e.
MPI_THREAD_MULTIPLE; otherwise polled with short sleeps, which answer 0.1-0.3 ms late). A
rank waiting for the next command polls with sleeps growing to IDLE_POLL_S, so an idle rank
yields its core; for IDLE_SPIN_S after a command it keeps them at POLL_S, so a run's next
command is taken within POLL_S. Polling, Open MPI progresses a large collective broken into
fragments one fragment per poll (500 MB: 6.5 s instead of 0.45 s without single-copy shared
memory): an idle rank waits for payloads of IN_FLIGHT_BYTES or more with a blocking Wait.
Objects travel pickled (their size first, then the bytes in blocks of BLOCK bytes); numpy
arrays of one dtype and width travel as they are, counted in rows (Alltoallv): with MPI-3's
32-bit counts, messages beyond 2 GiB go through either way.
"""
from __future__ import annotations

import logging
import os
import pickle
import threading
import time

import numpy as np

from galaxyview.errors import EngineError

TIMEOUT_S = 600.0  # default patience of one collective (GALAXYVIEW_MPI_TIMEOUT overrides)
BLOCK = 1 << 12  # bytes of the unit pickled objects travel in
POLL_S = 2e-4  # longest sleep between polls inside a command (without MPI_THREAD_MULTIPLE)
IDLE_POLL_S = 2e-3  # between polls of a rank waiting for the next command
IDLE_SPIN_S = 0.05  # after a command, the wait for the next polls at POLL_S this long
WATCH_S = 0.25  # the watchdog's look at the blocking waits in progress
IN_FLIGHT_BYTES = 1 << 20  # payloads from this size on: a blocking Wait under a watchdog
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def world_size_from_env() -> int:
    """Processes of the MPI job this process was started in by mpirun (1: not under mpirun);
    read from the launcher's environment, without starting MPI."""
    for var in _SIZE_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def rank_from_env() -> int:
    """This process's rank in its MPI job (0: not under mpirun), without starting MPI."""
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def local_rank_from_env() -> int:
    """This process's rank among those on its host (picks its GPU)."""
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def unavailable_reason() -> str | None:
    """None when mpi4py imports and its MPI library starts; otherwise why not."""
    try:
        from mpi4py import MPI  # noqa: F401  (initialises MPI)
    except ImportError as exc:
        return (f"mpi4py is not installed ({exc}); install it with `pip install mpi4py` "
                "(it needs an MPI library: `apt install openmpi-bin libopenmpi-dev`)")
    except Exception as exc:  # the MPI library is missing or fails to start
        return f"the MPI library failed to start ({type(exc).__name__}: {exc})"
    return None


def default_timeout() -> float:
    text = os.environ.get("GALAXYVIEW_MPI_TIMEOUT")
    if text is None:
        return TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise EngineError(f"GALAXYVIEW_MPI_TIMEOUT={text!r}: give seconds > 0")
    return value


class _Watchdog:
    """One daemon thread that aborts the job when a blocking wait outlives its deadline; a
    wait arms and disarms it with a dict operation (no thread started a wait)."""

    def __init__(self, abort):
        self._abort = abort
        self._waits: dict[int, tuple[float, str]] = {}  # thread -> (deadline, message)
        self._thread: threading.Thread | None = None

    def arm(self, limit: float, message: str) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="galaxyview-mpi-watchdog",
                                            daemon=True)
            self._thread.start()
        self._waits[threading.get_ident()] = (time.monotonic() + limit, message)

    def disarm(self) -> None:
        self._waits.pop(threading.get_ident(), None)

    def _run(self) -> None:
        while True:
            time.sleep(WATCH_S)
            now = time.monotonic()
            for deadline, message in list(self._waits.values()):
                if now > deadline:
                    self._abort(message)


class Comm:
    """COMM_WORLD with time-outs: rank, size and the collectives the parallel engine uses."""

    def __init__(self, timeout: float | None = None, poll: bool = False):
        """poll: wait inside commands by polling, as where MPI lacks MPI_THREAD_MULTIPLE
        (to compare: galaxyview bench mpi-wait)."""
        reason = unavailable_reason()
        if reason:
            raise EngineError(reason)
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self._block = MPI.BYTE.Create_contiguous(BLOCK).Commit()
        self._types: dict = {}  # row types of alltoallv by (dtype, width)
        # a watchdog may abort while another thread waits inside MPI
        self._watchdog_ok = MPI.Query_thread() == MPI.THREAD_MULTIPLE
        self._watch = self._watchdog_ok and not poll  # small collectives too
        self._watchdog = _Watchdog(self.abort)
        self._last_busy = 0.0  # when the last wait inside a command ended
        self.waited_s = 0.0  # the main thread's time inside collectives (see `waited`)
        self._main = threading.main_thread()

    # -- waiting ---------------------------------------------------------------------------
    def wait(self, request, what: str, timeout: float | None = None,
             nbytes: int = 0) -> None:
        """Wait for `request`; abort the job after `timeout` (None: self.timeout; inf: wait
        for ever, idle ranks only). nbytes: the payload's size, once every peer is known to
        have started it (from IN_FLIGHT_BYTES on: a blocking Wait under a watchdog)."""
        limit = self.timeout if timeout is None else timeout
        idle = limit == float("inf")
        start = time.monotonic()
        late = (f"process {self.rank}: no answer to {what} from the other processes within "
                f"{limit:g} s: one of them died or hangs")
        try:
            if nbytes >= IN_FLIGHT_BYTES and idle:
                return request.Wait()
            big = nbytes >= IN_FLIGHT_BYTES  # (the peers are known to be there)
            if big and self._watchdog_ok and not idle:
                late = (f"process {self.rank}: {what} did not complete within {limit:g} s: "
                        "one of the other processes died or hangs")
            if (self._watch or big and self._watchdog_ok) and not idle:
                return self._wait_watched(request, late, limit)
            pause = 1e-5
            while not request.Test():
                if time.monotonic() - start > limit:
                    self.abort(late)
                time.sleep(pause)
                spin = not idle or time.monotonic() - self._last_busy < IDLE_SPIN_S
                pause = min(2 * pause, POLL_S if spin else IDLE_POLL_S)
        finally:
            if not idle:
                self._last_busy = time.monotonic()
                if threading.current_thread() is self._main:
                    self.waited_s += self._last_busy - start

    def waited(self) -> float:
        """ms the main thread spent in collectives since the last call (a command's wait
        for the slower ranks, and the transfers)."""
        ms, self.waited_s = 1e3 * self.waited_s, 0.0
        return ms

    def _wait_watched(self, request, late: str, limit: float) -> None:
        """A blocking Wait (MPI progresses the transfer at memory speed, without the GIL)
        under the watchdog, which aborts the job with `late` when it is not done within
        `limit` s."""
        self._watchdog.arm(limit, late)
        try:
            request.Wait()
        finally:
            self._watchdog.disarm()

    def abort(self, message: str, code: int = 3) -> None:
        logging.getLogger(__name__).error("%s; stopping every process", message)
        self.comm.Abort(code)

    # -- arrays ----------------------------------------------------------------------------
    def allreduce(self, values, op: str = "sum", what: str = "allreduce") -> np.ndarray:
        send = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
        recv = np.empty_like(send)
        ops = {"sum": self.MPI.SUM, "min": self.MPI.MIN, "max": self.MPI.MAX}
        self.wait(self.comm.Iallreduce(send, recv, op=ops[op]), what)
        return recv

    def reduce(self, array: np.ndarray, root: int = 0, what: str = "reduce"):
        """The sum of every rank's `array` (one shape and dtype everywhere: a frame's float
        light image) on `root`, None elsewhere. Every rank is inside the command that calls
        it, so a large image is waited for with a blocking Wait under the watchdog."""
        send = np.ascontiguousarray(array)
        recv = np.empty_like(send) if self.rank == root else None
        self.wait(self.comm.Ireduce(send, recv, op=self.MPI.SUM, root=root), what,
                  nbytes=send.nbytes)
        return recv

    def allgather(self, values, what: str = "allgather", dtype=np.float64) -> np.ndarray:
        """(size, k) of `dtype` from k values per rank."""
        send = np.ascontiguousarray(values, dtype=dtype).reshape(-1)
        recv = np.empty((self.size, len(send)), dtype)
        self.wait(self.comm.Iallgather(send, recv), what)
        return recv

    def _rows(self, dtype: np.dtype, width: int):
        """An MPI type of one row (width elements): counts and displacements in rows stay
        below 2^31 where elements would not (MPI-3 counts are 32-bit)."""
        key = (dtype.char, width)
        if key not in self._types:
            from mpi4py.util import dtlib

            base = dtlib.from_numpy_dtype(dtype)
            self._types[key] = base.Create_contiguous(width).Commit()
        return self._types[key]

    def alltoallv(self, parts: list, what: str = "alltoallv") -> list:
        """parts[r]: rows (n_r, w) for rank r, all of one dtype and width; returns the rows
        each rank sent here, in rank order."""
        counts = np.array([len(p) for p in parts], np.int64)
        return self.alltoallv_rows(np.concatenate(parts).astype(parts[0].dtype, copy=False),
                                   counts, what)

    def alltoallv_rows(self, send: np.ndarray, counts: np.ndarray,
                       what: str = "alltoallv", recv_into=None) -> list:
        """alltoallv of rows already in rank order: send (n, w), counts[r] rows of it for
        rank r (a pinned staging buffer goes as it is, without a copy). recv_into(rows): the
        (rows, w) array to receive into (e.g. pinned memory); a new one by default."""
        width, dtype = send.shape[1], send.dtype
        counts = np.ascontiguousarray(counts, np.int64)
        got = np.empty(self.size, np.int64)
        self.wait(self.comm.Ialltoall(counts, got), what + " (counts)")
        send = np.ascontiguousarray(send)
        total = int(got.sum())
        recv = np.empty((total, width), dtype) if recv_into is None else recv_into(total)
        row = self._rows(dtype, width)
        sdisp = np.r_[0, np.cumsum(counts)[:-1]]
        rdisp = np.r_[0, np.cumsum(got)[:-1]]
        self.wait(self.comm.Ialltoallv([send, (counts, sdisp), row],
                                       [recv, (got, rdisp), row]), what,
                  nbytes=max(send.nbytes, recv.nbytes))
        return np.split(recv, np.cumsum(got)[:-1])

    # -- objects (pickled; sent in blocks of BLOCK bytes, so 32-bit counts reach 8 TiB) -------
    @staticmethod
    def _padded(data: bytes) -> np.ndarray:
        buf = np.zeros(-(-len(data) // BLOCK) * BLOCK, np.uint8)
        buf[:len(data)] = np.frombuffer(data, np.uint8)
        return buf

    def bcast(self, obj=None, root: int = 0, what: str = "bcast", timeout=None):
        """rank `root`'s obj on every rank."""
        data = pickle.dumps(obj, protocol=5) if self.rank == root else b""
        size = np.array([len(data)], np.int64)
        self.wait(self.comm.Ibcast(size, root=root), what, timeout)
        n = int(size[0])
        buf = self._padded(data) if self.rank == root else \
            np.empty(-(-n // BLOCK) * BLOCK, np.uint8)
        self.wait(self.comm.Ibcast([buf, len(buf) // BLOCK, self._block], root=root), what,
                  timeout, nbytes=n)
        return obj if self.rank == root else pickle.loads(memoryview(buf)[:n])

    def gather(self, obj, root: int = 0, what: str = "gather") -> list | None:
        """Every rank's obj as a list on `root` (None elsewhere)."""
        data = pickle.dumps(obj, protocol=5)
        sizes = np.empty(self.size, np.int64) if self.rank == root else None
        self.wait(self.comm.Igather(np.array([len(data)], np.int64), sizes, root=root), what)
        mine = self._padded(data)
        send = [mine, len(mine) // BLOCK, self._block]
        if self.rank != root:
            self.wait(self.comm.Igatherv(send, None, root=root), what, nbytes=len(data))
            return None
        blocks = -(-sizes // BLOCK)
        disp = np.r_[0, np.cumsum(blocks)[:-1]]
        buf = np.empty(int(blocks.sum()) * BLOCK, np.uint8)
        self.wait(self.comm.Igatherv(send, [buf, (blocks, disp), self._block], root=root),
                  what, nbytes=len(buf))
        view = memoryview(buf)
        return [pickle.loads(view[d * BLOCK:d * BLOCK + s]) for d, s in zip(disp, sizes)]

    def scatter(self, objs: list | None, root: int = 0, what: str = "scatter"):
        """objs[r] (given on `root`) to rank r."""
        sizes, send = None, None
        if self.rank == root:
            blobs = [pickle.dumps(o, protocol=5) for o in objs]
            sizes = np.array([len(b) for b in blobs], np.int64)
            starts = np.r_[0, np.cumsum(-(-sizes // BLOCK))] * BLOCK
            send = np.zeros(int(starts[-1]), np.uint8)
            for k in range(len(blobs)):  # into place one at a time (a billion particles)
                send[starts[k]:starts[k] + sizes[k]] = np.frombuffer(blobs[k], np.uint8)
                blobs[k] = None
        mine = np.empty(1, np.int64)
        self.wait(self.comm.Iscatter(sizes, mine, root=root), what)
        n = int(mine[0])
        buf = np.empty(-(-n // BLOCK) * BLOCK, np.uint8)
        recv = [buf, len(buf) // BLOCK, self._block]
        if self.rank == root:
            blocks = -(-sizes // BLOCK)
            disp = np.r_[0, np.cumsum(blocks)[:-1]]
            self.wait(self.comm.Iscatterv([send, (blocks, disp), self._block], recv,
                                          root=root), what, nbytes=len(send))
        else:
            self.wait(self.comm.Iscatterv(None, recv, root=root), what, nbytes=n)
        return pickle.loads(memoryview(buf)[:n])
