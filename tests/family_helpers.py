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
    """NumPy's answer computed in float64 and given NumPy's result dtype (NumPy's own float16 and
    float32 answers are no reference: it accumulates in the input's type), its warnings silenced
    (the checks ask for them)."""
    dtype = NAN_OPS[name][1](np.ones(1, x.dtype)).dtype
    x64 = x.astype(np.float64) if x.dtype.kind == "f" else x
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(NAN_OPS[name][1](x64, axis=axis, keepdims=keepdims, **kwargs)).astype(dtype)


def scale(name: str, x: np.ndarray, axis, keepdims=False):
    """What the rounding error of a sum or a mean scales with: the sum (mean) of the magnitudes of
    the finite numbers it adds, where its result may cancel to far less; None for the others."""
    if name not in ("nansum", "nanmean") or not x.size:
        return None
    a = np.abs(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0))
    total = np.sum(a, axis=axis, keepdims=keepdims)
    return total if name == "nansum" else total / max(1, a.size // max(1, np.size(total)))


def close(got, expect, dtype, rtol=None, scale=None):
    """Same dtype and shape; NaN where NumPy has NaN; values within a few units of the result's
    precision of the answer's magnitude, or of `scale` where it is larger (a sum's: the sum of the
    magnitudes of what it added)."""
    got, expect = np.asarray(got), np.asarray(expect)
    assert got.dtype == expect.dtype and got.shape == expect.shape, (got.dtype, got.shape, expect.dtype, expect.shape)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expect)
        return
    rtol = rtol or {2: 4e-3, 4: 4e-6}.get(got.dtype.itemsize, 1e-12)
    g, e = got.astype(np.float64), expect.astype(np.float64)
    size = np.maximum(np.abs(e), 0 if scale is None else scale)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    with np.errstate(invalid="ignore"):  # inf - inf where they differ: not close
        bad = ~(same | (np.abs(g - e) <= rtol * (size + 1)))
    assert not bad.any(), f"{bad.sum()} of {bad.size} off: got {g[bad][:4]}, expected {e[bad][:4]}"


#: The NaN-skipping ops whose NaN results have two causes: a slice of `ddof` numbers or fewer that
#: are not NaN (NumPy's count warning, `NAN_OPS`), and infinities (inf - inf; NumPy's floating-point
#: 'invalid value' warning, which no reduction here gives).
COUNTED = ("nanmean", "nanvar", "nanstd")


def infinite_slices(dtype) -> np.ndarray:
    """Rows over axis 1 whose results are NaN for the second cause alone (inf and -inf; inf with a
    finite number, which a variance takes as inf - inf), for the first (nothing but NaN; one
    number among NaN, which ddof=1 leaves with none), both, and neither."""
    inf, nan = np.inf, np.nan
    return np.array([[inf, -inf, 1.0, 2.0], [inf, 1.0, 3.0, nan], [nan, nan, nan, nan], [nan, 5.0, nan, nan],
                     [inf, nan, nan, nan], [1.0, 2.0, nan, 4.0]], dtype=dtype)


def count_warnings(fn, *args, **kwargs) -> list:
    """The count warnings of `NAN_OPS` among what `fn(*args, **kwargs)` says (NumPy's
    floating-point warnings left out: see `COUNTED`)."""
    counts = {message for _, _, message in NAN_OPS.values() if message}
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    return [str(w.message) for w in caught if str(w.message) in counts]
