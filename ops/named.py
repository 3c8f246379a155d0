"""The named reductions, as data: each one's name, signature kind, functor descriptors, NumPy twin,
torch twin, gradient, look and doc. ops/build.py makes a function of each entry of a kind it knows
(ops/own.py those of a signature of their own; ops/api.py, ops/family.py); ops/torch_ops.py registers
a torch custom op for each entry with torch arguments (`torch_args`: by kind, `TORCH_SCHEMAS`, or the
entry's own) and a torch twin or a gradient (`grad`: the name of its formula in ops/torch_grads.py).
Nothing here runs anything, nothing fills anything.

Signature kinds (after `x, axis=None, keepdims=False`):
- "sum":  `dtype=None, out=None, precise=False` (`precise`: `precise_op` and `precise_epilogue`);
- "plain": `dtype=None, out=None`;
- "ddof": `dtype=None, out=None, ddof=0`, the epilogue picked per call: `epilogue(ddof, x)`;
- "arg":  `out=None`, int64 indices;
- "own":  a signature of its own, written out in ops/api.py or ops/family.py (the descriptors
  listed are those it reduces with; None where it picks them per call).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

import kps
from kps import extrema, nan, precise, statistics

from . import interop, looks


@dataclass(frozen=True)
class Named:
    """One named reduction. `epilogue`: where the op takes `ddof` (kind "ddof", reduce_mean_var) a
    function (ddof, x) -> the epilogue."""

    name: str
    kind: str
    op: Optional[kps.ReduceOp]
    epilogue: Union[kps.Epilogue, Callable[[int, Any], kps.Epilogue], None] = kps.NONE
    transform: Optional[kps.TransformOp] = kps.IDENTITY
    numpy: str = ""  # its NumPy twin: what it answers as
    torch: Optional[str] = None  # its torch twin (interop.TORCH_TWINS): a torch tensor gets its dtype
    look: Any = None  # its look at the results (ops/looks.py): NumPy's warnings and errors
    doc: str = ""
    precise_op: Optional[kps.ReduceOp] = None  # kind "sum": precise=True's
    precise_epilogue: Optional[kps.Epilogue] = None
    #: Its gradient on torch tensors: the name of its formula (ops/torch_grads.py `FORMULAS`), or
    #: None: no gradient (its results are ints or bools, as its torch twin's).
    grad: Optional[str] = None
    #: Kind "own": its torch custom op's arguments after `x, axis, keepdims` (as `TORCH_SCHEMAS`), or
    #: None: no custom op.
    own_torch_args: Optional[Tuple[Tuple[str, str, Any], ...]] = None
    outputs: int = 1  # its results: 2 for a pair (mean_var, minmax)


#: A torch custom op's argument after `x, int[]? axis, bool keepdims`: (torch schema type, name,
#: default), named as the public function's keyword. ddof's type is here only (its checks:
#: ops/call.py `check_ddof`).
DTYPE = ("ScalarType?", "dtype", None)
PRECISE = ("bool", "precise", False)
DDOF = ("float", "ddof", 0.0)
ORD = ("float", "ord", 2.0)

#: The arguments a torch custom op takes after `x, int[]? axis, bool keepdims`, by signature kind.
TORCH_SCHEMAS = {"sum": (DTYPE, PRECISE), "plain": (DTYPE,), "ddof": (DTYPE, DDOF), "arg": ()}


def torch_args(entry: Named):
    """`entry`'s torch custom op's arguments after `x, axis, keepdims`, or None (no custom op)."""
    return entry.own_torch_args if entry.kind == "own" else TORCH_SCHEMAS.get(entry.kind)


def has_torch_op(entry: Named) -> bool:
    """Whether `entry` is a torch custom op (`torch.ops.kps.<name>`, ops/torch_ops.py): it has torch
    arguments, and a torch twin (whose dtype rule its results follow) or a gradient."""
    return torch_args(entry) is not None and (entry.torch is not None or entry.grad is not None)


def _is_inexact(x) -> bool:
    """Whether x holds floats or complex numbers, which may hold NaN (NumPy, CuPy and dask dtypes,
    bfloat16, torch's)."""
    dt = getattr(x, "dtype", None)
    if interop.is_torch(x):
        return dt.is_floating_point or dt.is_complex
    try:
        dt = np.dtype(dt)
    except TypeError:
        return False
    return dt.kind in "fc" or kps.dtypes.is_half(dt)


def _nan_welford(nan_for, plain_for):
    """nanvar's and nanstd's epilogue: NaN where n - ddof <= 0 for floats and complex numbers;
    without NaN (ints, bool) numpy.nanvar is numpy.var, whose ddof >= n gives inf."""
    return lambda ddof, x: (nan_for if _is_inexact(x) else plain_for)(ddof)


WELFORD_DOC = (
    "\n\nOne pass over the data (kps.WELFORD: the count and the sums of the deviations from a shift taken"
    " among the data, and of their squares), so data far from zero keep their digits. The divisor is"
    " max(n - ddof, 0), as in NumPy: ddof >= n gives inf (NaN where every value is equal). Ints and bool give"
    " float64; float16 accumulates in float32. Otherwise the signature and semantics of the other ops, plus `ddof`.")

ARG_DOC = (
    "\n\nNumPy semantics (int64 indices; of equal values the first wins; a NaN beats every number, the first NaN"
    " wins; an empty reduced range raises ValueError; `out` an integer array) with `axis` None (the index into"
    " the flattened array), an int, or a tuple of ints: then the index into the reduced axes flattened in C"
    " order (the axes in increasing order), as `numpy.unravel_index(i, [x.shape[a] for a in sorted(axes)])`"
    " unravels it. One pass: each element's index travels with its value.")

SUM = Named("reduce_sum", "sum", kps.ADD, kps.NONE, numpy="numpy.sum", torch="sum",
            precise_op=precise.NEUMAIER, precise_epilogue=precise.PRECISE_SUM,
            doc="Sum of elements over the given axes (numpy.sum).", grad="sum")
MEAN = Named("reduce_mean", "sum", kps.ADD, kps.MEAN, numpy="numpy.mean", torch="mean",
             precise_op=precise.NEUMAIER, precise_epilogue=precise.PRECISE_MEAN,
             doc="Arithmetic mean over the given axes (numpy.mean).", grad="mean")
MAX = Named("reduce_max", "plain", kps.MAX, numpy="numpy.max", torch="amax",
            doc="Maximum over the given axes; NaN propagates (numpy.max).", grad="extreme")
MIN = Named("reduce_min", "plain", kps.MIN, numpy="numpy.min", torch="amin",
            doc="Minimum over the given axes; NaN propagates (numpy.min).", grad="extreme")
PROD = Named("reduce_prod", "plain", kps.MUL, numpy="numpy.prod", torch="prod",
             doc="Product of elements over the given axes (numpy.prod).", grad="prod")
ALL = Named("reduce_all", "plain", kps.LOGICAL_AND, numpy="numpy.all", torch="all",
            doc="Whether every element is true (numpy.all).")
ANY = Named("reduce_any", "plain", kps.LOGICAL_OR, numpy="numpy.any", torch="any",
            doc="Whether any element is true (numpy.any).")
ARGMAX = Named("reduce_argmax", "arg", kps.ARGMAX, kps.INDEX, numpy="numpy.argmax", torch="argmax",
               doc="Index of the largest element over the given axes (numpy.argmax)." + ARG_DOC)
ARGMIN = Named("reduce_argmin", "arg", kps.ARGMIN, kps.INDEX, numpy="numpy.argmin", torch="argmin",
               doc="Index of the smallest element over the given axes (numpy.argmin)." + ARG_DOC)
MEAN_VAR = Named(
    "reduce_mean_var", "own", statistics.WELFORD_FINITE_SHIFT, lambda ddof, x: statistics.mean_and_variance(ddof),
    numpy="(numpy.mean, numpy.var)", torch="var_mean", grad="mean_var", own_torch_args=(DTYPE, DDOF),
    outputs=2)
VAR = Named("reduce_var", "ddof", statistics.WELFORD, lambda ddof, x: statistics.variance(ddof),
            numpy="numpy.var", torch="var", grad="var", doc="Variance over the given axes (numpy.var)." + WELFORD_DOC)
STD = Named("reduce_std", "ddof", statistics.WELFORD, lambda ddof, x: statistics.std(ddof),
            numpy="numpy.std", torch="std", grad="std",
            doc="Standard deviation over the given axes (numpy.std)." + WELFORD_DOC)
LOGSUMEXP = Named(
    "reduce_logsumexp", "plain", statistics.LOGSUMEXP, statistics.LOG_OF_SUM, numpy="scipy.special.logsumexp",
    torch="logsumexp", grad="logsumexp",
    doc="log(sum(exp(x))) over the given axes in one pass (scipy.special.logsumexp): a running maximum"
        " and a sum rescaled to it, so values of 1e4 do not overflow; -inf everywhere (or nothing) gives"
        " -inf, +inf gives inf, NaN gives NaN. Ints and bool give float64.")

NANSUM = Named(
    "reduce_nansum", "plain", kps.ADD, kps.NONE, nan.NAN_TO_ZERO, numpy="numpy.nansum", torch="nansum",
    grad="nansum", doc="Sum over the given axes, NaN counted as zero (numpy.nansum): a slice of NaN sums to 0.")
NANMEAN = Named(
    "reduce_nanmean", "plain", nan.SUM_COUNT, nan.MEAN_OF_NUMBERS, numpy="numpy.nanmean", torch="nanmean",
    look=looks.MEAN_OF_EMPTY, grad="nanmean",
    doc="Mean of the numbers over the given axes, NaN skipped (numpy.nanmean): a slice of NaN gives NaN and"
        " NumPy's RuntimeWarning 'Mean of empty slice'.")
NANMAX = Named(
    "reduce_nanmax", "plain", nan.NANMAX, kps.NONE, numpy="numpy.nanmax", look=looks.ALL_NAN_WARNS,
    grad="nan_extreme",
    doc="Largest number over the given axes, NaN skipped (numpy.nanmax): a slice of NaN gives NaN and"
        " NumPy's RuntimeWarning 'All-NaN slice encountered'; an empty one raises ValueError.")
NANMIN = Named(
    "reduce_nanmin", "plain", nan.NANMIN, kps.NONE, numpy="numpy.nanmin", look=looks.ALL_NAN_WARNS,
    grad="nan_extreme",
    doc="Smallest number over the given axes, NaN skipped (numpy.nanmin); as reduce_nanmax.")
NANVAR = Named(
    "reduce_nanvar", "ddof", nan.NAN_WELFORD, _nan_welford(nan.nan_variance, kps.variance), numpy="numpy.nanvar",
    look=looks.DOF, grad="nanvar",
    doc="Variance of the numbers over the given axes, NaN skipped (numpy.nanvar), one pass as reduce_var:"
        " NaN where n - ddof <= 0 (a slice of NaN too), with NumPy's RuntimeWarning.")
NANSTD = Named(
    "reduce_nanstd", "ddof", nan.NAN_WELFORD, _nan_welford(nan.nan_std, kps.std), numpy="numpy.nanstd",
    look=looks.DOF, grad="nanstd",
    doc="Standard deviation of the numbers over the given axes, NaN skipped (numpy.nanstd); as reduce_nanvar.")
NANARGMAX = Named(
    "reduce_nanargmax", "arg", nan.NANARGMAX, kps.INDEX, numpy="numpy.nanargmax", look=looks.ALL_NAN_RAISES,
    doc="Index of the largest number over the given axes, NaN skipped (numpy.nanargmax): a slice of NaN"
        " raises ValueError('All-NaN slice encountered') after the call (an `out` then holds int64's"
        " largest value there; a dask array raises it when computed); otherwise as reduce_argmax. Where the"
        " largest number is -inf and a NaN comes before it, NumPy answers the NaN's index (it reads NaN as"
        " -inf); this answers the first -inf's.")
NANARGMIN = Named(
    "reduce_nanargmin", "arg", nan.NANARGMIN, kps.INDEX, numpy="numpy.nanargmin", look=looks.ALL_NAN_RAISES,
    doc="Index of the smallest number over the given axes, NaN skipped (numpy.nanargmin); as reduce_nanargmax.")
COUNT_NONZERO = Named("count_nonzero", "own", kps.ADD, kps.NONE, kps.NONZERO, numpy="numpy.count_nonzero")
PTP = Named("reduce_ptp", "own", extrema.MINMAX, extrema.PEAK_TO_PEAK, numpy="numpy.ptp", grad="ptp",
            own_torch_args=())
MINMAX = Named("reduce_minmax", "own", extrema.MINMAX, extrema.MIN_AND_MAX, numpy="(numpy.min, numpy.max)",
               torch="aminmax", grad="minmax", own_torch_args=(), outputs=2)
NORM = Named("reduce_norm", "own", None, None, None, numpy="numpy.linalg.norm", torch="vector_norm", grad="norm",
             own_torch_args=(ORD,))

#: Every named reduction (`reduce` itself, of any descriptors, aside: ops/api.py).
TABLE = (SUM, MEAN, MAX, MIN, PROD, ALL, ANY, ARGMAX, ARGMIN, LOGSUMEXP, MEAN_VAR, VAR, STD,
         COUNT_NONZERO, MINMAX, NANARGMAX, NANARGMIN, NANMAX, NANMEAN, NANMIN, NANSTD, NANSUM, NANVAR, NORM, PTP)
BY_NAME = {entry.name: entry for entry in TABLE}
