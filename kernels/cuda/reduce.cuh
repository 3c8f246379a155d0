// The reduce kernels, composed only from the kps primitives.
//
// The planner (kernels/config.py) turns every reduction into
//     out[o] = Ep(fold_{r} Tr(x[kept(o) + red(r)]))
// with the kept and the reduced dims merged and sorted by stride, and picks one of two kernels by
// the dim with the smallest stride (the one that coalesces):
//   ReduceInner  the innermost dim is reduced (`last`, `full`, and `any` reductions ending in a
//                reduced dim): LANES threads share one output and walk its contiguous runs with
//                16-byte loads; the other reduced dims are runs ("segments") found by an index
//                calculator. Short aligned runs are walked as one flat sequence of vectors.
//   ReduceOuter  the innermost dim is kept (`higher`, and `any` reductions ending in a kept dim):
//                BX threads side by side take VEC adjacent outputs each (one 16-byte load per row),
//                BLOCK / BX rows of threads split the reduced rows and meet in shared memory.
// Both split a long reduction over gridDim.y blocks when the outputs alone cannot fill the GPU;
// partials go to a scratch buffer and the last block to finish combines them in a fixed order, so
// every run gives the same bits.
#pragma once

#include "kps/primitives.cuh"

namespace kernels {

template <int KND, int RND, typename IndexT>
struct InnerParams {
  const void* x;
  void* y;
  void* partials;                  // [num_splits][num_out] accumulators, when split
  unsigned* semaphores;            // one zeroed counter per blockIdx.x, when split
  kps::IndexCalc<KND, IndexT> kept;  // output index -> input and output offsets
  kps::IndexCalc<RND, IndexT> red;   // segment index (FlatRuns: flat vector index) -> input offset
  long long num_out;               // outputs
  long long num_seg;               // segments (runs of the innermost reduced dim) per output
  long long inner_len;             // elements per segment
  long long inner_stride;          // elements between neighbours in a segment (1: vector path)
  long long count;                 // reduced elements per output, for the epilogue
  long long segs_per_split;        // split by segments: segments per block (chunks == 1)
  long long chunks;                // split inside segments: chunks per segment (>= 1)
  long long chunk_len;             // elements per chunk
  long long num_splits;            // gridDim.y
};

template <int KND, int RND, typename IndexT>
struct OuterParams {
  const void* x;
  void* y;
  void* partials;                  // [num_splits][num_out] accumulators, when split
  unsigned* semaphores;            // one zeroed counter per blockIdx.x, when split
  kps::IndexCalc<KND, IndexT> kept;  // outer output index -> input and output offsets
  kps::IndexCalc<RND, IndexT> red;   // reduced index -> input offset
  long long num_out;               // outputs (outer outputs x inner_len)
  long long inner_len;             // the innermost kept dim
  long long inner_in_stride;
  long long inner_out_stride;
  long long col_tiles;             // tiles of BX * VEC columns across inner_len
  long long col_tiles_magic;       // fast division by col_tiles
  long long num_tiles;             // outer outputs x col_tiles
  long long num_red;               // reduced elements per output
  long long count;                 // for the epilogue
  long long rows_per_split;
  long long num_splits;            // gridDim.y
};

// Fold `len` elements src[i * stride] spread over LANES lanes (lane takes i = lane + k * LANES),
// NY elements per lane in flight.
template <class R, class Tr, typename Tin, int NY, int LANES, typename IndexT>
__device__ __forceinline__ void FoldStrided(typename R::acc_t (&acc)[1], const Tin* src, IndexT len,
                                            long long stride, int lane) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  Tin raw[NY];
  Acc tile[NY];
  IndexT i = 0;
  for (; i + kStep <= len; i += kStep) {
    kps::ReadData<Tin, 1, NY, false>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, NY);
    kps::ElementwiseUnary<Acc, Tin, 1, NY, Tr, false>(tile, raw, 1, NY, R::Identity());
    kps::Reduce<R, 1, NY>(acc, tile);
  }
  if (i + lane < len) {
    const int num_y = static_cast<int>((len - i - lane + LANES - 1) / LANES);
    kps::ReadData<Tin, 1, NY, true>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, num_y);
    kps::ElementwiseUnary<Acc, Tin, 1, NY, Tr, true>(tile, raw, 1, num_y, R::Identity());
    kps::Reduce<R, 1, NY>(acc, tile);
  }
}

// Fold one contiguous run: a scalar head up to the first 16-byte boundary, aligned VEC-wide
// vectors (NY per lane in flight), a scalar tail.
template <class R, class Tr, typename Tin, int VEC, int NY, int LANES, typename IndexT>
__device__ __forceinline__ void FoldContiguous(typename R::acc_t (&acc)[1], const Tin* src, IndexT len,
                                               int lane) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;  // vectors per step
  const unsigned misalign = static_cast<unsigned>(reinterpret_cast<unsigned long long>(src) & 15u);
  const IndexT head = min(len, static_cast<IndexT>(((16u - misalign) & 15u) / sizeof(Tin)));
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT>(acc, src, head, 1, lane);

  const Tin* body = src + head;
  const IndexT num_vec = (len - head) / VEC;
  Acc cols[VEC];
  kps::Init(cols, R::Identity());
  Tin raw[VEC * NY];
  Acc tile[VEC * NY];
  IndexT v = 0;
  for (; v + kStep <= num_vec; v += kStep) {
    kps::ReadDataVec<Tin, VEC, NY, false>(raw, body + (v + lane) * VEC, LANES * VEC, NY);
    kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, false>(tile, raw, VEC, NY, R::Identity());
    kps::Reduce<R, VEC, NY>(cols, tile);
  }
  if (v + lane < num_vec) {
    const int num_y = static_cast<int>((num_vec - v - lane + LANES - 1) / LANES);
    kps::ReadDataVec<Tin, VEC, NY, true>(raw, body + (v + lane) * VEC, LANES * VEC, num_y);
    kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, true>(tile, raw, VEC, num_y, R::Identity());
    kps::Reduce<R, VEC, NY>(cols, tile);
  }
  kps::Reduce<R, 1, VEC>(acc, cols);

  const IndexT done = head + num_vec * VEC;
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT>(acc, src + done, len - done, 1, lane);
}

// Fold the flat vector indices [begin, end) of `runs` (segment x vectors per run + vector): short
// runs laid end to end, so every lane keeps NY loads in flight across run boundaries. The host
// guarantees every run starts 16-byte aligned and holds whole vectors.
template <class R, class Tr, typename Tin, int VEC, int NY, int LANES, class Calc, typename IndexT>
__device__ __forceinline__ void FoldRuns(typename R::acc_t (&acc)[1], const Tin* src, const Calc& runs,
                                         IndexT begin, IndexT end, int lane) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  Acc cols[VEC];
  kps::Init(cols, R::Identity());
  Tin raw[VEC * NY];
  Acc tile[VEC * NY];
  IndexT i = begin + lane;
  for (; i + (NY - 1) * LANES < end; i += kStep) {
    kps::ReadDataReduce<Tin, VEC, NY, false, true>(raw, src, runs, i, static_cast<IndexT>(LANES), 1, VEC, NY);
    kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, false>(tile, raw, VEC, NY, R::Identity());
    kps::Reduce<R, VEC, NY>(cols, tile);
  }
  if (i < end) {
    const int num_y = static_cast<int>((end - i + LANES - 1) / LANES);
    kps::ReadDataReduce<Tin, VEC, NY, true, true>(raw, src, runs, i, static_cast<IndexT>(LANES), 1, VEC, num_y);
    kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, true>(tile, raw, VEC, num_y, R::Identity());
    kps::Reduce<R, VEC, NY>(cols, tile);
  }
  kps::Reduce<R, 1, VEC>(acc, cols);
}

template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int LANES, int BLOCK, int KND,
          int RND, typename IndexT, bool FlatRuns>
__global__ void __launch_bounds__(BLOCK) ReduceInner(const InnerParams<KND, RND, IndexT> p) {
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  constexpr int kGroups = BLOCK / LANES;
  __shared__ Acc smem[BLOCK / kps::kWarpSize];
  const Tin* x = static_cast<const Tin*>(p.x);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int lane = threadIdx.x % LANES;
  const int group = threadIdx.x / LANES;

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
  for (IndexT base = blockIdx.x * kGroups; base < p.num_out; base += gridDim.x * kGroups) {
    const IndexT row = base + group;
    const bool active = row < p.num_out;
    Acc acc[1] = {R::Identity()};
    if (active) {
      const long long in_off = p.kept.Offset(row);
      if constexpr (FlatRuns) {  // red holds the vectors of a run as its innermost dim
        const IndexT vecs = static_cast<IndexT>(p.inner_len / VEC);
        FoldRuns<R, Tr, Tin, VEC, NY, LANES>(acc, x + in_off, p.red, seg_begin * vecs, seg_end * vecs, lane);
      } else {
        for (IndexT seg = seg_begin; seg < seg_end; ++seg) {
          const Tin* run = x + in_off + p.red.Offset(seg) + in_begin * p.inner_stride;
          if constexpr (VEC > 1) {
            FoldContiguous<R, Tr, Tin, VEC, NY, LANES, IndexT>(acc, run, in_end - in_begin, lane);
          } else {
            FoldStrided<R, Tr, Tin, NY, LANES, IndexT>(acc, run, in_end - in_begin, p.inner_stride, lane);
          }
        }
      }
    }
    acc[0] = kps::BlockReduce<R, LANES, BLOCK>(acc[0], smem);
    if (p.num_splits > 1) {
      // The host launches one block column per output group when it splits: no grid-stride here.
      // The combine is written out here and in ReduceOuter on purpose: as one shared device function
      // it changed this kernel's main loop (same registers), 3% slower on 4096 rows of 65536 floats.
      if (active && lane == 0) partials[split * p.num_out + row] = acc[0];
      if (!kps::IsLastBlock(p.semaphores + blockIdx.x, static_cast<unsigned>(p.num_splits))) continue;
      acc[0] = R::Identity();
      if (active) {
        for (IndexT s = lane; s < p.num_splits; s += static_cast<IndexT>(LANES) * NY) {
          const IndexT left = static_cast<IndexT>(p.num_splits) - s;
          const int num_y = static_cast<int>(min(static_cast<IndexT>(NY), (left + LANES - 1) / LANES));
          Acc part[NY];
          kps::ReadPartials<Acc, 1, NY>(part, partials + s * p.num_out + row, LANES * p.num_out, 1, num_y,
                                        R::Identity());
          kps::Reduce<R, 1, NY>(acc, part);
        }
      }
      acc[0] = kps::BlockReduce<R, LANES, BLOCK>(acc[0], smem);
    }
    if (active && lane == 0) {
      const Tout out[1] = {Ep::Apply(acc[0], p.count)};
      kps::WriteData<Tout, 1, false, false>(y + p.kept.OutOffset(row), out, 1, 1);
    }
  }
}

// Store the VEC results of one thread: vectorised when whole and allowed, else predicated.
template <class Ep, int VEC, bool VecOut>
__device__ __forceinline__ void StoreColumns(typename Ep::out_t* dst, const typename Ep::acc_t (&acc)[VEC],
                                             long long stride, int ncols, long long count) {
  typename Ep::out_t out[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) out[j] = Ep::Apply(acc[j], count);
  if (ncols == VEC) {
    kps::WriteData<typename Ep::out_t, VEC, false, VecOut>(dst, out, stride, VEC);
  } else {
    kps::WriteData<typename Ep::out_t, VEC, true, false>(dst, out, stride, ncols);
  }
}

template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int BX, int BLOCK, int KND,
          int RND, typename IndexT, bool VecIn, bool VecOut>
__global__ void __launch_bounds__(BLOCK) ReduceOuter(const OuterParams<KND, RND, IndexT> p) {
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  constexpr int kBY = BLOCK / BX;
  constexpr IndexT kStep = static_cast<IndexT>(kBY) * NY;  // rows per step
  __shared__ Acc smem[VEC * BLOCK];
  const Tin* x = static_cast<const Tin*>(p.x);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int tx = threadIdx.x % BX;
  const int ty = threadIdx.x / BX;

  const IndexT split = blockIdx.y;
  const IndexT r_begin = split * static_cast<IndexT>(p.rows_per_split);
  const IndexT r_end = min(static_cast<IndexT>(p.num_red), r_begin + static_cast<IndexT>(p.rows_per_split));

  for (IndexT tile = blockIdx.x; tile < p.num_tiles; tile += gridDim.x) {  // uniform per block
    const IndexT outer = kps::DivBy<IndexT>(tile, p.col_tiles, p.col_tiles_magic);
    const IndexT col = ((tile - outer * static_cast<IndexT>(p.col_tiles)) * BX + tx) * VEC;
    const int ncols = col < p.inner_len ? static_cast<int>(min(static_cast<long long>(VEC), p.inner_len - col)) : 0;
    long long in_off = 0, out_off = 0;
    p.kept.Get(outer, in_off, out_off);
    const Tin* src = x + in_off + col * p.inner_in_stride;

    Acc acc[VEC];
    kps::Init(acc, R::Identity());
    Tin raw[VEC * NY];
    Acc tile_acc[VEC * NY];
    IndexT r = r_begin + ty;
    if (ncols == VEC) {
      for (; r + (NY - 1) * kBY < r_end; r += kStep) {
        kps::ReadDataReduce<Tin, VEC, NY, false, VecIn>(raw, src, p.red, r, static_cast<IndexT>(kBY),
                                                        p.inner_in_stride, VEC, NY);
        kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, false>(tile_acc, raw, VEC, NY, R::Identity());
        kps::Reduce<R, VEC, NY>(acc, tile_acc);
      }
    }
    if (ncols > 0) {
      for (; r < r_end; r += kStep) {
        const int num_y = static_cast<int>(min(static_cast<IndexT>(NY), (r_end - r + kBY - 1) / kBY));
        kps::ReadDataReduce<Tin, VEC, NY, true, false>(raw, src, p.red, r, static_cast<IndexT>(kBY),
                                                       p.inner_in_stride, ncols, num_y);
        kps::ElementwiseUnary<Acc, Tin, VEC, NY, Tr, true>(tile_acc, raw, ncols, num_y, R::Identity());
        kps::Reduce<R, VEC, NY>(acc, tile_acc);
      }
    }
    kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);

    const long long first = static_cast<long long>(outer) * p.inner_len + col;  // flat output index
    if (p.num_splits > 1) {
      // The host launches one block column per tile when it splits: no grid-stride here.
      if (ty == 0) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          if (j < ncols) partials[split * p.num_out + first + j] = acc[j];
        }
      }
      if (!kps::IsLastBlock(p.semaphores + blockIdx.x, static_cast<unsigned>(p.num_splits))) continue;
      kps::Init(acc, R::Identity());
      for (IndexT s = ty; s < p.num_splits && ncols > 0; s += kStep) {
        const IndexT left = static_cast<IndexT>(p.num_splits) - s;
        const int num_y = static_cast<int>(min(static_cast<IndexT>(NY), (left + kBY - 1) / kBY));
        Acc part[VEC * NY];
        kps::ReadPartials<Acc, VEC, NY>(part, partials + s * p.num_out + first, kBY * p.num_out, ncols, num_y,
                                        R::Identity());
        kps::Reduce<R, VEC, NY>(acc, part);
      }
      kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);
    }
    if (ty == 0 && ncols > 0) {
      StoreColumns<Ep, VEC, VecOut>(y + out_off + col * p.inner_out_stride, acc, p.inner_out_stride,
                                    ncols, p.count);
    }
  }
}

}  // namespace kernels
