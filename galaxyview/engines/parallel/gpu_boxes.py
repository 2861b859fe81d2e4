"""A GPU rank's domain as the LET export sees it (GPURank's): the boxes of its walk's groups
(let_group_boxes, computed behind the multipoles and copied on a side stream), or its bounding
box where the build overflowed; shared with every rank through MPI, or on one host only their
counts, the boxes read device to device (let_device.DeviceBoxes through CUDA IPC).
"""
from __future__ import annotations

import numpy as np

from galaxyview.engines.gpu.constants import (FLAG_CELLS, FLAG_GROUPS, MAX_LEVEL, ST_FLAGS,
                                              ST_GROUPS)
from galaxyview.engines.parallel import let_device
from galaxyview.engines.parallel.launch import env_choice
from galaxyview.engines.parallel.let_device import DeviceBoxes


def let_boxes() -> str:
    """What describes a domain to the LET export (GALAXYVIEW_LET_BOXES): "groups" (the boxes
    of its walk's groups, the default) or "domain" (its bounding box alone: fewer tests, a
    larger LET)."""
    return env_choice("GALAXYVIEW_LET_BOXES", ("groups", "domain"))


class BoxesMixin:
    """Before GPUEngine in GPURank's bases (GPURank holds the pinned buffers, the side
    stream and the group boxes shared with the other ranks, `_gboxes`)."""

    def _domain_boxes(self, ev):
        """(B, 6) float32 lo, hi: the boxes of the groups of the tree just built (their
        particles), or where the build overflowed the domain's bounding box. On the device
        path the groups' boxes stay on the device: DeviceBoxes (the others copy them)."""
        self._queue_boxes(ev)
        return self._read_boxes()

    def _queue_boxes(self, ev) -> None:
        """(in the context) The groups' boxes computed behind the multipoles (event 6), and
        their count, flags, level starts and the bounding box copied on the side stream."""
        cuda, b, side = self._cuda, self.buf, self._side_stream
        p = b.ptr
        self._group_boxes_buffer()
        npos, _ = b.set_ptrs(self._cur)
        self.kernels.launch("let_group_boxes", (self._grid(), 1, 1), (256, 1, 1), npos,
                            p("group_begin"), p("group_count"), p("status"), p("let_gboxes"))
        self._let_ev[6].record()
        part = self._pinned("bbox", 6 * 4 * self._n_sm, np.float32)
        status = self._pinned("status", 8, np.uint64)
        lb = self._pinned("lb", MAX_LEVEL + 3, np.int32)
        side.wait_for_event(ev[2])
        cuda.memcpy_dtoh_async(part, p("bbox"), side)
        side.wait_for_event(self._let_ev[6])
        cuda.memcpy_dtoh_async(status, p("status"), side)
        cuda.memcpy_dtoh_async(lb, p("lb"), side)

    def _read_boxes(self):
        """_domain_boxes' result, once the side stream's copies (_queue_boxes) are in."""
        cuda, b, side = self._cuda, self.buf, self._side_stream
        p = b.ptr
        side.synchronize()
        part = self._pinned("bbox", 6 * 4 * self._n_sm, np.float32)
        status = self._pinned("status", 8, np.uint64)
        lb = self._pinned("lb", MAX_LEVEL + 3, np.int32)
        n_groups = int(status[ST_GROUPS])
        if not int(status[ST_FLAGS]) & FLAG_CELLS:  # the export walks no deeper
            self._depth = let_device.deepest_level(lb)
        valid = not int(status[ST_FLAGS]) & (FLAG_CELLS | FLAG_GROUPS) and n_groups <= b.group_cap
        self._groups_built = n_groups if valid else 0  # (the head start's share of them)
        if self.let_boxes == "domain" or not valid:
            part = part.reshape(-1, 6)
            return np.r_[part[:, :3].min(axis=0), part[:, 3:].max(axis=0)].reshape(1, 6)
        if self.peer_path() == "device":
            return DeviceBoxes(p("let_gboxes"), n_groups)  # written: the side stream waited
        groups = self._pinned("gboxes", 6 * n_groups, np.float32)
        cuda.memcpy_dtoh_async(groups, p("let_gboxes"), side)  # these only
        side.synchronize()
        return groups.reshape(-1, 6).copy()

    def _group_boxes_buffer(self) -> int:
        """(in the context) The buffer of this rank's group boxes ('let_gboxes'), that the
        other ranks open on the device path."""
        return self._gboxes.grow(self.buf, 24 * max(self.buf.group_cap, 1))

    def _own_boxes(self) -> np.ndarray:
        return self._boxes[self.comm.rank] if self._boxes else np.zeros((0, 6))

    def _share_boxes(self, mine) -> list:
        """Collective: every rank's boxes ((B_r, 6) float32, or DeviceBoxes), from this
        rank's. Through MPI; on the device path only the counts (and a bounding box or none)
        go through MPI, the groups' boxes stay on their devices, opened through CUDA IPC."""
        comm = self.comm
        if self.peer_path() != "device":
            return comm.alltoallv([mine.astype(np.float32)] * comm.size, "the domain boxes")
        on_device = isinstance(mine, DeviceBoxes)
        with self.activate():  # (allocated here when no tree offered its groups' boxes)
            self._group_boxes_buffer()
        row = np.zeros(9)  # count, on the device, generation, the box (host boxes: one)
        count = len(mine) if on_device else min(len(mine), 1)
        row[:3] = count, on_device, self._gboxes.gen
        if not on_device and len(mine):  # (the bounding box: one already)
            m = np.asarray(mine, np.float32).reshape(-1, 6)
            row[3:] = np.r_[m[:, :3].min(axis=0), m[:, 3:].max(axis=0)]
        table = comm.allgather(row, "the domain boxes")
        with self.activate():
            self._gboxes.open(self, table[:, 2])
        boxes = []
        for r, (count, dev, _, *box) in enumerate(table):
            if r == comm.rank:
                boxes.append(mine)
            elif dev:
                boxes.append(DeviceBoxes(self._gboxes[r], int(count)))
            else:
                boxes.append(np.asarray(box, np.float32).reshape(1, 6)[:int(count)])
        return boxes
