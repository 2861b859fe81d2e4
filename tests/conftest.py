"""Tests marked gpu are skipped, with the reason, where the GPU engine cannot run; tests
marked gui where Qt (PyQt6) is absent, as on the GPU machines."""
import importlib.util

import pytest


def _skip(items, marker, reason):
    chosen = [item for item in items if item.get_closest_marker(marker)]
    if chosen and reason:
        for item in chosen:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("PyQt6") is None:
        _skip(items, "gui", "the window needs Qt: PyQt6 is not installed")
    if any(item.get_closest_marker("gpu") for item in items):
        from galaxyview.engines import gpu_unavailable_reason

        reason = gpu_unavailable_reason()
        _skip(items, "gpu", reason and f"GPU engine unavailable: {reason}")
