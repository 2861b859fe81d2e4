"""The one way to open a CUDA device and make its context current on a thread."""
from __future__ import annotations

import contextlib

from galaxyview.errors import EngineError


def primary_context(ordinal: int):
    """(pycuda Device, its retained primary context) for device `ordinal`; the caller
    detaches the context when done. EngineError names the devices there are."""
    import pycuda.driver as cuda

    cuda.init()
    count = cuda.Device.count()
    if not 0 <= ordinal < count:
        raise EngineError(f"there is no CUDA device {ordinal}: this machine has {count} "
                          f"(0..{count - 1}); pick one with --device")
    device = cuda.Device(ordinal)
    return device, device.retain_primary_context()


@contextlib.contextmanager
def pushed(context):
    """Make a pycuda context current on this thread for the block."""
    context.push()
    try:
        yield
    finally:
        context.pop()
