// Short chains of rounding combines. A float sum's error grows with the longest chain of adds into
// one accumulator, so every fold that rounds keeps its chains bounded, whatever the length it folds:
//
//   - a tile of NX x NY elements is folded pairwise along y (ReducePairwise): log2(NY) deep;
//   - a fold's running accumulators (its "low" level) take at most kCarrySteps tiles; then they go
//     into a middle level and start again from the identity; the middle level takes at most
//     kCarrySteps of those before it goes into a high level. Levels does this for the steps of one
//     output (its N accumulators folded pairwise into one middle value: fewer registers), Carry for
//     N outputs side by side (a column tile's columns, a span's slots).
//
// So an element passes through at most log2(NY) + 2 * kCarrySteps + steps / kCarrySteps^2 combines
// inside one fold (steps: the thread's tiles), then the shuffle trees and the split combines, log2
// deep or a small constant. docs/design.md ("Accuracy") gives the figures.
// The order stays fixed, so the bits do not change run to run. Integers and bools add exactly, and
// an accumulator wider than the element rounds far below it (kShortChains): their folds compile the
// carry away and fold in plain order.
#pragma once

#include "kps/types.cuh"

namespace kps {

// Whether combining accumulators of type T rounds: floats and complex numbers. Integers and bools
// do not; nor, here, the states (structs), whose extra levels of registers cost more than their
// chains: var's and the 2-norm's are float64 for narrower data, nanmean's sums too.
template <typename T>
struct Rounds {
  static constexpr bool value = false;
};
template <>
struct Rounds<float> {
  static constexpr bool value = true;
};
template <>
struct Rounds<double> {
  static constexpr bool value = true;
};
template <typename T>
struct Rounds<complex<T>> {  // (kps/complex.cuh)
  static constexpr bool value = true;
};

// Whether a fold of Tin elements by R keeps its chains short: where R's combine may round (not a
// selection: R::kExact, kps/functors.py), and its accumulator rounds and is no wider than the
// element. A wider one (float32 summed in float64, 16-bit floats in float32) rounds 2^-29 or more
// below the element's own precision, so no chain a thread folds is long enough to show in the
// result; its folds keep the plain order and the registers it saves.
template <class R, typename Tin>
inline constexpr bool kShortChains =
    !R::kExact && Rounds<typename R::acc_t>::value && sizeof(typename R::acc_t) <= sizeof(Tin);

// Tiles a level takes before it is carried into the next (a power of two).
constexpr unsigned kCarrySteps = 16;

// The middle and high levels of N running accumulators; the caller's array is the low level.
template <class R, int N, bool On>
struct Carry {
  using Acc = typename R::acc_t;
  Acc mid[N], high[N];
  unsigned steps;

  __device__ __forceinline__ Carry() : steps(0) {
#pragma unroll
    for (int x = 0; x < N; ++x) mid[x] = high[x] = R::Identity();
  }

  // After each tile folded into `low`: every kCarrySteps tiles low goes into mid, every
  // kCarrySteps^2 mid into high.
  __device__ __forceinline__ void Step(Acc (&low)[N]) {
    if (++steps % kCarrySteps != 0) return;
#pragma unroll
    for (int x = 0; x < N; ++x) {
      mid[x] = R::Combine(mid[x], low[x]);
      low[x] = R::Identity();
    }
    if (steps % (kCarrySteps * kCarrySteps) != 0) return;
#pragma unroll
    for (int x = 0; x < N; ++x) {
      high[x] = R::Combine(high[x], mid[x]);
      mid[x] = R::Identity();
    }
  }

  // The whole fold into `low`, the levels emptied (the fold may go on from there).
  __device__ __forceinline__ void Total(Acc (&low)[N]) {
#pragma unroll
    for (int x = 0; x < N; ++x) {
      low[x] = R::Combine(R::Combine(high[x], mid[x]), low[x]);
      mid[x] = high[x] = R::Identity();
    }
    steps = 0;
  }
};

// Exact or wider accumulators: nothing to carry.
template <class R, int N>
struct Carry<R, N, false> {
  __device__ __forceinline__ void Step(typename R::acc_t (&)[N]) {}
  __device__ __forceinline__ void Total(typename R::acc_t (&)[N]) {}
};

// The carry of a fold of Tin elements into N accumulators of R: one that carries where its chains
// must stay short (kShortChains), else none.
template <class R, typename Tin, int N>
using CarryFor = Carry<R, N, kShortChains<R, Tin>>;

// Fold a tile of NY rows of NX into NX accumulators: rows pairwise (row y with row y + ceil(W / 2)
// while W rows are left), then the one row left into acc. The tile is overwritten. W is a template
// argument, so every index is a constant and the tile stays in registers.
template <class R, int NX, int W>
__device__ __forceinline__ void FoldRowsPairwise(typename R::acc_t* tile) {
  if constexpr (W > 1) {
    constexpr int kHalf = (W + 1) / 2;
#pragma unroll
    for (int y = 0; y < W / 2; ++y) {
#pragma unroll
      for (int x = 0; x < NX; ++x) tile[y * NX + x] = R::Combine(tile[y * NX + x], tile[(y + kHalf) * NX + x]);
    }
    FoldRowsPairwise<R, NX, kHalf>(tile);
  }
}

template <class R, int NX, int NY>
__device__ __forceinline__ void ReducePairwise(typename R::acc_t (&acc)[NX], typename R::acc_t (&tile)[NX * NY]) {
  FoldRowsPairwise<R, NX, NY>(tile);
#pragma unroll
  for (int x = 0; x < NX; ++x) acc[x] = R::Combine(acc[x], tile[x]);
}

// The middle and high levels of a fold of one output into N running accumulators (the caller's
// array is the low level), carried in rounds: the fold's own loop, unchanged, runs inside
//
//   do {
//     for (const IndexT stop = levels.Stop(i, end, step); <the loop's test against stop>; i += step) ...
//   } while (levels.Next(low, <steps left>));
//   levels.Total(low);
//
// Short: a round takes at most kCarrySteps steps; Next folds the low level pairwise into one middle
// value and starts it again from the identity, every kCarrySteps middle values go into a high one,
// and Total adds the levels to low[0]. Not short: Stop is the loop's own end and Next is false, so
// the loop compiles as it was written (the same PTX). One value a level, and a test a round rather
// than a counter a step, take fewer registers than Carry's N-wide ones (docs/tuning.md).
template <class R, int N, bool Short>
struct Levels {
  using Acc = typename R::acc_t;
  Acc mid = R::Identity(), high = R::Identity();
  unsigned count = 0;

  // Where this round's loop stops: kCarrySteps steps after i, or the fold's end.
  template <typename IndexT>
  __device__ __forceinline__ IndexT Stop(IndexT i, IndexT end, IndexT step) const {
    const IndexT span = step * static_cast<IndexT>(kCarrySteps);
    return i < end && end - i > span ? i + span : end;
  }

  __device__ __forceinline__ bool Next(Acc (&low)[N], bool more) {
    FoldRowsPairwise<R, 1, N>(low);
    mid = R::Combine(mid, low[0]);
#pragma unroll
    for (int x = 0; x < N; ++x) low[x] = R::Identity();
    if (++count % kCarrySteps == 0) {
      high = R::Combine(high, mid);
      mid = R::Identity();
    }
    return more;
  }

  __device__ __forceinline__ void Total(Acc (&low)[N]) { low[0] = R::Combine(low[0], R::Combine(high, mid)); }
};

template <class R, int N>
struct Levels<R, N, false> {
  template <typename IndexT>
  __device__ __forceinline__ IndexT Stop(IndexT, IndexT end, IndexT) const {
    return end;
  }
  __device__ __forceinline__ bool Next(typename R::acc_t (&)[N], bool) { return false; }
  __device__ __forceinline__ void Total(typename R::acc_t (&)[N]) {}
};

// The levels of a fold of Tin elements into N accumulators of R (short where kShortChains).
template <class R, typename Tin, int N>
using LevelsFor = Levels<R, N, kShortChains<R, Tin>>;

}  // namespace kps
