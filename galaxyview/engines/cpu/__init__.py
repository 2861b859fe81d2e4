"""The CPU engine (numpy): Bonsai's tree algorithm, vectorised, and direct summation.

keys (Morton keys, sort) -> tree (cells level by level, into a cells.Tree) -> groups ->
multipoles -> walk (interaction lists of all groups, level by level) -> forces (lists evaluated
on padded blocks by kernels, on worker threads); direct is the float64 reference; engine wires
them to the Engine interface. Conventions shared with the GPU engine: a particle's pair with
itself is counted in pp but left out of the forces and potentials; without softening, pairs at
zero distance are left out as well.
"""
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu.forces import tree_forces
from galaxyview.engines.cpu.tree import Tree, build_tree

__all__ = ["CPUEngine", "Tree", "build_tree", "direct_forces", "tree_forces"]
