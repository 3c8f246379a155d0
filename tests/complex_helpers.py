"""Complex numbers through every op NumPy defines for them, shared by the NumPy-backend tests
(tests/test_complex.py) and the GPU suite (tests/test_gpu_complex.py): the ops, the data, and the
NumPy reference on a complex128 copy, with NumPy's result dtypes."""
from __future__ import annotations

import warnings

import numpy as np

import kps
import ops
from helpers import OPS

COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]


#: op name -> (ours, NumPy's), each `(x, axis) -> result`: the basic ones (helpers.OPS) and the rest.
COMPLEX_OPS = {
    **OPS,
    "sum_precise": (lambda x, axis: ops.reduce_sum(x, axis=axis, precise=True), np.sum),
    "mean_precise": (lambda x, axis: ops.reduce_mean(x, axis=axis, precise=True), np.mean),
    "nansum": (ops.reduce_nansum, np.nansum),
    "nanmean": (ops.reduce_nanmean, np.nanmean),
    "var": (ops.reduce_var, np.var),
    "std": (ops.reduce_std, np.std),
    "var_ddof": (lambda x, axis: ops.reduce_var(x, axis=axis, ddof=1.5), lambda x, axis: np.var(x, axis=axis, ddof=1.5)),
    "nanvar": (ops.reduce_nanvar, np.nanvar),
    "nanstd": (lambda x, axis: ops.reduce_nanstd(x, axis=axis, ddof=1), lambda x, axis: np.nanstd(x, axis=axis, ddof=1)),
    "mean_var": (lambda x, axis: ops.reduce_mean_var(x, axis=axis),
                 lambda x, axis: (np.mean(x, axis=axis), np.var(x, axis=axis))),
    "argmax": (ops.reduce_argmax, np.argmax),
    "argmin": (ops.reduce_argmin, np.argmin),
    "ptp": (ops.reduce_ptp, np.ptp),
    "minmax": (ops.reduce_minmax, lambda x, axis: (np.min(x, axis=axis), np.max(x, axis=axis))),
    "nanmax": (ops.reduce_nanmax, np.nanmax),
    "nanmin": (ops.reduce_nanmin, np.nanmin),
    "nanargmax": (ops.reduce_nanargmax, np.nanargmax),
    "nanargmin": (ops.reduce_nanargmin, np.nanargmin),
    "count_nonzero": (ops.count_nonzero, lambda x, axis: np.asarray(np.count_nonzero(x, axis=axis), dtype=np.int64)),
}

#: Every ord numpy.linalg.norm takes for vectors (complex vectors: real results).
ORDS = [2, 1, np.inf, -np.inf, 0, 3, 0.5, -1, -2.5]

#: Ops whose arg-reductions take an int axis (or None) only in NumPy.
ARG_OPS = ("argmax", "argmin", "nanargmax", "nanargmin")

#: Ops NumPy gives NaN for where a slice holds one (or, for the NaN-skipping ones, only NaN).
NAN_SKIPPING = ("nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanargmax", "nanargmin")


def complex_data(shape, dtype, name: str, rng: np.random.Generator) -> np.ndarray:
    """Fresh random complex data suited to `name`: products near magnitude 1; for the orderings,
    real parts from a few integers so ties fall to the imaginary part (NumPy's lexicographic order);
    a few zeros (all, any, count_nonzero); for the NaN-skipping ops a NaN in either part here and
    there, never a whole slice."""
    if name == "prod":
        z = np.exp(1j * rng.uniform(-np.pi, np.pi, shape) + rng.uniform(-0.01, 0.01, shape))
    elif name in ("max", "min", "argmax", "argmin", "ptp", "minmax", "nanmax", "nanmin", "nanargmax", "nanargmin"):
        z = rng.integers(-3, 4, shape) + 1j * rng.standard_normal(shape)
    else:
        z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape) + (2 - 1j)
    if name in ("all", "any", "count_nonzero"):
        z = np.where(rng.random(shape) < 0.3, 0, z)
        z = np.where(rng.random(shape) < 0.1, 1j * z.imag, z)  # real part 0, still true
    if name in NAN_SKIPPING and z.size > 4:
        # by the sum of the indices, which steps by one along every axis: two neighbours are never
        # both NaN, so no slice of two or more is all NaN (a pattern of the flat index is, along an
        # axis whose stride it divides)
        s = np.indices(shape).sum(axis=0) % 7
        z = np.where(s == 1, complex(np.nan, 1.0), np.where(s == 4, complex(2.0, np.nan), z))
    return z.astype(dtype)


def reference(name: str, x: np.ndarray, axis):
    """NumPy's answer on the complex128 copy, cast to NumPy's result dtype for `x`'s (a tuple for
    the ops of two results)."""
    theirs = COMPLEX_OPS[name][1]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expect = theirs(x.astype(np.complex128), axis=axis)
        natural = theirs(x[(slice(0, 1),) * x.ndim], axis=axis)
    if isinstance(expect, tuple):
        return tuple(np.asarray(e).astype(np.asarray(n).dtype) for e, n in zip(expect, natural))
    return np.asarray(expect).astype(np.asarray(natural).dtype)


def _nan(a):
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def same(got, expect, name: str, n: int) -> None:
    """`got` has `expect`'s dtype and shape; indices and booleans exactly; numbers within a few
    units of their precision over `n` reduced elements, relative to the data's magnitude; NaN where
    NumPy has NaN (in either part: which NaN a max keeps among several is not promised)."""
    got = np.asarray(got)
    assert got.dtype == expect.dtype and got.shape == expect.shape, (name, got.dtype, expect.dtype, got.shape)
    if got.dtype.kind in "biu":
        assert np.array_equal(got, expect), (name, got, expect)
        return
    nan_got, nan_expect = _nan(got), _nan(expect)
    assert np.array_equal(nan_got, nan_expect), (name, got, expect)
    eps = np.finfo(kps.dtypes.real_dtype(got.dtype)).eps
    g, e = got[~nan_got].astype(np.complex128), expect[~nan_expect].astype(np.complex128)
    scale = np.maximum(np.abs(e), 1.0) if name != "prod" else np.abs(e) + eps
    tol = 8 * eps * max(1, n) ** (0.5 if name != "prod" else 1)
    if name.startswith(("var", "std", "nanvar", "nanstd")) and got.dtype.kind == "f":
        tol = max(tol, 64 * eps)
    ok = (g == e) | (np.abs(g - e) <= tol * scale)
    assert ok.all(), (name, g[~ok][:4], e[~ok][:4])


def check(name: str, got, x: np.ndarray, axis) -> None:
    """Our result (host arrays) against NumPy's for `x` reduced over `axis`."""
    expect = reference(name, x, axis)
    n = x.size // max(1, np.asarray(expect[0] if isinstance(expect, tuple) else expect).size)
    if isinstance(expect, tuple):
        assert isinstance(got, tuple) and len(got) == len(expect)
        for g, e in zip(got, expect):
            same(g, e, name, n)
    else:
        same(got, expect, name, n)


def axes_for(name: str, ndim: int):
    """The axes an op is tried over: NumPy's arg-reductions take an int or None only."""
    if name in ARG_OPS:
        return [None] + list(range(ndim))
    return [None, 0, ndim - 1, tuple(range(1, ndim))]
