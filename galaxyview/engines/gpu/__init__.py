"""The GPU engine: Bonsai's tree code in CUDA C (kernels/nbody_*.cu), driven through pycuda.

Importing this package never needs pycuda; galaxyview.cuda.probe.unavailable_reason() says
whether the engine can run here, and engine.GPUEngine is the engine itself.
"""
