"""What to compile for a plan: the program text and the kernel template's name expression."""
from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import kps
from kps.functors import Functors

from . import params
from .planner import ReduceConfig


#: Where reduce.cuh lives, for the compiler's include path.
INCLUDE_DIR = Path(__file__).resolve().parent / "cuda"


_LAYOUT_ASSERTS = params.layout_asserts()


def program(functors: Functors) -> str:
    """The reduce kernels with one reduction's functor structs, and the parameter structs' layout
    checked against the host's packing (`params.layout_asserts`)."""
    return '#include "reduce.cuh"\n\n' + _LAYOUT_ASSERTS + "\n" + functors.render()


def plan_functors(cfg: ReduceConfig, functors: Functors) -> Functors:
    """The functors a plan's kernel runs (`ReduceConfig.functor_words`): the reduction's own, or
    their twins over uint32 words where the plan reads bytes four at a time, or reads and writes
    four kept columns a word."""
    view = cfg.functor_words
    return kps.word_functors(functors) if view == "words" else kps.word_columns(functors) if view else functors


def kernel_name(cfg: ReduceConfig, functors: Functors) -> str:
    """`kernels::ReduceInner<...>`, `ReduceOuter<...>` or `ReduceStaged<...>` for this plan and the
    functors it runs (`plan_functors`)."""
    args = ", ".join(str(value) for _, value in template_args(cfg, functors))
    return f"kernels::{KERNELS[cfg.kernel]}<{args}>"


#: kernel -> its template (kernels/cuda/inner.cuh, outer.cuh, staged.cuh).
KERNELS = {"inner": "ReduceInner", "outer": "ReduceOuter", "staged": "ReduceStaged"}


def template_args(cfg: ReduceConfig, functors: Functors) -> List[Tuple[str, object]]:
    """The kernel template's arguments for this plan, each by its parameter's name in its header
    (tests/test_params_layout.py checks names and order against it), in order."""
    index_t = "unsigned int" if cfg.index_bits == 32 else "unsigned long long"
    head = [("Tin", "unsigned char" if cfg.reads_bytes else functors.input_type), ("R", functors.reduce_struct),
            ("Tr", functors.transform_struct), ("Ep", functors.epilogue_struct)]
    if cfg.kernel == "staged":
        st = cfg.stage
        return head + [
            ("SV", st.vectors), ("NY", cfg.ny), ("BX", cfg.lanes), ("SLOTS", st.slots_per_thread),
            ("LanesAdjacent", _bool(st.lanes_adjacent)), ("BLOCK", cfg.block),
            ("MIN_BLOCKS", cfg.min_blocks), ("KND", len(cfg.kept)),
            ("RND", len(cfg.red)), ("TKND", len(st.slots)), ("TRND", len(st.folds)), ("IndexT", index_t),
            ("WordFolds", _bool(st.word_folds)), ("WordColumns", _bool(st.word_columns)), ("ROW_BYTES", st.byte_rows),
            # the split combine only where the plan splits (kernels/cuda/staged.cuh, docs/tuning.md)
            ("Split", _bool(cfg.num_splits > 1)),
        ]
    lanes = "LANES" if cfg.kernel == "inner" else "BX"
    args = head + [("VEC", cfg.vec), ("NY", cfg.ny), (lanes, cfg.lanes), ("BLOCK", cfg.block),
                   ("MIN_BLOCKS", cfg.min_blocks), ("KND", len(cfg.kept)), ("RND", len(cfg.red_calc)),
                   ("IndexT", index_t)]
    if cfg.kernel == "inner":
        return args + [("FlatRuns", _bool(cfg.flat_runs)), ("SharedLanes", _bool(cfg.shared_lanes)),
                       ("InputShift", cfg.input_shift), ("Split", _bool(cfg.num_splits > 1)), ("ROWS", cfg.rows)]
    return args + [("VecIn", _bool(cfg.vec_in)), ("VecOut", _bool(cfg.vec_out)),
                   ("ShiftedWords", _bool(bool(cfg.shifted_words))), ("OneRow", _bool(cfg.one_row)),
                   ("Prefetch", _bool(cfg.prefetch)), ("Stacked", _bool(cfg.stacked))]


def _bool(flag) -> str:
    """A C++ bool literal, as str(flag).lower() writes it."""
    return str(flag).lower()
