"""Reductions that skip NaN (numpy.nansum, nanmean, nanmax, nanmin, nanvar, nanstd, nanargmax,
nanargmin), as descriptors: a NaN lifts to the identity (or to nothing: zero, no count), so every
kernel path skips it without knowing. Integers and bool have no NaN: there these give the plain ops'
answers (the API gives nanvar and nanstd of them the plain epilogue: ddof >= n is inf there).

What a slice of nothing but NaN gives is NumPy's: nansum 0; nanmax, nanmin, nanmean, nanvar and
nanstd NaN (the API warns as NumPy does); nanargmax and nanargmin the identity's index, which the
API turns into NumPy's ValueError.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import cache, dtypes, statistics
from .arg import _NO_INDEX, _accumulate_index, _combine as _arg_combine
from .functors import Epilogue, ReduceOp, TransformOp, _accumulate_mean_sum, _accumulate_same, _lowest, _highest


def _isnan(x):
    return x != x  # NaN is the only value unequal to itself; false for every integer


#: NaN -> 0 (numpy.nansum's view of the data).
NAN_TO_ZERO = TransformOp("nan_to_zero", "(x != x ? 0 : x)",
                          numpy=lambda x: np.where(_isnan(x), np.zeros((), dtype=x.dtype), x))


def _nan_extreme(name: str, greater: bool) -> ReduceOp:
    """numpy.fmax / fmin: a NaN loses to any number. The identity is NaN (integers: the extreme
    itself), so a slice of NaN stays NaN."""
    worst = _lowest if greater else _highest
    return ReduceOp(
        name,
        combine=f"kps::{'FMax' if greater else 'FMin'}(a, b)",
        identity=lambda dt: np.nan if dt.kind in "fc" else worst(dt),
        numpy=np.fmax if greater else np.fmin,
        accumulate=_accumulate_same,
        empty_ok=False,
        exact=True,
    )


def _inexact_stays_inexact(rule):
    """numpy.nanmean's and nanvar's rule before `rule`: float or complex data take no bool or
    integer `dtype=` ("If a is inexact, then dtype must be inexact"); ints and bool take any."""
    def checked(dtype, requested):
        if requested is not None and dtypes.is_inexact(dtype) and not dtypes.is_inexact(requested):
            raise TypeError(f"dtype: the NaN-skipping mean and variance of {dtype} data need a float or complex "
                            f"dtype (numpy.nanmean's rule), got {requested}")
        return rule(dtype, requested)

    return checked


NANMAX = _nan_extreme("nanmax", True)
NANMIN = _nan_extreme("nanmin", False)

# The sum of the numbers and how many there are: numpy.nanmean's state.
SUM_COUNT = ReduceOp(
    "sum_count",
    combine="acc_t r; r.s = a.s + b.s; r.n = a.n + b.n; return r;",
    identity=lambda dt: {"s": 0, "n": 0},
    numpy=lambda a, b: {"s": a["s"] + b["s"], "n": a["n"] + b["n"]},
    accumulate=_inexact_stays_inexact(_accumulate_mean_sum),  # (a float32 nanmean sums in float64, as mean does)
    state=(("s", "acc"), ("n", "real")),
    lift="acc_t r; const bool skip = x != x; r.s = skip ? value_t(0) : x; r.n = skip ? real_t(0) : real_t(1); return r;",
    numpy_lift=lambda x: {"s": np.where(_isnan(x), 0, x), "n": np.where(_isnan(x), 0, 1)},
)

#: The mean of the numbers: NaN where there are none (0 / 0).
MEAN_OF_NUMBERS = Epilogue("mean_of_numbers", "kps::DivideByCount(a.s, a.n)", lambda a, n: a["s"] / a["n"])

# Welford's state (kps/statistics.py) of the numbers alone: a NaN lifts to an empty state (n = 0).
# Its shift may stay the NaN: a merge takes the shift of a side that is not empty and moves nothing
# where either side is, so an empty state's shift is never read. Selecting a 0 shift for it cost
# 8-12% on the H100 (nanvar over 256M float32: 421.0 -> 379.3 us, the speed of var).
NAN_WELFORD = ReduceOp(
    "nan_welford",
    combine=statistics.WELFORD.combine,
    identity=statistics.WELFORD.identity,
    numpy=statistics.WELFORD.numpy,
    accumulate=_inexact_stays_inexact(statistics.WELFORD.accumulate),
    state=statistics.WELFORD.state,
    lift="acc_t r; r.n = x == x ? real_t(1) : real_t(0); r.shift = x; r.s1 = value_t(-0.0); r.s2 = real_t(-0.0); return r;",
    numpy_lift=lambda x: dict(statistics._welford_lift(x), n=np.where(_isnan(x), 0, 1).astype(dtypes.real_dtype(x.dtype)),
                              shift=np.where(_isnan(x), 0, x)),
)


def _nan_denominator(ddof) -> str:
    return statistics._dof(ddof)  # n - ddof in the state's type; a NaN ddof fails the test > 0: NaN


# numpy.nanvar: NaN, not inf, where n - ddof <= 0 (0 / 0 in the state's type)
_NAN = "(static_cast<decltype(a.s2)>(0) / static_cast<decltype(a.s2)>(0))"


def _numpy_nan_variance(a, ddof):
    dof = a["n"] - ddof
    with np.errstate(all="ignore"):
        return np.where(dof > 0, statistics._numpy_m2(a) / np.where(dof > 0, dof, 1), np.nan)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def nan_variance(ddof) -> Epilogue:
    """The variance of the numbers, dividing by n - ddof; NaN where that is not positive."""
    return Epilogue(f"nan_variance_ddof{statistics.ddof_code(ddof)}",
                    f"{_nan_denominator(ddof)} > 0 ? {statistics.m2_for(ddof)} / {_nan_denominator(ddof)} : {_NAN}",
                    lambda a, n: _numpy_nan_variance(a, ddof))


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def nan_std(ddof) -> Epilogue:
    """The standard deviation of the numbers (the square root of `nan_variance(ddof)`)."""
    return Epilogue(f"nan_std_ddof{statistics.ddof_code(ddof)}",
                    f"{_nan_denominator(ddof)} > 0 ? sqrt({statistics.m2_for(ddof)} / {_nan_denominator(ddof)}) : {_NAN}",
                    lambda a, n: np.sqrt(_numpy_nan_variance(a, ddof)))


def _nan_arg(name: str, compare: str, greater: bool, worst) -> ReduceOp:
    """argmax / argmin of the numbers: a NaN lifts to the identity (the worst value, the index no
    element has), which any number beats; of equal values the first wins. The lift selects rather
    than returns early: the early return cost 6-10% on the H100 (nanargmax over 256M float32:
    435.4 -> 398.4 us)."""
    combine = _arg_combine(greater)
    return ReduceOp(
        name,
        combine=(f"if (a.v != b.v) return a.v {compare} b.v ? a : b; return a.i <= b.i ? a : b;"),
        identity=lambda dt: {"v": worst(dt), "i": _NO_INDEX},
        numpy=combine,
        accumulate=_accumulate_index,
        empty_ok=False,
        state=(("v", "acc"), ("i", "int64")),
        lift="const bool nan = x != x; acc_t r; r.v = nan ? Identity().v : x; r.i = nan ? Identity().i : i; return r;",
        numpy_lift=lambda x, i: {"v": np.where(_isnan(x), worst(x.dtype), x),
                                 "i": np.where(_isnan(x), _NO_INDEX, i)},
        indexed=True,
        heavy=True,
    )


NANARGMAX = _nan_arg("nanargmax", ">", True, _lowest)
NANARGMIN = _nan_arg("nanargmin", "<", False, _highest)
#: The ops whose identity index (NO_INDEX) left in a result means a slice of nothing but NaN:
#: NumPy's ValueError (another indexed op may keep its identity as a result).
ALL_NAN_INDEX_OPS = (NANARGMAX, NANARGMIN)

#: The index the identity carries: an output that kept it saw nothing but NaN.
NO_INDEX = _NO_INDEX
