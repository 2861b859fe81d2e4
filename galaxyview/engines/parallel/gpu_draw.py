"""What the renderer asks a GPU rank for (GPURank's drawing side): the light of its particles
splatted on its GPU and the ranks' images summed on rank 0's (device to device on one host),
colour values (the density over all ranks), a selection's centre and strided samples of its
rows. Nothing of the state leaves the device but images, sums and samples."""
from __future__ import annotations

import numpy as np

from galaxyview.engines.parallel.let_device import T
from galaxyview.errors import EngineError
from galaxyview.light import kernel as light
from galaxyview.light.device import (DEVICE_VALUES, P_FLOATS, SHUFFLE_STRIDE,
                                     VALUES_FROM_ENGINE, splat_params)
from galaxyview.model.state import Selection


class DrawMixin:
    """Before RankMixin and GPUEngine in GPURank's bases (GPURank holds the buffers, the
    density (DeviceDensity) and the light images shared with the other ranks)."""

    def local_light(self, view) -> np.ndarray:
        """The light of this rank's particles for `view`, splatted on its GPU as the window's
        draw path splats (render_pack.cu, render_splat.cu): only the image leaves the
        device."""
        w, h = view.width, view.height
        with self.activate():
            self._splat_light(view)
            return self._download(self.buf.ptr("light_image"), np.float32,
                                  4 * w * h).reshape(h, w, 4)

    def summed_light(self, view, on_device: bool = False):
        """Collective: every rank's light for `view` summed on rank 0's GPU, the others'
        images read device to device (CUDA IPC) and added there. Returns on rank 0 the sum
        downloaded, or with on_device its device pointer (rank 0's light image, valid until
        the next command); None elsewhere. Through the host (an MPI Reduce) where the GPUs do
        not reach each other (with on_device, rank 0 then uploads the sum)."""
        b, w, h = self.buf, view.width, view.height
        count = 4 * w * h
        if self.peer_path() != "device":
            total = super().summed_light(view)
            if not on_device or self.comm.rank:
                return total
            with self.activate():
                mine = self._images.grow(b, 4 * count)
                self._cuda.memcpy_htod(mine, np.ascontiguousarray(total))
            return mine
        error = None
        try:
            with self.activate():
                self._splat_light(view)
                self._cuda.Context.synchronize()  # done before rank 0 reads it
        except Exception as exc:  # still take part in the exchange, or the others would wait
            error = exc
        table = self.comm.allgather([error is not None, self._images.gen], "the light images")
        if error is not None:
            raise error
        if table[:, 0].any():
            return None  # the failing process reports
        with self.activate():
            self._images.open(self, table[:, 1])
            if self.comm.rank:
                return None  # rank 0 reads this image before its next command
            mine = b.ptr("light_image")
            for r in range(1, self.comm.size):  # read where it lies (peer memory), added
                self.kernels.launch("light_add", (self._grid(count), 1, 1), T, mine,
                                    self._images[r], count)
            if on_device:
                self._cuda.Context.synchronize()
                return mine
            return self._download(mine, np.float32, count).reshape(h, w, 4)

    def _splat_light(self, view) -> None:
        """(in the context) This rank's light for `view` into the device's light_image."""
        b, n, k = self.buf, self._n, self.kernels
        w, h = view.width, view.height
        self._sync()
        self._meta_to_device()
        pos, vel = b.set_ptrs(self._cur)
        code, vals = DEVICE_VALUES.get(view.mode, 0), 0
        if view.mode == "galaxy":
            b.room("light_vals", 4 * n)
            vals = b.ptr("light_vals")
            k.launch("meta_galaxy", (self._grid(), 1, 1), T, b.ptr("meta"),
                     b.ptr(f"id{self._cur}"), n, vals)
        elif view.mode == "density":
            vals = self._device_values("density") or 0
        if vals:
            code = VALUES_FROM_ENGINE
        b.room("light_verts", 24 * n)  # (with room to spare: n changes every step)
        b._alloc("light_params", 4 * P_FLOATS)
        self._images.grow(b, 16 * w * h)
        blocks = (-(-n // 256), 1, 1)
        k.launch("pack_vertices", blocks, T, pos, vel, b.ptr("acc"), vals, 0,
                 b.ptr("light_verts"), n, np.uint64(SHUFFLE_STRIDE), code)
        self._cuda.memcpy_htod(b.ptr("light_params"), splat_params(view))
        self._cuda.memset_d32(b.ptr("light_image"), 0, 4 * w * h)
        k.launch("splat", blocks, T, b.ptr("light_verts"), n, b.ptr("light_params"),
                 b.ptr("light_image"), w, h)

    def _device_values(self, mode: str) -> int | None:
        """The density over all ranks' particles where there are others (density_device.py;
        collective), else the engine's own values."""
        if mode == "density" and not self._alone():
            return self._density.values()
        return super()._device_values(mode)

    def local_centre(self, select) -> tuple:
        """A Selection's sums on the device, from its meta (kernels/parallel_domain.cu
        selected_com): 8 float64 come back, no state."""
        if not isinstance(select, Selection):
            return super().local_centre(select)
        bits = sum(1 << int(c) for c in select.components) if select.components else 0xFFFFFFFF
        galaxy = -1 if select.galaxy is None else int(select.galaxy)
        b = self.buf
        with self.activate():
            self._sync()
            self._meta_to_device()
            b.room("com_sums", 64)
            self._cuda.memset_d32(b.ptr("com_sums"), 0, 16)
            pos, _ = b.set_ptrs(self._cur)
            self.kernels.launch("selected_com", (self._grid(), 1, 1), (256, 1, 1), pos,
                                b.ptr("meta"), b.ptr(f"id{self._cur}"), self._n, galaxy,
                                np.uint32(bits), b.ptr("com_sums"))
            self._sync()
            s = self._download(b.ptr("com_sums"), np.float64, 8)
        return float(s[3]), s[:3], s[4:7], int(s[7])

    def local_sample(self, count: int):
        """Strided copies of the device's rows (GPUEngine.sample_state), with global ids."""
        slots, state = self.sample_state(count)
        return self.ids[slots], state

    def local_values(self, mode: str, count: int | None = None):
        """(global ids, float32 values) of colour `mode` ('density', collective) of this
        rank's particles; or (None, values) of about `count` of them (any mode: strided
        copies of the rows)."""
        if mode == "galaxy":  # the host's tags, every k-th
            return None, self._galaxy[::self._stride(count)[0]].astype(np.float32)
        if mode != "density":  # from pos, vel, mass and (where needed) the potential
            every, pot = self._stride(count), None
            with self.activate():
                self._sync()
                pos, vel = self.buf.set_ptrs(self._cur)
                p4, v4 = (self._download_rows(ptr, np.float32, 4, *every) for ptr in (pos, vel))
                if mode in light.NEEDS_POTENTIAL:
                    pot = self._download_rows(self.buf.ptr("acc"), np.float32, 4, *every)[:, 3]
            return None, light.particle_values(mode, p4[:, :3], v4[:, :3], p4[:, 3], None, pot)
        with self.activate():
            values = self._device_values(mode)
            if not values:
                raise EngineError(f"no {mode} values before the first force evaluation")
            k, rows = self._stride(self._n if count is None else count)
            got = self._download_rows(values, np.float32, 1, k, rows)[:, 0]
            if count is not None:
                return None, got
            slots = self._download_rows(self.buf.ptr(f"id{self._cur}"), np.uint32, 1, k, rows)
        return self.ids[slots[:, 0]], got
