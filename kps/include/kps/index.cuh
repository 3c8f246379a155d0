// Index calculators: a flat index over some merged dims -> element offsets in memory.
//
// The host merges dims and fills the tables (kernels/planner/layout.py); the kernel only decomposes.
// With 32-bit indices the per-dim division is a multiply-high and a shift (FastDivmod); with 64-bit
// indices it is a plain division. Every field is 8 bytes wide so the host can pack the struct as
// a flat array of int64 (kernels/params.py).
#pragma once

namespace kps {

// n / d and n % d for n < 2^31, with `magic` = multiplier | (shift << 32) computed on the host
// (kernels.params.fast_divmod_magic).
__device__ __forceinline__ unsigned FastDiv(unsigned n, long long magic) {
  const unsigned mul = static_cast<unsigned>(magic);
  const unsigned shift = static_cast<unsigned>(magic >> 32);
  return (__umulhi(n, mul) + n) >> shift;
}

template <typename IndexT>
__device__ __forceinline__ IndexT DivBy(IndexT n, long long d, long long magic) {
  if constexpr (sizeof(IndexT) == 4) {
    return FastDiv(n, magic);
  } else {
    return n / static_cast<IndexT>(d);
  }
}

// ND merged dims, innermost last. `in_stride` and `out_stride` are in elements and may be negative.
// A calculator over reduced dims has no output position: its second stride is the element's index
// in the reduced range instead (zero unless the reduction uses it, as arg-reductions do).
// ND == 0 is the empty calculator: every index maps to offset 0.
template <int ND, typename IndexT>
struct IndexCalc {
  static constexpr int kSlots = ND > 0 ? ND : 1;
  long long size[kSlots];
  long long magic[kSlots];
  long long in_stride[kSlots];
  long long out_stride[kSlots];

  // Input and output offsets of flat index `idx`.
  __device__ __forceinline__ void Get(IndexT idx, long long& in_off, long long& out_off) const {
    in_off = 0;
    out_off = 0;
#pragma unroll
    for (int d = ND - 1; d >= 0; --d) {
      IndexT q = d > 0 ? DivBy<IndexT>(idx, size[d], magic[d]) : 0;
      IndexT r = d > 0 ? idx - q * static_cast<IndexT>(size[d]) : idx;
      in_off += static_cast<long long>(r) * in_stride[d];
      out_off += static_cast<long long>(r) * out_stride[d];
      idx = q;
    }
  }

  // Input offset only (reduced dims have no output position).
  __device__ __forceinline__ long long Offset(IndexT idx) const {
    long long in_off, out_off;
    Get(idx, in_off, out_off);
    return in_off;
  }

  // Output offset only.
  __device__ __forceinline__ long long OutOffset(IndexT idx) const {
    long long in_off, out_off;
    Get(idx, in_off, out_off);
    return out_off;
  }
};

}  // namespace kps
