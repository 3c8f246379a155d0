"""The rest of the reduction family, each a few lines over the kps descriptors: the NaN-skipping
reductions (kps/nan.py), count_nonzero, the range and both extremes from one read (kps/extrema.py),
vector norms (kps/norms.py).

NumPy's names, signatures and semantics. Where NumPy warns or raises for a slice of nothing but
NaN, these look at the result after the call (ops/looks.py). Their entries, descriptors and docs:
ops/named.py.
"""
from __future__ import annotations

import numpy as np

from kps import cache, norms

from . import build, named
from .call import Reduction
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


_PTP = build.reduction(named.PTP)


def reduce_ptp(x, axis=None, keepdims=False, out=None):
    """max - min over the given axes from one read (numpy.ptp): the input's dtype, integers wrapping
    as NumPy's; NaN propagates; bool is a TypeError, as in NumPy."""
    if getattr(x, "dtype", None) == np.bool_ or str(getattr(x, "dtype", "")) == "torch.bool":
        raise TypeError("x: the range of booleans is undefined (numpy.ptp refuses bool too)")
    return run(_PTP, table(_PTP.key) if out is None else None, x, axis, keepdims, None, out)


_MINMAX = build.reduction(named.MINMAX)
_MINMAX_TABLE = table(_MINMAX.key)


def reduce_minmax(x, axis=None, keepdims=False):
    """`(min, max)` over the given axes from one read (torch.aminmax's pair, NumPy's semantics for
    each: NaN propagates, an empty reduction raises ValueError). No `out=`."""
    return run(_MINMAX, _MINMAX_TABLE, x, axis, keepdims, None, None)


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


def _data_kind(x) -> str:
    """What the norm's descriptors depend on: "float64", "complex64", "complex128" or "other"
    (NumPy, CuPy and dask dtypes, torch's; a list as NumPy reads it)."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    if isinstance(dt, np.dtype):  # (str() of a NumPy dtype costs microseconds a call)
        name = dt.name if dt == _FLOAT64 or dt.kind == "c" else "other"
    else:
        name = str(dt).replace("torch.", "")
    return name if name in _KINDS else "other"


_KINDS = ("float64", "complex64", "complex128")


def _norm_descriptors(ord, kind: str):
    """The norm's descriptors for data of `kind` (`_data_kind`): complex data's are their magnitudes'."""
    if kind.startswith("complex"):
        return norms.of_magnitudes(ord, kind == "complex128")
    return norms.descriptors(ord, kind == "float64")


_FLOAT64 = np.dtype(np.float64)

#: (ord, the data's kind: `_data_kind`) -> the norm's Reduction (its torch twin for a torch tensor's dtype).
_NORMS = cache.Lru()


def reduce_norm(x, ord=2, axis=None, keepdims=False):
    """The vector norm of order `ord` over the given axes (numpy.linalg.norm's vector norms, and over
    any axes, as torch.linalg.vector_norm): ord 2 (the default; squares summed in float64, float64
    data scaled, so float32 values of 1e20 do not overflow), 1, inf (max |x|), -inf (min |x|), 0 (the
    count of nonzeros) and any other p ((sum |x|^p)^(1/p)). Ints and bool give float64; floats keep
    their type, 16-bit ones summed in float32; NaN propagates; the norm of nothing is 0 (inf and -inf:
    ValueError, as NumPy's)."""
    key = (_check_ord(ord), _data_kind(x))
    try:
        what = _NORMS[key]
    except KeyError:
        what = _NORMS.put(key, Reduction(*_norm_descriptors(*key), twin=named.NORM.torch))
    return run(what, table(what.key), x, axis, keepdims, None, None)
