"""The GPU backend: CuPy arrays (and CUDA torch tensors, through ops/interop.py) reduced by the
kernels (kernels/), and the prepared calls that make a repeated call cheap.

`run(call, x)` runs a checked call (ops/call.py) and, for a call without `out=`, keeps a prepared
call for its signature (`signature`) in the reduction's table (`table`): the next call with that
signature is a lookup and one launch (ops/dispatch.py), no checks, no planning.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from kernels import capturing, config, launch_for, look as kernels_look
from kernels.launcher import PER_THREAD_STREAM as _PER_THREAD_STREAM
from kps import cache, dtypes

from . import interop, numpy_backend
from .call import Call

# Bound once CuPy (or torch) has been imported: the fast path uses them without attribute lookups.
ndarray = _alloc = _get_device = _current_stream = _stream_synchronize = _torch_tensor = None

#: (op, transform, epilogue) -> {call signature -> prepared call}. A repeated call with out=None
#: costs a signature, a lookup, one allocation and one launch. Both levels are bounded
#: (kps/cache.py); the named ops hold their own tables, which stay theirs.
prepared = cache.Lru()


def cupy_module():
    """CuPy (None without it), its fast path's names bound."""
    global ndarray, _alloc, _get_device, _current_stream, _stream_synchronize
    try:
        import cupy
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    ndarray, _alloc = cupy.ndarray, cupy.cuda.alloc
    _get_device, _current_stream = cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream
    _stream_synchronize = cupy.cuda.runtime.streamSynchronize
    return cupy


def table(key) -> cache.Lru:
    """The prepared calls of a reduction (`Reduction.key`, ops/call.py: its descriptors, and a named
    op's look apart, since its calls look), made on first use and marked used."""
    found = prepared.get(key)
    if found is None:
        return prepared.put(key, cache.device_state(cache.Lru()))
    prepared.touch(key)
    return found


def signature(x, axis, keepdims, dtype):
    """The prepared-call key of a CuPy array or CUDA torch tensor and the call's arguments, or None
    (other inputs, or arguments a key cannot vouch for: True == 1 in a key, so axis and keepdims
    must have their exact types). An unhashable dtype makes an unhashable key: no lookup finds it,
    and the checked path rejects the dtype before anything is stored under it."""
    if not (keepdims is False or keepdims is True) or not (
            axis is None or type(axis) is int or (type(axis) is tuple and all(type(a) is int for a in axis))):
        return None
    kind = type(x)
    if kind is ndarray:
        mem = x.data
        return (x.shape, x.strides, x.dtype, mem.ptr & 15, mem.device_id, axis, keepdims, dtype)
    if kind is _torch_tensor and x.is_cuda:
        if x.is_conj() or x.is_neg():  # a lazy view: the checked path reads it resolved (ops/interop.py)
            return None
        return ("torch", x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() & 15, axis, keepdims, dtype)
    if _bind(x):  # the first CuPy array or torch tensor of the process: now it has a signature
        return signature(x, axis, keepdims, dtype)
    return None


def inputs_signature(xs, axis, keepdims, dtype):
    """The prepared-call key of a tuple of CuPy arrays (each one's shape, strides, dtype, alignment
    and device) and the call's arguments, or None. (A loop, not generators: 1.45 -> 1.05 us a
    pair on the H100's host.)"""
    head = signature(xs[0], axis, keepdims, dtype) if xs and type(xs[0]) is ndarray else None
    if head is None:
        return None
    rest = []
    for a in xs[1:]:
        if type(a) is not ndarray:
            return None
        mem = a.data
        rest.append((a.shape, a.strides, a.dtype, mem.ptr & 15, mem.device_id))
    return head, tuple(rest)


def _bind(x) -> bool:
    """Bind CuPy or torch the first time one of their arrays arrives; whether `x` is now signable."""
    global _torch_tensor
    if ndarray is None and is_cupy(x):
        return type(x) is ndarray
    if _torch_tensor is None and interop.is_torch(x):
        _torch_tensor = interop.tensor_class()
        return type(x) is _torch_tensor
    return False


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


def is_cupy(x) -> bool:
    """A CuPy array (CuPy is imported only when the object comes from it)."""
    cupy = cupy_module() if type(x).__module__.startswith("cupy") else None
    return cupy is not None and isinstance(x, cupy.ndarray)


def cupy_alloc(shape, dtype):
    """The default `allocate` of `run`: a CuPy array, written and returned."""
    y = cupy_module().empty(shape, dtype=dtypes.storage(dtype))
    return y, y


class _GpuFill:
    """A prepared call with nothing to reduce: an empty result, or one filled with the reduction's
    identity (a reduction over a zero-size axis)."""

    __slots__ = ("shape", "dtype", "fill", "device_id")

    def __init__(self, shape, dtype, fill, device_id):
        self.shape, self.dtype, self.fill, self.device_id = shape, dtype, fill, device_id

    def __call__(self, x):
        cupy = cupy_module()
        with cupy.cuda.Device(self.device_id):
            y = cupy.empty(self.shape, self.dtype)
            _fill(y, self.fill)
        return y


def _fill(y, fill) -> None:
    """Fill `y` with an empty reduction's value: a scalar, or one per result (the last dim)."""
    if fill is None or not y.size:
        return
    if np.ndim(fill):
        y[...] = cupy_module().asarray(fill)
    else:
        y.fill(fill)


#: Results allocated one call ahead (ops/interop.py says why), by size and streams a call.
SPARE_RESULT_BYTES, SPARE_STREAMS = interop.SPARE_RESULT_BYTES, interop.SPARE_STREAMS


def prepare_call(shape, dtype, launch, fill, device_id, several=False, look=None, axes=()):
    """The prepared call for one input signature: allocate the result and launch, on the input's
    device and the current stream. A closure: the cheapest call Python has. `several`: the call
    takes a tuple of CuPy arrays (a transform of several inputs); their broadcast views share their
    addresses, so the launch takes the arrays' own. `look`: a named op's look (ops/looks.py), which
    the kernel then makes as it writes the results (`_prepare_looked`), and which is told the
    reduced `axes` where one matched."""
    if look is not None and launch is not None and kernels_look.in_kernel(look.kind, dtype):
        return _prepare_looked(shape, dtype, launch, device_id, look, axes)
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
            with cupy_module().cuda.Device(device_id):
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
        return ndarray(shape, dtype, mem)

    return call


def _prepare_looked(shape, dtype, launch, device_id, look, axes):
    """The prepared call of a named op with a look: the kernel looks at the results as it writes
    them (kps::Look, kernels/look.py), the call waits for the stream and then does what the look
    asks where one matched (`look.found(x, axes)`: NumPy's warning or error). Inside a CUDA graph
    capture, whose results hold no values yet, the plain call: nothing is looked at. (H100, one call, the
    look kernel before: nanmean over tiny_32x32 33.0 -> 25.2 us, nanargmax 42.2 -> 25.1.)"""
    plain = prepare_call(shape, dtype, launch, None, device_id)
    kind, found, run, result_dtype = look.kind, look.found, launch.run, dtype
    nbytes, dtype = math.prod(shape) * dtype.itemsize, dtypes.storage(dtype)

    def call(x):
        if _get_device() != device_id:
            with cupy_module().cuda.Device(device_id):
                return call(x)
        stream = _current_stream().ptr
        if capturing(stream):
            return plain(x)
        mem = _alloc(nbytes)
        run(x.data.ptr, mem.ptr, stream, device_id, (), kernels_look.arm(kind, result_dtype, device_id))
        y = ndarray(shape, dtype, mem)
        _stream_synchronize(stream)
        if kernels_look.matched():
            found(x, axes)
        return y

    call.looks = True
    return call


def prepare_inputs(shape, dtype, launch, fill, device_id):
    """The prepared call of a transform of several CuPy arrays (see `prepare_call`)."""
    return prepare_call(shape, dtype, launch, fill, device_id, several=True)


def _prepare_results(prepare, shape, dtype, launch, fill, device_id, per_output: int):
    """The prepared call of an epilogue of several results: the results side by side (`prepare`'s
    call of them all: a CuPy array, or a torch tensor, ops/interop.py's `prepare_torch`), a view each."""
    whole = prepare(shape + (per_output,), dtype, launch, fill, device_id)

    def call(x):
        y = whole(x)
        return tuple(y[..., k] for k in range(per_output))

    return call


def run(call: Call, x, key=None, allocate=None, prepare=None, calls=None):
    """Run a checked call on the GPU: `x` a CuPy array, or a tuple of them of one layout for a
    transform of several inputs (`broadcast`). With `key` (the call's `signature`, out=None), keep
    the prepared call a repeat takes in the reduction's `table`. `allocate(shape, result dtype)`
    gives (the array the kernel writes, the object to return): a CuPy array twice (default), or a
    CuPy view of a torch tensor and the tensor. `prepare(shape, result dtype, launch, fill, device)`
    makes that prepared call (default: `prepare_call`, a look's kernel for a named op's look).
    `calls`: the table to keep it in, where the caller holds its own (a named op: ops/build.py)."""
    if prepare is None:  # (a tuple of one array too: its prepared call takes the tuple)
        look = call.reduction.look
        several = isinstance(x, tuple)
        prepare = prepare_inputs if several else prepare_call
        if look is not None and not several:
            prepare = partial(prepare_call, look=look, axes=call.axes)
    if key is None:
        calls = None
    elif calls is None:
        calls = table(call.reduction.key)
    return _run(call, x, calls, key, allocate or cupy_alloc, prepare)


def _aligned_copy(x):
    """An array off its own size's grid (complex128 at 8 bytes, which NumPy allows and
    kps::complex<double>'s 16-byte loads do not) copied onto it as words its address allows: each
    element as a row of unsigned words of that width, so the copy (CuPy's own kernel, which would
    load the elements whole and fault there too) reads only aligned words."""
    cupy = cupy_module()
    width = min(x.itemsize, 8, x.data.ptr & -x.data.ptr)  # the address's alignment: 1-8 bytes here
    word = np.dtype(f"uint{8 * width}")
    shape = x.shape + (x.itemsize // width,)
    copy = cupy.empty(shape, word)
    copy[...] = cupy.ndarray(shape, word, x.data, x.strides + (width,))
    return copy.view(x.dtype).reshape(x.shape)


def _run(call: Call, x, calls, key, allocate, prepare):
    """`run`'s launch, and the prepared call it keeps under `key` in `calls` (a table, or None)."""
    more = ()
    if isinstance(x, tuple):
        x, more = x[0], x[1:]
    cache.check_process()
    cupy = cupy_module()
    f, out, shape = call.f, call.out, call.shape
    device_id = x.data.device_id
    per_output = f.epilogue.outputs
    if any(s % x.itemsize for s in x.strides):
        x = cupy.ascontiguousarray(x)
        key = None  # a repeat would launch the copy's plan on the original
    elif x.data.ptr % x.itemsize:  # elements off their own size: complex128 at 8 bytes, which NumPy
        x = _aligned_copy(x)       # allows and kps::complex<double>'s 16-byte loads do not
        key = None
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
        if call.num_red == 0:
            fill = np.asarray(numpy_backend.empty_result(f), dtype=f.out_dtype).view(dtypes.storage(f.out_dtype))[()]
        elif y.size:
            launch = launch_for(x, y[..., 0] if per_output > 1 else y, call.axes, call.keepdims, f, more, in_capture)
        _fill(y, fill)
        if launch is not None:
            launch(x.data.ptr, y.data.ptr, stream_ptr, device_id, [a.data.ptr for a in more])
    if out is None:
        if key is not None and (launch is None or config.alignment(y.data.ptr) == 256):
            # 256: the allocators' alignment, what the fast path's fresh arrays will get
            if per_output == 1:
                calls.put(key, prepare(shape, f.out_dtype, launch, fill, device_id))
            elif call.reduction.look is None:  # (a look's kernel sees one result an output)
                calls.put(key, _prepare_results(prepare, shape, f.out_dtype, launch, fill, device_id, per_output))
        return result if per_output == 1 else tuple(result[..., k] for k in range(per_output))
    if y is not out:
        out[...] = y
    return out


def broadcast(xs, shape, key):
    """CuPy arrays of one device broadcast to `shape`, of one layout (a plan reads every input at
    the same element offsets), as `run` takes them; and `key` (their `inputs_signature`), or None
    where they had to be copied (a repeat would launch the copies' plan on the originals)."""
    cache.check_process()
    cupy = cupy_module()
    device_id = xs[0].data.device_id
    if any(a.data.device_id != device_id for a in xs):
        raise ValueError(f"x: the inputs are on devices {[a.data.device_id for a in xs]}; give them one device")
    with cupy.cuda.Device(device_id):
        views = [cupy.broadcast_to(a, shape) for a in xs]
        layouts = {tuple(s // v.itemsize for s in v.strides) for v in views}
        # one element layout, each input's strides and address on its own itemsize (a complex128 at 8
        # bytes faults kps::complex<double>'s 16-byte loads): else all copied, so the layouts stay one
        # (`_run` copies a lone input off its grid; a copy of one of several would leave the others)
        off = [bool(v.data.ptr % v.itemsize) for v in views]
        if len(layouts) > 1 or any(s % v.itemsize for v in views for s in v.strides) or any(off):
            views = [_aligned_copy(v) if o else cupy.ascontiguousarray(v) for v, o in zip(views, off)]
            key = None
    return tuple(views), key
