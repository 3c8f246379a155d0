"""CUDA graph capture: reductions captured in a graph (CuPy's stream capture and torch.cuda.graph),
split and unsplit, replayed 100 times on changing input data, against fresh reductions; a call that
would have to compile inside a capture is a clear error, and the capture survives it."""
from __future__ import annotations

import numpy as np
import pytest

import ops
from kernels import CaptureError

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

#: (shape, axis): column and row sums, a full reduction and long rows that split across blocks
CASES = [((1024, 1024), 0), ((300, 301), 1), ((1 << 22,), None), ((16, 1 << 18), 1), ((1 << 18, 16), 0)]
REPLAYS = 100


def _check(got, x, axis, op):
    expect = getattr(cp, op)(x.astype(cp.float64), axis=axis)
    tol = 1e-3 * (x.size / max(1, expect.size)) ** 0.5
    assert bool(cp.allclose(got.astype(cp.float64), expect, rtol=1e-4, atol=tol, equal_nan=True))


def test_cupy_capture_replays_right_on_new_data():
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        xs = [cp.random.standard_normal(shape, dtype=cp.float32) for shape, _ in CASES]
        for x, (_, axis) in zip(xs, CASES):  # the warm-up, on the capture stream
            ops.reduce_sum(x, axis=axis), ops.reduce_max(x, axis=axis), ops.reduce_nanmax(x, axis=axis)
        stream.synchronize()
        stream.begin_capture()
        outs = [(ops.reduce_sum(x, axis=a), ops.reduce_max(x, axis=a), ops.reduce_nanmax(x, axis=a))
                for x, (_, a) in zip(xs, CASES)]
        graph = stream.end_capture()
    for k in range(REPLAYS):
        with stream:
            for x in xs:
                x[...] = cp.random.standard_normal(x.shape, dtype=cp.float32)
            xs[0][:, 3] = cp.nan  # an all-NaN column: nanmax gives NaN, and no look happens in the graph
        graph.launch(stream)
        stream.synchronize()
        for x, (_, axis), (total, peak, nan_peak) in zip(xs, CASES, outs):
            if k % 10 == 0 or x is xs[2]:
                _check(total, x, axis, "sum")
                _check(peak, x, axis, "max")
                if x is not xs[0]:  # (CuPy's nanmax warns on the all-NaN column)
                    _check(nan_peak, x, axis, "nanmax")
    assert bool(cp.isnan(outs[0][2][3])) and bool(cp.isnan(outs[0][0][3]))


def test_a_call_that_would_compile_inside_a_capture_is_a_clear_error():
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.random.standard_normal((131, 463), dtype=cp.float64)
    cp.cuda.Device().synchronize()  # x is written on the null stream, which a non-blocking one does not wait for
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(CaptureError, match="warm-up"):
                ops.reduce_prod(x[:, ::-1], axis=0)
        finally:
            stream.end_capture()  # the capture was not invalidated
        got = ops.reduce_prod(x[:, ::-1], axis=0)  # outside the capture: planned and compiled as usual
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(got), np.prod(cp.asnumpy(x)[:, ::-1], axis=0), rtol=1e-10)


def test_torch_graph_capture_replays_right():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    xs = [torch.randn(shape, device="cuda") for shape, _ in CASES]
    dims = [tuple(range(len(s))) if a is None else a for s, a in CASES]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the warm-up, on the stream the capture will use
        for x, (_, axis) in zip(xs, CASES):
            ops.reduce_sum(x, axis=axis), ops.reduce_mean(x, axis=axis)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        outs = [(ops.reduce_sum(x, axis=a), ops.reduce_mean(x, axis=a)) for x, (_, a) in zip(xs, CASES)]
    for k in range(REPLAYS):
        for x in xs:
            x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        if k % 10 == 0:
            for x, dim, (total, mean) in zip(xs, dims, outs):
                torch.testing.assert_close(total.double(), x.double().sum(dim=dim), rtol=1e-4, atol=1e-2)
                torch.testing.assert_close(mean.double(), x.double().mean(dim=dim), rtol=1e-4, atol=1e-4)
