"""Transforms of several inputs on the NumPy backend: views of one array (Rosenbrock), broadcasting,
mixed dtypes, states and indices over them, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import kps
import ops
from inputs_helpers import FMA, ROSENBROCK, SQDIST, reference, rosenbrock64


def test_rosenbrock_over_two_views_of_one_array():
    x = np.random.default_rng(0).uniform(-2, 2, 100_001).astype(np.float32)
    got = ops.reduce((x[:-1], x[1:]), axis=None, transform=ROSENBROCK)
    assert got.dtype == np.float32
    assert abs(float(got) - rosenbrock64(x)) <= 1e-5 * rosenbrock64(x)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_broadcasting_and_mixed_dtypes(axis):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 1)).astype(np.float16)
    b = rng.standard_normal((1, 30))
    got = ops.reduce((a, b), axis=axis, transform=SQDIST)
    assert np.asarray(got).dtype == np.float64  # float16 - float64 -> float64, as NumPy
    np.testing.assert_allclose(got, reference(SQDIST, (a, b), axis), rtol=1e-12)
    three = ops.reduce((a, b, np.float32(2)), axis=axis, op=kps.MAX, transform=FMA)
    np.testing.assert_allclose(three, reference(FMA, (a, b, 2.0), axis, np.max), rtol=1e-12)


def test_states_and_indices_over_several_inputs():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((50, 60)), rng.standard_normal((50, 60))
    var = ops.reduce((a, b), axis=0, op=kps.WELFORD, transform=SQDIST, epilogue=kps.variance(1))
    np.testing.assert_allclose(var, np.var((a - b) ** 2, axis=0, ddof=1), rtol=1e-12)
    arg = ops.reduce((a, b), axis=1, op=kps.ARGMAX, transform=SQDIST, epilogue=kps.INDEX)
    np.testing.assert_array_equal(arg, np.argmax((a - b) ** 2, axis=1))


def test_keepdims_out_and_empty():
    a, b = np.arange(12.0).reshape(3, 4), np.ones(4)
    out = np.full((3, 1), -1.0)
    assert ops.reduce((a, b), axis=1, transform=SQDIST, keepdims=True, out=out) is out
    np.testing.assert_allclose(out, reference(SQDIST, (a, b), 1)[:, None])
    np.testing.assert_array_equal(ops.reduce((np.ones((0, 3)), np.ones(3)), axis=0, transform=SQDIST), np.zeros(3))


def test_the_number_of_inputs():
    assert ROSENBROCK.inputs == 2 and FMA.inputs == 3 and kps.SQUARE.inputs == 1
    assert kps.TransformOp("first", "x0", numpy=lambda a, b: a, inputs=2).inputs == 2
    with pytest.raises(ValueError, match="inputs"):
        kps.TransformOp("many", "x0 + x4", numpy=lambda *a: a[0])
    with pytest.raises(ValueError, match="inputs"):
        kps.TransformOp("none", "x", numpy=lambda a: a, inputs=0.5)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="x: transform identity reads 1 array"):
        ops.reduce(())
    a = np.ones(3)
    with pytest.raises(ValueError, match=r"x: the inputs' shapes \(3,\), \(4,\) do not broadcast"):
        ops.reduce((a, np.ones(4)), transform=SQDIST)
    with pytest.raises(ValueError, match="x: transform sqdist reads 2 arrays: pass them as a tuple"):
        ops.reduce(a, transform=SQDIST)
    with pytest.raises(ValueError, match="x: transform sqdist reads 2 array"):
        ops.reduce((a, a, a), transform=SQDIST)
    with pytest.raises(TypeError, match=r"x\[1\]: unsupported dtype"):
        ops.reduce((a, a.astype(np.clongdouble)), transform=SQDIST)
    with pytest.raises(TypeError, match="x: expected a tuple of NumPy arrays or of CuPy arrays"):
        ops.reduce((a, [1.0, 2.0, 3.0]), transform=SQDIST)
