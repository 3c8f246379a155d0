"""NumPy references and checks for the rest of the family (NaN-skipping reductions, count_nonzero,
ptp, minmax), shared by the NumPy-backend tests and the GPU suite."""
from __future__ import annotations

import warnings

import numpy as np

import ops

#: name -> (ours, NumPy's, the RuntimeWarning NumPy gives for a slice of nothing but NaN, or None)
NAN_OPS = {
    "nansum": (ops.reduce_nansum, np.nansum, None),
    "nanmean": (ops.reduce_nanmean, np.nanmean, "Mean of empty slice"),
    "nanmax": (ops.reduce_nanmax, np.nanmax, "All-NaN slice encountered"),
    "nanmin": (ops.reduce_nanmin, np.nanmin, "All-NaN slice encountered"),
    "nanvar": (ops.reduce_nanvar, np.nanvar, "Degrees of freedom <= 0 for slice."),
    "nanstd": (ops.reduce_nanstd, np.nanstd, "Degrees of freedom <= 0 for slice."),
}


def with_nans(shape, dtype, rng: np.random.Generator, all_nan_row: bool = True) -> np.ndarray:
    """Random data with NaN sprinkled in (a quarter of the elements), +-inf here and there, and,
    for floats, one slice along the first axis of nothing but NaN."""
    x = rng.standard_normal(shape) * 4
    if np.dtype(dtype).kind == "f":
        x[rng.random(shape) < 0.25] = np.nan
        if all_nan_row:
            x[0] = np.nan
    elif np.dtype(dtype).kind in "ui":
        x = np.abs(x) * 8 if np.dtype(dtype).kind == "u" else x * 8
    elif np.dtype(dtype) == np.bool_:
        x = x > 0
    return x.astype(dtype)


def reference(name: str, x: np.ndarray, axis, keepdims=False, **kwargs):
    """NumPy's answer, on the input's own dtype, its warnings silenced (the checks ask for them)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(NAN_OPS[name][1](x, axis=axis, keepdims=keepdims, **kwargs))


def close(got, expect, dtype, rtol=None):
    """Same dtype and shape; NaN where NumPy has NaN; values within a few units of the result's
    precision of the float64 answer's magnitude (sums: of the sum of magnitudes)."""
    got, expect = np.asarray(got), np.asarray(expect)
    assert got.dtype == expect.dtype and got.shape == expect.shape, (got.dtype, got.shape, expect.dtype, expect.shape)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expect)
        return
    rtol = rtol or {2: 4e-3, 4: 4e-6}.get(got.dtype.itemsize, 1e-12)
    g, e = got.astype(np.float64), expect.astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    assert (same | (np.abs(g - e) <= rtol * (np.abs(e) + 1))).all(), f"got {g[~same][:4]}, expected {e[~same][:4]}"
