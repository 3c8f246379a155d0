"""Kernel parameters: the host side of `InnerParams` / `OuterParams` / `StagedParams`
(kernels/cuda/reduce.cuh).

Every field of those structs is 8 bytes wide, so the struct is a flat int64 array here: four
pointers, then the index calculators, then the scalars, in declaration order, then the look's
fields (LOOK_FIELDS slots), and last the pointers of a transform's further inputs (MORE_INPUTS slots).
"""
from __future__ import annotations

from typing import List, Sequence

from .planner import Dim, ReduceConfig

#: Slots of the pointers at the head of the struct: x, y, partials, semaphores.
X, Y, PARTIALS, SEMAPHORES = range(4)
POINTERS = 4

#: kps::Look, the slots before those: the pinned host flag, the device's seen word, the epoch, the
#: mask and the bound (kernels/look.py's `arm`); the flag 0 where no look is asked for.
LOOK_FIELDS = 5

#: kps::kMaxInputs - 1: the struct's last slots, the inputs after x of a transform of several arrays.
MORE_INPUTS = 3


def fast_divmod_magic(d: int) -> int:
    """Multiplier and shift for `kps::FastDiv` (n / d for 0 <= n < 2^31), packed mul | shift << 32."""
    if d < 1:
        raise ValueError(f"divisor must be positive, got {d}")
    shift = (d - 1).bit_length()
    mul = ((1 << 32) * ((1 << shift) - d)) // d + 1
    return mul | (shift << 32)


def index_calc(dims: Sequence[Dim], index_bits: int) -> List[int]:
    """`kps::IndexCalc<len(dims)>`: sizes, magics, input strides, output strides (one dummy slot if empty)."""
    dims = list(dims) or [Dim(1, 0, 0)]
    magic = [fast_divmod_magic(d.size) if index_bits == 32 else 0 for d in dims]
    return [d.size for d in dims] + magic + [d.in_stride for d in dims] + [d.out_stride for d in dims]


def pack(cfg: ReduceConfig) -> List[int]:
    """The struct's fields, pointers zeroed (the launcher fills them per call)."""
    return _fields(cfg) + [0] * (LOOK_FIELDS + MORE_INPUTS)


def _fields(cfg: ReduceConfig) -> List[int]:
    head = [0] * POINTERS + index_calc(cfg.kept, cfg.index_bits) + index_calc(cfg.red_calc, cfg.index_bits)
    if cfg.kernel == "staged":
        st = cfg.stage
        return head + index_calc(st.slots, 32) + index_calc(st.folds, 32) + [
            st.num_tiles, st.num_stages, st.num_slots, st.num_folds, st.rows, st.rows_total, st.row_chunks,
            st.row_stride, int(st.chunk_kept), st.slots_per_row, st.folds_per_row, cfg.num_red,
            st.stages_per_split, cfg.num_splits, cfg.index_offset, cfg.split_group,
        ]
    if cfg.kernel == "inner":
        return head + [
            cfg.num_out, cfg.num_seg, cfg.inner.size, cfg.inner.in_stride, cfg.num_red,
            cfg.segs_per_split, cfg.chunks, cfg.chunk_len, cfg.num_splits, cfg.index_offset, cfg.inner.out_stride,
        ]
    magic = fast_divmod_magic(cfg.col_tiles) if cfg.index_bits == 32 else 0
    return head + [
        cfg.num_out, cfg.inner.size, cfg.inner.in_stride, cfg.inner.out_stride, cfg.col_tiles, magic,
        cfg.num_tiles, cfg.num_red, cfg.num_red, cfg.rows_per_split, cfg.num_splits, cfg.index_offset,
        cfg.shifted_words, cfg.split_group,
    ]
