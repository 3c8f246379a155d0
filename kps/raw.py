"""A reduction's raw state, before its epilogue, handed back from the kernels as the bits of its
fields (one int64 each: a float's bit pattern, an integer widened). A block of a larger reduction
(a dask array's, ops/dask_backend.py) gives these; the host turns them back into the accumulator
NumPy's twin merges, so merging and finishing need no kernel of their own."""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Optional, Tuple

import numpy as np

from . import cache, dtypes
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


def _entries(f: Functors) -> Tuple[Tuple[Optional[str], str], ...]:
    """The raw results of an accumulator, in order: (field name, or None for an op without a state;
    the part: "" for a real field, "re" and "im" for the two of a complex one)."""
    names = [name for name, _ in f.op.state] or [None]
    out = []
    for name in names:
        dtype = f.acc_dtype if name is None else f.acc_dtype.fields[name][0]
        out.extend([(name, "re"), (name, "im")] if dtype.kind == "c" else [(name, "")])
    return tuple(out)


_PARTS = {"": "", "re": "kps::Real", "im": "kps::Imag"}


def _numpy_part(v, part: str):
    return v if not part else (v.real if part == "re" else v.imag)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def epilogue(op: ReduceOp, entries) -> Epilogue:
    """The epilogue that writes `op`'s accumulator as the bits of its fields (`entries`: `_entries`),
    one result an entry."""
    fields = [("a" if name is None else f"a.{name}", part) for name, part in entries]
    texts = tuple(f"kps::Bits({_PARTS[part]}({v}))" if part else f"kps::Bits({v})" for v, part in fields)

    def numpy(a, n):
        got = tuple(_bits(_numpy_part(a if name is None else a[name], part)) for name, part in entries)
        return got if len(got) > 1 else got[0]

    tag = "".join(part[:1] for _, part in entries)  # (which entries are parts of complex fields)
    return Epilogue(f"raw_bits_{op.name}" + (f"_{tag}" if tag else "") if op.state or tag else "raw_bits",
                    texts if len(texts) > 1 else texts[0], numpy)


def functors(f: Functors) -> Functors:
    """`f` with its epilogue replaced by the raw one (int64 results)."""
    return dataclasses.replace(f, epilogue=epilogue(f.op, _entries(f)), out_dtype=np.dtype(np.int64))


def state(bits: np.ndarray, f: Functors) -> np.ndarray:
    """The accumulators (as ops/numpy_backend.py packs them: a scalar op's array, a state op's
    structured array) from the raw results: `bits`, whose last axis holds one entry a field (two
    for a complex field; one for an op without a state)."""
    packed = np.zeros(bits.shape[:-1], dtype=f.acc_dtype)
    for k, (name, part) in enumerate(_entries(f)):
        target = packed if name is None else packed[name]
        dtype = dtypes.real_dtype(target.dtype)
        value = _field(bits[..., k], dtype)
        if part == "im":
            target.imag = value
        elif part == "re":
            target.real = value
        else:
            target[...] = value
    return packed


def bits(acc: np.ndarray, f: Functors) -> np.ndarray:
    """The inverse of `state`: the accumulators' bits, one entry a field (two a complex one) along a
    new last axis."""
    return np.stack([_bits(_numpy_part(acc if name is None else acc[name], part)) for name, part in _entries(f)],
                    axis=-1)


def fields(f: Functors) -> int:
    """Entries of `state`'s and `bits`' last axis."""
    return len(_entries(f))


def entry(f: Functors, name: str) -> int:
    """Where the real field `name` lies along `bits`' last axis: its place among the entries, after
    both parts of every complex field before it (an arg-reduction's index follows a complex value's
    two parts)."""
    return _entries(f).index((name, ""))
