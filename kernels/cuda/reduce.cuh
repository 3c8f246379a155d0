// The reduce kernels, composed only from the kps primitives, a header each (inner.cuh, outer.cuh,
// staged.cuh) over the parameter structs (params.cuh) and the folds two of them share (folds.cuh).
//
// The planner (kernels/planner/) turns every reduction into
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

#include "inner.cuh"
#include "outer.cuh"
#include "staged.cuh"
