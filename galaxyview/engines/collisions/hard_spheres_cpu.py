"""Inelastic hard spheres, CPU: the touching, approaching pairs of a step (across the
boundary's ghost boxes) are resolved once each (model/collide.py), with the sheet's
restitution law (model/sheet.py), or elastically without a sheet."""
from __future__ import annotations

import numpy as np

from galaxyview.engines.modules import Collision
from galaxyview.errors import EngineError
from galaxyview.model import collide


class HardSpheres(Collision):
    def __init__(self, system):
        super().__init__(system)
        self.pairs = None  # the last step's candidate pairs (touching), for tests

    def find(self) -> collide.Pairs:
        s, boundary = self.system, self._ghosts()
        if not (s.radius > 0).any():
            raise EngineError("hard-sphere collisions need particle radii; this state has "
                              "none (all radii 0)")
        gpos, gvel = boundary if boundary is not None else (None, None)
        return collide.touching(s.pos, s.radius, gpos, gvel)

    def _ghosts(self):
        p = self.system.params
        if p.sheet is None or p.boundary != "shear-periodic":
            return None
        return p.sheet.ghost_offsets(self.system.time, 1)

    def start(self) -> None:
        """Separate the spheres that overlap at the start (positions only)."""
        s, ghosts = self.system, self._ghosts()
        self.find()  # checks the radii
        s.pos, _ = collide.separate(s.pos, s.radius, s.mass,
                                    None if ghosts is None else ghosts[0])

    def resolve(self) -> None:
        s = self.system
        self.pairs = self.find()
        sheet = s.params.sheet
        law = (lambda vn: np.ones_like(vn)) if sheet is None else sheet.restitution_of
        priority = collide.priority(self.pairs.i, self.pairs.j, collide.step_seed(s.time))
        self.resolved, self.deferred = collide.resolve(self.pairs, s.pos, s.vel, s.mass, law,
                                                       priority)
