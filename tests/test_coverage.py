"""Coverage: replay planned launches in Python and prove every input element is read exactly once
and every output element written exactly once: tail blocks, splits, odd alignments included. With
index strides (arg-reductions), every element is also lifted with its index in the reduced range."""
from __future__ import annotations

import itertools
import math
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, strategies as st

from kernels import config, policy
from replay import Replay

#: Small tuning numbers so that small shapes reach splits, grid-stride loops and tail tiles.
SMALL = SimpleNamespace(BLOCK_THREADS=64, MAX_COL_SHARED_BYTES=8192, BLOCKS_PER_SM=8, LOAD_BYTES=16, MAX_TILE_ROWS=4, INPUTS_TILE_ROWS=2, INPUTS_SPLIT_BLOCKS_PER_SM=8, SHORT_ROW_VECTORS=4, SHORT_ROW_ACC_BYTES=64, MAX_TILE_ELEMENTS=32, SHARE_MAX_ELEMENTS=48,
                        MIN_SPLIT_STEPS=1, INNER_SPLIT_MIN_STEPS=1, MAX_GRID_X=5, MAX_GRID_Y=65535, WARP_SIZE=32,
                        MAX_COL_THREADS=64, FLAT_RUN_MAX_STEPS=2, SPLIT_BLOCKS_PER_SM=8, INNER_SPLIT_BLOCKS_PER_SM=8, OUTER_RAGGED_MIN_GAIN=1.5, OUTER_RAGGED_MIN_STEPS=4, MAX_COL_VEC=16,
                        MISALIGNED_COL_TILE_ROWS=3, STAGE_VECTORS=1, STAGE_VECTORS_DIRECT=2, STAGE_MAX_SLOTS=2, STAGE_MAX_STATE_SLOTS=2,
                        STAGE_MAX_RUN_BYTES=2048, STAGE_WORD_MAX_RUN_BYTES=4096, STAGE_WORD_MIN_RUN_BYTES=4, STAGE_MAX_COLUMN_BYTES=512, STAGE_MAX_WIDE_COLUMN_BYTES=256, STAGE_ALIGNED_RUN_BYTES=4096, STAGE_FEW_ROW_COLUMN_BYTES=256, STAGE_FEW_ROW_NARROW_COLUMN_BYTES=128,
                        STAGE_COMBINE_TRIPS=64, STAGE_MAX_COMBINE_TRIPS=64, STAGE_MAX_COMBINE_TRIPS_1_BYTE=64, STAGE_MIN_BLOCKS_PER_SM=2,
                        STAGE_MIN_SPAN_VECTORS_PER_THREAD=0, STAGE_MIN_WHOLE_SPAN_VECTORS_PER_THREAD=0, INNER_MIN_BLOCKS=4, BLOCK_ROW_IDLE_PER_BLOCK=1 / 16, INNER_SPILL_MIN_BLOCKS=3, HEAVY_COL_MIN_BLOCKS=4, RAISED_MIN_BLOCKS=4, STATE_BLOCK_ROW_STEPS=2, STATE_LANE_STEPS=2, LANE_PAIR_MIN_VECTORS=5, STATE_STEP_TILES=(4, 5, 3), LANE_MIN_LOADS=3, LANE_MAX_LOADS=6, COL_ROW_STEPS=4, STATE_COL_TILE_BYTES=64,
                        MAX_COL_ACC_BYTES=64, MIN_WAVE_FILL=0.8, SPLIT_FILL_SLACK=0.05, STAGE_ROW_BANK_WAYS=2, STAGE_DIRECT_RUN_FILL=2, STAGE_RUN_LANE_ELEMENTS=4,
                        STAGE_DIRECT_ROWS=4, STAGE_DIRECT_FOLDS=16, STAGE_DIRECT_ACC_BYTES=32, STAGE_DIRECT_REFOLDS=0.5, STAGE_MAX_ACC_BYTES=32, STAGE_MAX_DIRECT_ACC_BYTES=64, STAGE_WIDE_MAX_RUN_BYTES=1024,
                        STAGE_WIDE_STATE_SLOTS=1, STAGE_WIDE_COLUMN_VECTORS=1, STAGE_STATE_OUTER_BUSY=0.5, STAGE_WIDE_OUTER_BUSY=1 / 3,
                        STAGE_WORD_COLUMN_RESIDUES=2, STAGE_BYTE_ROWS_MAX=16, STAGE_BYTE_ROWS_MAX_BANK_WAYS=4,
                        SHIFTED_WORD_COLUMNS_MIN=64, SPLIT_ONE_LEVEL_ROUNDS=1, SPLIT_COUNTERS=65536,
                        OUTER_PREFETCH_MIN_TILES=2, OUTER_PREFETCH_MAX_TILE_BYTES=4096, OUTER_STACK_ELEMENT_MIN_BYTES=4)


def tiered(values, fast):
    """`values` as parameters, those not in `fast` in the exhaustive tier only (tests/conftest.py)."""
    return [v if v in fast else pytest.param(v, marks=pytest.mark.exhaustive) for v in values]


def _offsets(shape, strides):
    return Counter(sum(i * s for i, s in zip(idx, strides)) for idx in itertools.product(*map(range, shape)))


def _positions(shape, strides, axes):
    """input offset -> the element's index in the C-order flattening of the reduced axes"""
    red_shape = [shape[a] for a in axes]
    return {sum(i * s for i, s in zip(idx, strides)):
            int(np.ravel_multi_index([idx[a] for a in axes], red_shape)) if axes else 0
            for idx in itertools.product(*map(range, shape))}


def check_coverage(view: np.ndarray, axes, out_order, sm_count: int, misalign_items: int, tuning=policy,
                   indexed: bool = False, vector_loads: bool = True, inputs: int = 1, inputs_off_grid: bool = False,
                   state: bool = False, acc_itemsize: int = 0, heavy: bool = False, tile_elements: int = 0):
    itemsize = view.itemsize
    strides = [s // itemsize for s in view.strides]
    kept_shape = [n for i, n in enumerate(view.shape) if i not in axes]
    # the output: C-contiguous over the kept dims in `out_order`, seen back in logical order
    out = np.empty([kept_shape[k] for k in out_order], dtype=np.uint8).transpose(np.argsort(out_order))
    out_strides = list(out.strides)
    cfg = config.plan(view.shape, strides, axes, out_strides, itemsize, 1, sm_count,
                      in_misalign=(misalign_items * itemsize) % 16, out_align=16, tuning=tuning,
                      indexed=indexed, vector_loads=vector_loads, inputs=inputs, inputs_off_grid=inputs_off_grid,
                      acc_itemsize=acc_itemsize or (16 if state else 4), state=state,
                      heavy=heavy, tile_elements=tile_elements)
    assert 1 <= cfg.grid[0] <= tuning.MAX_GRID_X and 1 <= cfg.grid[1] <= tuning.MAX_GRID_Y
    replay = Replay(cfg, itemsize, (misalign_items * itemsize) % 16).run()
    assert replay.reads == _offsets(view.shape, strides), cfg
    assert replay.writes == _offsets(out.shape, out_strides), cfg
    if indexed:
        assert replay.positions == _positions(view.shape, strides, axes), cfg
    return cfg


@st.composite
def views(draw):
    ndim = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 13), min_size=ndim, max_size=ndim))
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    base = np.empty([n * 2 for n in shape], dtype=f"u{itemsize}")
    index = tuple(
        slice(None, None, draw(st.sampled_from([1, 2, -1, -2]))) if draw(st.booleans()) else slice(0, n)
        for n in shape
    )
    view = base[index]
    view = view[tuple(slice(0, n) for n in shape)]
    view = view.transpose(draw(st.permutations(range(ndim))))
    return view


@given(view=views(), data=st.data())
def test_every_element_read_once_written_once(view, data):
    if view.size > 2500:
        view = view[tuple(slice(0, 5) for _ in view.shape)]
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, view.ndim - 1)), label="axes")))
    kept = view.ndim - len(axes)
    out_order = data.draw(st.permutations(range(kept)), label="out_order")
    check_coverage(view, axes, out_order, data.draw(st.sampled_from([1, 2, 132])), data.draw(st.integers(0, 15)),
                   data.draw(st.sampled_from([policy, SMALL])))


@given(view=views(), data=st.data())
def test_every_element_lifted_with_its_index(view, data):
    """Arg-reductions (a 16-byte state, heavy: bounded columns, their splits in waves, tiles the
    launcher halves): transposed, flipped and stepped views, every kernel, split or not."""
    if view.size > 2500:
        view = view[tuple(slice(0, 5) for _ in view.shape)]
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, view.ndim - 1)), label="axes")))
    out_order = list(range(view.ndim - len(axes)))
    check_coverage(view, axes, out_order, data.draw(st.sampled_from([1, 2, 132])), data.draw(st.integers(0, 15)),
                   data.draw(st.sampled_from([policy, SMALL])), indexed=True, state=True,
                   heavy=data.draw(st.booleans()), tile_elements=data.draw(st.sampled_from([0, 8, 4, 1])))


@given(view=views(), data=st.data())
def test_plans_of_several_inputs_read_every_element_once(view, data):
    """Transforms of several inputs: never staged; element by element where the inputs do not
    share an alignment (no vector loads, words or flat runs), 16-byte loads where they do."""
    if view.size > 2500:
        view = view[tuple(slice(0, 5) for _ in view.shape)]
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, view.ndim - 1)), label="axes")))
    vectors = data.draw(st.booleans(), label="vector_loads")
    cfg = check_coverage(view, axes, list(range(view.ndim - len(axes))), data.draw(st.sampled_from([1, 2, 132])),
                         data.draw(st.integers(0, 15)), data.draw(st.sampled_from([policy, SMALL])),
                         vector_loads=vectors, inputs=2, inputs_off_grid=data.draw(st.booleans(), label="off_grid"))
    assert cfg.kernel != "staged"
    if not vectors:
        assert not cfg.words and (cfg.vec == 1 if cfg.kernel == "inner" else not cfg.vec_in)
        assert not (cfg.kernel == "inner" and cfg.flat_runs)


# Hand-picked cases for each regime: short rows, long rows split per chunk, split by segments,
# narrow and wide columns, split columns, strided rows, several reduced dims.
CASES = [
    ((37, 64), (1,), 4), ((3, 5000), (1,), 4), ((4, 9, 700), (0, 2), 4), ((5000,), (0,), 4),
    ((999, 3), (0,), 4), ((300, 130), (0,), 4), ((2, 700, 33), (1,), 2), ((7, 8, 9, 10), (1, 3), 1),
    ((7, 8, 9, 10), (0, 2), 8), ((65, 67), (0, 1), 1), ((1500, 4), (1,), 4),
]


@pytest.mark.parametrize("shape,axes,itemsize", CASES)
@pytest.mark.parametrize("layout", tiered(["c", "transposed", "stepped"], fast=["c"]))
def test_coverage_cases(shape, axes, itemsize, layout):
    base = np.empty([n * 2 for n in shape], dtype=f"u{itemsize}")
    view = base[tuple(slice(0, n) for n in shape)] if layout == "stepped" else np.empty(shape, f"u{itemsize}")
    if layout == "transposed":
        view = np.empty(shape[::-1], f"u{itemsize}").T
    for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
        for indexed in (False, True):
            cfg = check_coverage(view, axes, list(range(len(shape) - len(axes))), sm_count, 3, tuning, indexed)
            assert cfg.num_out == math.prod(n for i, n in enumerate(shape) if i not in axes)


@pytest.mark.parametrize("shape", tiered([(16, 5000), (64, 3001), (3, 70001), (200, 1030), (2, 9, 4099)],
                                         fast=[(2, 9, 4099)]))
def test_columns_of_few_rows_read_every_element_once(shape):
    """Columns of few reduced rows widen the row of threads (COL_ROW_STEPS): each element still
    read (a state's lifted with its index) once, tails included; a scalar's row as wide as a state's."""
    view = np.empty(shape, "u4")
    for sm_count, tuning in ((132, policy), (1, policy), (132, SMALL), (1, SMALL)):
        for state in (True, False):
            cfg = check_coverage(view, (0,), list(range(len(shape) - 1)), sm_count, 0, tuning, indexed=state,
                                 state=state)
            assert cfg.kernel == "outer"
    for itemsize in (2, 4):  # Welford's 32-byte state: 2 columns a thread, more rows in flight
        cfg = check_coverage(np.empty(shape, f"u{itemsize}"), (0,), list(range(len(shape) - 1)), 132, 0,
                             policy, state=True, acc_itemsize=32)
        if cfg.kernel == "outer" and cfg.vec_in:  # (rows off the 16-byte grid take a column a thread, MISALIGNED_COL_TILE_ROWS rows)
            assert cfg.vec * cfg.ny * itemsize >= min(policy.STATE_COL_TILE_BYTES, cfg.vec * itemsize * shape[0])
    scalar = config.plan((16, 5000), (5000, 1), (0,), (1,), 4, 4, 132)
    state = config.plan((16, 5000), (5000, 1), (0,), (1,), 4, 4, 132, acc_itemsize=16, state=True)
    assert scalar.lanes == state.lanes == policy.BLOCK_THREADS


#: Odd kept columns staged a thread each, in rows of threads that do not divide the block: more than
#: half a warp of them, at most half a block (17 to 32 under SMALL's block of 64), split or not,
#: one or several kept dims, every itemsize, start and tuning.
RAGGED_CASES = [((999, 17), (0,)), ((300, 21), (0,)), ((5, 40, 23), (1,)), ((64, 3, 19), (0,)), ((400, 65), (0,)),
                ((3000, 100), (0,)), ((50, 77), (0,))]


@pytest.mark.parametrize("shape,axes", RAGGED_CASES)
@pytest.mark.parametrize("itemsize", tiered([1, 2, 4], fast=[2]))
def test_ragged_column_lanes_read_every_element_once(shape, axes, itemsize):
    view = np.empty(shape, f"u{itemsize}")
    ragged = set()
    for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
        for misalign in (0, 1, 3):
            cfg = check_coverage(view, axes, list(range(len(shape) - len(axes))), sm_count, misalign, tuning)
            if cfg.kernel == "staged" and cfg.block % cfg.lanes:
                assert not cfg.stage.lanes_adjacent and 16 < cfg.lanes <= cfg.block // 2, cfg
                ragged.add((tuning is SMALL, cfg.num_splits > 1))
    # misaligned starts stage these columns a thread each, under one tuning at least (1-byte columns
    # may take other paths: ReduceOuter where the span would hold too few of them)
    assert ragged or itemsize == 1, shape


#: ReduceOuter's rows of threads narrower than half a warp, one tile of every column vector (a warp's
#: lanes split into rows of 5 or 9: outer._ragged_lanes, kps::BlockReduceY through shared memory alone),
#: split, on one SM: (shape, itemsize, state, acc_itemsize, lanes).
NARROW_RAGGED_CASES = [((3000, 20), 4, False, 8, 5), ((3000, 36), 4, False, 8, 9), ((9001, 36), 4, True, 8, 9),
                       ((9001, 5), 8, True, 64, 5), ((9001, 10), 8, False, 8, 5), ((3000, 20), 4, True, 32, 10)]


@pytest.mark.parametrize("shape,itemsize,state,acc_itemsize,lanes", NARROW_RAGGED_CASES)
def test_narrow_ragged_rows_of_threads_read_every_element_once(shape, itemsize, state, acc_itemsize, lanes):
    view = np.empty(shape, f"u{itemsize}")
    for misalign in (0, 1):
        cfg = check_coverage(view, (0,), [0], 1, misalign, policy, state=state, acc_itemsize=acc_itemsize)
        if misalign == 0:
            assert cfg.kernel == "outer" and cfg.lanes == lanes and cfg.num_splits > 1, cfg


#: Few reduced rows under kept columns over more tiles than a wave of blocks (one SM), walked with the
#: next tile's loads in flight (outer._prefetches, from one tile a block on): float32, complex64 and
#: complex128 states, 8- and 16-byte loads, a row's last tile ragged (1029 of 1032 columns: its last
#: thread's 16-byte vector holds one column), rows off the grid an element a load, kept dims on both
#: sides of the reduced one. (view shape, its slice of the last dim, axes, itemsize, accumulator bytes)
PREFETCH_CASES = [((40, 2, 1030), 1030, (1,), 4, 32), ((40, 3, 1032), 1029, (1,), 4, 32),
                  ((40, 5, 260), 260, (1,), 8, 48), ((40, 3, 130), 130, (1,), 16, 64),
                  ((20, 2, 3, 130), 130, (1,), 8, 48), ((40, 2, 1031), 1031, (1,), 4, 32)]

#: The policy with prefetched tiles from one tile a block on.
PREFETCH_ANY = SimpleNamespace(**{**{k: v for k, v in vars(policy).items() if k.isupper()}, "OUTER_PREFETCH_MIN_TILES": 1})


@pytest.mark.parametrize("shape,width,axes,itemsize,acc_itemsize", PREFETCH_CASES, ids=str)
def test_prefetched_tiles_read_every_element_once(shape, width, axes, itemsize, acc_itemsize):
    view = np.empty(shape, f"u{itemsize}" if itemsize <= 8 else "c16")[..., :width]
    kept = [i for i in range(len(shape)) if i not in axes]
    cfg = check_coverage(view, axes, list(range(len(kept))), 1, 0, PREFETCH_ANY, state=True, acc_itemsize=acc_itemsize)
    assert cfg.kernel == "outer" and cfg.prefetch and cfg.grid[0] < cfg.num_tiles, cfg
    # an indexed state's tile of indices would double too: it walks a tile a block
    assert not check_coverage(view, axes, list(range(len(kept))), 1, 0, PREFETCH_ANY, state=True,
                              acc_itemsize=acc_itemsize, indexed=True).prefetch


#: Few reduced rows under narrow kept columns, each row of threads a tile of its own (outer._stacked):
#: 16-byte vectors, ragged rows of threads (132 columns: rows of 33 threads, 3 rows and 25 idle threads a
#: block), 16-byte complex columns in ragged rows of 5 threads, kept dims on both sides of the reduced
#: one, the reduced dim outermost (64 of 72 columns: kept dims that do not merge), a state and an
#: indexed state, and columns off the 16-byte grid a load an element (5 float32 columns in ragged
#: rows of 5 threads, 33 float64 ones over 12 rows, a float16 state's 13). (view shape, its
#: slice of the last dim, axes, itemsize, state, accumulator bytes, indexed)
STACK_CASES = [((40, 2, 128), 128, (1,), 4, False, 4, False), ((40, 3, 132), 132, (1,), 4, False, 4, False),
               ((200, 3, 5), 5, (1,), 16, False, 16, False), ((60, 2, 3, 16), 16, (1,), 4, False, 4, False),
               ((3, 100, 72), 64, (0,), 2, False, 4, False), ((40, 4, 33), 33, (1,), 16, True, 48, False),
               ((40, 2, 132), 132, (1,), 4, True, 16, True), ((300, 3, 5), 5, (1,), 4, False, 8, False),
               ((40, 12, 33), 33, (1,), 8, False, 8, False), ((100, 5, 13), 13, (1,), 2, True, 32, False)]

#: The policy over grids of at most 3 blocks (rows of threads walk several tiles each).
STACK_ANY = SimpleNamespace(**{**{k: v for k, v in vars(policy).items() if k.isupper()}, "MAX_GRID_X": 3})


@pytest.mark.parametrize("shape,width,axes,itemsize,state,acc_itemsize,indexed", STACK_CASES, ids=str)
def test_stacked_tiles_read_every_element_once(shape, width, axes, itemsize, state, acc_itemsize, indexed):
    view = np.empty(shape, f"u{itemsize}" if itemsize <= 8 else "c16")[..., :width]
    kept = [i for i in range(len(shape)) if i not in axes]
    cfg = check_coverage(view, axes, list(range(len(kept))), 1, 0, STACK_ANY, state=state, acc_itemsize=acc_itemsize,
                         indexed=indexed)
    assert cfg.kernel == "outer" and cfg.stacked and cfg.ny == cfg.num_red and cfg.block // cfg.lanes > 1, cfg
    assert cfg.grid[0] * (cfg.block // cfg.lanes) < cfg.num_tiles, cfg  # rows of threads walk several tiles


def test_ragged_column_lanes_follow_the_policy():
    """A thread per staged column where they are more than half a warp and at most half a block; a
    power of two of threads elsewhere."""
    for width in range(2, 80):
        cfg = config.plan((4000, width), (width, 1), (0,), (1,), 1, 1, 132, in_misalign=1, tuning=SMALL)
        if cfg.kernel != "staged":
            continue
        if 16 < width <= SMALL.BLOCK_THREADS // 2:
            assert cfg.lanes == width, (width, cfg)
        else:
            assert cfg.lanes & (cfg.lanes - 1) == 0, (width, cfg)


#: Short aligned runs, walked flat: unsplit, split by runs, grid-stride, two segment dims.
FLAT_CASES = [((5, 3, 8), (0, 2), 4), ((9, 4, 40), (0, 2), 2), ((64, 2, 32), (0, 2), 1), ((3, 5, 2, 6), (0, 1, 3), 8),
              ((7, 300, 8), (0, 2), 4), ((40, 2, 3, 16), (0, 2, 3), 4), ((4, 3, 5, 2, 8), (0, 2, 4), 4),
              ((7, 300, 5), (0, 2), 16), ((3, 5, 2, 3), (0, 1, 3), 16)]


@pytest.mark.parametrize("shape,axes,itemsize", FLAT_CASES)
def test_flat_runs_coverage(shape, axes, itemsize):
    view = np.empty(shape, f"u{itemsize}" if itemsize < 16 else "c16")
    seen = set()
    for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
        for indexed in (False, True):
            cfg = check_coverage(view, axes, list(range(len(shape) - len(axes))), sm_count, 0, tuning, indexed)
            seen.add((cfg.kernel == "inner" and cfg.flat_runs, cfg.num_splits > 1, indexed))
    assert any(flat and index for flat, _, index in seen), seen


#: Runs off the 16-byte grid under a few outputs, walked flat an element a load (`_walks_elements`):
#: split by runs (132 SMs) and not (1 SM), a state's and a scalar's, from the grid and an element past it.
ELEMENT_RUN_CASES = [((40, 3, 257), (0, 2)), ((200, 2, 257), (0, 2))]


@pytest.mark.parametrize("shape,axes", ELEMENT_RUN_CASES)
def test_element_runs_coverage(shape, axes):
    view, splits = np.empty(shape, "u8"), set()
    for sm_count, misalign, indexed, state in itertools.product((1, 132), (0, 1), (False, True), (False, True)):
        cfg = check_coverage(view, axes, [0], sm_count, misalign, indexed=indexed, state=state,
                             acc_itemsize=16 if state else 8)
        assert cfg.kernel == "inner" and cfg.flat_runs and cfg.vec == 1, cfg
        splits.add(cfg.num_splits > 1)
    assert True in splits


#: Narrow columns over two rows, staged in spans of half a vector a thread that hold their whole
#: reductions (STAGE_MIN_WHOLE_SPAN_VECTORS_PER_THREAD): a float16 state's, 1-byte columns.
HALF_SPAN_CASES = [((3001, 2, 131), 2, 32), ((300, 2, 129), 2, 32), ((30001, 2, 3), 1, 0), ((3001, 2, 17), 1, 0)]


@pytest.mark.parametrize("shape,itemsize,acc_itemsize", HALF_SPAN_CASES)
def test_half_vector_spans_coverage(shape, itemsize, acc_itemsize):
    view = np.empty(shape, f"u{itemsize}")
    for sm_count, misalign, indexed in itertools.product((1, 132), (0, 1), (False, True)):
        cfg = check_coverage(view, (1,), [0, 1], sm_count, misalign, indexed=indexed, state=acc_itemsize > 0,
                             acc_itemsize=acc_itemsize)
        vectors = cfg.stage.rows * shape[1] * shape[2] * itemsize / 16
        assert cfg.kernel == "staged" and vectors < policy.BLOCK_THREADS, cfg


#: Short aligned rows of whole vectors that ReduceInner folds several a thread: a ragged last group,
#: grid-stride (SMALL's grid of 5), kept dims stepping over them; off the grid, one row a thread.
SHORT_ROW_CASES = [((2000, 4), 4), ((1001, 2), 8), ((3001, 8), 2), ((700, 3, 4), 4), ((5000, 8), 4)]


@pytest.mark.parametrize("shape,itemsize", SHORT_ROW_CASES)
def test_short_rows_side_by_side_read_every_row_once(shape, itemsize):
    view = np.empty(shape, f"u{itemsize}")
    axes = (len(shape) - 1,)
    rows = {getattr(check_coverage(view, axes, list(range(len(shape) - 1)), 1, misalign, SMALL), "rows", 1)
            for misalign in (0, 1)}
    assert 1 in rows and 1 < max(rows) <= SMALL.SHORT_ROW_VECTORS // (shape[-1] * itemsize // 16), rows


@pytest.mark.parametrize("shape,itemsize", [((2000, 12), 4), ((999, 3, 6), 8), ((1001, 3), 16)])
def test_short_rows_of_three_vectors_side_by_side_read_every_row_once(shape, itemsize):
    """Rows of 3 whole vectors fold 2 a thread in tiles of 3 (SMALL's grid of 5, 8 loads in flight)."""
    tuning = SimpleNamespace(**{**vars(SMALL), "SHORT_ROW_VECTORS": 8})
    view = np.empty(shape, f"u{itemsize}" if itemsize <= 8 else "c16")
    axes = (len(shape) - 1,)
    cfg = check_coverage(view, axes, list(range(len(shape) - 1)), 1, 0, tuning)
    assert cfg.kernel == "inner" and cfg.rows == 2 and cfg.ny == 3, cfg


#: Rows of V vectors under LANE_MIN_LOADS loads a lane at the lanes a step needs: half the lanes, each
#: holding its share whole in a tile of 5 or 6, and a warp's run of two steps one step of its share
#: (SMALL's grid of 5: grid-stride over the rows; aligned runs left to ReduceInner, as the policy's
#: are): V = 5, 33, 65, 11, 23, 130, 191.
WHOLE_SHARE_CASES = [((300, 20), 4, 1, 5), ((300, 66), 8, 8, 5), ((97, 65), 16, 16, 5), ((410, 44), 4, 2, 6),
                     ((33, 3, 92), 4, 4, 6), ((41, 260), 8, 32, 5), ((7, 3, 191), 16, 32, 6)]


#: float16's shares of 5 and 6 where lanes halve (SHARE_MAX_ELEMENTS): rows of 5, 10, 11 and 33 vectors.
WHOLE_SHARE_CASES += [((300, 40), 2, 1, 5), ((300, 80), 2, 2, 5), ((7, 3, 88), 2, 2, 6), ((41, 264), 2, 8, 5)]

#: A state's lanes over rows whose share is no whole steps of 4: tiles of 5 or 3 (STATE_STEP_TILES), the
#: same steps or fewer: rows of 10, 12, 20 and 24 vectors.
STATE_STEP_CASES = [((300, 40), 4, 2, 5), ((300, 48), 4, 2, 3), ((300, 80), 4, 4, 5), ((300, 96), 4, 4, 3)]


def _aligned_runs_inner():
    """SMALL with the policy's staging of aligned runs, which it leaves to ReduceInner."""
    aligned_runs = {k: getattr(policy, k) for k in dir(policy) if k.startswith(("STAGE_ALIGNED", "STAGE_STRADDLING", "SECTOR"))}
    return SimpleNamespace(**{**vars(SMALL), **aligned_runs})


@pytest.mark.parametrize("shape,itemsize,lanes,ny", WHOLE_SHARE_CASES)
def test_lanes_holding_their_share_of_a_row_whole_read_every_element_once(shape, itemsize, lanes, ny):
    view = np.empty(shape, f"u{itemsize}" if itemsize <= 8 else "c16")
    axes = (len(shape) - 1,)
    cfg = check_coverage(view, axes, list(range(len(shape) - 1)), 1, 0, _aligned_runs_inner())
    assert cfg.kernel == "inner" and (cfg.lanes, cfg.ny) == (lanes, ny), cfg


@pytest.mark.parametrize("shape,itemsize,lanes,ny", STATE_STEP_CASES)
def test_a_states_lanes_in_whole_steps_read_every_element_once(shape, itemsize, lanes, ny):
    view = np.empty(shape, f"u{itemsize}")
    cfg = check_coverage(view, (1,), [0], 1, 0, _aligned_runs_inner(), state=True, acc_itemsize=16)
    assert cfg.kernel == "inner" and (cfg.lanes, cfg.ny) == (lanes, ny), cfg


@pytest.mark.parametrize("acc_itemsize", [16, 32, 48])
@pytest.mark.parametrize("shape,itemsize", SHORT_ROW_CASES)
def test_state_short_rows_side_by_side_read_every_row_once(shape, itemsize, acc_itemsize):
    """The same for a state (var, argmax, ...): as many rows a thread as a scalar's, no more than its
    accumulators allow (SHORT_ROW_ACC_BYTES: SMALL's 64 bytes hold 4, 2 and 1 of these)."""
    view = np.empty(shape, f"u{itemsize}")
    axes, order = (len(shape) - 1,), list(range(len(shape) - 1))
    allowed = {16: 4, 32: 2, 48: 1}[acc_itemsize]
    for misalign in (0, 1):
        scalar = getattr(check_coverage(view, axes, order, 1, misalign, SMALL), "rows", 1)
        state = check_coverage(view, axes, order, 1, misalign, SMALL, state=True, acc_itemsize=acc_itemsize)
        assert getattr(state, "rows", 1) == min(scalar, allowed), (scalar, state)


def check_words_coverage(view: np.ndarray, axes, sm_count: int, misalign: int, tuning=policy):
    """A 1-byte `any`/`all` planned with folds_words and word_columns: where it reads words,
    every input byte is read once (4 per word) and every output written once (4 per word where the
    words are columns); where a staged span folds its runs as words, every byte of them once."""
    strides = list(view.strides)
    kept_shape = [n for i, n in enumerate(view.shape) if i not in axes]
    out = np.empty(kept_shape, dtype=np.uint8)
    cfg = config.plan(view.shape, strides, axes, list(out.strides), 1, 1, sm_count, in_misalign=misalign,
                      out_align=16, tuning=tuning, folds_words=True, word_columns=True, acc_itemsize=1)
    if cfg.words or cfg.word_columns:
        assert not (cfg.words and cfg.word_columns) and (cfg.word_columns or cfg.kernel in ("inner", "staged")), cfg
        replay = Replay(cfg, 4, misalign).run()
        assert _bytes_of_words(replay.reads) == _offsets(view.shape, strides), cfg
        writes = _bytes_of_words(replay.writes) if cfg.word_columns else replay.writes
        assert writes == _offsets(out.shape, list(out.strides)), cfg
    elif cfg.reads_bytes:  # (ReduceOuter's shifted words; a staged span's word folds, word columns or byte rows)
        replay = Replay(cfg, 1, misalign).run()
        assert replay.reads == _offsets(view.shape, strides), cfg
        assert replay.writes == _offsets(out.shape, list(out.strides)), cfg
    else:  # nothing of the word view may leak into a byte plan
        assert cfg == config.plan(view.shape, strides, axes, list(out.strides), 1, 1, sm_count,
                                  in_misalign=misalign, out_align=16, tuning=tuning, acc_itemsize=1)
    return cfg


@pytest.mark.parametrize("width", tiered([2, 3, 5, 6, 7, 10, 17, 33, 65, 129, 255, 510, 257, 513], fast=[3, 33, 257, 513]))
def test_odd_word_columns_read_every_byte_once(width):
    """Bool columns that are no whole words, staged and folded as words by residue: every byte read
    once, where it lies, by the residue whose bytes end up in its column (the replay checks each),
    every column written once; at every start in a 16-byte vector, both tunings, split or not.
    257 columns have more residues than a block has threads (two a thread); 513 more than twice as
    many: folded in bytes."""
    seen = set()
    for rows in (301, 3001):
        view = np.empty((max(48, rows * 17 // width), width), np.uint8)
        for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
            for misalign in (0, 1, 3, 6, 15):
                cfg = check_words_coverage(view, (0,), sm_count, misalign, tuning)
                if cfg.kernel == "staged" and cfg.stage.word_columns:
                    seen.add(cfg.num_splits > 1)
    assert bool(seen) == (width != 513), (width, seen)


@pytest.mark.parametrize("width", tiered([65, 67, 257, 1025, 1026, 1027, 4095, 9999], fast=[67, 257]))
def test_shifted_word_columns_read_every_byte_once(width):
    """Bool columns off the word grid read four a word from the aligned words around them
    (ReduceOuter's ShiftedWords): every byte read once, in its own row, from at most the two words
    that hold its word; every column written once, the last word of a row byte by byte; at every
    start in a word, rows flipped (an offset to the last row), a batch of them, split or not."""
    seen = set()
    # (rows of a wide column fewer, about as many bytes a view as 301 rows of 1027: the same index
    # arithmetic, splits and tails, for a tenth of the replay at 9999)
    for rows in (7, min(301, max(31, 301 * 1027 // width))):
        base = np.empty((2, rows, width), np.uint8)
        for view, axes in ((base[0], (0,)), (base[0, ::-1], (0,)), (base, (1,)), (base, (0, 1))):
            for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
                for misalign in (0, 1, 2, 3):
                    cfg = check_words_coverage(view, axes, sm_count, misalign, tuning)
                    if cfg.kernel == "outer" and cfg.shifted_words:
                        seen.add(cfg.num_splits > 1)
                        assert cfg.shifted_words == width, cfg
    assert seen >= ({True} if width < policy.SHIFTED_WORD_COLUMNS_MIN else {False, True}), seen


def _bytes_of_words(counts: Counter) -> Counter:
    """Word offset -> times, as byte offset -> times (4 bytes a word)."""
    out = Counter()
    for word, times in counts.items():
        for b in range(4):
            out[4 * word + b] += times
    return out


@st.composite
def byte_views(draw):
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.sampled_from([1, 2, 3, 4, 8, 12]), min_size=ndim, max_size=ndim))
    base = np.empty([n * 4 for n in shape], dtype=np.uint8)
    index = tuple(slice(None, None, draw(st.sampled_from([1, 1, 4, -1, -4]))) for _ in shape)
    view = base[index][tuple(slice(0, n) for n in shape)]
    return view.transpose(draw(st.permutations(range(ndim))))


@given(view=byte_views(), data=st.data())
def test_words_read_every_byte_once(view, data):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, view.ndim - 1), min_size=1), label="axes")))
    check_words_coverage(view, axes, data.draw(st.sampled_from([1, 132])), data.draw(st.sampled_from([0, 1, 4, 12])),
                         data.draw(st.sampled_from([policy, SMALL])))


@pytest.mark.parametrize("shape,axes,words", [((2, 4), (1,), False), ((130, 4), (1,), False), ((3, 24), (1,), True),
                                              ((3, 12), (1,), False), ((3, 8), (1,), True),
                                              ((4, 3, 8), (0, 2), True), ((64,), (0,), True), ((5, 12), (0, 1), True)])
def test_words_hand_picked(shape, axes, words):
    """Runs of one word beside rows one word apart stay in bytes (in words both would be stride 1);
    adjacent rows of up to 16 bytes on the 16-byte grid stay in bytes too, for FoldByteRows (below),
    but for rows of 8 and 16, whose chunks would meet in 8-way bank conflicts."""
    view = np.empty(shape, np.uint8)
    for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
        assert check_words_coverage(view, axes, sm_count, 0, tuning).words == words


@pytest.mark.parametrize("shape,axes,folds", [((50, 7), (1,), True), ((9, 1001), (1,), True), ((3, 3000), (1,), True),
                                             ((20, 3, 5), (1, 2), True), ((6, 5, 3), (0, 2), False),
                                             ((40, 6), (1,), True), ((8, 12), (1,), True), ((7, 9), (0,), False)])
def test_word_folds_hand_picked(shape, axes, folds):
    """Staged rows of a 1-byte `any`/`all` that are no whole words (odd widths, or misaligned) fold
    as words, each byte once, at every start in a word (rows of whole words too, where they start
    off the word grid; on it they read as words from global memory); a reduced run beside kept dims
    in the span and columns do not."""
    view = np.empty(shape, np.uint8)
    for misalign in (0, 1, 2, 3, 5):
        for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
            cfg = check_words_coverage(view, axes, sm_count, misalign, tuning)
            if tuning is SMALL and not cfg.words:  # (the policy's spans are too big for these shapes)
                st = cfg.stage if cfg.kernel == "staged" else None
                assert (st is not None and (st.word_folds or st.byte_rows > 0)) == folds, cfg


@pytest.mark.parametrize("width", tiered([2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 14, 15], fast=[3, 13]))
def test_byte_rows_read_every_byte_once(width):
    """Rows of a 1-byte `any`/`all` 2-16 bytes long, 16 a thread from 16-byte chunks (FoldByteRows):
    every byte read once from the chunks that hold its row, every row written once, for row counts
    around a thread's 16 and spans cut into chunks of rows; only where every span starts on the
    16-byte grid (a misaligned start or batch stride keeps the other folds)."""
    seen = set()
    for rows in (1, 15, 16, 17, 301, 3001):
        # (a batch of spans rows + 1 rows apart: on the grid only where that is a 16-byte multiple)
        for view, axes in ((np.empty((rows, width), np.uint8), (1,)),
                           (np.empty((3, rows + 1, width), np.uint8)[:, :rows], (2,))):
            for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
                for misalign in (0, 1, 8):
                    cfg = check_words_coverage(view, axes, sm_count, misalign, tuning)
                    if cfg.kernel == "staged" and cfg.stage.byte_rows:
                        assert misalign == 0 and (view.ndim == 2 or (rows + 1) * width % 16 == 0), cfg
                        seen.add(cfg.stage.rows < cfg.stage.rows_total)
    assert seen == {False, True}, seen


@pytest.mark.parametrize("shape,axes,columns", [((5, 8), (0,), True), ((3, 4), (0,), True), ((7, 6, 12), (0, 1), True),
                                                ((9, 1, 4), (1,), True), ((5, 6), (0,), False), ((4, 8), (1,), False)])
def test_word_columns_hand_picked(shape, axes, columns):
    """Kept columns of whole words read and write four a word; a kept dim of one word reduces whole
    words; widths that are no multiple of 4 stay in bytes."""
    view = np.empty(shape, np.uint8)
    for sm_count, tuning in ((1, policy), (132, policy), (1, SMALL), (132, SMALL)):
        assert check_words_coverage(view, axes, sm_count, 0, tuning).word_columns == columns


@pytest.mark.parametrize("shape,axes,how", [((3, 5000), (1,), "chunks"), ((5000,), (0,), "chunks"),
                                            ((4, 3, 700), (0, 2), "segments"), ((999, 132), (0,), "rows"),
                                            ((300, 256), (0,), "rows"), ((6000, 4), (1,), "grid-stride"),
                                            ((999, 3), (0,), "stages"), ((300, 13), (0,), "stages")])
def test_small_tuning_reaches_every_regime(shape, axes, how):
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    cfg = config.plan(shape, strides, axes, [1] * (len(shape) - len(axes)), 4, 4, 132, tuning=SMALL)
    if how == "grid-stride":
        assert cfg.grid[0] * (cfg.block // cfg.lanes) < cfg.num_out and cfg.num_splits == 1
    else:
        assert cfg.num_splits > 1
        split_by = "chunks" if cfg.kernel == "inner" and cfg.chunks > 1 else {"inner": "segments", "outer": "rows",
                                                                               "staged": "stages"}[cfg.kernel]
        assert split_by == how, cfg


@pytest.mark.parametrize("lanes,ny", [(32, 2), (32, 4), (64, 2), (256, 2), (256, 4)])
def test_lanes_sharing_chunks_assemble_every_vector_from_its_own(lanes, ny):
    """The chunks of an input off the first one's grid, shared between lanes (kps::ReadDataVecLanes):
    every vector from the two chunks that cover it, at every shift of either sign, on whole and
    partial steps; each chunk loaded at most twice (once by the lane it starts, once as a warp's
    next) and none outside the input's bytes."""
    from replay import shared_lane_chunks

    step = lanes * ny
    for num_vec in sorted({1, 2, 31, 32, 33, lanes - 1, lanes + 1, step - 1, step, step + 1, 2 * step + 37, 3 * step}):
        for shift in [s for s in range(-40, 41) if s % 16]:
            loads = shared_lane_chunks(num_vec, lanes, ny, shift)
            assert max(loads.values(), default=0) <= 2
            if 0 < shift < 16:  # x[1:] beside x[:-1]: only each warp's row's next chunk is loaded again
                steps = -(-num_vec // step)
                assert sum(loads.values()) <= steps * (lanes // 32) * ny + ny
