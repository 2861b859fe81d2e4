"""The CPU engine (numpy): Bonsai's tree algorithm, vectorised, and direct summation.

keys (Morton keys) -> tree (cells level by level) -> groups -> multipoles -> walk (interaction
lists, evaluated by kernels on padded blocks); direct is the float64 reference; engine wires
them to the Engine interface.
"""
from galaxyview.engines.cpu.direct import direct_forces
from galaxyview.engines.cpu.engine import CPUEngine
from galaxyview.engines.cpu.tree import Tree, build_tree
from galaxyview.engines.cpu.forces import tree_forces

__all__ = ["CPUEngine", "Tree", "build_tree", "direct_forces", "tree_forces"]
