"""What to compile for a plan: the program text and the kernel template's name expression."""
from __future__ import annotations

from pathlib import Path

from kps.functors import Functors

from .config import ReduceConfig


#: Where reduce.cuh lives, for the compiler's include path.
INCLUDE_DIR = Path(__file__).resolve().parent / "cuda"


def program(functors: Functors) -> str:
    """The reduce kernels with one reduction's functor structs."""
    return '#include "reduce.cuh"\n\n' + functors.render()


def kernel_name(cfg: ReduceConfig, functors: Functors) -> str:
    """`kernels::ReduceInner<...>`, `ReduceOuter<...>` or `ReduceStaged<...>` for this plan and these
    functors."""
    index_t = "unsigned int" if cfg.index_bits == 32 else "unsigned long long"
    if cfg.kernel == "staged":
        st = cfg.stage
        args = [
            functors.input_type, functors.reduce_struct, functors.transform_struct,
            functors.epilogue_struct, st.vectors, cfg.ny, cfg.lanes, st.slots_per_thread,
            str(st.lanes_adjacent).lower(), cfg.block, len(cfg.kept), len(cfg.red), len(st.slots), len(st.folds),
            index_t,
        ]
        return f"kernels::ReduceStaged<{', '.join(map(str, args))}>"
    args = [
        functors.input_type, functors.reduce_struct, functors.transform_struct,
        functors.epilogue_struct, cfg.vec, cfg.ny, cfg.lanes, cfg.block, len(cfg.kept), len(cfg.red_calc), index_t,
    ]
    if cfg.kernel == "inner":
        args.insert(8, cfg.min_blocks)
        args.append(str(cfg.flat_runs).lower())
        return f"kernels::ReduceInner<{', '.join(map(str, args))}>"
    args += [str(cfg.vec_in).lower(), str(cfg.vec_out).lower()]
    return f"kernels::ReduceOuter<{', '.join(map(str, args))}>"
