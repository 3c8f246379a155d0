"""A reduction of a dask array on a cluster of worker processes (distributed's LocalCluster, NumPy
blocks on the CPU) survives a worker killed mid-computation: dask recomputes its blocks and the
result is still NumPy's. (On GPUs the same runs on a LocalCUDACluster.)"""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import ops

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


def test_the_dask_bench_runs_on_cpu_workers(capsys):
    from ops import bench

    assert bench.main(["--dask", "--dask-gb", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "no GPU" in out and "0 wrong results" in out and out.count("column sum") == 2


def kill_a_busy_worker(client, wait: float, within: float) -> str:
    """SIGKILL a worker process `wait` seconds after the cluster's first task started (it then holds
    finished blocks and runs another); its address."""
    pids = client.run(os.getpid)
    deadline = time.monotonic() + within
    while not any(client.processing().values()):
        assert time.monotonic() < deadline, "no task started"
        time.sleep(0.05)
    time.sleep(wait)
    victim = next(address for address, tasks in client.processing().items() if tasks)
    os.kill(pids[victim], signal.SIGKILL)
    return victim


def test_a_killed_worker_is_recomputed_and_the_result_stays_right():
    def slow(block):  # local, so it travels to the workers by value
        import time as t

        t.sleep(0.3)
        return block

    x = np.random.default_rng(3).standard_normal((64, 40))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        d = da.from_array(x, chunks=(8, 40)).map_blocks(slow)
        futures = client.compute([ops.reduce_var(d, axis=0), ops.reduce_argmax(d, axis=0)])
        kill_a_busy_worker(client, wait=0.4, within=60)
        var, argmax = (f.result(timeout=120) for f in futures)
    np.testing.assert_allclose(var, x.var(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(argmax, x.argmax(axis=0))
