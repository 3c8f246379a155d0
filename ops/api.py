"""The public reductions, with NumPy's semantics.

CuPy arrays run the GPU kernels; NumPy arrays run the NumPy backend built from the same functor
descriptors; dask arrays give lazy dask arrays, reduced block by block (dask_backend.py). Argument
errors are raised before anything runs or is written, and name the argument.
"""
from __future__ import annotations

import math
import operator
from functools import lru_cache, partial

import numpy as np

import kps
from kernels import capturing, config, launch_for, look as kernels_look
from kernels.launcher import PER_THREAD_STREAM as _PER_THREAD_STREAM
from kps import cache, dtypes, precise, statistics

from . import dask_backend, interop, numpy_backend


# Bound once CuPy (or torch) has been imported: the fast path uses them without attribute lookups.
_ndarray = _alloc = _get_device = _current_stream = _stream_synchronize = _torch_tensor = None

#: (op, transform, epilogue) -> {call signature -> prepared call}. A repeated call with out=None
#: costs a signature, a lookup, one allocation and one launch. Both levels are bounded
#: (kps/cache.py); the named ops hold their own tables, which stay theirs.
_prepared = cache.Lru()


def _cupy():
    global _ndarray, _alloc, _get_device, _current_stream, _stream_synchronize
    try:
        import cupy
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    _ndarray, _alloc = cupy.ndarray, cupy.cuda.alloc
    _get_device, _current_stream = cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream
    _stream_synchronize = cupy.cuda.runtime.streamSynchronize
    return cupy


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def _functors(op, transform, epilogue, in_dtype, requested, out_dtype) -> kps.Functors:
    return kps.resolve(op, transform, epilogue, in_dtype, requested, out_dtype)


def _table(op, transform, epilogue, after=None) -> cache.Lru:
    """The prepared calls of (op, transform, epilogue): those of a named op with a look (`after`,
    ops/family.py) apart, since theirs look."""
    key = (op, transform, epilogue) if after is None else (op, transform, epilogue, after)
    table = _prepared.get(key)
    if table is None:
        return _prepared.put(key, cache.device_state(cache.Lru()))
    _prepared.touch(key)
    return table


def _signature(x, axis, keepdims, dtype):
    """The prepared-call key of a CuPy array or CUDA torch tensor and the call's arguments, or None
    (other inputs, or arguments a key cannot vouch for: True == 1 in a key, so axis and keepdims
    must have their exact types). An unhashable dtype makes an unhashable key: no lookup finds it,
    and the checked path rejects the dtype before anything is stored under it."""
    if not (keepdims is False or keepdims is True) or not (
            axis is None or type(axis) is int or (type(axis) is tuple and all(type(a) is int for a in axis))):
        return None
    kind = type(x)
    if kind is _ndarray:
        mem = x.data
        return (x.shape, x.strides, x.dtype, mem.ptr & 15, mem.device_id, axis, keepdims, dtype)
    if kind is _torch_tensor and x.is_cuda:
        return ("torch", x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() & 15, axis, keepdims, dtype)
    if _bind(x):  # the first CuPy array or torch tensor of the process: now it has a signature
        return _signature(x, axis, keepdims, dtype)
    return None


def _inputs_signature(xs, axis, keepdims, dtype):
    """The prepared-call key of a tuple of CuPy arrays (each one's shape, strides, dtype, alignment
    and device) and the call's arguments, or None. (A loop, not generators: 1.45 -> 1.05 us a
    pair on the H100's host.)"""
    head = _signature(xs[0], axis, keepdims, dtype) if xs and type(xs[0]) is _ndarray else None
    if head is None:
        return None
    rest = []
    for a in xs[1:]:
        if type(a) is not _ndarray:
            return None
        mem = a.data
        rest.append((a.shape, a.strides, a.dtype, mem.ptr & 15, mem.device_id))
    return head, tuple(rest)


def _bind(x) -> bool:
    """Bind CuPy or torch the first time one of their arrays arrives; whether `x` is now signable."""
    global _torch_tensor
    if _ndarray is None and _is_cupy(x):
        return type(x) is _ndarray
    if _torch_tensor is None and interop.is_torch(x):
        _torch_tensor = interop.tensor_class()
        return type(x) is _torch_tensor
    return False


def _check_descriptors(op, transform, epilogue) -> None:
    for name, value, kind in (("op", op, kps.ReduceOp), ("transform", transform, kps.TransformOp),
                              ("epilogue", epilogue, kps.Epilogue)):
        if not isinstance(value, kind):
            raise TypeError(f"{name}: expected a kps.{kind.__name__}, got {value!r}")
    if op.state and epilogue in (kps.NONE, kps.MEAN):
        raise TypeError(f"epilogue: {op.name} accumulates a state of fields ({', '.join(n for n, _ in op.state)}); "
                        f"give an epilogue that reads them, not {epilogue.name}")


def _check_inputs(transform, count: int, as_tuple: bool) -> None:
    """A transform reads as many arrays as `x` gives it (a tuple for several)."""
    if count == transform.inputs:
        return
    if as_tuple:
        raise ValueError(f"x: transform {transform.name} reads {transform.inputs} array(s), got a tuple of {count}")
    raise ValueError(f"x: transform {transform.name} reads {transform.inputs} arrays: pass them as a tuple")


def _check_out(out, backend: str, x, shape, natural: np.dtype, out_dtype: np.dtype, indexed: bool = False):
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
    # NumPy's rule for an arg-reduction's out=: an array of indices, which casts safely to int64.
    if indexed and not np.can_cast(out_dtype, np.int64, casting="safe"):
        raise TypeError(f"out: an index result needs an integer array that casts safely to int64, got {out_dtype}")
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
    finishing every output with `epilogue`. NumPy semantics for axis, keepdims, dtype and out.

    For a transform of several arrays (`x0`, `x1`, ... in its CUDA text) `x` is a tuple of them,
    NumPy arrays or CuPy arrays, broadcast together as NumPy does; one pass reads them all."""
    if isinstance(x, tuple):
        if out is None:
            sig = _inputs_signature(x, axis, keepdims, dtype)
            try:
                table = _prepared.get((op, transform, epilogue), {})
                call = table.get(sig)
            except TypeError:  # an unhashable descriptor or dtype: the checked path says which
                call = None
            if call is not None:
                result = call(x)
                table.touch(sig)
                return result
        return _reduce_inputs(x, axis, op, transform, keepdims, dtype, out, epilogue)
    table = None
    if out is None:
        try:
            table = _prepared.get((op, transform, epilogue))
        except TypeError:  # an unhashable (so invalid) descriptor: the checked path says which
            pass
    return _run(x, axis, op, transform, keepdims, dtype, out, epilogue, table)


def _run(x, axis, op, transform, keepdims, dtype, out, epilogue, table, twin=None, after=None):
    """A prepared call when `table` has one for this signature, else the checked path (which
    prepares the next call). `twin`: the named op's torch twin (interop.TORCH_TWINS), whose result
    dtype a torch tensor gets. `after(result)`: a look at the result before it is returned (ops/family.py),
    which a prepared call on CuPy arrays has the kernel make instead (`_prepare_gpu`)."""
    sig = _signature(x, axis, keepdims, dtype) if out is None else None
    if table is not None:
        try:
            call = table.get(sig)
        except TypeError:  # an unhashable dtype
            call = None
        if call is not None:
            result = call(x)  # first: what the GPU waits for comes before any bookkeeping
            table.touch(sig)  # mark it used (kps/cache.py)
            return result if after is None or getattr(call, "looks", False) else after(result)
    result = _checked(x, axis, op, transform, keepdims, dtype, out, epilogue, sig, twin, after)
    return result if after is None else after(result)


def _checked(x, axis, op, transform, keepdims, dtype, out, epilogue, sig, twin, after):
    """`_run`'s checked path, on any backend."""
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) or _is_cupy(x):
        backend = "cpu" if isinstance(x, np.ndarray) else "gpu"
        return _reduce(backend, x, x.dtype, axis, op, transform, keepdims, dtype, out,
                       None if out is None else getattr(out, "dtype", None), epilogue, fast_key=sig, after=after)[0]
    if dask_backend.is_dask(x):
        dask_backend.check_blocks(x)
        return _reduce("dask", x, x.dtype, axis, op, transform, keepdims, dtype, out, None, epilogue)[0]
    adapted = interop.adapt(x, out)
    if twin is not None and dtype is None and interop.is_torch(x):
        dtype = _torch_rule(twin, x, adapted.in_dtype, op, transform, epilogue)
    with adapted.context():
        result, out_dtype = _reduce(adapted.backend, adapted.x, adapted.in_dtype, axis, op, transform, keepdims,
                                    dtype, adapted.out, adapted.out_dtype, epilogue, adapted.allocate or _cupy_alloc,
                                    sig if adapted.prepare else None, adapted.prepare, after=after)
    if isinstance(result, tuple):  # an epilogue of several results
        return tuple(adapted.wrap(r, out_dtype) for r in result)
    return adapted.wrap(result, out_dtype)


#: Named reduction -> (its torch twin, the arguments its torch custom op takes after `x, axis,
#: keepdims`), filled by the builders below for every op with a twin; ops/torch_ops.py registers them.
_TORCH_TWINS = {}


def _twin(name: str, twin, extra: str):
    """Record a named op's torch twin; returns the twin."""
    if twin is not None:
        _TORCH_TWINS[name] = (twin, extra)
    return twin


def _torch_graph(name: str, x) -> bool:
    """Whether this call goes through the op's torch custom op: a torch tensor while torch.compile
    traces the call, or where autograd records it (the custom op carries the fake shape and dtype,
    and the gradient). Never a CuPy or NumPy array: the caller tests `type(x) is not _ndarray` first."""
    if name not in _TORCH_TWINS or not interop.is_torch(x):
        return False
    torch = interop.torch_module()
    return torch.compiler.is_compiling() or (x.requires_grad and torch.is_grad_enabled())


def _torch_op(name: str, x, axis, keepdims, out, **kwargs):
    from . import torch_ops

    return torch_ops.call(name, x, axis, keepdims, out, **kwargs)


def _torch_rule(twin, x, in_dtype, op, transform, epilogue):
    """`dtype=` for a torch tensor: torch's result dtype where it differs from NumPy's (where the two
    agree, None keeps the accumulation NumPy's rule picks: float32 variances in float64)."""
    want = interop.torch_result_dtype(twin, x.dtype)
    natural = _functors(op, transform, epilogue, dtypes.check_dtype(in_dtype, "x"), None, None).out_dtype
    return None if want == natural else want


def _reduce_inputs(xs, axis, op, transform, keepdims, dtype, out, epilogue):
    """A transform of several arrays: broadcast them together (NumPy's rules), then reduce in one
    pass that reads every input at the same element offsets."""
    _check_descriptors(op, transform, epilogue)
    _check_inputs(transform, len(xs), as_tuple=True)
    xs = tuple(np.asarray(a) if isinstance(a, np.generic) else a for a in xs)
    on_cpu = all(isinstance(a, np.ndarray) for a in xs)
    if not on_cpu and not all(_is_cupy(a) for a in xs):
        raise TypeError("x: expected a tuple of NumPy arrays or of CuPy arrays (one kind), got "
                        + ", ".join(type(a).__name__ for a in xs))
    in_dtypes = tuple(dtypes.check_dtype(a.dtype, f"x[{k}]") for k, a in enumerate(xs))
    try:
        shape = np.broadcast_shapes(*(a.shape for a in xs))
    except ValueError:
        raise ValueError(f"x: the inputs' shapes {', '.join(str(a.shape) for a in xs)} do not broadcast together") \
            from None
    if on_cpu:
        views = tuple(np.broadcast_to(a, shape) for a in xs)
        return _reduce("cpu", views[0], in_dtypes, axis, op, transform, keepdims, dtype, out,
                       None if out is None else getattr(out, "dtype", None), epilogue, more=views[1:])[0]
    cache.check_process()
    cupy = _cupy()
    device_id = xs[0].data.device_id
    if any(a.data.device_id != device_id for a in xs):
        raise ValueError(f"x: the inputs are on devices {[a.data.device_id for a in xs]}; give them one device")
    fast_key = _inputs_signature(xs, axis, keepdims, dtype) if out is None else None
    with cupy.cuda.Device(device_id):
        views = [cupy.broadcast_to(a, shape) for a in xs]
        layouts = {tuple(s // v.itemsize for s in v.strides) for v in views}
        if len(layouts) > 1 or any(s % v.itemsize for v in views for s in v.strides):
            # one plan reads every input at the same element offsets: give them one layout
            views = [cupy.ascontiguousarray(v) for v in views]
            fast_key = None  # a repeat would launch the copies' plan on the originals
    return _reduce("gpu", views[0], in_dtypes, axis, op, transform, keepdims, dtype, out,
                   None if out is None else getattr(out, "dtype", None), epilogue, fast_key=fast_key,
                   prepare=_prepare_inputs, more=tuple(views[1:]))[0]


def _is_cupy(x) -> bool:
    """A CuPy array (CuPy is imported only when the object comes from it)."""
    cupy = _cupy() if type(x).__module__.startswith("cupy") else None
    return cupy is not None and isinstance(x, cupy.ndarray)


def _cupy_alloc(shape, dtype):
    y = _cupy().empty(shape, dtype=dtypes.storage(dtype))
    return y, y


def _reduce(backend, x, in_dtype, axis, op, transform, keepdims, dtype, out, out_dtype, epilogue,
            allocate=_cupy_alloc, fast_key=None, prepare=None, more=(), after=None):
    """The checked path: validate every argument, then run. Returns (result, its dtype). `more`:
    a transform's further inputs, of x's shape and strides (`in_dtype` then the tuple of dtypes).
    `after`: the named op's look (`_run`), which the calls it prepares on CuPy arrays make in the kernel."""
    in_dtype = in_dtype if more else dtypes.check_dtype(in_dtype, "x")
    _check_descriptors(op, transform, epilogue)
    if not more:  # (a tuple of inputs was checked on its way in)
        _check_inputs(transform, 1, as_tuple=False)
    if not isinstance(keepdims, (bool, np.bool_)):
        raise TypeError(f"keepdims: expected a bool, got {keepdims!r}")
    keepdims = bool(keepdims)
    axes = config.normalize_axis(axis, x.ndim)
    requested = None if dtype is None else dtypes.check_dtype(dtype, "dtype")
    f = _functors(op, transform, epilogue, in_dtype, requested, None)
    shape = config.result_shape(x.shape, axes, keepdims)
    if backend == "dask" and out is not None:
        raise TypeError("out: a dask array's reduction is lazy (a dask array); out= is not supported for it")
    if backend == "dask" and any(math.isnan(n) for n in x.shape):
        raise ValueError("x: a dask array of unknown chunk sizes; call x.compute_chunk_sizes() first")
    if out is not None and epilogue.outputs > 1:
        raise TypeError(f"out: epilogue {epilogue.name} gives {epilogue.outputs} results per output; out= takes one")
    if out is not None:
        _check_out(out, backend, x, shape, f.out_dtype, out_dtype, op.indexed)
        f = _functors(op, transform, epilogue, in_dtype, requested, dtypes.check_dtype(out_dtype, "out"))
    num_red = math.prod(x.shape[a] for a in axes)
    if num_red == 0 and not op.empty_ok:
        if op.indexed:  # NumPy's words for argmax and argmin
            raise ValueError(f"x: attempt to get {op.name} of an empty sequence")
        raise ValueError(f"zero-size array to reduction operation {op.name} which has no identity")

    if backend == "cpu":
        return numpy_backend.reduce((x, *more) if more else x, axes, keepdims, f, out), f.out_dtype
    if backend == "dask":
        return dask_backend.reduce(x, axes, keepdims, f), f.out_dtype
    table = _table(op, transform, epilogue, after) if fast_key is not None else None
    if prepare is None:
        prepare = _prepare_gpu if after is None else partial(_prepare_gpu, look=after)
    return _reduce_gpu(x, axes, keepdims, f, out, shape, num_red, table, fast_key, allocate, prepare, more), f.out_dtype


class _GpuFill:
    """A prepared call with nothing to reduce: an empty result, or one filled with the reduction's
    identity (a reduction over a zero-size axis)."""

    __slots__ = ("shape", "dtype", "fill", "device_id")

    def __init__(self, shape, dtype, fill, device_id):
        self.shape, self.dtype, self.fill, self.device_id = shape, dtype, fill, device_id

    def __call__(self, x):
        cupy = _cupy()
        with cupy.cuda.Device(self.device_id):
            y = cupy.empty(self.shape, self.dtype)
            _fill(y, self.fill)
        return y


def _fill(y, fill) -> None:
    """Fill `y` with an empty reduction's value: a scalar, or one per result (the last dim)."""
    if fill is None or not y.size:
        return
    if np.ndim(fill):
        y[...] = _cupy().asarray(fill)
    else:
        y.fill(fill)


#: Results of at most this many bytes are allocated one call ahead: a prepared call launches into
#: the buffer its previous call set aside on the same stream and allocates the next one after the
#: launch, so the pool's allocation (1.3 us on the H100's host) leaves the time before the kernel
#: starts. It bounds what the spares hold: one per prepared call (an Lru table's entry) and stream,
#: for at most SPARE_STREAMS streams a call.
SPARE_RESULT_BYTES = 64 * 1024
SPARE_STREAMS = 4


def _prepare_gpu(shape, dtype, launch, fill, device_id, several=False, look=None):
    """The prepared call for one input signature: allocate the result and launch, on the input's
    device and the current stream. A closure: the cheapest call Python has. `several`: the call
    takes a tuple of CuPy arrays (a transform of several inputs); their broadcast views share their
    addresses, so the launch takes the arrays' own. `look`: a named op's look (ops/family.py), which
    the kernel then makes as it writes the results (`_prepare_looked`)."""
    if look is not None and launch is not None and kernels_look.bit_rule(look.kind, dtype) is not None:
        return _prepare_looked(shape, dtype, launch, device_id, look)
    dtype = dtypes.storage(dtype)
    if launch is None:
        return _GpuFill(shape, dtype, fill, device_id)
    nbytes, run = math.prod(shape) * dtype.itemsize, launch.run
    # stream -> the next result's memory, allocated while that stream was current (CuPy's pool
    # hands a block back to the stream it was allocated on). The per-thread default stream names
    # a different stream in every thread: it gets no spare.
    spares = {} if nbytes <= SPARE_RESULT_BYTES else None

    def call(x):
        if _get_device() != device_id:
            with _cupy().cuda.Device(device_id):
                return call(x)
        stream = _current_stream().ptr
        mem = spares.pop(stream, None) if spares is not None else None  # (a pop: one thread takes it)
        if mem is None:
            mem = _alloc(nbytes)
        if several:
            run(x[0].data.ptr, mem.ptr, stream, device_id, [a.data.ptr for a in x[1:]])
        else:
            run(x.data.ptr, mem.ptr, stream, device_id)
        # After the launch: the next call's memory, and an ndarray over this one (0.9 us).
        if spares is not None and stream != _PER_THREAD_STREAM:
            if len(spares) >= SPARE_STREAMS:
                spares.clear()
            spares[stream] = _alloc(nbytes)
        return _ndarray(shape, dtype, mem)

    return call


def _prepare_looked(shape, dtype, launch, device_id, look):
    """The prepared call of a named op with a look: the kernel looks at the results as it writes
    them (kps::Look, kernels/look.py), the call waits for the stream and then does what the look
    asks where one matched (`look.found()`: NumPy's warning or error). Inside a CUDA graph capture,
    whose results hold no values yet, the plain call: nothing is looked at. (H100, one call, the
    look kernel before: nanmean over tiny_32x32 33.0 -> 25.2 us, nanargmax 42.2 -> 25.1.)"""
    plain = _prepare_gpu(shape, dtype, launch, None, device_id)
    kind, found, run, result_dtype = look.kind, look.found, launch.run, dtype
    nbytes, dtype = math.prod(shape) * dtype.itemsize, dtypes.storage(dtype)

    def call(x):
        if _get_device() != device_id:
            with _cupy().cuda.Device(device_id):
                return call(x)
        stream = _current_stream().ptr
        if capturing(stream):
            return plain(x)
        mem = _alloc(nbytes)
        run(x.data.ptr, mem.ptr, stream, device_id, (), kernels_look.arm(kind, result_dtype, device_id))
        y = _ndarray(shape, dtype, mem)
        _stream_synchronize(stream)
        if kernels_look.matched():
            found()
        return y

    call.looks = True
    return call


def _prepare_inputs(shape, dtype, launch, fill, device_id):
    """The prepared call of a transform of several CuPy arrays (see `_prepare_gpu`)."""
    return _prepare_gpu(shape, dtype, launch, fill, device_id, several=True)


def _prepare_results(shape, dtype, launch, fill, device_id, per_output: int):
    """The prepared call of an epilogue of several results: the results side by side, a view each."""
    whole = _prepare_gpu(shape + (per_output,), dtype, launch, fill, device_id)

    def call(x):
        y = whole(x)
        return tuple(y[..., k] for k in range(per_output))

    return call


def _reduce_gpu(x, axes, keepdims, f, out, shape, num_red, table, fast_key, allocate, prepare, more=()):
    """Run on the GPU. `allocate(shape, result dtype)` gives (the array the kernel writes, the
    object to return): a CuPy array twice, or a CuPy view of a torch tensor and the tensor.
    `prepare(shape, result dtype, launch, fill, device)` makes the call a repeat with `fast_key`
    takes, kept in `table`. `more`: a transform's further inputs, laid out as x."""
    cache.check_process()
    cupy = _cupy()
    device_id = x.data.device_id
    per_output = f.epilogue.outputs
    if any(s % x.itemsize for s in x.strides):
        x = cupy.ascontiguousarray(x)
        fast_key = None  # a repeat would launch the copy's plan on the original
    with cupy.cuda.Device(device_id):
        stream_ptr = cupy.cuda.get_current_stream().ptr
        in_capture = capturing(stream_ptr)
        if not in_capture:
            # The device's primary context current in this thread, whose first CUDA call this may be:
            # the launch cache's driver calls need it (a thread reaching a kernel another thread loaded
            # got CUDA_ERROR_INVALID_CONTEXT); Device() skips cudaSetDevice when the id is current.
            cupy.cuda.runtime.setDevice(device_id)
        y = result = out
        if y is None or (x.size and any(_overlaps(a, y) for a in (x, *more))):
            # several results per output lie side by side: the last dim
            y, result = allocate(shape + ((per_output,) if per_output > 1 else ()), f.out_dtype)
        launch = fill = None
        if num_red == 0:
            fill = np.asarray(numpy_backend.empty_result(f), dtype=f.out_dtype).view(dtypes.storage(f.out_dtype))[()]
        elif y.size:
            launch = launch_for(x, y[..., 0] if per_output > 1 else y, axes, keepdims, f, more, in_capture)
        _fill(y, fill)
        if launch is not None:
            launch(x.data.ptr, y.data.ptr, stream_ptr, device_id, [a.data.ptr for a in more])
    if out is None:
        if fast_key is not None and (launch is None or config.alignment(y.data.ptr) == 256):
            # 256: the allocators' alignment, what the fast path's fresh arrays will get
            if per_output == 1:
                table.put(fast_key, prepare(shape, f.out_dtype, launch, fill, device_id))
            elif prepare is _prepare_gpu:  # CuPy in: several results prepared too
                table.put(fast_key, _prepare_results(shape, f.out_dtype, launch, fill, device_id, per_output))
        return result if per_output == 1 else tuple(result[..., k] for k in range(per_output))
    if y is not out:
        out[...] = y
    return out


def _public(fn, name: str, doc: str):
    """`fn` under its public name and docstring."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _named(name: str, op, epilogue=kps.NONE, doc: str = "", transform=kps.IDENTITY, after=None, twin=None):
    """A named reduction of the sum's signature. `after(result)`: a look at the result before it is
    returned (NumPy's warnings for the NaN-skipping ops, ops/family.py); `twin`: its torch twin."""
    table = _table(op, transform, epilogue, after)
    twin = _twin(name, twin, ", ScalarType? dtype")

    def fn(x, axis=None, keepdims=False, dtype=None, out=None):
        if type(x) is not _ndarray and _torch_graph(name, x):
            return _torch_op(name, x, axis, keepdims, out, dtype=dtype)
        return _run(x, axis, op, transform, keepdims, dtype, out, epilogue, table if out is None else None, twin,
                    after)

    return _public(fn, name, f"{doc}\n\nNumPy semantics: `axis` None, an int or a tuple of ints; `keepdims`; `dtype`"
                   " for the result (and the accumulation); `out` of the result's shape. CuPy arrays in -> CuPy out"
                   " (GPU); NumPy arrays in -> NumPy out (CPU backend).")


def _summed(name: str, epilogue, precise_epilogue, doc: str, twin: str):
    """sum and mean, with `precise=True` for the compensated state (kps/precise.py)."""
    op, identity, precise_op = kps.ADD, kps.IDENTITY, precise.NEUMAIER
    table, precise_table = _table(op, identity, epilogue), _table(precise_op, identity, precise_epilogue)
    twin = _twin(name, twin, ", ScalarType? dtype")

    def fn(x, axis=None, keepdims=False, dtype=None, out=None, precise=False):
        if precise is False and type(x) is not _ndarray and _torch_graph(name, x):
            return _torch_op(name, x, axis, keepdims, out, dtype=dtype)
        if precise is True:
            return _run(x, axis, precise_op, identity, keepdims, dtype, out, precise_epilogue,
                        precise_table if out is None else None, twin)
        if precise is not False:
            raise TypeError(f"precise: expected a bool, got {precise!r}")
        return _run(x, axis, op, identity, keepdims, dtype, out, epilogue, table if out is None else None, twin)

    return _public(fn, name, f"{doc}\n\nNumPy semantics: `axis` None, an int or a tuple of ints; `keepdims`; `dtype`"
                   " for the result (and the accumulation); `out` of the result's shape. `precise=True` accumulates"
                   " floats in float64 with compensation (Neumaier) in every thread and every merge: float32 results"
                   " are the correctly rounded sum where the data cancel or mix magnitudes.")


reduce_sum = _summed("reduce_sum", kps.NONE, precise.PRECISE_SUM, "Sum of elements over the given axes (numpy.sum).",
                     "sum")
reduce_mean = _summed("reduce_mean", kps.MEAN, precise.PRECISE_MEAN,
                      "Arithmetic mean over the given axes (numpy.mean).", "mean")
reduce_max = _named("reduce_max", kps.MAX, doc="Maximum over the given axes; NaN propagates (numpy.max).", twin="amax")
reduce_min = _named("reduce_min", kps.MIN, doc="Minimum over the given axes; NaN propagates (numpy.min).", twin="amin")
reduce_prod = _named("reduce_prod", kps.MUL, doc="Product of elements over the given axes (numpy.prod).", twin="prod")
reduce_all = _named("reduce_all", kps.LOGICAL_AND, doc="Whether every element is true (numpy.all).", twin="all")
reduce_any = _named("reduce_any", kps.LOGICAL_OR, doc="Whether any element is true (numpy.any).", twin="any")


def _check_ddof(ddof) -> int:
    if isinstance(ddof, (bool, np.bool_)):
        raise TypeError(f"ddof: expected a non-negative integer, got {ddof!r}")
    try:
        ddof = operator.index(ddof)
    except TypeError:
        raise TypeError(f"ddof: expected a non-negative integer, got {ddof!r}") from None
    if ddof < 0:
        raise ValueError(f"ddof: expected a non-negative integer, got {ddof}")
    return ddof


def _welford(name: str, epilogue_for, doc: str, op=statistics.WELFORD, after=None, twin=None):
    """A named reduction of a Welford state with `ddof`: `epilogue_for(ddof, x)` picks the epilogue."""
    identity = kps.IDENTITY
    twin = _twin(name, twin, ", ScalarType? dtype, int ddof")

    def fn(x, axis=None, keepdims=False, dtype=None, out=None, ddof=0):
        if type(x) is not _ndarray and _torch_graph(name, x):
            return _torch_op(name, x, axis, keepdims, out, dtype=dtype, ddof=_check_ddof(ddof))
        epilogue = epilogue_for(_check_ddof(ddof), x)
        return _run(x, axis, op, identity, keepdims, dtype, out, epilogue,
                    _table(op, identity, epilogue, after) if out is None else None, twin, after)

    return _public(fn, name, doc)


_WELFORD_DOC = (
    "\n\nOne pass over the data (kps.WELFORD: the count and the sums of the deviations from a shift taken"
    " among the data, and of their squares), so data far from zero keep their digits. The divisor is"
    " max(n - ddof, 0), as in NumPy: ddof >= n gives inf (NaN where every value is equal). Ints and bool give"
    " float64; float16 accumulates in float32. Otherwise the signature and semantics of the other ops, plus `ddof`.")


def _arg(name: str, op, doc: str, after=None, twin=None):
    """A named arg-reduction: `(x, axis=None, keepdims=False, out=None)`, int64 indices."""
    identity, epilogue = kps.IDENTITY, kps.INDEX
    table = _table(op, identity, epilogue, after)
    twin = _twin(name, twin, "")

    def fn(x, axis=None, keepdims=False, out=None):
        if type(x) is not _ndarray and _torch_graph(name, x):
            return _torch_op(name, x, axis, keepdims, out)
        return _run(x, axis, op, identity, keepdims, None, out, epilogue, table if out is None else None, twin, after)

    return _public(fn, name, doc)


_ARG_DOC = (
    "\n\nNumPy semantics (int64 indices; of equal values the first wins; a NaN beats every number, the first NaN"
    " wins; an empty reduced range raises ValueError; `out` an integer array) with `axis` None (the index into"
    " the flattened array), an int, or a tuple of ints: then the index into the reduced axes flattened in C"
    " order, as `numpy.unravel_index(i, [x.shape[a] for a in axes])` unravels it. One pass: each element's"
    " index travels with its value.")


reduce_argmax = _arg("reduce_argmax", kps.ARGMAX,
                     "Index of the largest element over the given axes (numpy.argmax)." + _ARG_DOC, twin="argmax")
reduce_argmin = _arg("reduce_argmin", kps.ARGMIN,
                     "Index of the smallest element over the given axes (numpy.argmin)." + _ARG_DOC, twin="argmin")

def reduce_mean_var(x, axis=None, keepdims=False, dtype=None, ddof=0):
    """The mean and the variance over the given axes from one read of `x` (batch-norm statistics):
    `(mean, var)`, each what `numpy.mean` and `numpy.var(ddof=ddof)` give (torch.var_mean gives them
    the other way round). One pass of `kps.WELFORD`, as `reduce_var`; on the GPU the two results of an output
    are written side by side and returned as views. No `out=`."""
    op, identity, epilogue = statistics.WELFORD, kps.IDENTITY, statistics.mean_and_variance(_check_ddof(ddof))
    return _run(x, axis, op, identity, keepdims, dtype, None, epilogue, _table(op, identity, epilogue), "var_mean")


reduce_var = _welford("reduce_var", lambda ddof, x: statistics.variance(ddof),
                      "Variance over the given axes (numpy.var)." + _WELFORD_DOC, twin="var")
reduce_std = _welford("reduce_std", lambda ddof, x: statistics.std(ddof),
                      "Standard deviation over the given axes (numpy.std)." + _WELFORD_DOC, twin="std")
reduce_logsumexp = _named(
    "reduce_logsumexp", statistics.LOGSUMEXP, statistics.LOG_OF_SUM,
    doc="log(sum(exp(x))) over the given axes in one pass (scipy.special.logsumexp): a running maximum"
        " and a sum rescaled to it, so values of 1e4 do not overflow; -inf everywhere (or nothing) gives"
        " -inf, +inf gives inf, NaN gives NaN. Ints and bool give float64.", twin="logsumexp")
