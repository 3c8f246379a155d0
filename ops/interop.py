"""Arrays from other frameworks: read in place, answered in kind.

- torch CUDA tensors: read in place (pointer, shape and strides; no copy, no DLPack round trip) on
  torch's current stream and the tensor's device; the result is a torch tensor from torch's own
  allocator, and `out=` may be a torch tensor, written in place. bfloat16 is read as its raw 16
  bits and accumulated in float32. Repeated calls take a prepared call (`prepare_torch`).
- torch CPU tensors: the NumPy backend, answered as torch tensors.
- a torch view with a lazy conjugate or negative bit (`z.conj()`, its `.imag`) is read with the bit
  applied (`resolved`: a copy), never as the raw memory beneath it; as `out=` it is refused.
- anything else with `__cuda_array_interface__`, or `__dlpack__` on a CUDA device: read zero-copy
  as a CuPy array; the result is a CuPy array. A `__dlpack__` producer on the CPU runs the NumPy
  backend; the result is a NumPy array.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from kernels.launcher import PER_THREAD_STREAM as _PER_THREAD_STREAM
from kps import dtypes

_DLPACK_CPU, _DLPACK_CUDA = 1, 2  # kDLCPU, kDLCUDA


def is_torch(obj) -> bool:
    return type(obj).__module__.partition(".")[0] == "torch" and hasattr(obj, "is_cuda")


def to_numpy(a) -> np.ndarray:
    """A NumPy copy of a CuPy array or a torch tensor (bfloat16 as float32, which NumPy lacks); a
    NumPy array or scalar as it is."""
    if is_torch(a):
        t = a.detach().cpu()
        return (t.float() if str(t.dtype) == "torch.bfloat16" else t).numpy()
    return a.get() if type(a) is not np.ndarray and hasattr(a, "get") else np.asarray(a)


@dataclass
class Adapted:
    """An input made ready for a backend: the array, the dtype the kernels see (bfloat16 arrives as
    uint16 storage), the same for `out`, the device and stream to run in, and how to answer."""

    backend: str
    x: Any
    in_dtype: np.dtype
    out: Any = None
    out_dtype: Optional[np.dtype] = None
    context: Callable[[], Any] = contextlib.nullcontext
    wrap: Callable[[Any, np.dtype], Any] = lambda r, out_dtype: r
    allocate: Optional[Callable] = None  # (shape, result dtype) -> (array to write, object to return)
    prepare: Optional[Callable] = None  # (shape, result dtype, launch, fill, device) -> the repeat call


_TORCH_TO_NUMPY = {}


def empty_like(a, dtype):
    """An array of `a`'s shape and kind (NumPy, CuPy, or a torch tensor on a's device) in `dtype`."""
    if is_torch(a):
        import torch

        return torch.empty(tuple(a.shape), dtype=torch_dtype(np.dtype(dtype)), device=a.device)
    if isinstance(a, np.ndarray):
        return np.empty(a.shape, dtype)
    import cupy

    with cupy.cuda.Device(a.device.id):
        return cupy.empty(a.shape, dtype)


def copy_into(out, src):
    """`src` written into `out` of the same kind, cast as NumPy's casting="unsafe"; `out` returned."""
    if is_torch(out):
        out.copy_(src)
    elif isinstance(out, np.ndarray):
        np.copyto(out, src, casting="unsafe")
    else:
        import cupy

        cupy.copyto(out, src, casting="unsafe")
    return out


def _numpy_dtype(t_dtype, argument: str = "x"):
    """torch dtype -> (storage dtype, the dtype the kernels see); a TypeError naming `argument`."""
    import torch

    if not _TORCH_TO_NUMPY:
        for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "float32", "float64", "complex64", "complex128"):
            if hasattr(torch, name):
                _TORCH_TO_NUMPY[getattr(torch, name)] = (np.dtype(name), np.dtype(name))
        if dtypes.BFLOAT16 is not None:
            _TORCH_TO_NUMPY[torch.bfloat16] = (np.dtype(np.uint16), dtypes.BFLOAT16)
    try:
        return _TORCH_TO_NUMPY[t_dtype]
    except KeyError:
        supported = ", ".join(str(t) for t in _TORCH_TO_NUMPY)
        raise TypeError(f"{argument}: unsupported dtype {t_dtype}; supported: {supported}") from None


def requested_dtype(dtype):
    """`dtype=` as the checks take it: a torch dtype (torch.float64, as torch's own reductions take)
    as the NumPy dtype the kernels see, anything else as given (ops/call.py names what is wrong)."""
    if type(dtype).__module__ != "torch" or type(dtype).__name__ != "dtype":
        return dtype
    try:
        return kernel_dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: unsupported dtype {dtype}") from None


def kernel_dtype(t_dtype) -> np.dtype:
    """The dtype the kernels see for a torch dtype (bfloat16 itself, not its uint16 storage)."""
    return _numpy_dtype(t_dtype)[1]


def torch_dtype(np_dtype):
    """The torch dtype of a NumPy dtype as the kernels see it (bfloat16 -> torch.bfloat16)."""
    import torch

    for t_dtype, (_, logical) in _TORCH_TO_NUMPY.items():
        if logical == np_dtype:
            return t_dtype
    return getattr(torch, np.dtype(np_dtype).name)


def _cupy_view(t):
    """Zero-copy CuPy view of a CUDA tensor, built from its pointer, shape and strides (no DLPack
    round trip: that costs tens of microseconds a call), and the dtype it holds."""
    import cupy

    storage, logical = _numpy_dtype(t.dtype)
    item = t.element_size()
    span = item * (1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0)) if t.numel() else 0
    mem = cupy.cuda.UnownedMemory(t.data_ptr(), span, t, t.device.index)
    view = cupy.ndarray(tuple(t.shape), storage, cupy.cuda.MemoryPointer(mem, 0), tuple(s * item for s in t.stride()))
    return view, logical


def resolved(t):
    """`t` with its lazy conjugate and negative bits applied (torch's `z.conj()` and the `.imag` of
    one only mark the view: its memory holds the data before them), a copy where a bit is set; `t`
    itself where none is. The kernels and NumPy read a tensor's memory as it is."""
    return t.resolve_conj().resolve_neg() if t.is_conj() or t.is_neg() else t


def _writable(out):
    """`out` as a tensor the results may be written into: one with a lazy bit set (a conjugate or
    negative view) would show them conjugated or negated, so it is refused by name."""
    if out.is_conj() or out.is_neg():
        raise TypeError("out: a torch view with its conjugate or negative bit set cannot be written "
                        "in place (out.resolve_conj() / out.resolve_neg() make a tensor that can)")
    return out


def _numpy_view(t):
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        if dtypes.BFLOAT16 is None:
            raise TypeError("x: bfloat16 needs the ml_dtypes package")
        return t.view(torch.int16).numpy().view(dtypes.BFLOAT16)
    return t.numpy()


def _torch_stream_context(t):
    """A context maker: within it, t's device and torch's current stream there are CuPy's."""
    import cupy
    import torch

    from kernels import launcher

    ptr = torch.cuda.current_stream(t.device).cuda_stream

    @contextlib.contextmanager
    def ctx():
        with cupy.cuda.Device(t.device.index), launcher.stream_object(ptr):
            yield

    return ctx


def adapt(x, out) -> Adapted:
    """Make `x` (and `out`) ready for a backend, or raise a TypeError naming the argument."""
    if is_torch(x):
        check_tensor(x, "x")
        if is_torch(out):
            check_tensor(out, "out")
            _check_out_records_nothing(out)
        if x.is_cuda:
            return _adapt_torch_cuda(x, out)
        if out is not None and not (is_torch(out) and not out.is_cuda):
            raise TypeError(f"out: expected a CPU torch.Tensor for a CPU torch input, got {type(out).__name__}")
        xv = _numpy_view(resolved(x))
        outv = _numpy_view(_writable(out)) if out is not None else None
        return Adapted("cpu", xv, xv.dtype, outv, None if outv is None else outv.dtype,
                       wrap=lambda r, out_dtype: out if out is not None else _torch_from_numpy(r))
    if _dlpack_device(x) == _DLPACK_CPU:
        xv = np.from_dlpack(x)
        return Adapted("cpu", xv, xv.dtype, out, None if out is None else getattr(out, "dtype", None))
    if hasattr(x, "__cuda_array_interface__") or _dlpack_device(x) == _DLPACK_CUDA:
        import cupy

        xv = cupy.asarray(x) if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x)
        return Adapted("gpu", xv, xv.dtype, out, None if out is None else getattr(out, "dtype", None))
    raise TypeError(
        f"x: expected a cupy.ndarray, a numpy.ndarray, a torch.Tensor or an array with "
        f"__cuda_array_interface__ / __dlpack__, got {type(x).__module__}.{type(x).__qualname__}"
    )


def check_tensor(t, argument: str) -> None:
    """A torch tensor the backends can read: dense (strided), on the CPU or a CUDA device, of a
    dtype the kernels hold; else a TypeError naming `argument` (torch's own words name neither)."""
    import torch

    if t.layout != torch.strided:
        raise TypeError(f"{argument}: a {t.layout} tensor; expected a dense (strided) one (Tensor.to_dense())")
    if t.device.type not in ("cpu", "cuda"):
        raise TypeError(f"{argument}: a tensor on the {t.device.type} device; expected a CPU or CUDA one")
    _numpy_dtype(t.dtype, argument)


def _check_out_records_nothing(out) -> None:
    """torch's rule: an out= tensor that requires grad is refused while autograd records (writing
    it in place would leave its graph wrong), by name here."""
    import torch

    if out.requires_grad and torch.is_grad_enabled():
        raise TypeError("out: the tensor requires grad; out= takes no part in autograd (torch's rule): "
                        "pass one that does not, or call under torch.no_grad()")


def _dlpack_device(x):
    """The DLPack device type of a producer, or None."""
    if not hasattr(x, "__dlpack__"):
        return None
    try:
        return x.__dlpack_device__()[0]
    except Exception:  # noqa: BLE001 - not a usable DLPack producer
        return None


def _adapt_torch_cuda(x, out) -> Adapted:
    import torch

    x = resolved(x)
    ctx = _torch_stream_context(x)
    xv, in_dtype = _cupy_view(x)
    outv = out_dtype = None
    if out is not None:
        if not is_torch(out) or not out.is_cuda:
            raise TypeError(f"out: expected a CUDA torch.Tensor for a CUDA torch input, got {type(out).__name__}")
        if out.device != x.device:
            raise ValueError(f"out: on {out.device}, the input is on {x.device}")
        outv, out_dtype = _cupy_view(_writable(out))

    def allocate(shape, dtype):
        # torch's own allocator, on torch's current stream: the result is an ordinary tensor
        t = torch.empty(shape, dtype=torch_dtype(dtype), device=x.device)
        return _cupy_view(t)[0], t

    def wrap(result, result_dtype):
        return out if out is not None else result

    return Adapted("gpu", xv, in_dtype, outv, out_dtype, context=ctx, wrap=wrap, allocate=allocate,
                   prepare=prepare_torch)


#: The named reductions' torch twins: a torch tensor in gets the dtype its twin gives (a uint8 sum
#: is int64, a logsumexp of ints float32) or the twin's refusal (the mean of ints). A pair's twin
#: gives its results in the op's order: var_mean's (mean, var), whose mean's dtype is the one asked
#: for (of complex numbers: complex; the variance is its real part).
TORCH_TWINS = {
    "sum": lambda torch, t: torch.sum(t, dim=0),
    "mean": lambda torch, t: torch.mean(t, dim=0),
    "amax": lambda torch, t: torch.amax(t, dim=0),
    "amin": lambda torch, t: torch.amin(t, dim=0),
    "prod": lambda torch, t: torch.prod(t, dim=0),
    "all": lambda torch, t: torch.all(t, dim=0),
    "any": lambda torch, t: torch.any(t, dim=0),
    "var": lambda torch, t: torch.var(t, dim=0),
    "std": lambda torch, t: torch.std(t, dim=0),
    "var_mean": lambda torch, t: torch.var_mean(t, dim=0)[::-1],
    "logsumexp": lambda torch, t: torch.logsumexp(t, dim=0),
    "argmax": lambda torch, t: torch.argmax(t, dim=0),
    "argmin": lambda torch, t: torch.argmin(t, dim=0),
    "nansum": lambda torch, t: torch.nansum(t, dim=0),
    "nanmean": lambda torch, t: torch.nanmean(t, dim=0),
    "vector_norm": lambda torch, t: torch.linalg.vector_norm(t, dim=0),
    "aminmax": lambda torch, t: tuple(torch.aminmax(t, dim=0)),
}


@functools.lru_cache(maxsize=None)  # keyed by a twin and a torch dtype: a few hundred at most
def torch_result_dtype(twin: str, t_dtype) -> np.dtype:
    """The dtype torch's `twin` gives for a tensor of `t_dtype` (as the kernels see it; a pair's
    twin: its first result's), learnt by running it on a 2 x 3 CPU tensor of ones. Where torch's CPU kernel lacks the dtype (uint16's
    sum: "not implemented for 'UInt16'"; complex nansum and nanmean: "nansum on CPU does not support
    complex inputs", `_NO_CPU_KERNEL`) its shape-and-dtype rule on the meta device answers; any other
    refusal is torch's dtype rule (the mean of ints): a TypeError naming x, in torch's words."""
    import torch

    fn = TORCH_TWINS[twin]
    try:
        result = fn(torch, torch.ones((2, 3), dtype=t_dtype))
    except (RuntimeError, NotImplementedError) as e:
        if not any(words in str(e) for words in _NO_CPU_KERNEL):
            raise TypeError(f"x: {e} (a torch tensor follows torch's dtype rules)") from None
        result = fn(torch, torch.empty((2, 3), dtype=t_dtype, device="meta"))
    return _numpy_dtype((result[0] if isinstance(result, tuple) else result).dtype)[1]


#: How torch says its CPU kernel lacks a dtype, as opposed to a dtype rule's refusal (the meta
#: device, which runs only the rules, is more lenient than those: it takes argmax of bool, and of
#: complex numbers, whose CPU kernel "does not support complex input": NumPy's order then, as max's).
_NO_CPU_KERNEL = ("not implemented for", "on CPU does not support", "does not support complex input")


def torch_module():
    """torch (called only once a torch tensor has been seen, so torch is imported)."""
    import torch

    return torch


def tensor_class():
    """torch.Tensor (called only once a torch tensor has been seen, so torch is imported)."""
    import torch

    return torch.Tensor


def raw_stream_getter():
    """device index -> torch's current raw CUDA stream. torch's private fast getter where it has
    one (the public torch.cuda.current_stream() builds a Stream object: microseconds a call)."""
    import torch

    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fast is not None:
        return fast
    return lambda index: torch.cuda.current_stream(index).cuda_stream


#: Results of at most this many bytes are allocated one call ahead: a prepared call launches into
#: the buffer its previous call set aside on the same stream and allocates the next one after the
#: launch, so the allocator (CuPy's pool: 1.3 us on the H100's host; torch's empty_strided: 3.7 us)
#: leaves the time before the kernel starts. It bounds what the spares hold: one per prepared call
#: (an Lru table's entry) and stream, for at most SPARE_STREAMS streams a call.
SPARE_RESULT_BYTES = 64 * 1024
SPARE_STREAMS = 4


def prepare_torch(shape, dtype, launch, fill, device_id):
    """The prepared call for one CUDA-tensor signature: launch on torch's current stream into a
    result from torch's allocator (set aside by the previous call on that stream,
    `SPARE_RESULT_BYTES`). No CuPy objects per call; a closure over its constants, as
    ops/gpu_backend.py's `prepare_call` is."""
    import torch
    from cupy.cuda import runtime

    t_dtype, device, current_device = torch_dtype(dtype), torch.device("cuda", device_id), runtime.getDevice
    strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    # empty_strided skips empty's memory-format handling: 3.7 vs 5.4 us a call on the H100 host
    empty, empty_like, stream_of = torch.empty_strided, torch.empty_like, raw_stream_getter()

    def elsewhere(call, x):  # the kernel lives in this device's context
        with torch.cuda.device(device_id):
            return call(x)

    if launch is None:
        value = None if fill is None else np.asarray(fill).view(dtype).item()

        def filled(x):
            if current_device() != device_id:
                return elsewhere(filled, x)
            y = empty(shape, strides, dtype=t_dtype, device=device)
            return y if value is None else y.fill_(value)

        return filled
    run = launch.run
    # stream -> the next result, allocated while that stream was current (torch's caching
    # allocator hands a block back to the stream it was allocated on)
    spares = {} if math.prod(shape) * np.dtype(dtype).itemsize <= SPARE_RESULT_BYTES else None

    def call(x):
        if current_device() != device_id:
            return elsewhere(call, x)
        stream = stream_of(device_id)
        spare = spares.pop(stream, None) if spares is not None else None  # (a pop: one thread takes it)
        if spare is None:
            y = empty(shape, strides, dtype=t_dtype, device=device)
            y_ptr = y.data_ptr()
        else:
            y, y_ptr = spare
        run(x.data_ptr(), y_ptr, stream, device_id)
        if spares is not None and stream != _PER_THREAD_STREAM:  # after the launch: the next call's result
            if len(spares) >= SPARE_STREAMS:
                spares.clear()
            nxt = empty_like(y)  # (y's shape, strides, dtype and device: no arguments to parse)
            spares[stream] = nxt, nxt.data_ptr()
        return y

    return call


def _torch_from_numpy(r):
    import torch

    r = np.asarray(r)
    if dtypes.BFLOAT16 is not None and r.dtype == dtypes.BFLOAT16:
        return torch.from_numpy(r.view(np.uint16).copy()).view(torch.bfloat16)
    return torch.from_numpy(r if r.flags.c_contiguous else r.copy())  # (ascontiguousarray makes 0-d 1-d)
