"""A named op's look at its results: where NumPy warns or raises for a slice of nothing but NaN,
the NaN-skipping reductions (ops/named.py) look at the result after the call (one read of the
outputs, a synchronisation on the GPU): a NaN among nanmax's outputs can only come from such a
slice. Dask results are lazy: they are not looked at.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from kernels import capturing, config, look
from kps import nan

from . import dask_backend, gpu_backend, interop


def _in_capture(r) -> bool:
    """Whether a CUDA graph is being captured on the stream the GPU result `r` was made on."""
    if interop.is_torch(r):
        return interop.torch_module().cuda.is_current_stream_capturing()
    return capturing(gpu_backend.cupy_module().cuda.get_current_stream().ptr)


def _isnan(r):
    if interop.is_torch(r):
        return r.isnan()
    if gpu_backend.is_cupy(r):
        return gpu_backend.cupy_module().isnan(r)
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
    return look.any_match(kind, r.data.ptr, r.size, r.dtype, gpu_backend.cupy_module().cuda.get_current_stream().ptr,
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
        if (interop.is_torch(r) and r.is_cuda) or gpu_backend.is_cupy(r):
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


class Look:
    """A named op's look at its results (`Reduction.look`, ops/call.py): for `kind` (look.NAN,
    look.LARGEST_INDEX), then `found()` where one matches (NumPy's warning or error). A prepared
    call on CuPy arrays has its kernel look (gpu_backend.prepare_call); every other call looks
    after it (ops/dispatch.py)."""

    def __init__(self, kind: str, found):
        self.kind, self.found = kind, found

    def __call__(self, result):
        if _looks(result, self.kind):
            self.found()
        return result


def _warn(message: str):
    # stacklevel 5: the user's line, past this, the look or the prepared call, dispatch.run and the op
    return lambda: warnings.warn(message, RuntimeWarning, stacklevel=5)


def warns(message: str) -> Look:
    """The look after a call that warns as NumPy does where a result is NaN."""
    return Look(look.NAN, _warn(message))


def _all_nan_slice():
    raise ValueError("All-NaN slice encountered")


#: An index the identity kept: the slice held nothing but NaN (NumPy's ValueError).
ALL_NAN_RAISES = Look(look.LARGEST_INDEX, _all_nan_slice)
MEAN_OF_EMPTY = warns("Mean of empty slice")
ALL_NAN_WARNS = warns("All-NaN slice encountered")
DOF = warns("Degrees of freedom <= 0 for slice.")


def _reduced_count(x, axis) -> int:
    shape = tuple(x.shape)
    return math.prod(shape[a] for a in config.normalize_axis(axis, len(shape)))


def warn_mean_of_empty(x, axis) -> None:
    """numpy.mean's warning, decided from the shape alone: where the reduced count is 0,
    RuntimeWarning 'Mean of empty slice' (the results are NaN). Called after the call."""
    if 0 not in x.shape or _reduced_count(x, axis):
        return
    warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)  # (the user's line, past the op)


def warn_few_degrees(x, axis, ddof) -> None:
    """numpy.var's warning, decided before any data is read: where ddof >= the reduced count (an
    empty reduction too), RuntimeWarning 'Degrees of freedom <= 0 for slice' (numpy.var, numpy.std,
    and numpy.nanvar / nanstd of ints and bool, which are numpy.var's). A NaN ddof never warns
    (NaN >= n is false). Called after the call, whose checks have passed by then."""
    shape = tuple(getattr(x, "shape", ()))
    if not ddof >= 1 and all(shape):  # every count is >= 1 > ddof
        return
    if ddof >= _reduced_count(x, axis):
        # stacklevel 3: the user's line, past this and the op
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
