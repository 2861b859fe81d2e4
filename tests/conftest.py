"""Tests marked gpu are skipped, with the reason, where the GPU engine cannot run."""
import pytest


def pytest_collection_modifyitems(config, items):
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    from galaxyview.engines import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason:
        skip = pytest.mark.skip(reason=f"GPU engine unavailable: {reason}")
        for item in gpu:
            item.add_marker(skip)
