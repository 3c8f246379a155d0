"""The plan types: what the planner hands the launcher, source.py and params.py.

`ReduceConfig` holds what every launch has (the output and reduced index calculators, the grid,
the tile, the splits); each kernel's plan adds its own fields: `InnerPlan` (ReduceInner, a
reduced run walked with vector loads) and `OuterPlan` (ReduceOuter, kept columns sharing loads),
both `TiledPlan`s, and `StagedPlan` (ReduceStaged, whose span through shared memory is a `Stage`). Field names are read by
kernels/source.py (template arguments), kernels/params.py (the parameter structs), the launcher
and tests/replay.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Tuple

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
    """A planned launch, what every kernel's has. `kept`/`red` are index-calculator dims (outermost
    first). `words`: a 1-byte input read as uint32 words (every size, stride and offset in words);
    `word_columns`: the same, four kept columns a word, in and out (kps.word_columns). The fields
    have no defaults, so that each kernel's plan can add fields of its own after them."""

    kernel: ClassVar[str] = ""  # "inner" | "outer" | "staged": kernels/cuda/<kernel>.cuh
    reduce_type: str  # "full" | "last" | "higher" | "any"
    kept: Tuple[Dim, ...]
    red: Tuple[Dim, ...]
    in_offset: int  # elements added to the input pointer (flipped reduced dims)
    index_offset: int  # with index strides: the index of the element at in_offset (flipped dims)
    num_out: int
    num_red: int
    index_bits: int
    ny: int  # register-tile rows: loads in flight per thread
    lanes: int  # threads sharing one output (inner), side by side (outer: BX), folding one slot (staged)
    block: int
    grid: Tuple[int, int]
    num_splits: int
    words: bool
    word_columns: bool
    min_blocks: int  # the launch bound: resident blocks per SM its registers must allow (0: none)

    @property
    def num_seg(self) -> int:
        return 1

    @property
    def red_calc(self) -> Tuple[Dim, ...]:
        """The dims of the kernel's reduced-index calculator."""
        return self.red

    @property
    def bounded(self) -> bool:
        """A launch bound: the policy's (ReduceInner for a state, ReduceOuter for a heavy one), whose
        spills the launcher checks (planner.lighter), or one the launcher raised (planner.raised_bounds)."""
        return self.min_blocks > 0

    @property
    def combine_group(self) -> int:
        """Splits per group of the split combine (kps::GroupOfSplit; 0: one level or no split)."""
        return 0

    @property
    def counters(self) -> int:
        """Last-block counters a split launch takes: one per block column, and one per group of
        splits in each where the combine has two levels (0: no split)."""
        if self.num_splits == 1:
            return 0
        groups = ceil(self.num_splits, self.combine_group or self.num_splits)
        return self.grid[0] * (1 + groups if groups > 1 else 1)

    @property
    def partial_count(self) -> int:
        """Accumulators in the split scratch buffer (0: no split)."""
        return 0 if self.num_splits == 1 else self.num_splits * self.num_out

    @property
    def reads_bytes(self) -> bool:
        """The kernel reads a 1-byte input as bytes while its functors fold words: its input type
        is bytes, and every offset of the plan counts bytes."""
        return False

    @property
    def functor_words(self) -> str:
        """The functors the kernel runs: "" the reduction's own, "words" their twins over uint32
        words of four bytes, "word_columns" those reading and writing four kept columns a word."""
        return "words" if self.words else "word_columns" if self.word_columns else ""


@dataclass(frozen=True)
class TiledPlan(ReduceConfig):
    """What ReduceInner's and ReduceOuter's plans share: a register tile along the innermost run
    `inner` (`vec` elements a thread, `ny` rows)."""

    inner: Dim
    vec: int  # elements a thread reads along `inner` at a time (ReduceOuter: its columns)


@dataclass(frozen=True)
class InnerPlan(TiledPlan):
    """ReduceInner (kernels/cuda/inner.cuh): `inner` is the innermost reduced run, walked with
    `vec`-element vector loads by `lanes` threads an output; `red` the segments of an output."""

    kernel: ClassVar[str] = "inner"
    segs_per_split: int = 1  # a split: whole segments per block
    chunks: int = 1  # a split: chunks per segment
    chunk_len: int = 0
    flat_runs: bool = False  # the runs of an output walked as one sequence of vectors
    shared_lanes: bool = False  # lanes share the chunks of inputs off the first one's grid
    input_shift: int = 0  # with shared_lanes: the bytes every input off the grid lies past it (0: read at run time)
    rows: int = 1  # outputs a thread folds side by side: short aligned rows of `ny` vectors (ROWS)

    @property
    def num_seg(self) -> int:
        return size_of(self.red)

    @property
    def red_calc(self) -> Tuple[Dim, ...]:
        """The segments, and with flat runs the vectors of a run as one more, innermost dim (flat
        index = segment x vectors + vector)."""
        if self.flat_runs:
            return self.red + (Dim(self.inner.size // self.vec, self.vec, self.vec * self.inner.out_stride),)
        return self.red


@dataclass(frozen=True)
class OuterPlan(TiledPlan):
    """ReduceOuter (kernels/cuda/outer.cuh): `inner` is the innermost kept dim, whose neighbouring
    outputs share loads: tiles of `lanes` (BX) x `vec` columns; `red` the reduced rows."""

    kernel: ClassVar[str] = "outer"
    rows_per_split: int = 0
    col_tiles: int = 1  # tiles of lanes * vec columns
    num_tiles: int = 0
    vec_in: bool = False  # 16-byte loads allowed (alignment checked here)
    vec_out: bool = False  # vector stores allowed
    shifted_words: int = 0  # 1-byte kept columns off the word grid read four a word: their bytes
    split_group: int = 0  # splits per group of the combine (kps::GroupOfSplit)
    one_row: bool = False  # each output reduces one element: a map (the kernel's OneRow)
    prefetch: bool = False  # a tile's rows one step, many tiles a block: the next one's loaded early
    stacked: bool = False  # each row of threads a tile of its own, every reduced row in one thread's

    @property
    def combine_group(self) -> int:
        return self.split_group

    @property
    def reads_bytes(self) -> bool:
        return bool(self.shifted_words)

    @property
    def functor_words(self) -> str:
        return "word_columns" if self.shifted_words else super().functor_words


@dataclass(frozen=True)
class StagedPlan(ReduceConfig):
    """ReduceStaged (kernels/cuda/staged.cuh): `kept` holds the output tiles, `red` the stages;
    `stage` the span staged in shared memory."""

    kernel: ClassVar[str] = "staged"
    stage: Stage
    split_group: int = 0  # splits per group of the combine (kps::GroupOfSplit)

    @property
    def combine_group(self) -> int:
        return self.split_group

    @property
    def partial_count(self) -> int:
        """Every slot of every tile, the last tile's unused ones too (0: no split)."""
        return 0 if self.num_splits == 1 else self.num_splits * self.stage.num_tiles * self.stage.num_slots

    @property
    def reads_bytes(self) -> bool:
        st = self.stage
        return bool(st.word_folds or st.word_columns or st.byte_rows)

    @property
    def functor_words(self) -> str:
        st = self.stage
        if self.words or st.word_folds or st.byte_rows:
            return "words"
        return "word_columns" if self.word_columns or st.word_columns else ""
