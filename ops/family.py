"""The rest of the reduction family, each a few lines over the kps descriptors: the NaN-skipping
reductions (kps/nan.py), count_nonzero, the range and both extremes from one read (kps/extrema.py),
vector norms (kps/norms.py).

NumPy's names, signatures and semantics. Where NumPy warns or raises for a slice of nothing but
NaN, these look at the result after the call (one read of the outputs, a synchronisation on the
GPU): a NaN among nanmax's outputs can only come from such a slice. Dask results are lazy: they
are not looked at.
"""
from __future__ import annotations

import warnings

import numpy as np

import kps
from kernels import capturing, look
from kps import extrema, nan, norms

from . import dask_backend, interop
from .api import _arg, _cupy, _is_cupy, _named, _run, _table, _welford


def _in_capture(r) -> bool:
    """Whether a CUDA graph is being captured on the stream the GPU result `r` was made on."""
    if interop.is_torch(r):
        return interop.torch_module().cuda.is_current_stream_capturing()
    return capturing(_cupy().cuda.get_current_stream().ptr)


def _isnan(r):
    if interop.is_torch(r):
        return r.isnan()
    if _is_cupy(r):
        return _cupy().isnan(r)
    return np.isnan(r) if r.dtype.kind in "fc" else np.zeros(r.shape, dtype=bool)


#: What a look looks for, as an elementwise test (NumPy, CuPy and torch alike) where no look
#: kernel answers: NumPy results, non-contiguous `out=` views.
_TESTS = {look.NAN: _isnan, look.LARGEST_INDEX: lambda r: r == nan.NO_INDEX}


def _look_on_gpu(r, kind: str):
    """`look.any_match` over a contiguous CuPy array or CUDA tensor, on the stream it was made on;
    None where the kernel has no answer."""
    if interop.is_torch(r):
        if not r.is_contiguous():
            return None
        stream = interop.torch_module().cuda.current_stream(r.device).cuda_stream
        return look.any_match(kind, r.data_ptr(), r.numel(), interop.kernel_dtype(r.dtype), stream, r.device.index)
    if not r.flags.c_contiguous:
        return None
    return look.any_match(kind, r.data.ptr, r.size, r.dtype, _cupy().cuda.get_current_stream().ptr,
                          r.data.device_id)


def _looks(result, kind: str) -> bool:
    """Whether any value of the result (or of a tuple of results) is `kind` (`look.NAN`, or
    `look.LARGEST_INDEX`: the index an all-NaN slice keeps). A GPU result is looked at where it is,
    by kernels/look.py (one small kernel and a wait for the stream: no copy of the result comes
    back); inside a CUDA graph capture it holds no values yet, so nothing is looked at (no warning,
    no error) and the capture stays free of host syncs."""
    for r in result if isinstance(result, tuple) else (result,):
        if dask_backend.is_dask(r):
            continue
        found = None
        if (interop.is_torch(r) and r.is_cuda) or _is_cupy(r):
            if _in_capture(r):
                continue
            found = _look_on_gpu(r, kind)
        elif not interop.is_torch(r):
            r = np.asarray(r)
        if found is None:
            found = bool(_TESTS[kind](r).any())
        if found:
            return True
    return False


class _Look:
    """A named op's look at its results (api._run's `after`): for `kind` (look.NAN, look.LARGEST_INDEX),
    then `found()` where one matches (NumPy's warning or error). A prepared call on CuPy arrays has its
    kernel look (api._prepare_looked); every other call looks after it (`_looks`)."""

    def __init__(self, kind: str, found):
        self.kind, self.found = kind, found

    def __call__(self, result):
        if _looks(result, self.kind):
            self.found()
        return result


def _warn(message: str):
    # stacklevel 5: the user's line, past this, the look or the prepared call, api._run and the op
    return lambda: warnings.warn(message, RuntimeWarning, stacklevel=5)


def _warns(message: str) -> _Look:
    """The look after a call that warns as NumPy does where a result is NaN."""
    return _Look(look.NAN, _warn(message))


reduce_nansum = _named(
    "reduce_nansum", kps.ADD, kps.NONE,
    "Sum over the given axes, NaN counted as zero (numpy.nansum): a slice of NaN sums to 0.", nan.NAN_TO_ZERO,
    twin="nansum")
reduce_nanmean = _named(
    "reduce_nanmean", nan.SUM_COUNT, nan.MEAN_OF_NUMBERS,
    "Mean of the numbers over the given axes, NaN skipped (numpy.nanmean): a slice of NaN gives NaN and"
    " NumPy's RuntimeWarning 'Mean of empty slice'.", after=_warns("Mean of empty slice"), twin="nanmean")
reduce_nanmax = _named(
    "reduce_nanmax", nan.NANMAX, kps.NONE,
    "Largest number over the given axes, NaN skipped (numpy.nanmax): a slice of NaN gives NaN and"
    " NumPy's RuntimeWarning 'All-NaN slice encountered'; an empty one raises ValueError.",
    after=_warns("All-NaN slice encountered"))
reduce_nanmin = _named(
    "reduce_nanmin", nan.NANMIN, kps.NONE,
    "Smallest number over the given axes, NaN skipped (numpy.nanmin); as reduce_nanmax.",
    after=_warns("All-NaN slice encountered"))


def _is_float(x) -> bool:
    """Whether x holds floats (NumPy, CuPy and dask dtypes, bfloat16, torch's)."""
    dt = getattr(x, "dtype", None)
    if interop.is_torch(x):
        return dt.is_floating_point
    try:
        dt = np.dtype(dt)
    except TypeError:
        return False
    return dt.kind == "f" or kps.dtypes.is_half(dt)


def _is_float64(x) -> bool:
    """Whether x holds float64 (NumPy, CuPy and dask dtypes, torch's; a list as NumPy reads it)."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    if isinstance(dt, np.dtype):  # (str() of a NumPy dtype costs microseconds a call)
        return dt == _FLOAT64
    return str(dt) == "torch.float64"


_FLOAT64 = np.dtype(np.float64)


def _nan_welford(nan_for, plain_for):
    """nanvar's and nanstd's epilogue: NaN where n - ddof <= 0 for floats; without NaN (ints, bool)
    numpy.nanvar is numpy.var, whose ddof >= n gives inf."""
    return lambda ddof, x: (nan_for if _is_float(x) else plain_for)(ddof)


_DOF = _warns("Degrees of freedom <= 0 for slice.")
reduce_nanvar = _welford(
    "reduce_nanvar", _nan_welford(nan.nan_variance, kps.variance),
    "Variance of the numbers over the given axes, NaN skipped (numpy.nanvar), one pass as reduce_var:"
    " NaN where n - ddof <= 0 (a slice of NaN too), with NumPy's RuntimeWarning.", nan.NAN_WELFORD, _DOF)
reduce_nanstd = _welford(
    "reduce_nanstd", _nan_welford(nan.nan_std, kps.std),
    "Standard deviation of the numbers over the given axes, NaN skipped (numpy.nanstd); as reduce_nanvar.",
    nan.NAN_WELFORD, _DOF)


def _all_nan_slice():
    raise ValueError("All-NaN slice encountered")


#: An index the identity kept: the slice held nothing but NaN (NumPy's ValueError).
_all_nan_raises = _Look(look.LARGEST_INDEX, _all_nan_slice)


reduce_nanargmax = _arg(
    "reduce_nanargmax", nan.NANARGMAX,
    "Index of the largest number over the given axes, NaN skipped (numpy.nanargmax): a slice of NaN"
    " raises ValueError('All-NaN slice encountered') after the call (an `out` then holds int64's"
    " largest value there; a dask array raises it when computed); otherwise as reduce_argmax. Where the"
    " largest number is -inf and a NaN comes before it, NumPy answers the NaN's index (it reads NaN as"
    " -inf); this answers the first -inf's.", _all_nan_raises)
reduce_nanargmin = _arg(
    "reduce_nanargmin", nan.NANARGMIN,
    "Index of the smallest number over the given axes, NaN skipped (numpy.nanargmin); as reduce_nanargmax.",
    _all_nan_raises)

_COUNT = _table(kps.ADD, kps.NONZERO, kps.NONE)


def count_nonzero(x, axis=None, keepdims=False):
    """How many elements are not zero over the given axes (numpy.count_nonzero; NaN counts), as int64."""
    return _run(x, axis, kps.ADD, kps.NONZERO, keepdims, np.int64, None, kps.NONE, _COUNT)


def reduce_ptp(x, axis=None, keepdims=False, out=None):
    """max - min over the given axes from one read (numpy.ptp): the input's dtype, integers wrapping
    as NumPy's; NaN propagates; bool is a TypeError, as in NumPy."""
    if getattr(x, "dtype", None) == np.bool_ or str(getattr(x, "dtype", "")) == "torch.bool":
        raise TypeError("x: the range of booleans is undefined (numpy.ptp refuses bool too)")
    return _run(x, axis, extrema.MINMAX, kps.IDENTITY, keepdims, None, out, extrema.PEAK_TO_PEAK,
                _table(extrema.MINMAX, kps.IDENTITY, extrema.PEAK_TO_PEAK) if out is None else None)


_MINMAX = _table(extrema.MINMAX, kps.IDENTITY, extrema.MIN_AND_MAX)


def reduce_minmax(x, axis=None, keepdims=False):
    """`(min, max)` over the given axes from one read (torch.aminmax's pair, NumPy's semantics for
    each: NaN propagates, an empty reduction raises ValueError). No `out=`."""
    return _run(x, axis, extrema.MINMAX, kps.IDENTITY, keepdims, None, None, extrema.MIN_AND_MAX, _MINMAX, "aminmax")


def _check_ord(ord):
    if type(ord) is int:  # the common case, first: the checks below cost microseconds a call
        return ord
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, (int, float, np.integer, np.floating)):
        if isinstance(ord, str):
            raise ValueError(f"ord: vector norms take a number, inf or -inf; {ord!r} is a matrix norm")
        raise TypeError(f"ord: expected a number, inf or -inf, got {ord!r}")
    if np.isnan(ord):
        raise ValueError("ord: expected a number, inf or -inf, got nan")
    return float(ord) if not float(ord).is_integer() or np.isinf(ord) else int(ord)


def reduce_norm(x, ord=2, axis=None, keepdims=False):
    """The vector norm of order `ord` over the given axes (numpy.linalg.norm's vector norms, and over
    any axes, as torch.linalg.vector_norm): ord 2 (the default; squares summed in float64, float64
    data scaled, so float32 values of 1e20 do not overflow), 1, inf (max |x|), -inf (min |x|), 0 (the
    count of nonzeros) and any other p ((sum |x|^p)^(1/p)). Ints and bool give float64; floats keep
    their type, 16-bit ones summed in float32; NaN propagates; the norm of nothing is 0 (inf and -inf:
    ValueError, as NumPy's)."""
    op, transform, epilogue = norms.descriptors(_check_ord(ord), _is_float64(x))
    return _run(x, axis, op, transform, keepdims, None, None, epilogue, _table(op, transform, epilogue), "vector_norm")
