"""Dask arrays: the same reductions, lazily, through dask.array's own reduction machinery.

Three steps, as `dask.array.reduction` runs them:
1. each block is reduced to its accumulators (the functor's raw state, before the epilogue), the
   reduced axes kept at length 1 (`map_blocks`: an arg-reduction's indices are placed in the whole
   reduced range from the block's location);
2. dask's tree merges the blocks' accumulators with the functor's own `combine` (its NumPy twin);
3. the epilogue runs once per output on the total, with the whole reduction's count.
So a user's functor, with or without a state, needs no extra code. Blocks of NumPy arrays run the
NumPy backend. Importing `ops` does not import dask: this module is imported when a dask array arrives.
"""
from __future__ import annotations

import math

import numpy as np

from kps.functors import Functors
from kps.nan import NO_INDEX

from . import numpy_backend


def is_dask(x) -> bool:
    """A dask.array.Array, told without importing dask."""
    kind = type(x)
    return kind.__name__ == "Array" and kind.__module__.partition(".")[0] == "dask"


def check_blocks(x) -> None:
    """Only NumPy blocks for now: the GPU kernels do not yet return raw states."""
    meta = getattr(x, "_meta", None)
    if type(meta) is not np.ndarray:
        raise TypeError(f"x: a dask array of {type(meta).__module__}.{type(meta).__name__} blocks; "
                        "this version reduces dask arrays of NumPy blocks")


def reduce(x, axes, keepdims: bool, f: Functors):
    """A lazy dask array (a tuple of them for an epilogue of several results) of the reduction of
    `x` over `axes`, with NumPy's shape and dtype."""
    import dask.array as da

    count = math.prod(x.shape[a] for a in axes)
    state_dtype = f.acc_dtype
    chunks = tuple((1,) * len(c) if a in axes else c for a, c in enumerate(x.chunks))
    states = x.map_blocks(_block_states, axes=axes, f=f, red_shape=tuple(x.shape[a] for a in axes),
                          chunks=chunks, dtype=state_dtype, meta=np.empty((0,) * x.ndim, dtype=state_dtype))
    # the reduced axes stay (length 1) until the epilogue has run: dask's reduction has no meta of
    # its own for a structured dtype
    total = da.reduction(states, _keep, _merge(f), axis=axes, keepdims=True, dtype=state_dtype,
                         combine=_merge(f), concatenate=True, meta=np.empty((0,) * x.ndim, dtype=state_dtype))
    out_dtype = np.dtype(f.out_dtype)
    drop = () if keepdims else axes
    meta = np.empty((0,) * (x.ndim - len(drop)), dtype=out_dtype)
    results = tuple(total.map_blocks(_finish, count=count, f=f, k=k, drop=drop, drop_axis=drop, dtype=out_dtype,
                                     meta=meta)
                    for k in (range(f.epilogue.outputs) if f.epilogue.outputs > 1 else (None,)))
    return results if f.epilogue.outputs > 1 else results[0]


def _block_states(block, axes, f: Functors, red_shape, block_info=None):
    index = None
    if f.op.indexed and axes:  # the block's elements' places in the C-order flattening of the whole reduced range
        where = block_info[0]["array-location"]
        local = [block.shape[a] for a in axes]
        parts = np.unravel_index(np.arange(math.prod(local), dtype=np.int64), local)
        index = np.ravel_multi_index(tuple(p + where[a][0] for p, a in zip(parts, axes)), red_shape).astype(np.int64)
    return numpy_backend.block_states(block, axes, f, index)


def _keep(states, axis, keepdims):
    """Blocks arrive as accumulators already (step 1): nothing to do per block."""
    return states


def _merge(f: Functors):
    def merge(states, axis, keepdims=True, computing_meta=False):
        if computing_meta:  # dask asks for the result's type on an empty array
            return np.empty((0,) * states.ndim, dtype=states.dtype)
        return numpy_backend.merge_states(states, axis, f)
    return merge


def _finish(total, count: int, f: Functors, k, drop):
    """The epilogue on the merged accumulators, the reduced axes dropped unless kept (a 0-d result
    is a NumPy scalar, as NumPy's reductions give it)."""
    result = numpy_backend.finish(numpy_backend.unpack(np.squeeze(total, axis=drop), f), count, f)
    if f.op.indexed and np.any(np.asarray(result) == NO_INDEX):  # nothing lifted: a slice of NaN (nanargmax)
        raise ValueError("All-NaN slice encountered")
    return result if k is None else result[k]
