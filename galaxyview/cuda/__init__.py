"""CUDA helpers shared by the GPU engine and the renderer: device contexts, kernel compilation."""
