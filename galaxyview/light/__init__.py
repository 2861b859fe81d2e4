"""The particles' light for one view, splatted on the host (numba): the kernel that both the
renderer (render/host_splat.py) and the processes of a parallel engine run, so that each
process can splat its own particles and only the float images travel."""
from galaxyview.light.kernel import LightView, particle_points, particle_values, splat

__all__ = ["LightView", "particle_points", "particle_values", "splat"]
