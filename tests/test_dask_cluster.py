"""A reduction of a dask array on a cluster of worker processes (distributed's LocalCluster, NumPy
blocks on the CPU) survives a worker killed mid-computation: dask recomputes its blocks and the
result is still NumPy's. (On GPUs the same runs on a LocalCUDACluster.)"""
from __future__ import annotations

import math
import os
import signal
import time

import numpy as np
import pytest

import ops

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.mark.parametrize("devices,device_bytes", [(1, 80 * 10**9), (2, 80 * 10**9), (3, 80 * 10**9), (4, 150 * 10**9), (6, 24 * 10**9)])
def test_the_dask_bench_sizes_its_run_to_the_gpus(devices, device_bytes):
    """Blocks of the largest power of two of GiB within an eighth of a GPU's memory (at least 1 GiB),
    of whole rows; a number of blocks every GPU count of the run divides; an array of about four times
    the memory of all the GPUs of the largest row; rows for 1, 2, 4 GPUs and all of them."""
    from ops.bench import dask_bench

    p = dask_bench.plan(devices, device_bytes)
    assert p.worker_counts[-1] == devices and set(p.worker_counts) == {n for n in (1, 2, 4, devices) if n <= devices}
    gib = p.block_bytes / 2**30
    assert gib >= 1 and gib == 2 ** round(math.log2(gib)) and (gib == 1 or p.block_bytes <= device_bytes / 8 < 2 * p.block_bytes)
    assert p.block_bytes % (4 * dask_bench.COLUMNS) == 0
    assert all(p.blocks % n == 0 for n in p.worker_counts)
    every = math.lcm(*p.worker_counts) * p.block_bytes
    assert abs(p.total_bytes - 4 * device_bytes * p.worker_counts[-1]) <= every / 2 + 1


def test_the_dask_bench_runs_on_cpu_workers(capsys):
    from ops import bench
    from ops.bench import dask_bench

    assert bench.main(["--dask", "--dask-gb", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "no GPU" in out and "0 wrong results" in out and sum(line.split()[1:3] == ["column", "sum"] for line in out.splitlines()) == 2
    spread = [line for line in out.splitlines() if line.startswith("blocks a worker on 2, best run:")]
    assert len(spread) == 1
    per_op = dict(part.rsplit(" ", 1) for part in spread[0].split(":")[1].strip().split(", "))
    assert sorted(per_op) == sorted(dask_bench.REDUCTIONS)
    assert all(sum(map(int, blocks.split("/"))) == 4 for blocks in per_op.values())  # 4 blocks in all, each op


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
