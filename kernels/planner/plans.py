"""The plan types: what the planner hands the launcher, source.py and params.py.

`ReduceConfig` is one launch of any of the three kernels; a staged launch also holds its `Stage`
(the span ReduceStaged reads through shared memory). Field names are read by kernels/source.py
(template arguments), kernels/params.py (the parameter struct), the launcher and tests/replay.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from .dims import Dim, ceil, size_of


@dataclass(frozen=True)
class Stage:
    """ReduceStaged's span: the innermost dims of the input, contiguous in memory, staged in shared
    memory one span at a time. The span's outermost dim (`rows_total` long, `row_stride` elements
    apart) is cut into chunks of `rows` rows where it does not fit whole; the chunk index is then
    the innermost dim of the tile calculator (`chunk_kept`) or of the stage calculator. Slots are a
    span's kept elements (the tile's outputs), folds its reduced ones."""

    slots: Tuple[Dim, ...]  # kept dims of a span: size, stride in the span, output stride
    folds: Tuple[Dim, ...]  # reduced dims of a span: size, stride in the span
    rows: int
    rows_total: int
    row_stride: int
    chunk_kept: bool
    slots_per_thread: int  # accumulators per thread (SLOTS); 0: direct (each span holds whole reductions)
    lanes_adjacent: bool  # the threads folding one slot are neighbours (rows) or BX apart (columns)
    vectors: int  # 16-byte loads per thread per span
    num_tiles: int  # output tiles: the tile calculator's size
    num_stages: int  # spans per output tile: the stage calculator's size
    stages_per_split: int
    word_folds: bool = False  # a 1-byte logical reduction folding its one contiguous reduced run as words
    word_columns: bool = False  # a 1-byte logical reduction folding odd kept columns as words (slots: word residues)
    byte_rows: int = 0  # a 1-byte logical reduction of rows this many bytes, 16 a thread (16-byte aligned spans)

    @property
    def num_slots(self) -> int:
        return size_of(self.slots)

    @property
    def num_folds(self) -> int:
        return size_of(self.folds)

    @property
    def row_chunks(self) -> int:
        return ceil(self.rows_total, self.rows)

    @property
    def direct(self) -> bool:
        return self.slots_per_thread == 0

    @property
    def slots_per_row(self) -> int:
        """Slots per row of the span's outermost dim, where it is kept (else 0)."""
        return self.num_slots // self.rows if self.chunk_kept else 0

    @property
    def folds_per_row(self) -> int:
        """Folds per row of the span's outermost dim, where it is reduced (else 0)."""
        return 0 if self.chunk_kept else self.num_folds // self.rows

    def chunk_rows(self, chunk: int) -> int:
        """Rows in chunk `chunk` of the span's outermost dim (the last one may be short)."""
        return min(self.rows, self.rows_total - chunk * self.rows)


@dataclass(frozen=True)
class ReduceConfig:
    """A planned launch. `kept`/`red` are index-calculator dims (outermost first); `inner` is the
    innermost run: the reduced dim walked with vector loads (inner kernel) or the kept dim whose
    neighbouring outputs share loads (outer kernel)."""

    reduce_type: str  # "full" | "last" | "higher" | "any"
    kernel: str  # "inner" | "outer" | "staged"
    kept: Tuple[Dim, ...]
    red: Tuple[Dim, ...]
    inner: Dim
    in_offset: int  # elements added to the input pointer (flipped reduced dims)
    num_out: int
    num_red: int
    index_bits: int
    vec: int  # elements per thread access along `inner` (the outer kernel's columns per thread)
    ny: int  # register-tile rows: loads in flight per thread
    lanes: int  # inner: threads sharing one output; outer: threads side by side (BX)
    block: int
    grid: Tuple[int, int]
    num_splits: int
    segs_per_split: int = 1  # inner kernel split: whole segments per block
    chunks: int = 1  # inner kernel split: chunks per segment
    chunk_len: int = 0
    rows_per_split: int = 0  # outer kernel split
    col_tiles: int = 1  # outer kernel: tiles of lanes * vec columns
    num_tiles: int = 0
    vec_in: bool = False  # outer kernel: 16-byte loads allowed (alignment checked here)
    vec_out: bool = False  # outer kernel: vector stores allowed
    flat_runs: bool = False  # inner kernel: the runs of an output walked as one sequence of vectors
    words: bool = False  # a 1-byte input read as uint32 words (every size, stride and offset in words)
    word_columns: bool = False  # the same, four kept columns a word, in and out (kps.word_columns)
    shifted_words: int = 0  # outer kernel, 1-byte kept columns off the word grid read four a word: their bytes
    stage: Optional[Stage] = None  # staged kernel: `kept` holds the output tiles, `red` the stages
    index_offset: int = 0  # with index strides: the index of the element at in_offset (flipped dims)
    min_blocks: int = 0  # inner and outer kernels: resident blocks per SM its registers must allow (0: no bound)
    shared_lanes: bool = False  # inner kernel: lanes share the chunks of inputs off the first one's grid
    input_shift: int = 0  # with shared_lanes: the bytes every input off the grid lies past it (0: read at run time)
    split_group: int = 0  # outer and staged kernels' splits: splits per group of the combine (kps::GroupOfSplit)

    @property
    def num_seg(self) -> int:
        return size_of(self.red) if self.kernel == "inner" else 1

    @property
    def red_calc(self) -> Tuple[Dim, ...]:
        """The dims of the kernel's reduced-index calculator: the segments, and with flat runs the
        vectors of a run as one more, innermost dim (flat index = segment x vectors + vector)."""
        if self.flat_runs:
            return self.red + (Dim(self.inner.size // self.vec, self.vec, self.vec * self.inner.out_stride),)
        return self.red

    @property
    def bounded(self) -> bool:
        """A launch bound on a state's tile (ReduceOuter for a heavy state, ReduceInner for any):
        the launcher checks what the bound spills (planner.lighter)."""
        return self.kernel in ("inner", "outer") and self.min_blocks > 0

    @property
    def counters(self) -> int:
        """Last-block counters a split launch takes: one per block column, and one per group of
        splits in each where the combine has two levels (0: no split)."""
        if self.num_splits == 1:
            return 0
        groups = ceil(self.num_splits, self.split_group or self.num_splits)
        return self.grid[0] * (1 + groups if groups > 1 else 1)

    @property
    def partial_count(self) -> int:
        """Accumulators in the split scratch buffer (0: no split)."""
        if self.num_splits == 1:
            return 0
        if self.stage is not None:  # every slot of every tile, the last tile's unused ones too
            return self.num_splits * self.stage.num_tiles * self.stage.num_slots
        return self.num_splits * self.num_out
