"""What to compile for a plan: the program text and the kernel template's name expression."""
from __future__ import annotations

from pathlib import Path

import kps
from kps.functors import Functors

from .planner import ReduceConfig


#: Where reduce.cuh lives, for the compiler's include path.
INCLUDE_DIR = Path(__file__).resolve().parent / "cuda"


def program(functors: Functors) -> str:
    """The reduce kernels with one reduction's functor structs."""
    return '#include "reduce.cuh"\n\n' + functors.render()


def plan_functors(cfg: ReduceConfig, functors: Functors) -> Functors:
    """The functors a plan's kernel runs: the reduction's own, or their twins over uint32 words
    where the plan reads bytes four at a time (`words`, a staged span's `word_folds` or
    `byte_rows`) or reads and writes four kept columns a word (`word_columns`, or `shifted_words`
    from rows off the word grid)."""
    if cfg.words or (cfg.stage is not None and (cfg.stage.word_folds or cfg.stage.byte_rows)):
        return kps.word_functors(functors)
    if cfg.word_columns or cfg.shifted_words or (cfg.stage is not None and cfg.stage.word_columns):
        return kps.word_columns(functors)
    return functors


def reads_bytes(cfg: ReduceConfig) -> bool:
    """Whether the plan's kernel reads a 1-byte input as bytes while its functors fold words (a
    staged span's `word_folds`, `word_columns` or `byte_rows`; ReduceOuter's `shifted_words`): its
    input type is bytes, and every offset of the plan counts bytes."""
    st = cfg.stage
    return bool(cfg.shifted_words) or (st is not None and bool(st.word_folds or st.word_columns or st.byte_rows))


def kernel_name(cfg: ReduceConfig, functors: Functors) -> str:
    """`kernels::ReduceInner<...>`, `ReduceOuter<...>` or `ReduceStaged<...>` for this plan and the
    functors it runs (`plan_functors`)."""
    index_t = "unsigned int" if cfg.index_bits == 32 else "unsigned long long"
    input_type = "unsigned char" if reads_bytes(cfg) else functors.input_type
    if cfg.kernel == "staged":
        st = cfg.stage
        args = [
            input_type, functors.reduce_struct, functors.transform_struct, functors.epilogue_struct, st.vectors,
            cfg.ny, cfg.lanes, st.slots_per_thread,
            str(st.lanes_adjacent).lower(), cfg.block, len(cfg.kept), len(cfg.red), len(st.slots), len(st.folds),
            index_t, str(st.word_folds).lower(), str(st.word_columns).lower(), st.byte_rows,
        ]
        return f"kernels::ReduceStaged<{', '.join(map(str, args))}>"
    args = [
        input_type, functors.reduce_struct, functors.transform_struct, functors.epilogue_struct, cfg.vec, cfg.ny,
        cfg.lanes, cfg.block, cfg.min_blocks, len(cfg.kept), len(cfg.red_calc), index_t,
    ]
    if cfg.kernel == "inner":
        args += [str(cfg.flat_runs).lower(), str(cfg.shared_lanes).lower(), cfg.input_shift]
        return f"kernels::ReduceInner<{', '.join(map(str, args))}>"
    args += [str(cfg.vec_in).lower(), str(cfg.vec_out).lower(), str(bool(cfg.shifted_words)).lower()]
    return f"kernels::ReduceOuter<{', '.join(map(str, args))}>"
