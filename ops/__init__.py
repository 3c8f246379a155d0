"""ops: the public API. `ops.reduce_sum(x, axis=0)` and friends, NumPy semantics, on CuPy arrays
(GPU kernels) or NumPy arrays (NumPy backend). See README.md."""
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
