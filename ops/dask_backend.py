"""Dask arrays: the same reductions, lazily, through dask.array's own reduction machinery.

Three steps, as `dask.array.reduction` runs them:
1. each block is reduced to its accumulators (the functor's raw state, before the epilogue), the
   reduced axes kept at length 1 (`map_blocks`: an arg-reduction's indices are placed in the whole
   reduced range from the block's location);
2. dask's tree merges the blocks' accumulators with the functor's own `combine` (its NumPy twin);
3. the epilogue runs once per output on the total, with the whole reduction's count.
So a user's functor, with or without a state, needs no extra code. Blocks of NumPy arrays run the
NumPy backend; blocks of CuPy arrays run the GPU kernels, which hand back each output's raw state as
the bits of its fields (kps/raw.py): an int64 array with one more last axis, a field an entry. The
bits are copied to the host behind the block's kernels, and the task returns without waiting for
them (`_HostBits`), so no block waits for the host and the next block's work queues behind it
(copied to the host block by block, one task's synchronisation each, the GPU sat idle between the
worker's tasks: 170 GB summed in 2.40 s against dask's own 1.35 s on the H100). A block's task
returns once the block before it is reduced (`_pace`), so a worker's host runs at most one block
ahead of its GPU and dask's scheduler spreads the blocks evenly over the GPUs. Merging and the
epilogue run on the host as for NumPy blocks, in as few merges as `MERGE_FAN_IN` allows; the results
come back as CuPy arrays. Importing `ops` does not import dask: this module is imported when
a dask array arrives.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from kernels import config
from kps import raw
from kps.functors import Functors
from kps.nan import ALL_NAN_INDEX_OPS, NO_INDEX

from . import gpu_backend, numpy_backend
from .call import Call, Reduction
from .interop import to_numpy


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


#: Blocks' states merged at once, at most (dask's `split_every`, over all reduced axes together):
#: a merge of CuPy blocks' states waits for their GPUs (and another worker's states travel to it),
#: so few wide merges keep the GPUs' queues full (with dask's default, 40 blocks summed took 20
#: merges and 2.3 ms a block against 0.6 for dask's own sum: H200, dask's synchronous scheduler).
MERGE_FAN_IN = 1024


def _fan_in(numblocks, axes) -> dict:
    """Dask's `split_every` for a reduction over `axes`: `MERGE_FAN_IN` shared among the reduced
    axes with more than one block (an axis of one block merges nothing; shared over all of them, a
    whole sum of a column of 34 blocks merged 32 of them in the middle of the run, a wait for a
    GPU and a transfer while the blocks were still being reduced)."""
    split = [a for a in axes if numblocks[a] > 1]
    fan_in = max(2, int(MERGE_FAN_IN ** (1 / max(1, len(split))) + 1e-9))
    return {a: fan_in if a in split else 2 for a in axes}


def run(call: Call, x):
    """A lazy dask array (a tuple of them for an epilogue of several results) of a checked call
    (ops/call.py) on `x`, with NumPy's shape and dtype."""
    return reduce(x, call.axes, call.keepdims, call.f)


def reduce(x, axes, keepdims: bool, f: Functors):
    """A lazy dask array (a tuple of them for an epilogue of several results) of the reduction of
    `x` over `axes`, with NumPy's shape and dtype."""
    import dask.array as da

    count = math.prod(x.shape[a] for a in axes)
    chunks = tuple((1,) * len(c) if a in axes else c for a, c in enumerate(x.chunks))
    gpu = _on_gpu(x)
    if gpu and _placed(f, axes) and "i" not in f.acc_dtype.names:
        raise TypeError(f"op: {f.op.name} is indexed; over CuPy blocks its state keeps the element's index as it is "
                        f"lifted in a field named 'i' (kps.ARGMAX's), which each block's step moves into the "
                        f"whole reduced range")
    step = _step(f, axes, x.chunks, gpu)
    if gpu:  # the states' bits, a last axis of fields (see the module's docstring)
        state_dtype, state_ndim = np.dtype(np.int64), x.ndim + 1
        states = x.map_blocks(step, chunks=chunks + ((raw.fields(f),),), new_axis=x.ndim, dtype=state_dtype,
                              meta=np.empty((0,) * state_ndim, state_dtype))
    else:
        state_dtype, state_ndim = f.acc_dtype, x.ndim
        states = x.map_blocks(step, chunks=chunks, dtype=state_dtype, meta=np.empty((0,) * x.ndim, dtype=state_dtype))
    # the reduced axes stay (length 1) until the epilogue has run: dask's reduction has no meta of
    # its own for a structured dtype
    merge = _Merge(f, gpu=gpu)
    total = da.reduction(states, _keep, merge, axis=axes, keepdims=True, dtype=state_dtype, combine=merge,
                         split_every=_fan_in(states.numblocks, axes), concatenate=not gpu,
                         meta=np.empty((0,) * state_ndim, dtype=state_dtype))
    out_dtype = np.dtype(f.out_dtype)
    drop = () if keepdims else axes
    meta = (_cupy().empty if gpu else np.empty)((0,) * (x.ndim - len(drop)), dtype=out_dtype)
    results = tuple(total.map_blocks(_Finish(f, count=count, k=k, drop=drop, gpu=gpu),
                                     drop_axis=drop + ((x.ndim,) if gpu else ()), dtype=out_dtype, meta=meta)
                    for k in (range(f.epilogue.outputs) if f.epilogue.outputs > 1 else (None,)))
    return results if f.epilogue.outputs > 1 else results[0]


class _Step:
    """One step of a dask reduction: a callable holding its functors and parameters, with a cheap
    dask token (the functors' identity, not a pickle of them: dask tokenized their NumPy twins
    through cloudpickle, ~1 ms a step in every graph)."""

    def __init__(self, f: Functors, **params):
        self.f, self.params = f, params
        self.__dict__.update(params)
        self.__name__ = f"kps-{type(self).__name__.strip('_').lower()}"  # dask's key prefix

    def __dask_tokenize__(self):
        return type(self).__name__, id(self.f), tuple(sorted(self.params.items()))


def _cupy():
    import cupy

    return cupy


def _placed(f: Functors, axes) -> bool:
    """Whether a block's step needs its place in the array: an arg-reduction's, whose indices go into
    the whole reduced range. Only then is the place asked for (a sum of 160 blocks: 19.7 -> 11.6 ms
    to optimize its graph with dask's `block_info` left out, on the CPU)."""
    return bool(f.op.indexed and axes)


def _regular(chunks) -> Optional[int]:
    """The size of an axis's blocks where all but the last have one size (dask's usual chunks), else None."""
    return chunks[0] if len(set(chunks[:-1])) <= 1 and chunks[-1] <= chunks[0] else None


def _step(f: Functors, axes, chunks, gpu: bool) -> "_Step":
    """A block's step: its states (NumPy blocks) or their bits (CuPy blocks); an arg-reduction's
    step is placed by the block's id where every reduced axis's blocks are regular (dask passes a
    tuple), by dask's `block_info` otherwise (a dict of every block's location, built into the graph
    and sent with each task: 29.6 against 22.4 ms to build and optimize a 160-block graph on the
    CPU; two H200s, 70 blocks: 44 against 24 ms before the first block started)."""
    base = _BlockBits if gpu else _BlockStates
    params = {"axes": axes, "red_shape": tuple(sum(chunks[a]) for a in axes)}
    if not _placed(f, axes):
        return base(f, **params)
    sizes = tuple(_regular(chunks[a]) for a in axes)
    if None in sizes:
        return _PLACED_BY_INFO[base](f, **params)
    return _PLACED_BY_ID[base](f, sizes=sizes, **params)


class _BlockStates(_Step):
    """A NumPy block's accumulators, the reduced axes kept at length 1."""

    def __call__(self, block) -> np.ndarray:
        return self.reduce_block(block, None)

    def reduce_block(self, block, starts) -> np.ndarray:
        return _block_states(block, self.axes, self.f, self.red_shape, starts)


def _block_states(block, axes, f: Functors, red_shape, starts) -> np.ndarray:
    index = None
    if _placed(f, axes):  # the block's elements' places in the C-order flattening of the whole reduced range
        local = [block.shape[a] for a in axes]
        index = _global_index(np.arange(math.prod(local), dtype=np.int64), local, starts, red_shape)
    return numpy_backend.block_states(block, axes, f, index)


def _global_index(local, local_shape, starts, red_shape, xp=np):
    """Indices in a block's reduced range (C order) as indices in the whole reduction's, the block
    starting at `starts` (one a reduced axis); the identity's index (nothing lifted) stays. `xp`:
    NumPy or CuPy. Integer arithmetic only: cupy.unravel_index checks its input with two device
    synchronisations, which held each block's task until its GPU had caught up, and the GPU then
    idled while the host went back to the scheduler (argmax on two H200s: 26.6 against 22.5 ms a
    block of 16 GiB)."""
    lifted = local != NO_INDEX
    rest, index, scale = xp.where(lifted, local, 0), 0, 1
    for size, start, whole in zip(reversed(local_shape), reversed(starts), reversed(red_shape)):
        index = index + (rest % size + start) * scale
        rest, scale = rest // size, scale * whole
    return xp.where(lifted, index, NO_INDEX).astype(np.int64)


class _BlockBits(_Step):
    """A CuPy block's states as the bits of their fields (kps/raw.py): the kernels with the raw
    epilogue, an arg-reduction's indices placed in the whole range there too, and the bits on their
    way to the host (`_HostBits`)."""

    def __call__(self, block):
        return self.reduce_block(block, None)

    def reduce_block(self, block, starts):
        cupy, f, axes = _cupy(), self.f, self.axes
        if not block.size:  # nothing to read: the identity states, from the NumPy twin
            return raw.bits(_block_states(block.get(), axes, f, self.red_shape, starts), f)
        with cupy.cuda.Device(block.data.device_id):  # (the block's GPU, whatever this thread's current one)
            result = gpu_backend.run(_block_call(raw.functors(f), axes, block.shape), block)
            bits = cupy.stack(result, axis=-1) if isinstance(result, tuple) else result[..., None]
            if _placed(f, axes):
                k = raw.entry(f, "i")
                bits[..., k] = _global_index(bits[..., k], [block.shape[a] for a in axes], starts, self.red_shape,
                                             cupy)
            host = _HostBits(bits, cupy)
            _pace(cupy)
        return host


class _PlacedById:
    """A step placed by its block's id: each reduced axis's blocks are `sizes` long (the last may be
    shorter), so a block starts at its id times that."""

    def __call__(self, block, block_id=None):
        return self.reduce_block(block, [block_id[a] * size for a, size in zip(self.axes, self.sizes)])


class _PlacedByInfo:
    """A step placed by dask's `block_info` (any chunks)."""

    def __call__(self, block, block_info=None):
        where = block_info[0]["array-location"]
        return self.reduce_block(block, [where[a][0] for a in self.axes])


class _StatesById(_PlacedById, _BlockStates):
    """An arg-reduction's step over NumPy blocks of regular chunks."""


class _StatesByInfo(_PlacedByInfo, _BlockStates):
    """An arg-reduction's step over NumPy blocks of any chunks."""


class _BitsById(_PlacedById, _BlockBits):
    """An arg-reduction's step over CuPy blocks of regular chunks."""


class _BitsByInfo(_PlacedByInfo, _BlockBits):
    """An arg-reduction's step over CuPy blocks of any chunks."""


#: The placed steps of each kind of block (see `_step`).
_PLACED_BY_ID = {_BlockStates: _StatesById, _BlockBits: _BitsById}
_PLACED_BY_INFO = {_BlockStates: _StatesByInfo, _BlockBits: _BitsByInfo}


class _HostBits:
    """A block's state bits copied to (pinned) host memory behind the block's kernels, without
    waiting for them: `array()` waits for the copy. Pickled (sent to another worker), it is the
    NumPy array. (Merged as CuPy arrays, the states of another worker's blocks came over one by
    one, a GPU synchronisation and a host round trip each: 28 ms for 17 blocks at the end of a sum
    on two H200s, where merging takes 2 ms.)"""

    __slots__ = ("_host", "_event")

    def __init__(self, bits, cupy):
        import cupyx

        self._host = cupyx.empty_pinned(bits.shape, bits.dtype)
        bits.get(out=self._host, blocking=False)
        self._event = cupy.cuda.Event(block=False, disable_timing=True)
        self._event.record()

    def array(self) -> np.ndarray:
        self._event.synchronize()
        return self._host

    def __reduce__(self):
        return np.array, (self.array(),)


def _on_host(states):
    """A NumPy array of `states`: `_HostBits`, a NumPy array, or a CuPy one."""
    return states.array() if type(states) is _HostBits else to_numpy(states)


def _block_call(f: Functors, axes, shape) -> Call:
    """The call of one block's reduction over `axes`, the reduced axes kept: the functors as they
    are (the raw epilogue's, resolved for the whole array), nothing checked again, nothing prepared."""
    return Call(Reduction(f.op, f.transform, f.epilogue), f, axes, True, config.result_shape(shape, axes, True),
                math.prod(shape[a] for a in axes))


#: Per GPU, in this process: the event recorded after the last block's kernels were queued (`_pace`).
_queued = {}


def _pace(cupy) -> None:
    """Let a worker's host run at most one block ahead of its GPU: record an event after this
    block's kernels and wait for the one recorded after the block before. Dask hands the next block
    to whichever worker reports a task done; with no wait a task is done once its kernels are
    queued, so one worker took most blocks while its GPU still had them queued (34 blocks of 16 GiB
    on two H200s, 2026-11-27: 12-15 and 22-25 tasks, 1.50-1.68x of one GPU; paced: 17 each,
    1.82-1.84x); waiting for the block's own kernels idled the GPU while the host went back to the
    scheduler (5-7% slower on one GPU and on two)."""
    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record()
    device = cupy.cuda.Device().id
    previous, _queued[device] = _queued.get(device), event
    if previous is not None:
        previous.synchronize()


def _keep(states, axis, keepdims):
    """Blocks arrive as accumulators already (step 1): nothing to do per block."""
    return states


class _Merge(_Step):
    """Merge accumulators over `axis` (the NumPy twin's combine); with `gpu`, of the bits of CuPy
    blocks' states (or of earlier merges): dask hands them over unjoined, as nested lists a level a
    reduced axis (each block's `_HostBits` waited for here), and they go back to bits."""

    def __call__(self, states, axis, keepdims=True, computing_meta=False):
        if computing_meta:  # dask asks for the result's type on an empty array
            return np.empty((0,) * states.ndim, dtype=states.dtype)
        if not self.gpu:
            return numpy_backend.merge_states(states, axis, self.f)
        if isinstance(states, list):
            from dask.array.core import _concatenate2

            states = _concatenate2(_nested(_on_host, states), axes=sorted(axis))
        return raw.bits(numpy_backend.merge_states(raw.state(_on_host(states), self.f), axis, self.f), self.f)


def _nested(fn, lists):
    """`fn` applied to each leaf of nested lists, the nesting kept."""
    return [_nested(fn, x) for x in lists] if isinstance(lists, list) else fn(lists)


class _Finish(_Step):
    """The epilogue on the merged accumulators, the reduced axes dropped unless kept (a 0-d result
    is a NumPy scalar, as NumPy's reductions give it; a CuPy array for CuPy blocks)."""

    def __call__(self, total):
        f = self.f
        if self.gpu:
            total = raw.state(to_numpy(total), f)
        result = numpy_backend.finish(numpy_backend.unpack(np.squeeze(total, axis=self.drop), f), self.count, f)
        if f.op in ALL_NAN_INDEX_OPS and np.any(np.asarray(result) == NO_INDEX):  # a slice of NaN (nanargmax)
            raise ValueError("All-NaN slice encountered")
        result = result if self.k is None else result[self.k]
        return _cupy().asarray(result) if self.gpu else result
