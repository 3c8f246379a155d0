"""The CPU backend: the same functor descriptors, evaluated with NumPy.

Each step mirrors the kernel's: transform in NumPy's own types, cast to the accumulate type,
reduce with the op's ufunc, epilogue, cast to the output type.
"""
from __future__ import annotations

import math

import numpy as np

from kps.functors import Functors


def reduce(x: np.ndarray, axes, keepdims: bool, f: Functors, out=None):
    count = math.prod(x.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        t = np.asarray(f.transform.numpy(x)).astype(f.acc_dtype, copy=False)
        acc = f.op.numpy.reduce(t, axis=axes, dtype=f.acc_dtype, keepdims=keepdims)
        result = np.asarray(f.epilogue.numpy(acc, count)).astype(f.out_dtype, copy=False)
    if out is not None:
        np.copyto(out, result, casting="unsafe")
        return out
    return result if result.ndim else result[()]


def empty_result(f: Functors):
    """The value of an empty reduction (sum -> 0, prod -> 1, all -> True, mean -> NaN)."""
    return reduce(np.empty(0, dtype=f.in_dtype), (0,), False, f)
