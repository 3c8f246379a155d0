"""Float64 references and checks for the state reductions (var, std, logsumexp), shared by the
NumPy-backend tests and the GPU suite."""
from __future__ import annotations

import warnings

import numpy as np

import ops

STATS = {
    "var": ops.reduce_var,
    "std": ops.reduce_std,
    "logsumexp": ops.reduce_logsumexp,
}


def reference(name: str, x: np.ndarray, axis, keepdims=False, ddof=0) -> np.ndarray:
    """The float64 answer: numpy.var / numpy.std, and logsumexp as max + log(sum(exp(x - max)))
    with SciPy's rules for -inf, +inf and NaN."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "var":
            return np.asarray(np.var(x64, axis=axis, keepdims=keepdims, ddof=ddof))
        if name == "std":
            return np.asarray(np.std(x64, axis=axis, keepdims=keepdims, ddof=ddof))
        m = np.max(x64, axis=axis, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(x64 - shift), axis=axis, keepdims=True)) + shift
        out = np.where(np.isposinf(m), np.inf, out)
        out = np.where(np.isnan(m) | np.isnan(np.sum(x64, axis=axis, keepdims=True)), np.nan, out)
        return np.asarray(out if keepdims else np.squeeze(out, axis=axis if axis is not None else None))


def result_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result type: ints and bool -> float64, floats keep theirs."""
    return np.dtype(np.float64) if np.dtype(dtype).kind in "biu" else np.dtype(dtype)


def check_mean_var(got, x: np.ndarray, axis, keepdims=False, ddof=0, rtol=None):
    """`got` = (mean, var) from one call: the mean as numpy.mean's (float64 reference, the mean's
    dtype rule) and the variance as `check` holds reduce_var's."""
    mean, var = (np.asarray(g) for g in got)
    check("var", var, x, axis, keepdims, ddof, rtol)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expect = np.asarray(np.mean(x.astype(np.float64), axis=axis, keepdims=keepdims))
    assert mean.dtype == result_dtype("var", x.dtype) and mean.shape == expect.shape
    tol = rtol or {2: 2e-3, 4: 2e-6}.get(mean.dtype.itemsize, 1e-12)
    scale = np.abs(expect) + np.sqrt(np.nan_to_num(np.asarray(ops.reduce_var(x.astype(np.float64), axis=axis,
                                                                                keepdims=keepdims))))
    g = mean.astype(np.float64)
    ok = (g == expect) | (np.isnan(g) & np.isnan(expect)) | (np.abs(g - expect) <= tol * scale + 1e-300)
    assert ok.all(), f"{(~ok).sum()} of {ok.size} means off: got {g[~ok][:4]}, expected {expect[~ok][:4]}"


def check(name: str, got, x: np.ndarray, axis, keepdims=False, ddof=0, rtol=None):
    """`got` (a host array) has NumPy's dtype and shape and matches the float64 reference: NaN where
    it is NaN, infinities equal, and otherwise within `rtol` of the result's magnitude (for
    logsumexp, of the largest input, which the result carries and cancels: max + log(sum)). By
    default `rtol` is a few units of the result's precision, and for float64 results a sequential
    float64 state's forward error over the reduced count."""
    expect = reference(name, x, axis, keepdims, ddof)
    got = np.asarray(got)
    assert got.dtype == result_dtype(name, x.dtype), (got.dtype, x.dtype)
    assert got.shape == expect.shape, (got.shape, expect.shape)
    if rtol is None:
        n = x.size // max(1, expect.size)
        rtol = {2: 2e-3, 4: 2e-6}.get(got.dtype.itemsize, 1e-12 + 4 * n * float(np.finfo(np.float64).eps))
    scale = np.abs(expect)
    if name == "logsumexp" and x.size:
        x64 = np.abs(x.astype(np.float64))
        biggest = np.max(np.where(np.isfinite(x64), x64, 0), axis=axis, keepdims=True)
        scale = np.maximum(scale, biggest if keepdims else np.squeeze(biggest, axis=axis))
    g = got.astype(np.float64)
    same = (g == expect) | (np.isnan(g) & np.isnan(expect))
    close = np.abs(g - expect) <= rtol * scale + rtol * 1e-3
    bad = ~(same | close)
    assert not bad.any(), f"{bad.sum()} of {bad.size} off: got {g[bad][:4]}, expected {expect[bad][:4]}"


def outliers() -> np.ndarray:
    """float64 data of mean 1e8 and spread 1 with every 37th element 1e4 spreads out: wherever a
    state's shift (the first element it sees) is one of them, its squares carry 1e8 and M2 is
    their small difference. The loss stays bounded (M2 >= (shift - mean)^2)."""
    x = np.random.default_rng(5).standard_normal((64, 4096)) + 1e8
    x[:, ::37] += 1e4
    return x


#: What `sprinkled` puts among the data, for float64 / complex128: 1e200's square overflows, while
#: n times the data's range stays finite (beyond that a state's s1 overflows too: kps/statistics.py).
SPECIALS = (np.inf, -np.inf, np.nan, 1e200, -1e200)


def sprinkled(shape, dtype, axis, rng, specials=SPECIALS) -> np.ndarray:
    """Standard normal data with about 1.5 values of `specials` an output over `axis` (a random
    kind each, at random places, in a random part of a complex number): outputs with none, one or
    several, of one kind or mixed, each of them first in a state's chain somewhere and later in
    another. NumPy: a variance is NaN where an infinity or a NaN is among the values, inf where the
    squares of finite ones overflow; a mean is inf where only +inf is."""
    dtype = np.dtype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    reduced = range(len(shape)) if axis is None else np.atleast_1d(axis) % max(1, len(shape))
    outputs = int(np.prod([n for i, n in enumerate(shape) if i not in reduced]))
    count = max(1, int(1.5 * outputs))
    places = rng.integers(0, x.size, count)
    values = np.asarray(specials)[rng.integers(0, len(specials), count)]
    flat = x.reshape(-1)  # a view: x is contiguous
    if dtype.kind != "c":
        flat[places] = values
        return x
    imaginary = rng.random(count) < 0.5
    flat.real[places[~imaginary]] = values[~imaginary]
    flat.imag[places[imaginary]] = values[imaginary]
    return x


#: Ours and NumPy's, for `check_sprinkled`.
SPRINKLED_OPS = {
    "var": (ops.reduce_var, np.var),
    "std": (ops.reduce_std, np.std),
    "nanvar": (ops.reduce_nanvar, np.nanvar),
    "nanstd": (ops.reduce_nanstd, np.nanstd),
    "mean_var's mean": (lambda x, **kw: ops.reduce_mean_var(x, **kw)[0], np.mean),
    "mean_var's var": (lambda x, **kw: ops.reduce_mean_var(x, **kw)[1], np.var),
}


def check_sprinkled(x: np.ndarray, axis, device=np.asarray, host=np.asarray):
    """Each of SPRINKLED_OPS over `axis` of `sprinkled` data, ours on `device(x)`, as NumPy's on x:
    NaN and infinities where NumPy's are, the finite results within a float64 state's forward
    error: of the data's spread (1) for a variance, of the mean magnitude for a mean (the sum's
    bound: 1e200 and -1e200 that cancel leave an error of about eps * 1e200)."""
    xd = device(x)
    n = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
    rtol = 1e-12 + 4 * n * float(np.finfo(np.float64).eps)
    magnitude = np.mean(np.where(np.isfinite(x), np.abs(x), 0), axis=axis)
    for name, (ours, numpys) in SPRINKLED_OPS.items():
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got, expect = np.asarray(host(ours(xd, axis=axis))), np.asarray(numpys(x, axis=axis))
            scale = np.abs(expect) + (magnitude if "mean" in name else 1)
            close = np.isfinite(expect) & (np.abs(got - expect) <= rtol * scale)
        assert got.shape == expect.shape and got.dtype == expect.dtype, (name, got.dtype, expect.dtype)
        same = (got == expect) | (np.isnan(got) & np.isnan(expect))
        bad = ~(same | close)
        assert not bad.any(), f"{name}: {bad.sum()} of {bad.size} off: got {got[bad][:4]}, expected {expect[bad][:4]}"
