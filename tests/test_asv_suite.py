"""The asv suite's structure, on the CPU: it imports without a GPU, its parameters name real
cases, ops and dtypes, every track has a unit, and without a GPU it skips (NotImplementedError)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ops.bench import cases, peers, sweep, timing

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "asv_benches" / "benchmarks" / "reductions.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("asv_reductions", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_is_an_existing_environment_suite():
    conf = json.loads((ROOT / "asv_benches" / "asv.conf.json").read_text())
    assert conf["environment_type"] == "existing" and conf["repo"] == ".."
    assert conf["benchmark_dir"] == "benchmarks" and conf["results_dir"] == "results"
    assert conf["launch_method"] in ("spawn", "forkserver")  # never plain fork: CUDA does not survive it


def test_parameters_are_well_formed(suite):
    public = {c.name for c in cases.load_cases()}
    assert set(suite.CASES) == public
    assert set(suite.HEADLINE_CASES) <= public and set(suite.SMALL_CASES) <= public
    groups = [set(suite.OPS), set(suite.STATE_OPS), set(suite.FAMILY_OPS)]
    assert set.union(*groups) == set(peers.OPS) and sum(map(len, groups)) == len(peers.OPS)
    assert set(suite.WIDTHS) <= set(sweep.WIDTHS) and len(suite.WIDTH_KINDS) == len(sweep.KINDS)
    classes = [suite.PublicCases, suite.PercentOfCeiling, suite.OpsByDtype, suite.SmallEndToEnd, suite.Widths,
               suite.StateOps, suite.FamilyOps, suite.Rosenbrock]
    assert all(suite.applies(*pair.split("-")) for pair in suite.OP_DTYPES)
    assert {p.split("-")[0] for p in suite.OP_DTYPES} == set(suite.MATRIX_OPS)
    assert {p.split("-")[1] for p in suite.OP_DTYPES if p.startswith("var-")} == {"complex64", "complex128"}
    for cls in classes:
        assert len(cls.params) == len(cls.param_names)
        assert all(isinstance(p, list) and p for p in cls.params)
        tracks = [n for n in dir(cls) if n.startswith(("track_", "time_"))]
        assert tracks, cls
        for name in tracks:
            if name.startswith("track_"):
                assert getattr(cls, name).unit in ("GB/s", "%")
    assert suite.applies("all", "bool") and not suite.applies("sum", "bool") and not suite.applies("any", "int32")


@pytest.mark.skipif(timing.gpu_available(), reason="checks the no-GPU behaviour")
def test_skips_cleanly_without_a_gpu(suite):
    for cls, args in ((suite.PublicCases, ("tiny_32x32", "kps")), (suite.OpsByDtype, ("full_1d_256M", "max-float32")),
                      (suite.PercentOfCeiling, ("tiny_32x32",)), (suite.Widths, ("sum-float32", 7, 0, "kps"))):
        assert cls().setup_cache() is None
        with pytest.raises(NotImplementedError):
            cls().setup(None, *args)  # asv hands the (empty) cache first
    with pytest.raises(NotImplementedError):
        suite.SmallEndToEnd().setup("tiny_32x32", "kps")


def test_tracks_read_their_numbers_from_the_cache(suite):
    """Every parameter combination of a tracked class has a key its setup_cache fills; a missing
    number (a peer that is not installed) skips that combination instead of reporting nonsense."""
    import itertools

    for cls in (suite.PublicCases, suite.PercentOfCeiling, suite.OpsByDtype):
        combos = list(itertools.product(*cls.params))
        cache = {cls.key(*c): 1000.0 + i for i, c in enumerate(combos)}
        cache["ceiling"] = 2000.0
        assert len(cache) == len(combos) + 1  # one number per combination
        tracks = [getattr(cls(), n) for n in dir(cls) if n.startswith("track_")]
        for i, combo in enumerate(combos):
            cls().setup(cache, *combo)
            for track in tracks:
                value = track(cache, *combo)
                assert value == (1000.0 + i if track.unit == "GB/s" else 100.0 * (1000.0 + i) / 2000.0)
        with pytest.raises(NotImplementedError):
            cls().setup({"ceiling": 2000.0}, *combos[0])
    measured = {(case, op, dt) for case, dt, ops in suite._matrix_runs() for op in ops}
    assert measured == {(case, *pair.split("-")) for case in suite.CASES for pair in suite.OP_DTYPES}
