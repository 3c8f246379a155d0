"""Dask arrays of CuPy blocks spread over two GPUs (dask-cuda's LocalCUDACluster: a worker per GPU):
every op, named and a user's functors with and without a state, gives NumPy's answer; a worker
killed in the middle of a variance and an argmax is replaced, dask recomputes its blocks, and both
results stay right. Skipped, with the reason, where fewer than two GPUs are visible."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kps
import ops
from test_dask import MINMAX, RMS, SPREAD, same
from test_dask_cluster import kill_a_busy_worker

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

X = np.random.default_rng(11).standard_normal((48, 20, 6))
NANS = np.where(X > 1.2, np.nan, X)  # scattered NaN, no slice of NaN alone
CHUNKS = (6, 10, 6)  # 16 blocks

#: name -> (this project's op, NumPy's twin or None for this project's NumPy backend on the whole
#: array, which the CPU tests hold to NumPy and SciPy; the input)
OPS = {
    "sum": (ops.reduce_sum, np.sum, X), "mean": (ops.reduce_mean, np.mean, X),
    "prod": (ops.reduce_prod, np.prod, 1 + X / 16), "max": (ops.reduce_max, np.max, X),
    "min": (ops.reduce_min, np.min, X), "any": (ops.reduce_any, np.any, X > 1.5),
    "all": (ops.reduce_all, np.all, X > -2.5), "argmax": (ops.reduce_argmax, None, X),
    "argmin": (ops.reduce_argmin, None, X), "var": (ops.reduce_var, np.var, X), "std": (ops.reduce_std, np.std, X),
    "logsumexp": (ops.reduce_logsumexp, None, X), "nansum": (ops.reduce_nansum, np.nansum, NANS),
    "nanmean": (ops.reduce_nanmean, np.nanmean, NANS), "nanmax": (ops.reduce_nanmax, np.nanmax, NANS),
    "nanmin": (ops.reduce_nanmin, np.nanmin, NANS), "nanvar": (ops.reduce_nanvar, np.nanvar, NANS),
    "nanstd": (ops.reduce_nanstd, np.nanstd, NANS), "nanargmax": (ops.reduce_nanargmax, None, NANS),
    "nanargmin": (ops.reduce_nanargmin, None, NANS), "count_nonzero": (ops.count_nonzero, None, X > 0),
    "ptp": (ops.reduce_ptp, np.ptp, X), "norm": (ops.reduce_norm, None, X),
}
AXES = [None, 0, (1, 2), (0, 2)]


def _gpus() -> int:
    try:
        return cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001
        return 0


def _cluster():
    if _gpus() < 2:
        pytest.skip(f"needs two GPUs: {_gpus()} visible")
    dask_cuda = pytest.importorskip("dask_cuda", reason="dask-cuda (the dask-gpu extra) runs a worker per GPU")
    return dask_cuda.LocalCUDACluster(CUDA_VISIBLE_DEVICES=[0, 1], dashboard_address=None)


@pytest.fixture(scope="module")
def client():
    with _cluster() as cluster, distributed.Client(cluster) as c:
        yield c


def _on_both_gpus(client, x):
    """`x` as a dask array of CuPy blocks made on the workers and kept there, some on each GPU."""
    d = client.persist(da.from_array(x, chunks=CHUNKS).map_blocks(cp.asarray, meta=cp.empty((0,) * x.ndim, x.dtype)))
    distributed.wait(d)
    holders = {w for ws in client.who_has(d).values() for w in ws}
    assert len(holders) == 2, holders
    return d


def test_the_workers_hold_one_gpu_each(client):
    buses = client.run(lambda: __import__("cupy").cuda.Device().pci_bus_id)
    assert len(set(buses.values())) == 2, buses


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_matches_numpy(client, name, axis):
    ours, theirs, x = OPS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = ours(_on_both_gpus(client, x), axis=axis).compute()
        expect = (theirs or ours)(x, axis=axis)
    assert isinstance(got, cp.ndarray)
    same(cp.asnumpy(got), expect, rtol=1e-10)


def test_mean_and_variance_from_one_pass(client):
    mean, var = ops.reduce_mean_var(_on_both_gpus(client, X), axis=(0, 2), ddof=1)
    same(cp.asnumpy(mean.compute()), np.mean(X, axis=(0, 2)), rtol=1e-10)
    same(cp.asnumpy(var.compute()), np.var(X, axis=(0, 2), ddof=1), rtol=1e-10)


@pytest.mark.parametrize("axis", [None, 0, (1, 2)], ids=str)
def test_user_functors_with_and_without_a_state(client, axis):
    d = _on_both_gpus(client, X)
    same(cp.asnumpy(ops.reduce(d, axis=axis, op=MINMAX, epilogue=SPREAD).compute()),
         np.max(X, axis=axis) - np.min(X, axis=axis), rtol=1e-10)
    same(cp.asnumpy(ops.reduce(d, axis=axis, transform=kps.SQUARE, epilogue=RMS).compute()),
         np.sqrt(np.mean(X * X, axis=axis)), rtol=1e-10)


def test_a_killed_gpu_worker_is_recomputed_and_the_results_stay_right():
    def slow(block):  # local, so it travels to the workers by value
        import time as t

        import cupy

        t.sleep(0.3)
        return cupy.asarray(block)

    with _cluster() as cluster, distributed.Client(cluster) as client:
        d = da.from_array(X, chunks=(3, 20, 6)).map_blocks(slow, meta=cp.empty((0, 0, 0)))
        futures = client.compute([ops.reduce_var(d, axis=0), ops.reduce_argmax(d, axis=0)])
        victim = kill_a_busy_worker(client, wait=0.5, within=120)
        var, argmax = (cp.asnumpy(f.result(timeout=300)) for f in futures)
        assert victim not in client.scheduler_info()["workers"]  # the killed worker is gone, its blocks recomputed
    same(var, np.var(X, axis=0), rtol=1e-10)
    np.testing.assert_array_equal(argmax, np.argmax(X, axis=0))
