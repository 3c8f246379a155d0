// The kernels' parameter structs, one per kernel: what the host packs (kernels/params.py names every
// field in this order; tests/test_params_layout.py checks the two agree).
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

}  // namespace kernels
