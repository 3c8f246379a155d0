// Folds of one thread over runs of global memory, shared by ReduceInner and ReduceStaged: strided
// elements, contiguous runs read with 16-byte loads, and runs found by an index calculator. Each
// keeps its chains of rounding combines short (kps::Levels, kps/chains.cuh).
#pragma once

#include "kps/primitives.cuh"

namespace kernels {

// Fold `len` elements src[i * stride] spread over LANES lanes (lane takes i = lane + k * LANES),
// NY elements per lane in flight. Element i is number `pos + i * pos_stride` of the reduced range.
// Short: keep the chains short (kps/chains.cuh); a run's head and tail, under 16 bytes, need not.
template <class R, class Tr, typename Tin, int NY, int LANES, typename IndexT,
          bool Short = kps::kShortChains<R, Tin>>
__device__ __forceinline__ void FoldStrided(typename R::acc_t (&acc)[1], kps::Ptr<Tin> src, IndexT len,
                                            IndexT stride, int lane, long long pos, long long pos_stride) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  Tin raw[NY];
  kps::Levels<R, 1, Short> levels;
  IndexT i = 0;
  do {
    for (const IndexT stop = levels.Stop(i, len, kStep); i + kStep <= stop; i += kStep) {
      kps::ReadData<Tin, 1, NY, false>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, NY);
      const auto index =
          kps::AffineIndex<NY>(pos + static_cast<long long>(i + lane) * pos_stride, LANES * pos_stride, 0);
      kps::ReduceUnary<R, Tr, Tin, 1, NY, 1, false>(acc, raw, 1, NY, index);
    }
  } while (levels.Next(acc, i + kStep <= len));
  levels.Total(acc);
  if (i + lane < len) {
    const int num_y = static_cast<int>((len - i - lane + LANES - 1) / LANES);
    kps::ReadData<Tin, 1, NY, true>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, num_y);
    const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(i + lane) * pos_stride, LANES * pos_stride, 0);
    kps::ReduceUnary<R, Tr, Tin, 1, NY, 1, true>(acc, raw, 1, num_y, index);
  }
}

// FoldStrided over SLOTS slots side by side: slot x's elements first[x][i * stride], spread over the
// lanes as FoldStrided spreads one slot's, NY rows of SLOTS elements in flight. The slots' chains
// are independent, where folding one slot after another waits on each chain in turn (a state's
// columns, whose every combine divides). Every first[x] points into the span: a slot the caller does
// not store may repeat another's elements.
template <class R, class Tr, typename Tin, int SLOTS, int NY, int LANES, typename IndexT>
__device__ __forceinline__ void FoldStridedSlots(typename R::acc_t (&acc)[SLOTS], const Tin* const (&first)[SLOTS],
                                                 IndexT len, IndexT stride, int lane, long long pos,
                                                 long long pos_stride) {
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  Tin raw[SLOTS * NY];
  kps::CarryFor<R, Tin, SLOTS> carry;
  auto read = [&](IndexT i, int num_y) {
#pragma unroll
    for (int y = 0; y < NY; ++y) {
#pragma unroll
      for (int x = 0; x < SLOTS; ++x) {
        if (y < num_y) raw[y * SLOTS + x] = first[x][(i + lane + y * LANES) * stride];
      }
    }
    return kps::AffineIndex<NY>(pos + static_cast<long long>(i + lane) * pos_stride, LANES * pos_stride, 0);
  };
  IndexT i = 0;
  for (; i + kStep <= len; i += kStep) {
    const auto index = read(i, NY);
    kps::ReduceUnary<R, Tr, Tin, SLOTS, NY, SLOTS, false>(acc, raw, SLOTS, NY, index);
    carry.Step(acc);
  }
  if (i + lane < len) {
    const int num_y = static_cast<int>((len - i - lane + LANES - 1) / LANES);
    const auto index = read(i, num_y);
    kps::ReduceUnary<R, Tr, Tin, SLOTS, NY, SLOTS, true>(acc, raw, SLOTS, num_y, index);
  }
  carry.Total(acc);
}

// Fold one contiguous run: a scalar head up to the first 16-byte boundary, aligned VEC-wide
// vectors (NY per lane in flight), a scalar tail. Element i is number `pos + i * pos_stride` of the
// reduced range.
template <class R, class Tr, typename Tin, int VEC, int NY, int LANES, bool SharedLanes, int InputShift,
          typename IndexT>
__device__ __forceinline__ void FoldContiguous(typename R::acc_t (&acc)[1], kps::Ptr<Tin> src, IndexT len,
                                               int lane, long long pos, long long pos_stride) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;  // vectors per step
  const unsigned misalign = static_cast<unsigned>(kps::Address(src) & 15u);
  const IndexT head = min(len, static_cast<IndexT>(((16u - misalign) & 15u) / kps::ElementBytes<Tin>::value));
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT, false>(acc, src, head, 1, lane, pos, pos_stride);

  const kps::Ptr<Tin> body = src + head;
  const IndexT num_vec = (len - head) / VEC;
  constexpr int kCols = kps::kLaneAccumulators<Acc, VEC>;
  Acc cols[kCols];
  kps::Init(cols, R::Identity());
  Tin raw[VEC * NY];
  kps::LevelsFor<R, Tin, kCols> levels;
  IndexT v = 0;
  do {
    for (const IndexT stop = levels.Stop(v, num_vec, kStep); v + kStep <= stop; v += kStep) {
      kps::ReadDataVecLanes<Tin, VEC, NY, LANES, SharedLanes, InputShift, false>(raw, body + (v + lane) * VEC,
                                                                                 LANES * VEC, NY, NY);
      const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(head + (v + lane) * VEC) * pos_stride,
                                              LANES * VEC * pos_stride, pos_stride);
      kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, false>(cols, raw, VEC, NY, index);
    }
  } while (levels.Next(cols, v + kStep <= num_vec));
  levels.Total(cols);
  // The last, partial step; every lane of the group where its lanes share loads (their shuffles).
  if (SharedLanes ? v < num_vec : v + lane < num_vec) {
    const IndexT left = num_vec - v;  // vectors of the step, lanes 0, 1, ... reading one each in turn
    const auto rows_of = [left](IndexT l) { return static_cast<int>((left - l + LANES - 1) / LANES); };  // l < left
    const int num_y = !SharedLanes || lane < left ? rows_of(lane) : 0;
    const int next_y = SharedLanes && lane + 1 < left ? rows_of(lane + 1) : 0;
    kps::ReadDataVecLanes<Tin, VEC, NY, LANES, SharedLanes, InputShift, true>(raw, body + (v + lane) * VEC,
                                                                              LANES * VEC, num_y, next_y);
    const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(head + (v + lane) * VEC) * pos_stride,
                                            LANES * VEC * pos_stride, pos_stride);
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, true>(cols, raw, VEC, num_y, index);
  }
  kps::Reduce<R, 1, kCols>(acc, cols);

  const IndexT done = head + num_vec * VEC;
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT, false>(acc, src + done, len - done, 1, lane,
                                                   pos + static_cast<long long>(done) * pos_stride, pos_stride);
}

// Fold ROWS runs of NY aligned VEC-wide vectors each, one thread all of them (short rows of whole
// vectors): every run's loads are issued before any is folded, so a thread keeps ROWS x NY loads in
// flight where one run alone kept NY (float64 rows of 4: 32 bytes a thread). Element j of every run
// is number `pos + j * pos_stride` of the reduced range.
template <class R, class Tr, typename Tin, int VEC, int NY, int ROWS>
__device__ __forceinline__ void FoldAlignedRows(typename R::acc_t (&acc)[ROWS], const kps::Ptr<Tin> (&run)[ROWS],
                                                long long pos, long long pos_stride) {
  using Acc = typename R::acc_t;
  constexpr int kCols = kps::kLaneAccumulators<Acc, VEC>;
  Tin raw[ROWS][VEC * NY];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) kps::ReadDataVec<Tin, VEC, NY, false>(raw[r], run[r], VEC, NY);
  const auto index = kps::AffineIndex<NY>(pos, VEC * pos_stride, pos_stride);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    Acc cols[kCols];
    kps::Init(cols, R::Identity());
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, false>(cols, raw[r], VEC, NY, index);
    Acc one[1] = {R::Identity()};
    kps::Reduce<R, 1, kCols>(one, cols);
    acc[r] = one[0];
  }
}

// Fold the flat indices [begin, end) of `runs`, each one aligned vector of VEC elements (VEC == 1:
// one element): short runs laid end to end (segment x vectors per run + vector), so every lane
// keeps NY loads in flight across run boundaries. For VEC > 1 the host guarantees every run starts
// 16-byte aligned and holds whole vectors. Element j of flat index i is number
// `pos + runs' index of i + j * pos_x` of the reduced range.
template <class R, class Tr, typename Tin, int VEC, int NY, int LANES, class Calc, typename IndexT>
__device__ __forceinline__ void FoldRuns(typename R::acc_t (&acc)[1], kps::Ptr<Tin> src, const Calc& runs,
                                         IndexT begin, IndexT end, int lane, long long pos, long long pos_x) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  constexpr int kCols = kps::kLaneAccumulators<Acc, VEC>;
  Acc cols[kCols];
  kps::Init(cols, R::Identity());
  Tin raw[VEC * NY];
  kps::LevelsFor<R, Tin, kCols> levels;
  IndexT i = begin + lane;
  do {
    for (const IndexT stop = levels.Stop(i, end, kStep); i + (NY - 1) * LANES < stop; i += kStep) {
      auto index = kps::AffineIndex<NY>(pos, 0, pos_x);
      kps::ReadDataReduce<Tin, VEC, NY, false, (VEC > 1)>(raw, index, src, runs, i, static_cast<IndexT>(LANES), 1,
                                                          VEC, NY);
      kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, false>(cols, raw, VEC, NY, index);
    }
  } while (levels.Next(cols, i + (NY - 1) * LANES < end));
  levels.Total(cols);
  if (i < end) {
    const int num_y = static_cast<int>((end - i + LANES - 1) / LANES);
    auto index = kps::AffineIndex<NY>(pos, 0, pos_x);
    kps::ReadDataReduce<Tin, VEC, NY, true, (VEC > 1)>(raw, index, src, runs, i, static_cast<IndexT>(LANES), 1, VEC,
                                                       num_y);
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, true>(cols, raw, VEC, num_y, index);
  }
  kps::Reduce<R, 1, kCols>(acc, cols);
}

}  // namespace kernels
