"""One call of a reduction, on whichever backend its input asks for.

`run(reduction, table, x, axis, keepdims, dtype, out)` (`run_looked` for a named op with a look):
the prepared call `table` holds for this signature when there is one (ops/gpu_backend.py: CuPy
arrays and CUDA torch tensors, out=None), the hot path; else the checked path (`checked`): the
arguments checked into a `Call` (ops/call.py), handed to the NumPy, GPU or Dask backend
(`numpy_backend.run`, `gpu_backend.run`, `dask_backend.run`), or first made ready for one
(ops/interop.py: torch tensors, DLPack and CUDA-array-interface producers).
"""
from __future__ import annotations

import numpy as np

from kps import dtypes

from . import dask_backend, gpu_backend, interop, numpy_backend
from .call import Args, Reduction, check, check_descriptors, check_inputs, functors, takes_indices
from .gpu_backend import signature as _signature


def run(reduction: Reduction, table, x, axis, keepdims, dtype, out):
    """A prepared call when `table` has one for this signature, else the checked path (which
    prepares the next call). `table`: the reduction's prepared calls (`gpu_backend.table`), or None.
    A reduction with a look takes `run_looked`."""
    sig = _signature(x, axis, keepdims, dtype) if out is None else None
    if table is not None:  # (the lookup written out here and in run_looked: a call less on the hot path)
        try:
            call = table.get(sig)
        except TypeError:  # an unhashable dtype
            call = None
        if call is not None:
            result = call(x)  # first: what the GPU waits for comes before any bookkeeping
            table.touch(sig)  # mark it used (kps/cache.py)
            return result
    return checked(reduction, x, (axis, keepdims, dtype, out), sig, table)


def run_looked(reduction: Reduction, table, x, axis, keepdims, dtype, out):
    """`run` for a named op with a look (`reduction.look`, ops/looks.py), which sees the result
    before it is returned; a prepared call on CuPy arrays has its kernel look instead
    (`gpu_backend.prepare_call`)."""
    sig = _signature(x, axis, keepdims, dtype) if out is None else None
    if table is not None:
        try:
            call = table.get(sig)
        except TypeError:  # an unhashable dtype
            call = None
        if call is not None:
            result = call(x)
            table.touch(sig)
            return result if getattr(call, "looks", False) else reduction.look(result, x, axis)
    return reduction.look(checked(reduction, x, (axis, keepdims, dtype, out), sig, table), x, axis)


def run_into_narrow_index(reduction: Reduction, table, x, axis, keepdims, dtype, out):
    """`run_looked` for an arg-reduction whose look seeks the index an all-NaN slice keeps
    (look.LARGEST_INDEX, int64's largest) and whose `out` holds a narrower integer or bool (NumPy
    takes any dtype that casts safely to int64): the indices go to an int64 array of `out`'s kind
    first, since cast into `out` the marker would read as an index (-1 in int32, 255 in uint8).
    Other `out=` arrays take `run_looked`, whose checks name what is wrong with them."""
    narrow = _index_dtype(out)
    if narrow is None or narrow == np.int64 or not takes_indices(narrow):
        return run_looked(reduction, table, x, axis, keepdims, dtype, out)
    wide = interop.empty_like(out, np.int64)
    reduction.look(checked(reduction, x, (axis, keepdims, dtype, wide), None, table), x, axis)
    return interop.copy_into(out, wide)


def _index_dtype(out):
    """`out`'s dtype as NumPy's, for a writable NumPy array, a CuPy array or a torch tensor; else None."""
    if interop.is_torch(out):
        return interop.kernel_dtype(out.dtype)
    if isinstance(out, np.ndarray):
        return out.dtype if out.flags.writeable else None  # (the checks name a read-only one)
    return out.dtype if gpu_backend.is_cupy(out) else None


def checked(reduction: Reduction, x, args: Args, sig, table=None):
    """`run`'s checked path, on any backend (the look aside). `sig`: the call's signature (None
    with `out=`), under which the GPU backend keeps the call it prepares, in `table` (the one the
    caller looks in: a named op's own, which the shared table of tables may have evicted since), or
    where None in `gpu_backend.table(reduction.key)`."""
    if isinstance(x, np.generic):
        x = np.asarray(x)
    args = args[:2] + (interop.requested_dtype(args[2]),) + args[3:]
    if isinstance(x, np.ndarray):
        return numpy_backend.run(check(reduction, args, "cpu", x, x.dtype), x)
    if gpu_backend.is_cupy(x):
        return gpu_backend.run(check(reduction, args, "gpu", x, x.dtype), x, sig, calls=table)
    if dask_backend.is_dask(x):
        dask_backend.check_blocks(x)
        return dask_backend.run(check(reduction, args, "dask", x, x.dtype), x)
    return _adapted(reduction, x, args, sig, table)


def _adapted(reduction: Reduction, x, args: Args, sig, table):
    """Torch tensors and other producers: read in place by a backend, answered in kind (ops/interop.py)."""
    axis, keepdims, dtype, out = args
    adapted = interop.adapt(x, out)
    # torch's dtype rule applies without out=; with one, the result takes out's dtype as torch's
    # (and NumPy's) reductions do: a uint8 sum into a uint8 tensor, all of uint8 into a bool one
    if reduction.twin is not None and dtype is None and out is None and interop.is_torch(x):
        dtype = _torch_rule(reduction, x, adapted.in_dtype)
    with adapted.context():
        call = check(reduction, (axis, keepdims, dtype, adapted.out), adapted.backend, adapted.x, adapted.in_dtype,
                     adapted.out_dtype)
        if adapted.backend == "cpu":
            result = numpy_backend.run(call, adapted.x)
        else:
            result = gpu_backend.run(call, adapted.x, sig if adapted.prepare else None, adapted.allocate,
                                     adapted.prepare, table)
    if isinstance(result, tuple):  # an epilogue of several results
        return tuple(adapted.wrap(r, call.f.out_dtype) for r in result)
    return adapted.wrap(result, call.f.out_dtype)


def _torch_rule(reduction: Reduction, x, in_dtype):
    """`dtype=` for a torch tensor: torch's result dtype where it differs from NumPy's (where the two
    agree, None keeps the accumulation NumPy's rule picks: float32 variances in float64)."""
    want = interop.torch_result_dtype(reduction.twin, x.dtype)
    natural = functors(reduction.op, reduction.transform, reduction.epilogue, dtypes.check_dtype(in_dtype, "x"),
                       None, None).out_dtype
    return None if want == natural else want


def run_inputs(reduction: Reduction, xs: tuple, args: Args):
    """A transform of several arrays: broadcast them together (NumPy's rules), then reduce in one
    pass that reads every input at the same element offsets."""
    check_descriptors(reduction.op, reduction.transform, reduction.epilogue)
    check_inputs(reduction.transform, len(xs), as_tuple=True)
    xs = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in xs)
    on_cpu = all(isinstance(a, np.ndarray) for a in xs)
    if not on_cpu and not all(gpu_backend.is_cupy(a) for a in xs):
        raise TypeError("x: expected a tuple of NumPy arrays or of CuPy arrays (one kind), got "
                        + ", ".join(type(a).__name__ for a in xs))
    in_dtypes = tuple(dtypes.check_dtype(a.dtype, f"x[{k}]") for k, a in enumerate(xs))
    args = args[:2] + (interop.requested_dtype(args[2]),) + args[3:]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in xs))
    except ValueError:
        raise ValueError(f"x: the inputs' shapes {', '.join(str(a.shape) for a in xs)} do not broadcast together") \
            from None
    if on_cpu:
        views = tuple(np.broadcast_to(a, shape) for a in xs)
        return numpy_backend.run(check(reduction, args, "cpu", views[0], in_dtypes), views)
    key = None
    axis, keepdims, dtype, out = args
    if out is None:
        key = gpu_backend.inputs_signature(xs, axis, keepdims, dtype)
    views, key = gpu_backend.broadcast(xs, shape, key)
    return gpu_backend.run(check(reduction, args, "gpu", views[0], in_dtypes), views, key)
