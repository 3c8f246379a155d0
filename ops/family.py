"""The rest of the reduction family, each a few lines over the kps descriptors: the NaN-skipping
reductions (kps/nan.py), count_nonzero, the range and both extremes from one read (kps/extrema.py),
vector norms (kps/norms.py); those of a signature of their own: ops/own.py.

NumPy's names, signatures and semantics. Where NumPy warns or raises for a slice of nothing but
NaN, these look at the result after the call (ops/looks.py). Their entries, descriptors and docs:
ops/named.py.
"""
from __future__ import annotations

import numpy as np

from . import build, named, own
from .dispatch import run
from .gpu_backend import table
from .torch_route import ROUTE

reduce_nansum = build.function(named.NANSUM, ROUTE)
reduce_nanmean = build.function(named.NANMEAN, ROUTE)
reduce_nanmax = build.function(named.NANMAX, ROUTE)
reduce_nanmin = build.function(named.NANMIN, ROUTE)
reduce_nanvar = build.function(named.NANVAR, ROUTE)
reduce_nanstd = build.function(named.NANSTD, ROUTE)
reduce_nanargmax = build.function(named.NANARGMAX, ROUTE)
reduce_nanargmin = build.function(named.NANARGMIN, ROUTE)

_COUNT = build.reduction(named.COUNT_NONZERO)
_COUNT_TABLE = table(_COUNT.key)


def count_nonzero(x, axis=None, keepdims=False):
    """How many elements are not zero over the given axes (numpy.count_nonzero; NaN counts), as int64."""
    return run(_COUNT, _COUNT_TABLE, x, axis, keepdims, np.int64, None)


reduce_ptp = own.function(named.PTP, ROUTE)
reduce_minmax = own.function(named.MINMAX, ROUTE)
reduce_norm = own.function(named.NORM, ROUTE)
