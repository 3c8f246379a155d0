"""ReduceInner's regime: the innermost dim is reduced, so each output's runs are walked with vector
loads by a group of lanes (a few, a warp, or the whole block), split across blocks only where the
outputs alone cannot keep the GPU's memory busy."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from .budget import Budget
from .dims import aligned, ceil, index_bits, pow2_at_least, pow2_at_most, size_of
from .layout import Layout
from .plans import InnerPlan
from .splits import choose_splits
from .traits import Traits


def applies(layout: Layout, traits: Traits, tuning) -> bool:
    return layout.inner_reduced


def short_rows(layout: Layout, traits: Traits, budget: Budget, sm_count: int, tuning) -> int:
    """Outputs a thread folds side by side (the kernel's ROWS) where every output is one short row of
    whole 16-byte vectors on the grid: 1 to 4 of them (a lane's tile, MAX_TILE_ROWS), of one input
    or several on the grid, no segments, elements of 2 bytes or more (1-byte rows fold 16 a thread,
    staged). As many rows as keep SHORT_ROW_VECTORS loads in flight and their accumulators within
    SHORT_ROW_ACC_BYTES (a state's fewer), while the grid keeps a wave of blocks (mid-sized inputs
    take fewer); else 1. A lane on one such row alone holds 16-64 bytes in flight, too few to
    keep the memory busy (policy.py)."""
    if not layout.inner_reduced or len(layout.red) != 1 or not traits.vector_loads:
        return 1
    inner, itemsize = layout.red[-1], layout.itemsize
    row_bytes = inner.size * itemsize
    vectors = row_bytes // tuning.LOAD_BYTES
    if (traits.inputs_off_grid or itemsize < 2 or layout.words or inner.in_stride != 1 or inner.size == 1
            or row_bytes % tuning.LOAD_BYTES or vectors > tuning.MAX_TILE_ROWS
            or not aligned(layout.in_base, [d.in_stride for d in layout.kept], itemsize, tuning.LOAD_BYTES)):
        return 1
    waves = ceil(layout.num_out, tuning.BLOCK_THREADS) // budget.resident(sm_count, tuning)
    most = min(tuning.SHORT_ROW_VECTORS // vectors, tuning.SHORT_ROW_ACC_BYTES // traits.acc_itemsize, waves)
    return pow2_at_most(max(1, most))


@dataclass(frozen=True)
class _Rows:
    """What the choices of a ReduceInner plan read: the layout, traits and budget, and the walk of
    one output (`vec` elements a load, `vectors` loads a run, `num_seg` runs)."""

    layout: Layout
    traits: Traits
    budget: Budget
    tuning: object
    sm_count: int
    vec: int

    @property
    def inner(self):
        return self.layout.red[-1]

    @property
    def num_seg(self) -> int:
        return size_of(self.layout.red[:-1])

    @property
    def vectors(self) -> int:
        return ceil(self.inner.size, self.vec)

    def fills_block_steps(self, step: int) -> bool:
        """Whether a run fills the steps of a whole block (`step` vectors each) closely enough to
        take one: the share of its steps' loads that its last, partial step leaves idle is at most
        BLOCK_ROW_IDLE_PER_BLOCK for every block resident on an SM (the compiled kernel's; not
        compiled yet, INNER_MIN_BLOCKS)."""
        t = self.tuning
        idle = 1 - self.vectors / (ceil(self.vectors, step) * step)
        return idle <= (self.budget.blocks_per_sm or t.INNER_MIN_BLOCKS) * t.BLOCK_ROW_IDLE_PER_BLOCK

    def lanes(self, walk: int, ny: int, steps: int) -> int:
        """Lanes enough for each to walk `steps` steps of `ny` vectors, two at least for a walk of
        LANE_PAIR_MIN_VECTORS or more, a warp at most."""
        t = self.tuning
        lanes = min(t.WARP_SIZE, pow2_at_least(ceil(walk, ny * steps)))
        return 2 if lanes == 1 and walk >= t.LANE_PAIR_MIN_VECTORS else lanes

    def block_row_steps(self, few: bool) -> int:
        """Block steps a run needs for a block an output: more for a state, or for an 8-byte
        accumulator where warps an output fill the GPU (not `few`), whose combine at the block's end
        costs more than a step of a 4-byte one's (policy.py)."""
        t = self.tuning
        if self.traits.state:
            return t.STATE_BLOCK_ROW_STEPS
        return t.WIDE_ACC_BLOCK_ROW_STEPS if self.traits.acc_itemsize > 4 and not few else 1

    def split_target(self) -> int:
        """The grid splits fill up to (INNER_SPLIT_BLOCKS_PER_SM a SM, at most the resident)."""
        return self.budget.split_target(self.sm_count, self.tuning, self.tuning.INNER_SPLIT_BLOCKS_PER_SM)

    def group(self, walk: int, ny: int) -> Tuple[int, int]:
        """(lanes, row blocks) for an output group walking `walk` vectors per pass: lanes enough for a
        step each, a state's for STATE_LANE_STEPS steps each (each lane more is a round of state
        merges) where its outputs still fill the GPU's blocks without splits. A block per output
        when its run fills `block_row_steps` steps of the whole block closely enough, or where warps
        per output would leave the GPU short of blocks and it fills one step (a state's: its
        `block_row_steps`) (policy.py)."""
        t, block = self.tuning, self.tuning.BLOCK_THREADS
        lanes = self.lanes(walk, ny, t.STATE_LANE_STEPS if self.traits.state else 1)
        if self.traits.state and ceil(self.layout.num_out, block // lanes) < self.split_target():
            lanes = self.lanes(walk, ny, 1)  # outputs too few to fill the GPU: lanes share rows, not splits
        row_blocks = ceil(self.layout.num_out, block // lanes)
        few = row_blocks < self.budget.resident(self.sm_count, t)  # warps an output leave the GPU short
        block_walk = block * ny * self.block_row_steps(few)
        if (lanes == t.WARP_SIZE and self.vectors * self.num_seg >= block_walk
                and (self.vectors >= block_walk and self.fills_block_steps(block * ny) or few)):
            lanes, row_blocks = block, self.layout.num_out
        return lanes, row_blocks

    def splits(self, lanes: int, ny: int, row_blocks: int, flat: bool, split_target: int) -> dict:
        """The split of each output's runs across blocks: whole segments per block, or chunks of a
        run (never for flat runs, which split by whole runs only)."""
        t, inner, num_seg = self.tuning, self.inner, self.num_seg
        step = lanes * ny * self.vec  # elements one step of the group covers
        steps_per_seg = ceil(inner.size, step)
        steps = ceil(self.vectors * num_seg, lanes * ny) if flat else steps_per_seg * num_seg
        whole = dict(num_splits=1, segs_per_split=1, chunks=1, chunk_len=inner.size)
        if not (row_blocks < split_target and row_blocks <= t.MAX_GRID_X and steps >= t.INNER_SPLIT_MIN_STEPS):
            return whole
        chunk_max = 1 if flat else max(1, steps_per_seg // t.MIN_SPLIT_STEPS)

        def realize(want):  # -> (splits, segments per split, chunks, chunk length)
            if want <= num_seg or chunk_max == 1:
                per = ceil(num_seg, want)
                return ceil(num_seg, per), per, 1, inner.size
            chunk_len = ceil(ceil(inner.size, min(want // num_seg, chunk_max)), step) * step
            chunks = ceil(inner.size, chunk_len)
            return num_seg * chunks, 1, chunks, chunk_len

        max_splits = min(num_seg * chunk_max, t.MAX_GRID_Y)
        num_splits = choose_splits(row_blocks, split_target, max_splits, lambda w: realize(w)[0], t.SPLIT_FILL_SLACK)
        if num_splits == 1:
            return whole
        _, per, chunks, chunk_len = realize(num_splits)
        return dict(num_splits=num_splits, segs_per_split=per, chunks=chunks, chunk_len=chunk_len)


def _walks_elements(rows: _Rows, lanes: int, ny: int) -> bool:
    """Whether contiguous runs that are not whole vectors on the grid are walked flat an element a
    load: where the run-by-run walk (`lanes` x `ny` vectors a step) leaves more than all but one in
    `vec` of its loads idle, so element loads by every lane move more bytes. (A few outputs over
    runs of 129 complex64: a block an output, 65 of its 256 lanes busy.)"""
    return rows.vec > 1 and not rows.layout.words and rows.vectors * rows.vec < lanes * ny


def _whole_shares(rows: _Rows, lanes: int, ny: int, row_blocks: int) -> Tuple[int, int, int]:
    """(lanes, ny, row blocks) where a scalar's lanes would hold few loads of their run: a run that one
    step covers with fewer than LANE_MIN_LOADS loads a lane (rows of 33 vectors: 16 lanes of 4, two or
    three loads each) takes half the lanes, each holding its share whole; a warp's run of a few steps
    (rows of 130 vectors: a step of 128 and one of 2) takes one step of its share where its last
    step is under half full. At most LANE_MAX_LOADS loads either way, and runs of whole vectors on
    the grid only (runs off it fold a vector fewer than counted: 257 float64 are a head and 128
    vectors, one step). A lane's loads in flight are what keeps the memory busy; a state's and
    several inputs' tiles keep their registers."""
    t, vectors = rows.tuning, rows.vectors
    if rows.traits.state or lanes == 1 or not _tiles_its_share(rows, lanes):
        return lanes, ny, row_blocks
    if vectors > lanes * ny:  # a warp's steps
        share, step = ceil(vectors, lanes), lanes * ny
        if share <= rows.budget.tile_rows(rows.vec, t, t.LANE_MAX_LOADS) and 0 < vectors % step < step / 2:
            return lanes, share, row_blocks
        return lanes, ny, row_blocks
    half = lanes // 2
    share = ceil(vectors, half)
    wide = t.SHARE_MAX_ELEMENTS if rows.layout.itemsize > 1 else 0  # (1-byte inputs: MAX_TILE_ELEMENTS)
    if vectors >= t.LANE_MIN_LOADS * lanes or share > rows.budget.tile_rows(rows.vec, t, t.LANE_MAX_LOADS, wide):
        return lanes, ny, row_blocks
    return half, share, ceil(rows.layout.num_out, t.BLOCK_THREADS // half)


def _whole_steps(rows: _Rows, lanes: int, ny: int) -> int:
    """A state's tile rows where its lane's share of a run is not whole steps of `ny` (rows of 9
    vectors, one lane: 4, 4 and 1): the first of STATE_STEP_TILES that divides the share without adding
    a step (three of 3; rows of 10 vectors, two lanes: one of 5), else `ny`. A state's last, partial
    step costs about a whole one (every merge of it guarded), where a scalar's lanes rather hold their
    share in one step (`_whole_shares`). Runs of whole vectors on the grid that a warp or fewer walks."""
    t = rows.tuning
    if not rows.traits.state or not _tiles_its_share(rows, lanes):
        return ny
    share, rest = divmod(rows.vectors, lanes)
    if rest or share <= ny or share % ny == 0:
        return ny
    steps = ceil(share, ny)
    for tile in t.STATE_STEP_TILES:
        if share % tile == 0 and share // tile <= steps and rows.budget.tile_rows(rows.vec, t, tile) == tile:
            return tile
    return ny


def _tiles_its_share(rows: _Rows, lanes: int) -> bool:
    """Whether a lane's tile may be sized to its share of a run (`_whole_shares`, `_whole_steps`): one
    input, a warp's lanes or fewer, runs of whole vectors on the grid (runs off it fold a vector fewer
    than counted; several inputs and a block's lanes keep their tiles)."""
    return rows.traits.inputs == 1 and lanes <= rows.tuning.WARP_SIZE and _whole_vectors(rows)


def _whole_vectors(rows: _Rows) -> bool:
    """Whether every run is whole vectors on the 16-byte grid (its start, its length, every stride)."""
    layout, t = rows.layout, rows.tuning
    return rows.vec * layout.itemsize == t.LOAD_BYTES and rows.inner.size % rows.vec == 0 and aligned(
        layout.in_base, [d.in_stride for d in layout.kept + layout.red[:-1]], layout.itemsize, t.LOAD_BYTES)


def plan(layout: Layout, traits: Traits, budget: Budget, sm_count: int, tuning) -> InnerPlan:
    """ReduceInner's launch. Short aligned runs are walked as one flat sequence of vectors (see
    FLAT_RUN_MAX_STEPS; a 16-byte element is a vector, so its runs of any length), and runs off the
    grid that a run-by-run walk leaves mostly idle as one of elements (`_walks_elements`); groups of
    a warp or more share the chunks of inputs off the first one's grid between lanes, holding every
    input's loads of a tile at once: fewer rows a tile, more blocks."""
    inner, segs = layout.red[-1], layout.red[:-1]
    vec = tuning.LOAD_BYTES // layout.itemsize if traits.vector_loads and inner.in_stride == 1 and inner.size > 1 else 1
    rows = _Rows(layout, traits, budget, tuning, sm_count, vec)
    ny = budget.tile_rows(vec, tuning)
    runs = inner.in_stride == 1 and rows.num_seg > 1  # contiguous runs, several an output
    flat = runs and _whole_vectors(rows)
    lanes, row_blocks = rows.group(rows.vectors * rows.num_seg if flat else rows.vectors, ny)
    if flat and rows.vectors >= tuning.FLAT_RUN_MAX_STEPS * lanes * ny:
        flat = False
        lanes, row_blocks = rows.group(rows.vectors, ny)
    if runs and not flat and _walks_elements(rows, lanes, ny):
        vec, ny, flat = 1, budget.tile_rows(1, tuning), True
        rows = _Rows(layout, traits, budget, tuning, sm_count, 1)
        lanes, row_blocks = rows.group(rows.vectors * rows.num_seg, ny)
    if not flat:  # rows of fewer vectors than a step: no more rows in flight than a lane has (registers)
        ny = min(ny, pow2_at_least(ceil(rows.vectors, lanes)))
    shared_lanes, split_target = False, rows.split_target()
    if traits.inputs_off_grid and vec > 1 and not flat:
        shared_ny = min(ny, tuning.INPUTS_TILE_ROWS)
        shared = rows.group(rows.vectors, shared_ny)
        if shared[0] >= tuning.WARP_SIZE:
            shared_lanes, ny, (lanes, row_blocks) = True, shared_ny, shared
            split_target = budget.split_target(sm_count, tuning, tuning.INPUTS_SPLIT_BLOCKS_PER_SM)
    if not (flat or shared_lanes):
        lanes, ny, row_blocks = _whole_shares(rows, lanes, ny, row_blocks)
        ny = _whole_steps(rows, lanes, ny)
    split = rows.splits(lanes, ny, row_blocks, flat, split_target)
    num_out, num_splits = layout.num_out, split["num_splits"]
    whole_rows = lanes == 1 and ny == pow2_at_least(rows.vectors) and num_splits == 1  # a lane's tile holds its row
    side = short_rows(layout, traits, budget, sm_count, tuning) if whole_rows else 1
    ny = rows.vectors if side > 1 else ny  # (rows of 3 vectors side by side: a tile of 3)
    row_blocks = ceil(row_blocks, side)
    return InnerPlan(
        reduce_type=layout.reduce_type, kept=layout.kept, red=segs, inner=inner,
        index_bits=index_bits(layout.extent, layout.out_extent, num_out, layout.num_red, num_splits * num_out),
        vec=vec, ny=ny, lanes=lanes, grid=(min(row_blocks, tuning.MAX_GRID_X), num_splits),
        flat_runs=flat, words=layout.words, word_columns=layout.word_columns, shared_lanes=shared_lanes,
        input_shift=traits.inputs_shift if shared_lanes else 0,
        min_blocks=budget.min_blocks_or(tuning.INNER_MIN_BLOCKS if traits.state else 0),
        in_offset=layout.in_offset, num_out=num_out, num_red=layout.num_red, block=tuning.BLOCK_THREADS,
        index_offset=layout.index_offset, rows=side, **split,
    )
