// ReduceOuter: the innermost dim is kept (`higher`, and `any` reductions ending in a kept dim) and
// wide enough for 16-byte loads along it: BX threads side by side take VEC adjacent outputs each (one
// 16-byte load per row where rows are aligned; else a column each, element by element, with more
// rows in flight), BLOCK / BX rows of threads split the reduced rows and meet in shared memory. A BX
// that does not divide BLOCK (every column of a row in one tile: 33, or 9) leaves the threads past the
// last whole row of threads out of the loads.
#pragma once

#include "params.cuh"
#include "folds.cuh"

namespace kernels {

// Store the VEC results of one thread: vectorised when whole and allowed, else predicated.
template <class Ep, int VEC, bool VecOut>
__device__ __forceinline__ void StoreColumns(typename Ep::out_t* dst, const typename Ep::acc_t (&acc)[VEC],
                                             long long stride, int ncols, long long count, const kps::Look& look,
                                             bool& looked) {
  typename Ep::out_t out[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) out[j] = Ep::Apply(acc[j], count);
  kps::LookAt<typename Ep::out_t, VEC, true>(look, out, ncols, looked);
  if (ncols == VEC) {
    kps::WriteData<typename Ep::out_t, VEC, false, VecOut>(dst, out, stride, VEC);
  } else {
    kps::WriteData<typename Ep::out_t, VEC, true, false>(dst, out, stride, ncols);
  }
}

// One step of ReduceOuter down its rows: NY rows of the thread's VEC columns from `first` on, `step`
// apart (vectors where VecIn, outside the boundary; ShiftedWords: the word of four byte columns at
// the thread's column, kps::ReadWordsShifted), transformed and folded into acc. Where IsBoundary
// only num_x columns and num_y rows.
template <class R, class Tr, typename Tin, typename Elem, int VEC, int NY, bool IsBoundary, bool VecIn,
          bool ShiftedWords, class Src, class Calc, typename IndexT>
__device__ __forceinline__ void FoldColumnRows(typename R::acc_t (&acc)[VEC], Src src, const Calc& rows, IndexT first,
                                               IndexT step, long long index_offset, long long stride_x,
                                               int word_bytes, int num_x, int num_y) {
  using Acc = typename R::acc_t;
  Elem raw[VEC * NY];
  auto index = kps::AffineIndex<NY>(index_offset, 0, 0);  // a row's columns share its index
  if constexpr (ShiftedWords) {
    kps::ReadWordsShifted<NY, IsBoundary>(raw, index, src, rows, first, step, word_bytes, num_y);
  } else {
    kps::ReadDataReduce<Tin, VEC, NY, IsBoundary, VecIn && !IsBoundary>(raw, index, src, rows, first, step, stride_x,
                                                                         num_x, num_y);
  }
  kps::ReduceUnary<R, Tr, Elem, VEC, NY, VEC, IsBoundary>(acc, raw, num_x, num_y, index);
}

// One thread's columns whose every reduced row is in its tile (OneRow's one row, Stacked's NY): the NY
// rows from `row` on folded into the identity and the carry closed, for the epilogue.
template <class R, class Tr, typename Tin, typename Elem, int VEC, int NY, bool IsBoundary, bool VecIn, class Src,
          class Params, typename IndexT>
__device__ __forceinline__ void FoldWholeColumns(typename R::acc_t (&acc)[VEC], Src src, const Params& p, IndexT row,
                                                 int ncols) {
  kps::CarryFor<R, Tin, VEC> carry;
  FoldColumnRows<R, Tr, Tin, Elem, VEC, NY, IsBoundary, VecIn, false>(acc, src, p.red, row, static_cast<IndexT>(1),
                                                                       p.index_offset, p.inner_in_stride, 0, ncols, NY);
  carry.Step(acc);
  carry.Total(acc);
}

// Prefetch: every tile's reduced rows are one step of the thread's tile (a few rows under kept
// columns), and each block walks many tiles. One tile is then too little work to hide a load's
// latency, so the block loads the next tile's rows while it folds this one's: two tiles' loads in
// flight a block. The rows a thread reads (num_y) are the same in every tile; its columns (ncols) are
// all VEC but in a row's last tile, where the loads go element by element.
template <class R, class Tr, class Ep, typename Tin, int VEC, int NY, int BX, int BLOCK, typename IndexT, bool VecIn,
          bool VecOut, class Params>
__device__ __forceinline__ void FoldTilesPrefetched(const Params& p, const kps::Ptr<Tin> x, typename Ep::out_t* y,
                                                    typename R::acc_t* smem, int tx, int ty, bool& looked) {
  using Acc = typename R::acc_t;
  constexpr int kBY = BLOCK / BX;
  constexpr bool kRagged = BLOCK % BX != 0;
  const int num_y = (!kRagged || ty < kBY) && ty < p.num_red
      ? static_cast<int>(min(static_cast<long long>(NY), (p.num_red - ty + kBY - 1) / kBY)) : 0;
  struct Where {
    int ncols;
    long long out_off;
    IndexT col;
  };
  Tin raw[VEC * NY];
  kps::TileIndex<NY> index;
  auto load = [&](IndexT tile) -> Where {  // this thread's share of a tile: its loads, where its results go
    const IndexT outer = kps::DivBy<IndexT>(tile, p.col_tiles, p.col_tiles_magic);
    const IndexT col = ((tile - outer * static_cast<IndexT>(p.col_tiles)) * BX + tx) * VEC;
    const int ncols = num_y > 0 && col < p.inner_len
        ? static_cast<int>(min(static_cast<long long>(VEC), p.inner_len - col)) : 0;
    long long in_off = 0, out_off = 0;
    p.kept.Get(outer, in_off, out_off);
    const kps::Ptr<Tin> src = x + in_off + col * p.inner_in_stride;
    index = kps::AffineIndex<NY>(p.index_offset, 0, 0);
    const IndexT first = static_cast<IndexT>(ty), step = static_cast<IndexT>(kBY);
    if (ncols == VEC) {
      kps::ReadDataReduce<Tin, VEC, NY, true, VecIn>(raw, index, src, p.red, first, step, p.inner_in_stride, VEC,
                                                     num_y);
    } else if (ncols > 0) {
      kps::ReadDataReduce<Tin, VEC, NY, true, false>(raw, index, src, p.red, first, step, p.inner_in_stride, ncols,
                                                     num_y);
    }
    return {ncols, out_off, col};
  };
  IndexT tile = blockIdx.x;
  Where next = load(tile);  // (the host launches no more blocks than tiles)
  for (; tile < p.num_tiles; tile += gridDim.x) {  // uniform per block: every thread reaches the barriers
    Tin rows[VEC * NY];
#pragma unroll
    for (int i = 0; i < VEC * NY; ++i) rows[i] = raw[i];
    const kps::TileIndex<NY> at = index;
    const Where here = next;
    if (tile + gridDim.x < p.num_tiles) next = load(tile + gridDim.x);
    Acc acc[VEC];
    kps::Init(acc, R::Identity());
    kps::CarryFor<R, Tin, VEC> carry;
    if (here.ncols > 0) kps::ReduceUnary<R, Tr, Tin, VEC, NY, VEC, true>(acc, rows, here.ncols, num_y, at);
    carry.Step(acc);
    carry.Total(acc);
    kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);
    if (ty == 0 && here.ncols > 0) {
      StoreColumns<Ep, VEC, VecOut>(y + here.out_off + here.col * p.inner_out_stride, acc, p.inner_out_stride,
                                    here.ncols, p.count, p.look, looked);
    }
  }
}

// ShiftedWords: a 1-byte `any` / `all` of kept columns whose rows start anywhere in a word (W no
// multiple of 4): Tin is bytes, the offsets count bytes, and a column is a word of four of them
// (VEC == 1), read from the aligned words around it (kps::ReadWordsShifted) and folded by the
// functors over words (kps.word_columns); the results are words of four bools, the last one of a
// row stored byte by byte.
// OneRow: each output reduces one element (a reduction over a length of 1 is a map): one fold of
// the thread's row into the identity, no loop over rows, no combine across threads or splits, and
// the count 1 passed to the epilogue as a constant. Prefetch: FoldTilesPrefetched's walk of the tiles.
// Stacked: every tile's reduced rows are one thread's NY rows (a few rows under narrow kept columns,
// where rows of threads down them would idle): each row of threads folds tiles of its own, tiles
// blockIdx.x * kBY + ty, ..., and stores them; no combine across threads or splits.
template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int BX, int BLOCK, int MIN_BLOCKS,
          int KND, int RND, typename IndexT, bool VecIn, bool VecOut, bool ShiftedWords, bool OneRow, bool Prefetch,
          bool Stacked>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) ReduceOuter(const OuterParams<KND, RND, IndexT> p) {
  static_assert(!ShiftedWords || (VEC == 1 && !VecIn && sizeof(Tin) == 1), "a word a thread, from bytes");
  static_assert(!OneRow || (NY == 1 && !ShiftedWords), "one element an output, of whole elements");
  static_assert(!Prefetch || (!OneRow && !ShiftedWords), "a few rows an output, of whole elements");
  static_assert(!Stacked || (!OneRow && !ShiftedWords && !Prefetch), "a few rows an output, of whole elements");
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  using Elem = typename kps::Select<ShiftedWords, unsigned, Tin>::type;
  constexpr int kBY = BLOCK / BX;
  constexpr IndexT kStep = static_cast<IndexT>(kBY) * NY;  // rows per step
  constexpr bool kRagged = BLOCK % BX != 0;  // threads past the kBY rows: no columns (kps::BlockReduceY)
  __shared__ Acc smem[VEC * kps::kBlockRowsY<BX, BLOCK> * BX];
  const kps::Ptr<Tin> x = kps::PtrOf<Tin>::Make(p.x, p.more_inputs);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int tx = threadIdx.x % BX;
  const int ty = threadIdx.x / BX;

  const IndexT split = blockIdx.y;
  const IndexT r_begin = split * static_cast<IndexT>(p.rows_per_split);
  const IndexT r_end = min(static_cast<IndexT>(p.num_red), r_begin + static_cast<IndexT>(p.rows_per_split));

  bool looked = p.look.host == nullptr;  // (kps::LookAt)
  if constexpr (Prefetch) {
    FoldTilesPrefetched<R, Tr, Ep, Tin, VEC, NY, BX, BLOCK, IndexT, VecIn, VecOut>(p, x, y, smem, tx, ty, looked);
    return;
  }
  constexpr IndexT kBlockTiles = Stacked ? kBY : 1;  // tiles a block takes at once: a row of threads each when Stacked
  const IndexT tile_step = static_cast<IndexT>(gridDim.x) * kBlockTiles;
  for (IndexT tile = static_cast<IndexT>(blockIdx.x) * kBlockTiles + (Stacked ? ty : 0); tile < p.num_tiles;
       tile += tile_step) {
    // (uniform per block unless Stacked, which meets no barrier)
    const IndexT outer = kps::DivBy<IndexT>(tile, p.col_tiles, p.col_tiles_magic);
    const IndexT col = ((tile - outer * static_cast<IndexT>(p.col_tiles)) * BX + tx) * VEC;
    const int ncols = (!kRagged || ty < kBY) && col < p.inner_len
        ? static_cast<int>(min(static_cast<long long>(VEC), p.inner_len - col)) : 0;
    long long in_off = 0, out_off = 0;
    p.kept.Get(outer, in_off, out_off);
    const kps::Ptr<Tin> src = x + in_off + col * p.inner_in_stride;

    Acc acc[VEC];
    kps::Init(acc, R::Identity());
    // ShiftedWords: the bytes of this column's word inside the row
    const int word_bytes = ShiftedWords ? static_cast<int>(min(4ll, p.inner_bytes - 4 * static_cast<long long>(col))) : 0;
    if constexpr (OneRow) {
      if (ty != 0 || ncols == 0) continue;  // (a row of threads has the one row)
      // (each branch stores its own results: merged after the branches, the epilogue would take the
      // boundary's runtime counts and keep its divisions on the whole vectors too)
      Tout* dst = y + out_off + col * p.inner_out_stride;
      if (ncols == VEC) {
        FoldWholeColumns<R, Tr, Tin, Elem, VEC, 1, false, VecIn>(acc, src, p, r_begin, VEC);
        StoreColumns<Ep, VEC, VecOut>(dst, acc, p.inner_out_stride, VEC, 1, p.look, looked);
      } else {
        FoldWholeColumns<R, Tr, Tin, Elem, VEC, 1, true, VecIn>(acc, src, p, r_begin, ncols);
        StoreColumns<Ep, VEC, VecOut>(dst, acc, p.inner_out_stride, ncols, 1, p.look, looked);
      }
      continue;
    }
    if constexpr (Stacked) {  // the tile's rows are this thread's NY: folded, closed and stored here
      // (one store after the branches: the count is a run-time one either way)
      if (ncols == 0) continue;
      if (ncols == VEC) {
        FoldWholeColumns<R, Tr, Tin, Elem, VEC, NY, false, VecIn>(acc, src, p, static_cast<IndexT>(0), VEC);
      } else {
        FoldWholeColumns<R, Tr, Tin, Elem, VEC, NY, true, VecIn>(acc, src, p, static_cast<IndexT>(0), ncols);
      }
      StoreColumns<Ep, VEC, VecOut>(y + out_off + col * p.inner_out_stride, acc, p.inner_out_stride, ncols, p.count,
                                    p.look, looked);
      continue;
    }
    kps::CarryFor<R, Tin, VEC> carry;
    IndexT r = r_begin + ty;
    if (ncols == VEC) {
      for (; r + (NY - 1) * kBY < r_end; r += kStep) {
        FoldColumnRows<R, Tr, Tin, Elem, VEC, NY, false, VecIn, ShiftedWords>(
            acc, src, p.red, r, static_cast<IndexT>(kBY), p.index_offset, p.inner_in_stride, word_bytes, VEC, NY);
        carry.Step(acc);
      }
    }
    if (ncols > 0) {
      for (; r < r_end; r += kStep) {
        const int num_y = static_cast<int>(min(static_cast<IndexT>(NY), (r_end - r + kBY - 1) / kBY));
        FoldColumnRows<R, Tr, Tin, Elem, VEC, NY, true, VecIn, ShiftedWords>(
            acc, src, p.red, r, static_cast<IndexT>(kBY), p.index_offset, p.inner_in_stride, word_bytes, ncols, num_y);
        carry.Step(acc);
      }
    }
    carry.Total(acc);
    kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);

    const long long first = static_cast<long long>(outer) * p.inner_len + col;  // flat output index
    if (p.num_splits > 1) {  // (a runtime test, not the other kernels' Split flag: docs/tuning.md)
      // The host launches one block column per tile when it splits: no grid-stride here.
      auto fold = [&](unsigned row, unsigned count, unsigned step) {
        kps::FoldPartials<R, VEC, kps::kPartialRows<Acc, NY, VEC>, kBY>(acc, partials + first, row, count, step,
                                                                   p.num_out, ncols, ty, ncols > 0);
        kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);
      };
      auto store = [&](unsigned row) {
        if (ty != 0) return;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          if (j < ncols) partials[row * p.num_out + first + j] = acc[j];
        }
      };
      store(static_cast<unsigned>(split));
      if (!kps::CombineSplits(p.semaphores, static_cast<unsigned>(split), static_cast<unsigned>(p.num_splits),
                              static_cast<unsigned>(p.split_group), fold, store)) {
        continue;
      }
    }
    if (ty == 0 && ncols > 0) {
      if constexpr (ShiftedWords) {
        if (word_bytes < 4) {  // the row's last columns: their bytes of the word alone
          const unsigned bools = static_cast<unsigned>(Ep::Apply(acc[0], p.count));
          unsigned char* dst = reinterpret_cast<unsigned char*>(y + out_off + col);
          for (int b = 0; b < word_bytes; ++b) dst[b] = static_cast<unsigned char>(bools >> (8 * b));
          continue;
        }
      }
      StoreColumns<Ep, VEC, VecOut>(y + out_off + col * p.inner_out_stride, acc, p.inner_out_stride, ncols,
                                    p.count, p.look, looked);
    }
  }
}

}  // namespace kernels
