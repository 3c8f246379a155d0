"""A reduction's raw state, before its epilogue, handed back from the kernels as the bits of its
fields (one int64 each: a float's bit pattern, an integer widened). A block of a larger reduction
(a dask array's, ops/dask_backend.py) gives these; the host turns them back into the accumulator
NumPy's twin merges, so merging and finishing need no kernel of their own."""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from . import cache
from .functors import Epilogue, Functors, ReduceOp


def _bits(v) -> np.ndarray:
    """The NumPy twin of kps::Bits."""
    v = np.asarray(v)
    if v.dtype == np.float32:
        return v.view(np.uint32).astype(np.int64)
    if v.dtype.kind in "fu" and v.dtype.itemsize == 8:
        return v.view(np.int64)
    return v.astype(np.int64)


def _field(bits: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A field's values from its bits (the inverse of `_bits`)."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return bits.astype(np.uint32).view(np.float32)
    if dtype.kind in "fu" and dtype.itemsize == 8:
        return bits.view(dtype)
    return bits.astype(dtype)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def epilogue(op: ReduceOp) -> Epilogue:
    """The epilogue that writes `op`'s accumulator as the bits of its fields, one result a field."""
    names = [name for name, _ in op.state]
    if not names:
        return Epilogue("raw_bits", "kps::Bits(a)", lambda a, n: _bits(a))
    texts = tuple(f"kps::Bits(a.{name})" for name in names)
    return Epilogue(f"raw_bits_{op.name}", texts if len(texts) > 1 else texts[0],
                    lambda a, n: tuple(_bits(a[k]) for k in names) if len(names) > 1 else _bits(a[names[0]]))


def functors(f: Functors) -> Functors:
    """`f` with its epilogue replaced by the raw one (int64 results)."""
    return dataclasses.replace(f, epilogue=epilogue(f.op), out_dtype=np.dtype(np.int64))


def state(bits: np.ndarray, f: Functors) -> np.ndarray:
    """The accumulators (as ops/numpy_backend.py packs them: a scalar op's array, a state op's
    structured array) from the raw results: `bits`, whose last axis holds one entry a field (one
    for an op without a state)."""
    if not f.op.state:
        return _field(bits[..., 0], f.acc_dtype)
    names = f.acc_dtype.names
    packed = np.empty(bits.shape[:-1], dtype=f.acc_dtype)
    for k, name in enumerate(names):
        packed[name] = _field(bits[..., k], f.acc_dtype.fields[name][0])
    return packed


def bits(acc: np.ndarray, f: Functors) -> np.ndarray:
    """The inverse of `state`: the accumulators' bits, one entry a field along a new last axis."""
    if not f.op.state:
        return _bits(acc)[..., None]
    return np.stack([_bits(acc[name]) for name in f.acc_dtype.names], axis=-1)


def fields(f: Functors) -> int:
    """Entries of `state`'s and `bits`' last axis."""
    return len(f.acc_dtype.names) if f.op.state else 1
