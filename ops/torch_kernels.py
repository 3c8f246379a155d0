"""The backward formulas' one-pass kernel on CUDA tensors (ops/torch_grads.py): `(x - mean) * scale *
scale_by (+ shift * shift_by)`, the mean, scale and shift given per result (the reduced shape kept)
and broadcast over each result's slice of x, the two factors numbers (var's 2 / (n - ddof), a
mean's 1 / n), so a backward runs no elementwise op over the results to fold them in.

torch's own var backward, `grad * (2 / d) * (x - x.mean(dims, keepdim=True))`, runs a subtract and
a multiply over the input, each reading and writing a tensor of x's size. Here x is read once and
the gradient written once, the arithmetic in float32 (float64 for float64 data), so float16 data
keep a scale such as 2 / n that float16 would flush. Eager calls only (`applies`): where autograd
records the backward itself (create_graph=True), or torch.compile or a torch.func transform traces
it, the formulas' torch ops run instead (they differentiate, and inductor fuses them).

A thread takes vectors of the gradient in order (16 bytes where x is contiguous, its last dim
whole vectors and aligned; else elements) and finds each one's element of x and its result with
kps::IndexCalc over x's dims, merged where x steps evenly across dims of one kind (kept or
reduced): a contiguous x reduced over one run of axes is two or three dims, one or two
multiply-high divisions a vector. docs/tuning.md has its measurements.
"""
from __future__ import annotations

import ctypes
import functools
import math
import threading

import torch

from kernels import launcher, params
from kernels.planner import Dim
from kernels.planner.dims import merge
from kps import cache

from . import interop

#: The dtypes the kernel takes, and the dtype of its arithmetic and of the per-result operands.
_WIDE = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
         torch.float64: torch.float64}
_CTYPES = {torch.float16: "kps::float16", torch.bfloat16: "kps::bfloat16", torch.float32: "float",
           torch.float64: "double"}

#: Plain tensors only: traced tensors are subclasses (fake, functional, wrappers) with no memory.
_PLAIN = (torch.Tensor, torch.nn.Parameter)

#: Dims the kernel takes after merging (a call with more runs torch's ops).
MAX_DIMS = 6

THREADS = 256
#: Elements a thread loads before it computes (loads in flight).
UNROLL = 4
#: Blocks per SM of the grid-stride loop.
BLOCKS_PER_SM = 8

_SOURCE = r"""
#include "kps/types.cuh"
#include "kps/index.cuh"

// One launch's arguments, one struct by value, every field 8 bytes (packed by `centred_scaled`).
template <int ND, typename I>
struct CentredArgs {
  const void* x;
  const void* mean;
  const void* scale;
  const void* shift;  // null: none
  void* y;
  long long n;
  long long vec_out_step;  // the results' stride along x's last dim (0: reduced, 1: kept)
  double scale_by;  // scale's factor
  double shift_by;  // shift's factor
  kps::IndexCalc<ND, I> dims;  // element i of the gradient -> its element of x, its result
};

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Vector { T e[VEC]; };

// y[i] = (x - mean) * (scale * scale_by) (+ shift * shift_by) for element i (C order) of x's shape:
// y contiguous, mean, scale and shift one value a result. A thread takes vectors of VEC elements
// along x's last dim (VEC > 1: x contiguous, the last dim whole vectors, 16-byte aligned), UNROLL of
// them in flight, a block's threads side by side; VEC == 1 reads a strided x element by element.
template <typename T, typename W, int ND, typename I, bool Contiguous, int VEC>
__global__ void CentredScaled(const CentredArgs<ND, I> a) {
  static_assert(VEC == 1 || Contiguous, "vectors of a contiguous x");
  using V = Vector<T, VEC>;
  const T* x = static_cast<const T*>(a.x);
  const W* mean = static_cast<const W*>(a.mean);
  const W* scale = static_cast<const W*>(a.scale);
  const W* shift = static_cast<const W*>(a.shift);
  T* y = static_cast<T*>(a.y);
  const W scale_by = static_cast<W>(a.scale_by), shift_by = static_cast<W>(a.shift_by);
  const I vectors = static_cast<I>(a.n / VEC);
  const I step = static_cast<I>(gridDim.x) * blockDim.x * UNROLL;
  for (I base = static_cast<I>(blockIdx.x) * blockDim.x * UNROLL + threadIdx.x; base < vectors; base += step) {
    V v[UNROLL];
    long long out[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const I j = base + k * blockDim.x;
      long long at = 0;
      out[k] = 0;
      if (j < vectors) {
        a.dims.Get(j * VEC, at, out[k]);  // (a contiguous x's offset is the index: at unused, not computed)
        v[k] = *reinterpret_cast<const V*>(x + (Contiguous ? static_cast<long long>(j) * VEC : at));
      }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const I j = base + k * blockDim.x;
      if (j < vectors) {
        V r;
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const long long o = out[k] + e * a.vec_out_step;
          W t = (kps::Cast<W>(v[k].e[e]) - mean[o]) * (scale[o] * scale_by);
          if (shift != nullptr) t += shift[o] * shift_by;
          r.e[e] = kps::Cast<T>(t);
        }
        *reinterpret_cast<V*>(y + static_cast<long long>(j) * VEC) = r;
      }
    }
  }
}
""".replace("UNROLL", str(UNROLL))


def untraced(x) -> bool:
    """Whether `x` is a plain tensor with memory and nothing traces or intercepts it (torch.compile, a
    torch.func transform, a dispatch mode such as FakeTensorMode or make_fx's, a torch function mode):
    where eager code may run on it (ops/torch_ops.py's autograd.Function, this kernel)."""
    return (type(x) in _PLAIN and not x.is_meta and not torch.compiler.is_compiling()
            and not torch._C._are_functorch_transforms_active() and not torch._C._len_torch_dispatch_stack()
            and not torch._C._is_torch_function_mode_enabled())


def applies(x) -> bool:
    """Whether the kernel runs for `x` here: an untraced CUDA tensor of its dtypes, in a backward that
    autograd does not record."""
    return x.is_cuda and x.dtype in _WIDE and not torch.is_grad_enabled() and untraced(x)


def wide(dtype):
    """The dtype of the kernel's arithmetic for data of `dtype`."""
    return _WIDE[dtype]


def merged_dims(shape, strides, axes) -> tuple:
    """x's dims in C order as the planner's Dims (size, x's stride, the results' stride: 0 where
    reduced), a dim of 1 dropped and neighbours merged where x and the results step evenly across
    them (kernels.planner.dims.merge: a kept dim never merges with a reduced one)."""
    dims, out_stride = [], 1
    for a in reversed(range(len(shape))):
        if shape[a] == 1:
            continue
        reduced = a in axes
        dims.append(Dim(shape[a], strides[a], 0 if reduced else out_stride))
        out_stride *= 1 if reduced else shape[a]
    return merge(dims[::-1]) or (Dim(1, 0, 1),)


def kernel_name(dtype, ndim: int, index: str, contiguous: bool, vec: int = 1) -> str:
    """The kernel for data of `dtype`, `ndim` merged dims, an index type ("unsigned", "long long"),
    an x contiguous in C order or not, and vectors of `vec` elements."""
    return (f"CentredScaled<{_CTYPES[dtype]}, {_CTYPES[_WIDE[dtype]]}, {ndim}, {index}, {str(contiguous).lower()},"
            f" {vec}>")


def source() -> str:
    """The kernel's CUDA source."""
    return _SOURCE


#: Loaded kernels by (dtype, dims, index type, layout, vector, device): 144 at most a device.
_functions = {}


def _function(key: tuple):
    """The loaded kernel of `key` (see `_functions`), compiled (NVRTC) and loaded the first time."""
    function = _functions.get(key)
    if function is None:
        from kps import compiler

        dtype, ndim, index, contiguous, vec, device_id = key
        name = kernel_name(dtype, ndim, index, contiguous, vec)
        function = _functions[key] = compiler.load(source(), [name], device_id)[name]
    return function


@functools.lru_cache(maxsize=1024)  # per layout: also where it says None (more than MAX_DIMS dims)
def _plan(shape: tuple, strides: tuple, axes: tuple):
    """(the merged dims' kps::IndexCalc as int64s, their count, the index bits, whether x is
    contiguous in C order, the results' stride along the last dim, the number of results), or None
    where more than MAX_DIMS dims remain. x is not empty."""
    dims = merged_dims(shape, strides, set(axes))
    if len(dims) > MAX_DIMS:
        return None
    n = math.prod(shape)
    span = 1 + sum((d.size - 1) * abs(d.in_stride) for d in dims)
    bits = 32 if max(n, span) < 2 ** 31 else 64
    contiguous, x_stride = True, 1
    for d in reversed(dims):
        contiguous = contiguous and d.in_stride == x_stride
        x_stride *= d.size
    results = math.prod(d.size for d in dims if d.out_stride)
    return params.index_calc(list(dims), bits), len(dims), bits, contiguous, dims[-1].out_stride, results


def centred_scaled(x, axes, mean, scale, shift=None, scale_by=1.0, shift_by=1.0):
    """`(x - mean) * (scale * scale_by) + shift * shift_by` (shift None: none) as a new contiguous
    tensor of x's shape and dtype, one kernel on torch's current stream; `mean`, `scale` and `shift`
    hold one value a result of reducing x over `axes` (any shape of that many elements, in the
    results' order), `scale_by` and `shift_by` are numbers. None where the caller should take torch's
    ops instead: x has more than MAX_DIMS dims after merging, or the stream is capturing a CUDA graph
    and the kernel is not loaded yet (no compiling or loading then)."""
    device_id = x.device.index
    if torch.cuda.current_device() != device_id:  # (the kernel's module lives in its device's context)
        with torch.cuda.device(device_id):
            return centred_scaled(x, axes, mean, scale, shift, scale_by, shift_by)
    if x.numel() == 0:
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)
    x = interop.resolved(x)  # the kernel reads memory: a lazy negative view's bit applied first
    key = (tuple(x.shape), x.stride(), tuple(axes), x.dtype, x.data_ptr() % 16 == 0, device_id)
    launch = _launches.get(key)
    if launch is None:
        launch = _Launch.of(key)
        if launch is None:
            return None
        _launches.put(key, launch)
    w = _WIDE[x.dtype]
    # (a lazy negative view's bit applied: the kernel reads memory)
    operands = [None if t is None else interop.resolved(t if t.dtype == w and t.is_contiguous()
                                                        else t.to(w).contiguous())
                for t in (mean, scale, shift)]
    if any(t is not None and t.numel() != launch.results for t in operands):
        raise ValueError(f"centred_scaled: mean, scale and shift take one value a result ({launch.results})")
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    launch(x, operands, y, scale_by, shift_by)
    return y


#: Where the two factors lie in `CentredArgs`, in 8-byte fields.
_FACTORS = 7

#: A layout's launch (`_Launch`) by (shape, strides, axes, dtype, 16-byte aligned, device): bounded.
_launches = cache.device_state(cache.Lru())

#: cupy's driver.launchKernel and torch's current raw stream by device index, bound at the first launch.
_launch = _stream = None


class _Launch:
    """One layout's kernel and its arguments, packed once (`CentredArgs`: the dims, the count, the
    results' step); a call fills the five pointers and the two factors and launches, under a lock,
    since cuLaunchKernel copies the arguments before it returns. An eager backward is host time, so
    nothing that a layout fixes is redone per call (docs/tuning.md, session 27)."""

    def __init__(self, function, fields: list, results: int, blocks: int, device_id: int):
        global _launch, _stream
        if _launch is None:
            from cupy.cuda import driver

            _launch, _stream = driver.launchKernel, interop.raw_stream_getter()
        self.function, self.results, self.blocks, self.device_id = function, results, blocks, device_id
        self._args = (ctypes.c_int64 * len(fields))(*fields)
        self._factors = (ctypes.c_double * 2).from_buffer(self._args, _FACTORS * 8)
        self._pointer = (ctypes.c_void_p * 1)(ctypes.addressof(self._args))
        self._pointer_address = ctypes.addressof(self._pointer)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, key: tuple):
        """The launch of `key` (see `_launches`), or None: more than MAX_DIMS dims after merging, or a
        kernel not loaded yet while the stream captures a CUDA graph."""
        shape, strides, axes, dtype, aligned, device_id = key
        plan = _plan(shape, strides, axes)
        if plan is None:
            return None
        calc, ndim, bits, contiguous, last_out_stride, results = plan
        n = math.prod(shape)
        vec = 16 // dtype.itemsize if contiguous and aligned and shape[-1] % (16 // dtype.itemsize) == 0 else 1
        kernel = (dtype, ndim, "unsigned" if bits == 32 else "long long", contiguous, vec, device_id)
        if kernel not in _functions and torch.cuda.is_current_stream_capturing():
            return None
        blocks = min(-(-n // (THREADS * UNROLL * vec)), launcher.sm_count(device_id) * BLOCKS_PER_SM)
        fields = [0] * 5 + [n, last_out_stride, 0, 0] + calc  # (pointers, n, the results' step, factors, dims)
        return cls(_function(kernel), fields, results, blocks, device_id)

    def __call__(self, x, operands, y, scale_by, shift_by) -> None:
        args, function = self._args, self.function
        with self._lock:
            args[0] = x.data_ptr()
            for k, t in enumerate(operands):
                args[1 + k] = 0 if t is None else t.data_ptr()
            args[4] = y.data_ptr()
            self._factors[0], self._factors[1] = scale_by, shift_by
            _launch(function.ptr, self.blocks, 1, 1, THREADS, 1, 1, 0, _stream(self.device_id),
                    self._pointer_address, 0)
