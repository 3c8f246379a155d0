"""ReduceStaged's regime: innermost runs the other kernels read badly (short, odd or misaligned),
read whole through shared memory a span at a time.

The span is the widest block of innermost dims that is contiguous in memory and fits BLOCK x
`vectors` vectors, its outermost dim cut into chunks of rows where it does not fit whole (the
chunk index is then the innermost dim of the tile or the stage calculator). Slots are a span's
kept elements (the tile's outputs), folds its reduced ones. Its reduced elements are folded by
lanes that read neighbouring words of shared memory: adjacent lanes along a reduced innermost run
(as many as divide the run, for conflict-free banks, or a warp for runs of 32 and more; with word
folds, neighbouring words are conflict-free, so as many as share the block among the span's
slots), or adjacent threads across kept innermost columns.

1-byte `any` / `all` have three folds of their own here: word folds (a span's one contiguous
reduced run folded as words), word columns (the rows of W kept columns, W no multiple of 4, folded
as the span's words: a word's four bytes belong to the same four columns every lcm(W, 4) / 4 words,
its residue, the slot; spans of whole 16-row multiples, so every span starts where the first does
in its 16-byte vector) and byte rows (rows of at most STAGE_BYTE_ROWS_MAX bytes, each a whole
reduction, on the 16-byte grid: a thread folds 16 from its 16-byte chunks).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple, Optional, Tuple

from .budget import Budget
from .dims import Dim, aligned, ceil, index_bits, merge, pow2_at_least, pow2_at_most, size_of, stride_key, two_adic
from .layout import Layout
from .inner import short_rows
from .outer import busy_share, col_threads, stacks
from .plans import Stage, StagedPlan
from .splits import choose_splits, split_group, splits_within
from .traits import Traits
from .words import byte_row_bytes, shifts_words


def applies(layout: Layout, traits: Traits, tuning) -> bool:
    """One input read with vector loads (ReduceStaged stages one), not shifted words, an accumulator
    of at most STAGE_MAX_DIRECT_ACC_BYTES (the block's accumulators share shared memory with its span:
    over STAGE_MAX_ACC_BYTES only some spans take it, `plan`), and a run the other kernels read badly
    (`wants_stage`)."""
    return (traits.vector_loads and traits.inputs == 1 and traits.acc_itemsize <= tuning.STAGE_MAX_DIRECT_ACC_BYTES
            and not shifts_words(layout, traits, tuning) and wants_stage(layout, traits, tuning))


def wants_stage(layout: Layout, traits: Traits, tuning) -> bool:
    """Whether the innermost run is one the other kernels read badly: short (a reduced run of at
    most STAGE_MAX_RUN_BYTES, STAGE_WORD_MAX_RUN_BYTES where a 1-byte logical reduction folds it as
    words, or kept columns of at most STAGE_MAX_COLUMN_BYTES) and off the 16-byte grid (its length,
    or a stride or the start of the others; columns of elements of 4 bytes or more only up to
    STAGE_MAX_WIDE_COLUMN_BYTES, or where a span holds their reductions whole), or a run of at most
    STAGE_ALIGNED_RUN_BYTES (`plan` leaves ReduceInner the rows it folds several a thread), a
    scalar's reduced runs that end inside an L2 sector between other outputs' (`_straddles_sectors`),
    or aligned columns over too few rows for ReduceOuter's tile (a state's only where ReduceOuter's
    block would idle, `_state_span`). Longer aligned runs are whole vectors, which ReduceInner and
    ReduceOuter read at full speed. Kept columns that ReduceOuter's stacked walk takes
    (`outer.stacks`), on the 16-byte grid or off it, are not staged."""
    use_inner, itemsize = layout.inner_reduced, layout.itemsize
    inner = layout.red[-1] if use_inner else layout.kept[-1]
    run_bytes, num_red = inner.size * itemsize, size_of(layout.red)
    limit = tuning.STAGE_MAX_COLUMN_BYTES
    if use_inner:
        limit = tuning.STAGE_WORD_MAX_RUN_BYTES if _word_folds(layout, traits) else tuning.STAGE_MAX_RUN_BYTES
    if inner.in_stride != 1 or run_bytes > limit:
        return False
    if not use_inner and stacks(layout, traits, tuning):
        return False
    return (run_bytes <= tuning.STAGE_ALIGNED_RUN_BYTES
            or (use_inner and _straddles_sectors(layout, traits, tuning))
            or (not use_inner and _few_rows_for_columns(run_bytes, num_red, layout.out_itemsize, tuning))
            or (_misaligned(layout, tuning)
                and (use_inner or itemsize < 4 or run_bytes <= tuning.STAGE_MAX_WIDE_COLUMN_BYTES
                     or _in_one_span(run_bytes, num_red, tuning))))


def _straddles_sectors(layout: Layout, traits: Traits, tuning) -> bool:
    """Whether a scalar's outputs each reduce several runs that end inside an L2 sector (runs of up
    to STAGE_STRADDLING_RUN_BYTES), between which STAGE_STRADDLING_MIN_OUTPUTS outputs' runs or more
    lie, in an input of STAGE_STRADDLING_MIN_BYTES or more. The next output's run starts in the same
    sector, and ReduceInner walks each output's runs in blocks of its own: once the input outgrows
    the L2, that sector comes from DRAM twice. A span reads it once. (An output of one run, a row,
    shares the sector with rows the same warp reads. A state's fold in a span costs more than the
    sector, float32 var over runs of 12 1.29-1.40x the time, and so does the fold of elements
    narrower than STAGE_STRADDLING_MIN_ITEMSIZE; policy.py.)"""
    outer_runs = [d for d in layout.red[:-1] if d.size > 1]
    if traits.state or layout.itemsize < tuning.STAGE_STRADDLING_MIN_ITEMSIZE or not outer_runs:
        return False
    run_bytes = layout.red[-1].size * layout.itemsize
    next_run = min(abs(d.in_stride) for d in outer_runs)  # from an output's run to its next
    between = size_of([d for d in layout.kept if abs(d.in_stride) < next_run])
    return (run_bytes % tuning.SECTOR_BYTES != 0 and run_bytes <= tuning.STAGE_STRADDLING_RUN_BYTES
            and between >= tuning.STAGE_STRADDLING_MIN_OUTPUTS
            and layout.num_out * layout.num_red * layout.itemsize >= tuning.STAGE_STRADDLING_MIN_BYTES)


def _misaligned(layout: Layout, tuning) -> bool:
    """Whether the innermost run's length, or a stride or the start of the other dims, is off the
    16-byte grid."""
    inner = layout.red[-1] if layout.inner_reduced else layout.kept[-1]
    others = [d.in_stride for d in layout.kept + layout.red if d.size > 1 and d is not inner]
    return not aligned(layout.in_base, [inner.size] + others, layout.itemsize, tuning.LOAD_BYTES)


def _in_one_span(column_bytes: int, num_red: int, tuning) -> bool:
    """Whether kept columns of `column_bytes` over `num_red` reduced rows fit one span whole: where
    they do, the span folds them without splits, which ReduceOuter's tile of few rows an output does
    not match (policy.py, STAGE_MAX_WIDE_COLUMN_BYTES)."""
    return column_bytes * num_red <= tuning.BLOCK_THREADS * tuning.STAGE_VECTORS * tuning.LOAD_BYTES


def _word_folds(layout: Layout, traits: Traits) -> bool:
    """A 1-byte logical reduction left in bytes whose spans may fold their reduced runs as words."""
    return traits.folds_words and layout.itemsize == 1 and layout.inner_reduced


def _few_rows_for_columns(column_bytes: int, num_red: int, out_itemsize: int, tuning) -> bool:
    """Whether kept columns of `column_bytes` (at most STAGE_FEW_ROW_COLUMN_BYTES, 16-byte
    aligned; STAGE_FEW_ROW_NARROW_COLUMN_BYTES over two rows of results narrower than 8 bytes,
    whose stores then weigh half the reads) have fewer reduced rows than one step of ReduceOuter's
    tile takes (its rows of threads, MAX_TILE_ROWS rows each): its block would leave rows of
    threads without a row (policy.py)."""
    ny = tuning.MAX_TILE_ROWS
    bx = col_threads(pow2_at_least(ceil(column_bytes, tuning.LOAD_BYTES)), num_red, ny, tuning)
    narrow = num_red <= 2 and out_itemsize < 8
    widest = tuning.STAGE_FEW_ROW_NARROW_COLUMN_BYTES if narrow else tuning.STAGE_FEW_ROW_COLUMN_BYTES
    return column_bytes <= widest and num_red < tuning.BLOCK_THREADS // bx * ny


def plan(layout: Layout, traits: Traits, budget: Budget, sm_count: int, tuning) -> Optional[StagedPlan]:
    """ReduceStaged's launch, or None where no span fits (the other kernels then take it). A span of
    whole reductions (direct) is tried again with STAGE_VECTORS_DIRECT vectors a thread; a reduced
    run longer than STAGE_MAX_RUN_BYTES is staged only where its span folds it as words. Rows that
    ReduceInner folds several a thread (`inner.short_rows`) are left to it."""
    if short_rows(layout, traits, budget, sm_count, tuning) > 1:
        return None
    wide_columns = _wide_state(traits, tuning) and not layout.inner_reduced
    staging = _Staging(layout, traits, budget, sm_count, tuning,
                       tuning.STAGE_WIDE_COLUMN_VECTORS if wide_columns else tuning.STAGE_VECTORS)
    span = staging.span()
    if span is not None and span.stage.direct and tuning.STAGE_VECTORS_DIRECT != tuning.STAGE_VECTORS:
        span = replace(staging, vectors=tuning.STAGE_VECTORS_DIRECT).span()
    if span is None or (not span.stage.word_folds and layout.inner_reduced
                        and layout.red[-1].size * layout.itemsize > tuning.STAGE_MAX_RUN_BYTES):
        return None
    if traits.state and not _state_span(layout, traits, budget, tuning):
        return None
    stage, grid, block = span.stage, span.grid, tuning.BLOCK_THREADS
    partials = stage.num_tiles * stage.num_slots * grid[1] if grid[1] > 1 else 0
    side_by_side = stage.direct and span.lanes == block and len(stage.folds) == 1 and not stage.word_folds
    ny = _direct_rows(stage, span.lanes, traits.acc_itemsize, tuning) if side_by_side else tuning.MAX_TILE_ROWS
    per_round = 0 if stage.direct else (block // span.lanes) * _partial_rows(traits, stage.slots_per_thread, tuning)
    return StagedPlan(
        reduce_type=layout.reduce_type, kept=span.tiles, red=span.stages,
        index_bits=index_bits(layout.extent, layout.out_extent, layout.num_out, layout.num_red, partials),
        ny=ny, lanes=span.lanes, grid=grid, num_splits=grid[1],
        words=layout.words, word_columns=layout.word_columns, stage=stage,
        split_group=split_group(grid[1], per_round, grid[0], tuning),
        in_offset=layout.in_offset, num_out=layout.num_out, num_red=layout.num_red, block=block,
        index_offset=layout.index_offset, min_blocks=budget.min_blocks_or(0),
    )


def _wide_state(traits: Traits, tuning) -> bool:
    """An accumulator wider than STAGE_MAX_ACC_BYTES (complex Welford's 64 bytes): four slots of it
    beside a span overflow shared memory, so it is staged a slot a thread or in direct spans."""
    return traits.acc_itemsize > tuning.STAGE_MAX_ACC_BYTES


def _state_span(layout: Layout, traits: Traits, budget: Budget, tuning) -> bool:
    """Whether a state is staged in this span.

    Across kept columns: where ReduceOuter would read them in runs of one vector or off the 16-byte
    grid (a state of at most STAGE_MAX_ACC_BYTES), or where its block would leave most of its
    threads idle (few reduced rows under narrow columns: STAGE_STATE_OUTER_BUSY, and
    STAGE_WIDE_OUTER_BUSY for a wider state, staged a slot a thread). Along reduced runs: a state of
    at most STAGE_MAX_ACC_BYTES, or a wider one, a slot a thread, over runs of at most
    STAGE_WIDE_MAX_RUN_BYTES (longer ones ReduceInner reads faster): in ReduceInner a few outputs
    over many short runs keep a thread each (complex64 var over (2236962, 3, 5), axes (0, 2): three
    threads of a block busy, 7.2 ms; staged, 112 us)."""
    small = not _wide_state(traits, tuning)
    if layout.inner_reduced:
        return small or layout.red[-1].size * layout.itemsize <= tuning.STAGE_WIDE_MAX_RUN_BYTES
    one_vector = layout.kept[-1].size * layout.itemsize <= tuning.STAGE_ALIGNED_RUN_BYTES
    if small and (one_vector or _misaligned(layout, tuning)):
        return True
    most = tuning.STAGE_STATE_OUTER_BUSY if small else tuning.STAGE_WIDE_OUTER_BUSY
    return busy_share(layout, traits, budget, tuning) <= most


class StagedSpan(NamedTuple):
    """A staged plan's span and grid: the tile calculator's dims (`tiles`), the stage calculator's
    (`stages`), and the threads side by side (`lanes`, BX)."""

    stage: Stage
    grid: Tuple[int, int]
    tiles: Tuple[Dim, ...]
    stages: Tuple[Dim, ...]
    lanes: int


class _Row(NamedTuple):
    """A candidate span's outermost dim (`dims[index]`, kept or reduced) and the dims inside it."""

    index: int
    dim: Dim
    kept: bool
    inside: tuple  # ((Dim, kept), ...)
    inner: int  # elements of one row of the span
    slots_per_row: int  # kept elements of one row


@dataclass(frozen=True)
class _Staging:
    """The search for a span, outermost dim from the widest span inwards: the first that gives
    every thread at most STAGE_MAX_SLOTS outputs (STAGE_MAX_STATE_SLOTS for a state: a slot takes
    more registers, and lanes cost more to combine) and enough blocks to keep the memory busy."""

    layout: Layout
    traits: Traits
    budget: Budget
    sm_count: int
    tuning: object
    vectors: int  # 16-byte loads a thread a span, at most

    @functools.cached_property
    def dims(self) -> tuple:
        """((Dim, kept), ...): every dim of more than one element, outermost first."""
        return tuple(sorted([(d, True) for d in self.layout.kept if d.size > 1]
                            + [(d, False) for d in self.layout.red if d.size > 1], key=lambda e: stride_key(e[0])))

    @property
    def vec(self) -> int:
        return self.tuning.LOAD_BYTES // self.layout.itemsize

    @property
    def capacity(self) -> int:
        """Elements a span holds (a span may start mid-vector)."""
        return self.tuning.BLOCK_THREADS * self.vectors * self.vec - (self.vec - 1)

    @property
    def max_slots(self) -> int:
        t = self.tuning
        if _wide_state(self.traits, t):
            return t.STAGE_WIDE_STATE_SLOTS
        return t.STAGE_MAX_STATE_SLOTS if self.traits.state else t.STAGE_MAX_SLOTS

    @property
    def lanes_adjacent(self) -> bool:
        """The threads folding one slot are neighbours along a reduced innermost run (else BX apart,
        across kept innermost columns)."""
        return not self.dims[-1][1]

    @property
    def word_columns(self) -> bool:
        """A 1-byte logical reduction with bool results left in bytes: odd columns may fold as words."""
        t = self.traits
        return t.word_columns and self.layout.itemsize == 1 and self.layout.out_itemsize == 1

    def span(self) -> Optional[StagedSpan]:
        """The first span that fits, from the widest inwards; None where the innermost dims are not
        contiguous or none fits."""
        dims = self.dims
        if not dims or dims[-1][0].in_stride != 1:
            return None
        widest, inner = len(dims) - 1, 1
        while widest > 0 and dims[widest][0].size * inner <= self.capacity and \
                dims[widest - 1][0].in_stride == dims[widest][0].size * inner:
            inner *= dims[widest][0].size
            widest -= 1
        for i in range(widest, len(dims)):
            inside = dims[i + 1:]
            row = _Row(i, dims[i][0], dims[i][1], inside, size_of([d for d, _ in inside]),
                       size_of([d for d, k in inside if k]))
            span = self._span_of(row)
            if span is not None:
                return span
        return None

    def _span_of(self, row: _Row) -> Optional[StagedSpan]:
        """The span whose outermost dim is `row`, or None where it does not fit."""
        t, block = self.tuning, self.tuning.BLOCK_THREADS
        rows = min(row.dim.size, self.capacity // row.inner)
        # direct: every reduced dim lies whole in the span, so a tile is one span (policy.py)
        direct = self.lanes_adjacent and self._whole(row, rows)
        byte_rows = self._byte_rows(row, direct)
        fold_run = row.inner * (1 if row.kept else rows)  # a slot's folds
        words = (_word_folds(self.layout, self.traits) and self.lanes_adjacent
                 and not any(k for _, k in row.inside)  # one contiguous fold run
                 and fold_run >= t.STAGE_WORD_MIN_RUN_BYTES and not byte_rows)
        period = 0
        if self.lanes_adjacent:
            lanes = self._lanes_on_runs(row, rows, direct, byte_rows, words)
            if lanes is None:
                return None
            rows, bx = lanes[0], block // lanes[1]
        else:
            lanes = self._lanes_on_columns(row, rows)
            if lanes is None:
                return None
            rows, bx, period = lanes
        whole = self._whole(row, rows)
        least = t.STAGE_MIN_WHOLE_SPAN_VECTORS_PER_THREAD if whole else t.STAGE_MIN_SPAN_VECTORS_PER_THREAD
        if rows * row.inner < block * self.vec * least:
            return None  # too small a span (policy.py)
        num_slots = period or row.slots_per_row * (rows if row.kept else 1)
        slots_per_thread = 0 if direct else pow2_at_least(ceil(num_slots, bx))
        chunk = Dim(ceil(row.dim.size, rows), rows * row.dim.in_stride, rows * row.dim.out_stride)
        chunked = rows < row.dim.size
        outside = self.dims[:row.index]
        tiles = tuple([d for d, k in outside if k] + ([chunk] if chunked and row.kept else []))
        stages = tuple([d for d, k in outside if not k] + ([chunk] if chunked and not row.kept else []))
        num_tiles, num_stages = size_of(tiles), size_of(stages)
        splits = self._splits(num_tiles, num_stages, bx, slots_per_thread)
        if splits is None:
            return None
        per_split = ceil(num_stages, splits)
        splits = ceil(num_stages, per_split)
        # loads per thread: as many as the span needs (a span may start mid-vector), so a small
        # span keeps no idle registers and shared memory
        span_vectors = ceil(rows, 16) * row.inner if byte_rows else ceil(rows * row.inner + self.vec - 1, self.vec)
        if period:  # slots: the residues (a word each); folds: a residue's words, the most a span holds
            slots, folds = (Dim(period, 1, 0),), (Dim(ceil(rows * row.inner + 3, 4 * period) + 1, period),)
        else:
            span_row = Dim(rows, row.dim.in_stride, row.dim.out_stride)  # reduced: the index stride
            slots = _span_dims(span_row, row.kept, row.inside, kept=True)
            folds = _span_dims(span_row, row.kept, row.inside, kept=False)
        stage = Stage(
            slots=slots, folds=folds,
            rows=rows, rows_total=row.dim.size, row_stride=row.dim.in_stride, chunk_kept=row.kept,
            slots_per_thread=slots_per_thread, lanes_adjacent=self.lanes_adjacent,
            vectors=min(self.vectors, pow2_at_least(ceil(span_vectors, block))), num_tiles=num_tiles,
            num_stages=num_stages, stages_per_split=per_split,
            word_folds=words, word_columns=bool(period), byte_rows=byte_rows,
        )
        resident = self.budget.resident(self.sm_count, t)
        grid_x = num_tiles if splits > 1 else min(num_tiles, resident, t.MAX_GRID_X)
        return StagedSpan(stage, (grid_x, splits), tiles, stages, bx)

    def _whole(self, row: _Row, rows: int) -> bool:
        """Whether a span of `rows` rows of `row` holds its outputs' whole reductions: no reduced dim
        outside it, and all of a reduced row."""
        return all(k for _, k in self.dims[:row.index]) and (row.kept or rows == row.dim.size)

    def _lanes_on_runs(self, row: _Row, rows: int, direct: bool, byte_rows: int, words: bool):
        """(rows, lanes on one run) where a slot's lanes are neighbours, or None. As many lanes as keep
        shared-memory reads within STAGE_ROW_BANK_WAYS-way bank conflicts, more where a span has too
        few slots to occupy the block (in a direct span whose slots fold one strided run each, or a
        state, as far as STAGE_DIRECT_RUN_FILL; a scalar's runs of elements of 4 bytes or more as far
        as each lane folds STAGE_RUN_LANE_ELEMENTS, policy.py); with word folds as many as share the
        block among the span's slots (wider than a warp only as the whole block, on a span of one
        slot); with byte rows one (a thread 16 rows, from the chunks that hold them: spans of 16-row
        multiples). Rows or lanes cut to keep a thread's slots within `max_slots`."""
        t, block, max_slots = self.tuning, self.tuning.BLOCK_THREADS, self.max_slots
        num_slots = row.slots_per_row * (rows if row.kept else 1)
        run_bytes = (self.dims[-1][0].size if row.inside else rows) * self.layout.itemsize
        one_run = len(_span_dims(row.dim, row.kept, row.inside, kept=False)) <= 1
        if direct and one_run and not self.traits.state and self.layout.itemsize >= 4:
            run = run_bytes // self.layout.itemsize
            fill = pow2_at_most(max(1, min(block // num_slots, run // t.STAGE_RUN_LANE_ELEMENTS)))
        else:
            share = t.STAGE_DIRECT_RUN_FILL if direct and (one_run or self.traits.state) else 1
            fill = pow2_at_most(max(1, block // (num_slots * share)))
        by = min(t.WARP_SIZE, max(two_adic(run_bytes) // (4 * t.STAGE_ROW_BANK_WAYS), fill, 1))
        if words:
            fold_run = row.inner * (1 if row.kept else rows)
            by = min(pow2_at_most(max(1, block // num_slots)), pow2_at_least(ceil(fold_run, 4)))
            by = by if by <= t.WARP_SIZE or by == block else t.WARP_SIZE
        if byte_rows:
            by = 1
            rows = min(rows, block * self.vectors // byte_rows * 16)
            rows = rows if rows == row.dim.size else rows - rows % 16
        if not direct:
            if row.kept:
                rows = min(rows, block // by * max_slots // row.slots_per_row)
            elif row.slots_per_row > block // by * max_slots:
                fits = row.slots_per_row <= block * max_slots
                by = pow2_at_most(block * max_slots // row.slots_per_row) if fits else 0
        return (rows, by) if rows and by else None

    def _lanes_on_columns(self, row: _Row, rows: int):
        """(rows, threads side by side, word-column residues or 0) across kept innermost columns, or
        None. A thread per slot where they are more than half a warp and fit two rows of threads
        (policy.py), else a power of two of them; odd 1-byte columns under one contiguous output row
        fold as words by residue where the residues are at most STAGE_WORD_COLUMN_RESIDUES a thread."""
        t, block, max_slots = self.tuning, self.tuning.BLOCK_THREADS, self.max_slots
        if row.kept:
            rows = min(rows, block * max_slots // row.slots_per_row)
        if not rows or row.slots_per_row > block * max_slots:
            return None
        columns = row.inside[0][0] if len(row.inside) == 1 else None
        period = 0
        if (self.word_columns and row.index == 0 and not row.kept and columns is not None and columns.size % 4
                and columns.out_stride == 1 and rows >= 16):
            period = math.lcm(columns.size, 4) // 4
            period = period if period <= block * t.STAGE_WORD_COLUMN_RESIDUES else 0
        if period:
            rows -= rows % 16
        slots = period or row.slots_per_row * (rows if row.kept else 1)
        ragged = t.WARP_SIZE // 2 < slots <= block // 2
        return rows, (slots if ragged else min(block, pow2_at_least(slots))), period

    def _splits(self, num_tiles: int, num_stages: int, bx: int, slots_per_thread: int) -> Optional[int]:
        """Splits of a tile's stages where the tiles cannot fill the GPU: no more than the combine
        folds in a few round trips (policy.py), in one level where that makes a block an SM, else
        in two (where `two_levels`); None where the most allowed still leave the memory idle (a
        narrower span, or ReduceOuter, does better)."""
        t, sm_count = self.tuning, self.sm_count
        split_target = self.budget.split_target(sm_count, t)
        if not (num_tiles < split_target and num_tiles <= t.MAX_GRID_X and num_stages > 1):
            return 1
        per_trip = (t.BLOCK_THREADS // bx) * _partial_rows(self.traits, slots_per_thread, t)
        max_trips = t.STAGE_MAX_COMBINE_TRIPS if self.layout.itemsize > 1 else t.STAGE_MAX_COMBINE_TRIPS_1_BYTE
        most = max_trips * per_trip
        if num_tiles * most < sm_count and self.two_levels:
            most = splits_within(max_trips, per_trip, num_tiles, t)
        cap = min(num_stages, t.MAX_GRID_Y, max(
            t.STAGE_COMBINE_TRIPS * per_trip, min(most, ceil(t.STAGE_MIN_BLOCKS_PER_SM * sm_count, num_tiles))))
        if cap < num_stages and num_tiles * cap < sm_count:
            return None
        return choose_splits(num_tiles, split_target, cap, lambda want: ceil(num_stages, ceil(num_stages, want)),
                             t.SPLIT_FILL_SLACK)

    @property
    def two_levels(self) -> bool:
        """Where one level of the combine folds too few splits to give every SM a block, as many as
        two levels fold in those rounds; not for a state's columns, which read faster in ReduceOuter
        than staged over two-level splits (policy.py)."""
        return self.layout.inner_reduced or not self.traits.state

    def _byte_rows(self, row: _Row, direct: bool) -> int:
        """`byte_row_bytes` of a span whose outermost dim is `row`, where a 1-byte logical reduction
        left in bytes keeps those rows, each a whole reduction (`direct`) of one run."""
        if not (_word_folds(self.layout, self.traits) and direct and row.kept and len(row.inside) == 1) \
                or row.inside[0][1]:
            return 0
        return byte_row_bytes(row.inside[0][0], row.dim, [d.in_stride for d, _ in self.dims[:row.index]],
                              self.layout.in_base, self.tuning)


def _partial_rows(traits: Traits, slots_per_thread: int, tuning) -> int:
    """Rows of partials a thread of a split combine loads a round, as the split groups are chosen: 16
    accumulators, one row of a state wider than STAGE_MAX_ACC_BYTES. (staged.cuh's kPartialRows loads
    64 bytes of accumulators a round since 2026-11-28; the groups were measured as they are, and this
    model moves 3304 of 7307 split plans of a local scan where it follows the kernel: not measured.)"""
    return 1 if _wide_state(traits, tuning) else 16 // slots_per_thread


def _span_dims(row: Dim, row_kept: bool, inside, kept: bool) -> Tuple[Dim, ...]:
    """A staged span's slot dims (`kept`) or fold dims: its row dim where it is of that kind, then
    the dims inside the span of that kind, size-1 dims left out, merged."""
    return merge([d for d in ([row] if row_kept == kept else []) + [d for d, k in inside if k == kept] if d.size > 1])


def _direct_rows(stage: Stage, bx: int, acc_itemsize: int, tuning) -> int:
    """Runs a thread folds side by side where it folds whole short runs alone (FoldSharedRows): the
    most, a power of two, that their lengths, their accumulators and the span's runs allow (policy.py).
    A thread whose group of runs passes the span's last folds that one again: at most
    STAGE_DIRECT_REFOLDS of the span's runs may be folded twice."""
    most = min(tuning.STAGE_DIRECT_ROWS, tuning.STAGE_DIRECT_ACC_BYTES // acc_itemsize,
               tuning.STAGE_DIRECT_FOLDS // stage.num_folds)
    ny = pow2_at_most(max(1, most))
    slots = stage.num_slots
    while ny > 1:
        whole, rest = divmod(slots, bx * ny)
        groups = min(slots, bx) * whole + min(rest, bx)  # groups of ny runs the block's threads fold
        if groups * ny <= slots * (1 + tuning.STAGE_DIRECT_REFOLDS):
            break
        ny //= 2
    return ny
