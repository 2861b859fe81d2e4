"""Gravity engines behind one interface: the CPU engine (numpy) and the GPU engine (pycuda)."""
from __future__ import annotations

from galaxyview.engines.base import PHASES, Energies, Engine, StepStats
from galaxyview.errors import EngineError
from galaxyview.model.params import Params

BACKENDS = ("auto", "cpu", "gpu")


def gpu_unavailable_reason() -> str | None:
    """None when the GPU engine can run here; otherwise why not, in one line."""
    try:
        from galaxyview.engines.gpu import probe
    except ImportError as exc:  # the GPU engine package itself is missing or broken
        return f"the GPU engine could not be imported ({exc})"
    return probe.unavailable_reason()


def resolve_backend(backend: str = "auto") -> tuple[str, str]:
    """("cpu" or "gpu", a one-line reason) for a requested backend; raises EngineError when
    the GPU is asked for and cannot run."""
    if backend not in BACKENDS:
        raise EngineError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "cpu":
        return "cpu", "CPU engine (asked for)"
    reason = gpu_unavailable_reason()
    if reason is None:
        return "gpu", "GPU engine"
    if backend == "gpu":
        raise EngineError(f"--backend gpu: {reason}; use --backend cpu (or auto)")
    return "cpu", f"CPU engine ({reason})"


def create_engine(backend: str = "auto", params: Params | None = None, gravity: str = "tree"):
    """Return (engine, why): the engine for `backend` and a one-line reason for the choice."""
    name, why = resolve_backend(backend)
    if name == "gpu":
        from galaxyview.engines.gpu.engine import GPUEngine

        engine = GPUEngine(params, gravity=gravity)
        return engine, f"GPU engine on {engine.device_name}"
    from galaxyview.engines.cpu.engine import CPUEngine

    return CPUEngine(params, gravity=gravity), why


__all__ = ["BACKENDS", "PHASES", "Energies", "Engine", "StepStats", "create_engine",
           "gpu_unavailable_reason", "resolve_backend"]
