"""The named reductions of a signature of their own (kind "own" in ops/named.py) that are torch
custom ops too: the vector norm (`ord`), both extremes (`(min, max)`), their range, and the mean
with the variance (`(mean, var)`, `ddof`). Each maker takes a route, as ops/build.py's do: the
public function (ops/family.py, ops/api.py) routes a torch tensor to its custom op while
torch.compile traces the call or autograd records it (ops/torch_route.py); without one (None) it is
the eager function ops/torch_ops.py runs as the custom op's implementation. count_nonzero, whose
results are counts, stays in ops/family.py.
"""
from __future__ import annotations

import numpy as np

from kps import cache, norms

from . import build, looks, named
from . import gpu_backend as _gpu
from .call import Reduction, check_ddof
from .dispatch import run
from .gpu_backend import table


def function(entry: named.Named, route=None):
    """`entry`'s function (kind "own", with a torch custom op), under its public name."""
    fn = _MAKERS[entry.name](entry, route or build.EAGER)
    fn.__name__ = fn.__qualname__ = entry.name
    return fn


def _ptp(entry, route):
    graph, to_torch = route
    name, what = entry.name, build.reduction(entry)
    prepared = table(what.key)

    def reduce_ptp(x, axis=None, keepdims=False, out=None):
        """max - min over the given axes from one read (numpy.ptp): the input's dtype, integers wrapping
        as NumPy's; NaN propagates; bool is a TypeError, as in NumPy."""
        if getattr(x, "dtype", None) == np.bool_ or str(getattr(x, "dtype", "")) == "torch.bool":
            raise TypeError("x: the range of booleans is undefined (numpy.ptp refuses bool too)")
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, out)
        return run(what, prepared if out is None else None, x, axis, keepdims, None, out)

    return reduce_ptp


def _minmax(entry, route):
    graph, to_torch = route
    name, what = entry.name, build.reduction(entry)
    prepared = table(what.key)

    def reduce_minmax(x, axis=None, keepdims=False):
        """`(min, max)` over the given axes from one read (torch.aminmax's pair, NumPy's semantics for
        each: NaN propagates, an empty reduction raises ValueError). No `out=`."""
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, None)
        return run(what, prepared, x, axis, keepdims, None, None)

    return reduce_minmax


def _mean_var(entry, route):
    graph, to_torch = route
    name, made = entry.name, cache.Lru()  # ddof -> (its Reduction, its prepared calls)

    def reduce_mean_var(x, axis=None, keepdims=False, dtype=None, ddof=0):
        """The mean and the variance over the given axes from one read of `x` (batch-norm statistics):
        `(mean, var)`, each what `numpy.mean` and `numpy.var(ddof=ddof)` give (torch.var_mean gives them
        the other way round). One pass of `kps.WELFORD`, as `reduce_var`; on the GPU the two results of an
        output are written side by side and returned as views. No `out=`."""
        ddof = check_ddof(ddof)
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, None, dtype=dtype, ddof=ddof)
        try:
            what, prepared = made[ddof]
        except KeyError:
            what, prepared = made.put(ddof, build.with_table(build.reduction(entry, epilogue=entry.epilogue(ddof, None))))
        mean, var = run(what, prepared, x, axis, keepdims, dtype, None)
        looks.warn_mean_of_empty(x, axis)  # numpy.mean's, where n = 0
        looks.warn_few_degrees(x, axis, ddof)  # numpy.var's, where ddof >= n
        # complex data: one state gives both in numpy.mean's complex type; numpy.var's is the real part's
        return mean, (var.real if _is_complex(var) else var)

    return reduce_mean_var


def _norm(entry, route):
    graph, to_torch = route
    name, made = entry.name, cache.Lru()  # (ord, the data's kind: `_data_kind`) -> (Reduction, prepared calls)

    def reduce_norm(x, ord=2, axis=None, keepdims=False):
        """The vector norm of order `ord` over the given axes (numpy.linalg.norm's vector norms, and over
        any axes, as torch.linalg.vector_norm): ord 2 (the default; squares summed in float64, float64
        data scaled, so float32 values of 1e20 do not overflow), 1, inf (max |x|), -inf (min |x|), 0 (the
        count of nonzeros) and any other p ((sum |x|^p)^(1/p)); None is 2, as NumPy's. Ints and bool give
        float64 (their magnitudes taken in float64, as NumPy's: an int8's -128 counts 128); floats keep
        their type, 16-bit ones summed in float32; NaN propagates; the norm of nothing is 0 (-inf:
        ValueError, as NumPy's)."""
        ord = _check_ord(ord)
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, None, ord=ord)
        key = (ord, _data_kind(x))
        try:
            what, prepared = made[key]
        except KeyError:
            what, prepared = made.put(key, build.with_table(Reduction(*_norm_descriptors(*key), twin=entry.torch)))
        return run(what, prepared, x, axis, keepdims, None, None)

    return reduce_norm


def _check_ord(ord):
    if type(ord) is int:  # the common case, first: the checks below cost microseconds a call
        return ord
    if ord is None:  # numpy.linalg.norm's default for a vector: the 2-norm
        return 2
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


def _is_complex(r) -> bool:
    """Whether a result (NumPy, CuPy, dask array or torch tensor) holds complex numbers."""
    dt = r.dtype
    return dt.is_complex if hasattr(dt, "is_complex") else np.dtype(dt).kind == "c"


_FLOAT64 = np.dtype(np.float64)

_MAKERS = {named.PTP.name: _ptp, named.MINMAX.name: _minmax, named.MEAN_VAR.name: _mean_var,
           named.NORM.name: _norm}
