// Element types, casts and register vectors shared by every primitive.
//
// float16 and bfloat16 are plain 16-bit storage structs converted with PTX `cvt`, so the kernels need
// no CUDA math headers (NVRTC then compiles them on a machine without a GPU or a toolkit install).
#pragma once

namespace kps {

struct alignas(2) float16 { unsigned short bits; };
struct alignas(2) bfloat16 { unsigned short bits; };

__device__ __forceinline__ float ToFloat(float16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
__device__ __forceinline__ float ToFloat(bfloat16 h) {
  return __uint_as_float(static_cast<unsigned>(h.bits) << 16);
}
__device__ __forceinline__ float16 ToFloat16(float f) {
  float16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
__device__ __forceinline__ bfloat16 ToBFloat16(float f) {
  bfloat16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}

// Cast<To>(x): static_cast for the built-in types, through float for the 16-bit floats.
template <typename To, typename From>
struct Caster { __device__ static To Apply(From x) { return static_cast<To>(x); } };
template <typename From>
struct Caster<float16, From> {
  __device__ static float16 Apply(From x) { return ToFloat16(static_cast<float>(x)); }
};
template <typename From>
struct Caster<bfloat16, From> {
  __device__ static bfloat16 Apply(From x) { return ToBFloat16(static_cast<float>(x)); }
};
template <typename To>
struct Caster<To, float16> { __device__ static To Apply(float16 x) { return static_cast<To>(ToFloat(x)); } };
template <typename To>
struct Caster<To, bfloat16> { __device__ static To Apply(bfloat16 x) { return static_cast<To>(ToFloat(x)); } };
template <>
struct Caster<float16, float16> { __device__ static float16 Apply(float16 x) { return x; } };
template <>
struct Caster<bfloat16, bfloat16> { __device__ static bfloat16 Apply(bfloat16 x) { return x; } };
template <>
struct Caster<float16, bfloat16> { __device__ static float16 Apply(bfloat16 x) { return ToFloat16(ToFloat(x)); } };
template <>
struct Caster<bfloat16, float16> { __device__ static bfloat16 Apply(float16 x) { return ToBFloat16(ToFloat(x)); } };

template <typename To, typename From>
__device__ __forceinline__ To Cast(From x) { return Caster<To, From>::Apply(x); }

// Lift<Acc>(x, i): the accumulator of one transformed element `x` whose index in the reduced range is
// `i`. A scalar accumulator is the cast value (the index is unused and compiled away); a state op's
// generated specialisation calls its Lift (kps/functors.py), which arg-reductions give the index.
template <typename Acc, typename From>
struct Lifter { __device__ static Acc Apply(From x, long long) { return Cast<Acc>(x); } };

template <typename Acc, typename From>
__device__ __forceinline__ Acc Lift(From x, long long i) { return Lifter<Acc, From>::Apply(x, i); }

// |x|: fabs for float and double (a free operand modifier where the result is compared or added),
// x < 0 ? -x : x for the other types.
__device__ __forceinline__ float Abs(float x) { return fabsf(x); }
__device__ __forceinline__ double Abs(double x) { return fabs(x); }
template <typename T>
__device__ __forceinline__ T Abs(T x) { return x < T(0) ? -x : x; }

// What a + b lost in t = fl(a + b): exact in floating point (TwoSum in Neumaier's branchy form:
// the larger magnitude first). Complex numbers part by part (complex.cuh). kps/precise.py.
template <typename T>
__device__ __forceinline__ T TwoSumError(T a, T b, T t) {
  const bool a_big = Abs(a) >= Abs(b);
  return ((a_big ? a : b) - t) + (a_big ? b : a);
}

// numpy.fmax / fmin: the larger (smaller) of two, a NaN losing to any number. One instruction for
// float and double (the hardware's max.NaN-ignoring form, as fmaxf); a compare and a select for the
// other types, which have no NaN. On the H100 the float form reads at the plain max's speed, where
// the compare-and-select form with its NaN tests lost 8-15% (nanmax over 256M float32: 422.5 -> 380.7 us).
__device__ __forceinline__ float FMax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double FMax(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ float FMin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double FMin(double a, double b) { return fmin(a, b); }
template <typename T>
__device__ __forceinline__ T FMax(T a, T b) { return a >= b ? a : b; }
template <typename T>
__device__ __forceinline__ T FMin(T a, T b) { return a <= b ? a : b; }

// numpy.ptp's max - min in the output type: integers (where 0.5 casts to 0) subtract as unsigned, so
// they wrap as NumPy's do with no signed overflow; floats subtract as they are (complex.cuh: complex).
template <typename Out, typename T>
__device__ __forceinline__ Out PeakToPeak(T hi, T lo) {
  return static_cast<T>(0.5) == 0 ? Cast<Out>(static_cast<unsigned long long>(hi) - static_cast<unsigned long long>(lo))
                                  : Cast<Out>(hi - lo);
}

// The bits of an accumulator's field as a 64-bit integer (a raw state handed back to the host:
// kps/raw.py): a float's or a double's bit pattern, an integer or a bool widened.
__device__ __forceinline__ long long Bits(float x) { return static_cast<long long>(__float_as_uint(x)); }
__device__ __forceinline__ long long Bits(double x) { return __double_as_longlong(x); }
template <typename T>
__device__ __forceinline__ long long Bits(T x) { return static_cast<long long>(x); }

// exp(x) as a rescaling factor (x <= 0, a result in [0, 1]: logsumexp's): ex2.approx for float,
// within 2 ulp, which a sum of such terms does not feel; exp for double.
__device__ __forceinline__ float ExpScale(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}
__device__ __forceinline__ double ExpScale(double x) { return exp(x); }

// Several inputs read as one (a transform of several arrays): the values of one element (Pack)
// and a pointer per input moved by the same offsets (Zip; the inputs share shape and strides).
// `PtrOf<T>` is what the kernels read through: `const T*`, or a Zip for a Pack.
constexpr int kMaxInputs = 4;  // arrays one transform may read

template <typename... T>
struct Pack;
template <>
struct Pack<> {};
template <typename T, typename... Rest>
struct Pack<T, Rest...> {
  T head;
  Pack<Rest...> tail;
};

template <typename... T>
struct Zip;
template <>
struct Zip<> {
  __device__ __forceinline__ Zip operator+(long long) const { return {}; }
  __device__ __forceinline__ Pack<> operator[](long long) const { return {}; }
  __device__ __forceinline__ static Zip Make(const void* const*) { return {}; }
};
template <typename T, typename... Rest>
struct Zip<T, Rest...> {
  const T* head;
  Zip<Rest...> tail;
  __device__ __forceinline__ Zip operator+(long long off) const { return {head + off, tail + off}; }
  __device__ __forceinline__ Pack<T, Rest...> operator[](long long i) const { return {head[i], tail[i]}; }
  __device__ __forceinline__ static Zip Make(const void* const* inputs) {
    return {static_cast<const T*>(inputs[0]), Zip<Rest...>::Make(inputs + 1)};
  }
};

template <typename T>
struct PtrOf {
  using type = const T*;
  __device__ __forceinline__ static type Make(const void* x, const void* const*) { return static_cast<const T*>(x); }
};
template <typename T, typename... Rest>
struct PtrOf<Pack<T, Rest...>> {
  using type = Zip<T, Rest...>;
  __device__ __forceinline__ static type Make(const void* x, const void* const* more) {
    return {static_cast<const T*>(x), Zip<Rest...>::Make(more)};
  }
};
template <typename T>
using Ptr = typename PtrOf<T>::type;

// Select<B, T, F>::type: T where B holds, else F (std::conditional, which NVRTC does not ship).
template <bool B, typename T, typename F>
struct Select { using type = T; };
template <typename T, typename F>
struct Select<false, T, F> { using type = F; };

// Several results of one output (an epilogue of several expressions: mean and variance), stored
// side by side.
template <typename T, int N>
struct Results { T val[N]; };

// N elements that move as one aligned access (16 bytes for the vector paths).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec { T val[N]; };

// NX contiguous elements from `src` as one aligned access (the host guarantees the alignment), or
// from a Zip one access per input.
template <int NX, typename T>
__device__ __forceinline__ void LoadVector(T (&dst)[NX], const T* src) {
  const Vec<T, NX> v = *reinterpret_cast<const Vec<T, NX>*>(src);
#pragma unroll
  for (int x = 0; x < NX; ++x) dst[x] = v.val[x];
}

// The 16 bytes at byte `shift` (0-15) of the 32 bytes `lo` then `hi` (two aligned chunks), as the
// NX elements of T they hold: words selected by the whole-word part of the shift, then funnel-shifted
// by its byte part.
template <int NX, typename T>
__device__ __forceinline__ void FunnelChunks(T (&dst)[NX], const Vec<unsigned, 4>& lo, const Vec<unsigned, 4>& hi,
                                             unsigned shift) {
  unsigned w[8] = {lo.val[0], lo.val[1], lo.val[2], lo.val[3], hi.val[0], hi.val[1], hi.val[2], hi.val[3]};
  const unsigned words = shift / 4, bits = (shift % 4) * 8;
#pragma unroll
  for (int i = 0; i < 6; ++i) w[i] = (words & 2u) ? w[i + 2] : w[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) w[i] = (words & 1u) ? w[i + 1] : w[i];
  union { unsigned words[4]; T val[NX]; } out;
#pragma unroll
  for (int i = 0; i < 4; ++i) out.words[i] = __funnelshift_r(w[i], w[i + 1], bits);
#pragma unroll
  for (int x = 0; x < NX; ++x) dst[x] = out.val[x];
}

// The aligned 16-byte chunk `shift` bytes before `src`, by pointer arithmetic (not through an
// integer) so the compiler keeps it a global load.
template <typename T>
__device__ __forceinline__ const Vec<unsigned, 4>* AlignedChunk(const T* src, unsigned shift) {
  return reinterpret_cast<const Vec<unsigned, 4>*>(reinterpret_cast<const char*>(src) - shift);
}

// NX contiguous elements from `src` wherever it lies (an input of a Zip off its first input's grid:
// x[1:] beside x[:-1]). A 16-byte vector comes from the two aligned chunks that cover it, funnel-
// shifted in registers; the second chunk holds a byte of the vector whenever it is read, so it never
// reaches past the input's last 16-byte granule. Narrower vectors are read element by element.
template <int NX, typename T>
__device__ __forceinline__ void LoadShifted(T (&dst)[NX], const T* src) {
  constexpr unsigned kBytes = sizeof(T) * NX;
  const unsigned long long addr = reinterpret_cast<unsigned long long>(src);
  const unsigned shift = static_cast<unsigned>(addr & (kBytes - 1));
  if (shift == 0) {  // uniform across the launch: the inputs keep one offset from each other
    LoadVector<NX>(dst, src);
  } else if constexpr (kBytes != 16) {
#pragma unroll
    for (int x = 0; x < NX; ++x) dst[x] = src[x];
  } else {  // (a generic load: as AlignedChunk's global one, rows of 65 floats of two inputs took 76
            // registers, not 71, and ran 2% slower on the H100)
    const Vec<unsigned, 4>* chunk = reinterpret_cast<const Vec<unsigned, 4>*>(addr - shift);
    FunnelChunks<NX>(dst, chunk[0], chunk[1], shift);
  }
}

// A Zip's vector: its first input aligned (the planner checked that one), the others shifted
// where they lie off its grid.
template <int NX, bool HeadAligned>
__device__ __forceinline__ void LoadZip(Pack<> (&)[NX], Zip<>) {}
template <int NX, bool HeadAligned, typename T, typename... Rest>
__device__ __forceinline__ void LoadZip(Pack<T, Rest...> (&dst)[NX], Zip<T, Rest...> src) {
  T head[NX];
  Pack<Rest...> tail[NX];
  if constexpr (HeadAligned) {
    LoadVector<NX>(head, src.head);
  } else {
    LoadShifted<NX>(head, src.head);
  }
  LoadZip<NX, false>(tail, src.tail);
#pragma unroll
  for (int x = 0; x < NX; ++x) dst[x] = {head[x], tail[x]};
}
template <int NX, typename T, typename... Rest>
__device__ __forceinline__ void LoadVector(Pack<T, Rest...> (&dst)[NX], Zip<T, Rest...> src) {
  LoadZip<NX, true>(dst, src);
}

// Bytes of one element of an input: of a Pack, its first input's (the inputs share it wherever
// they are read with vector loads).
template <typename T>
struct ElementBytes { static constexpr decltype(sizeof(T)) value = sizeof(T); };
template <typename T, typename... Rest>
struct ElementBytes<Pack<T, Rest...>> { static constexpr decltype(sizeof(T)) value = sizeof(T); };

// The address an input starts at (a Zip's inputs share their alignment where it matters).
template <typename T>
__device__ __forceinline__ unsigned long long Address(const T* p) { return reinterpret_cast<unsigned long long>(p); }
template <typename... T>
__device__ __forceinline__ unsigned long long Address(Zip<T...> p) { return Address(p.head); }

// The look after a reduction for NumPy's all-NaN rules (kernels/look.py), made by the kernel as it
// writes its results: where `host` is set, a result whose bits, masked, exceed `above` (a NaN among
// floats, int64's largest index) sets that word of pinned host memory to 1. `seen`, a device word of
// the calling host thread, holds the epoch of the last call that matched: the first match of a call
// claims it, so one write crosses the bus however many results match.
struct Look {
  unsigned* host;
  unsigned long long* seen;
  unsigned long long epoch;
  unsigned long long mask;
  unsigned long long above;
};

// Number of elements of T in one 16-byte access.
template <typename T>
struct VecWidth { static constexpr int value = sizeof(T) <= 16 ? 16 / sizeof(T) : 1; };

// Warp shuffle of any trivially copyable value (scalars and accumulator structs alike),
// moved as 32-bit words.
template <typename T>
__device__ __forceinline__ T ShflXor(T v, int mask) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  union { T value; int words[kWords]; } u;
  u.value = v;
#pragma unroll
  for (int i = 0; i < kWords; ++i) u.words[i] = __shfl_xor_sync(0xffffffffu, u.words[i], mask);
  return u.value;
}

// `sizeof(T) / sizeof(Word)` loads of `Word` that bypass L1, into one T.
template <typename T, typename Word>
__device__ __forceinline__ T LoadWordsCG(const T* p) {
  constexpr int kWords = sizeof(T) / sizeof(Word);
  union { T value; Word words[kWords]; } u;
  const Word* w = reinterpret_cast<const Word*>(p);
#pragma unroll
  for (int i = 0; i < kWords; ++i) u.words[i] = __ldcg(w + i);
  return u.value;
}

// A load that bypasses L1: partials written by other blocks of the same launch are read this way.
// A scalar of 4 or 8 bytes straight into its register: through LoadWordsCG's union, ptxas gave every
// float64 partial of a combine the same scratch pair and moved each out before the next load could
// issue, one round trip to L2 a partial instead of one a round (docs/tuning.md, session 16). A
// struct (a state, a complex number) in the widest words its size and alignment allow.
template <typename T>
__device__ __forceinline__ T LoadGlobalCG(const T* p) {
  if constexpr (!__is_class(T) && sizeof(T) >= 4) {
    return __ldcg(p);
  } else if constexpr (sizeof(T) % 16 == 0 && alignof(T) >= 16) {
    return LoadWordsCG<T, int4>(p);
  } else if constexpr (sizeof(T) % 8 == 0 && alignof(T) >= 8) {
    return LoadWordsCG<T, int2>(p);
  } else if constexpr (sizeof(T) % 4 == 0) {
    return LoadWordsCG<T, int>(p);
  } else if constexpr (!__is_class(T)) {  // bool, 1- and 2-byte integers
    return *reinterpret_cast<const volatile T*>(p);
  } else {  // a state of narrow fields (the extremes of bools): byte by byte
    union { T value; unsigned char bytes[sizeof(T)]; } u;
    const volatile unsigned char* b = reinterpret_cast<const volatile unsigned char*>(p);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T)); ++i) u.bytes[i] = b[i];
    return u.value;
  }
}

}  // namespace kps

#include "kps/complex.cuh"  // complex64 and complex128 (kps::complex<T>), with their Caster and helpers
