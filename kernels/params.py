"""Kernel parameters: the host side of `InnerParams` / `OuterParams` / `StagedParams`
(kernels/cuda/params.cuh).

Every field of those structs is 8 bytes wide, so the struct is a flat int64 array here: four
pointers, then the index calculators, then the scalars, in declaration order, then the look's
fields (LOOK_FIELDS slots), and last the pointers of a transform's further inputs (MORE_INPUTS slots).
The scalars are the tables below, one per struct, each field by its name in the struct:
`layout_asserts` makes CUDA check every field's offset in every program it compiles, and
tests/test_params_layout.py checks names and order against kernels/cuda/params.cuh.
"""
from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

from .planner import Dim, ReduceConfig

#: Slots of the pointers at the head of the struct: x, y, partials, semaphores.
X, Y, PARTIALS, SEMAPHORES = range(4)
POINTERS = 4

#: kps::Look, the slots before those: the pinned host flag, the device's seen word, the epoch, the
#: mask and the bound (kernels/look.py's `arm`); the flag 0 where no look is asked for.
LOOK_FIELDS = 5

#: kps::kMaxInputs - 1: the struct's last slots, the inputs after x of a transform of several arrays.
MORE_INPUTS = 3

Fields = Tuple[Tuple[str, Callable[[ReduceConfig], int]], ...]

#: InnerParams' scalars: (field, its value of a plan).
INNER_FIELDS: Fields = (
    ("num_out", lambda c: c.num_out),
    ("num_seg", lambda c: c.num_seg),
    ("inner_len", lambda c: c.inner.size),
    ("inner_stride", lambda c: c.inner.in_stride),
    ("count", lambda c: c.num_red),
    ("segs_per_split", lambda c: c.segs_per_split),
    ("chunks", lambda c: c.chunks),
    ("chunk_len", lambda c: c.chunk_len),
    ("num_splits", lambda c: c.num_splits),
    ("index_offset", lambda c: c.index_offset),
    ("inner_index_stride", lambda c: c.inner.out_stride),
)

#: OuterParams' scalars.
OUTER_FIELDS: Fields = (
    ("num_out", lambda c: c.num_out),
    ("inner_len", lambda c: c.inner.size),
    ("inner_in_stride", lambda c: c.inner.in_stride),
    ("inner_out_stride", lambda c: c.inner.out_stride),
    ("col_tiles", lambda c: c.col_tiles),
    ("col_tiles_magic", lambda c: fast_divmod_magic(c.col_tiles) if c.index_bits == 32 else 0),
    ("num_tiles", lambda c: c.num_tiles),
    ("num_red", lambda c: c.num_red),
    ("count", lambda c: c.num_red),
    ("rows_per_split", lambda c: c.rows_per_split),
    ("num_splits", lambda c: c.num_splits),
    ("index_offset", lambda c: c.index_offset),
    ("inner_bytes", lambda c: c.shifted_words),
    ("split_group", lambda c: c.split_group),
)

#: StagedParams' scalars (after its four index calculators: kept, red, slots, folds).
STAGED_FIELDS: Fields = (
    ("num_tiles", lambda c: c.stage.num_tiles),
    ("num_stages", lambda c: c.stage.num_stages),
    ("num_slots", lambda c: c.stage.num_slots),
    ("num_folds", lambda c: c.stage.num_folds),
    ("rows", lambda c: c.stage.rows),
    ("rows_total", lambda c: c.stage.rows_total),
    ("row_chunks", lambda c: c.stage.row_chunks),
    ("row_stride", lambda c: c.stage.row_stride),
    ("chunk_kept", lambda c: int(c.stage.chunk_kept)),
    ("slots_per_row", lambda c: c.stage.slots_per_row),
    ("folds_per_row", lambda c: c.stage.folds_per_row),
    ("count", lambda c: c.num_red),
    ("stages_per_split", lambda c: c.stage.stages_per_split),
    ("num_splits", lambda c: c.num_splits),
    ("index_offset", lambda c: c.index_offset),
    ("split_group", lambda c: c.split_group),
)

#: kernel -> (its struct in kernels/cuda/params.cuh, its scalars).
STRUCTS = {"inner": ("InnerParams", INNER_FIELDS), "outer": ("OuterParams", OUTER_FIELDS),
           "staged": ("StagedParams", STAGED_FIELDS)}


#: Index-calculator ranks (KND, RND, and for the staged kernel TKND, TRND) each struct's layout is
#: checked at (`layout_asserts`), with both index types: two sets of ranks pin the calculators' 4
#: slots a dim.
CHECKED_RANKS = {"inner": ((1, 1), (3, 2)), "outer": ((1, 1), (2, 3)), "staged": ((1, 1, 1, 1), (2, 3, 2, 1))}
INDEX_TYPES = ("unsigned int", "unsigned long long")


def _calcs(kernel: str) -> Tuple[str, ...]:
    """The struct's index calculators, in order (each 4 slots a dim, one dim at rank 0)."""
    return ("kept", "red", "slots", "folds") if kernel == "staged" else ("kept", "red")


def slots(kernel: str, ranks: Sequence[int]) -> int:
    """The 8-byte slots `pack` fills for `kernel`'s struct at index-calculator ranks `ranks`."""
    scalars = len(STRUCTS[kernel][1])
    return POINTERS + sum(4 * max(r, 1) for r in ranks) + scalars + LOOK_FIELDS + MORE_INPUTS


def layout_asserts() -> str:
    """CUDA `static_assert`s, generated from the tables here, that each parameter struct is laid out
    as `pack` fills it: its size, each index calculator right after the one before, the scalars
    one after another in the tables' order right after the last calculator, and the look and the
    further inputs' sizes. With the size, those pin every field's slot. (NVRTC has no offsetof in
    constant expressions; distances between long long fields of a constexpr instance it computes.)
    kernels/source.py puts them in every program, so a struct and its table cannot drift apart and
    still compile."""
    lines = ["// Generated by kernels/params.py (layout_asserts): the structs as the host packs them. A",
             "// device function, never called: its static instances stay out of the compiled code.",
             "__device__ inline void KernelParamsLayout() {",
             f'static_assert(sizeof(kps::Look) == {8 * LOOK_FIELDS}, "kernels/params.py: LOOK_FIELDS");']
    for kernel, (struct, fields) in STRUCTS.items():
        for ranks in CHECKED_RANKS[kernel]:
            for k, index_t in enumerate(INDEX_TYPES):
                v = f"k{struct}_{'_'.join(map(str, ranks))}_{k}"
                lines.append(f"static constexpr kernels::{struct}<{', '.join(map(str, ranks))}, {index_t}> {v}{{}};")
                checks = [(f"sizeof({v})", 8 * slots(kernel, ranks)),
                          (f"sizeof({v}.more_inputs)", 8 * MORE_INPUTS)]
                calcs = _calcs(kernel)
                for before, after, rank in zip(calcs, calcs[1:], ranks):
                    checks.append((f"&{v}.{after}.size[0] - &{v}.{before}.size[0]", 4 * max(rank, 1)))
                checks.append((f"&{v}.{fields[0][0]} - &{v}.{calcs[-1]}.size[0]", 4 * max(ranks[-1], 1)))
                checks += [(f"&{v}.{b} - &{v}.{a}", 1) for (a, _), (b, _) in zip(fields, fields[1:])]
                lines += [f'static_assert({got} == {want}, "kernels/params.py: {struct}");' for got, want in checks]
    return "\n".join(lines + ["}"]) + "\n"


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
        head += index_calc(cfg.stage.slots, 32) + index_calc(cfg.stage.folds, 32)
    return head + [value(cfg) for _, value in STRUCTS[cfg.kernel][1]]
