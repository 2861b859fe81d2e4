"""The timeline: the last K checkpoints of a running engine (Engine.checkpoint), taken every M
steps, kept where the engine runs (device memory on the GPU). rewind(i) restores one exactly;
the next step after a rewind starts a branch: the checkpoints after it are dropped, so the
timeline then holds the branch (with whatever theta, dt, eps are set: "what if")."""
from __future__ import annotations

from galaxyview.errors import EngineError, ParameterError


CAPACITY, EVERY = 32, 10  # states kept, steps between them (defaults)
BUDGET_BYTES = 2_000_000_000  # at most this much memory for kept states (the oldest go first)


class Timeline:
    def __init__(self, capacity: int = CAPACITY, every: int = EVERY,
                 budget_bytes: int = BUDGET_BYTES):
        self.capacity, self.every, self.budget = 1, 1, int(budget_bytes)
        self.entries: list = []  # Checkpoints, oldest first
        self.position: int | None = None  # the entry restored last, until the next step
        self.configure(capacity, every)

    def configure(self, capacity: int | None = None, every: int | None = None) -> None:
        for name, v in (("capacity", capacity), ("every", every)):
            if v is not None and (isinstance(v, bool) or int(v) != v or v < 1):
                raise ParameterError(f"timeline {name} must be a whole number >= 1, got {v!r}")
        self.capacity = int(capacity or self.capacity)
        self.every = int(every or self.every)
        self._trim()

    # -- keeping ---------------------------------------------------------------------------------
    def due(self, engine) -> bool:
        """A checkpoint is due: none yet, or `every` steps since the newest."""
        return not self.entries or engine.steps_done - self.entries[-1].steps_done >= self.every

    def keep(self, engine) -> bool:
        """Take a checkpoint of `engine` when due; False where the engine keeps none."""
        if not self.due(engine):
            return False
        reuse = None
        if len(self.entries) >= self.limit and self.position is None:
            reuse = self.entries.pop(0)  # the oldest goes: its memory holds the new state
        try:
            cp = engine.checkpoint(reuse)
        except EngineError:  # out of (device) memory: make room, keep fewer from now on
            if not self.entries:
                raise
            self.capacity = max(1, len(self.entries) - 1)
            self._trim()
            cp = engine.checkpoint()
        if cp is None:
            return False
        self.entries.append(cp)
        self._trim()
        return True

    def branch(self) -> None:
        """Before stepping on from a rewound state: drop the checkpoints after it."""
        if self.position is not None:
            for cp in self.entries[self.position + 1:]:
                cp.free()
            del self.entries[self.position + 1:]
            self.position = None

    def rewind(self, engine, index: int):
        """Restore entry `index` (0 = oldest) into `engine`; returns its Checkpoint."""
        if not 0 <= index < len(self.entries):
            raise ParameterError(f"no kept state {index}; the timeline holds "
                                 f"{len(self.entries)}")
        cp = self.entries[index]
        engine.restore(cp)
        self.position = index
        return cp

    @property
    def limit(self) -> int:
        """States kept at most: the capacity, or fewer when they would outgrow the budget."""
        if not self.entries:
            return self.capacity
        return max(1, min(self.capacity, self.budget // max(self.entries[-1].nbytes, 1)))

    def _trim(self) -> None:
        while len(self.entries) > self.limit:
            self.entries.pop(0).free()
            if self.position is not None:
                self.position = max(self.position - 1, 0)

    def clear(self) -> None:
        for cp in self.entries:
            cp.free()
        self.entries.clear()
        self.position = None

    # -- for the window --------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return sum(cp.nbytes for cp in self.entries)

    def budget_bytes(self) -> int:
        """Memory when full, from the size of one checkpoint."""
        return self.entries[-1].nbytes * self.limit if self.entries else 0

    def describe(self) -> str:
        if not self.entries:
            return "timeline: nothing kept yet"
        where = "GPU" if self.entries[-1].on_device else "host"
        return (f"{len(self.entries)}/{self.limit} states every {self.every} steps, "
                f"{_size(self.nbytes)} of {_size(self.budget_bytes())} ({where} memory)")


def _size(nbytes: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return ""
