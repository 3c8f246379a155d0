// ReduceInner: the innermost dim is reduced (`last`, `full`, and `any` reductions ending in a
// reduced dim) and its runs are long or 16-byte aligned: LANES threads share one output and walk its
// contiguous runs with 16-byte loads; the other reduced dims are runs ("segments") found by an
// index calculator. Short aligned runs are walked as one flat sequence of vectors.
#pragma once

#include "params.cuh"
#include "folds.cuh"

namespace kernels {

// Split: whether the combine of a split's partials is compiled: only where the plan splits the
// reduced runs over blocks (gridDim.y > 1), since its registers would bound the unsplit kernel's
// blocks (ReduceStaged's flag means the same; ReduceOuter keeps a runtime test).
// ROWS > 1: every output is one aligned run of NY vectors, no segments and no splits, and a thread
// folds ROWS of them side by side (FoldAlignedRows): rows base + t, base + t + BLOCK, ...
template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int LANES, int BLOCK, int MIN_BLOCKS,
          int KND, int RND, typename IndexT, bool FlatRuns, bool SharedLanes, int InputShift, bool Split, int ROWS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) ReduceInner(const InnerParams<KND, RND, IndexT> p) {
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  constexpr int kGroups = BLOCK / LANES;
  __shared__ Acc smem[BLOCK / kps::kWarpSize];
  const kps::Ptr<Tin> x = kps::PtrOf<Tin>::Make(p.x, p.more_inputs);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int lane = threadIdx.x % LANES;
  const int group = threadIdx.x / LANES;

  if constexpr (ROWS > 1) {
    static_assert(LANES == 1 && !FlatRuns && !Split, "rows side by side: a thread an output, whole runs");
    bool looked = p.look.host == nullptr;  // (kps::LookAt)
    for (IndexT base = blockIdx.x * BLOCK * ROWS; base < p.num_out; base += gridDim.x * BLOCK * ROWS) {
      const IndexT first = base + threadIdx.x;
      kps::Ptr<Tin> run[ROWS];  // a row past the last folds the last again, and is not stored
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        run[r] = x + p.kept.Offset(min(first + r * BLOCK, static_cast<IndexT>(p.num_out) - 1));
      }
      Acc acc[ROWS];
      FoldAlignedRows<R, Tr, Tin, VEC, NY, ROWS>(acc, run, p.index_offset, p.inner_index_stride);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const IndexT row = first + r * BLOCK;
        if (row < p.num_out) {
          const Tout out[1] = {Ep::Apply(acc[r], p.count)};
          kps::LookAt<Tout, 1, false>(p.look, out, 1, looked);
          kps::WriteData<Tout, 1, false, false>(y + p.kept.OutOffset(row), out, 1, 1);
        }
      }
    }
    return;
  }

  // This block's share of every output's reduced range: segments [seg_begin, seg_end), and in
  // each of them the elements [in_begin, in_end).
  const IndexT split = blockIdx.y;
  IndexT seg_begin = 0, seg_end = p.num_seg, in_begin = 0, in_end = p.inner_len;
  if (p.chunks > 1) {
    seg_begin = split / static_cast<IndexT>(p.chunks);
    seg_end = seg_begin + 1;
    in_begin = (split - seg_begin * static_cast<IndexT>(p.chunks)) * static_cast<IndexT>(p.chunk_len);
    in_end = min(in_end, in_begin + static_cast<IndexT>(p.chunk_len));
  } else if (p.num_splits > 1) {
    seg_begin = split * static_cast<IndexT>(p.segs_per_split);
    seg_end = min(seg_end, seg_begin + static_cast<IndexT>(p.segs_per_split));
  }

  // `base` is uniform across the block, so every thread reaches every barrier and shuffle.
  bool looked = p.look.host == nullptr;  // (kps::LookAt)
  for (IndexT base = blockIdx.x * kGroups; base < p.num_out; base += gridDim.x * kGroups) {
    const IndexT row = base + group;
    const bool active = row < p.num_out;
    Acc acc[1] = {R::Identity()};
    if (active) {
      const long long in_off = p.kept.Offset(row);
      if constexpr (FlatRuns) {  // red holds the vectors of a run as its innermost dim
        const IndexT vecs = static_cast<IndexT>(p.inner_len / VEC);
        FoldRuns<R, Tr, Tin, VEC, NY, LANES>(acc, x + in_off, p.red, seg_begin * vecs, seg_end * vecs, lane,
                                             p.index_offset, p.inner_index_stride);
      } else {
        kps::LevelsFor<R, Tin, 1> levels;  // a segment a step
        IndexT seg = seg_begin;
        do {
          for (const IndexT stop = levels.Stop(seg, seg_end, IndexT(1)); seg < stop; ++seg) {
            long long seg_off, seg_pos;
            p.red.Get(seg, seg_off, seg_pos);
            const kps::Ptr<Tin> run = x + in_off + seg_off + in_begin * p.inner_stride;
            const long long pos = p.index_offset + seg_pos + static_cast<long long>(in_begin) * p.inner_index_stride;
            if constexpr (VEC > 1) {
              FoldContiguous<R, Tr, Tin, VEC, NY, LANES, SharedLanes, InputShift, IndexT>(
                  acc, run, in_end - in_begin, lane, pos, p.inner_index_stride);
            } else {
              FoldStrided<R, Tr, Tin, NY, LANES, IndexT>(acc, run, in_end - in_begin, p.inner_stride, lane, pos,
                                                         p.inner_index_stride);
            }
          }
        } while (levels.Next(acc, seg < seg_end));
        levels.Total(acc);
      }
    }
    acc[0] = kps::BlockReduce<R, LANES, BLOCK>(acc[0], smem);
    if constexpr (Split) {
      // The host launches one block column per output group when it splits: no grid-stride here.
      // The combine is written out here, not kps::CombineSplits as in ReduceOuter and ReduceStaged:
      // as one shared device function it changed this kernel's main loop (same registers), 3% slower
      // on 4096 rows of 65536 floats; a round here reads LANES x NY rows of a scalar's partials, so
      // one level serves, and LANES rows of a state's (kps::kPartialRows: NY of complex Welford's
      // took the registers that halved the main loop's tile).
      if (active && lane == 0) partials[split * p.num_out + row] = acc[0];
      if (!kps::IsLastBlock(p.semaphores + blockIdx.x, static_cast<unsigned>(p.num_splits))) continue;
      acc[0] = R::Identity();
      if (active) {
        constexpr int kRows = kps::kPartialRows<Acc, NY>;
        for (IndexT s = lane; s < p.num_splits; s += static_cast<IndexT>(LANES) * kRows) {
          const IndexT left = static_cast<IndexT>(p.num_splits) - s;
          const int num_y = static_cast<int>(min(static_cast<IndexT>(kRows), (left + LANES - 1) / LANES));
          Acc part[kRows];
          kps::ReadPartials<Acc, 1, kRows>(part, partials + s * p.num_out + row, LANES * p.num_out, 1, num_y,
                                           R::Identity());
          kps::Reduce<R, 1, kRows>(acc, part);
        }
      }
      acc[0] = kps::BlockReduce<R, LANES, BLOCK>(acc[0], smem);
    }
    if (active && lane == 0) {
      const Tout out[1] = {Ep::Apply(acc[0], p.count)};
      kps::LookAt<Tout, 1, false>(p.look, out, 1, looked);
      kps::WriteData<Tout, 1, false, false>(y + p.kept.OutOffset(row), out, 1, 1);
    }
  }
}

}  // namespace kernels
