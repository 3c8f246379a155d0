"""GPU robustness: foreign arrays in and out, streams, bad calls on the GPU path, many threads,
a stable memory pool, and a hypothesis fuzz against NumPy. Skipped where no GPU is usable."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import kps
import ops
from helpers import OPS, check, check_or_raises, data, examples

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_torch_cuda_in_torch_out_zero_copy():
    torch = _torch()
    t = torch.randn(257, 1031, device="cuda")
    for axis, dim in ((0, 0), (1, 1), (None, (0, 1))):
        r = ops.reduce_sum(t, axis=axis)
        assert isinstance(r, torch.Tensor) and r.device == t.device
        np.testing.assert_allclose(r.cpu().numpy(), t.double().sum(dim=dim).cpu().numpy(), rtol=1e-5, atol=1e-3)
    r = ops.reduce_max(t.T, axis=-1)  # non-contiguous view
    assert torch.equal(r, t.T.amax(dim=-1))


def test_torch_out_and_bfloat16():
    torch = _torch()
    t = torch.randn(64, 4099, device="cuda", dtype=torch.bfloat16)
    r = ops.reduce_sum(t, axis=1)
    assert r.dtype == torch.bfloat16 and r.device == t.device
    ref = t.double().sum(dim=1)
    assert torch.allclose(r.double(), ref, rtol=1e-2, atol=0.5)
    out = torch.full((4099,), 7.0, device="cuda")
    assert ops.reduce_mean(t, axis=0, out=out) is out
    assert torch.allclose(out.double(), t.double().mean(dim=0), rtol=1e-3, atol=1e-3)


def test_torch_side_stream_is_used():
    torch = _torch()
    s = torch.cuda.Stream()
    # positive values: a float32 sum of 4M normal values cancels to ~1e2 from terms of ~1e7 in all,
    # outside rtol=1e-5 at times (-91.8918 against -91.8903, H100), while an unordered read would be
    # off by a factor of 3
    x = torch.rand(1 << 22, device="cuda") + 0.5
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        x.mul_(3.0)  # queued on s; our reduction must be ordered after it on s
        r = ops.reduce_sum(x)
    s.synchronize()
    assert torch.allclose(r.double(), x.double().sum(), rtol=1e-5)


def test_cupy_stream_is_used():
    x = cp.random.random(1 << 22, dtype=cp.float32) + 0.5  # positive: as the torch test above
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x *= 3
        r = ops.reduce_sum(x)
    s.synchronize()
    np.testing.assert_allclose(float(r), float(x.astype(cp.float64).sum()), rtol=1e-5)


_SPIN = r"""
extern "C" __global__ void spin(volatile int* flag) { while (*flag == 0) __nanosleep(1000); }
"""


@contextlib.contextmanager
def legacy_stream_blocked(seconds=20.0):
    """The legacy default stream runs a kernel that spins until the block ends (or a watchdog
    thread gives up after `seconds`, so a host call stuck behind it cannot hang the suite):
    work queued behind it, or made to wait for it, cannot finish inside the block. Yields a
    function that says whether the watchdog had to step in (a host call waited for the stream)."""
    pinned = cp.cuda.alloc_pinned_memory(4)  # mapped: the kernel reads the host's flag
    flag = np.frombuffer(pinned, dtype=np.int32, count=1)
    flag[0] = 0
    cp.RawKernel(_SPIN, "spin")((1,), (1,), (np.intp(pinned.ptr),), stream=cp.cuda.Stream.null)
    fired = []
    watchdog = threading.Timer(seconds, lambda: (fired.append(True), flag.__setitem__(0, 1)))
    watchdog.start()
    try:
        yield lambda: bool(fired)
    finally:
        watchdog.cancel()
        flag[0] = 1
        cp.cuda.Stream.null.synchronize()


def _finishes(event, seconds=5.0) -> bool:
    """Whether a CuPy or torch event completes within `seconds`."""
    done = (lambda: event.done) if hasattr(event, "done") else event.query
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.001)
    return done()


def test_nothing_goes_on_the_legacy_default_stream():
    """With the legacy default stream blocked, reductions on the caller's own stream still finish:
    the first calls on a new stream (its split workspace is made and zeroed) and repeated ones,
    split and not. The kernels are compiled beforehand: loading a module waits for the device to
    go idle (the CUDA driver's cuModuleLoadData does, for CuPy's own kernels too)."""
    x = cp.random.standard_normal((64, 1 << 16), dtype=cp.float32)
    ref_rows, ref_all = x.astype(cp.float64).sum(axis=1).get(), float(x.astype(cp.float64).sum())
    ops.reduce_sum(x, axis=1), ops.reduce_sum(x)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with legacy_stream_blocked() as host_waited:
        with s:
            rows = [ops.reduce_sum(x, axis=1) for _ in range(3)]
            full = [ops.reduce_sum(x) for _ in range(3)]
            done = s.record()
        assert _finishes(done) and not host_waited(), "a reduction on its own stream waited for the legacy stream"
    for r in rows:
        np.testing.assert_allclose(r.get(), ref_rows, rtol=1e-5, atol=1e-3)
    for r in full:
        np.testing.assert_allclose(float(r), ref_all, rtol=1e-5, atol=1e-2)


def test_torch_side_stream_does_not_touch_the_legacy_stream():
    torch = _torch()
    t = torch.randn(48, 1 << 16, device="cuda")
    ref = t.double().sum(dim=1)
    ops.reduce_sum(t, axis=1)  # compiled beforehand (see above)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with legacy_stream_blocked() as host_waited:
        with torch.cuda.stream(s):
            r = [ops.reduce_sum(t, axis=1) for _ in range(3)]
            done = torch.cuda.Event()
            done.record(s)
        assert _finishes(done) and not host_waited(), "a reduction on torch's side stream waited for the legacy stream"
    for ri in r:
        assert torch.allclose(ri.double(), ref, rtol=1e-5, atol=1e-3)


def test_per_thread_default_stream_threads_do_not_share_scratch():
    """CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1: every thread's current stream is the one handle
    cudaStreamPerThread, naming a different stream per thread; split reductions run concurrently
    on them and each needs its own scratch."""
    code = textwrap.dedent("""
        import threading
        import cupy as cp, numpy as np
        import ops
        assert cp.cuda.get_current_stream().ptr == 2
        xs = [cp.random.standard_normal((32, 1 << 15), dtype=cp.float32) + k for k in range(4)]
        refs = [x.astype(cp.float64).sum(axis=1).get() for x in xs]
        bad = []
        def work(k):
            for i in range(300):
                r = ops.reduce_sum(xs[k], axis=1)
                if i % 10 == 0 and not np.allclose(r.get(), refs[k], rtol=1e-5, atol=1e-2):
                    bad.append((k, i))
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        assert not bad, bad
        print("ok")
    """)
    _in_fresh_process(code, CUPY_CUDA_PER_THREAD_DEFAULT_STREAM="1")


def test_first_call_in_a_process_prepares_the_repeat():
    """The first call of a process binds CuPy: it must still leave a prepared call behind, so the
    second call is a lookup and one launch, and that call gives the right answer."""
    code = textwrap.dedent("""
        import cupy as cp, numpy as np
        import kps, ops
        from ops import build, gpu_backend, named
        x = cp.random.standard_normal((300, 501), dtype=cp.float32)
        first = ops.reduce_sum(x, axis=1).get()
        table = gpu_backend.prepared[build.reduction(named.SUM).key]  # (its own: keyed by its twin too)
        assert len(table) == 1, table
        again = ops.reduce_sum(x, axis=1)
        again_ref = x.get().astype(np.float64).sum(axis=1)
        np.testing.assert_allclose(again.get(), again_ref, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(again.get(), first)
        print("ok")
    """)
    _in_fresh_process(code)


def _in_fresh_process(code: str, **env) -> None:
    """Run `code` in a new interpreter (with this checkout importable); it must print ok."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, **env, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_cuda_array_interface_and_dlpack_objects():
    base = cp.random.standard_normal((33, 65), dtype=cp.float32)

    class CAI:
        __cuda_array_interface__ = base.__cuda_array_interface__

    r = ops.reduce_sum(CAI(), axis=0)
    assert isinstance(r, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(r), cp.asnumpy(base).sum(axis=0), rtol=1e-5, atol=1e-5)


GPU_BAD_CALLS = [
    (lambda x, o: ops.reduce_sum(x, axis=0, out=np.empty(65, np.float32)), TypeError, "out"),
    (lambda x, o: ops.reduce_sum(x, axis=0, out=cp.empty(64, cp.float32)), ValueError, "out"),
    (lambda x, o: ops.reduce_sum(x, axis=0, out=cp.empty(65, cp.int32)), TypeError, "out"),
    (lambda x, o: ops.reduce_sum(x, axis=3), np.exceptions.AxisError, "axis"),
    (lambda x, o: ops.reduce_sum(x, axis=(0, 0)), ValueError, "axis"),
    (lambda x, o: ops.reduce_sum(x, keepdims=1), TypeError, "keepdims"),
    (lambda x, o: ops.reduce_sum(x, dtype="complex256"), TypeError, "dtype"),
    (lambda x, o: ops.reduce_logsumexp(cp.ones(3, cp.complex64)), TypeError, "complex"),
    (lambda x, o: ops.reduce_max(cp.empty((0, 3), cp.float32), axis=0), ValueError, "identity"),
]


@pytest.mark.parametrize("i", range(len(GPU_BAD_CALLS)))
def test_gpu_bad_calls_leave_out_and_cache_intact(i):
    call, exc, words = GPU_BAD_CALLS[i]
    x = cp.random.standard_normal((33, 65), dtype=cp.float32)
    out = cp.full(65, 7.0, dtype=cp.float32)
    ops.reduce_sum(x, axis=0, out=out)  # a valid call first, then the bad one, then valid again
    before = cp.asnumpy(out).copy()
    with pytest.raises(exc) as err:
        call(x, out)
    assert words in str(err.value)
    np.testing.assert_array_equal(cp.asnumpy(out), before)
    check("sum", cp.asnumpy(ops.reduce_sum(x, axis=0)), cp.asnumpy(x), 0)


def test_user_functor_that_does_not_compile():
    x = cp.random.standard_normal((40, 50), dtype=cp.float32)
    bad = kps.TransformOp("typo", "x * y_undefined", numpy=lambda v: v)
    out = cp.full(40, 3.0, dtype=cp.float32)
    with pytest.raises(kps.CompileError) as err:
        ops.reduce(x, axis=1, transform=bad, out=out)
    assert "x * y_undefined" in str(err.value) and "y_undefined" in str(err.value)
    assert (cp.asnumpy(out) == 3.0).all()
    with pytest.raises(kps.CompileError):  # still an error, not a cached half-plan
        ops.reduce(x, axis=1, transform=bad)
    check("sum", cp.asnumpy(ops.reduce_sum(x, axis=1)), cp.asnumpy(x), 1)


THREAD_CASES = [("sum", (1000, 33), 1), ("max", (77, 513), 0), ("mean", (16, 8, 31), (0, 2)), ("any", (300, 7), 0),
                ("min", (4097,), None), ("prod", (9, 129), 1), ("sum", (2, 3, 4, 5), (1, 3)), ("all", (65, 3), 1)]


def test_threads_hammering_the_plan_cache():
    rng = np.random.default_rng(11)
    inputs = [(op, cp.asarray(data(shape, np.float32, op, rng)), axis) for op, shape, axis in THREAD_CASES]
    refs = [OPS[op][0](x, axis=axis) for op, x, axis in inputs]
    calls, errors = 10_000, []

    def worker(k):
        try:
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                for i in range(calls):
                    j = (i + k) % len(inputs)
                    op, x, axis = inputs[j]
                    r = OPS[op][0](x, axis=axis)
                    if i % 97 == 0 and not bool((r == refs[j]).all()):
                        errors.append((k, i, op))
            stream.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert errors == []
    print(f"\n8 threads x {calls} calls: all results correct")


def test_memory_pool_is_stable_over_many_calls():
    pool = cp.get_default_memory_pool()
    xs = [cp.random.standard_normal(s, dtype=cp.float32) for s in ((1 << 20,), (4096, 256), (64, 33, 65))]
    for x in xs:  # warm up: plans, kernels, the split workspace and (the second call) the prepared
        for _ in range(2):  # call's result allocated ahead exist before counting
            ops.reduce_sum(x, axis=0)
    cp.cuda.Device().synchronize()
    before = pool.used_bytes()
    for i in range(10_000):
        ops.reduce_sum(xs[i % 3], axis=0)
    cp.cuda.Device().synchronize()
    after = pool.used_bytes()
    print(f"\npool used bytes before {before}, after 10000 calls {after}")
    assert after == before


@st.composite
def gpu_cases(draw):
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "int32", "int8", "uint16", "bool", "int64"]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=24))
    op = draw(st.sampled_from(list(OPS)))
    if dtype == "bool" and op not in ("all", "any", "max", "min", "sum"):
        op = "any"
    layout = draw(st.sampled_from(["c", "transpose", "step", "flip"]))
    axis = draw(st.one_of(st.none(), hnp.valid_tuple_axes(len(shape))))
    keepdims = draw(st.booleans())
    return dtype, shape, op, layout, axis, keepdims


def _view(a, layout):
    if a.ndim == 0 or layout == "c":
        return a
    if layout == "transpose":
        return a.transpose(tuple(reversed(range(a.ndim))))
    if layout == "step":
        return a[(slice(None, None, 2),) + (slice(None),) * (a.ndim - 1)]
    return a[(slice(None, None, -1),) * a.ndim]


@settings(max_examples=examples(500), deadline=None)
@given(case=gpu_cases(), seed=st.integers(0, 2**16))
def test_fuzz_against_numpy(case, seed):
    dtype, shape, op, layout, axis, keepdims = case
    base = data(shape, np.dtype(dtype), op, np.random.default_rng(seed))
    x, xd = _view(base, layout), _view(cp.asarray(base), layout)
    check_or_raises(op, lambda: cp.asnumpy(OPS[op][0](xd, axis=axis, keepdims=keepdims)), np.array(x, order="C"),
                    axis, keepdims)


def _two_devices():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")


@pytest.mark.parametrize("shape,axis", [((257, 1031), 1), ((64, 1 << 16), 1), ((1 << 20,), None), ((4096, 33), 0)])
def test_input_on_another_device_runs_there(shape, axis):
    """An input on device N runs on device N whatever the current device is: first and repeated
    calls, split reductions (scratch per device), a result on N, out= on the wrong device refused."""
    _two_devices()
    rng = np.random.default_rng(5)
    host = rng.standard_normal(shape).astype(np.float32)
    ref = host.astype(np.float64).sum(axis=axis)
    for dev, current in ((1, 0), (0, 1)):
        with cp.cuda.Device(dev):
            x = cp.asarray(host)
        with cp.cuda.Device(current):
            results = [ops.reduce_sum(x, axis=axis) for _ in range(3)]
            assert cp.cuda.runtime.getDevice() == current
            with pytest.raises(ValueError, match="out"):
                ops.reduce_sum(x, axis=axis, out=cp.empty(ref.shape, cp.float32))
        for r in results:
            assert r.device.id == dev
            np.testing.assert_allclose(cp.asnumpy(r), ref, rtol=1e-5, atol=1e-3)


def test_torch_tensor_on_another_device_runs_there():
    _two_devices()
    torch = _torch()
    t = torch.randn(96, 1 << 15, device="cuda:1")
    ref = t.double().sum(dim=1)
    with torch.cuda.device(0):
        r = [ops.reduce_sum(t, axis=1) for _ in range(3)]
    for ri in r:
        assert ri.device == t.device
        assert torch.allclose(ri.double(), ref, rtol=1e-5, atol=1e-3)
