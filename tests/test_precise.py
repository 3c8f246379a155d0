"""Compensated sums (reduce_sum / reduce_mean with precise=True) on the NumPy backend: within one
unit in the last place of the correctly rounded sum on the accuracy cases, NumPy's dtypes, inf and
NaN as the plain sum gives them."""
from __future__ import annotations

import numpy as np
import pytest

import ops
from helpers import DTYPES
from ops.bench.accuracy import accuracy_cases, correctly_rounded, ulps


@pytest.mark.parametrize("name", sorted(accuracy_cases()))
def test_within_one_ulp_of_the_correctly_rounded_sum(name):
    x, axis = accuracy_cases()[name]
    expect = correctly_rounded(x, axis)
    got = ops.reduce_sum(x, axis=axis, precise=True)
    assert np.asarray(got).dtype == x.dtype
    assert ulps(got, expect).max() <= 1, (got, expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dtypes_and_values_follow_numpy(dtype):
    x = (np.random.default_rng(2).standard_normal((6, 7, 5)) * 10).astype(dtype)
    for axis in (None, 0, (0, 2), ()):
        for keepdims in (False, True):
            plain = np.sum(x, axis=axis, keepdims=keepdims)
            got = ops.reduce_sum(x, axis=axis, keepdims=keepdims, precise=True)
            assert np.asarray(got).dtype == np.asarray(plain).dtype and np.shape(got) == np.shape(plain)
            if dtype.kind != "f":  # exact either way (and wrapping as NumPy's)
                np.testing.assert_array_equal(got, plain)
            else:
                np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.sum(x.astype(np.float64), axis=axis,
                                           keepdims=keepdims), rtol=1e-3 if dtype == np.float16 else 1e-6)
            mean = ops.reduce_mean(x, axis=axis, keepdims=keepdims, precise=True)
            with np.errstate(all="ignore"):
                assert np.asarray(mean).dtype == np.asarray(np.mean(x, axis=axis, keepdims=keepdims)).dtype


def test_infinities_and_nan_as_the_plain_sum():
    inf, nan = np.inf, np.nan
    for row in ([inf, 1.0], [-inf, 2.0, 3.0], [inf, -inf], [nan, 1.0], [1e308, 1e308]):
        x = np.array(row)
        with np.errstate(all="ignore"):
            expect = np.sum(x)
        got = ops.reduce_sum(x, precise=True)
        assert got == expect or (np.isnan(got) and np.isnan(expect)), (row, got, expect)
    assert ops.reduce_sum(np.empty(0, dtype=np.float32), precise=True) == 0
    assert np.isnan(ops.reduce_mean(np.empty(0), precise=True))


def test_precise_is_a_bool():
    with pytest.raises(TypeError, match="precise"):
        ops.reduce_sum(np.ones(3), precise=1)
