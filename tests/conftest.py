"""Two tiers, and the GPU marker.

- The fast tier (`python3 -m pytest -q`, the README's command): every test not marked `exhaustive`,
  hypothesis tests with few examples. Minutes on two cores.
- The exhaustive tier (`python3 -m pytest -q --exhaustive`): the tests marked `exhaustive` (every
  specialisation compiled, replays over many views and sizes, the sweep's case lists) and every
  hypothesis test again with full example counts. CI runs both, the fast tier first.
- `--all-tiers`: both in one run (the GPU machine's suite, `.ci/gpu`).

GPU tests carry the `gpu` marker and are skipped, with the reason, where no GPU is usable.
"""
import os

import pytest

#: Hypothesis examples a test draws in the fast tier, and in the others (KPS_HYPOTHESIS_EXAMPLES
#: overrides the latter).
FAST_EXAMPLES = 10
FULL_EXAMPLES = int(os.environ.get("KPS_HYPOTHESIS_EXAMPLES", 100))


def pytest_addoption(parser):
    group = parser.getgroup("kps", "test tiers")
    group.addoption("--exhaustive", action="store_true",
                    help="run the exhaustive tier: the tests marked exhaustive and every hypothesis test at full "
                         "example counts (the fast tier is the default)")
    group.addoption("--all-tiers", action="store_true", help="run both tiers, hypothesis at full example counts")


def tier(config) -> str:
    if config.getoption("--all-tiers"):
        return "all"
    return "exhaustive" if config.getoption("--exhaustive") else "fast"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line("markers", "exhaustive: the exhaustive tier (pytest --exhaustive), not the fast one")
    os.environ["KPS_TEST_TIER"] = tier(config)  # read by helpers.examples() as test modules import
    try:
        from hypothesis import settings
    except ImportError:  # pragma: no cover
        return
    settings.register_profile("fast", deadline=None, max_examples=FAST_EXAMPLES)
    settings.register_profile("full", deadline=None, max_examples=FULL_EXAMPLES)
    settings.load_profile("fast" if tier(config) == "fast" else "full")


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


def _in_tier(item, name: str) -> bool:
    exhaustive = item.get_closest_marker("exhaustive") is not None
    if name == "fast":
        return not exhaustive
    drawn = getattr(getattr(item, "obj", None), "is_hypothesis_test", False)
    return name == "all" or exhaustive or drawn


def pytest_collection_modifyitems(config, items):
    name = tier(config)
    keep = [item for item in items if _in_tier(item, name)]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if not _in_tier(item, name)])
        items[:] = keep
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine (cupy.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
