"""The public reductions, with NumPy's semantics.

CuPy arrays run the GPU kernels; NumPy arrays run the NumPy backend built from the same functor
descriptors. Argument errors are raised before anything runs or is written, and name the argument.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

import kps
from kernels import config, launch_for
from kps import dtypes

from . import interop, numpy_backend


# Bound once CuPy has been imported (the fast path uses them without attribute lookups).
_ndarray = _alloc = _get_device = _current_stream = None

#: (input signature, call arguments) -> a prepared GPU call: a repeated call with `out=None` costs
#: this lookup, one allocation and one launch.
_prepared: dict = {}


def _cupy():
    global _ndarray, _alloc, _get_device, _current_stream
    try:
        import cupy
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    _ndarray, _alloc = cupy.ndarray, cupy.cuda.alloc
    _get_device, _current_stream = cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream
    return cupy


@lru_cache(maxsize=None)
def _functors(op, transform, epilogue, in_dtype, requested, out_dtype) -> kps.Functors:
    return kps.resolve(op, transform, epilogue, in_dtype, requested, out_dtype)


def _prepared_call(x, axis, keepdims, dtype, op, transform, epilogue):
    """The prepared call for a repeated signature, or None (first call, or arguments the key
    cannot vouch for: those take the checked path)."""
    if not (keepdims is False or keepdims is True) or not _plain_axis(axis):
        return None
    mem = x.data
    try:
        return _prepared.get((x.shape, x.strides, x.dtype, mem.ptr & 15, mem.device_id, axis, keepdims, dtype,
                              op, transform, epilogue))
    except TypeError:  # an unhashable (so invalid) argument
        return None


def _plain_axis(axis) -> bool:
    """Axis values the fast path may key on: equal keys then mean equal axes (True == 1 does not
    sneak a bool past the checks)."""
    return axis is None or type(axis) is int or (type(axis) is tuple and all(type(a) is int for a in axis))


def _check_descriptors(op, transform, epilogue) -> None:
    for name, value, kind in (("op", op, kps.ReduceOp), ("transform", transform, kps.TransformOp),
                              ("epilogue", epilogue, kps.Epilogue)):
        if not isinstance(value, kind):
            raise TypeError(f"{name}: expected a kps.{kind.__name__}, got {value!r}")


def _check_out(out, backend: str, x, shape, natural: np.dtype, out_dtype: np.dtype):
    if backend == "cpu":
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out: expected a numpy.ndarray for a NumPy input, got {type(out).__name__}")
    else:
        cupy = _cupy()
        if not isinstance(out, cupy.ndarray):
            raise TypeError(f"out: expected a cupy.ndarray for a CuPy input, got {type(out).__name__}")
        if out.device.id != x.device.id:
            raise ValueError(f"out: on device {out.device.id}, the input is on device {x.device.id}")
    dtypes.check_dtype(out_dtype, "out")
    if tuple(out.shape) != shape:
        raise ValueError(f"out: expected shape {shape}, got {tuple(out.shape)}")
    # NumPy's rule for a reduction's out=: the result must cast to it under 'same_kind'.
    if not np.can_cast(natural, out_dtype, casting="same_kind"):
        raise TypeError(f"out: cannot cast the result from {natural} to {out_dtype} under casting rule 'same_kind'")


def _byte_span(a):
    lo = hi = a.data.ptr
    for n, s in zip(a.shape, a.strides):
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + a.itemsize


def _overlaps(a, b) -> bool:
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    return a0 < b1 and b0 < a1


def reduce(x, axis=None, op=kps.ADD, transform=kps.IDENTITY, keepdims=False, dtype=None, out=None, *,
           epilogue=kps.NONE):
    """Reduce `x` over `axis` with `op`, after mapping every element with `transform` and before
    finishing every output with `epilogue`. NumPy semantics for axis, keepdims, dtype and out."""
    if out is None and type(x) is _ndarray:
        call = _prepared_call(x, axis, keepdims, dtype, op, transform, epilogue)
        if call is not None:
            return call(x)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) or _is_cupy(x):
        backend = "cpu" if isinstance(x, np.ndarray) else "gpu"
        return _reduce(backend, x, x.dtype, axis, op, transform, keepdims, dtype, out,
                       None if out is None else getattr(out, "dtype", None), epilogue)[0]
    key = None
    if out is None and interop.is_torch(x) and x.is_cuda and (keepdims is False or keepdims is True) \
            and _plain_axis(axis):
        key = interop.torch_key(x, (axis, keepdims, dtype, op, transform, epilogue))
        call = _prepared.get(key)
        if call is not None:
            return call(x)
    adapted = interop.adapt(x, out)
    with adapted.context():
        result, out_dtype = _reduce(adapted.backend, adapted.x, adapted.in_dtype, axis, op, transform, keepdims,
                                    dtype, adapted.out, adapted.out_dtype, epilogue, adapted.allocate or _cupy_alloc,
                                    key, adapted.prepare)
    return adapted.wrap(result, out_dtype)


def _is_cupy(x) -> bool:
    """A CuPy array (CuPy is imported only when the object comes from it)."""
    cupy = _cupy() if type(x).__module__.startswith("cupy") else None
    return cupy is not None and isinstance(x, cupy.ndarray)


def _cupy_alloc(shape, dtype):
    y = _cupy().empty(shape, dtype=dtypes.storage(dtype))
    return y, y


def _reduce(backend, x, in_dtype, axis, op, transform, keepdims, dtype, out, out_dtype, epilogue,
            allocate=_cupy_alloc, fast_key=None, prepare=None):
    """The checked path: validate every argument, then run. Returns (result, its dtype)."""
    in_dtype = dtypes.check_dtype(in_dtype, "x")
    _check_descriptors(op, transform, epilogue)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"keepdims: expected a bool, got {keepdims!r}")
    keepdims = bool(keepdims)
    axes = config.normalize_axis(axis, x.ndim)
    requested = None if dtype is None else dtypes.check_dtype(dtype, "dtype")
    f = _functors(op, transform, epilogue, in_dtype, requested, None)
    shape = config.result_shape(x.shape, axes, keepdims)
    if out is not None:
        _check_out(out, backend, x, shape, f.out_dtype, out_dtype)
        f = _functors(op, transform, epilogue, in_dtype, requested, dtypes.check_dtype(out_dtype, "out"))
    num_red = math.prod(x.shape[a] for a in axes)
    if num_red == 0 and not op.empty_ok:
        raise ValueError(f"zero-size array to reduction operation {op.name} which has no identity")

    if backend == "cpu":
        return numpy_backend.reduce(x, axes, keepdims, f, out), f.out_dtype
    if prepare is None and in_dtype == x.dtype:  # a plain CuPy array: later calls may take the fast path
        fast_key = (x.shape, x.strides, x.dtype, x.data.ptr & 15, x.data.device_id, axis, keepdims, dtype, op,
                    transform, epilogue)
    return _reduce_gpu(x, axes, keepdims, f, out, shape, num_red, fast_key, allocate, prepare or _GpuCall), f.out_dtype


class _GpuCall:
    """A prepared call for one input signature: allocate the result, launch (or fill, for an
    empty reduction), on the input's device and the current stream."""

    __slots__ = ("shape", "dtype", "nbytes", "launch", "fill", "device_id")

    def __init__(self, shape, dtype, launch, fill, device_id):
        dtype = dtypes.storage(dtype)
        self.shape, self.dtype, self.launch, self.fill, self.device_id = shape, dtype, launch, fill, device_id
        self.nbytes = math.prod(shape) * dtype.itemsize

    def __call__(self, x):
        if _get_device() != self.device_id:
            with _cupy().cuda.Device(self.device_id):
                return self._run(x)
        return self._run(x)

    def _run(self, x):
        # ndarray over a pool allocation: what cupy.empty does, at half its Python cost
        y = _ndarray(self.shape, self.dtype, _alloc(self.nbytes)) if self.nbytes else _cupy().empty(self.shape, self.dtype)
        if self.launch is not None:
            self.launch(x.data.ptr, y.data.ptr, _current_stream().ptr, self.device_id)
        elif self.fill is not None and y.size:
            y.fill(self.fill)
        return y


def _reduce_gpu(x, axes, keepdims, f, out, shape, num_red, fast_key, allocate, prepare):
    """Run on the GPU. `allocate(shape, result dtype)` gives (the array the kernel writes, the
    object to return): a CuPy array twice, or a CuPy view of a torch tensor and the tensor.
    `prepare(shape, result dtype, launch, fill, device)` makes the call a repeat takes."""
    cupy = _cupy()
    device_id = x.data.device_id
    if any(s % x.itemsize for s in x.strides):
        x = cupy.ascontiguousarray(x)
    with cupy.cuda.Device(device_id):
        y = result = out
        if y is None or (x.size and _overlaps(x, y)):
            y, result = allocate(shape, f.out_dtype)
        launch = fill = None
        if num_red == 0:
            fill = np.asarray(numpy_backend.empty_result(f), dtype=f.out_dtype).view(dtypes.storage(f.out_dtype))[()]
        elif y.size:
            launch = launch_for(x, y, axes, keepdims, f)
        if fill is not None and y.size:
            y.fill(fill)
        elif launch is not None:
            launch(x.data.ptr, y.data.ptr, cupy.cuda.get_current_stream().ptr, device_id)
    if out is None:
        if fast_key is not None and (launch is None or config.alignment(y.data.ptr) == 256):
            # 256: the allocators' alignment, what the fast path's fresh arrays will get
            _prepared[fast_key] = prepare(shape, f.out_dtype, launch, fill, device_id)
        return result
    if y is not out:
        out[...] = y
    return out


def _named(name: str, op, epilogue=kps.NONE, doc: str = ""):
    identity = kps.IDENTITY

    def fn(x, axis=None, keepdims=False, dtype=None, out=None):
        if out is None and type(x) is _ndarray:
            call = _prepared_call(x, axis, keepdims, dtype, op, identity, epilogue)
            if call is not None:
                return call(x)
        return reduce(x, axis, op, identity, keepdims, dtype, out, epilogue=epilogue)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"{doc}\n\nNumPy semantics: `axis` None, an int or a tuple of ints; `keepdims`; `dtype` for the"
        " result (and the accumulation); `out` of the result's shape. CuPy arrays in -> CuPy out (GPU);"
        " NumPy arrays in -> NumPy out (CPU backend)."
    )
    return fn


reduce_sum = _named("reduce_sum", kps.ADD, doc="Sum of elements over the given axes (numpy.sum).")
reduce_mean = _named("reduce_mean", kps.ADD, kps.MEAN, doc="Arithmetic mean over the given axes (numpy.mean).")
reduce_max = _named("reduce_max", kps.MAX, doc="Maximum over the given axes; NaN propagates (numpy.max).")
reduce_min = _named("reduce_min", kps.MIN, doc="Minimum over the given axes; NaN propagates (numpy.min).")
reduce_prod = _named("reduce_prod", kps.MUL, doc="Product of elements over the given axes (numpy.prod).")
reduce_all = _named("reduce_all", kps.LOGICAL_AND, doc="Whether every element is true (numpy.all).")
reduce_any = _named("reduce_any", kps.LOGICAL_OR, doc="Whether any element is true (numpy.any).")
