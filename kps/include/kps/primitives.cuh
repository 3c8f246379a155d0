// The kernel primitives. Every reduce kernel is one pipeline per thread, written with these alone:
//
//   Init -> ReadData / ReadDataVec / ReadDataReduce -> ReduceUnary (ElementwiseUnary -> Reduce, local)
//        -> BlockReduce (global) [-> split: CombineSplits (ReadPartials -> Reduce -> BlockReduce)]
//        -> epilogue -> WriteData
//
// Register tiles are NY rows of NX elements, stored row-major in a flat array `T[NX * NY]`.
// `IsBoundary` is the one boundary flag: false means the whole tile is in range and nothing is
// checked (vector access allowed); true means every slot is checked against `num_x` / `num_y`.
// Slots outside the range are never read and never transformed: they hold the reduce identity.
// Beside each tile a `TileIndex` says where its elements sit in the reduced range (the element's
// index, which arg-reductions lift with the value); reductions that ignore it compile it away.
//
// Functor interface (generated from the Python descriptors in kps/functors.py):
//   reduce    R:  typedef acc_t; enum { kExact } (1: combine never rounds, kps/chains.cuh);
//                 static acc_t Identity(); static acc_t Combine(acc_t, acc_t)
//   transform Tr: typedef arg_t, res_t; static res_t Apply(arg_t)
//   state ops (several fields) also: typedef value_t; static acc_t Lift(value_t, long long index)
//   epilogue  Ep: typedef out_t; static out_t Apply(acc_t, long long count)
#pragma once

#include "kps/types.cuh"
#include "kps/index.cuh"
#include "kps/chains.cuh"

namespace kps {

constexpr int kWarpSize = 32;

// Accumulators a thread keeps for the NX lanes of its vectors: one per lane for a scalar (NX
// independent chains of adds), one in all for a struct state, whose registers would otherwise bound
// the blocks per SM (Welford over 65536 rows of 4096 floats, H100, kernel alone: 1875 -> 2597 GB/s).
// The order of the fold stays fixed.
template <typename Acc, int NX>
constexpr int kLaneAccumulators = __is_class(Acc) ? 1 : NX;

// Whether the reduce functor R merges one element into a state that holds one (R::Fold, a state
// op's; kps/functors.py): complex scalars are classes too, and have none.
template <typename...>
using Void = void;
template <bool B>
struct Bool {
  static constexpr bool value = B;
};
template <class R, class = void>
struct HasFold : Bool<false> {};
template <class R>
struct HasFold<R, Void<decltype(&R::Fold)>> : Bool<true> {};

// Whether R merges one element into a state that may be empty (R::Push, a state op's where its
// lift selects fields by the element; kps/functors.py).
template <class R, class = void>
struct HasPush : Bool<false> {};
template <class R>
struct HasPush<R, Void<decltype(&R::Push)>> : Bool<true> {};

// Whether an accumulator is a state (a struct of several fields, kps/functors.py; a complex number
// is a struct of two parts whose combine is a scalar's two adds): its combine is long.
template <typename Acc>
inline constexpr bool kIsState = __is_class(Acc) && !IsComplex<Acc>::value;

// Bytes of a complex accumulator's partials a thread loads a round of a split's combine: two rows of
// a complex64 sum's two columns, four of a complex128's one (one row a round: 8 rounds over 374
// splits, docs/tuning.md). kernels/planner/splits.py plans with the same number.
constexpr int kComplexPartialBytes = 64;

// Rows of partials each thread loads at once in a split's combine (ReadPartials), for NX partials a
// row: NY for scalars; kComplexPartialBytes of a complex number's, at least one row and at most NY;
// one for a state, whose NX x NY tile of them would set the registers of the whole kernel
// (ReduceOuter with Welford: 206 -> 121 registers; float32 logsumexp bounded to 4 blocks per SM, 64
// bytes spilled -> none, 52 -> 100% of the read ceiling over (65536, 4096), kernel alone). Many
// splits combine in two levels instead (kps::CombineSplits).
__host__ __device__ constexpr int ClampRows(int rows, int most) { return rows < 1 ? 1 : rows > most ? most : rows; }
template <typename Acc, int NY, int NX = 1>
constexpr int kPartialRows = !__is_class(Acc) ? NY
                             : kIsState<Acc>   ? 1
                                               : ClampRows(kComplexPartialBytes / (static_cast<int>(sizeof(Acc)) * NX), NY);

template <typename T, int N>
__device__ __forceinline__ void Init(T (&dst)[N], T value) {
#pragma unroll
  for (int i = 0; i < N; ++i) dst[i] = value;
}

// The indices of a tile's elements in the reduced range: element (y, x) is row[y] + x * step_x.
template <int NY>
struct TileIndex {
  long long row[NY];
  long long step_x;
};

// Rows `step_y` apart from `first`.
template <int NY>
__device__ __forceinline__ TileIndex<NY> AffineIndex(long long first, long long step_y, long long step_x) {
  TileIndex<NY> index;
#pragma unroll
  for (int y = 0; y < NY; ++y) index.row[y] = first + y * step_y;
  index.step_x = step_x;
  return index;
}

// Tile element (y, x) from src[y * stride_y + x * stride_x] (`src`: a pointer, or a Zip of several).
template <typename T, int NX, int NY, bool IsBoundary, typename Src>
__device__ __forceinline__ void ReadData(T (&dst)[NX * NY], Src src, long long stride_x,
                                         long long stride_y, int num_x, int num_y) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
#pragma unroll
    for (int x = 0; x < NX; ++x) {
      if (!IsBoundary || (x < num_x && y < num_y)) dst[y * NX + x] = src[y * stride_y + x * stride_x];
    }
  }
}

// Tile row y from one aligned vector of NX contiguous elements at `row` (a vector per input of a Zip).
template <typename T, int NX, int NY>
__device__ __forceinline__ void ReadVectorRow(T (&dst)[NX * NY], int y, const T* row) {
  const Vec<T, NX> v = *reinterpret_cast<const Vec<T, NX>*>(row);
#pragma unroll
  for (int x = 0; x < NX; ++x) dst[y * NX + x] = v.val[x];
}
template <typename T, int NX, int NY, typename... In>
__device__ __forceinline__ void ReadVectorRow(T (&dst)[NX * NY], int y, Zip<In...> row) {
  T vec[NX];
  LoadVector<NX>(vec, row);
#pragma unroll
  for (int x = 0; x < NX; ++x) dst[y * NX + x] = vec[x];
}

// Row y is one aligned vector of NX contiguous elements at src + y * stride_y.
// The host guarantees the alignment of src and that stride_y keeps it.
template <typename T, int NX, int NY, bool IsBoundary, typename Src>
__device__ __forceinline__ void ReadDataVec(T (&dst)[NX * NY], Src src, long long stride_y, int num_y) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
    if (!IsBoundary || y < num_y) ReadVectorRow<T, NX, NY>(dst, y, src + y * stride_y);
  }
}

// Row y's aligned chunk of an input off the grid, `lo[y]` (the first input's own where they share it),
// and, where no next lane reads row y (a warp's last lane, or the last in range), the first K words
// of the chunk after it, `own[y]`, which the other lanes take from the next lane (NextWords).
template <int K, int NY, bool IsBoundary>
__device__ __forceinline__ void LoadLaneChunks(Vec<unsigned, 4> (&lo)[NY], unsigned (&own)[NY][K],
                                               const Vec<unsigned, 4>* chunk, long long chunk_stride,
                                               const Vec<unsigned, 4> (&first)[NY], bool shares_first, bool last,
                                               int num_y, int next_y) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
    const bool mine = !IsBoundary || y < num_y;
    if (shares_first) {
      lo[y] = first[y];
    } else if (mine) {
      lo[y] = chunk[y * chunk_stride];
    }
    if (mine && (last || (IsBoundary && y >= next_y))) {
      if constexpr (K == 4) {  // one 16-byte load
        const Vec<unsigned, 4> next = chunk[y * chunk_stride + 1];
#pragma unroll
        for (int w = 0; w < 4; ++w) own[y][w] = next.val[w];
      } else {
        const unsigned* next = reinterpret_cast<const unsigned*>(chunk + y * chunk_stride + 1);
#pragma unroll
        for (int w = 0; w < K; ++w) own[y][w] = next[w];
      }
    }
  }
}

// The first K words after row y's chunk: the next lane's chunk by a shuffle, or this lane's `own`.
template <int K, bool IsBoundary>
__device__ __forceinline__ void NextWords(unsigned (&hi)[K], const Vec<unsigned, 4>& lo, const unsigned (&own)[K],
                                          bool last, int y, int next_y) {
  const bool from_next = !last && (!IsBoundary || y < next_y);
#pragma unroll
  for (int w = 0; w < K; ++w) {
    const unsigned next = __shfl_down_sync(0xffffffffu, lo.val[w], 1);
    hi[w] = from_next ? next : own[w];
  }
}

// Tile rows of an input of a Zip from the aligned chunks around them, where lane l's row y lies just
// before lane l + 1's (see ReadDataVecLanes). `first`: the first input's chunks of the same rows, at
// `first_addr` for row 0. This lane reads rows [0, num_y), the next lane rows [0, next_y). SHIFT:
// the bytes past the grid of every input off it, where the host knows one for all (x[1:] beside
// x[:-1]: 4 bytes of float32), else 0: each input's own, read at run time. A row is the last
// 16 - shift bytes of its chunk and the first `shift` of the next: a shift of W whole words known
// here takes those W words, W shuffles and no funnel, where any other takes four and a funnel (the
// Rosenbrock cost's float32 kernel: 58 -> 48 registers, five blocks an SM where four fit).
template <int NX, int NY, bool IsBoundary, int SHIFT, typename T>
__device__ __forceinline__ void LoadShiftedLanes(T (&dst)[NX * NY], const T* src, long long stride_y,
                                                 const Vec<unsigned, 4> (&first)[NY], unsigned long long first_addr,
                                                 int num_y, int next_y) {
  static_assert(SHIFT >= 0 && SHIFT < 16, "a shift past the 16-byte grid");
  const unsigned own_shift = static_cast<unsigned>(Address(src) & 15u);  // uniform: the inputs keep one offset
  if (own_shift == 0) {  // on the first input's grid
    ReadDataVec<T, NX, NY, IsBoundary>(dst, src, stride_y, num_y);
    return;
  }
  const unsigned shift = SHIFT ? SHIFT : own_shift;
  const bool last = threadIdx.x % kWarpSize == kWarpSize - 1;  // the warp's last: no next lane
  const Vec<unsigned, 4>* chunk = AlignedChunk(src, shift);
  const long long chunk_stride = stride_y * static_cast<long long>(sizeof(T)) / 16;
  const bool shares_first = Address(chunk) == first_addr;
  constexpr bool kWords = SHIFT % 4 == 0 && SHIFT != 0;
  constexpr int kNext = kWords ? SHIFT / 4 : 4;  // words a row takes from the next chunk
  Vec<unsigned, 4> lo[NY];
  unsigned own[NY][kNext];
  LoadLaneChunks<kNext, NY, IsBoundary>(lo, own, chunk, chunk_stride, first, shares_first, last, num_y, next_y);
#pragma unroll
  for (int y = 0; y < NY; ++y) {
    unsigned hi[kNext];
    NextWords<kNext, IsBoundary>(hi, lo[y], own[y], last, y, next_y);
    T row[NX];
    if constexpr (kWords) {
      union { unsigned words[4]; T val[NX]; } out;
#pragma unroll
      for (int w = 0; w < 4 - kNext; ++w) out.words[w] = lo[y].val[w + kNext];
#pragma unroll
      for (int w = 0; w < kNext; ++w) out.words[4 - kNext + w] = hi[w];
#pragma unroll
      for (int x = 0; x < NX; ++x) row[x] = out.val[x];
    } else {
      FunnelChunks<NX>(row, lo[y], Vec<unsigned, 4>{{hi[0], hi[1], hi[2], hi[3]}}, shift);
    }
#pragma unroll
    for (int x = 0; x < NX; ++x) dst[y * NX + x] = row[x];
  }
}

template <int NX, int NY, bool IsBoundary, int SHIFT>
__device__ __forceinline__ void ZipLanes(Pack<> (&)[NX * NY], Zip<>, long long, const Vec<unsigned, 4> (&)[NY],
                                         unsigned long long, int, int) {}
template <int NX, int NY, bool IsBoundary, int SHIFT, typename T, typename... Rest>
__device__ __forceinline__ void ZipLanes(Pack<T, Rest...> (&dst)[NX * NY], Zip<T, Rest...> src, long long stride_y,
                                         const Vec<unsigned, 4> (&first)[NY], unsigned long long first_addr,
                                         int num_y, int next_y) {
  T head[NX * NY];
  Pack<Rest...> tail[NX * NY];
  LoadShiftedLanes<NX, NY, IsBoundary, SHIFT>(head, src.head, stride_y, first, first_addr, num_y, next_y);
  ZipLanes<NX, NY, IsBoundary, SHIFT>(tail, src.tail, stride_y, first, first_addr, num_y, next_y);
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) dst[i] = {head[i], tail[i]};
}

// ReadDataVec where the lanes of a group of LANES consecutive threads read consecutive vectors: lane
// l's row y lies just before lane l + 1's (FoldContiguous), and the next lane reads rows [0, next_y).
// Shared (the planner's choice, for a Zip with an input off the first one's 16-byte grid, over
// groups of whole warps; then every lane of the group calls it, the ones with no row too): such an
// input needs two aligned chunks a vector; the second is the next lane's first, so it comes by a
// shuffle and only a lane with no next (a warp's last, or the last in range) loads it, instead of
// every lane loading both; and an input that starts less than 16 bytes after the first (x[1:] beside
// x[:-1]) takes its first chunk from the first input's own: one pass of 16-byte loads reads them all.
// SHIFT: see LoadShiftedLanes. Otherwise it is ReadDataVec.
template <typename T, int NX, int NY, int LANES, bool Shared, int SHIFT, bool IsBoundary>
__device__ __forceinline__ void ReadDataVecLanes(T (&dst)[NX * NY], const T* src, long long stride_y, int num_y,
                                                 int) {
  static_assert(!Shared, "one input has no chunks to share");
  ReadDataVec<T, NX, NY, IsBoundary>(dst, src, stride_y, num_y);
}
template <typename T, int NX, int NY, int LANES, bool Shared, int SHIFT, bool IsBoundary, typename H,
          typename... Rest>
__device__ __forceinline__ void ReadDataVecLanes(Pack<H, Rest...> (&dst)[NX * NY], Zip<H, Rest...> src,
                                                 long long stride_y, int num_y, int next_y) {
  if constexpr (!Shared) {
    ReadDataVec<Pack<H, Rest...>, NX, NY, IsBoundary>(dst, src, stride_y, num_y);
  } else {
    static_assert(sizeof(H) * NX == 16 && LANES % kWarpSize == 0, "lanes share 16-byte vectors over whole warps");
    H head[NX * NY];
    Pack<Rest...> tail[NX * NY];
    ReadDataVec<H, NX, NY, IsBoundary>(head, src.head, stride_y, num_y);
    Vec<unsigned, 4> first[NY];  // the same rows as raw chunks, which the other inputs may share
#pragma unroll
    for (int y = 0; y < NY; ++y) {
      union { Vec<H, NX> vec; Vec<unsigned, 4> words; } c;
#pragma unroll
      for (int x = 0; x < NX; ++x) c.vec.val[x] = head[y * NX + x];
      first[y] = c.words;
    }
    ZipLanes<NX, NY, IsBoundary, SHIFT>(tail, src.tail, stride_y, first, Address(src.head), num_y, next_y);
#pragma unroll
    for (int i = 0; i < NX * NY; ++i) dst[i] = {head[i], tail[i]};
  }
}

// The rows of a tile: row y's offset is calc.Offset(first + y * step) (the reduced dims need not be
// one stride), every row or, where IsBoundary, those below num_y; each row's index in the reduced
// range, the calculator's second stride, is added to index.row[y], and read(y, offset) loads it.
template <int NY, bool IsBoundary, class Calc, typename IndexT, class Read>
__device__ __forceinline__ void ForEachTileRow(TileIndex<NY>& index, const Calc& calc, IndexT first, IndexT step,
                                               int num_y, Read read) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
    if (!IsBoundary || y < num_y) {
      long long offset, position;
      calc.Get(first + static_cast<IndexT>(y) * step, offset, position);
      index.row[y] += position;
      read(y, offset);
    }
  }
}

// Row y at src + calc.Offset(first + y * step) (ForEachTileRow): along x either one aligned vector
// (Vectorized, boundary only along y) or NX strided elements.
template <typename T, int NX, int NY, bool IsBoundary, bool Vectorized, class Calc, typename IndexT, typename Src>
__device__ __forceinline__ void ReadDataReduce(T (&dst)[NX * NY], TileIndex<NY>& index, Src src,
                                               const Calc& calc, IndexT first, IndexT step,
                                               long long stride_x, int num_x, int num_y) {
  ForEachTileRow<NY, IsBoundary>(index, calc, first, step, num_y, [&](int y, long long offset) {
    const auto row = src + offset;
    if constexpr (Vectorized) {
      ReadVectorRow<T, NX, NY>(dst, y, row);
    } else {
#pragma unroll
      for (int x = 0; x < NX; ++x) {
        if (!IsBoundary || x < num_x) dst[y * NX + x] = row[x * stride_x];
      }
    }
  });
}

// ReadDataReduce of one word a row from a 1-byte input whose rows start anywhere in a word (kept
// columns of a 1-byte `any` / `all`, W wide, W no multiple of 4): row y's four bytes at
// src + calc.Offset(first + y * step) come from the aligned word that holds the first, and the next
// one only where the `num_bytes` wanted pass it, funnel-shifted into place. Bytes past num_bytes
// are whatever lies there (their columns are never stored).
template <int NY, bool IsBoundary, class Calc, typename IndexT>
__device__ __forceinline__ void ReadWordsShifted(unsigned (&dst)[NY], TileIndex<NY>& index, const unsigned char* src,
                                                 const Calc& calc, IndexT first, IndexT step, int num_bytes,
                                                 int num_y) {
  ForEachTileRow<NY, IsBoundary>(index, calc, first, step, num_y, [&](int y, long long offset) {
    const unsigned long long addr = Address(src + offset);
    const unsigned shift = static_cast<unsigned>(addr & 3u);
    const unsigned* word = reinterpret_cast<const unsigned*>(addr - shift);
    const unsigned lo = word[0];
    const unsigned hi = shift + num_bytes > 4 ? word[1] : 0u;
    dst[y] = __funnelshift_r(lo, hi, 8 * shift);
  });
}

// Tile element (y, x) = src[y * stride_y + x * stride_x], read through L2: partials that other
// blocks of the same launch wrote (L1 is not coherent across SMs). Slots outside num_x / num_y hold
// `identity`. All NX * NY loads are issued before any is used, so a split's combine costs one round
// trip per NY rows instead of one per row.
template <typename T, int NX, int NY>
__device__ __forceinline__ void ReadPartials(T (&dst)[NX * NY], const T* src, long long stride_y, int num_x,
                                             int num_y, T identity, long long stride_x = 1) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
#pragma unroll
    for (int x = 0; x < NX; ++x) {
      dst[y * NX + x] = (x < num_x && y < num_y) ? LoadGlobalCG(src + y * stride_y + x * stride_x) : identity;
    }
  }
}

// dst = Lift<Acc>(Tr::Apply(Cast<arg_t>(src)), index) on in-range slots; the identity on the others
// (a padded slot is never transformed: exp(identity) is not the identity).
template <typename Acc, typename T, int NX, int NY, class Tr, bool IsBoundary>
__device__ __forceinline__ void ElementwiseUnary(Acc (&dst)[NX * NY], const T (&src)[NX * NY],
                                                 int num_x, int num_y, Acc identity, const TileIndex<NY>& index) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
#pragma unroll
    for (int x = 0; x < NX; ++x) {
      const bool valid = !IsBoundary || (x < num_x && y < num_y);
      dst[y * NX + x] = valid
          ? Lift<Acc>(Tr::Apply(Cast<typename Tr::arg_t>(src[y * NX + x])), index.row[y] + x * index.step_x)
          : identity;
    }
  }
}

// Local mode: fold the tile along y into NX accumulators, in row order.
template <class R, int NX, int NY>
__device__ __forceinline__ void Reduce(typename R::acc_t (&acc)[NX],
                                       const typename R::acc_t (&tile)[NX * NY]) {
#pragma unroll
  for (int y = 0; y < NY; ++y) {
#pragma unroll
    for (int x = 0; x < NX; ++x) acc[x] = R::Combine(acc[x], tile[y * NX + x]);
  }
}

// ElementwiseUnary then Reduce: the tile's elements lifted and folded into COLS accumulators
// (element i into acc[i % COLS]), pairwise where the accumulator rounds (kps/chains.cuh), else in row
// order. A state lifts and folds each element in turn, with no tile
// of lifted states between (the same order, so the same bits): that tile took NX x NY states of
// registers (float16 argmax rows, 32 elements: 304 bytes spilled a thread). Each accumulator's first
// element of the tile goes through Combine, the others through R::Fold, which may leave out the
// tests for an empty state: an accumulator of a column (COLS == NX) or of the whole tile (COLS == 1)
// holds an element after its first one wherever any later one is in range.
template <class R, class Tr, typename T, int NX, int NY, int COLS, bool IsBoundary>
__device__ __forceinline__ void ReduceUnary(typename R::acc_t (&acc)[COLS], const T (&src)[NX * NY], int num_x,
                                            int num_y, const TileIndex<NY>& index) {
  using Acc = typename R::acc_t;
  static_assert((NX * NY) % COLS == 0, "whole rows of accumulators");
  if constexpr (__is_class(Acc)) {
    constexpr bool kFolds = HasFold<R>::value && (COLS == 1 || COLS == NX);
#pragma unroll
    for (int y = 0; y < NY; ++y) {
#pragma unroll
      for (int x = 0; x < NX; ++x) {
        const bool valid = !IsBoundary || (x < num_x && y < num_y);
        const int k = y * NX + x;
        const auto element = [&] { return Tr::Apply(Cast<typename Tr::arg_t>(src[k])); };
        const long long i = index.row[y] + x * index.step_x;
        if constexpr (kFolds) {
          if (k >= COLS) {
            if (valid) acc[k % COLS] = R::Fold(acc[k % COLS], Cast<typename R::value_t>(element()), i);
            continue;
          }
        }
        if constexpr (HasPush<R>::value) {
          acc[k % COLS] = valid ? R::Push(acc[k % COLS], Cast<typename R::value_t>(element()), i)
                                : R::Combine(acc[k % COLS], R::Identity());
        } else {
          acc[k % COLS] = R::Combine(acc[k % COLS], valid ? Lift<Acc>(element(), i) : R::Identity());
        }
      }
    }
  } else {
    Acc tile[NX * NY];
    ElementwiseUnary<Acc, T, NX, NY, Tr, IsBoundary>(tile, src, num_x, num_y, R::Identity(), index);
    if constexpr (kShortChains<R, T>) {
      ReducePairwise<R, COLS, NX * NY / COLS>(acc, tile);  // (kps/chains.cuh)
    } else {
      Reduce<R, COLS, NX * NY / COLS>(acc, tile);
    }
  }
}

// Global mode, along x: combine across each group of GROUP consecutive threads of a 1-D block of
// BLOCK threads. GROUP <= 32: warp shuffles, every lane of the group ends with the result.
// GROUP == BLOCK: shuffles, then the warps' results through shared memory (`smem`, BLOCK / 32
// slots); thread 0 ends with the result. Every thread of the block must call it.
template <class R, int GROUP, int BLOCK>
__device__ __forceinline__ typename R::acc_t BlockReduce(typename R::acc_t acc,
                                                         typename R::acc_t* smem) {
  using Acc = typename R::acc_t;
  constexpr int kLanes = GROUP < kWarpSize ? GROUP : kWarpSize;
#pragma unroll
  for (int mask = kLanes / 2; mask > 0; mask /= 2) acc = R::Combine(acc, ShflXor(acc, mask));
  if constexpr (GROUP > kWarpSize) {
    static_assert(GROUP == BLOCK, "a group wider than a warp is the whole block");
    constexpr int kWarps = BLOCK / kWarpSize;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    if (lane == 0) smem[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < kWarps ? smem[lane] : R::Identity();
#pragma unroll
      for (int mask = kWarpSize / 2; mask > 0; mask /= 2) acc = R::Combine(acc, ShflXor(acc, mask));
    }
    __syncthreads();  // smem is free again for the caller's next use
  }
  return acc;
}

// Rows of BX accumulators BlockReduceY keeps in shared memory per element: one per row of threads,
// and one more, written and never read, for the threads past the last row where BX does not divide
// BLOCK (a branch around their stores took 17 more registers on sm_90).
template <int BX, int BLOCK>
inline constexpr int kBlockRowsY = BLOCK / BX + (BLOCK % BX != 0);

// The most rows BlockReduceY's row 0 folds one after another from shared memory: a warp tree's
// block of BLOCK / 32 rows (8 at 256 threads). More rows (rows of under 29 threads that do not
// divide the block) fold as a tree, so an accumulator meets log2 of them in a chain, not each in
// turn: a state's combines (an exponential, a division) would otherwise wait on one another.
constexpr int kSerialRowsY = 8;

// Largest power of two below n (n > 1).
__host__ __device__ constexpr int HalfBelow(int n) { return n <= 2 ? 1 : 2 * HalfBelow((n + 1) / 2); }

// Global mode, along y: a 1-D block of BLOCK threads seen as BY = BLOCK / BX rows of BX threads
// (tx = threadIdx.x % BX). Combines NX accumulators per thread across the rows, in a fixed order;
// the threads of row 0 end with the result. `smem` holds NX * kBlockRowsY * BX accumulators. A BX
// that does not divide BLOCK leaves the threads past the BY rows out; its rows of threads, which a
// warp's lanes do not split into powers of two, all meet in shared memory (no in-warp step).
template <class R, int NX, int BX, int BLOCK>
__device__ __forceinline__ void BlockReduceY(typename R::acc_t (&acc)[NX], typename R::acc_t* smem) {
  constexpr int kBY = BLOCK / BX;
  constexpr int kRowsPerWarp = BX < kWarpSize && BLOCK % BX == 0 ? kWarpSize / BX : 1;
  constexpr int kSlots = kBY / kRowsPerWarp;  // rows left after the in-warp step
  constexpr int kStride = kBlockRowsY<BX, BLOCK> / kRowsPerWarp;  // rows of one element in smem
  const int tx = threadIdx.x % BX, ty = threadIdx.x / BX;
  if constexpr (kRowsPerWarp > 1) {
#pragma unroll
    for (int mask = kWarpSize / 2; mask >= BX; mask /= 2) {
#pragma unroll
      for (int x = 0; x < NX; ++x) acc[x] = R::Combine(acc[x], ShflXor(acc[x], mask));
    }
  }
  if constexpr (kSlots > 1) {
    if (ty % kRowsPerWarp == 0) {
#pragma unroll
      for (int x = 0; x < NX; ++x) smem[(x * kStride + ty / kRowsPerWarp) * BX + tx] = acc[x];
    }
    __syncthreads();
    if constexpr (kSlots <= kSerialRowsY) {
      if (ty == 0) {
#pragma unroll
        for (int x = 0; x < NX; ++x) {
          for (int s = 1; s < kSlots; ++s) acc[x] = R::Combine(acc[x], smem[(x * kStride + s) * BX + tx]);
        }
      }
    } else {
      // Rows r < count - half take row r + half (left before right: a fixed order), until row 0 has
      // them all; the rows a level writes and the rows it reads are apart.
#pragma unroll
      for (int half = HalfBelow(kSlots); half >= 1; half /= 2) {
        const int count = half == HalfBelow(kSlots) ? kSlots : 2 * half;
        if (ty < count - half) {
#pragma unroll
          for (int x = 0; x < NX; ++x) {
            acc[x] = R::Combine(acc[x], smem[(x * kStride + ty + half) * BX + tx]);
            if (half > 1) smem[(x * kStride + ty) * BX + tx] = acc[x];
          }
        }
        if (half > 1) __syncthreads();
      }
    }
    __syncthreads();
  }
}

// The look (kps::Look) at NX results, or where IsBoundary the first `num`: results of 2, 4 or 8
// bytes; any other width is never looked at (the host asks only of floats and int64 indices).
// `done`: this thread's own, set where the launch asks for no look and at its first match, after
// which it looks no further (a thread writing many results that all match reads the device word
// once, not once a result: every result NaN over 4M rows of two took 168.8 us that way, 96.5 this
// way, against 37.1 on numbers).
template <typename T, int NX, bool IsBoundary>
__device__ __forceinline__ void LookAt(const Look& look, const T (&src)[NX], int num, bool& done) {
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    if (done) return;
    using Bits = typename Select<sizeof(T) == 2, unsigned short,
                                 typename Select<sizeof(T) == 4, unsigned, unsigned long long>::type>::type;
    bool match = false;
#pragma unroll
    for (int x = 0; x < NX; ++x) {
      if (!IsBoundary || x < num) {
        union { T value; Bits bits; } u;
        u.value = src[x];
        match |= (static_cast<unsigned long long>(u.bits) & look.mask) > look.above;
      }
    }
    if (match) {
      done = true;
      if (*reinterpret_cast<volatile unsigned long long*>(look.seen) != look.epoch &&
          atomicMax(look.seen, look.epoch) < look.epoch) {
        *reinterpret_cast<volatile unsigned*>(look.host) = 1u;
      }
    }
  }
}

// Predicated store of NX values, element x at dst[x * stride]; one aligned vector store when the
// tile is in range, the host said the destination allows it and it is a power of two bytes (not the
// 48 of a complex Welford's six raw results).
template <typename T, int NX, bool IsBoundary, bool Vectorized>
__device__ __forceinline__ void WriteData(T* dst, const T (&src)[NX], long long stride, int num) {
  constexpr auto kBytes = sizeof(T) * NX;
  if constexpr (!IsBoundary && Vectorized && (kBytes & (kBytes - 1)) == 0) {
    Vec<T, NX> v;
#pragma unroll
    for (int x = 0; x < NX; ++x) v.val[x] = src[x];
    *reinterpret_cast<Vec<T, NX>*>(dst) = v;
  } else {
#pragma unroll
    for (int x = 0; x < NX; ++x) {
      if (!IsBoundary || x < num) dst[x * stride] = src[x];
    }
  }
}

// Last-block-done: after every block of a split has stored its partials, exactly one block (the
// last to arrive) sees true and combines them. The counter is left at zero for the next launch on
// the stream. Every thread of the block must call it.
__device__ __forceinline__ bool IsLastBlock(unsigned* counter, unsigned num_blocks) {
  __shared__ bool is_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned arrived = atomicAdd(counter, 1u) + 1u;
    is_last = arrived == num_blocks;
    if (is_last) *counter = 0u;
  }
  __syncthreads();
  return is_last;
}

// Fold `count` rows of partials, `step` rows apart from row `row` (rows `row_stride` elements
// apart, NX of a thread's `stride_x` apart in each), into NX accumulators: row y of the thread's
// share is `ty + y * BY`, ROWS of them in flight at once; an inactive thread keeps the identity.
// The fold of kps::CombineSplits.
template <class R, int NX, int ROWS, int BY>
__device__ __forceinline__ void FoldPartials(typename R::acc_t (&acc)[NX], const typename R::acc_t* src, unsigned row,
                                             unsigned count, unsigned step, long long row_stride, int num_x,
                                             unsigned ty, bool active, long long stride_x = 1) {
  using Acc = typename R::acc_t;
  Init(acc, R::Identity());
  for (unsigned s = ty; s < count && active; s += BY * ROWS) {
    const int num_y = static_cast<int>(min(static_cast<unsigned>(ROWS), (count - s + BY - 1) / BY));
    Acc part[NX * ROWS];
    ReadPartials<Acc, NX, ROWS>(part, src + (row + s * step) * row_stride,
                                static_cast<long long>(BY * step) * row_stride, num_x, num_y, R::Identity(), stride_x);
    Reduce<R, NX, ROWS>(acc, part);
  }
}

// A split's group, where a split reduction's partials are combined in two levels (many splits: one
// block combining them all would fold them one round of loads after another): the last block of
// each `group` consecutive splits to finish combines their rows into the group's first row, and the
// last group to finish combines those rows, `group` apart. With group >= num_splits, one level: the
// group is every split and counts at the block column's own counter. With several groups each has
// its counter after the block columns' (gridDim.x * (1 + groups) counters in all), and the column's
// own counts the groups.
struct SplitGroup {
  unsigned first;   // its first split
  unsigned count;   // its splits
  unsigned groups;  // groups of the block column
  unsigned* counter;
};

// (Splits are gridDim.y, under 2^16: 32-bit arithmetic.)
__device__ __forceinline__ SplitGroup GroupOfSplit(unsigned* semaphores, unsigned split, unsigned num_splits,
                                                   unsigned group) {
  SplitGroup g;
  g.groups = (num_splits + group - 1) / group;
  const unsigned k = split / group;
  g.first = k * group;
  g.count = min(group, num_splits - g.first);
  g.counter = semaphores + (g.groups > 1 ? gridDim.x + blockIdx.x * g.groups + k : blockIdx.x);
  return g;
}

// A split block's part in combining the partials, once it has stored its own (at row `split`):
// where it is the last of its group, `fold(row, count, step)` folds the group's `count` rows of
// partials (`step` rows apart from `row`) into the block's result; where there are several groups,
// `store(row)` writes that result over the group's first row and the last group folds those rows.
// Returns whether this block ends with the final result. Every thread of the block must call it.
template <class Fold, class Store>
__device__ __forceinline__ bool CombineSplits(unsigned* semaphores, unsigned split, unsigned num_splits,
                                              unsigned group, Fold fold, Store store) {
  const SplitGroup g = GroupOfSplit(semaphores, split, num_splits, group);
  if (!IsLastBlock(g.counter, g.count)) return false;
  unsigned row = g.first, count = g.count, step = 1;
  for (bool top = g.groups == 1;; top = true) {  // (one call site of fold: it is inlined once)
    fold(row, count, step);
    if (top) return true;
    store(row);
    if (!IsLastBlock(semaphores + blockIdx.x, g.groups)) return false;
    row = 0, count = g.groups, step = group;
  }
}

}  // namespace kps
