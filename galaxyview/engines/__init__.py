"""Gravity engines behind one interface: the CPU engine (numpy) and the GPU engine (pycuda),
each running the physics modules (engines/modules.py) its params name."""
from __future__ import annotations

from galaxyview.engines import modules
from galaxyview.engines.base import PHASES, Energies, Engine, StepStats
from galaxyview.errors import EngineError
from galaxyview.model.params import Params

BACKENDS = ("auto", "cpu", "gpu")


def gpu_unavailable_reason(device: int = 0) -> str | None:
    """None when the GPU engine can run here on CUDA device `device`; otherwise why not."""
    try:
        from galaxyview.cuda import probe
    except ImportError as exc:  # the CUDA helpers themselves are missing or broken
        return f"the GPU engine could not be imported ({exc})"
    return probe.unavailable_reason(device)


def resolve_backend(backend: str = "auto", device: int = 0) -> tuple[str, str]:
    """("cpu" or "gpu", a one-line reason) for a requested backend; raises EngineError when
    the GPU is asked for and cannot run."""
    if backend not in BACKENDS:
        raise EngineError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "cpu":
        return "cpu", "CPU engine (asked for)"
    reason = gpu_unavailable_reason(device)
    if reason is None:
        return "gpu", "GPU engine"
    if backend == "gpu":
        raise EngineError(f"--backend gpu: {reason}; use --backend cpu (or auto)")
    return "cpu", f"CPU engine ({reason})"


def create_engine(backend: str = "auto", params: Params | None = None,
                  gravity: str | None = None, device: int = 0):
    """Return (engine, why): the engine for `backend` and a one-line reason for the choice.
    `device`: the CUDA device ordinal of the GPU engine; `gravity`: "tree" or "direct" (None:
    what the integrator needs, the tree for the leapfrog)."""
    name, why = resolve_backend(backend, device)
    modules.check_names(params or Params(), name)
    if name == "gpu":
        from galaxyview.engines.gpu.engine import GPUEngine

        engine = GPUEngine(params, gravity=gravity, device=device)
        return engine, f"GPU engine on {engine.device_name} (device {device})"
    from galaxyview.engines.cpu.engine import CPUEngine

    return CPUEngine(params, gravity=gravity), why


def module_names(what: str) -> list[str]:
    """Names of the shipped physics modules of one kind: 'integrator', 'boundary', 'collision'."""
    return modules.REGISTRIES[what].names()


__all__ = ["BACKENDS", "PHASES", "Energies", "Engine", "StepStats", "create_engine",
           "gpu_unavailable_reason", "module_names", "resolve_backend"]
