"""The call records every backend takes, and the checks that build them.

A `Reduction` is what is reduced: the functor descriptors (op, transform, epilogue), the look a
named op takes at its results (ops/looks.py) and its torch twin (ops/named.py): fixed for a named
op, made once. `Args` are a call's arguments as the user gave them. `check(reduction, args,
backend, x, in_dtype)` validates them all (errors name the argument, before anything runs or is
written) and gives a `Call`: the axes, the resolved functors, the result's shape, ... which
`numpy_backend.run`, `gpu_backend.run` and `dask_backend.run` take with the input. Only the checked
path builds these: a repeated GPU call is a prepared call (ops/gpu_backend.py), which builds none.
"""
from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

import kps
from kernels import config
from kps import cache, dtypes


@dataclass(frozen=True)
class Reduction:
    """What is reduced. `look(result)`: a named op's look at its results (NumPy's warnings for the
    NaN-skipping ops); `twin`: its torch twin (interop.TORCH_TWINS), whose result dtype a torch
    tensor gets."""

    op: kps.ReduceOp
    transform: kps.TransformOp = kps.IDENTITY
    epilogue: kps.Epilogue = kps.NONE
    look: Any = None
    twin: Optional[str] = None
    #: Its prepared calls' table key (ops/gpu_backend.py): its descriptors, and a named op's look
    #: and torch twin apart, since its prepared calls look, and a torch tensor's result dtype is its
    #: twin's (ops.reduce_sum of uint8 is int64, ops.reduce of the same descriptors uint64). Made
    #: once: a repeated call reads it.
    key: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        key = (self.op, self.transform, self.epilogue)
        key = key if self.look is None else key + (self.look,)
        object.__setattr__(self, "key", key if self.twin is None else key + (self.twin,))


#: A call's arguments as given: (axis, keepdims, dtype, out). A plain tuple: every call of the NumPy
#: backend builds one, and a named tuple's constructor cost 3% of such a call (3,300 of 98,000
#: instructions, callgrind, a float32 (4, 8) sum).
Args = Tuple[Any, Any, Any, Any]


class Call(NamedTuple):
    """One checked call: what every backend needs besides the input. `num_red`: how many elements
    each output reduces (0: every output is the reduction's empty value). (A named tuple, not a
    frozen dataclass: every call of the NumPy backend builds one, 0.3 against 1.2 us.)"""

    reduction: Reduction
    f: kps.Functors
    axes: Tuple[int, ...]
    keepdims: bool
    shape: Tuple[int, ...]
    num_red: int
    out: Any = None


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def functors(op, transform, epilogue, in_dtype, requested, out_dtype) -> kps.Functors:
    """kps.resolve, cached per signature."""
    return kps.resolve(op, transform, epilogue, in_dtype, requested, out_dtype)


def check(reduction: Reduction, args: Args, backend: str, x, in_dtype, out_dtype=None) -> Call:
    """Validate every argument of a call on `backend` ("cpu", "gpu", "dask") and resolve its
    functors. `in_dtype`: x's dtype as the kernels see it, or a tuple of them for a transform of
    several inputs (checked, with their count, on their way in: `check_inputs`). `out_dtype`: the
    dtype `out` holds as the kernels see it where that is not `out.dtype` (a torch bfloat16
    tensor's CuPy view holds uint16 storage)."""
    op, transform, epilogue = reduction.op, reduction.transform, reduction.epilogue
    axis, keepdims, dtype, out = args
    several = isinstance(in_dtype, tuple)
    in_dtype = in_dtype if several else dtypes.check_dtype(in_dtype, "x")
    check_descriptors(op, transform, epilogue)
    if not several:
        check_inputs(transform, 1, as_tuple=False)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"keepdims: expected a bool, got {keepdims!r}")
    keepdims = bool(keepdims)
    axes = config.normalize_axis(axis, x.ndim)
    requested = None if dtype is None else dtypes.check_dtype(dtype, "dtype")
    f = functors(op, transform, epilogue, in_dtype, requested, None)
    shape = config.result_shape(x.shape, axes, keepdims)
    if backend == "dask":
        _check_dask(x, out)
    if out is not None:
        if epilogue.outputs > 1:
            raise TypeError(f"out: epilogue {epilogue.name} gives {epilogue.outputs} results per output; "
                            "out= takes one")
        out_dtype = getattr(out, "dtype", None) if out_dtype is None else out_dtype
        check_out(out, out_dtype, backend, x, shape, (f.out_dtype, op.indexed))
        f = functors(op, transform, epilogue, in_dtype, requested, dtypes.check_dtype(out_dtype, "out"))
    num_red = math.prod(x.shape[a] for a in axes)
    if num_red == 0 and not op.empty_ok:
        if op.indexed:  # NumPy's words for argmax and argmin
            raise ValueError(f"x: attempt to get {op.name} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {op.name} which has no identity")
    return Call(reduction, f, axes, keepdims, shape, num_red, out)


def _check_dask(x, out) -> None:
    if out is not None:
        raise TypeError("out: a dask array's reduction is lazy (a dask array); out= is not supported for it")
    if any(math.isnan(n) for n in x.shape):
        raise ValueError("x: a dask array of unknown chunk sizes; call x.compute_chunk_sizes() first")


def check_descriptors(op, transform, epilogue) -> None:
    for name, value, kind in (("op", op, kps.ReduceOp), ("transform", transform, kps.TransformOp),
                              ("epilogue", epilogue, kps.Epilogue)):
        if not isinstance(value, kind):
            raise TypeError(f"{name}: expected a kps.{kind.__name__}, got {value!r}")
    if op.state and epilogue in (kps.NONE, kps.MEAN):
        raise TypeError(f"epilogue: {op.name} accumulates a state of fields ({', '.join(n for n, _ in op.state)}); "
                        f"give an epilogue that reads them, not {epilogue.name}")


def check_inputs(transform, count: int, as_tuple: bool) -> None:
    """A transform reads as many arrays as `x` gives it (a tuple for several)."""
    if count == transform.inputs:
        return
    if as_tuple:
        raise ValueError(f"x: transform {transform.name} reads {transform.inputs} array(s), got a tuple of {count}")
    raise ValueError(f"x: transform {transform.name} reads {transform.inputs} arrays: pass them as a tuple")


def check_out(out, out_dtype, backend: str, x, shape, result) -> None:
    """`out` (holding `out_dtype`) for a result of `shape`, on `backend`, beside the input `x`.
    `result`: (the result's dtype, whether it is an arg-reduction's indices)."""
    natural, indexed = result
    if backend == "cpu":
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out: expected a numpy.ndarray for a NumPy input, got {type(out).__name__}")
        if not out.flags.writeable:
            raise ValueError("out: the array is read-only")
    else:
        import cupy

        if not isinstance(out, cupy.ndarray):
            raise TypeError(f"out: expected a cupy.ndarray for a CuPy input, got {type(out).__name__}")
        if out.device.id != x.device.id:
            raise ValueError(f"out: on device {out.device.id}, the input is on device {x.device.id}")
    dtypes.check_dtype(out_dtype, "out")
    if tuple(out.shape) != shape:
        raise ValueError(f"out: expected shape {shape}, got {tuple(out.shape)}")
    if indexed:
        if not takes_indices(out_dtype):
            raise TypeError(f"out: an index result needs an integer or bool array that casts safely to int64, "
                            f"got {out_dtype}")
        return
    # A reduction's out=: the result must cast to it under 'same_kind' (ufunc's default casting;
    # NumPy's own reductions cast into out= unsafely, float sums into int8 arrays too: refused here)
    if not np.can_cast(natural, out_dtype, casting="same_kind"):
        raise TypeError(f"out: cannot cast the result from {natural} to {out_dtype} under casting rule 'same_kind'")


def takes_indices(out_dtype) -> bool:
    """NumPy's rule for an arg-reduction's out=: its dtype casts safely to int64 (bool, int8-int64,
    uint8-uint32), and the indices are then written into it as they cast (numpy.argmax's check runs
    that way round: a uint8 out takes indices modulo 256)."""
    return np.can_cast(out_dtype, np.int64, casting="safe")


def check_ddof(ddof):
    """`ddof` as NumPy takes it: any real number (numpy.var(x, ddof=0.5) divides by n - 0.5; a
    negative one divides by more than n). An integral value comes back as an int, so ddof=1.0 runs
    ddof=1's kernel; any other (0.5, inf, NaN) as a float. A bool, or anything not a real number, is
    a TypeError that names `ddof`."""
    if isinstance(ddof, (bool, np.bool_)):
        raise TypeError(f"ddof: expected a real number, got {ddof!r}")
    try:
        return operator.index(ddof)
    except TypeError:
        pass
    if not isinstance(ddof, numbers.Real):
        raise TypeError(f"ddof: expected a real number, got {ddof!r}")
    value = float(ddof)
    return int(value) if value.is_integer() else value
