"""The look after a reduction, for NumPy's all-NaN rules: whether any GPU result is NaN, or any
index is int64's largest (the index an all-NaN slice keeps).

A repeated call has the reduction kernel look as it writes its results (kps::Look): `arm` gives its
launch the fields that name this thread's word of pinned host memory, which the first matching
result sets; the host waits for the stream and reads the word (`matched`). Other calls (the first
of a signature, `out=`, torch tensors, complex results) have one small kernel
(kernels/cuda/look.cuh) read the results where they are and set the same word (`any_match`).
Copying the results back cost more (measured on the H100, nanmax over 256M float32: 381 us with a
copy of its one result, 374 us with the look kernel, 371 us for the synchronisation alone).
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from kps import cache, compiler, dtypes

from .source import INCLUDE_DIR

NAN = "nan"
LARGEST_INDEX = "largest index"

#: The program and its kernels, one per result width (the kernel compares bits).
SOURCE = '#include "look.cuh"\n'
NAMES = {n: f"kernels::AnyAbove<{t}>" for n, t in {2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}.items()}
_BLOCK = 256
_MAX_BLOCKS = 1024

#: (every bit but the sign, the infinity's bits) of each float: NaN is above the infinity.
_NAN_BITS = {"float16": (0x7FFF, 0x7C00), "bfloat16": (0x7FFF, 0x7F80), "float32": (0x7FFFFFFF, 0x7F800000),
             "float64": (0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000)}

_functions = cache.device_state(cache.Lru())  # device -> {itemsize: Function}
_local = threading.local()


def bit_rule(kind: str, dtype: np.dtype):
    """(mask, above): a result of `dtype` (bfloat16 as itself, not its storage) is `kind` where its
    bits, masked, exceed `above`, as the kernel compares them; None where the kernel has no answer.
    A complex result is NaN where either part is (numpy.isnan): its parts' rule, which the look
    kernel applies to each part (`parts`, `any_match`)."""
    if kind == LARGEST_INDEX:
        return ((1 << 64) - 1, (1 << 63) - 2) if dtype == np.int64 else None
    return _NAN_BITS.get(dtypes.real_dtype(dtype).name)


def parts(dtype: np.dtype) -> int:
    """How many words of its bit rule a result of `dtype` is: 2 for a complex number, else 1."""
    return 2 if dtype.kind == "c" else 1


def in_kernel(kind: str, dtype: np.dtype) -> bool:
    """Whether the reduction kernels can look at results of `dtype` as they write them (kps::Look
    compares a result's bits whole): a rule for a result of one word. A complex result is looked at
    after the call, part by part (`any_match`), so the kernels that write complex results carry no
    code for it."""
    return parts(dtype) == 1 and bit_rule(kind, dtype) is not None


class _Buffers:
    """A host thread's flag (a word of pinned host memory, seen by the GPU at the same address under
    unified addressing), the look kernel's launch parameters, and for the kernels' own look the
    epoch of its last call and its seen word on each device (kps::Look)."""

    def __init__(self):
        import cupy

        self.pinned = cupy.cuda.alloc_pinned_memory(8)
        self.flag = (ctypes.c_uint32 * 1).from_address(self.pinned.ptr)
        self.params = (ctypes.c_uint64 * 5)()
        self.args = (ctypes.c_void_p * 1)(ctypes.addressof(self.params))
        self.epoch = 0
        self.seen = {}  # device -> a zeroed uint64 CuPy array


def _thread_buffers() -> _Buffers:
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = _Buffers()
    return buffers


def _as_int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


#: (kind, result dtype) -> (mask, above) as the kernels' int64 parameter slots hold them, or None.
_kernel_rules = {}


def arm(kind: str, dtype: np.dtype, device_id: int):
    """The fields of kps::Look for a launch on `device_id` whose results of `dtype` the kernel is to
    look at for `kind`, with this thread's flag cleared; None where the kernel cannot (`in_kernel`).
    One call at a time per host thread: the caller waits for the stream (`matched`) before arming
    again."""
    rule = _kernel_rules.get((kind, dtype), False)
    if rule is False:
        bits = bit_rule(kind, dtype) if in_kernel(kind, dtype) else None
        rule = _kernel_rules[(kind, dtype)] = None if bits is None else tuple(_as_int64(b) for b in bits)
    if rule is None:
        return None
    buffers = _thread_buffers()
    seen = buffers.seen.get(device_id)
    if seen is None:
        import cupy

        with cupy.cuda.Device(device_id):
            seen = buffers.seen[device_id] = cupy.zeros(1, dtype=cupy.uint64)
    buffers.epoch += 1
    buffers.flag[0] = 0
    return (buffers.pinned.ptr, seen.data.ptr, buffers.epoch, rule[0], rule[1])


def matched() -> bool:
    """Whether the armed launch's kernel found a match: read once its stream has been waited for."""
    return bool(_local.buffers.flag[0])


def _function(device_id: int, itemsize: int):
    funcs = _functions.get(device_id)
    if funcs is None:
        loaded = compiler.load(SOURCE, list(NAMES.values()), device_id, [INCLUDE_DIR])
        funcs = _functions.put(device_id, {n: loaded[name] for n, name in NAMES.items()})
    return funcs[itemsize]


def any_match(kind: str, ptr: int, count: int, dtype: np.dtype, stream_ptr: int, device_id: int):
    """Whether any of `count` contiguous results of `dtype` at device address `ptr` matches `kind`
    (NAN or LARGEST_INDEX), once the work queued on `stream_ptr` has run; None where this look has
    no kernel for the dtype (the caller looks another way). Waits for the stream. Complex results
    are read as their parts (`parts`)."""
    import cupy
    from cupy.cuda import driver, runtime

    bits = bit_rule(kind, dtype)
    if bits is None:
        return None
    if count == 0:
        return False
    if runtime.getDevice() != device_id:
        with cupy.cuda.Device(device_id):
            return any_match(kind, ptr, count, dtype, stream_ptr, device_id)
    words = parts(dtype)
    count *= words
    function = _function(device_id, dtype.itemsize // words)
    buffers = _thread_buffers()
    buffers.flag[0] = 0
    buffers.params[:] = (ptr, count, bits[0], bits[1], buffers.pinned.ptr)
    blocks = max(1, min(-(-count // _BLOCK), _MAX_BLOCKS))
    driver.launchKernel(function.ptr, blocks, 1, 1, _BLOCK, 1, 1, 0, stream_ptr, ctypes.addressof(buffers.args), 0)
    runtime.streamSynchronize(stream_ptr)
    return bool(buffers.flag[0])
