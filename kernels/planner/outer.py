"""ReduceOuter's regime: the innermost dim is kept, so neighbouring outputs share loads: a tile of
`lanes` threads side by side over `vec` columns each, rows of threads down the reduced rows, the
rows split across blocks where the tiles alone cannot fill the GPU (or would leave its last wave
mostly empty)."""
from __future__ import annotations

from typing import NamedTuple

from .budget import Budget
from .dims import aligned, ceil, index_bits, pow2_at_least, pow2_at_most, size_of
from .layout import Layout
from .plans import OuterPlan
from .splits import choose_splits, partial_rows, split_group, wave_fill
from .traits import Traits
from .words import shifts_words


def applies(layout: Layout, traits: Traits, tuning) -> bool:
    return not layout.inner_reduced


def col_threads(cols: int, num_red: int, ny: int, tuning) -> int:
    """ReduceOuter's threads side by side (BX) over `cols` vectors of columns (a power of two):
    MAX_COL_THREADS, wider where the `num_red` reduced rows are too few for every row of threads
    to walk COL_ROW_STEPS steps of `ny` rows, at most one a column and the block. (7 rows under a
    2048-wide kept dim: one row of 256 threads walks all 7, where 8 rows of 32 would leave 25 of 32
    idle.)"""
    block = tuning.BLOCK_THREADS
    few_rows = block // pow2_at_least(ceil(num_red, ny * tuning.COL_ROW_STEPS))
    return min(cols, block, max(tuning.MAX_COL_THREADS, few_rows))


class _Tile(NamedTuple):
    """A thread's tile: `vec` adjacent columns, `ny` rows in flight; 16-byte loads (`vec_in`) and
    vector stores (`vec_out`) where the alignment allows them."""

    vec: int
    ny: int
    vec_in: bool
    vec_out: bool


def _tile(cols: Layout, traits: Traits, budget: Budget, tuning) -> _Tile:
    """A thread's tile over the columns `cols`. Tile rows: no more than the reduced rows need (unused
    rows cost registers, so blocks); a state's columns as many as keep STATE_COL_TILE_BYTES in
    flight; rows off the 16-byte grid (and shifted words) a column per thread,
    MISALIGNED_COL_TILE_ROWS rows (policy.py)."""
    inner, outer, itemsize = cols.kept[-1], cols.kept[:-1], cols.itemsize
    acc_itemsize = 4 if cols.shifted_words else traits.acc_itemsize  # (a word of four results: 4 bytes)
    vec = min(tuning.LOAD_BYTES // itemsize, tuning.MAX_COL_VEC, pow2_at_most(inner.size),
              pow2_at_most(tuning.MAX_COL_SHARED_BYTES // (tuning.BLOCK_THREADS * acc_itemsize)),
              pow2_at_most(tuning.MAX_COL_ACC_BYTES // acc_itemsize))
    rows = max(tuning.MAX_TILE_ROWS, tuning.STATE_COL_TILE_BYTES // (vec * itemsize)) if traits.state else None
    ny = min(budget.tile_rows(vec, tuning, rows), pow2_at_least(cols.num_red))
    # (a size-1 dim's stride is never stepped)
    vec_in = traits.vector_loads and inner.in_stride == 1 and aligned(
        cols.in_base, [d.in_stride for d in outer + cols.red if d.size > 1], itemsize, vec * itemsize)
    if cols.shifted_words or (inner.in_stride == 1 and not vec_in):
        vec, ny, vec_in = 1, tuning.MISALIGNED_COL_TILE_ROWS, False
    # (a store of a power of two bytes: 6 results of 8 bytes, a complex Welford's raw state, store apart)
    store = vec * cols.out_itemsize
    vec_out = (inner.out_stride == 1 and store & (store - 1) == 0
               and aligned(cols.out_align, [d.out_stride for d in outer], cols.out_itemsize, store))
    return _Tile(vec, ny, vec_in, vec_out)


def _block(cols: Layout, traits: Traits, budget: Budget, tuning):
    """(a thread's tile, threads side by side) over the columns `cols`."""
    tile = _tile(cols, traits, budget, tuning)
    return tile, col_threads(pow2_at_least(ceil(cols.kept[-1].size, tile.vec)), cols.num_red, tile.ny, tuning)


def _ragged_lanes(vectors: int, bx: int, tuning) -> int:
    """Threads side by side over every one of `vectors` columns of vectors in one tile, rows of
    threads that need not divide the block (kernels/cuda/outer.cuh), at most a block, where they keep
    OUTER_RAGGED_MIN_GAIN times the share of the block's threads busy that tiles of `bx` keep (33
    columns: 231 of 256 threads in rows of 33, against 33 of 64 in two tiles of 32; 9 columns: 252 in
    rows of 9, against 144 in rows of 16); 0 where tiles of `bx` stay."""
    block = tuning.BLOCK_THREADS
    if vectors > block:
        return 0
    busy = {lanes: vectors / (ceil(vectors, lanes) * lanes) * (block // lanes) * lanes / block for lanes in (bx, vectors)}
    return vectors if busy[vectors] >= tuning.OUTER_RAGGED_MIN_GAIN * busy[bx] else 0


def busy_share(layout: Layout, traits: Traits, budget: Budget, tuning) -> float:
    """The share of a block's threads that have columns and rows to fold: under 1 where the columns
    leave threads of the last tile without one, or the reduced rows are fewer than one step of the
    tile takes (3 rows under 256 float32 columns of a state: 2 rows of 128 threads, 4 rows a thread:
    one row of threads idle, 0.5; 65 complex64 columns: 128 threads wide, 0.51 of them busy)."""
    cols = layout.as_shifted_words() if shifts_words(layout, traits, tuning) else layout
    tile, bx = _block(cols, traits, budget, tuning)
    by, inner = tuning.BLOCK_THREADS // bx, cols.kept[-1].size
    return inner / (ceil(inner, bx * tile.vec) * bx * tile.vec) * min(by, ceil(cols.num_red, tile.ny)) / by


def _row_splits(num_tiles: int, step: int, num_red: int, resident: int, split_target: int, tuning):
    """(rows per split, splits) of the reduced rows: where the tiles are fewer than `split_target`,
    or outnumber the `resident` blocks but would leave the last wave mostly empty (MIN_WAVE_FILL)."""
    few_waves = resident < num_tiles and wave_fill(num_tiles, resident) < tuning.MIN_WAVE_FILL
    if not ((num_tiles < split_target or few_waves) and num_tiles <= tuning.MAX_GRID_X):
        return num_red, 1
    max_splits = min(max(1, num_red // (tuning.MIN_SPLIT_STEPS * step)), tuning.MAX_GRID_Y)

    def rows_for(want):
        return ceil(ceil(num_red, want), step) * step

    num_splits = choose_splits(num_tiles, resident if few_waves else split_target, max_splits,
                               lambda w: ceil(num_red, rows_for(w)), tuning.SPLIT_FILL_SLACK)
    rows_per_split = rows_for(num_splits)
    num_splits = ceil(num_red, rows_per_split)
    return (num_red if num_splits == 1 else rows_per_split), num_splits


class _Grid(NamedTuple):
    """Tiles of `lanes` threads side by side over the columns, and the reduced rows' splits, each a
    block's `steps` steps of its tile."""

    lanes: int
    col_tiles: int
    num_tiles: int
    rows_per_split: int
    num_splits: int
    steps: int


def _grid(cols: Layout, lanes: int, tile: _Tile, split_target: int, resident: int, tuning) -> _Grid:
    col_tiles = ceil(cols.kept[-1].size, lanes * tile.vec)
    num_tiles = size_of(cols.kept[:-1]) * col_tiles
    step = tuning.BLOCK_THREADS // lanes * tile.ny
    rows_per_split, num_splits = _row_splits(num_tiles, step, cols.num_red, resident, split_target, tuning)
    return _Grid(lanes, col_tiles, num_tiles, rows_per_split, num_splits, rows_per_split // step)


def _prefetches(cols: Layout, traits: Traits, grid: _Grid, tile: _Tile, ny: int, resident: int, tuning) -> bool:
    """Whether ReduceOuter loads each block's next tile while it folds this one (the kernel's
    Prefetch). For a state (its fold is long; not an indexed one, whose tile of indices would double
    too), unsplit, where one row of threads holds a tile and its reduced rows are one step of the
    thread's `ny` rows (no rows of threads to meet in shared memory a tile: where they would, the
    walk is unmeasured), the tile's loads under OUTER_PREFETCH_MAX_TILE_BYTES (a bigger tile keeps a
    block's loads in flight alone), and at least OUTER_PREFETCH_MIN_TILES tiles for each of the
    `resident` blocks, the grid. A map (OneRow) and shifted words keep their own walks."""
    num_red = cols.num_red
    tile_bytes = min(grid.lanes * tile.vec, cols.kept[-1].size) * num_red * cols.itemsize
    one_row_of_threads = tuning.BLOCK_THREADS // grid.lanes == 1
    return (traits.state and not cols.indexed and grid.num_splits == 1 and one_row_of_threads and 1 < num_red <= ny
            and not cols.shifted_words and tile_bytes < tuning.OUTER_PREFETCH_MAX_TILE_BYTES
            and grid.num_tiles >= tuning.OUTER_PREFETCH_MIN_TILES * resident)


def _stacked(cols: Layout, traits: Traits, budget: Budget, tuning):
    """ReduceOuter's stacked walk over the columns `cols` (the kernel's Stacked), as (a thread's tile,
    the grid), or None where it does not apply. Each row of threads folds tiles of its own, every
    reduced row of a tile in one thread's (2 rows or more, within the budget's tile elements), where
    a block holds several rows of threads (ragged ones over every column where they keep more
    threads busy, `_ragged_lanes`: no rows of threads down the reduced rows to combine, so no
    splits' steps to weigh), over any number of tiles. Shared rows would leave most of those threads
    idle: 2 rows under 128 float32 columns gave 2 of 8 rows of threads one. Columns off the 16-byte
    grid, a load an element, only of OUTER_STACK_ELEMENT_MIN_BYTES or a state's (a warp's loads of
    narrower ones are under a 128-byte line each: over many rows they lost to ReduceStaged), and not
    1-byte word columns, which ReduceStaged folds from 16-byte loads (2 rows of 12 bytes: 1.16x)."""
    num_red = cols.num_red
    if cols.shifted_words or num_red < 2:
        return None
    tile, bx = _block(cols, traits, budget, tuning)
    if budget.tile_rows(tile.vec, tuning, num_red) < num_red:
        return None
    narrow = cols.itemsize < tuning.OUTER_STACK_ELEMENT_MIN_BYTES or cols.word_columns
    if not tile.vec_in and narrow and not traits.state:
        return None
    lanes = _ragged_lanes(ceil(cols.kept[-1].size, tile.vec), bx, tuning) or bx
    if tuning.BLOCK_THREADS // lanes < 2:
        return None
    col_tiles = ceil(cols.kept[-1].size, lanes * tile.vec)
    num_tiles = size_of(cols.kept[:-1]) * col_tiles
    return tile._replace(ny=num_red), _Grid(lanes, col_tiles, num_tiles, num_red, 1, 1)


def stacks(layout: Layout, traits: Traits, tuning) -> bool:
    """Whether ReduceOuter takes the layout's kept columns in its stacked walk (`_stacked`)."""
    return not shifts_words(layout, traits, tuning) and _stacked(layout, traits, Budget(), tuning) is not None


def _shared(cols: Layout, traits: Traits, budget: Budget, sm_count: int, heavy: bool, resident: int, tuning):
    """(a thread's tile, the grid) of tiles whose rows of threads share the reduced rows: tiles of a
    power of two of threads side by side, or ragged rows of them (`_ragged_lanes`) where each block
    still walks OUTER_RAGGED_MIN_STEPS steps (their one tile of columns needs more splits than tiles
    of a power of two, and a split of a step or two costs more than the idle threads it saves); a
    heavy state's splits fill waves of HEAVY_COL_MIN_BLOCKS blocks an SM."""
    tile, bx = _block(cols, traits, budget, tuning)
    split_target = budget.split_target(sm_count, tuning)
    if heavy:
        split_target = sm_count * max(budget.blocks_per_sm, tuning.HEAVY_COL_MIN_BLOCKS)
    grid = _grid(cols, bx, tile, split_target, resident, tuning)
    ragged = _ragged_lanes(ceil(cols.kept[-1].size, tile.vec), bx, tuning)
    if ragged:
        wide = _grid(cols, ragged, tile, split_target, resident, tuning)
        if wide.steps >= tuning.OUTER_RAGGED_MIN_STEPS:
            grid = wide
    return tile, grid


def plan(layout: Layout, traits: Traits, budget: Budget, sm_count: int, tuning) -> OuterPlan:
    """ReduceOuter's launch: the stacked walk where a thread's tile holds a tile's rows (`_stacked`),
    else tiles whose rows of threads share them (`_shared`). A heavy state keeps HEAVY_COL_MIN_BLOCKS
    blocks resident (while the budget bounds it), and its splits fill whole waves of them: its
    resident blocks hide the combine's work. Any other plan takes the budget's bound, if any
    (`raised_bounds`)."""
    cols = layout.as_shifted_words() if shifts_words(layout, traits, tuning) else layout
    inner, outer, num_red = cols.kept[-1], cols.kept[:-1], cols.num_red
    min_blocks = budget.min_blocks_or(tuning.HEAVY_COL_MIN_BLOCKS if traits.heavy else 0)
    heavy = traits.heavy and min_blocks > 0
    resident = budget.resident(sm_count, tuning)
    stack = _stacked(cols, traits, budget, tuning)
    tile, grid = stack if stack is not None else _shared(cols, traits, budget, sm_count, heavy, resident, tuning)
    vec, ny, block = tile.vec, tile.ny, tuning.BLOCK_THREADS
    per_round = block // grid.lanes * partial_rows(traits, ny, vec)  # rows of partials a combine round loads
    one_row = num_red == 1 and ny == 1 and not cols.shifted_words
    prefetch = _prefetches(cols, traits, grid, tile, ny, resident, tuning)  # (one row of threads: never stacked)
    blocks = grid.num_tiles if stack is None else ceil(grid.num_tiles, block // grid.lanes)  # (stacked: rows of tiles)
    group = split_group(grid.num_splits, per_round, min(grid.num_tiles, tuning.MAX_GRID_X), tuning)
    return OuterPlan(
        reduce_type=layout.reduce_type, kept=outer, red=cols.red, inner=inner,
        index_bits=index_bits(layout.extent, layout.out_extent, cols.num_out, num_red, grid.num_splits * cols.num_out),
        vec=vec, ny=ny, lanes=grid.lanes, grid=(min(resident if prefetch else blocks, tuning.MAX_GRID_X),
                                                grid.num_splits),
        num_splits=grid.num_splits, rows_per_split=grid.rows_per_split, col_tiles=grid.col_tiles,
        num_tiles=grid.num_tiles, vec_in=tile.vec_in, vec_out=tile.vec_out, words=False,
        word_columns=cols.word_columns, shifted_words=cols.shifted_words,
        min_blocks=min_blocks, split_group=group,
        one_row=one_row, prefetch=prefetch, stacked=stack is not None,
        in_offset=cols.in_offset, num_out=cols.num_out, num_red=num_red, block=block, index_offset=cols.index_offset,
    )
