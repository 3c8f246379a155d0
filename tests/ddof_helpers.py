"""ddof as NumPy takes it (any real number), shared by the NumPy-backend tests (tests/test_ddof.py)
and the GPU suite (tests/test_gpu_ddof.py): the ops that take it, the values tried, the data, and
the float64 NumPy reference with its warnings."""
from __future__ import annotations

import warnings

import numpy as np

import ops

#: Every op with a ddof: ours, NumPy's (mean_var: numpy.var, its second result).
DDOF_OPS = {
    "var": (ops.reduce_var, np.var),
    "std": (ops.reduce_std, np.std),
    "nanvar": (ops.reduce_nanvar, np.nanvar),
    "nanstd": (ops.reduce_nanstd, np.nanstd),
    "mean_var": (lambda x, **kw: ops.reduce_mean_var(x, **kw)[1], np.var),
}

#: Integers, halves, negatives, numpy scalars, and values at and past the count (rows of 5 below):
#: n - ddof = 0.5, 0, -0.5; inf and NaN too, which NumPy takes.
DDOFS = [0, 1, 1.0, 0.5, -1, -2.5, np.float32(0.25), np.int64(2), 4.5, 5, 5.5, np.inf, np.nan]

DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.float16, np.int32)]

#: Reductions over rows of 5 (and 3, and all 15) in a (3, 5) array.
AXES = [1, 0, None]


def ddof_data(dtype, rng: np.random.Generator) -> np.ndarray:
    """(3, 5) values of spread 1 near 3; for floats a NaN in row 0 and a row of NaN (row 2), which
    the NaN-skipping ops skip and the others give NaN for."""
    x = (3 + rng.standard_normal((3, 5)) * (1 if dtype.kind == "f" else 20)).astype(dtype)
    if dtype.kind == "f":
        x[0, 1] = np.nan
        x[2] = np.nan
    return x


def dof_warned(caught) -> bool:
    """Whether NumPy's 'Degrees of freedom <= 0 for slice' warning is among the caught ones."""
    return any("Degrees of freedom" in str(w.message) for w in caught)


def reference(name: str, x: np.ndarray, axis, ddof):
    """(NumPy's float64 answer, whether NumPy warned about the degrees of freedom) for `name`: on
    the float64 copy of floats, on ints as they are (numpy.nanvar of ints is numpy.var's)."""
    numpy_fn = DDOF_OPS[name][1]
    x64 = x.astype(np.float64) if x.dtype.kind == "f" else x
    with np.errstate(all="ignore"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expect = np.asarray(numpy_fn(x64, axis=axis, ddof=ddof), dtype=np.float64)
    return expect, dof_warned(caught)


def check(name: str, got, x: np.ndarray, axis, ddof, warned: bool) -> None:
    """`got` (a host array) has NumPy's dtype and matches the float64 reference (NaN and inf where
    it has them); `warned` (whether ours warned) is whether NumPy did."""
    expect, numpy_warned = reference(name, x, axis, ddof)
    got = np.asarray(got)
    assert warned == numpy_warned, (name, ddof, axis, warned)
    natural = np.float64 if x.dtype.kind in "biu" else x.dtype
    assert got.dtype == natural and got.shape == expect.shape, (got.dtype, got.shape, expect.shape)
    rtol = {2: 3e-3, 4: 2e-6}.get(got.dtype.itemsize, 1e-12)
    # a result in the dtype's subnormals is rounded to their fixed spacing (float16's 6e-8: the
    # variance of two values 0.002 apart, 1.27e-6, is 1.25e-6 correctly rounded), not to rtol
    atol = np.finfo(got.dtype).smallest_subnormal
    g = got.astype(np.float64)
    same = (g == expect) | (np.isnan(g) & np.isnan(expect))
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf (`same` holds there)
        close = np.abs(g - expect) <= rtol * np.abs(expect) + atol
    assert (same | close).all(), (name, ddof, axis, got, expect)
