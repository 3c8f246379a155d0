"""GPU tests carry the `gpu` marker and are skipped, with the reason, where no GPU is usable."""
import os

import pytest

try:
    from hypothesis import settings

    settings.register_profile("default", deadline=None, max_examples=int(os.environ.get("KPS_HYPOTHESIS_EXAMPLES", 100)))
    settings.load_profile("default")
except ImportError:  # pragma: no cover
    pass


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine (cupy.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
