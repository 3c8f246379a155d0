"""The public reductions, with NumPy's semantics.

CuPy arrays run the GPU kernels; NumPy arrays run the NumPy backend built from the same functor
descriptors; dask arrays give lazy dask arrays, reduced block by block (dask_backend.py). Argument
errors are raised before anything runs or is written, and name the argument.

`reduce` takes any functor descriptors; the named reductions are made from their entries in the
table (ops/named.py) by ops/build.py; every call goes through ops/dispatch.py.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

import kps
from kps import cache

from . import build, dispatch, gpu_backend, looks, named
from .call import Reduction, check_ddof
from .gpu_backend import prepared as _prepared, signature as _signature
from .torch_route import ROUTE


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def _reduction(op, transform, epilogue) -> Reduction:
    return Reduction(op, transform, epilogue)


def reduce(x, axis=None, op=kps.ADD, transform=kps.IDENTITY, keepdims=False, dtype=None, out=None, *,
           epilogue=kps.NONE):
    """Reduce `x` over `axis` with `op`, after mapping every element with `transform` and before
    finishing every output with `epilogue`. NumPy semantics for axis, keepdims, dtype and out.

    For a transform of several arrays (`x0`, `x1`, ... in its CUDA text) `x` is a tuple of them,
    NumPy arrays or CuPy arrays, broadcast together as NumPy does; one pass reads them all."""
    sig = None
    if out is None:  # a prepared call for this signature: a lookup and a launch (ops/gpu_backend.py)
        sig = (gpu_backend.inputs_signature if isinstance(x, tuple) else _signature)(x, axis, keepdims, dtype)
        try:
            table = _prepared.get((op, transform, epilogue), {})
            call = table.get(sig)
        except TypeError:  # an unhashable descriptor or dtype: the checked path says which
            call = None
        if call is not None:
            result = call(x)
            table.touch(sig)
            return result
    try:
        what = _reduction(op, transform, epilogue)
    except TypeError:  # an unhashable (so invalid) descriptor: the checked path says which
        what = Reduction(op, transform, epilogue)
    args = (axis, keepdims, dtype, out)
    return dispatch.run_inputs(what, x, args) if isinstance(x, tuple) else dispatch.checked(what, x, args, sig)


reduce_sum = build.function(named.SUM, ROUTE)
reduce_mean = build.function(named.MEAN, ROUTE)
reduce_max = build.function(named.MAX, ROUTE)
reduce_min = build.function(named.MIN, ROUTE)
reduce_prod = build.function(named.PROD, ROUTE)
reduce_all = build.function(named.ALL, ROUTE)
reduce_any = build.function(named.ANY, ROUTE)
reduce_argmax = build.function(named.ARGMAX, ROUTE)
reduce_argmin = build.function(named.ARGMIN, ROUTE)
reduce_var = build.function(named.VAR, ROUTE)
reduce_std = build.function(named.STD, ROUTE)
reduce_logsumexp = build.function(named.LOGSUMEXP, ROUTE)


def reduce_mean_var(x, axis=None, keepdims=False, dtype=None, ddof=0):
    """The mean and the variance over the given axes from one read of `x` (batch-norm statistics):
    `(mean, var)`, each what `numpy.mean` and `numpy.var(ddof=ddof)` give (torch.var_mean gives them
    the other way round). One pass of `kps.WELFORD`, as `reduce_var`; on the GPU the two results of an output
    are written side by side and returned as views. No `out=`."""
    ddof = check_ddof(ddof)
    what = _mean_var(ddof)
    mean, var = dispatch.run(what, gpu_backend.table(what.key), x, axis, keepdims, dtype, None)
    looks.warn_few_degrees(x, axis, ddof)  # numpy.var's, where ddof >= n
    # complex data: one state gives both in numpy.mean's complex type; numpy.var's is the real part's
    return mean, (var.real if _is_complex(var) else var)


def _is_complex(r) -> bool:
    """Whether a result (NumPy, CuPy, dask array or torch tensor) holds complex numbers."""
    dt = r.dtype
    return dt.is_complex if hasattr(dt, "is_complex") else np.dtype(dt).kind == "c"


@lru_cache(maxsize=cache.DEFAULT_LIMIT, typed=True)
def _mean_var(ddof) -> Reduction:
    return build.reduction(named.MEAN_VAR, epilogue=named.MEAN_VAR.epilogue(ddof, None))
