"""Errors that carry a message meant for the user: what is wrong and what to do."""


class GalaxyviewError(Exception):
    """Base class: the CLI and the window show str(error) as is, without a traceback."""


class ParameterError(GalaxyviewError, ValueError):
    """A simulation parameter (theta, dt, eps, ...) is out of its range."""


class SceneError(GalaxyviewError):
    """A scene file is missing, unparsable or has a bad value."""


class SnapshotError(GalaxyviewError):
    """A snapshot file is missing, truncated or corrupt."""


class EngineError(GalaxyviewError):
    """An engine cannot run: no GPU, no compiler, out of memory, a failed launch, NaN state."""
