"""Dask arrays: the same reductions, lazily, through dask.array's own reduction machinery.

Three steps, as `dask.array.reduction` runs them:
1. each block is reduced to its accumulators (the functor's raw state, before the epilogue), the
   reduced axes kept at length 1 (`map_blocks`: an arg-reduction's indices are placed in the whole
   reduced range from the block's location);
2. dask's tree merges the blocks' accumulators with the functor's own `combine` (its NumPy twin);
3. the epilogue runs once per output on the total, with the whole reduction's count.
So a user's functor, with or without a state, needs no extra code. Blocks of NumPy arrays run the
NumPy backend; blocks of CuPy arrays run the GPU kernels, which hand back each output's raw state as
the bits of its fields (kps/raw.py), a small array copied to the host, where the merge and the
epilogue run as for NumPy blocks; the results come back as CuPy arrays. Importing `ops` does not
import dask: this module is imported when a dask array arrives.
"""
from __future__ import annotations

import math

import numpy as np

from kernels import config
from kps import raw
from kps.functors import Functors
from kps.nan import NO_INDEX

from . import numpy_backend


def is_dask(x) -> bool:
    """A dask.array.Array, told without importing dask."""
    kind = type(x)
    return kind.__name__ == "Array" and kind.__module__.partition(".")[0] == "dask"


def _on_gpu(x) -> bool:
    """Whether a dask array's blocks are CuPy arrays."""
    meta = getattr(x, "_meta", None)
    return type(meta).__module__.partition(".")[0] == "cupy"


def check_blocks(x) -> None:
    """NumPy or CuPy blocks."""
    meta = getattr(x, "_meta", None)
    if type(meta) is not np.ndarray and not _on_gpu(x):
        raise TypeError(f"x: a dask array of {type(meta).__module__}.{type(meta).__name__} blocks; "
                        "dask arrays of NumPy or CuPy blocks are reduced")


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
    gpu = _on_gpu(x)
    meta = (_cupy().empty if gpu else np.empty)((0,) * (x.ndim - len(drop)), dtype=out_dtype)
    results = tuple(total.map_blocks(_finish, count=count, f=f, k=k, drop=drop, gpu=gpu, drop_axis=drop,
                                     dtype=out_dtype, meta=meta)
                    for k in (range(f.epilogue.outputs) if f.epilogue.outputs > 1 else (None,)))
    return results if f.epilogue.outputs > 1 else results[0]


def _cupy():
    import cupy

    return cupy


def _block_states(block, axes, f: Functors, red_shape, block_info=None):
    if type(block) is not np.ndarray:  # a CuPy block
        if block.size:
            return _gpu_block_states(block, axes, f, red_shape, block_info)
        block = block.get()  # nothing to read: the identity states, from the NumPy twin
    index = None
    if f.op.indexed and axes:  # the block's elements' places in the C-order flattening of the whole reduced range
        local = [block.shape[a] for a in axes]
        index = _global_index(np.arange(math.prod(local), dtype=np.int64), local, axes, red_shape, block_info)
    return numpy_backend.block_states(block, axes, f, index)


def _global_index(local, local_shape, axes, red_shape, block_info) -> np.ndarray:
    """Indices in a block's reduced range (C order) as indices in the whole reduction's, placed by
    the block's location; the identity's index (nothing lifted) stays."""
    where = block_info[0]["array-location"]
    local = np.asarray(local, dtype=np.int64)
    lifted = local != NO_INDEX
    parts = np.unravel_index(np.where(lifted, local, 0), local_shape)
    index = np.ravel_multi_index(tuple(p + where[a][0] for p, a in zip(parts, axes)), red_shape)
    return np.where(lifted, index, NO_INDEX).astype(np.int64)


def _gpu_block_states(block, axes, f: Functors, red_shape, block_info):
    """A CuPy block's states: the kernels with the raw epilogue, the bits copied to the host."""
    from . import api

    cupy = _cupy()
    shape = config.result_shape(block.shape, axes, True)
    num_red = math.prod(block.shape[a] for a in axes)
    result = api._reduce_gpu(block, axes, True, raw.functors(f), None, shape, num_red, None, None, api._cupy_alloc,
                             api._prepare_gpu)
    bits = cupy.asnumpy(cupy.stack(result, axis=-1) if isinstance(result, tuple) else result)
    states = raw.state(bits, f)
    if f.op.indexed and axes:
        states["i"] = _global_index(states["i"], [block.shape[a] for a in axes], axes, red_shape, block_info)
    return states


def _keep(states, axis, keepdims):
    """Blocks arrive as accumulators already (step 1): nothing to do per block."""
    return states


def _merge(f: Functors):
    def merge(states, axis, keepdims=True, computing_meta=False):
        if computing_meta:  # dask asks for the result's type on an empty array
            return np.empty((0,) * states.ndim, dtype=states.dtype)
        return numpy_backend.merge_states(states, axis, f)
    return merge


def _finish(total, count: int, f: Functors, k, drop, gpu: bool):
    """The epilogue on the merged accumulators, the reduced axes dropped unless kept (a 0-d result
    is a NumPy scalar, as NumPy's reductions give it; a CuPy array for CuPy blocks)."""
    result = numpy_backend.finish(numpy_backend.unpack(np.squeeze(total, axis=drop), f), count, f)
    if f.op.indexed and np.any(np.asarray(result) == NO_INDEX):  # nothing lifted: a slice of NaN (nanargmax)
        raise ValueError("All-NaN slice encountered")
    result = result if k is None else result[k]
    return _cupy().asarray(result) if gpu else result
