"""Inside long-running programs, on the CPU: bounded caches, one compile when threads race for the
same new program, and processes forked after the parent used the GPU."""
from __future__ import annotations

import multiprocessing
import threading
import uuid

import numpy as np
import pytest

import kps
import ops
from kernels import launcher
from kps import cache, compiler


@pytest.fixture
def small_limit():
    before = cache.limit()
    cache.set_limit(3)
    yield 3
    cache.set_limit(before)


def test_a_cache_keeps_the_most_recently_used_entries(small_limit):
    table = cache.Lru()
    for k in range(5):
        table.put(k, str(k))
    assert list(table) == [2, 3, 4]
    table.touch(2)  # a hit: 2 is now the most recent
    table.put(5, "5")
    assert list(table) == [4, 2, 5]
    assert table.put(5, "other") == "5" and table.put(5, "new", replace=True) == "new"
    table.touch("gone")  # a key another thread dropped: nothing happens
    assert len(table) == small_limit


def test_a_smaller_limit_applies_at_the_next_insertion(small_limit):
    table = cache.Lru()
    for k in range(3):
        table.put(k, k)
    cache.set_limit(1)
    table.put(3, 3)
    assert list(table) == [3]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_the_limit_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="entries"):
        cache.set_limit(bad)


def test_threads_filling_one_cache_stay_within_its_limit(small_limit):
    table = cache.Lru()

    def fill(offset):
        for k in range(2000):
            table.put(offset + k, k)
            table.get(offset + k - 1)
            table.touch(offset + k - 2)

    threads = [threading.Thread(target=fill, args=(10_000 * t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(table) == small_limit


def test_descriptor_caches_are_bounded():
    for cached in (kps.variance, kps.std, kps.mean_and_variance, kps.nan.nan_variance, kps.norms.power):
        assert cached.cache_info().maxsize == cache.DEFAULT_LIMIT


def test_two_threads_compiling_one_new_program_compile_it_once(monkeypatch):
    """(A new source each run: neither cache has it.)"""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    calls = []
    nvrtc = compiler._nvrtc

    def counted(*args):
        calls.append(args[1])
        return nvrtc(*args)

    monkeypatch.setattr(compiler, "_nvrtc", counted)
    source = f'// {uuid.uuid4()}\nextern "C" __global__ void probe(float* y) {{ y[threadIdx.x] = 1.f; }}\n'
    results = [None] * 4
    barrier = threading.Barrier(len(results))

    def compile_it(k):
        barrier.wait()
        results[k] = kps.compile_program(source, ["probe"])

    threads = [threading.Thread(target=compile_it, args=(k,)) for k in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1, calls
    assert all(r is results[0] for r in results) and results[0].cubin


def test_threads_compiling_different_new_programs_at_once_all_succeed():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    sources = [f'// {uuid.uuid4()}\nextern "C" __global__ void probe(float* y) {{ y[threadIdx.x] = {k}.f; }}\n'
               for k in range(4)]
    results = [None] * len(sources)
    barrier = threading.Barrier(len(sources))

    def compile_it(k):
        barrier.wait()
        results[k] = kps.compile_program(sources[k], ["probe"])

    threads = [threading.Thread(target=compile_it, args=(k,)) for k in range(len(sources))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r is not None and r.cubin for r in results) and len({r.cubin for r in results}) == len(sources)


def test_a_failed_compile_is_reported_to_every_thread_that_waited():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    source = f'// {uuid.uuid4()}\nextern "C" __global__ void broken() {{ this is not CUDA; }}\n'
    errors = []
    barrier = threading.Barrier(3)

    def compile_it():
        barrier.wait()
        try:
            kps.compile_program(source, ["broken"])
        except kps.CompileError as e:
            errors.append(e)

    threads = [threading.Thread(target=compile_it) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 3 and not compiler._compiling


def _child_reduces(queue):
    """In a forked child: whether GPU work is refused, and a NumPy reduction's result."""
    try:
        cache.check_process()
        refused = None
    except RuntimeError as e:
        refused = str(e)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    queue.put((refused, len(launcher._launches), ops.reduce_sum(x, axis=1).tolist()))


def _fork_and_reduce():
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_reduces, args=(queue,))
    child.start()
    result = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0
    return result


def test_a_fork_of_a_process_that_never_used_the_gpu_may_use_it():
    ops.reduce_sum(np.ones((3, 4)), axis=0)
    refused, _, sums = _fork_and_reduce()
    assert refused is None and sums == [6.0, 22.0, 38.0]


def test_a_fork_after_gpu_work_refuses_gpu_work_and_keeps_the_numpy_backend():
    key = ("a launch the parent made", uuid.uuid4())
    launcher._launches.put(key, object())  # stands for a launch: a CUDA handle of this process
    try:
        refused, launches, sums = _fork_and_reduce()
    finally:
        launcher._launches.pop(key)
    assert refused is not None and "spawn" in refused and "fork" in refused
    assert launches == 0 and sums == [6.0, 22.0, 38.0]
    cache.check_process()  # the parent itself is not affected
