"""The shear-periodic boundary of the shearing sheet, GPU engine (kernels/boundary_shear.cu;
shear_cpu.py explains it)."""
from __future__ import annotations

from galaxyview.engines.boundaries.shear_cpu import SheetImages
from galaxyview.engines.integrators.sei_cpu import sheet_of


class ShearPeriodic(SheetImages):
    kernels = "boundary_shear.cu"

    def apply(self) -> None:
        s = self.system
        sheet, p = sheet_of(s), s.particles()
        s.launch("shear_wrap", p.pos4, p.vel4, p.n, sheet.lx, sheet.ly, sheet.shift(s.time),
                 1.5 * sheet.omega * sheet.lx)
