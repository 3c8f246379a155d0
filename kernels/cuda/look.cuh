// The look after a reduction: whether any of its results is one the caller must warn or raise for
// (NumPy's all-NaN rules), answered in a word of pinned host memory the host reads after a stream
// synchronisation, so no copy of the results comes back and no second kernel reduces them.
#pragma once

namespace kernels {

struct LookParams {
  const void* results;
  unsigned long long count;
  unsigned long long mask;   // the bits compared: all of them, or all but a float's sign
  unsigned long long above;  // a result matches where (bits & mask) > above
  unsigned int* flag;        // pinned host memory, set to 1 where a result matches
};

// A result of `Bits`' width matches where its bits, masked, exceed `above`: a NaN of any float
// width (sign masked off, above the infinity's bits), or int64's largest value (the index an
// all-NaN slice keeps; indices are never negative).
template <typename Bits>
__global__ void AnyAbove(LookParams p) {
  const Bits* results = static_cast<const Bits*>(p.results);
  const Bits mask = static_cast<Bits>(p.mask), above = static_cast<Bits>(p.above);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count;
       i += stride) {
    if ((results[i] & mask) > above) {
      *p.flag = 1u;
      return;
    }
  }
}

}  // namespace kernels
