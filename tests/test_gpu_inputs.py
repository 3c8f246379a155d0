"""Transforms of several inputs on the GPU: Rosenbrock over two views of one array (4 bytes apart),
two arrays on every reduce path, broadcasting, mixed dtypes, different layouts, states and indices,
outputs poisoned first, repeats bit-identical."""
from __future__ import annotations

import numpy as np
import pytest

import kps
import ops
from kernels import dispatch
from inputs_helpers import FMA, ROSENBROCK, SQDIST, reference, rosenbrock64

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import FLAT_SHAPES, SHORT_ROW_SHAPES, STAGED_SHAPES, poison_pool, poisoned_like  # noqa: E402

PATH_SHAPES = ([((4096, 4096), (1,)), ((4096, 4096), (0,)), ((16, 1 << 20), (1,)), ((1 << 20, 16), (0,)),
                ((1 << 22,), (0,)), ((64, 32, 3000), (0, 2))] + FLAT_SHAPES + STAGED_SHAPES[:6] + SHORT_ROW_SHAPES[2:4])


def _run(arrays, axis, **kwargs):
    """Fresh from a poisoned pool, again, and into a poisoned out=: all equal, bit for bit."""
    fresh = ops.reduce(arrays, axis=axis, **kwargs)
    poison_pool(fresh.nbytes)
    again = ops.reduce(arrays, axis=axis, **kwargs)
    out = poisoned_like(fresh.shape, fresh.dtype)
    assert ops.reduce(arrays, axis=axis, out=out, **kwargs) is out
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(again))
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(out))
    return cp.asnumpy(fresh)


@pytest.mark.parametrize("n", [2, 3, 1001, (1 << 20) + 3, 90_000_000])
def test_rosenbrock_over_two_views_of_one_array(n):
    x = cp.random.default_rng(n).uniform(-2, 2, n, dtype=cp.float32)
    got = _run((x[:-1], x[1:]), None, transform=ROSENBROCK)
    expect = rosenbrock64(cp.asnumpy(x))
    assert got.dtype == np.float32 and abs(float(got) - expect) <= 1e-6 * expect


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float16", "float32"), ("float64", "int32")], ids=str)
def test_every_path(dtypes, shape, axes):
    rng = np.random.default_rng(abs(hash((dtypes, shape))) % 2**32)
    a, b = (rng.standard_normal(shape).astype(d) if d[0] == "f" else rng.integers(-9, 9, shape).astype(d)
            for d in dtypes)
    got = _run((cp.asarray(a), cp.asarray(b)), axes, transform=SQDIST)
    expect = reference(SQDIST, (a, b), axes)
    assert got.dtype == np.result_type(a.dtype, b.dtype)  # what the NumPy twin gives
    n = a.size // max(1, expect.size)
    np.testing.assert_allclose(got, expect, rtol=4 * np.sqrt(n) * np.finfo(got.dtype).eps + 1e-6)


def test_broadcasting_layouts_and_misaligned_views():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3000, 1)).astype(np.float32)
    b = rng.standard_normal((1, 517)).astype(np.float32)
    c = rng.standard_normal((517, 3000)).astype(np.float32).T  # another layout: copied to one
    for axis in (None, 0, 1):
        got = _run((cp.asarray(a), cp.asarray(b), cp.asarray(np.ascontiguousarray(c.T)).T), axis, op=kps.MAX,
                   transform=FMA)
        np.testing.assert_allclose(got, reference(FMA, (a, b, c), axis, np.max), rtol=1e-6)
    h = rng.standard_normal(1 << 20).astype(np.float32)
    base, n = cp.asarray(h), (1 << 20) - 4
    for shift in (1, 2, 3):  # 4, 8, 12 bytes apart: no common 16-byte grid
        pair = (base[:n].reshape(-1, 4), base[shift:shift + n].reshape(-1, 4))
        expect = reference(SQDIST, (h[:n].reshape(-1, 4), h[shift:shift + n].reshape(-1, 4)), 0)
        np.testing.assert_allclose(_run(pair, 0, transform=SQDIST), expect, rtol=1e-5)


def test_inputs_off_their_own_itemsize_are_copied_together():
    """A float64 view 4 bytes off its grid (first or second, strided), a complex128 one 8 bytes off:
    all inputs are copied to one layout (a copy of one alone left the others' strides; an input off
    its grid faults its loads)."""
    rng = np.random.default_rng(11)
    raw_h, plain_h = rng.standard_normal(2 * 4001 + 2), rng.standard_normal(4000)
    raw, plain = cp.asarray(raw_h), cp.asarray(plain_h)
    # the same views of the host copy for the reference (CuPy's own copy of a strided view off its
    # grid loads its elements whole and faults: cp.asnumpy(off) would)
    off_h = raw_h.view(np.float32)[1:1 + 2 * 2 * 4000].view(np.float64)[::2]
    off = raw.view(cp.float32)[1:1 + 2 * 2 * 4000].view(cp.float64)[::2]  # 4 bytes off, stride 16
    assert off.data.ptr % 8 == 4 and off.strides == (16,)
    for pair, host in (((off, plain), (off_h, plain_h)), ((plain, off), (plain_h, off_h))):
        got = _run(pair, None, transform=SQDIST)
        np.testing.assert_allclose(got, reference(SQDIST, host, None), rtol=1e-12)
    z = raw[1:1 + 2 * 4000].view(cp.complex128)
    z_h = raw_h[1:1 + 2 * 4000].copy().view(np.complex128)
    assert z.data.ptr % 16 == 8
    got = _run((plain.astype(cp.complex128), z), None, transform=SQDIST)
    np.testing.assert_allclose(got, np.sum((plain_h - z_h) ** 2), rtol=1e-12)


@pytest.mark.parametrize("dtype,shifts", [("float32", (1, 2, 3)), ("float16", (1, 2, 5, 7)), ("int8", (1, 4, 11, 15)),
                                          ("float64", (1,))], ids=str)
@pytest.mark.parametrize("shape,axis", [((3_000_001,), None), ((517, 4099), 1), ((4096, 259), 1), ((301, 70001), 1)],
                         ids=str)
def test_views_a_few_bytes_apart(dtype, shifts, shape, axis):
    """Views of one array less than 16 bytes apart (x[..., :-k] beside x[..., k:], in both orders, and
    three of them): the later one is read from the earlier one's vectors and the next lane's
    (kps::ReadDataVecLanes), on block-wide, warp and part-warp groups of lanes; rows of a 2-d array
    start at every alignment."""
    rng = np.random.default_rng(abs(hash((dtype, shape))) % 2**32)
    # float16 squares summed past float16's range: the sum in float32 (NumPy's float16 sum is inf too)
    kw = {"dtype": np.float32} if dtype == "float16" else {}
    rtol = 2e-3 if dtype == "float16" else 1e-5
    for k in shifts:
        full = shape[:-1] + (shape[-1] + 2 * k,)
        h = (rng.integers(-5, 6, full) if dtype == "int8" else rng.uniform(-2, 2, full)).astype(dtype)
        d = cp.asarray(h)
        n = shape[-1]
        cut = lambda a, s: a[..., s:s + n]  # noqa: E731
        for pick in ((0, k), (k, 0), (2 * k, k)):
            got = _run(tuple(cut(d, s) for s in pick), axis, transform=SQDIST, **kw)
            expect = reference(SQDIST, tuple(cut(h, s) for s in pick), axis)
            np.testing.assert_allclose(got, expect, rtol=rtol)
        got = _run((cut(d, 0), cut(d, k), cut(d, 2 * k)), axis, transform=FMA, **kw)
        expect = reference(FMA, (cut(h, 0), cut(h, k), cut(h, 2 * k)), axis)
        np.testing.assert_allclose(got, expect, rtol=rtol, atol=1e-3)


def test_a_common_shift_reaches_the_kernel_as_a_constant():
    """Views a whole number of elements apart, read by lanes that share chunks: the kernel takes the
    shift between them as a constant where every input off the grid has the same one (4, 8 or 12
    bytes of float32, 2 of float16), and reads it at run time where they differ; NumPy's sums."""
    rng = np.random.default_rng(9)
    for dtype, picks, shift in [("float32", (0, 1), 4), ("float32", (1, 0), 12), ("float32", (0, 3), 12),
                                ("float32", (0, 2, 4), 8), ("float16", (0, 1), 2), ("float32", (0, 1, 2), 0)]:
        h = rng.uniform(-2, 2, 1 << 20).astype(dtype)
        d, n = cp.asarray(h), (1 << 20) - 4
        views = tuple(d[k:k + n] for k in picks)
        transform = SQDIST if len(picks) == 2 else FMA
        f = kps.resolve(kps.ADD, transform, kps.NONE, tuple(np.dtype(dtype) for _ in picks), np.float32)
        launch = dispatch.launch_for(views[0], poisoned_like((), f.out_dtype), (0,), False, f, more=views[1:])
        assert launch.cfg.shared_lanes and launch.cfg.input_shift == shift
        got = _run(views, None, transform=transform, dtype=np.float32)
        expect = reference(transform, tuple(h[k:k + n] for k in picks), None)
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-3)


def test_a_repeated_call_reads_the_arrays_it_is_given():
    """A call with the signature of an earlier one takes the prepared path: it launches on its own
    arrays (broadcast ones too), not the first call's."""
    rng = np.random.default_rng(6)
    for shapes in [((1000, 333), (1000, 333)), ((1000, 333), (333,)), ((1 << 20,), (1 << 20,))]:
        for _ in range(3):
            a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
            for axis in (None, 0):
                got = ops.reduce((cp.asarray(a), cp.asarray(b)), axis=axis, transform=SQDIST)
                np.testing.assert_allclose(cp.asnumpy(got), reference(SQDIST, (a, b), axis), rtol=1e-5)


def test_states_and_indices_over_several_inputs():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((1 << 16, 64)), rng.standard_normal((1 << 16, 64))
    ad, bd = cp.asarray(a), cp.asarray(b)
    var = _run((ad, bd), 0, op=kps.WELFORD, transform=SQDIST, epilogue=kps.variance(1))
    np.testing.assert_allclose(var, np.var((a - b) ** 2, axis=0, ddof=1), rtol=1e-10)
    arg = _run((ad, bd), 1, op=kps.ARGMAX, transform=SQDIST, epilogue=kps.INDEX)
    np.testing.assert_array_equal(arg, np.argmax((a - b) ** 2, axis=1))


def test_errors_name_the_argument():
    a = cp.ones(3, cp.float32)
    with pytest.raises(ValueError, match="do not broadcast"):
        ops.reduce((a, cp.ones(4)), transform=SQDIST)
    with pytest.raises(TypeError, match="one kind"):
        ops.reduce((a, np.ones(3)), transform=SQDIST)
