"""CUDA helpers shared by the GPU engine and the renderer: device probing, contexts, kernel
compilation and the device view an engine hands to the renderer. Importing this package never
needs pycuda."""
from galaxyview.cuda.view import DeviceParticles, DeviceView

__all__ = ["DeviceParticles", "DeviceView"]
