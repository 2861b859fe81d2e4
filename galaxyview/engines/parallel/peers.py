"""Device to device between the GPU ranks of one host: CUDA IPC.

When every rank runs on one host and each GPU reaches the others' (peer access), a rank can
open another rank's device buffer through a CUDA IPC handle and copy from it over NVLink or
PCIe, without the host and without a CUDA-aware MPI. `choose` agrees on that path once for
all ranks (GALAXYVIEW_PEERS=auto|device|host: host sends everything through MPI, as across
hosts); `PeerBuffers` keeps the other ranks' buffers of one kind open and reopens one when its
rank allocated it anew (its generation changed). The leavers (migrate.py), the groups' boxes
(GPURank._share_boxes), the LETs (GPURank._exchange_peers) and the light images
(GPURank.summed_light) go this way.
"""
from __future__ import annotations

import socket
import zlib

import numpy as np

from galaxyview.engines.parallel.launch import env_choice
from galaxyview.errors import EngineError

PATHS = ("auto", "device", "host")


def wanted() -> str:
    return env_choice("GALAXYVIEW_PEERS", PATHS)


def choose(eng) -> str:
    """Collective: "device" when every rank is on this host and this GPU reaches every other
    rank's (and GALAXYVIEW_PEERS allows it), else "host". eng: a GPU rank."""
    comm, want = eng.comm, wanted()
    host = float(zlib.crc32(socket.gethostname().encode()))
    where = comm.allgather([host, eng.ordinal], "the ranks' hosts and devices")
    ok = want != "host" and bool(np.all(where[:, 0] == host))
    if ok:
        cuda = eng._cuda
        ok = all(int(o) == eng.ordinal or eng._dev.can_access_peer(cuda.Device(int(o)))
                 for o in where[:, 1])
    agreed = comm.allreduce([not ok], "max", "the device-to-device path")[0] == 0
    if want == "device" and not agreed:
        raise EngineError("GALAXYVIEW_PEERS=device: the GPUs exchange device to device only "
                          "when every process is on one host and its GPUs reach each other "
                          "(peer access); use GALAXYVIEW_PEERS=host or auto")
    return "device" if agreed else "host"


class PeerBuffers:
    """One kind of device buffer (`what`) that every rank holds under `name` in its engine's
    buffers: this rank's grown with `grow` (its generation counts the allocations), the other
    ranks' opened through CUDA IPC. Call `open` (with the engine's context current) on every
    rank with every rank's generation: it exchanges handles only when one changed."""

    def __init__(self, what: str, name: str):
        self.what, self.name = what, name
        self.gen = 0  # this rank's buffer: allocations so far
        self._open: dict = {}  # rank -> (its generation, the opened IPC handle)
        self._gens = None  # every rank's generation at the last exchange

    def grow(self, buf, nbytes: int) -> int:
        """(in the context) Room for nbytes in this rank's buffer; its device pointer."""
        if buf._alloc(self.name, nbytes):
            self.gen += 1  # the others reopen it at their next `open`
        return buf.ptr(self.name)

    def open(self, eng, gens) -> None:
        """Collective when a generation changed: this rank's buffer offered, the others' new
        ones opened."""
        comm, ptr = eng.comm, eng.buf.ptr(self.name)
        gens = np.asarray(gens, np.int64)
        if self._gens is not None and np.array_equal(gens, self._gens):
            return  # (every rank has the same gens: they all go on, or all exchange)
        self._gens = gens
        stale = [r for r in range(comm.size)
                 if r != comm.rank and self._open.get(r, (None,))[0] != gens[r]]
        handle = np.frombuffer(bytes(eng._cuda.mem_get_ipc_handle(ptr)), np.uint8)
        handles = comm.allgather(handle, f"the IPC handles of {self.what}", dtype=np.uint8)
        for r in stale:
            if r in self._open:
                self._open.pop(r)[1].close()
            raw = bytearray(handles[r].tobytes())
            self._open[r] = (gens[r], eng._cuda.IPCMemoryHandle(raw))

    def __getitem__(self, rank: int) -> int:
        """Rank `rank`'s buffer, as a device pointer of this context."""
        return int(self._open[rank][1])

    def close(self) -> None:
        """Close the opened buffers (within the engine's context)."""
        for _, handle in self._open.values():
            handle.close()
        self._open.clear()
        self._gens = None
