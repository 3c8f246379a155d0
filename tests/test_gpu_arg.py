"""argmax / argmin on the GPU: every reduce path (rows, columns, splits, flat runs, staged spans),
views the planner flips and reorders, ties and NaN, outputs poisoned first, repeats bit-identical,
and indices past 2^31."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from arg_helpers import ARGS, data, reference

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import FLAT_SHAPES, STAGED_SHAPES, SUBSET_SHAPES, poison_pool, poisoned_like  # noqa: E402

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32, np.uint8, np.bool_)]

#: Every reduce path: rows (inner), columns (outer), splits of each, flat runs, staged spans (kept
#: columns over a few rows between kept dims among them).
PATH_SHAPES = ([((4096, 4096), (1,)), ((4096, 4096), (0,)), ((16, 1 << 20), (1,)), ((1 << 20, 16), (0,)),
                ((1 << 22,), (0,)), ((64, 32, 3000), (0, 2)), ((4, 1 << 20), (0,)), ((4099, 1), (1,))]
               + FLAT_SHAPES + STAGED_SHAPES + [((999, 3, 256), (1,)), ((1001, 5, 3, 16), (1,))])


def _run(name, xd, axis, keepdims=False):
    """Our result into a fresh array from a poisoned pool and into a poisoned out=, which must agree."""
    fn = ARGS[name][0]
    fresh = fn(xd, axis=axis, keepdims=keepdims)
    poison_pool(fresh.nbytes)
    again = fn(xd, axis=axis, keepdims=keepdims)
    out = poisoned_like(fresh.shape, fresh.dtype)
    assert fn(xd, axis=axis, keepdims=keepdims, out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(out))
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(again))  # bit-identical repeats
    return cp.asnumpy(fresh)


def _check(name, got, x, axis, keepdims=False):
    expect = reference(name, x, axis, keepdims)
    assert got.dtype == np.int64 and got.shape == expect.shape, (got.dtype, got.shape, expect.shape)
    bad = got != expect
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong: got {got[bad][:4]}, expected {expect[bad][:4]}"


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(ARGS))
def test_every_path(name, dtype, shape, axes):
    x = data(shape, dtype, np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32), nan_fraction=1e-4)
    _check(name, _run(name, cp.asarray(x), axes), x, axes)


@pytest.mark.parametrize("shape", SUBSET_SHAPES, ids=str)
@pytest.mark.parametrize("name", list(ARGS))
def test_every_axis_subset_of_views(name, shape):
    """Transposed, flipped and stepped views: the index follows the logical order, not memory's."""
    base = data([2 * n for n in shape], np.float32, np.random.default_rng(len(shape)), nan_fraction=0.01)
    views = {"c": base[tuple(slice(0, n) for n in shape)].copy()}
    views["flipped"] = base[tuple(slice(n - 1 if i % 2 else None, None, -1 if i % 2 else 2) for i, n in enumerate(shape))]
    views["transposed"] = np.ascontiguousarray(views["c"].T).T
    for kind, x in views.items():
        x = x[tuple(slice(0, n) for n in shape)]
        for r in range(1, len(shape) + 1):
            for axes in itertools.combinations(range(len(shape)), r):
                xd = cp.asarray(x) if kind == "c" else _device_view(x)
                for keepdims in (False, True):
                    _check(name, _run(name, xd, axes, keepdims), x, axes, keepdims)


def _device_view(x: np.ndarray):
    """The same view of `x` on the GPU: its strides over a copy of its whole base."""
    base = x.base if x.base is not None else x
    d = cp.asarray(base)
    offset = x.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return cp.ndarray(x.shape, x.dtype, d.data + offset, x.strides)


@pytest.mark.parametrize("name", list(ARGS))
def test_first_occurrence_in_every_split(name):
    """One value everywhere but a few equal extremes: the first of them, however the range is split."""
    x = cp.full((3, 1 << 22), 5, dtype=cp.float32)
    extreme = 9 if name == "argmax" else 1
    for row, cols in enumerate([(7, 3_000_000), (4_000_000, 17, 1 << 21), ((1 << 22) - 1,)]):
        for c in cols:
            x[row, c] = extreme
    got = _run(name, x, 1)
    np.testing.assert_array_equal(got, [7, 17, (1 << 22) - 1])
    got = _run(name, x.reshape(-1), None)
    assert got == 7


@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("name", list(ARGS))
def test_indices_past_2_31(name, axis):
    """int64 indices: the extreme sits past 2^31 (twice: the first wins), in rows and in columns."""
    n = (1 << 31) + (1 << 20)
    shape = (n,) if axis is None else (n, 2)
    # random bytes from 32-bit draws (an int8 randint would draw 8 bytes per element), kept in -100..100
    words = cp.random.randint(-2**31, 2**31 - 1, size=(int(np.prod(shape)) + 3) // 4, dtype=cp.int32)
    x = cp.clip(words.view(cp.int8)[:int(np.prod(shape))].reshape(shape), -100, 100)
    del words
    extreme = 127 if name == "argmax" else -128
    first, second = (1 << 31) + 12345, (1 << 31) + 99999
    x[first] = extreme
    x[second] = extreme
    got = cp.asnumpy(ARGS[name][0](x, axis=axis))
    np.testing.assert_array_equal(got, first if axis is None else [first, first])
