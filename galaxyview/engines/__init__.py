"""Gravity engines behind one interface: the compiled CPU engine (numba, backend "cpu"), the
reference CPU engine (numpy, "reference") and the GPU engine (pycuda, "gpu"), each running the
physics modules (engines/modules.py) its params name."""
from __future__ import annotations

from galaxyview.engines import modules
from galaxyview.engines.base import PHASES, Energies, Engine, StepStats
from galaxyview.errors import EngineError
from galaxyview.model.params import Params

BACKENDS = ("auto", "cpu", "reference", "gpu")


def gpu_unavailable_reason(device: int = 0) -> str | None:
    """None when the GPU engine can run here on CUDA device `device`; otherwise why not."""
    try:
        from galaxyview.cuda import probe
    except ImportError as exc:  # the CUDA helpers themselves are missing or broken
        return f"the GPU engine could not be imported ({exc})"
    return probe.unavailable_reason(device)


def cpu_unavailable_reason() -> str | None:
    """None when the compiled CPU engine can run here (numba importable); otherwise why not."""
    from galaxyview.engines.cpu_numba import unavailable_reason

    return unavailable_reason()


def resolve_backend(backend: str = "auto", device: int = 0) -> tuple[str, str]:
    """("cpu", "reference" or "gpu", a one-line reason) for a requested backend; raises
    EngineError when the GPU or the compiled CPU engine is asked for and cannot run. auto: the
    GPU when usable, else the compiled CPU engine, else the reference engine, saying why.
    `device` (a CUDA ordinal) other than 0 with a CPU backend is an EngineError: it has no
    meaning there (auto may still fall back to the CPU, saying why)."""
    if backend not in BACKENDS:
        raise EngineError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend in ("cpu", "reference") and device:
        raise EngineError(f"--device {device} chooses a GPU; the CPU engines run on this "
                          f"machine's cores: leave --device out (or use --backend gpu), and "
                          f"set their threads with --threads N")
    if backend == "reference":
        return "reference", "reference CPU engine (numpy; asked for)"
    if backend == "cpu":
        reason = cpu_unavailable_reason()
        if reason:
            raise EngineError(f"--backend cpu: {reason}; or use --backend reference (numpy)")
        return "cpu", "CPU engine (asked for)"
    reason = gpu_unavailable_reason(device)
    if reason is None:
        return "gpu", "GPU engine"
    if backend == "gpu":
        raise EngineError(f"--backend gpu: {reason}; use --backend cpu (or auto)")
    cpu_reason = cpu_unavailable_reason()
    if cpu_reason:
        return "reference", f"reference CPU engine, numpy ({reason}; {cpu_reason})"
    return "cpu", f"CPU engine ({reason})"


def module_kind(backend: str) -> str:
    """The physics-module kind (engines/modules.py KINDS) a resolved backend runs."""
    return "gpu" if backend == "gpu" else "cpu"


def set_threads(n: int | None) -> None:
    """Threads of the CPU engines (None: GALAXYVIEW_THREADS, else all CPUs)."""
    from galaxyview.engines.cpu import threads

    threads.set_threads(n)


def create_engine(backend: str = "auto", params: Params | None = None,
                  gravity: str | None = None, device: int = 0):
    """Return (engine, why): the engine for `backend` and a one-line reason for the choice.
    Under mpirun (more than one process): the parallel engine over the job's processes
    (engines/parallel; rank 0 calls this, the others serve). `device`: the CUDA device
    ordinal of the GPU engine; `gravity`: "tree" or "direct" (None:
    what the integrator needs, the tree for the leapfrog). auto falls back to the reference
    engine when the compiled CPU engine fails to build."""
    name, why = resolve_backend(backend, device)
    modules.check_names(params or Params(), module_kind(name))
    from galaxyview.engines import parallel

    if parallel.launched():  # started by mpirun: one simulation over all its processes
        from galaxyview.engines.parallel.engine import ParallelEngine

        engine = ParallelEngine(name, params, gravity)
        return engine, f"{why.split(' (')[0]} over {engine.device_name}"
    if name == "gpu":
        from galaxyview.engines.gpu.engine import GPUEngine

        engine = GPUEngine(params, gravity=gravity, device=device)
        return engine, f"GPU engine on {engine.device_name} (device {device})"
    from galaxyview.engines.cpu import threads
    from galaxyview.engines.cpu.engine import CPUEngine

    threads.count()  # a bad GALAXYVIEW_THREADS fails here, with its message
    if name == "cpu":
        from galaxyview.engines.cpu_numba.engine import NumbaEngine

        try:
            return NumbaEngine(params, gravity=gravity), why
        except EngineError as exc:
            if backend == "cpu":
                raise
            why = f"reference CPU engine, numpy ({exc})"
    return CPUEngine(params, gravity=gravity), why


def module_names(what: str) -> list[str]:
    """Names of the shipped physics modules of one kind: 'integrator', 'boundary', 'collision'."""
    return modules.REGISTRIES[what].names()


__all__ = ["BACKENDS", "PHASES", "Energies", "Engine", "StepStats", "cpu_unavailable_reason",
           "create_engine", "gpu_unavailable_reason", "module_kind", "module_names",
           "resolve_backend", "set_threads"]
