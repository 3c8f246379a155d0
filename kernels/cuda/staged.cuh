// ReduceStaged: the innermost dims form a contiguous span whose runs are short, odd or misaligned
// (3-wide rows, 7-wide columns, 11-long runs between kept dims): the block copies the span to shared
// memory with aligned 16-byte loads, whatever its start and length, and folds it from there, where no
// alignment matters (rows, words, byte rows, word columns).
#pragma once

#include "params.cuh"
#include "folds.cuh"

namespace kernels {

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
  kps::CarryFor<R, Tin, ROWS> carry;
  Tin raw[ROWS];
  const auto read = [&] {
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
      raw[k] = *run[k];
      run[k] += stride;
    }
  };
  unsigned i = 0;
  // A state's first elements are combined, the rest folded (R::Fold); a struct's carry has no levels
  // (kps::Rounds), so that path leaves it out.
  if constexpr (kps::HasFold<R>::value) {
    if (len == 0) return;
    read();
    kps::ReduceUnary<R, Tr, Tin, ROWS, 1, ROWS, false>(acc, raw, ROWS, 1, kps::AffineIndex<1>(pos, 0, 0));
#pragma unroll(ROWS == 1 ? 4 : 1)
    for (i = 1; i < len; ++i) {
      read();
      const long long index = pos + i * pos_stride;
#pragma unroll
      for (int k = 0; k < ROWS; ++k) {
        acc[k] = R::Fold(acc[k], kps::Cast<typename R::value_t>(Tr::Apply(kps::Cast<typename Tr::arg_t>(raw[k]))),
                         index);
      }
    }
    return;
  }
#pragma unroll(ROWS == 1 ? 4 : 1)  // one run alone: a few of its reads in flight instead
  for (; i < len; ++i) {
    read();
    Acc value[ROWS];
    kps::ElementwiseUnary<Acc, Tin, ROWS, 1, Tr, false>(value, raw, ROWS, 1, R::Identity(),
                                                        kps::AffineIndex<1>(pos + i * pos_stride, 0, 0));
    kps::Reduce<R, ROWS, 1>(acc, value);
    carry.Step(acc);
  }
  carry.Total(acc);
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
// Split: whether the combine of a split's partials is compiled (a plan splits a tile's stages over
// blocks, gridDim.y > 1, only where it is): only for split plans, whose blocks take one tile each and
// finish it after their work loop, where the next item's loads hold no registers. Its registers would
// otherwise bound every launch's blocks (float32 var's columns: 220 -> 92 registers; docs/tuning.md).
template <typename Tin, class R, class Tr, class Ep, int SV, int NY, int BX, int SLOTS, bool LanesAdjacent,
          int BLOCK, int MIN_BLOCKS, int KND, int RND, int TKND, int TRND, typename IndexT, bool WordFolds,
          bool WordColumns, int ROW_BYTES, bool Split>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) ReduceStaged(const StagedParams<KND, RND, TKND, TRND, IndexT> p) {
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
  // A struct accumulator's slots across columns (a state's, or a complex sum's), of one strided fold
  // each, are folded side by side (FoldStridedSlots), kSideRows rows of them at once: as many loads
  // in flight as one slot's NY.
  constexpr bool kSlotsSideBySide = __is_class(Acc) && !LanesAdjacent && !WordColumns && TRND == 1 && SLOTS > 1;
  constexpr int kSideRows = kSlotsSideBySide && NY > SLOTS ? NY / SLOTS : 1;
  // Rows of partials a thread loads a round of the split combine: 64 bytes of accumulators (16 float32
  // ones, 8 float64: a float32 sum's float64 ones, 16 at a time, held float32 split kernels at 80
  // registers where 64 fit), at least one row (a state wider than 32 bytes: one).
  constexpr int kPartialRows = kDirect || sizeof(Acc) * SLOTS > 64 ? 1 : static_cast<int>(64 / (sizeof(Acc) * SLOTS));

  const IndexT split = blockIdx.y;
  const IndexT s_begin = split * static_cast<IndexT>(p.stages_per_split);
  const IndexT s_end = min(static_cast<IndexT>(p.num_stages), s_begin + static_cast<IndexT>(p.stages_per_split));
  // The span of (tile, stage) holds chunk (chunk_kept ? tile : stage) mod row_chunks of its outermost
  // dim's rows. The chunk is counted along the work items, not divided for each: a 64-bit remainder
  // is a call, and ptxas spilled around it.
  const long long first_chunk = static_cast<long long>(p.chunk_kept ? blockIdx.x : s_begin) % p.row_chunks;
  const long long tile_chunks = p.chunk_kept ? static_cast<long long>(gridDim.x) % p.row_chunks : 0;
  auto rows = [&](long long chunk) -> long long { return min(p.rows, p.rows_total - chunk * p.rows); };
  auto chunk_after = [&](long long chunk, long long steps) -> long long {  // (steps < row_chunks)
    return chunk + steps < p.row_chunks ? chunk + steps : chunk + steps - p.row_chunks;
  };
  auto load = [&](Span& span, IndexT tile, IndexT stage, long long chunk) {
    span.Load(x + p.kept.Offset(tile) + p.red.Offset(stage), rows(chunk) * p.row_stride);
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
  // The count in a register, for every store below: read from the parameters at each store, the
  // epilogue's reciprocals of it (kps/statistics.py) were computed again for every output (float32
  // var rows of 3: 158.1 -> 127.0 us).
  const long long count = p.count;
  auto store = [&](long long out_off, unsigned slot, Acc a) {
    const Tout out[1] = {Ep::Apply(a, count)};
    kps::LookAt<Tout, 1, false>(p.look, out, 1, looked);
    kps::WriteData<Tout, 1, false, false>(y + out_off + p.slots.OutOffset(slot), out, 1, 1);
  };

  constexpr int kAccs = kDirect ? 1 : SLOTS;  // (a direct kernel folds one slot at a time)
  Acc acc[kAccs];
  kps::Init(acc, R::Identity());
  kps::CarryFor<R, Tin, kAccs> stages;  // a stage at a time (kps/chains.cuh)
  // A tile's outputs once its last stage is folded: the slots' accumulators combined across the block,
  // and where the tile is split (`split_combine`: the host launches one block column per tile, so it
  // is the block's last work item), across the splits' partials (kps::CombineSplits); then stored.
  auto finish = [&](IndexT tile, unsigned num_slots, int head, bool split_combine) {
    stages.Total(acc);
    CombineStaged<R, kAccs, BX, LanesAdjacent, BLOCK>(acc, smem);
    const int mine = tx < num_slots ? min(kAccs, static_cast<int>((num_slots - tx + BX - 1) / BX)) : 0;
    bool write = true;
    if (split_combine) {
      const long long per_split = p.num_tiles * p.num_slots;
      Acc* tile_partials = partials + static_cast<long long>(tile) * p.num_slots + tx;
      auto fold_partials = [&](unsigned row, unsigned count, unsigned step) {  // kPartialRows of a thread in flight
        kps::FoldPartials<R, kAccs, kPartialRows, kBY>(acc, tile_partials, row, count, step, per_split, mine, ty,
                                                       folds, BX);
        CombineStaged<R, kAccs, BX, LanesAdjacent, BLOCK>(acc, smem);
      };
      auto store_partials = [&](unsigned row) {
        if (ty != 0) return;
#pragma unroll
        for (int k = 0; k < SLOTS; ++k) {
          if (k < mine) tile_partials[row * per_split + k * BX] = acc[k];
        }
      };
      store_partials(static_cast<unsigned>(split));
      write = kps::CombineSplits(p.semaphores, static_cast<unsigned>(split), static_cast<unsigned>(p.num_splits),
                                 static_cast<unsigned>(p.split_group), fold_partials, store_partials);
    }
    if constexpr (WordColumns) {
      if (write) {  // (uniform: the last block of the tile's splits, or the only one)
        StoreWordColumns<R, Ep, kAccs, BX, BLOCK>(static_cast<unsigned char*>(p.y) + p.kept.OutOffset(tile), acc,
                                                  reinterpret_cast<unsigned*>(smem), ty == 0 ? mine : 0,
                                                  static_cast<int>(p.num_slots), static_cast<int>(p.row_stride), head,
                                                  count);
      }
    } else if (write && ty == 0) {
      const long long out_off = p.kept.OutOffset(tile);
#pragma unroll
      for (int k = 0; k < SLOTS; ++k) {
        if (k < mine) store(out_off, tx + k * BX, acc[k]);
      }
    }
    kps::Init(acc, R::Identity());
  };
  unsigned finish_slots = 0;  // (the split tile's, for its finish after the loop)
  int finish_head = 0;

  // Work items (tile, stage) in order; the next item's loads are in flight while this one is folded.
  // tile and stage are uniform across the block, so every thread reaches every barrier.
  IndexT tile = blockIdx.x, stage = s_begin;
  long long chunk = first_chunk;
  Span span;
  if (tile < p.num_tiles) load(span, tile, stage, chunk);
  while (tile < p.num_tiles) {
    __syncthreads();  // the previous item is folded: its shared memory is free
    if constexpr (WordColumns) span.Pad(R::Identity());
    span.Store(staged);
    const int head = span.head;
    const Tin* tile_in = reinterpret_cast<const Tin*>(staged) + head;
    const long long valid_rows = rows(chunk);
    const unsigned num_slots = static_cast<unsigned>(p.chunk_kept ? valid_rows * p.slots_per_row : p.num_slots);
    const unsigned num_folds = static_cast<unsigned>(p.chunk_kept ? p.num_folds : valid_rows * p.folds_per_row);
    const long long pos = p.index_offset + p.red.OutOffset(stage);
    __syncthreads();
    IndexT next_tile = tile, next_stage = stage + 1;
    long long next_chunk = p.chunk_kept ? chunk : chunk_after(chunk, 1);
    if (next_stage == s_end) {
      next_stage = s_begin;
      next_tile += gridDim.x;
      next_chunk = p.chunk_kept ? chunk_after(chunk, tile_chunks) : first_chunk;
    }
    if (next_tile < p.num_tiles) load(span, next_tile, next_stage, next_chunk);

    if constexpr (ROW_BYTES > 0) {  // short 1-byte rows, 16 a thread: ROW_BYTES 16-byte loads, one store
      const long long out_off = p.kept.OutOffset(tile);
      Tout* out = y + out_off;
      const bool vec_out = p.slots.out_stride[0] == 1 && (kps::Address(out) & 15u) == 0;
      using Chunk = typename Span::Chunk;
      for (unsigned first = 16 * tx; first < num_slots; first += 16 * BLOCK) {
        Acc a[16];
        FoldByteRows<R, Tr, ROW_BYTES>(a, reinterpret_cast<const Chunk*>(tile_in) + first / 16 * ROW_BYTES);
        if (vec_out && first + 16 <= num_slots) {
          *reinterpret_cast<Chunk*>(out + first) = PackByteResults<Ep>(a, count);
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
      if constexpr (kSlotsSideBySide) {
        const Tin* first[SLOTS];  // (a slot past the span's last repeats the last, and is not stored)
#pragma unroll
        for (int k = 0; k < SLOTS; ++k) first[k] = tile_in + p.slots.Offset(min(tx + k * BX, num_slots - 1));
        if (folds) {
          FoldStridedSlots<R, Tr, Tin, SLOTS, kSideRows, kBY, unsigned>(
              acc, first, num_folds, static_cast<unsigned>(p.folds.in_stride[0]), ty, pos, p.folds.out_stride[0]);
        }
      } else {
#pragma unroll
        for (int k = 0; k < SLOTS; ++k) {
          const unsigned slot = tx + k * BX;
          if constexpr (WordColumns) {  // slot: a residue of the span's words (see FoldWordColumns)
            if (slot < num_slots && folds) {
              FoldWordColumns<R, Tr, NY, kBY>(acc[k], reinterpret_cast<const unsigned*>(staged), slot, num_slots,
                                              p.slots.magic[0], head, static_cast<int>(valid_rows * p.row_stride),
                                              ty);
            }
          } else if (slot < num_slots && folds) {
            fold(acc[k], tile_in, slot, num_folds, pos);
          }
        }
      }
      stages.Step(acc);
      if (next_stage == s_begin) {  // the tile's last stage: finish its outputs
        if (Split && p.num_splits > 1) {  // after the loop, where no next item's loads hold registers
          finish_slots = num_slots;
          finish_head = head;
          break;
        }
        finish(tile, num_slots, head, false);
      }
    }
    tile = next_tile;
    stage = next_stage;
    chunk = next_chunk;
  }
  if constexpr (Split && !kDirect && ROW_BYTES == 0) {
    if (p.num_splits > 1 && tile < p.num_tiles) finish(tile, finish_slots, finish_head, true);  // (after the break)
  }
}

}  // namespace kernels
