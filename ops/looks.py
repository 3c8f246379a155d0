"""A named op's look at its results: where NumPy warns or raises for a slice of nothing but NaN,
the NaN-skipping reductions (ops/named.py) look at the result after the call (one read of the
outputs, a synchronisation on the GPU): a NaN among nanmax's outputs can only come from such a
slice. Dask results are lazy: they are not looked at.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from kernels import capturing, config, look
from kps import dtypes, nan

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


@dataclass(frozen=True)
class Look:
    """A named op's look at its results (`Reduction.look`, ops/call.py): for `kind` (look.NAN,
    look.LARGEST_INDEX), then `found(x, axis)` where one matches (NumPy's warning or error; `x` and
    `axis` the call's, for a look that must tell its causes apart: `ShortSlices`). A prepared call
    on CuPy arrays has its kernel look (gpu_backend.prepare_call); every other call looks after it
    (ops/dispatch.py). A value: Reductions with equal looks share their prepared calls."""

    kind: str
    found: Callable

    def __call__(self, result, x, axis):
        if _looks(result, self.kind):
            self.found(x, axis)
        return result

    def for_ddof(self, ddof) -> "Look":
        """This look for a variance of `ddof` (a `ShortSlices` look counts against it)."""
        if not isinstance(self.found, ShortSlices):
            return self
        return Look(self.kind, ShortSlices(self.found.message, ddof))


def _say(message: str) -> None:
    # stacklevel 6: the user's line, past this, the look's `found`, the look or the prepared call,
    # dispatch.run and the op
    warnings.warn(message, RuntimeWarning, stacklevel=6)


def _warn(message: str):
    return lambda x, axis: _say(message)


@dataclass(frozen=True)
class ShortSlices:
    """NumPy's warning for a NaN-skipping mean or variance, given only where a slice holds `ddof`
    numbers or fewer that are not NaN (n - ddof <= 0: numpy.nanmean's 'Mean of empty slice',
    numpy.nanvar's 'Degrees of freedom'). A NaN result has another cause too, infinities (inf - inf,
    a variance of inf), for which NumPy's warning is its floating-point error's ('invalid value
    encountered'), which no reduction here gives, plain sums included: the count tells the two
    apart. One more read of x, only where a result is NaN."""

    message: str
    ddof: float = 0

    def __call__(self, x, axis):
        # (ints and bool hold no NaN: NumPy's nan-ops are its plain ones there, whose warning the
        # op decides from the shape, ops/build.py)
        if holds_nan(x) and _fewest_numbers(x, axis) <= self.ddof:
            _say(self.message)


def _fewest_numbers(x, axis) -> int:
    """The fewest elements that are not NaN in any slice of `x` over `axis`, on x's own backend (a
    NumPy array, a CuPy array or a torch tensor)."""
    if not (interop.is_torch(x) or gpu_backend.is_cupy(x)):
        x = np.asarray(x)
    axes = config.normalize_axis(axis, x.ndim)
    numbers = x == x  # (False at NaN, and at a complex number with a NaN part)
    if not axes:  # (each element its own slice; x holds some: a result was NaN)
        return int(bool(numbers.all()))
    if interop.is_torch(x):
        return int(numbers.sum(dim=axes).min())
    return int(numbers.sum(axis=axes).min())


def warns(message: str) -> Look:
    """The look after a call that warns as NumPy does where a result is NaN."""
    return Look(look.NAN, _warn(message))


def _all_nan_slice(x, axis):
    raise ValueError("All-NaN slice encountered")


#: An index the identity kept: the slice held nothing but NaN (NumPy's ValueError).
ALL_NAN_RAISES = Look(look.LARGEST_INDEX, _all_nan_slice)
ALL_NAN_WARNS = warns("All-NaN slice encountered")
MEAN_OF_EMPTY = Look(look.NAN, ShortSlices("Mean of empty slice"))
DOF = Look(look.NAN, ShortSlices("Degrees of freedom <= 0 for slice."))


def _reduced_count(x, axis) -> int:
    shape = tuple(x.shape)
    return math.prod(shape[a] for a in config.normalize_axis(axis, len(shape)))


def holds_nan(x) -> bool:
    """Whether x's dtype has a NaN (floats and complex; not ints or bool), for a NumPy array, a CuPy
    array or a torch tensor."""
    if interop.is_torch(x):
        return x.dtype.is_floating_point or x.dtype.is_complex
    return dtypes.is_inexact(x.dtype)


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
