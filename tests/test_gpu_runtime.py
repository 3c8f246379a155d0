"""Inside long-running programs, on the GPU: caches bounded over 100,000 shapes with the pool back
where it was, results allocated ahead distinct on every stream, a fork after GPU work, and threads
racing to compile one new functor."""
from __future__ import annotations

import textwrap
import threading
import uuid

import numpy as np
import pytest

import kps
import ops
from kps import compiler

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

from test_gpu_robustness import _in_fresh_process  # noqa: E402


def test_caches_stay_bounded_over_100000_shapes():
    """In a fresh process: the entries earlier tests of this worker left in the caches, and their
    results allocated ahead, would be freed by the evictions and lower the pool's count."""
    code = textwrap.dedent("""
        import numpy as np, cupy as cp
        import kps, ops
        from kernels import launcher
        from kps import cache
        from ops import build, gpu_backend, named
        limit = 512
        cache.set_limit(limit)
        n = 100_000
        host = np.random.default_rng(11).standard_normal(n).astype(np.float32)
        base = cp.asarray(host)
        pool = cp.get_default_memory_pool()
        for k in (n, n - 1, n // 2):  # the largest splits first: their workspace is the one kept
            ops.reduce_sum(base[:k])
        cp.cuda.Device().synchronize()
        used = pool.used_bytes()
        table = gpu_backend.table(build.reduction(named.SUM).key)  # reduce_sum's own (keyed by its twin too)
        for k in range(1, n + 1):  # 100,000 distinct shapes
            got = ops.reduce_sum(base[:k])
            if k % 9973 == 0 or k in (1, 2, n):
                expect = host[:k].astype(np.float64).sum()
                assert abs(float(got) - expect) <= 1e-5 * (np.abs(host[:k]).sum() + 1), k
            del got
            if k % 25000 == 0:
                assert len(launcher._launches) <= limit and len(table) <= limit
        cp.cuda.Device().synchronize()
        assert len(launcher._launches) == limit and len(table) == limit
        # the pool back where it was but for the kept calls' results allocated ahead (ops/gpu_backend.py):
        # one 4-byte result, a 512-byte block of the pool, each
        assert used <= pool.used_bytes() <= used + limit * 512, (used, pool.used_bytes())
        again = ops.reduce_sum(base[:7])  # evicted long ago: planned again, still right
        np.testing.assert_allclose(float(again), host[:7].astype(np.float64).sum(), rtol=1e-5)
        print("ok")
    """)
    _in_fresh_process(code)


def test_a_named_op_keeps_its_prepared_calls_when_the_shared_table_evicts_its_table():
    """A named op looks in the table it took when it was made (ops/build.py); where the shared table
    of tables has dropped that one since, the call it prepares must still land in its own, or every
    later call would take the checked path. In a fresh process, two tables kept in all."""
    code = textwrap.dedent("""
        import numpy as np, cupy as cp
        import kps, ops
        from kps import cache
        from ops import dispatch
        cache.set_limit(2)
        host = np.random.default_rng(5).standard_normal((300, 7)).astype(np.float32)
        x = cp.asarray(host)
        ops.reduce_sum(x, axis=0)
        for tr in kps.TRANSFORMS:  # other reductions' tables push the sum's out
            for ep in kps.EPILOGUES:
                ops.reduce(x, axis=0, transform=tr, epilogue=ep)
        checked, seen = dispatch.checked, []
        dispatch.checked = lambda *a: seen.append(1) or checked(*a)
        for _ in range(3):
            got = ops.reduce_sum(x, axis=1)
        np.testing.assert_allclose(cp.asnumpy(got), host.astype(np.float64).sum(1), rtol=1e-5)
        assert len(seen) == 1, seen  # the first call prepares, the next two take it
        print("ok")
    """)
    _in_fresh_process(code)


@pytest.mark.parametrize("shape, axis", [((4096, 37), 0), ((1 << 20,), None), ((33, 5), 1), ((2048, 3000), 1)])
def test_results_allocated_ahead_are_distinct_and_right_on_every_stream(shape, axis):
    """A prepared call launches into the memory its previous call set aside on the same stream (split
    and whole launches, results under and over SPARE_RESULT_BYTES): every result is its own array,
    right, whichever stream each call runs on, the streams taken in turns."""
    host = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x = cp.asarray(host)
    expect = host.astype(np.float64).sum(axis=axis)
    bound = 1e-5 * np.abs(host).astype(np.float64).sum(axis=axis) + 1e-6
    streams = [cp.cuda.Stream.null, cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True),
               cp.cuda.Stream.ptds]
    results = []
    for k in range(3 * len(streams) + 1):
        with streams[k % len(streams)]:
            results.append(ops.reduce_sum(x, axis=axis))
    cp.cuda.Device().synchronize()
    assert len({r.data.ptr for r in results}) == len(results)
    for r in results:
        assert np.all(np.abs(cp.asnumpy(r) - expect) <= bound)


@pytest.mark.parametrize("shape, axis", [((4096, 37), 0), ((33, 5), 1), ((2048, 3000), 1)])
def test_torch_results_allocated_ahead_are_distinct_and_right_on_every_stream(shape, axis):
    """The same for CUDA torch tensors (interop.prepare_torch): torch's streams taken in turns, every
    result its own tensor, right, and still right after the next calls on its stream."""
    torch = pytest.importorskip("torch")
    host = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    x = torch.from_numpy(host).cuda()
    expect = host.astype(np.float64).sum(axis=axis)
    bound = 1e-5 * np.abs(host).astype(np.float64).sum(axis=axis) + 1e-6
    streams = [torch.cuda.default_stream(), torch.cuda.Stream(), torch.cuda.Stream()]
    results = []
    for k in range(3 * len(streams) + 1):
        with torch.cuda.stream(streams[k % len(streams)]):
            results.append(ops.reduce_sum(x, axis=axis))
    torch.cuda.synchronize()
    assert len({r.data_ptr() for r in results}) == len(results)
    for r in results:
        assert type(r) is torch.Tensor and np.all(np.abs(r.cpu().numpy() - expect) <= bound)


def test_a_fork_after_gpu_work_refuses_it_clearly_and_keeps_numpy():
    code = textwrap.dedent("""
        import multiprocessing
        import cupy as cp, numpy as np
        import ops

        x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
        assert ops.reduce_sum(x, axis=1).tolist() == [6.0, 22.0, 38.0]

        def child(queue):
            try:
                ops.reduce_sum(x, axis=1)
                refused = None
            except RuntimeError as e:
                refused = str(e)
            queue.put((refused, ops.reduce_sum(np.arange(12.0).reshape(3, 4), axis=1).tolist()))

        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        p = ctx.Process(target=child, args=(queue,))
        p.start()
        refused, sums = queue.get(timeout=60)
        p.join(60)
        assert p.exitcode == 0, p.exitcode
        assert refused is not None and "spawn" in refused, refused
        assert sums == [6.0, 22.0, 38.0], sums
        assert ops.reduce_sum(x, axis=0).tolist() == [12.0, 15.0, 18.0, 21.0]  # the parent goes on
        print("ok")
    """)
    _in_fresh_process(code)


def test_threads_racing_for_a_new_functor_compile_each_kernel_once(monkeypatch):
    calls = []
    nvrtc = compiler._nvrtc

    def counted(source, names, *rest):
        calls.append((source, names))
        return nvrtc(source, names, *rest)

    monkeypatch.setattr(compiler, "_nvrtc", counted)
    tag = uuid.uuid4().hex[:12]
    cube = kps.TransformOp(f"cube_{tag}", "x * x * x", numpy=lambda v: v ** 3)
    host = np.random.default_rng(5).standard_normal((513, 1027)).astype(np.float32)
    x = cp.asarray(host)
    results = [None] * 4
    barrier = threading.Barrier(len(results))

    def run(k):
        barrier.wait()
        results[k] = cp.asnumpy(ops.reduce(x, axis=1, transform=cube))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect = (host.astype(np.float64) ** 3).sum(axis=1)
    for r in results:
        np.testing.assert_allclose(r, expect, rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(r, results[0])
    assert calls and len(calls) == len(set(calls)), [names for _, names in calls]
