"""Reductions whose accumulator is a state of several fields, built as ordinary descriptors.

- `WELFORD`: the count, a shift (the first element the state saw) and the sums of the elements'
  deviations from it and of their squares. With the shift among the data the squares never carry
  the mean's magnitude, so data of mean 1e4 and spread 1 keep their digits (M2 = s2 - s1^2 / n loses
  at most log10(n + 1) digits however far the shift lies, since M2 >= (shift - mean)^2), and a merge,
  of two states or of one element, takes no division: an element costs a subtract, an add, an FMA.
- `LOGSUMEXP`: a running maximum and the sum of exp(x - max), rescaled when the maximum moves, so
  nothing overflows (values of 1e4) and -inf / +inf / NaN give SciPy's answers.
Their epilogues (`variance(ddof)`, `std(ddof)`, `LOG_OF_SUM`) turn a state into
the output. Nothing here is special to the kernels: they see structs with Identity, Combine, Lift.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from . import cache, dtypes
from .functors import Epilogue, ReduceOp, _accumulate_mean


def _accumulate_double(dtype: np.dtype, requested):
    """var/std: the result type of numpy.var (ints and bool -> float64, floats keep theirs, complex
    gives its parts' float), the state in float64 (complex128 for complex data) unless `dtype=` asks
    otherwise: a float32 mean near 1e4 is only good to 5e-4, which a variance of 1 would feel at 1e-3
    (measured on the NumPy twin: 2e-4 relative)."""
    acc, out = _mean_of_state(dtype, dtypes.inexact_requested(requested, "a variance"))
    return acc, dtypes.real_dtype(out)


def _mean_of_state(dtype: np.dtype, requested):
    """`_accumulate_double`'s state, with numpy.mean's result type (complex stays complex): the
    mean and the variance from one state (`mean_and_variance`) share it; the API takes the
    variance's real part (ops/api.py)."""
    acc, out = _accumulate_mean(dtype, dtypes.inexact_requested(requested, "a mean and variance"))
    if requested is None or dtypes.is_half(np.dtype(requested)):
        acc = np.dtype(np.complex128 if dtypes.is_complex(acc) else np.float64)
    return acc, out


def _real_dot(a, b):
    """Re(conj(a) b), kps::RealDot: a * b for reals."""
    return (np.conj(a) * b).real if np.iscomplexobj(a) or np.iscomplexobj(b) else a * b


def _nan_of(z):
    """kps::NanOf: a NaN where z has one in either part (or is infinite), else 0."""
    d = z - z
    return d.real + d.imag if np.iscomplexobj(d) else d


def _welford_combine(a, b):
    n = a["n"] + b["n"]
    shift = np.where(a["n"] > 0, a["shift"], b["shift"])
    with np.errstate(all="ignore"):
        d = np.where((a["n"] > 0) & (b["n"] > 0), b["shift"] - shift, 0).astype(shift.dtype)
        e = b["n"] * d
        return {"n": n, "shift": shift, "s1": a["s1"] + (b["s1"] + e),
                "s2": a["s2"] + (b["s2"] + _real_dot(d, b["s1"] + b["s1"] + e))}


def _welford_lift(x):
    real = dtypes.real_dtype(x.dtype)
    return {"n": np.ones(x.shape, real), "shift": x, "s1": np.full_like(x, -0.0), "s2": np.full(x.shape, -0.0, real)}


def _finite_shift_lift(x):
    """`WELFORD_FINITE_SHIFT`'s lift: `_welford_lift` where x is finite, else shift 0 and x in the sums."""
    lifted = _welford_lift(x)
    with np.errstate(invalid="ignore"):
        finite = _nan_of(x) == 0
    s1 = np.where(finite, lifted["s1"], x)
    return dict(lifted, shift=np.where(finite, x, 0).astype(x.dtype), s1=s1,
                s2=np.where(finite, lifted["s2"], np.square(np.abs(s1))).astype(lifted["s2"].dtype))


# b's sums move to a's shift by d = b.shift - a.shift: sum(x - a.shift) = b.s1 + b.n d and
# sum(|x - a.shift|^2) = b.s2 + Re(conj(d) (2 b.s1 + b.n d)) (d (2 b.s1 + b.n d) for reals: RealDot).
# Where either side is empty nothing moves (d = 0, not inf - inf for an infinite shift), so the
# identity merges exactly. Lift's sums are -0.0, which adds as nothing, so one element's merge
# compiles to d = x - shift, s1 += d, s2 += d * d. The count and s2 are real (the "real" fields:
# the accumulate type itself for real data), the shift and s1 complex for complex data.
WELFORD = ReduceOp(
    "welford",
    combine=("acc_t r; r.n = a.n + b.n; r.shift = a.n > real_t(0) ? a.shift : b.shift;"
             " const value_t d = a.n > real_t(0) && b.n > real_t(0) ? b.shift - r.shift : value_t(0);"
             " const value_t e = b.n * d;"
             " r.s1 = a.s1 + (b.s1 + e); r.s2 = a.s2 + (b.s2 + kps::RealDot(d, b.s1 + b.s1 + e)); return r;"),
    identity=lambda dt: {"n": 0, "shift": 0, "s1": 0, "s2": 0},
    numpy=_welford_combine,
    accumulate=_accumulate_double,
    state=(("n", "real"), ("shift", "acc"), ("s1", "acc"), ("s2", "real")),
    lift="acc_t r; r.n = real_t(1); r.shift = x; r.s1 = value_t(-0.0); r.s2 = real_t(-0.0); return r;",
    numpy_lift=_welford_lift,
    fold=("const value_t d = x - a.shift; acc_t r; r.n = a.n + real_t(1); r.shift = a.shift;"
          " r.s1 = a.s1 + d; r.s2 = a.s2 + kps::RealDot(d, d); return r;"),
)

# WELFORD's mean, shift + s1 / n, is NaN where the shift is infinite: x - inf leaves s1 -inf (or NaN)
# for [inf, 1], whose mean is inf, as for [inf, -inf], whose mean is NaN, so no epilogue can tell
# them apart. This twin lifts a non-finite element to a shift of 0 with the element in its sums
# (the shift a state's later elements move by is then finite), and a finite one as WELFORD does, so
# finite data give WELFORD's results bit for bit. Its lift costs about an instruction an element
# (SASS: docs/tuning.md, session 35). The variance needs no finite shift (NumPy's answer for data
# holding an infinity is NaN either way: NanOf(shift) and NanOf(s1) in M2), so only the mean and
# variance together (reduce_mean_var) take it. Its lift's fields depend on the element, so merging
# a lifted element into a running state no longer shortens to a fold: `push` folds where the state
# holds one (the same sums: x + (0 - shift) is x - shift) and lifts where it is empty.
_FINITE_SHIFT_LIFT = ("acc_t r; r.n = real_t(1); const bool finite = kps::NanOf(x) == real_t(0);"
                      " r.shift = finite ? x : value_t(0); r.s1 = finite ? value_t(-0.0) : x;"
                      " r.s2 = finite ? real_t(-0.0) : kps::Norm(x); return r;")
WELFORD_FINITE_SHIFT = dataclasses.replace(
    WELFORD, name="welford_finite_shift", numpy_lift=_finite_shift_lift, lift=_FINITE_SHIFT_LIFT,
    push=f"if (a.n > real_t(0)) {{ {WELFORD.fold} }} {_FINITE_SHIFT_LIFT}")


def _logsumexp_combine(a, b):
    a_hi = a["m"] >= b["m"]
    hi_m, lo_m = np.where(a_hi, a["m"], b["m"]), np.where(a_hi, b["m"], a["m"])
    hi_s, lo_s = np.where(a_hi, a["s"], b["s"]), np.where(a_hi, b["s"], a["s"])
    nan = np.isnan(a["m"]) | np.isnan(b["m"])
    with np.errstate(all="ignore"):
        s = hi_s + lo_s * np.where(lo_m == hi_m, 1, np.exp(lo_m - hi_m)).astype(hi_s.dtype)
    return {"m": np.where(nan, np.nan, hi_m).astype(hi_m.dtype), "s": np.where(nan, np.nan, s).astype(hi_s.dtype)}


# The larger maximum stays; the other sum is scaled by exp(its max - the larger), or by 1 where the
# maxima are equal (two +inf or two -inf: inf - inf would be NaN). NaN anywhere wins. The factor
# is kps::ExpScale: ex2.approx for float (H100, float32 columns of 4096 x 65536: 2365 -> 2687 GB/s).
LOGSUMEXP = ReduceOp(
    "logsumexp",
    combine=("if (a.m != a.m) return a; if (b.m != b.m) return b;"
             " const bool a_hi = a.m >= b.m; const acc_t hi = a_hi ? a : b; const acc_t lo = a_hi ? b : a;"
             " acc_t r; r.m = hi.m; r.s = hi.s + (lo.m == hi.m ? lo.s : lo.s * kps::ExpScale(lo.m - hi.m)); return r;"),
    identity=lambda dt: {"m": -np.inf, "s": 0},
    numpy=_logsumexp_combine,
    accumulate=lambda dtype, requested: _accumulate_mean(dtypes.refuse_complex(dtype, "logsumexp"),
                                                         dtypes.inexact_requested(requested, "logsumexp")),
    state=(("m", "acc"), ("s", "acc")),
    lift="acc_t r; r.m = x; r.s = value_t(1); return r;",
    numpy_lift=lambda x: {"m": x, "s": np.ones_like(x)},
    heavy=True,
)

#: log(sum(exp(x))) from a LOGSUMEXP state: -inf for an empty or all -inf reduction.
LOG_OF_SUM = Epilogue("log_of_sum", "a.m + log(a.s)", lambda a, n: a["m"] + np.log(a["s"]))


def ddof_code(ddof) -> str:
    """`ddof` as it appears in an epilogue's name (a C identifier): an integer as itself (as it always
    has: an integer ddof's kernel is unchanged), a negative one as m<n>, any other real by its
    float64 bits (f<hex>), so each value names one kernel and no two values share one."""
    if isinstance(ddof, int):
        return str(ddof) if ddof >= 0 else f"m{-ddof}"
    return "f" + format(int(np.array(float(ddof), dtype=np.float64).view(np.uint64)), "016x")


def _dof(ddof, count: str = "a.n") -> str:
    """count - ddof in the state's type (a float: the count is a float field), ddof exact: an
    integer as a literal, any other real (0.5, inf, NaN) as its float64 bits."""
    value = str(ddof) if isinstance(ddof, int) else dtypes.cuda_literal(ddof, np.float64)
    return f"({count} - static_cast<decltype(a.n)>({value}))"


def _denominator(ddof, count: str = "a.n") -> str:
    # NumPy: the divisor is max(n - ddof, 0), so ddof >= n gives inf (or NaN for a zero M2). A
    # non-integer ddof may be NaN, which NumPy's maximum propagates and CUDA's max (fmax) would
    # drop: a select keeps it (NaN < 0 is false).
    dof, zero = _dof(ddof, count), "static_cast<decltype(a.n)>(0)"
    if isinstance(ddof, int):
        return f"max({dof[1:-1]}, {zero})"
    return f"({dof} < {zero} ? {zero} : {dof})"


#: The names of the epilogues that divide by max(n - ddof, 0), numpy.var's divisor.
_CLAMPED = ("variance_ddof", "std_ddof", "mean_variance_ddof")


def clamps_dof(epilogue: Epilogue) -> bool:
    """Whether `epilogue` is `variance`, `std` or `mean_and_variance` of some ddof: numpy.var's
    divisor, for which NumPy warns where ddof >= n (the API's warning: ops/looks.py)."""
    return epilogue.name.startswith(_CLAMPED)


# M2, the sum of squared deviations from the mean, from the shifted sums: s2 - |s1|^2 / n, at most a
# rounding below zero (clamped; NaN stays NaN). Adding NanOf(shift) (shift - shift: 0, or NaN for an
# infinite or NaN shift, in either part of a complex one, whose sums may be 0: a slice of one inf)
# gives NumPy's NaN there, and +0.0 for -0.0. Where s2 is not finite, the data hold an infinity or a
# NaN, which leaves the shift or s1 not finite too (a merge moves a shift into s1): NaN, as NumPy's;
# or finite data's squares overflowed (var([1e300, -1, 1])), whatever the order of the merges
# (s2 is inf, or the inf - inf of a merge's cross term): +inf, NumPy's answer, where the formula
# would give NaN. Finite data whose range itself overflows (x - shift is inf) give NaN (NumPy inf).
# The mean is shift + s1 / n. Both are NaN for n = 0.
def _m2(s1_over_n: str) -> str:
    """M2 with `s1_over_n` the CUDA expression of s1 / n."""
    raw = f"((a.s2 - kps::RealDot(a.s1, {s1_over_n})) + kps::NanOf(a.shift))"
    overflowed = "(kps::Infinity<decltype(a.s2)>() + (kps::NanOf(a.shift) + kps::NanOf(a.s1)))"
    m2 = f"(isfinite(a.s2) ? {raw} : {overflowed})"
    return f"({m2} < 0 ? static_cast<decltype(a.s2)>(0) : {m2})"


#: M2 of a state that counts its own elements (`a.n`: the NaN-skipping states of kps/nan.py).
M2 = _m2("a.s1 / a.n")


def m2_for(ddof, count: str = "a.n", m2: str = M2) -> str:
    """M2 for a ddof's epilogue. NumPy's M2 of nothing is 0 (a sum of no squares), which matters
    only where n - ddof > 0 for n = 0, a negative ddof: numpy.var of nothing with ddof=-1 is 0 / 1.
    For ddof >= 0 (or NaN) the quotient is NaN whatever M2 is, and the kernels keep the plain M2."""
    return f"({count} > 0 ? {m2} : static_cast<decltype(a.s2)>(0))" if ddof < 0 else m2


def _numpy_m2(a):
    """M2 as the kernels compute it; 0 for an empty state (see `m2_for`: the same quotients)."""
    with np.errstate(all="ignore"):
        raw = (a["s2"] - _real_dot(a["s1"], a["s1"] / a["n"])) + _nan_of(a["shift"])
        overflowed = np.inf + (_nan_of(a["shift"]) + _nan_of(a["s1"]))
        m2 = np.where(np.isfinite(a["s2"]), raw, overflowed).astype(raw.dtype)
    return np.where(a["n"] > 0, np.where(m2 < 0, 0, m2), 0).astype(m2.dtype)


# A WELFORD state's count is the launch's count `n` (every element lifts to a count of 1), the same
# for every output. So the epilogues below read `n`, not the state's `a.n`, and multiply by 1 / n
# and 1 / max(n - ddof, 0): the compiler computes those once a thread instead of dividing for every
# output (within an ulp of the quotients, in the state's float type). A var over short rows was
# bound by those float64 divisions (docs/tuning.md).
_N = "static_cast<decltype(a.n)>(n)"
_ONE = "static_cast<decltype(a.n)>(1)"
_INV_N = f"({_ONE} / {_N})"
# (the mean's complex quotient as NumPy's, whose division by the complex (n, 0) makes a part NaN
# where the other is infinite: kps::ScaleByCount; a plain product for reals)
_MEAN_OF_N = f"(a.shift + kps::ScaleByCount(a.s1, {_INV_N}))"


def _quotient_of_n(ddof) -> str:
    """M2 / max(n - ddof, 0) of a WELFORD state of the launch's `n` elements."""
    m2 = m2_for(ddof, _N, _m2(f"a.s1 * {_INV_N}"))
    return f"({m2} * ({_ONE} / {_denominator(ddof, _N)}))"


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def variance(ddof) -> Epilogue:
    """The variance from a WELFORD state, dividing by max(n - ddof, 0) (one descriptor per ddof, any
    real number: ops.call.check_ddof gives an integral one as an int). The count is the launch's:
    every element counts (a state that skips NaN takes kps.nan.nan_variance, which reads its own)."""
    return Epilogue(f"variance_ddof{ddof_code(ddof)}", _quotient_of_n(ddof),
                    lambda a, n: _numpy_m2(a) / np.maximum(a["n"] - ddof, 0))


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def mean_and_variance(ddof) -> Epilogue:
    """The mean and the variance (divided by n - ddof) from one WELFORD state: two results per
    output, in numpy.mean's type (complex data: both complex, the variance's imaginary part 0). The
    mean of nothing is NaN, as NumPy's."""
    return Epilogue(f"mean_variance_ddof{ddof_code(ddof)}", (_MEAN_OF_N, _quotient_of_n(ddof)),
                    lambda a, n: (a["shift"] + a["s1"] / a["n"], _numpy_m2(a) / np.maximum(a["n"] - ddof, 0)),
                    _mean_of_state)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def std(ddof) -> Epilogue:
    """The standard deviation from a WELFORD state (the square root of `variance(ddof)`)."""
    return Epilogue(f"std_ddof{ddof_code(ddof)}", f"sqrt({_quotient_of_n(ddof)})",
                    lambda a, n: np.sqrt(_numpy_m2(a) / np.maximum(a["n"] - ddof, 0)))
