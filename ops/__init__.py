"""ops: the public API. `ops.reduce_sum(x, axis=0)` and friends, NumPy semantics, on CuPy arrays
(GPU kernels) or NumPy arrays (NumPy backend). See README.md.

The modules, each importing only those below it (tests/test_layering.py):
    api.py, family.py    the public functions: `reduce`, and the named ones made from the table
    torch_route.py       when a torch tensor's call goes through a torch custom op
    torch_ops.py         the named ops as torch custom ops (imported only with torch)
    torch_grads.py       their gradients, a formula per table entry (imported only with torch)
    own.py               the named ops of a signature of their own: norm, minmax, ptp, mean_var
    build.py             a named op's function from its table entry
    named.py             the table of named reductions: descriptors, NumPy and torch twins, docs
    looks.py             NumPy's warnings and errors for the NaN-skipping ops' results
    dispatch.py          one call: the prepared call, or the checked path to a backend
    dask_backend.py      dask arrays (dask imported when one arrives; CuPy blocks through gpu_backend)
    gpu_backend.py       CuPy arrays: the kernels and the prepared calls
    numpy_backend.py     NumPy arrays: the same descriptors evaluated with NumPy
    call.py              the call records (Reduction, Args, Call) and the argument checks
    interop.py           torch tensors, DLPack and CUDA-array-interface producers
Each backend takes a checked call the same way: `run(call, x)`.
"""
from .api import (
    reduce,
    reduce_all,
    reduce_any,
    reduce_argmax,
    reduce_argmin,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_mean_var,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_var,
)
from .family import (
    count_nonzero,
    reduce_minmax,
    reduce_nanargmax,
    reduce_nanargmin,
    reduce_nanmax,
    reduce_nanmean,
    reduce_nanmin,
    reduce_nanstd,
    reduce_nansum,
    reduce_nanvar,
    reduce_norm,
    reduce_ptp,
)

import sys as _sys

if "torch" in _sys.modules:  # torch first: register the torch custom ops now (ops/torch_ops.py)
    from . import torch_ops  # noqa: F401

__all__ = ["reduce", "reduce_all", "reduce_any", "reduce_argmax", "reduce_argmin", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_mean_var", "reduce_min",
           "reduce_prod", "reduce_std", "reduce_sum", "reduce_var", "count_nonzero", "reduce_minmax", "reduce_nanargmax",
           "reduce_nanargmin", "reduce_nanmax", "reduce_nanmean", "reduce_nanmin", "reduce_nanstd", "reduce_nansum",
           "reduce_nanvar", "reduce_norm", "reduce_ptp"]
