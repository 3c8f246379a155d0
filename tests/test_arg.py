"""argmax / argmin on the NumPy backend: NumPy's answers (first occurrence, NaN first), every axis
subset, keepdims, out=, views, a user transform, and the errors NumPy raises."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import kps
import ops
from arg_helpers import ARGS, data, reference

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int8, np.int64, np.uint16, np.bool_)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(ARGS))
def test_every_axis_subset(name, dtype):
    x = data((4, 5, 6), dtype, np.random.default_rng(7), nan_fraction=0.02)
    fn = ARGS[name][0]
    for axis in [None, 0, 1, -1] + [axes for r in (1, 2, 3) for axes in itertools.combinations(range(3), r)]:
        for keepdims in (False, True):
            got = fn(x, axis=axis, keepdims=keepdims)
            expect = reference(name, x, axis, keepdims)
            assert np.asarray(got).dtype == np.int64
            np.testing.assert_array_equal(got, expect, err_msg=f"axis={axis} keepdims={keepdims}")


@pytest.mark.parametrize("name", list(ARGS))
def test_ties_nan_and_infinities(name):
    fn = ARGS[name][0]
    inf, nan = np.inf, np.nan
    x = np.array([[1, 3, 3, 1], [nan, 2, nan, 9], [-inf, -inf, -inf, -inf], [inf, 0, inf, -0.0], [-0.0, 0.0, 0, -0.0]])
    np.testing.assert_array_equal(fn(x, axis=1), ARGS[name][1](x, axis=1))
    np.testing.assert_array_equal(fn(x, axis=0), ARGS[name][1](x, axis=0))
    assert fn(x) == ARGS[name][1](x)


@pytest.mark.parametrize("name", list(ARGS))
def test_views_and_out(name):
    fn = ARGS[name][0]
    base = data((8, 9, 10), np.float32, np.random.default_rng(3))
    for view in (base.T, base[::-1, :, ::2], base[:, ::-2].transpose(2, 0, 1)):
        for axis in (None, 0, 2, (0, 1), (0, 2)):
            np.testing.assert_array_equal(fn(view, axis=axis), reference(name, view, axis))
    out = np.full((8, 10), -7, dtype=np.int32)
    assert fn(base, axis=1, out=out) is out
    np.testing.assert_array_equal(out, reference(name, base, 1))


def test_a_transform_before_the_index():
    """argmax of |x| through ops.reduce: the descriptors compose like any other."""
    x = np.random.default_rng(5).standard_normal((30, 40))
    got = ops.reduce(x, axis=1, op=kps.ARGMAX, transform=kps.ABS, epilogue=kps.INDEX)
    np.testing.assert_array_equal(got, np.argmax(np.abs(x), axis=1))


@pytest.mark.parametrize("name", list(ARGS))
def test_errors_name_the_argument(name):
    fn = ARGS[name][0]
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="x: attempt to get .* of an empty sequence"):
        fn(np.empty((3, 0)), axis=1)
    assert fn(np.empty((0, 3)), axis=1).shape == (0,)  # nothing to pick from, nothing asked: NumPy too
    out = np.zeros(3, np.float64)
    with pytest.raises(TypeError, match="out:"):
        fn(x, axis=1, out=out)
    assert not out.any()
    with pytest.raises(TypeError, match="epilogue:"):
        ops.reduce(x, op=kps.ARGMAX)
    with pytest.raises(np.exceptions.AxisError):
        fn(x, axis=2)


def test_an_index_needs_a_state():
    with pytest.raises(TypeError, match="indexed"):
        kps.ReduceOp("bad", "a + b", lambda dt: 0, np.add, indexed=True)


def test_only_a_state_is_heavy():
    with pytest.raises(TypeError, match="heavy"):
        kps.ReduceOp("bad", "a + b", lambda dt: 0, np.add, heavy=True)
