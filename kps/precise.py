"""Compensated sums (Neumaier), as a functor with a state: `reduce_sum(x, precise=True)`.

The state is the running sum s and the compensation c, the rounding errors that s lost: every
element's add and every merge of two states (in each thread, across the warp and the block, and
between split partials) recovers its own error exactly (TwoSum in Neumaier's branchy form) and
adds it to c; the result is s + c. Floats accumulate in float64 (float32 and the 16-bit floats) or
float64 with compensation (float64), so float32 results are the correctly rounded sum on data that
cancels or mixes magnitudes (1e8 beside 1). Complex numbers accumulate in complex128, each part
compensated on its own. Integers are exact already: they take the plain sum.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .functors import Epilogue, ReduceOp, _accumulate_mean, _accumulate_wide


def _accumulate_precise(dtype: np.dtype, requested):
    """sum's result dtype (numpy.sum); a float accumulates in float64 whatever its width."""
    _, out = _accumulate_wide(dtype, requested)
    if dtypes.is_complex(out):  # complex: both parts compensated, in float64
        return np.dtype(np.complex128), out
    return (np.dtype(np.float64) if out.kind == "f" or dtypes.is_half(out) else out), out


def _accumulate_precise_mean(dtype: np.dtype, requested):
    """mean's result dtype (numpy.mean: ints -> float64), accumulated in float64."""
    _, out = _accumulate_mean(dtype, requested)
    return np.dtype(np.complex128 if dtypes.is_complex(out) else np.float64), out


def _two_sum_error(a, b, t):
    """What a + b lost in t = fl(a + b) (exact in floating point, Neumaier's form; complex numbers
    part by part, kps::TwoSumError)."""
    if np.iscomplexobj(t):
        return _two_sum_error(a.real, b.real, t.real) + 1j * _two_sum_error(a.imag, b.imag, t.imag)
    return np.where(np.abs(a) >= np.abs(b), (a - t) + b, (b - t) + a)


def _combine(a, b):
    with np.errstate(all="ignore"):
        t = a["s"] + b["s"]
        return {"s": t, "c": (a["c"] + b["c"]) + _two_sum_error(a["s"], b["s"], t)}


NEUMAIER = ReduceOp(
    "neumaier",
    combine="acc_t r; r.s = a.s + b.s; r.c = (a.c + b.c) + kps::TwoSumError(a.s, b.s, r.s); return r;",
    identity=lambda dt: {"s": 0, "c": 0},
    numpy=_combine,
    accumulate=_accumulate_precise,
    state=(("s", "acc"), ("c", "acc")),
    lift="acc_t r; r.s = x; r.c = value_t(-0.0); return r;",
    numpy_lift=lambda x: {"s": x, "c": np.full_like(x, -0.0)},
)

# s + c where s is finite; where it is not (inf, NaN) the compensation is meaningless (inf - inf)
_TOTAL = "(a.s - a.s == 0 ? a.s + a.c : a.s)"


def _total(a):
    with np.errstate(all="ignore"):
        return np.where(a["s"] - a["s"] == 0, a["s"] + a["c"], a["s"])


#: The compensated sum.
PRECISE_SUM = Epilogue("precise_sum", _TOTAL, lambda a, n: _total(a))

#: The compensated sum over the count (numpy.mean's result dtype: ints -> float64).
PRECISE_MEAN = Epilogue("precise_mean", f"kps::DivideByCount({_TOTAL}, static_cast<decltype(kps::Real(a.s))>(n))",
                        lambda a, n: _total(a) / n, _accumulate_precise_mean)
