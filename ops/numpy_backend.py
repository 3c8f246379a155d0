"""The CPU backend: the same functor descriptors, evaluated with NumPy.

Each step mirrors the kernel's: transform in NumPy's own types, cast to the accumulate type,
reduce with the op's ufunc, epilogue, cast to the output type. A state op (several fields) lifts
every element to a state and merges them pairwise, field arrays at a time, with its NumPy twin.
"""
from __future__ import annotations

import math

import numpy as np

from kps.functors import Functors


def reduce(x, axes, keepdims: bool, f: Functors, out=None):
    """`x`: an array, or a tuple of arrays of one shape for a transform of several inputs."""
    xs = x if isinstance(x, tuple) else (x,)
    count = math.prod(xs[0].shape[a] for a in axes)
    with np.errstate(all="ignore"):
        t = np.asarray(f.transform.numpy(*xs))
        if f.op.state:
            acc = _reduce_state(t, axes, keepdims, f)
        else:
            t = t.astype(f.acc_dtype, copy=False)
            acc = f.op.numpy.reduce(t, axis=axes, dtype=f.acc_dtype, keepdims=keepdims)
        results = f.epilogue.numpy(acc, count)
        if f.epilogue.outputs > 1:  # several results per output (the API allows no out= then)
            return tuple(_typed(r, f) for r in results)
        result = _typed(results, f)
    if out is not None:
        np.copyto(out, result, casting="unsafe")
        return out
    return result


def _typed(result, f: Functors):
    """A result in the output dtype; a 0-d one as a NumPy scalar, as NumPy's reductions give it."""
    result = np.asarray(result).astype(f.out_dtype, copy=False)
    return result if result.ndim else result[()]


def _reduce_state(t: np.ndarray, axes, keepdims: bool, f: Functors) -> dict:
    """Every output's state, a dict of field arrays of the result's shape: the reduced axes moved
    last and flattened, each element lifted, then halves merged until one state is left."""
    kept = [a for a in range(t.ndim) if a not in axes]
    flat = np.transpose(t, kept + list(axes)).reshape([t.shape[a] for a in kept] + [math.prod(t.shape[a] for a in axes)])
    fields = f.acc_dtype.fields

    def typed(state):  # each field in its own dtype, whatever the twin returned
        return {k: np.asarray(v, dtype=fields[k][0]) for k, v in state.items()}

    n = flat.shape[-1]
    if n == 0:
        state = typed({k: np.full(flat.shape[:-1] + (1,), v) for k, v in f.op.identity(f.value_dtype).items()})
    else:
        values = flat.astype(f.value_dtype)
        # an indexed op's lift also takes each element's index: its place in the C-order flattening
        # of the reduced axes, which is where the transpose and reshape above put it
        lifted = f.op.numpy_lift(values, np.arange(n, dtype=np.int64)) if f.op.indexed else f.op.numpy_lift(values)
        state = {k: np.broadcast_to(v, flat.shape) for k, v in typed(lifted).items()}
    while n > 1:
        half = n // 2
        merged = typed(f.op.numpy({k: v[..., :half] for k, v in state.items()},
                                  {k: v[..., half:2 * half] for k, v in state.items()}))
        if n % 2:
            merged = {k: np.concatenate([v, state[k][..., 2 * half:]], axis=-1) for k, v in merged.items()}
        state, n = merged, half + n % 2
    shape = [1 if a in axes else t.shape[a] for a in range(t.ndim)] if keepdims else [t.shape[a] for a in kept]
    return {k: v[..., 0].reshape(shape) for k, v in state.items()}


def empty_result(f: Functors):
    """The value of an empty reduction (sum -> 0, prod -> 1, all -> True, mean -> NaN)."""
    empties = tuple(np.empty(0, dtype=d) for d in f.in_dtypes)
    return reduce(empties if f.more_dtypes else empties[0], (0,), False, f)
