// The reduce kernels, composed only from the kps primitives.
//
// The planner (kernels/config.py) turns every reduction into
//     out[o] = Ep(fold_{r} Tr(x[kept(o) + red(r)]))
// with the kept and the reduced dims merged and sorted by stride, and picks one of three kernels:
//   ReduceInner  the innermost dim is reduced (`last`, `full`, and `any` reductions ending in a
//                reduced dim) and its runs are long or 16-byte aligned: LANES threads share one
//                output and walk its contiguous runs with 16-byte loads; the other reduced dims are
//                runs ("segments") found by an index calculator. Short aligned runs are walked as
//                one flat sequence of vectors.
//   ReduceOuter  the innermost dim is kept (`higher`, and `any` reductions ending in a kept dim) and
//                wide enough for 16-byte loads along it: BX threads side by side take VEC adjacent
//                outputs each (one 16-byte load per row where rows are aligned; else a column
//                each, element by element, with more rows in flight), BLOCK / BX rows of threads
//                split the reduced rows and meet in shared memory.
//   ReduceStaged the innermost dims form a contiguous span whose runs are short, odd or misaligned
//                (3-wide rows, 7-wide columns, 11-long runs between kept dims): the block copies
//                the span to shared memory with aligned 16-byte loads, whatever its start and
//                length, and folds it from there, where no alignment matters.
// Each splits a long reduction over gridDim.y blocks when the outputs alone cannot fill the GPU;
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
  long long index_offset;          // index in the reduced range of the element at offset 0 (flipped dims)
  long long inner_index_stride;    // index step between neighbours in a segment
  kps::Look look;                  // the look at the results (kps::LookAt), where look.host is set
  const void* more_inputs[kps::kMaxInputs - 1];  // a transform of several inputs: the others, as x
};

template <int KND, int RND, typename IndexT>
struct OuterParams {
  const void* x;
  void* y;
  void* partials;                  // [num_splits][num_out] accumulators, when split
  unsigned* semaphores;            // zeroed counters: per blockIdx.x, and per group (kps::GroupOfSplit)
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
  long long index_offset;          // index in the reduced range of the element at offset 0 (flipped dims)
  long long inner_bytes;           // ShiftedWords: bytes of the innermost kept dim (columns)
  long long split_group;           // splits per group of the combine (kps::GroupOfSplit), when split
  kps::Look look;                  // the look at the results (kps::LookAt), where look.host is set
  const void* more_inputs[kps::kMaxInputs - 1];  // a transform of several inputs: the others, as x
};

template <int KND, int RND, int TKND, int TRND, typename IndexT>
struct StagedParams {
  const void* x;
  void* y;
  void* partials;                  // [num_splits][num_tiles x num_slots] accumulators, when split
  unsigned* semaphores;            // zeroed counters: per blockIdx.x, and per group (kps::GroupOfSplit)
  kps::IndexCalc<KND, IndexT> kept;      // output tile -> input and output offsets of its first element
  kps::IndexCalc<RND, IndexT> red;       // stage -> input offset of its span
  kps::IndexCalc<TKND, unsigned> slots;  // slot (one output of a tile) -> span offset, output offset
  kps::IndexCalc<TRND, unsigned> folds;  // reduced element of a slot -> span offset
  long long num_tiles;             // output tiles
  long long num_stages;            // spans folded into every output tile
  long long num_slots;             // outputs of a whole tile
  long long num_folds;             // reduced elements of a slot in a whole span
  // The span's outermost dim may be cut into chunks of `rows` rows (the last one shorter): then
  // the chunk is the innermost dim of `kept` (chunk_kept) or of `red`, and only its valid rows
  // are staged and folded.
  long long rows;
  long long rows_total;
  long long row_chunks;            // 1: every span holds the whole dim
  long long row_stride;            // elements between its rows (the span is contiguous: rows x this)
  long long chunk_kept;
  long long slots_per_row;         // when chunk_kept
  long long folds_per_row;         // when not chunk_kept
  long long count;                 // reduced elements per output, for the epilogue
  long long stages_per_split;
  long long num_splits;            // gridDim.y
  long long index_offset;          // index in the reduced range of the element at offset 0 (flipped dims)
  long long split_group;           // splits per group of the combine (kps::GroupOfSplit), when split
  kps::Look look;                  // the look at the results (kps::LookAt), where look.host is set
  const void* more_inputs[kps::kMaxInputs - 1];  // a transform of several inputs: the others, as x
};

// Fold `len` elements src[i * stride] spread over LANES lanes (lane takes i = lane + k * LANES),
// NY elements per lane in flight. Element i is number `pos + i * pos_stride` of the reduced range.
template <class R, class Tr, typename Tin, int NY, int LANES, typename IndexT>
__device__ __forceinline__ void FoldStrided(typename R::acc_t (&acc)[1], kps::Ptr<Tin> src, IndexT len,
                                            IndexT stride, int lane, long long pos, long long pos_stride) {
  using Acc = typename R::acc_t;
  constexpr IndexT kStep = static_cast<IndexT>(LANES) * NY;
  Tin raw[NY];
  IndexT i = 0;
  for (; i + kStep <= len; i += kStep) {
    kps::ReadData<Tin, 1, NY, false>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, NY);
    const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(i + lane) * pos_stride, LANES * pos_stride, 0);
    kps::ReduceUnary<R, Tr, Tin, 1, NY, 1, false>(acc, raw, 1, NY, index);
  }
  if (i + lane < len) {
    const int num_y = static_cast<int>((len - i - lane + LANES - 1) / LANES);
    kps::ReadData<Tin, 1, NY, true>(raw, src + (i + lane) * stride, 0, LANES * stride, 1, num_y);
    const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(i + lane) * pos_stride, LANES * pos_stride, 0);
    kps::ReduceUnary<R, Tr, Tin, 1, NY, 1, true>(acc, raw, 1, num_y, index);
  }
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
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT>(acc, src, head, 1, lane, pos, pos_stride);

  const kps::Ptr<Tin> body = src + head;
  const IndexT num_vec = (len - head) / VEC;
  constexpr int kCols = kps::kLaneAccumulators<Acc, VEC>;
  Acc cols[kCols];
  kps::Init(cols, R::Identity());
  Tin raw[VEC * NY];
  IndexT v = 0;
  for (; v + kStep <= num_vec; v += kStep) {
    kps::ReadDataVecLanes<Tin, VEC, NY, LANES, SharedLanes, InputShift, false>(raw, body + (v + lane) * VEC,
                                                                               LANES * VEC, NY, NY);
    const auto index = kps::AffineIndex<NY>(pos + static_cast<long long>(head + (v + lane) * VEC) * pos_stride,
                                            LANES * VEC * pos_stride, pos_stride);
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, false>(cols, raw, VEC, NY, index);
  }
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
  FoldStrided<R, Tr, Tin, 1, LANES, IndexT>(acc, src + done, len - done, 1, lane,
                                            pos + static_cast<long long>(done) * pos_stride, pos_stride);
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
  IndexT i = begin + lane;
  for (; i + (NY - 1) * LANES < end; i += kStep) {
    auto index = kps::AffineIndex<NY>(pos, 0, pos_x);
    kps::ReadDataReduce<Tin, VEC, NY, false, (VEC > 1)>(raw, index, src, runs, i, static_cast<IndexT>(LANES), 1, VEC,
                                                        NY);
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, false>(cols, raw, VEC, NY, index);
  }
  if (i < end) {
    const int num_y = static_cast<int>((end - i + LANES - 1) / LANES);
    auto index = kps::AffineIndex<NY>(pos, 0, pos_x);
    kps::ReadDataReduce<Tin, VEC, NY, true, (VEC > 1)>(raw, index, src, runs, i, static_cast<IndexT>(LANES), 1, VEC,
                                                       num_y);
    kps::ReduceUnary<R, Tr, Tin, VEC, NY, kCols, true>(cols, raw, VEC, num_y, index);
  }
  kps::Reduce<R, 1, kCols>(acc, cols);
}

// Fold ROWS runs of a span staged in shared memory, one thread all of them: run k is the `len`
// elements run[k][i * stride], folded in order, the runs side by side so each step keeps ROWS reads
// in flight and pays the loop once for all of them (a short row folded alone cost ~70 instructions
// of loop and bookkeeping for 5 elements). Element i of every run is number `pos + i * pos_stride`
// of the reduced range.
template <class R, class Tr, typename Tin, int ROWS>
__device__ __forceinline__ void FoldSharedRows(typename R::acc_t (&acc)[ROWS], const Tin* (&run)[ROWS], unsigned len,
                                               unsigned stride, long long pos, long long pos_stride) {
  using Acc = typename R::acc_t;
  kps::Init(acc, R::Identity());
#pragma unroll(ROWS == 1 ? 4 : 1)  // one run alone: a few of its reads in flight instead
  for (unsigned i = 0; i < len; ++i) {
    Tin raw[ROWS];
    Acc value[ROWS];
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
      raw[k] = *run[k];
      run[k] += stride;
    }
    kps::ElementwiseUnary<Acc, Tin, ROWS, 1, Tr, false>(value, raw, ROWS, 1, R::Identity(),
                                                        kps::AffineIndex<1>(pos + i * pos_stride, 0, 0));
    kps::Reduce<R, ROWS, 1>(acc, value);
  }
}

// Fold bytes [lo, hi) of `word` into `acc`: a 1-byte logical reduction whose Tr tests four bytes at
// once (kps.word_functors); the word's other bytes become the reduction's identity as a byte (0 for
// `any`, 1 for `all`), so they change nothing.
template <class R, class Tr>
__device__ __forceinline__ void FoldWordBytes(typename R::acc_t& acc, unsigned word, unsigned lo, unsigned hi) {
  using Acc = typename R::acc_t;
  const unsigned pad = R::Identity() ? 0x01010101u : 0u;
  const unsigned inside = (0xFFFFFFFFu << (8 * lo)) & static_cast<unsigned>((1ull << (8 * hi)) - 1);
  unsigned raw[1] = {(word & inside) | (pad & ~inside)};
  Acc value[1];
  kps::ElementwiseUnary<Acc, unsigned, 1, 1, Tr, false>(value, raw, 1, 1, R::Identity(), kps::AffineIndex<1>(0, 0, 0));
  acc = R::Combine(acc, value[0]);
}

// Fold the `len` bytes at `src`, a run staged in shared memory, as the 32-bit words that cover it,
// over LANES lanes (lane takes words lane, lane + LANES, ...): a 1-byte logical reduction (`any`,
// `all`) whose Tr tests four bytes at once, the words' bytes outside the run padded (FoldWordBytes).
template <class R, class Tr, int LANES>
__device__ __forceinline__ void FoldSharedWords(typename R::acc_t (&acc)[1], const unsigned char* src, unsigned len,
                                                unsigned lane) {
  const unsigned head = static_cast<unsigned>(kps::Address(src) & 3u);
  const unsigned* words = reinterpret_cast<const unsigned*>(src - head);
  const unsigned end = head + len;  // in bytes from words[0]
#pragma unroll 4
  for (unsigned i = lane; i * 4 < end; i += LANES) {
    unsigned raw[1];
    kps::ReadData<unsigned, 1, 1, false>(raw, words + i, 0, 0, 1, 1);
    FoldWordBytes<R, Tr>(acc[0], raw[0], i == 0 ? head : 0u, min(4u, end - i * 4));  // the run's bytes
  }
}

// Fold 16 rows of ROW_BYTES bytes, side by side from `src` (16-byte aligned shared memory), one
// thread all of them: a 1-byte logical reduction whose Tr tests four bytes at once. The rows come
// in ROW_BYTES 16-byte loads; each row folds the words that cover it, their bytes outside the row
// padded (FoldWordBytes; the masks are constants: ROW_BYTES is). A row a thread took a shared-memory load per byte or a warp
// shuffle per word and stored a byte at a time; here 16 rows cost ROW_BYTES loads and one store.
template <class R, class Tr, int ROW_BYTES>
__device__ __forceinline__ void FoldByteRows(typename R::acc_t (&acc)[16], const kps::Vec<unsigned, 4>* src) {
  unsigned words[4 * ROW_BYTES];
#pragma unroll
  for (int k = 0; k < ROW_BYTES; ++k) {
    const kps::Vec<unsigned, 4> v = src[k];
#pragma unroll
    for (int i = 0; i < 4; ++i) words[4 * k + i] = v.val[i];
  }
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    acc[r] = R::Identity();
#pragma unroll
    for (int w = r * ROW_BYTES / 4; 4 * w < (r + 1) * ROW_BYTES; ++w) {  // the row's bytes of each word
      FoldWordBytes<R, Tr>(acc[r], words[w], max(r * ROW_BYTES - 4 * w, 0), min((r + 1) * ROW_BYTES - 4 * w, 4));
    }
  }
}

// The 1-byte results of 16 outputs as one 16-byte chunk, result k in byte k (FoldByteRows' store).
template <class Ep>
__device__ __forceinline__ kps::Vec<unsigned, 4> PackByteResults(const typename Ep::acc_t (&a)[16], long long count) {
  kps::Vec<unsigned, 4> packed;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    packed.val[i] = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      packed.val[i] |= static_cast<unsigned>(static_cast<unsigned char>(Ep::Apply(a[4 * i + b], count))) << (8 * b);
    }
  }
  return packed;
}

template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int LANES, int BLOCK, int MIN_BLOCKS,
          int KND, int RND, typename IndexT, bool FlatRuns, bool SharedLanes, int InputShift>
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
        for (IndexT seg = seg_begin; seg < seg_end; ++seg) {
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
      }
    }
    acc[0] = kps::BlockReduce<R, LANES, BLOCK>(acc[0], smem);
    if (p.num_splits > 1) {
      // The host launches one block column per output group when it splits: no grid-stride here.
      // The combine is written out here, not kps::CombineSplits as in ReduceOuter and ReduceStaged:
      // as one shared device function it changed this kernel's main loop (same registers), 3% slower
      // on 4096 rows of 65536 floats; a round here reads LANES x NY rows, so one level serves.
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
      kps::LookAt<Tout, 1, false>(p.look, out, 1, looked);
      kps::WriteData<Tout, 1, false, false>(y + p.kept.OutOffset(row), out, 1, 1);
    }
  }
}

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

// ShiftedWords: a 1-byte `any` / `all` of kept columns whose rows start anywhere in a word (W no
// multiple of 4): Tin is bytes, the offsets count bytes, and a column is a word of four of them
// (VEC == 1), read from the aligned words around it (kps::ReadWordsShifted) and folded by the
// functors over words (kps.word_columns); the results are words of four bools, the last one of a
// row stored byte by byte.
template <typename Tin, class R, class Tr, class Ep, int VEC, int NY, int BX, int BLOCK, int MIN_BLOCKS,
          int KND, int RND, typename IndexT, bool VecIn, bool VecOut, bool ShiftedWords>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) ReduceOuter(const OuterParams<KND, RND, IndexT> p) {
  static_assert(!ShiftedWords || (VEC == 1 && !VecIn && sizeof(Tin) == 1), "a word a thread, from bytes");
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  using Elem = typename kps::Select<ShiftedWords, unsigned, Tin>::type;
  constexpr int kBY = BLOCK / BX;
  constexpr IndexT kStep = static_cast<IndexT>(kBY) * NY;  // rows per step
  __shared__ Acc smem[VEC * BLOCK];
  const kps::Ptr<Tin> x = kps::PtrOf<Tin>::Make(p.x, p.more_inputs);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int tx = threadIdx.x % BX;
  const int ty = threadIdx.x / BX;

  const IndexT split = blockIdx.y;
  const IndexT r_begin = split * static_cast<IndexT>(p.rows_per_split);
  const IndexT r_end = min(static_cast<IndexT>(p.num_red), r_begin + static_cast<IndexT>(p.rows_per_split));

  bool looked = p.look.host == nullptr;  // (kps::LookAt)
  for (IndexT tile = blockIdx.x; tile < p.num_tiles; tile += gridDim.x) {  // uniform per block
    const IndexT outer = kps::DivBy<IndexT>(tile, p.col_tiles, p.col_tiles_magic);
    const IndexT col = ((tile - outer * static_cast<IndexT>(p.col_tiles)) * BX + tx) * VEC;
    const int ncols = col < p.inner_len ? static_cast<int>(min(static_cast<long long>(VEC), p.inner_len - col)) : 0;
    long long in_off = 0, out_off = 0;
    p.kept.Get(outer, in_off, out_off);
    const kps::Ptr<Tin> src = x + in_off + col * p.inner_in_stride;

    Acc acc[VEC];
    kps::Init(acc, R::Identity());
    // ShiftedWords: the bytes of this column's word inside the row
    const int word_bytes = ShiftedWords ? static_cast<int>(min(4ll, p.inner_bytes - 4 * static_cast<long long>(col))) : 0;
    IndexT r = r_begin + ty;
    if (ncols == VEC) {
      for (; r + (NY - 1) * kBY < r_end; r += kStep) {
        FoldColumnRows<R, Tr, Tin, Elem, VEC, NY, false, VecIn, ShiftedWords>(
            acc, src, p.red, r, static_cast<IndexT>(kBY), p.index_offset, p.inner_in_stride, word_bytes, VEC, NY);
      }
    }
    if (ncols > 0) {
      for (; r < r_end; r += kStep) {
        const int num_y = static_cast<int>(min(static_cast<IndexT>(NY), (r_end - r + kBY - 1) / kBY));
        FoldColumnRows<R, Tr, Tin, Elem, VEC, NY, true, VecIn, ShiftedWords>(
            acc, src, p.red, r, static_cast<IndexT>(kBY), p.index_offset, p.inner_in_stride, word_bytes, ncols, num_y);
      }
    }
    kps::BlockReduceY<R, VEC, BX, BLOCK>(acc, smem);

    const long long first = static_cast<long long>(outer) * p.inner_len + col;  // flat output index
    if (p.num_splits > 1) {
      // The host launches one block column per tile when it splits: no grid-stride here.
      auto fold = [&](unsigned row, unsigned count, unsigned step) {
        kps::FoldPartials<R, VEC, kps::kPartialRows<Acc, NY>, kBY>(acc, partials + first, row, count, step,
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

// ReduceStaged: combine each slot's accumulators across the BLOCK / BX threads that folded it;
// the threads with ty == 0 end with the results.
template <class R, int SLOTS, int BX, bool LanesAdjacent, int BLOCK>
__device__ __forceinline__ void CombineStaged(typename R::acc_t (&acc)[SLOTS], typename R::acc_t* smem) {
  if constexpr (LanesAdjacent) {
#pragma unroll
    for (int k = 0; k < SLOTS; ++k) acc[k] = kps::BlockReduce<R, BLOCK / BX, BLOCK>(acc[k], smem);
  } else {
    kps::BlockReduceY<R, SLOTS, BX, BLOCK>(acc, smem);
  }
}

// Word columns (a 1-byte `any` / `all` of W kept columns, W not a multiple of 4, the span whole rows
// of them from the same place in a 16-byte vector every time): byte i of the staged span's vectors
// is column (i - head) mod W, so the four bytes of word w are the same four columns as those of word
// w + Q, Q = lcm(W, 4) / 4. A thread folds the words of one residue r = w mod Q (its slot) over the
// span, as R and Tr over words fold four bytes apart; bytes outside the span were padded with the
// identity (StagedSpan::Pad). `lane` of LANES threads on one residue.
// `magic`: the host's FastDiv multiplier for Q.
template <class R, class Tr, int NY, int LANES>
__device__ __forceinline__ void FoldWordColumns(typename R::acc_t& acc, const unsigned* words, unsigned residue,
                                                unsigned period, long long magic, int head, int span_bytes,
                                                int lane) {
  const unsigned lo = static_cast<unsigned>(head) / 4, hi = static_cast<unsigned>(head + span_bytes + 3) / 4;
  const unsigned first = residue < lo ? residue + kps::FastDiv(lo - residue + period - 1, magic) * period : residue;
  const unsigned count = first < hi ? kps::FastDiv(hi - first + period - 1, magic) : 0u;
  typename R::acc_t part[1] = {acc};
  FoldStrided<R, Tr, unsigned, NY, LANES, unsigned>(part, words + first, count, period, lane, 0, 0);
  acc = part[0];
}

// The word columns' results: the Q residues' words (threads of row ty == 0 hold `mine` of them,
// residues tx, tx + BX, ...) through shared memory, then column c of `width` combines the bytes at
// (c + head) mod width + j * width, j < 4Q / width, of the residues' bytes (the bytes that were its
// elements), as R over words with the other three bytes the identity's, and is stored as a byte.
template <class R, class Ep, int SLOTS, int BX, int BLOCK>
__device__ __forceinline__ void StoreWordColumns(unsigned char* out, const unsigned (&acc)[SLOTS], unsigned* smem,
                                                 int mine, int period, int width, int head, long long count) {
  const int tx = threadIdx.x % BX;
  __syncthreads();  // shared memory free of the combine
#pragma unroll
  for (int k = 0; k < SLOTS; ++k) {
    if (k < mine) smem[tx + k * BX] = acc[k];
  }
  __syncthreads();
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(smem);
  const int rows = 4 * period / width;
  for (int c = threadIdx.x; c < width; c += BLOCK) {
    unsigned a = R::Identity();
    int at = (c + head) % width;
    for (int j = 0; j < rows; ++j, at += width) a = R::Combine(a, (R::Identity() & ~0xFFu) | bytes[at]);
    out[c] = static_cast<unsigned char>(Ep::Apply(a, count) & 0xFFu);
  }
  __syncthreads();  // shared memory free for the next tile's combine
}

// A span of the input on its way to shared memory: the aligned 16-byte vectors that cover it, up to
// SV per thread (thread t holds vectors t, t + BLOCK, ...), and where the span starts in the first.
template <typename Tin, int SV, int BLOCK>
struct StagedSpan {
  using Chunk = kps::Vec<unsigned, 4>;
  Chunk regs[SV];
  int head;  // elements of the first vector before the span

  // Issue the loads of the `len` elements at `first` (they stay in flight until Store).
  __device__ __forceinline__ void Load(const Tin* first, long long len) {
    const unsigned long long addr = reinterpret_cast<unsigned long long>(first);
    head = static_cast<int>((addr & 15u) / sizeof(Tin));
    const int vectors = static_cast<int>((head * sizeof(Tin) + len * sizeof(Tin) + 15) / 16);
    kps::ReadData<Chunk, 1, SV, true>(regs, reinterpret_cast<const Chunk*>(addr & ~15ull) + threadIdx.x, 0, BLOCK, 1,
                                      Mine(vectors));
    vectors_ = vectors;
    end_ = static_cast<int>((head + len) * sizeof(Tin));
  }

  // The bytes of the first and last vectors outside the span become `pad`'s (word columns fold
  // whole words: a reduction's identity there folds nothing).
  __device__ __forceinline__ void Pad(unsigned pad) {
    const int begin = head * static_cast<int>(sizeof(Tin)), last = vectors_ - 1;
#pragma unroll
    for (int k = 0; k < SV; ++k) {
      const int v = static_cast<int>(threadIdx.x) + k * BLOCK;
      if (v == 0 || v == last) {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const int at = v * 16 + 4 * w;  // bytes of this word before the span, and in it
          const int before = min(max(begin - at, 0), 4), in = min(max(end_ - at, 0), 4);
          const unsigned keep = (before == 4 ? 0u : ~0u << (8 * before)) & (in == 4 ? ~0u : (1u << (8 * in)) - 1u);
          regs[k].val[w] = (regs[k].val[w] & keep) | (pad & ~keep);
        }
      }
    }
  }

  __device__ __forceinline__ void Store(Chunk* smem) const {
    kps::WriteData<Chunk, SV, true, false>(smem + threadIdx.x, regs, BLOCK, Mine(vectors_));
  }

 private:
  int vectors_;
  int end_;  // bytes from the first vector's start to the span's end
  __device__ __forceinline__ static int Mine(int vectors) {
    return min(SV, max(0, (vectors - static_cast<int>(threadIdx.x) + BLOCK - 1) / BLOCK));
  }
};

// Thread layout of ReduceStaged: BX threads across a tile's slots, BLOCK / BX across its reduced
// elements, the latter adjacent (LanesAdjacent: rows, where a slot's elements are neighbours in the
// span) or the former (columns, where neighbouring slots are). A thread keeps SLOTS accumulators
// (slots tx, tx + BX, ...) across the spans of a tile; SLOTS == 0 is direct: every span holds whole
// reductions (one stage per tile, no split), so each slot is folded, combined and stored in turn and
// a thread may take any number of them; where a direct slot has one lane (BX == BLOCK) and one fold
// dim, NY is how many slots a thread folds side by side (FoldSharedRows), elsewhere the loads a lane
// keeps in flight. WordFolds: the input is bytes and Tr tests four at once (rows of a 1-byte `any` /
// `all`, folded as words by FoldSharedWords); ROW_BYTES > 0: rows that short, a thread 16 of them from
// 16-byte aligned spans, FoldByteRows).
template <typename Tin, class R, class Tr, class Ep, int SV, int NY, int BX, int SLOTS, bool LanesAdjacent,
          int BLOCK, int KND, int RND, int TKND, int TRND, typename IndexT, bool WordFolds, bool WordColumns,
          int ROW_BYTES>
__global__ void __launch_bounds__(BLOCK) ReduceStaged(const StagedParams<KND, RND, TKND, TRND, IndexT> p) {
  using Acc = typename R::acc_t;
  using Tout = typename Ep::out_t;
  using Span = StagedSpan<Tin, SV, BLOCK>;
  constexpr int kBY = BLOCK / BX;
  constexpr bool kDirect = SLOTS == 0;
  static_assert(!LanesAdjacent || kBY <= kps::kWarpSize || kBY == BLOCK,
                "adjacent lanes meet by warp shuffles, or the whole block folds one slot");
  static_assert(!kDirect || LanesAdjacent, "a direct slot is combined by warp shuffles");
  // Columns may take BX threads side by side that do not divide the block (17 to BLOCK / 2 of them:
  // a thread per column, no idle lanes beside them); the threads past kBY rows of them only stage.
  constexpr bool kRagged = BLOCK % BX != 0;
  static_assert(!kRagged || (!LanesAdjacent && BX > kps::kWarpSize / 2 && kBY > 1),
                "ragged rows of threads: columns only, two rows of threads or more");
  __shared__ typename Span::Chunk staged[BLOCK * SV];
  __shared__ Acc smem[LanesAdjacent ? (kBY > kps::kWarpSize ? BLOCK / kps::kWarpSize : 1)
                                    : SLOTS * kps::kBlockRowsY<BX, BLOCK> * BX];
  const Tin* x = static_cast<const Tin*>(p.x);
  Tout* y = static_cast<Tout*>(p.y);
  Acc* partials = static_cast<Acc*>(p.partials);
  const int tx = LanesAdjacent ? threadIdx.x / kBY : threadIdx.x % BX;
  const int ty = LanesAdjacent ? threadIdx.x % kBY : threadIdx.x / BX;
  const bool folds = !kRagged || ty < kBY;

  const IndexT split = blockIdx.y;
  const IndexT s_begin = split * static_cast<IndexT>(p.stages_per_split);
  const IndexT s_end = min(static_cast<IndexT>(p.num_stages), s_begin + static_cast<IndexT>(p.stages_per_split));
  // Rows of the span's outermost dim in the span of (tile, stage).
  auto rows = [&](IndexT tile, IndexT stage) -> long long {
    const long long chunk = static_cast<long long>(p.chunk_kept ? tile : stage) % p.row_chunks;
    return min(p.rows, p.rows_total - chunk * p.rows);
  };
  auto load = [&](Span& span, IndexT tile, IndexT stage) {
    span.Load(x + p.kept.Offset(tile) + p.red.Offset(stage), rows(tile, stage) * p.row_stride);
  };
  // Fold this thread's share (lane ty of kBY) of a slot's num_folds elements in the staged span.
  // One reduced dim is a strided run (32-bit offsets, no index calculator), with NY loads in flight
  // (measured on the H100 against element by element, which lost 15-20% on float16 rows of 255-1001
  // and on bool columns; short rows a thread folds alone go NY rows at once, FoldSharedRows); more
  // dims go through `folds`.
  // `pos`: the index in the reduced range of the span's first element.
  auto fold = [&](Acc& a, const Tin* span_in, unsigned slot, unsigned num_folds, long long pos) {
    Acc part[1] = {a};
    const Tin* first = span_in + p.slots.Offset(slot);
    const unsigned stride = static_cast<unsigned>(p.folds.in_stride[0]);
    if constexpr (WordFolds) {  // a 1-byte logical reduction: Tr tests a word (see FoldSharedWords)
      FoldSharedWords<R, Tr, kBY>(part, first, num_folds, ty);
    } else if constexpr (TRND == 1) {
      FoldStrided<R, Tr, Tin, NY, kBY, unsigned>(part, first, num_folds, stride, ty, pos, p.folds.out_stride[0]);
    } else {
      FoldRuns<R, Tr, Tin, 1, NY, kBY>(part, first, p.folds, 0u, num_folds, static_cast<unsigned>(ty), pos, 0);
    }
    a = part[0];
  };
  bool looked = p.look.host == nullptr;  // (kps::LookAt)
  auto store = [&](long long out_off, unsigned slot, Acc a) {
    const Tout out[1] = {Ep::Apply(a, p.count)};
    kps::LookAt<Tout, 1, false>(p.look, out, 1, looked);
    kps::WriteData<Tout, 1, false, false>(y + out_off + p.slots.OutOffset(slot), out, 1, 1);
  };

  // Work items (tile, stage) in order; the next item's loads are in flight while this one is folded.
  // tile and stage are uniform across the block, so every thread reaches every barrier.
  IndexT tile = blockIdx.x, stage = s_begin;
  Span span;
  if (tile < p.num_tiles) load(span, tile, stage);
  Acc acc[kDirect ? 1 : SLOTS];
  kps::Init(acc, R::Identity());
  while (tile < p.num_tiles) {
    __syncthreads();  // the previous item is folded: its shared memory is free
    if constexpr (WordColumns) span.Pad(R::Identity());
    span.Store(staged);
    const int head = span.head;
    const Tin* tile_in = reinterpret_cast<const Tin*>(staged) + head;
    const long long valid_rows = rows(tile, stage);
    const unsigned num_slots = static_cast<unsigned>(p.chunk_kept ? valid_rows * p.slots_per_row : p.num_slots);
    const unsigned num_folds = static_cast<unsigned>(p.chunk_kept ? p.num_folds : valid_rows * p.folds_per_row);
    const long long pos = p.index_offset + p.red.OutOffset(stage);
    __syncthreads();
    IndexT next_tile = tile, next_stage = stage + 1;
    if (next_stage == s_end) {
      next_stage = s_begin;
      next_tile += gridDim.x;
    }
    if (next_tile < p.num_tiles) load(span, next_tile, next_stage);

    if constexpr (ROW_BYTES > 0) {  // short 1-byte rows, 16 a thread: ROW_BYTES 16-byte loads, one store
      const long long out_off = p.kept.OutOffset(tile);
      Tout* out = y + out_off;
      const bool vec_out = p.slots.out_stride[0] == 1 && (kps::Address(out) & 15u) == 0;
      using Chunk = typename Span::Chunk;
      for (unsigned first = 16 * tx; first < num_slots; first += 16 * BLOCK) {
        Acc a[16];
        FoldByteRows<R, Tr, ROW_BYTES>(a, reinterpret_cast<const Chunk*>(tile_in) + first / 16 * ROW_BYTES);
        if (vec_out && first + 16 <= num_slots) {
          *reinterpret_cast<Chunk*>(out + first) = PackByteResults<Ep>(a, p.count);
        } else {
#pragma unroll
          for (int r = 0; r < 16; ++r) {
            if (first + r < num_slots) store(out_off, first + r, a[r]);
          }
        }
      }
    } else if constexpr (kDirect && kBY == 1 && TRND == 1 && !WordFolds) {  // a thread per short run: NY at once
      const long long out_off = p.kept.OutOffset(tile);
      for (unsigned first = tx; first < num_slots; first += BX * NY) {
        const Tin* run[NY];  // a slot past the last folds the last again, and is not stored
#pragma unroll
        for (int k = 0; k < NY; ++k) run[k] = tile_in + p.slots.Offset(min(first + k * BX, num_slots - 1));
        Acc a[NY];
        FoldSharedRows<R, Tr, Tin, NY>(a, run, num_folds, static_cast<unsigned>(p.folds.in_stride[0]), pos,
                                       p.folds.out_stride[0]);
#pragma unroll
        for (int k = 0; k < NY; ++k) {
          if (first + k * BX < num_slots) store(out_off, first + k * BX, a[k]);
        }
      }
    } else if constexpr (kDirect) {  // every slot's whole reduction is in this span: fold, combine and store each
      const long long out_off = p.kept.OutOffset(tile);
      for (unsigned base = 0; base < num_slots; base += BX) {  // uniform: every lane reaches the shuffles
        const unsigned slot = base + tx;
        Acc a = R::Identity();
        if (slot < num_slots) fold(a, tile_in, slot, num_folds, pos);
        a = kps::BlockReduce<R, kBY, BLOCK>(a, smem);
        if (slot < num_slots && ty == 0) store(out_off, slot, a);
      }
    } else {
#pragma unroll
      for (int k = 0; k < SLOTS; ++k) {
        const unsigned slot = tx + k * BX;
        if constexpr (WordColumns) {  // slot: a residue of the span's words (see FoldWordColumns)
          if (slot < num_slots && folds) {
            FoldWordColumns<R, Tr, NY, kBY>(acc[k], reinterpret_cast<const unsigned*>(staged), slot, num_slots,
                                            p.slots.magic[0], head, static_cast<int>(valid_rows * p.row_stride), ty);
          }
        } else if (slot < num_slots && folds) {
          fold(acc[k], tile_in, slot, num_folds, pos);
        }
      }
      if (next_stage == s_begin) {  // the tile's last stage: finish its outputs
        CombineStaged<R, SLOTS, BX, LanesAdjacent, BLOCK>(acc, smem);
        const int mine = tx < num_slots ? min(SLOTS, static_cast<int>((num_slots - tx + BX - 1) / BX)) : 0;
        bool write = true;
        if (p.num_splits > 1) {
          // The host launches one block column per tile when it splits: no grid-stride here.
          const long long per_split = p.num_tiles * p.num_slots;
          Acc* tile_partials = partials + static_cast<long long>(tile) * p.num_slots + tx;
          auto fold = [&](unsigned row, unsigned count, unsigned step) {  // 16 partials of a thread in flight
            kps::FoldPartials<R, SLOTS, 16 / SLOTS, kBY>(acc, tile_partials, row, count, step, per_split, mine,
                                                         ty, folds, BX);
            CombineStaged<R, SLOTS, BX, LanesAdjacent, BLOCK>(acc, smem);
          };
          auto store = [&](unsigned row) {
            if (ty != 0) return;
#pragma unroll
            for (int k = 0; k < SLOTS; ++k) {
              if (k < mine) tile_partials[row * per_split + k * BX] = acc[k];
            }
          };
          store(static_cast<unsigned>(split));
          write = kps::CombineSplits(p.semaphores, static_cast<unsigned>(split), static_cast<unsigned>(p.num_splits),
                                     static_cast<unsigned>(p.split_group), fold, store);
        }
        if constexpr (WordColumns) {
          if (write) {  // (uniform: the last block of the tile's splits, or the only one)
            StoreWordColumns<R, Ep, SLOTS, BX, BLOCK>(static_cast<unsigned char*>(p.y) + p.kept.OutOffset(tile), acc,
                                                      reinterpret_cast<unsigned*>(smem), ty == 0 ? mine : 0,
                                                      static_cast<int>(p.num_slots), static_cast<int>(p.row_stride),
                                                      head, p.count);
          }
        } else if (write && ty == 0) {
          const long long out_off = p.kept.OutOffset(tile);
#pragma unroll
          for (int k = 0; k < SLOTS; ++k) {
            if (k < mine) store(out_off, tx + k * BX, acc[k]);
          }
        }
        kps::Init(acc, R::Identity());
      }
    }
    tile = next_tile;
    stage = next_stage;
  }
}

}  // namespace kernels
