"""The CPU backend: the same functor descriptors, evaluated with NumPy.

Each step mirrors the kernel's: transform in NumPy's own types, cast to the accumulate type,
reduce with the op's ufunc, epilogue, cast to the output type. A state op (several fields) lifts
every element to a state and merges them pairwise, field arrays at a time, with its NumPy twin.
"""
from __future__ import annotations

import math

import numpy as np

from kps.functors import Functors

from .call import Call


def run(call: Call, x):
    """Run a checked call (ops/call.py): `x` a NumPy array, or a tuple of them of one shape for a
    transform of several inputs."""
    return reduce(x, call.axes, call.keepdims, call.f, call.out)


def reduce(x, axes, keepdims: bool, f: Functors, out=None):
    """`x`: an array, or a tuple of arrays of one shape for a transform of several inputs."""
    xs = x if isinstance(x, tuple) else (x,)
    count = math.prod(xs[0].shape[a] for a in axes)
    with np.errstate(all="ignore"):
        acc = _accumulate(np.asarray(f.transform.numpy(*xs)), axes, keepdims, f)
    return finish(acc, count, f, out)


def finish(acc, count: int, f: Functors, out=None):
    """The epilogue on each output's accumulator (a scalar op's array, a state op's dict of field
    arrays), given the reduced count, in the output dtype (a tuple of them for several results)."""
    with np.errstate(all="ignore"):
        results = f.epilogue.numpy(acc, count)
        if f.epilogue.outputs > 1:  # several results per output (the API allows no out= then)
            if not isinstance(results, tuple) or len(results) != f.epilogue.outputs:
                got = len(results) if isinstance(results, tuple) else "not a tuple"
                raise TypeError(f"epilogue: {f.epilogue.name}'s NumPy twin gave {got} results where its CUDA gives "
                                f"{f.epilogue.outputs} (a tuple, one result an expression)")
            return tuple(_typed(r, f) for r in results)
        result = _typed(results, f)
    if out is not None:
        np.copyto(out, result, casting="unsafe")
        return out
    return result


def _accumulate(t: np.ndarray, axes, keepdims: bool, f: Functors, index=None):
    """Each output's accumulator over `axes` of the transformed `t`: the identity where nothing is
    reduced. `index`: an indexed op's element indices (default: the C-order flattening of `t`'s own
    reduced axes)."""
    with np.errstate(all="ignore"):
        if f.op.state:
            return _reduce_state(t, axes, keepdims, f, index)
        t = t.astype(f.acc_dtype, copy=False)
        if t.size == 0 and math.prod(t.shape[a] for a in axes) == 0:
            shape = [1 if a in axes else n for a, n in enumerate(t.shape)]
            acc = np.full(shape, f.op.identity(f.acc_dtype), dtype=f.acc_dtype)
            return acc if keepdims else acc.reshape([n for a, n in enumerate(t.shape) if a not in axes])
        return f.op.numpy.reduce(t, axis=axes, dtype=f.acc_dtype, keepdims=keepdims)


def _typed(result, f: Functors):
    """A result in the output dtype; a 0-d one as a NumPy scalar, as NumPy's reductions give it."""
    result = np.asarray(result).astype(f.out_dtype, copy=False)
    return result if result.ndim else result[()]


def _reduce_state(t: np.ndarray, axes, keepdims: bool, f: Functors, index=None) -> dict:
    """Every output's state, a dict of field arrays of the result's shape: the reduced axes moved
    last and flattened, each element lifted, then merged (see `_merge_flat`)."""
    kept, flat = _reduced_last(t, axes)
    n = flat.shape[-1]
    if n == 0:
        state = _typed_state({k: np.full(flat.shape[:-1] + (1,), v) for k, v in f.op.identity(f.value_dtype).items()}, f)
    else:
        values = flat.astype(f.value_dtype)
        # an indexed op's lift also takes each element's index: its place in the C-order flattening
        # of the reduced axes, which is where the transpose and reshape above put it
        index = np.arange(n, dtype=np.int64) if index is None else index
        lifted = f.op.numpy_lift(values, index) if f.op.indexed else f.op.numpy_lift(values)
        state = {k: np.broadcast_to(v, flat.shape) for k, v in _typed_state(lifted, f).items()}
    state = _merge_flat(state, f)
    shape = [1 if a in axes else t.shape[a] for a in range(t.ndim)] if keepdims else [t.shape[a] for a in kept]
    # (a slice of one element merges nothing: its field is still the read-only broadcast of the lift)
    return {k: v.reshape(shape) if v.flags.writeable else v.reshape(shape).copy() for k, v in state.items()}


def _reduced_last(a: np.ndarray, axes):
    """(the kept axes, `a` with the reduced axes moved last and flattened into one)."""
    kept = [i for i in range(a.ndim) if i not in axes]
    return kept, np.transpose(a, kept + list(axes)).reshape([a.shape[i] for i in kept] + [math.prod(a.shape[i] for i in axes)])


def _typed_state(state, f: Functors) -> dict:
    """Each field in its own dtype, whatever the twin returned."""
    fields = f.acc_dtype.fields
    return {k: np.asarray(v, dtype=fields[k][0]) for k, v in state.items()}


def _merge_flat(state: dict, f: Functors) -> dict:
    """Merge the states along the last axis (halves at a time, in a fixed order) into one each."""
    n = next(iter(state.values())).shape[-1]
    while n > 1:
        half = n // 2
        merged = _typed_state(f.op.numpy({k: v[..., :half] for k, v in state.items()},
                                         {k: v[..., half:2 * half] for k, v in state.items()}), f)
        if n % 2:
            merged = {k: np.concatenate([v, state[k][..., 2 * half:]], axis=-1) for k, v in merged.items()}
        state, n = merged, half + n % 2
    return {k: v[..., 0] for k, v in state.items()}


def block_states(x, axes, f: Functors, index=None) -> np.ndarray:
    """The accumulators of one block of a larger array, the reduced axes kept at length 1, as one
    array: a scalar op's in its accumulate dtype, a state op's as a structured array of its fields.
    `index`: an indexed op's element indices in the whole reduction (see `_accumulate`)."""
    xs = x if isinstance(x, tuple) else (x,)
    with np.errstate(all="ignore"):
        acc = _accumulate(np.asarray(f.transform.numpy(*xs)), axes, True, f, index)
    return _pack(acc, f)


def merge_states(acc: np.ndarray, axes, f: Functors) -> np.ndarray:
    """Accumulators (as `block_states` gives them) merged over `axes`, kept at length 1."""
    if not f.op.state:
        with np.errstate(all="ignore"):
            return f.op.numpy.reduce(acc, axis=axes, dtype=f.acc_dtype, keepdims=True)
    flat = _reduced_last(acc, axes)[1]
    with np.errstate(all="ignore"):
        merged = _merge_flat({k: flat[k] for k in f.acc_dtype.names}, f)
    return _pack(merged, f).reshape([1 if a in axes else n for a, n in enumerate(acc.shape)])


def unpack(acc: np.ndarray, f: Functors):
    """What `finish` takes: the array itself, or a state's dict of field arrays."""
    return {k: acc[k] for k in f.acc_dtype.names} if f.op.state else acc


def _pack(acc, f: Functors) -> np.ndarray:
    if not f.op.state:
        return np.asarray(acc)
    fields = {k: np.asarray(v) for k, v in acc.items()}
    packed = np.empty(next(iter(fields.values())).shape, dtype=f.acc_dtype)
    for k, v in fields.items():
        packed[k] = v
    return packed


def empty_result(f: Functors):
    """The value of an empty reduction (sum -> 0, prod -> 1, all -> True, mean -> NaN)."""
    empties = tuple(np.empty(0, dtype=d) for d in f.in_dtypes)
    return reduce(empties if f.more_dtypes else empties[0], (0,), False, f)
