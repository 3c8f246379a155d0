"""Vector norms as numpy.linalg.norm defines them for vectors, as descriptors (ord 1, 2, inf, -inf,
0 and any other p), over any axes.

The 2-norm never overflows where its sum of squares would. Data narrower than float64 (float32,
the 16-bit floats, ints, bool) square and sum in float64, whose range holds the square of any of
their values (float32 values of 1e20: NumPy's sqrt(dot(x, x)) is inf there): one multiply-add per
element. float64 data are scaled, as BLAS nrm2 is: the state is the largest magnitude m so far
and the sum s of the squares of the magnitudes over m; merging two states scales the smaller
one's sum by its m over the larger's; a NaN wins. The others are a transform, a plain reduction
and an epilogue. Ints and bool give float64; floats keep their type (16-bit floats accumulate in
float32, or float64 for the 2-norm).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import cache, dtypes
from .functors import ABS, ADD, IDENTITY, MAX, MIN, Epilogue, ReduceOp, TransformOp, _accumulate_mean


def _accumulate_in_double(dtype: np.dtype, requested):
    """numpy.linalg.norm's result type (ints and bool -> float64, floats keep theirs), summed in float64."""
    _, out = _accumulate_mean(dtype, requested)
    return np.dtype(np.float64), out


# The sum of the squares in float64, as a state of one field: the kernels then keep one
# accumulator a thread and bound its registers as for any state, where a scalar float64 accumulator
# of float32 data ran 3-11% slower on the H100 (256M float32: 405.3 -> 379.9 us; 4096 x 65536
# columns 381.0 -> 367.9 us), behind torch.linalg.vector_norm.
SUM_OF_SQUARES = ReduceOp("sum_of_squares", combine="acc_t r; r.s = a.s + b.s; return r;",
                          identity=lambda dt: {"s": 0}, numpy=lambda a, b: {"s": a["s"] + b["s"]},
                          accumulate=_accumulate_in_double, state=(("s", "acc"),),
                          lift="acc_t r; r.s = x * x; return r;", numpy_lift=lambda x: {"s": np.square(x)})

#: sqrt(s): the 2-norm from SUM_OF_SQUARES.
ROOT = Epilogue("root", "sqrt(a.s)", lambda a, n: np.sqrt(a["s"]))


def _scaled_combine(a, b):
    a_hi = a["m"] >= b["m"]
    hi_m, lo_m = np.where(a_hi, a["m"], b["m"]), np.where(a_hi, b["m"], a["m"])
    hi_s, lo_s = np.where(a_hi, a["s"], b["s"]), np.where(a_hi, b["s"], a["s"])
    with np.errstate(all="ignore"):
        q = np.where(lo_m == hi_m, 1, lo_m / np.where(hi_m > 0, hi_m, 1)).astype(hi_s.dtype)
    nan = np.isnan(a["m"]) | np.isnan(b["m"])
    s = hi_s + lo_s * q * q
    return {"m": np.where(nan, np.nan, hi_m).astype(hi_m.dtype), "s": np.where(nan, np.nan, s).astype(hi_s.dtype)}


# q = lo.m / hi.m is 1 where the two are equal (two zeros, two infinities: 0 / 0 and inf / inf are NaN)
SCALED_SQUARES = ReduceOp(
    "scaled_squares",
    combine=("if (a.m != a.m) return a; if (b.m != b.m) return b;"
             " const bool a_hi = a.m >= b.m; const acc_t hi = a_hi ? a : b; const acc_t lo = a_hi ? b : a;"
             " const value_t q = lo.m == hi.m ? value_t(1) : lo.m / hi.m;"
             " acc_t r; r.m = hi.m; r.s = hi.s + lo.s * q * q; return r;"),
    identity=lambda dt: {"m": 0, "s": 0},
    numpy=_scaled_combine,
    accumulate=_accumulate_mean,
    state=(("m", "acc"), ("s", "acc")),
    lift="acc_t r; r.m = x < 0 ? -x : x; r.s = value_t(1); return r;",
    numpy_lift=lambda x: {"m": np.abs(x), "s": np.ones_like(x)},
)

#: m sqrt(s): the 2-norm from a SCALED_SQUARES state (0 for nothing).
SCALED_ROOT = Epilogue("scaled_root", "a.m * sqrt(a.s)", lambda a, n: a["m"] * np.sqrt(a["s"]))


def _magnitude(x):
    """kps::Magnitude's twin: |x|, ints and bool in float64 first (np.abs of an int8's -128 wraps)."""
    return np.abs(x.astype(np.float64) if x.dtype.kind in "biu" else x)


#: |x| as numpy.linalg.norm reads an element: floats keep their type, complex numbers give their
#: magnitude, ints and bool float64 (so the least value of a signed type is not wrapped).
MAGNITUDE = TransformOp("magnitude", "kps::Magnitude(x)", _magnitude)

#: The largest magnitude, 0 for nothing (numpy.linalg.norm's inf-norm of an empty vector: every
#: magnitude is >= 0, so 0 is max's identity here; a NaN still wins).
MAX_MAGNITUDE = ReduceOp("max_magnitude", MAX.combine, lambda dt: 0, np.maximum, MAX.accumulate, exact=True)

#: The accumulator as it is, in a float type (ints -> float64): the 1-, inf-, -inf- and 0-norms.
AS_FLOAT = Epilogue("as_float", "a", lambda a, n: a, _accumulate_mean)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def power(p: float):
    """(|x|^p summed)^(1/p): its transform and its epilogue, for one p (numpy.linalg.norm's way)."""
    lit = repr(float(p))
    tag = lit.replace("-", "m").replace(".", "_").replace("+", "")
    transform = TransformOp(f"magnitude_pow_{tag}",
                            f"pow(static_cast<res_t>(kps::Magnitude(x)), static_cast<res_t>({lit}))",
                            numpy=lambda x: _magnitude(x) ** float(p))
    epilogue = Epilogue(f"root_{tag}", f"pow(a, static_cast<acc_t>(1.0 / {lit}))", lambda a, n: a ** (1.0 / float(p)),
                        _accumulate_mean)
    return transform, epilogue


#: 1 where x is not zero, in the input's float type (complex: its parts'; ints and bool: float64):
#: numpy.linalg.norm's 0-"norm".
NONZERO_COUNT = TransformOp("nonzero_count", "x != 0",
                            numpy=lambda x: (x != 0).astype(dtypes.real_dtype(x.dtype) if x.dtype.kind in "fc" else np.float64))


def descriptors(ord, float64: bool = False):
    """(op, transform, epilogue) of the vector norm of order `ord` (a number, inf or -inf) of data
    that are float64 or narrower."""
    if ord == 2:
        return (SCALED_SQUARES, IDENTITY, SCALED_ROOT) if float64 else (SUM_OF_SQUARES, IDENTITY, ROOT)
    if ord == 1:
        return ADD, MAGNITUDE, AS_FLOAT
    if ord == np.inf:
        return MAX_MAGNITUDE, MAGNITUDE, AS_FLOAT
    if ord == -np.inf:  # (NumPy's min of nothing has no identity: an empty one is a ValueError)
        return MIN, MAGNITUDE, AS_FLOAT
    if ord == 0:
        return ADD, NONZERO_COUNT, AS_FLOAT
    transform, epilogue = power(ord)
    return ADD, transform, epilogue


def of_magnitudes(ord, float64: bool = False):
    """(op, transform, epilogue) of the vector norm of order `ord` of complex data (`float64`:
    complex128): numpy.linalg.norm's, the norm of the magnitudes |x| (hypot), real results. Every
    ord but 2 reads |x| already (kps::Abs is the magnitude); the 2-norm sums |x|^2 of the magnitudes,
    float64 ones scaled."""
    op, transform, epilogue = descriptors(ord, float64)
    return op, (ABS if transform is IDENTITY else transform), epilogue
