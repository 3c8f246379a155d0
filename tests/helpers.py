"""Shared test data and the float64 NumPy reference every result is held to."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

import kps
import ops

def examples(full: int) -> int:
    """A hypothesis test's example count: `full` in the exhaustive tier, at most the fast profile's
    in the fast tier (tests/conftest.py sets the tier before test modules import)."""
    from conftest import FAST_EXAMPLES

    return full if os.environ.get("KPS_TEST_TIER", "fast") != "fast" else min(full, FAST_EXAMPLES)


#: op name -> (our function, NumPy's function)
OPS = {
    "sum": (ops.reduce_sum, np.sum),
    "mean": (ops.reduce_mean, np.mean),
    "max": (ops.reduce_max, np.max),
    "min": (ops.reduce_min, np.min),
    "prod": (ops.reduce_prod, np.prod),
    "all": (ops.reduce_all, np.all),
    "any": (ops.reduce_any, np.any),
}

#: The dtypes CuPy and NumPy both hold (bfloat16 has no CuPy array type).
DTYPES = [dt for dt in kps.dtypes.REAL if dt.name != "bfloat16"]  # complex: tests/test_complex.py


def data(shape, dtype, op: str, rng: np.random.Generator) -> np.ndarray:
    """Fresh random host data suited to `op`: products near 1, booleans mixed, never all zeros."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        p = {"all": 0.97, "any": 0.03}.get(op, 0.5)
        return rng.random(shape) < p
    if dtype.kind in "iu":
        if op == "prod":
            choices = [1, 1, 1, 2, -1] if dtype.kind == "i" else [1, 1, 1, 2, 3]
            return rng.choice(choices, size=shape).astype(dtype)
        lo = max(np.iinfo(dtype).min, -100)
        hi = min(np.iinfo(dtype).max, 100)
        if op in ("all", "any"):
            return rng.choice([0, 1, 3], size=shape, p=[0.3, 0.4, 0.3]).astype(dtype)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if op == "prod":  # |x| log-symmetric around 1: products of thousands stay finite even in float16
        return (np.exp(rng.uniform(-0.05, 0.05, size=shape)) * rng.choice([-1, 1], size=shape)).astype(dtype)
    if op in ("all", "any"):
        return (rng.standard_normal(shape) * (rng.random(shape) < 0.8)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check_or_raises(op: str, run, x: np.ndarray, axis, keepdims: bool = False) -> None:
    """Where NumPy raises ValueError (max of an empty reduction), `run()` must raise it too;
    elsewhere its result (a host array) must `check`."""
    import pytest

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            OPS[op][1](x, axis=axis, keepdims=keepdims)
    except ValueError:
        with pytest.raises(ValueError):
            run()
        return
    check(op, run(), x, axis, keepdims)


def _eps(dtype) -> float:
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype).eps) if dtype.kind == "f" else 0.0


def check(op: str, got, x: np.ndarray, axis, keepdims: bool = False, dtype=None):
    """Assert `got` (host array) is NumPy's answer: same dtype and shape; integers, booleans, max
    and min exact; float sums, means and products within a forward-error bound of the float64
    reference."""
    ours, ref_fn = OPS[op]
    kwargs = {} if dtype is None else {"dtype": dtype}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice"
        expect = np.asarray(ref_fn(x, axis=axis, keepdims=keepdims, **kwargs))
    got = np.asarray(got)
    assert got.dtype == expect.dtype, (got.dtype, expect.dtype)
    assert got.shape == expect.shape, (got.shape, expect.shape)
    exact = expect.dtype.kind in "biu" or op in ("max", "min", "all", "any")
    if exact:
        np.testing.assert_array_equal(got, expect)
        return
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.asarray(ref_fn(x64, axis=axis, keepdims=keepdims))
    n = max(1, x.size // max(1, ref.size))
    acc_dtype = kps.resolve(
        {"sum": kps.ADD, "mean": kps.ADD, "prod": kps.MUL}[op], kps.IDENTITY,
        kps.MEAN if op == "mean" else kps.NONE, x.dtype, dtype,
    ).acc_dtype
    if op == "prod":
        scale = np.abs(ref) * n
    else:
        scale = np.sum(np.abs(x64), axis=axis, keepdims=keepdims) / (n if op == "mean" else 1)
    bound = 4 * math.sqrt(n) * _eps(acc_dtype) * scale + _eps(got.dtype) * np.abs(ref) + 1e-300
    err = np.abs(got.astype(np.float64) - ref)
    # a result past the dtype's largest value is ±inf, as NumPy's: right where the bound reaches there
    # (a float16 product of 30000 values near 1 may)
    top = float(np.finfo(got.dtype).max) if got.dtype.kind == "f" else math.inf
    overflow = np.isinf(got) & (np.sign(got) == np.sign(ref)) & (np.abs(ref) + bound > top)
    bad = ~(err <= bound) & ~(np.isnan(got) & np.isnan(ref)) & ~overflow
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside the bound; worst err {err.max()}, bound {bound.min()}"
