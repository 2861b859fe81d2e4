"""What the CUDA sprites need of a LightView (kernels/render_pack.cu, kernels/render_splat.cu):
the value codes of the vertex pack and the splat's parameter block. The window's draw path
(render/splat.py, render/sources.py) and a parallel engine's GPU processes, which splat their
own particles on their device, share them."""
from __future__ import annotations

import numpy as np

from galaxyview.light.kernel import EYE_FLOATS, LightView

# render_pack.cu's value codes: computed from the particle arrays, or read from `vals`
DEVICE_VALUES = {"speed": 0, "potential": 1, "energy": 2, "mass": 3, "vz": 5, "z": 6}
VALUES_FROM_ENGINE = 4
SHUFFLE_STRIDE = 2_147_483_647  # prime, so coprime with any particle count (see render_pack.cu)
# render_splat.cu's parameter block (floats): mvp, component colours and weights, point size,
# light per particle, colour mode, the map's ends; galaxy colours at P_GALAXY, the map at P_LUT;
# the projection and the eye count at P_PROJ, then MAX_EYES eye rows (light/kernel.py); the
# population colours (8 rgb) at P_POPULATION
P_GALAXY, P_LUT, LUT_SIZE = 56, 80, 256
P_PROJ = P_LUT + 3 * LUT_SIZE
MAX_EYES = 2
P_POPULATION = P_PROJ + 2 + MAX_EYES * EYE_FLOATS
P_FLOATS = P_POPULATION + 24


def splat_params(view: LightView) -> np.ndarray:
    """(P_FLOATS,) float32: render_splat.cu's parameters for `view`."""
    p = np.zeros(P_FLOATS, np.float32)
    p[:16] = np.asarray(view.mvp, np.float32).ravel()
    p[16:48] = np.asarray(view.components, np.float32).ravel()
    p[48:53] = (view.point_size, view.gain, view.code, view.lo, view.hi)
    p[P_GALAXY:P_LUT] = np.asarray(view.galaxies, np.float32).ravel()
    p[P_LUT:P_PROJ] = np.asarray(view.lut, np.float32).reshape(LUT_SIZE, 3).ravel()
    eyes = view.eye_rows()
    if not 1 <= len(eyes) <= MAX_EYES:
        raise ValueError(f"the CUDA splat takes 1..{MAX_EYES} eyes, got {len(eyes)}")
    p[P_PROJ:P_PROJ + 2] = (view.projection, len(eyes))
    p[P_PROJ + 2:P_PROJ + 2 + eyes.size] = eyes.ravel()
    p[P_POPULATION:P_FLOATS] = view.population_rows().ravel()
    return p
