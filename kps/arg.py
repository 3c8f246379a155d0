"""Arg-reductions: the index of the largest or smallest element, built as ordinary descriptors.

The state is the best value so far and its index in the reduced range (`indexed=True`: the kernels
give each element's index to `lift`). NumPy's rules: a NaN beats every number (the first NaN wins),
and of equal values the first occurrence wins. Both follow from `combine` alone, whatever order
the kernels fold in, since the smaller index breaks every tie.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from .functors import Epilogue, ReduceOp, _highest, _lowest

_NO_INDEX = np.iinfo(np.int64).max  # the identity's index: any element ties it and wins


def _accumulate_index(dtype: np.dtype, requested):
    """Values compare in the input's own type (16-bit floats in float32); the result is int64."""
    return (np.dtype(np.float32) if dtypes.is_half(dtype) else dtype), np.dtype(np.int64)


def _combine(greater: bool):
    """The NumPy twin of `combine`, on dicts of field arrays."""
    def combine(a, b):
        a_nan, b_nan = a["v"] != a["v"], b["v"] != b["v"]
        better = b["v"] > a["v"] if greater else b["v"] < a["v"]
        tie = (a["v"] == b["v"]) | (a_nan & b_nan)
        take_b = np.where(a_nan != b_nan, b_nan, better | (tie & (b["i"] < a["i"])))
        return {"v": np.where(take_b, b["v"], a["v"]), "i": np.where(take_b, b["i"], a["i"])}
    return combine


def _arg_op(name: str, compare: str, greater: bool, worst) -> ReduceOp:
    return ReduceOp(
        name,
        combine=("const bool a_nan = a.v != a.v, b_nan = b.v != b.v;"
                 " if (a_nan != b_nan) return a_nan ? a : b;"
                 f" if (!a_nan && a.v != b.v) return a.v {compare} b.v ? a : b;"
                 " return a.i <= b.i ? a : b;"),
        identity=lambda dt: {"v": worst(dt), "i": _NO_INDEX},
        numpy=_combine(greater),
        accumulate=_accumulate_index,
        empty_ok=False,
        state=(("v", "acc"), ("i", "int64")),
        lift="acc_t r; r.v = x; r.i = i; return r;",
        numpy_lift=lambda x, i: {"v": x, "i": i},
        indexed=True,
        heavy=True,
    )


ARGMAX = _arg_op("argmax", ">", True, _lowest)
ARGMIN = _arg_op("argmin", "<", False, _highest)

#: The index field of an arg-reduction's state: the result.
INDEX = Epilogue("index", "a.i", lambda a, n: a["i"])
