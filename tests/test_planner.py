"""The planner's rules, on the CPU: axes, merging, reduce types, launch limits, index width."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from kernels import config, params, planner, policy
from kernels.planner import AxisError, Budget, Dim, splits
from kps.compiler import INCLUDE_DIR


def c_strides(shape):
    return [int(np.prod(shape[i + 1:])) for i in range(len(shape))]


def plan(shape, axes, strides=None, itemsize=4, sm_count=132, **kw):
    strides = c_strides(shape) if strides is None else strides
    kept = [n for i, n in enumerate(shape) if i not in axes]
    return config.plan(shape, strides, axes, c_strides(kept), itemsize, itemsize, sm_count, **kw)


@pytest.mark.parametrize("axis,ndim,expect", [(None, 3, (0, 1, 2)), (-1, 3, (2,)), ((2, 0), 3, (0, 2)),
                                              ((), 2, ()), (np.int64(1), 2, (1,)), (0, 0, None)])
def test_normalize_axis(axis, ndim, expect):
    if expect is None:
        with pytest.raises(AxisError):
            config.normalize_axis(axis, ndim)
    else:
        assert config.normalize_axis(axis, ndim) == expect


@pytest.mark.parametrize("axis,exc", [(3, AxisError), (-4, AxisError), ((0, 0), ValueError), ((0, -3), ValueError),
                                      (1.0, TypeError), ("0", TypeError), ([0, 1], TypeError), (True, TypeError)])
def test_normalize_axis_errors_name_the_argument(axis, exc):
    with pytest.raises(exc, match="axis"):
        config.normalize_axis(axis, 3)


def test_merge_contiguous_neighbours_only():
    assert planner.merge([Dim(4, 12), Dim(3, 4), Dim(4, 1)]) == (Dim(48, 1),)
    assert planner.merge([Dim(4, 24), Dim(3, 4), Dim(4, 1)]) == (Dim(4, 24), Dim(12, 1))
    # contiguous in the input but not in the output: kept apart
    assert planner.merge([Dim(4, 3, 1), Dim(3, 1, 4)]) == (Dim(4, 3, 1), Dim(3, 1, 4))


@pytest.mark.parametrize("shape,axes,kind,reduce_type", [
    ((1 << 20,), (0,), "inner", "full"),
    ((64, 32), (0, 1), "inner", "full"),
    ((4096, 1024), (1,), "inner", "last"),
    ((8, 16, 32), (1, 2), "inner", "last"),  # merged into one row
    ((4096, 1024), (0,), "outer", "higher"),
    ((8, 16, 32), (0, 1), "outer", "higher"),  # merged into one column dim
    ((128, 64, 56, 56), (0, 2, 3), "inner", "any"),
    ((8, 9, 10, 11), (0, 2), "staged", "any"),  # 11 kept columns: 44 bytes, off the 16-byte grid
    ((1, 5, 1), (0, 2), "outer", "higher"),  # only size-1 dims reduced: a map (too small to stage)
])
def test_reduce_type(shape, axes, kind, reduce_type):
    cfg = plan(shape, axes)
    assert (cfg.kernel, cfg.reduce_type) == (kind, reduce_type)
    assert type(cfg) is {"inner": planner.InnerPlan, "outer": planner.OuterPlan, "staged": planner.StagedPlan}[kind]


def _regime(cfg) -> str:
    """The plan's kernel, "stacked" for ReduceOuter's stacked walk (outer._stacked)."""
    return "stacked" if cfg.kernel == "outer" and cfg.stacked else cfg.kernel


def test_each_kernels_plan_holds_its_own_fields():
    """What every launch has lives in ReduceConfig; a kernel's own fields only in its plan type (a
    plan of one kernel carries none of another's, and reading one is an AttributeError)."""
    own = {t: {f.name for f in dataclasses.fields(t)} for t in (planner.InnerPlan, planner.OuterPlan, planner.StagedPlan)}
    common = set.intersection(*own.values())
    assert common == {f.name for f in dataclasses.fields(planner.ReduceConfig)}
    assert own[planner.StagedPlan] - common == {"stage", "split_group"}
    assert {"flat_runs", "shared_lanes", "chunks"} <= own[planner.InnerPlan] - own[planner.OuterPlan]
    assert {"shifted_words", "col_tiles", "vec_in"} <= own[planner.OuterPlan] - own[planner.InnerPlan]
    with pytest.raises(AttributeError):
        plan((4096, 1024), (0,)).stage  # noqa: B018 (a column sum: ReduceOuter)


def test_transposed_input_needs_no_copy_and_merges():
    # x.T of a C-contiguous (64, 32, 16): reducing the last two axes reads 16*32-long contiguous runs
    shape, strides = (16, 32, 64), [1, 16, 512]
    cfg = plan(shape, (0, 1), strides)
    assert cfg.kernel == "inner" and cfg.inner == Dim(512, 1) and cfg.vec == 4


def test_negative_reduced_strides_are_flipped():
    cfg = plan((10, 7), (1,), strides=[7, -1])
    assert cfg.in_offset == -6 and cfg.inner.in_stride == 1 and cfg.vec == 4


def test_short_rows_and_narrow_columns_get_few_lanes():
    assert plan((1 << 20, 64), (1,)).lanes == 4
    assert plan((1 << 24, 16), (0,)).lanes == 4  # 4 threads x 4 floats cover the 16 columns


def test_rows_of_fewer_vectors_than_a_step_take_fewer_rows_in_flight():
    """ReduceInner's tile has no more rows than a lane has vectors of its row (rounded up to a power
    of two): the rows past it would never be loaded, only held in registers."""
    def ny(shape, itemsize):
        return config.plan(shape, (shape[1], 1), (1,), (1,), itemsize, itemsize, 132, acc_itemsize=8).ny

    assert ny((1 << 20, 4), 8) == 2  # 2 vectors of 2 float64
    assert ny((1 << 20, 2), 16) == 2  # 2 complex128
    assert ny((1 << 20, 8), 4) == 2  # 2 vectors of 4 float32
    assert ny((1 << 20, 8), 8) == 4  # 4 vectors: a whole step
    assert ny((1 << 16, 4096), 4) == policy.MAX_TILE_ROWS


def test_lanes_under_three_loads_of_a_row_halve_and_hold_their_share_whole():
    """A scalar's run that one step covers with fewer than LANE_MIN_LOADS loads a lane takes half the
    lanes, each holding its share whole (at most LANE_MAX_LOADS), and a warp's run of a few steps one
    step of its share; shares of three or more keep the step's lanes, and a state and several inputs
    keep theirs. float16 holds shares of 5 and 6 where lanes halve (SHARE_MAX_ELEMENTS), not a warp's,
    and 1-byte inputs keep their tile of 2 rows (MAX_TILE_ELEMENTS) (policy.py)."""
    def tile(vectors, itemsize=4, **kw):
        width = vectors * 16 // itemsize
        cfg = config.plan((1 << 28 // (16 * vectors), width), (width, 1), (1,), (1,), itemsize, itemsize, 132,
                          acc_itemsize=kw.pop("acc_itemsize", 8), **kw)
        return cfg.kernel, cfg.lanes, cfg.ny

    assert tile(33) == tile(33, 16, acc_itemsize=16) == ("inner", 8, 5)  # 16 lanes of 2-3 loads before
    assert [tile(v)[1:] for v in (5, 9, 11, 17, 23, 65)] == [(1, 5), (2, 5), (2, 6), (4, 5), (4, 6), (16, 5)]
    assert [tile(v)[1:] for v in (4, 6, 8, 12, 24, 96, 128)] == [(1, 4), (2, 4), (2, 4), (4, 4), (8, 4), (32, 4), (32, 4)]
    # a warp's run of two steps, the second short (rows of 130: 128 and 2), in one step of its share
    assert [tile(v)[1:] for v in (129, 130, 160, 161, 191)] == [(32, 5), (32, 5), (32, 5), (32, 6), (32, 6)]
    assert [tile(v)[1:] for v in (192, 193, 257)] == [(32, 4)] * 3  # a last step half full; shares of 7, 9
    odd = config.plan((1 << 17, 257), (257, 1), (1,), (1,), 8, 8, 132, acc_itemsize=8)  # off the grid
    assert (odd.lanes, odd.ny) == (32, 4)
    for vectors in (5, 33, 65):
        share = -(-vectors // (tile(vectors)[1]))
        assert policy.LANE_MIN_LOADS < share <= policy.LANE_MAX_LOADS
    assert tile(33, 4, state=True, acc_itemsize=16)[2] <= policy.MAX_TILE_ROWS
    assert tile(33, 4, inputs=2)[1:] == (16, 4)
    assert [tile(v, 2)[1:] for v in (33, 20, 130)] == [(8, 5), (4, 5), (32, 4)]  # float16: 8 elements a vector
    assert [tile(v, 1)[1:] for v in (33, 20)] == [(32, 2), (16, 2)]  # bytes: 16 a vector, 32 a tile


def test_a_states_lanes_walk_whole_steps_of_a_row():
    """A state's lane whose share of a row is no whole steps of 4 takes the first of STATE_STEP_TILES
    that divides it without adding a step; a share no tile divides, or only with more steps, keeps 4
    (policy.py). Rows of V vectors, one lane to 15, two from LANE_PAIR_MIN_VECTORS."""
    def tile(vectors, itemsize=4, acc_itemsize=32):
        width = vectors * 16 // itemsize
        cfg = config.plan(((1 << 28) // (16 * vectors), width), (width, 1), (1,), (1,), itemsize, 4, 132,
                          acc_itemsize=acc_itemsize, state=True)
        return cfg.lanes, cfg.ny

    assert [tile(v) for v in (5, 6, 7, 8, 9, 10, 12, 14, 15)] == [
        (1, 5), (1, 3), (1, 4), (1, 4), (1, 3), (1, 5), (1, 4), (1, 4), (1, 5)]
    assert [tile(v) for v in (16, 17, 18, 20, 36, 40, 50)] == [(2, 4), (2, 4), (2, 3), (2, 5), (2, 4), (2, 4), (2, 5)]
    assert tile(20, 8, 64) == tile(20, 16, 64) == (2, 5)  # complex64 and complex128 var alike
    for vectors in range(5, 130):
        lanes, ny = tile(vectors)
        share, rest = divmod(vectors, lanes)
        if ny != policy.MAX_TILE_ROWS:
            assert ny in policy.STATE_STEP_TILES and not rest and share % ny == 0, (vectors, lanes, ny)
            assert share // ny <= -(-share // policy.MAX_TILE_ROWS), (vectors, lanes, ny)


def test_an_8_byte_accumulator_takes_a_block_a_row_from_two_block_steps():
    """A scalar accumulator of 8 bytes (a float32 sum in float64, float64 data) takes a block an
    output only where its row walks WIDE_ACC_BLOCK_ROW_STEPS steps of the block, a 4-byte one from
    one step; where warps an output would leave the GPU short of blocks, both from one (policy.py)."""
    def lanes(width, itemsize, acc_itemsize, elements=1 << 26):
        cfg = config.plan((elements // width, width), (width, 1), (1,), (1,), itemsize, 4, 132, acc_itemsize=acc_itemsize)
        return cfg.lanes, cfg.ny

    block, step = policy.BLOCK_THREADS, policy.BLOCK_THREADS * lanes(4096, 4, 4)[1] * 4  # elements a block step
    assert lanes(4096, 4, 4)[0] == block and lanes(4096, 4, 8)[0] == policy.WARP_SIZE
    assert lanes(policy.WIDE_ACC_BLOCK_ROW_STEPS * step, 4, 8)[0] == block
    assert lanes(2048, 8, 8)[0] == policy.WARP_SIZE and lanes(4096, 8, 8)[0] == block
    assert lanes(4096, 4, 8, 1 << 22)[0] == lanes(2048, 8, 8, 1 << 21)[0] == block  # 1024 rows: a block each


def test_odd_columns_of_wide_elements_are_staged_only_when_narrow():
    """Misaligned kept columns are staged up to STAGE_MAX_COLUMN_BYTES, but those of elements of 4
    bytes or more only up to STAGE_MAX_WIDE_COLUMN_BYTES: ReduceOuter reads them well a lane each
    (policy.py). Elements of 1 and 2 bytes, which ReduceOuter would read one a lane, stay staged."""
    def kernel(width, itemsize):
        return config.plan(((1 << 26) // width, width), (width, 1), (0,), (1,), itemsize, itemsize, 132,
                           acc_itemsize=8).kernel

    for itemsize in (4, 8):
        widest = policy.STAGE_MAX_WIDE_COLUMN_BYTES // itemsize
        odd = widest - 1  # misaligned
        assert kernel(odd, itemsize) == "staged" and kernel(widest + 1, itemsize) == "outer", itemsize
        assert kernel(policy.STAGE_MAX_COLUMN_BYTES // itemsize - 1, itemsize) == "outer"
    for itemsize in (1, 2):  # (half the widest: 4 KB of bytes have more slots than a span holds)
        assert kernel(policy.STAGE_MAX_COLUMN_BYTES // (2 * itemsize) - 1, itemsize) == "staged", itemsize
    # a few reduced rows between kept dims: a span holds each column's reduction whole (ReduceOuter
    # would take a block an outer index, each of a few rows)
    for shape, axes in (((104044, 5, 129), (1,)), ((45191, 5, 9, 33), (1,))):
        for kw in ({}, dict(state=True, acc_itemsize=32)):
            assert plan(shape, axes, **kw).kernel == "staged", (shape, kw)


def test_a_states_lanes_each_walk_several_steps_of_its_row():
    """A state's row takes lanes only as each walks STATE_LANE_STEPS steps of it (every lane more is
    a shuffle round of state merges); a sum's lanes walk one step each. A row of LANE_PAIR_MIN_VECTORS
    vectors or more takes two lanes at least, whatever the accumulator. Where its outputs would then
    leave the GPU short of blocks, a state's rows keep a sum's lanes instead of splitting."""
    def lanes(width, itemsize, state, acc_itemsize=32):
        shape = ((1 << 26) // width, width)
        cfg = config.plan(shape, (width, 1), (1,), (1,), itemsize, 4, 132,
                          acc_itemsize=acc_itemsize if state else 8, state=state)
        assert cfg.kernel == "inner"
        return cfg.lanes, cfg.ny

    for width, itemsize in ((64, 4), (128, 4), (1000, 4), (4096, 4), (32, 8), (128, 8), (512, 16)):
        vectors = width * itemsize // 16
        (state_lanes, ny), (sum_lanes, _) = lanes(width, itemsize, True), lanes(width, itemsize, False)
        steps = {n: -(-vectors // (n * ny)) for n in (state_lanes, max(state_lanes // 2, 1))}  # a lane's, n lanes
        # as few lanes as walk at most STATE_LANE_STEPS steps each (a warp at most), two from LANE_PAIR_MIN_VECTORS
        assert state_lanes == policy.WARP_SIZE or steps[state_lanes] <= policy.STATE_LANE_STEPS
        assert (state_lanes == 1 or steps[state_lanes // 2] > policy.STATE_LANE_STEPS
                or state_lanes == 2 and vectors >= policy.LANE_PAIR_MIN_VECTORS), (width, itemsize, state_lanes)
        # a sum's lanes walk one step each (a warp's more, where its rows take no block: block_row_steps)
        assert state_lanes < sum_lanes or state_lanes == sum_lanes == policy.WARP_SIZE
    assert lanes(60, 4, True)[0] == 1  # 15 vectors: one lane
    assert lanes(64, 4, True)[0] == lanes(128, 4, True)[0] == 2  # 16 and 32 vectors: two, not one
    assert lanes(64, 8, True, acc_itemsize=64)[0] == 2  # complex64 var: 32 vectors, two lanes
    # outputs too few to fill the GPU's blocks that way: the lanes of a step, not splits across blocks
    for shape in ((1000, 500), (4096, 128), (256, 256)):
        state, plain = (config.plan(shape, (shape[1], 1), (1,), (1,), 4, 4, 132, acc_itemsize=32, state=s)
                        for s in (True, False))
        assert (state.lanes, state.num_splits) == (plain.lanes, 1), shape


def test_a_reduction_over_a_length_of_one_is_a_map():
    """Each output of a contiguous input reduces one element (its length-1 dims merge into one run
    of outputs): ReduceOuter's OneRow, one tile row, no splits."""
    for shape, axes in (((4099, 1), (1,)), ((3, 1, 1001), (1,)), ((1, 6, 1, 7), (0, 2)), ((5, 1, 3), (1,))):
        for itemsize, acc, state in ((4, 8, False), (4, 32, True), (8, 48, True), (2, 4, False)):
            cfg = plan(shape, axes, itemsize=itemsize, acc_itemsize=acc, state=state)
            assert (cfg.kernel, cfg.num_red, cfg.one_row, cfg.ny, cfg.num_splits) == ("outer", 1, True, 1, 1)
    assert not plan((64, 3), (0,)).one_row  # three rows: the loop


def test_split_only_when_outputs_cannot_fill_the_gpu():
    assert plan((65536, 4096), (1,)).num_splits == 1
    assert plan((16, 1 << 24), (1,)).num_splits > 1
    assert plan((1 << 24, 16), (0,)).num_splits > 1
    assert plan((1 << 16, 4096), (0,)).num_splits > 1  # 32 column tiles only
    # rows of two tile steps: a split's fixed cost is more than the round trip it saves
    assert plan((1024, 1024), (1,)).num_splits == 1 and plan((64, 1 << 16), (1,)).num_splits > 1
    # splits stop near SPLIT_BLOCKS_PER_SM blocks per SM (ReduceInner's: INNER_SPLIT_BLOCKS_PER_SM):
    # that many keep the memory busy
    assert plan((256, 1024, 256), (1,)).num_splits == 1  # 512 column tiles
    for shape, axes in (((1 << 24, 16), (0,)), ((1 << 28,), (0,)), ((128, 64, 56, 56), (0, 2, 3)), ((16, 1 << 24), (1,))):
        cfg = plan(shape, axes)
        per_sm = policy.INNER_SPLIT_BLOCKS_PER_SM if cfg.kernel == "inner" else policy.SPLIT_BLOCKS_PER_SM
        assert 132 * per_sm * 0.9 <= cfg.grid[0] * cfg.num_splits <= 132 * per_sm, (shape, cfg.kernel)


def _combine_rounds(cfg, per_round: int) -> int:
    """Rounds of partial loads on the longest path of a split's combine: the last group's, then the groups'."""
    groups = -(-cfg.num_splits // cfg.split_group)
    return -(-cfg.split_group // per_round) + (-(-groups // per_round) if groups > 1 else 0)


@given(st.integers(2, 65535), st.sampled_from([1, 2, 4, 8, 16, 32, 64, 256]), st.integers(1, 4096))
@example(5, 1, 1)  # two levels (3 + 2 rounds) no shorter than one (5): one level
def test_split_group_takes_the_fewest_rounds(num_splits, per_round, columns):
    """One level where one block combines the splits in SPLIT_ONE_LEVEL_ROUNDS rounds or fewer, or
    where the groups' counters would not fit; else groups of whole rounds, none shorter on both
    levels together, and their counters fit."""
    group = splits.split_group(num_splits, per_round, columns, policy)
    one = -(-num_splits // per_round)
    groups = -(-num_splits // group)
    if one <= policy.SPLIT_ONE_LEVEL_ROUNDS:
        assert group == num_splits
    if group < num_splits:
        assert group % per_round == 0 and columns * (1 + groups) <= policy.SPLIT_COUNTERS
        rounds = -(-group // per_round) + -(-groups // per_round)
        assert rounds < one
        assert all(-(-g // per_round) + -(-(-(-num_splits // g)) // per_round) >= rounds
                   for g in range(per_round, num_splits, per_round))
    assert splits.split_group(1, per_round, columns, policy) == 0


def test_many_splits_combine_in_two_levels():
    """Narrow columns over hundreds of splits (ReduceOuter, ReduceStaged): groups of splits whose
    counters follow the block columns'; a few splits keep one level."""
    outer = plan((1 << 24, 64), (0,))
    assert outer.kernel == "outer" and outer.num_splits > outer.split_group > 1
    assert outer.counters == outer.grid[0] * (1 + -(-outer.num_splits // outer.split_group))
    assert _combine_rounds(outer, outer.block // outer.lanes * outer.ny) <= 4
    staged = plan((1 << 16, 127), (0,))
    assert staged.kernel == "staged" and staged.num_splits > staged.split_group > 1
    few = plan((1 << 16, 4096), (0,))
    assert 1 < few.num_splits == few.split_group and few.counters == few.grid[0]
    assert plan((65536, 4096), (1,)).counters == 0


def test_complex_partials_load_the_kernels_bytes_a_round():
    """A complex accumulator's combine loads COMPLEX_PARTIAL_BYTES of partials a thread a round, the
    number kps::kPartialRows reads (kComplexPartialBytes), so its split groups are chosen on the rounds
    the kernel takes: complex64 sums over 16 columns (two complex128 partials a thread, two rows a
    round) combine in two levels, complex128 ones over 5 columns (four rows a round) in one."""
    header = (INCLUDE_DIR / "kps" / "primitives.cuh").read_text()
    assert f"constexpr int kComplexPartialBytes = {splits.COMPLEX_PARTIAL_BYTES};" in header
    c64 = plan((1 << 21, 16), (0,), itemsize=8, acc_itemsize=16, complex_acc=True)
    assert splits.partial_rows(planner.Traits(complex_acc=True, acc_itemsize=16), c64.ny, c64.vec) == 2
    assert c64.num_splits > c64.split_group > 1 and _combine_rounds(c64, c64.block // c64.lanes * 2) <= 2
    c128 = plan((3355443, 5), (0,), itemsize=16, acc_itemsize=16, complex_acc=True)
    assert c128.num_splits == c128.split_group and _combine_rounds(c128, c128.block // c128.lanes * 4) <= 2
    assert splits.partial_rows(planner.Traits(state=True, acc_itemsize=48), 8, 1) == 1
    assert splits.partial_rows(planner.Traits(acc_itemsize=8), 4, 2) == 4


@given(st.integers(1, 64), st.sampled_from([1, 2, 4, 8, 16, 32, 64, 512]), st.integers(1, 4096))
def test_splits_within_fold_in_the_rounds_allowed(rounds, per_round, columns):
    most = splits.splits_within(rounds, per_round, columns, policy)
    assert rounds * per_round <= most <= 1 << 16
    assert splits.combine_rounds(most, per_round, columns, policy) <= rounds


@pytest.mark.parametrize("inner,axes,itemsize", [
    (inner, axes, itemsize) for inner, axes in [((64, 7, 7), (0, 3)), ((128, 5, 5), (0, 3)), ((200, 3, 3), (0, 3)),
                                                ((512, 3), (0, 2)), ((1000, 5), (0, 2)), ((64, 7, 7), (0, 2))]
    for itemsize in (4, 2)] + [((5, 129), (0,), 2)])
def test_wide_tiles_of_short_runs_split_over_two_levels(inner, axes, itemsize):
    """A few tiles of hundreds of slots over ~256 MB (a short run or odd columns under a wide kept
    dim; columns of 4-byte elements that wide are ReduceOuter's): staged with a block an SM at least,
    the splits' combine within STAGE_MAX_COMBINE_TRIPS rounds over its two levels. A state keeps
    ReduceOuter where that is the other way (policy.py)."""
    shape = ((256 << 20) // (itemsize * int(np.prod(inner))),) + inner
    cfg = plan(shape, axes, itemsize=itemsize)
    per_round = cfg.block // cfg.lanes * 16 // cfg.stage.slots_per_thread
    assert cfg.kernel == "staged" and cfg.grid[0] * cfg.num_splits >= 132
    assert 1 < cfg.split_group < cfg.num_splits
    assert _combine_rounds(cfg, per_round) <= policy.STAGE_MAX_COMBINE_TRIPS
    state = plan(shape, axes, itemsize=itemsize, state=True, acc_itemsize=12)
    assert state.kernel == ("staged" if axes[-1] == len(shape) - 1 else "outer")


def test_short_aligned_runs_are_walked_flat():
    nchw = (128, 64, 56, 56)
    for itemsize in (1, 2, 4, 8, 16):
        cfg = plan(nchw, (0, 2, 3), itemsize=itemsize)
        vec = 16 // itemsize
        assert cfg.flat_runs and cfg.red_calc[-1] == Dim(3136 // vec, vec) and cfg.chunks == 1
        assert cfg.red_calc[:-1] == cfg.red and cfg.num_seg == 128
    assert plan((4096, 8, 64), (0, 2)).lanes == 256  # run by run it was 4 lanes, 7 of 8 groups idle
    # a 16-byte element is a vector: runs of any length, lanes across the runs of a few outputs
    odd = plan((1 << 20, 3, 5), (0, 2), itemsize=16)
    assert odd.flat_runs and odd.lanes == 256 and odd.red_calc[-1] == Dim(5, 1)
    # not flat: one run per output, a misaligned start, runs of partial vectors, long runs
    assert not plan((1 << 20, 64), (1,)).flat_runs
    assert not plan(nchw, (0, 2, 3), in_misalign=4).flat_runs
    assert not plan((64, 8, 3138), (0, 2)).flat_runs
    assert not plan((4, 3, 3136), (0, 2), strides=[9412, 3137, 1]).flat_runs  # the kept stride misaligns
    # runs off the grid whose run-by-run walk idles all but one in `vec` of a step's loads: an element a load
    odd = plan((1 << 14, 5, 257), (0, 2), itemsize=8)
    assert odd.flat_runs and odd.vec == 1 and odd.lanes == 256 and odd.red_calc[-1] == Dim(257, 1)
    assert not plan((1 << 14, 5, 257), (0, 2), itemsize=8, strides=[2 * 5 * 257, 2 * 257, 2]).flat_runs
    long_runs = 1024 * policy.FLAT_RUN_MAX_STEPS * 4  # floats: that many steps of 256 lanes x 4 vectors
    assert plan((8, 64, long_runs - 4), (0, 2)).flat_runs and not plan((8, 64, long_runs), (0, 2)).flat_runs
    # the kernel's reduced calculator gets the run's vectors as its innermost dim
    cfg = plan(nchw, (0, 2, 3))
    red_at = params.POINTERS + len(params.index_calc(cfg.kept, 32))
    assert params.pack(cfg)[red_at:red_at + len(params.index_calc(cfg.red_calc, 32))] == \
        params.index_calc([Dim(128, 200704), Dim(784, 4)], 32)


def test_word_views_are_new_layouts():
    """Layout's word views (words of a reduced run, words of kept columns, ReduceOuter's shifted
    words) return new layouts in word units and leave the byte layout as it was."""
    rows = planner.Layout.of((37, 6, 64), (384, 64, 1), (2,), (6, 1), 1, 1)
    before = dataclasses.replace(rows)
    words = rows.as_words()
    assert rows == before and rows.packs_words() and words.words and not rows.words
    assert (words.itemsize, words.red, words.num_red) == (4, (Dim(16, 1),), 16)
    columns = planner.Layout.of((9, 64), (64, 1), (0,), (1,), 1, 1)
    assert columns.packs_word_columns() and columns.as_word_columns().kept == (Dim(16, 1, 1),)
    assert columns.as_word_columns().word_columns and columns.itemsize == 1
    odd = planner.Layout.of((9, 1001), (1001, 1), (0,), (1,), 1, 1)
    shifted = odd.as_shifted_words()
    assert (shifted.kept, shifted.num_out, shifted.shifted_words) == ((Dim(251, 4, 1),), 251, 1001)
    assert odd.kept == (Dim(1001, 1, 1),) and odd.num_out == 1001


def test_plan_takes_the_first_regime_that_plans():
    """planner.plan tries ReduceStaged, then ReduceInner, then ReduceOuter: short misaligned rows are
    staged, long ones walked by ReduceInner, columns read by ReduceOuter."""
    assert [r.__name__.rsplit(".", 1)[-1] for r in planner.REGIMES] == ["staged", "inner", "outer"]
    traits, budget = planner.Traits(), planner.Budget()
    for shape, axes, kernel in (((999, 3), (1,), "staged"), ((64, 4096), (1,), "inner"), ((4096, 64), (0,), "outer")):
        kept = [n for i, n in enumerate(shape) if i not in axes]
        layout = planner.Layout.of(shape, c_strides(shape), axes, c_strides(kept), 4, 4)
        assert planner.plan(layout, traits, budget, 132).kernel == kernel


@pytest.mark.parametrize("shape,axes,strides,as_words,word_strides", [
    ((4096, 65536), (1,), None, (4096, 16384), None), ((1 << 28,), (0,), None, (1 << 26,), None),
    ((128, 64, 56, 56), (0, 2, 3), None, (128, 64, 56, 14), None), ((1024, 3), (0, 1), None, (768,), None),
    ((64, 100, 8), (0, 2), None, (64, 100, 2), None), ((16, 32), (1,), [-32, 1], (16, 8), [-8, 1]),
])
def test_one_byte_logical_reductions_read_words(shape, axes, strides, as_words, word_strides):
    """A words plan is exactly the plan of the input seen as uint32: sizes, strides and offsets / 4."""
    strides = c_strides(shape) if strides is None else strides
    kept = [n for i, n in enumerate(shape) if i not in axes]
    cfg = config.plan(shape, strides, axes, c_strides(kept), 1, 1, 132, folds_words=True)
    word_axes = tuple(range(len(as_words))) if len(as_words) < len(shape) else axes
    expect = config.plan(as_words, word_strides or c_strides(as_words), word_axes, c_strides(kept), 4, 1, 132)
    assert cfg.words and cfg == dataclasses.replace(expect, words=True)


@pytest.mark.parametrize("shape,axes,strides,misalign", [
    ((4096, 66), (1,), None, 0),  # runs of 66 bytes: words would cross rows
    ((4096, 64), (1,), None, 2),  # base off the 4-byte grid
    ((64, 66, 8), (0, 2), [66 * 8, 8, 1], 0),  # runs of 8, but 66 * 8 % 4 == 0 and 8 % 4 == 0: packs
    ((64, 3, 8), (0, 2), [27, 9, 1], 0),  # strides of 9 bytes
    ((4096, 64), (0,), None, 0),  # the kept dim is innermost: a word spans 4 outputs
    ((2, 4), (1,), [1, 2], 0),  # the kept dim is innermost (stride 1 byte)
    ((16, 32), (1,), [32, -1], 0),  # reversed bytes
])
def test_words_only_where_they_stay_inside_a_run(shape, axes, strides, misalign):
    strides = c_strides(shape) if strides is None else strides
    kept = [n for i, n in enumerate(shape) if i not in axes]
    cfg = config.plan(shape, strides, axes, c_strides(kept), 1, 1, 132, in_misalign=misalign, folds_words=True)
    assert cfg.words == (shape == (64, 66, 8))
    assert not config.plan(shape, strides, axes, c_strides(kept), 2, 2, 132, folds_words=True).words


@pytest.mark.parametrize("shape", [(524281, 2), (270336, 2), (442368, 1), (540672, 1), (1 << 31, 2)])
def test_grid_within_limits_for_the_row_dropping_shapes(shape):
    cfg = plan(shape, (0,), itemsize=2)
    assert cfg.grid[0] <= policy.MAX_GRID_X and cfg.grid[1] <= policy.MAX_GRID_Y
    rows_covered = cfg.rows_per_split * cfg.num_splits if cfg.kernel == "outer" else None
    if rows_covered is not None:
        assert rows_covered >= shape[0]


def test_index_width():
    assert plan((1024, 1024), (0,)).index_bits == 32
    assert plan((1 << 16, (1 << 15) + 3), (0,), itemsize=1).index_bits == 64
    assert plan((3, 1 << 31), (1,), itemsize=1).index_bits == 64


@given(d=st.integers(1, 2**31 - 1), n=st.integers(0, 2**31 - 1))
def test_fast_divmod_magic(d, n):
    magic = params.fast_divmod_magic(d)
    mul, shift = magic & 0xFFFFFFFF, magic >> 32
    assert mul < 2**32
    q = (((n * mul) >> 32) + n) >> shift
    assert q == n // d


def test_fast_divmod_edges():
    for d in [1, 2, 3, 7, 641, 2**16 + 1, 2**30, 2**31 - 1]:
        for n in [0, 1, d - 1, d, d + 1, 2**31 - 1, 2**31 - 2]:
            magic = params.fast_divmod_magic(d)
            assert ((((n * (magic & 0xFFFFFFFF)) >> 32) + n) >> (magic >> 32)) == n // d


def _check_invariants(shape, axes, sm_count):
    cfg = plan(shape, axes, sm_count=sm_count)
    assert cfg.block % 32 == 0
    # lanes divide the block, but for staged columns a thread each (more than half a warp, at most half a
    # block) and ReduceOuter's ragged rows of threads (one tile of every column vector, at most a block;
    # outer._ragged_lanes)
    ragged = cfg.kernel == "staged" and not cfg.stage.lanes_adjacent and 16 < cfg.lanes <= cfg.block // 2
    ragged_rows = (cfg.kernel == "outer" and cfg.lanes <= cfg.block and cfg.col_tiles == 1
                   and cfg.lanes == -(-cfg.inner.size // cfg.vec))
    assert cfg.block % cfg.lanes == 0 or ragged or ragged_rows
    assert 1 <= cfg.grid[0] <= policy.MAX_GRID_X and 1 <= cfg.grid[1] <= policy.MAX_GRID_Y
    assert cfg.num_out * cfg.num_red == int(np.prod(shape))
    if cfg.num_splits > 1:  # split launches never grid-stride over outputs
        per_block = cfg.block // cfg.lanes if cfg.kernel == "inner" else 1
        # (the units a block column takes: outputs, column tiles, staged output tiles)
        units = cfg.num_out if cfg.kernel == "inner" else cfg.num_tiles if cfg.kernel == "outer" else cfg.stage.num_tiles
        assert cfg.grid[0] * per_block >= units
    if cfg.kernel == "outer" and cfg.prefetch:  # a grid of resident blocks, each walking several tiles
        assert cfg.num_splits == 1 and cfg.grid[0] * policy.OUTER_PREFETCH_MIN_TILES <= cfg.num_tiles
    if cfg.kernel == "outer" and cfg.stacked:  # a row of threads a tile, every row of it in a thread's
        assert cfg.num_splits == 1 and not cfg.prefetch and cfg.ny == cfg.num_red >= 2 and cfg.block // cfg.lanes >= 2
        assert cfg.grid[0] == min(-(-cfg.num_tiles // (cfg.block // cfg.lanes)), policy.MAX_GRID_X)
    return cfg


@given(shape=st.lists(st.integers(1, 5000), min_size=1, max_size=4), data=st.data())
def test_plan_invariants(shape, data):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    _check_invariants(shape, axes, data.draw(st.sampled_from([1, 8, 132])))


def test_plan_invariants_hold_for_ragged_rows_of_threads_over_split_columns():
    """The full tier's draw that found the invariant stale (ReduceOuter's ragged rows came after it):
    148 float32 columns over 217 rows on one SM, rows of 37 threads, split three ways."""
    cfg = _check_invariants([1, 217, 148], (1,), 1)
    assert cfg.kernel == "outer" and cfg.lanes == 37 and cfg.num_splits == 3


def test_size_one_reduced_dims_keep_vector_loads():
    # (N, 1) over axis 1 is a map: the reduced dim's stride is never stepped, so 16-byte loads stay
    cfg = plan((1 << 20, 1), (1,))
    assert cfg.kernel == "outer" and cfg.vec_in and cfg.vec == 4


#: A complex64 Welford state over few rows under kept columns (8-byte elements, 48-byte state).
_STATE8 = dict(itemsize=8, state=True, acc_itemsize=48)


@pytest.mark.parametrize("blocks_per_sm", [1, 3, 8])
def test_few_row_tiles_prefetch_over_a_grid_of_resident_blocks(blocks_per_sm):
    """A state's tiles of 5 rows under 129 columns (each tile one step of its rows): over more than
    OUTER_PREFETCH_MIN_TILES tiles a resident block, ReduceOuter loads each block's next tile while
    it folds this one, on a grid of one wave of blocks; below it, a tile a block, as before."""
    resident = 132 * blocks_per_sm
    many = policy.OUTER_PREFETCH_MIN_TILES * resident
    cfg = plan((many, 5, 129), (1,), blocks_per_sm=blocks_per_sm, **_STATE8)
    assert cfg.kernel == "outer" and cfg.prefetch and cfg.grid == (resident, 1) and cfg.num_tiles == many
    assert 5 <= cfg.block // cfg.lanes * cfg.ny  # (the tile's rows: one step)
    few = plan((many - 1, 5, 129), (1,), blocks_per_sm=blocks_per_sm, **_STATE8)
    assert not few.prefetch and few.grid == (few.num_tiles, 1)


@pytest.mark.parametrize("shape,axes,kw", [
    ((1 << 16, 200, 129), (1,), _STATE8),  # rows of more than one step
    ((8, 1 << 16, 16), (1,), _STATE8),  # few tiles: split
    ((1 << 22, 1), (1,), _STATE8),  # one row: a map (OneRow)
    ((1 << 16, 8, 256), (1,), _STATE8),  # 16 KiB a tile: its loads keep a block busy alone
    ((1 << 16, 5, 129), (1,), dict(_STATE8, indexed=True)),  # an index a row: its tile would double too
    ((1 << 16, 3, 256), (1,), dict(itemsize=16, acc_itemsize=16)),  # a scalar's short fold
])
def test_prefetch_only_for_a_states_small_tiles_of_one_step_in_an_unsplit_walk(shape, axes, kw):
    cfg = plan(shape, axes, blocks_per_sm=3, **kw)
    assert cfg.kernel == "outer" and not cfg.prefetch, cfg


@pytest.mark.parametrize("shape,kw,rows", [
    ((1 << 18, 2, 128), {}, 8),  # float32 sums: 32 threads wide, 8 rows of threads, a tile each
    ((1 << 16, 8, 128), {}, 8),  # 8 rows: a thread's tile of 32 elements holds them
    ((1 << 16, 3, 5), dict(itemsize=16, acc_itemsize=16), 51),  # complex128 columns: ragged rows of 5 threads
    ((1 << 16, 3, 256), dict(state=True, acc_itemsize=32), 2),  # a state: no combine of its partial states
])
def test_few_rows_under_narrow_columns_stack_a_tile_a_row_of_threads(shape, kw, rows):
    """Where a thread's tile holds every reduced row and a block several rows of threads,
    ReduceOuter's rows of threads each take a tile of their own (the stacked walk): the tile's rows
    exactly, a grid of the tiles' rows of threads, no split, over few tiles as over many."""
    cfg = plan(shape, (1,), **kw)
    assert cfg.kernel == "outer" and cfg.stacked and cfg.ny == shape[1] and cfg.block // cfg.lanes == rows, cfg
    assert cfg.num_splits == 1 and cfg.grid == (-(-cfg.num_tiles // rows), 1) and not cfg.prefetch
    few = plan((3,) + shape[1:], (1,), **kw)
    assert _regime(few) == "stacked" and few.grid == (-(-few.num_tiles // rows), 1), few


@pytest.mark.parametrize("itemsize,kw,regime", [
    (4, {}, "stacked"), (8, {}, "stacked"), (8, dict(complex_acc=True, acc_itemsize=16), "stacked"),
    (2, dict(state=True, acc_itemsize=32), "stacked"),  # a float16 state
    (2, {}, "staged"), (1, {}, "staged"),  # narrower elements: under a line a warp's load
    (1, dict(folds_words=True, word_columns=True), "staged"),  # 1-byte word columns (W = 12, 28: words)
])
def test_columns_off_the_grid_stack_elements_of_4_bytes_or_a_state(itemsize, kw, regime):
    """Columns off the 16-byte grid (a load an element) take ReduceOuter's stacked walk for elements
    of OUTER_STACK_ELEMENT_MIN_BYTES or more and for states; narrower elements, and 1-byte word
    columns, stay staged, over few rows and many."""
    words = kw.get("word_columns", False)
    for rows, width in ((2, 12 if words else 13), (3, 28 if words else 29), (24, 12 if words else 5)):
        shape = ((64 << 20) // (rows * width * itemsize), rows, width)
        assert _regime(plan(shape, (1,), itemsize=itemsize, **kw)) == regime, (shape, itemsize, kw)


@pytest.mark.parametrize("shape,kw", [
    ((1 << 16, 16, 128), {}),  # 16 float32 rows: more than a thread's tile of 32 elements
    ((1 << 16, 5, 128), dict(itemsize=2)),  # 5 float16 rows of 8-element vectors
    ((1 << 16, 3, 4096), {}),  # a row of threads over the columns: nothing to stack
    ((1 << 20, 1, 128), {}),  # one row: a map (OneRow)
])
def test_no_stack_where_a_thread_cannot_hold_the_rows_or_a_block_has_one_row_of_threads(shape, kw):
    cfg = plan(shape, (1,), **kw)
    assert _regime(cfg) != "stacked", cfg


@pytest.mark.parametrize("rows", [1, 2, 3, 5])
def test_column_tiles_hold_no_more_rows_than_are_reduced(rows):
    cfg = plan((rows, 1 << 20), (0,))
    assert cfg.kernel == "outer" and cfg.ny == min(1 << (rows - 1).bit_length(), policy.MAX_TILE_ROWS)


def test_index_strides_follow_the_logical_order():
    """Arg-reductions: a transposed input's reduced dims stay apart (memory order is not the index
    order), a flipped dim counts down from its end, and a C-order input merges as before."""
    t = config.plan((300, 200), (1, 300), (0, 1), (), 4, 8, 132, indexed=True)
    assert t.kernel == "inner" and t.red == (Dim(200, 300, 1),) and t.inner == Dim(300, 1, 200)
    assert config.plan((300, 200), (1, 300), (0, 1), (), 4, 8, 132).inner.size == 60000  # merged without
    f = config.plan((1000,), (-1,), (0,), (), 4, 8, 132, indexed=True)
    assert f.in_offset == -999 and f.index_offset == 999 and f.inner.out_stride == -1
    c = config.plan((64, 1000), (1000, 1), (0, 1), (), 4, 8, 132, indexed=True)
    assert c.inner == Dim(64000, 1, 1) and c.index_offset == 0


def test_a_state_gets_a_block_per_output_only_over_several_steps():
    """Rows of one block step: a block each for a scalar, a warp each for a struct state, whose
    block-wide combine would be paid per row; long rows keep their block either way."""
    assert plan((65536, 4096), (1,)).lanes == policy.BLOCK_THREADS
    assert plan((65536, 4096), (1,), acc_itemsize=16, state=True).lanes == policy.WARP_SIZE
    assert plan((4096, 65536), (1,), acc_itemsize=16, state=True).lanes == policy.BLOCK_THREADS
    assert plan((4096, 65536), (1,)).min_blocks == 0
    assert plan((4096, 65536), (1,), acc_itemsize=16, state=True).min_blocks == policy.INNER_MIN_BLOCKS


@pytest.mark.parametrize("shape,itemsize,acc,kernel", [
    ((349525, 3, 128), 2, 16, "stacked"),  # an argmax's: 32 threads wide, 1 of 8 rows of threads busy
    ((262144, 2, 128), 4, 32, "stacked"),  # float32 var: 64 threads wide, 1 of 4 rows busy
    ((87381, 3, 256), 4, 32, "stacked"),  # 2 rows of 128 threads, 1 busy
    ((4000, 3, 256), 4, 32, "stacked"),  # ... over few tiles too
    ((87381, 3, 512), 2, 32, "outer"),  # float16 var: one row of 256 threads, all busy
    ((2236962, 3, 5), 8, 64, "stacked"),  # complex64 var: columns off the grid, a state's: stacked
    ((344148, 3, 65), 8, 64, "stacked"),  # ... 65 threads wide
    ((43018, 60, 13), 8, 64, "staged"),  # ... 60 rows: 0.41 busy (STAGE_WIDE_OUTER_BUSY)
    ((43018, 60, 32), 8, 64, "outer"),  # ... 32 columns: all 32 threads wide busy, 8 of 8 rows
    ((11184, 1000, 3), 8, 64, "outer"),
], ids=str)
def test_state_columns_are_staged_where_the_outer_block_would_idle(shape, itemsize, acc, kernel):
    """A state's kept columns over a few reduced rows: ReduceOuter's stacked walk where a thread's
    tile holds every row (outer._stacked), else staged where ReduceOuter's block would leave most of
    its threads without a column or a row (outer.busy_share), else ReduceOuter's shared tiles. A
    state wider than STAGE_MAX_ACC_BYTES (complex var) is staged a slot a thread."""
    cfg = plan(shape, (1,), itemsize=itemsize, state=True, acc_itemsize=acc)
    assert _regime(cfg) == kernel, cfg
    if kernel == "staged":
        wide = acc > policy.STAGE_MAX_ACC_BYTES
        assert not cfg.stage.lanes_adjacent and (cfg.stage.slots_per_thread == 1 or not wide)


@pytest.mark.parametrize("itemsize", [2, 4])
def test_columns_of_few_rows_take_a_wide_row_of_threads(itemsize):
    """ReduceOuter: where the reduced rows are too few for each row of threads to walk COL_ROW_STEPS
    steps, the threads stand side by side instead (7 rows under 2048 columns: one row of 256
    threads walks all 7); hundreds of rows keep a warp's width and rows of threads."""
    for shape, axes in [((4681, 7, 2048), (1,)), ((64, 1 << 22), (0,)), ((409, 40, 8192), (1,))]:
        cfg = plan(shape, axes, itemsize=itemsize)
        assert cfg.kernel == "outer" and cfg.lanes == policy.BLOCK_THREADS, shape
    cfg = plan((256, 1024, 256), (1,), itemsize=itemsize)
    assert cfg.kernel == "outer" and cfg.lanes == policy.MAX_COL_THREADS


@pytest.mark.parametrize("shape,itemsize,kernel", [
    ((349525, 3, 128), 2, "stacked"), ((131072, 2, 256), 4, "stacked"), ((52428, 5, 256), 4, "stacked"),
    ((65536, 2, 256), 8, "stacked"), ((86037, 3, 65), 16, "stacked"), ((43690, 3, 1024), 2, "stacked"),
    ((87381, 3, 1024), 1, "stacked"),  # a bool `any`, read as words
    ((21845, 12, 512), 2, "staged"),  # 12 rows of 8 float16 columns: more than a thread's tile holds
    ((4000, 3, 128), 2, "stacked"), ((2000, 2, 256), 4, "stacked"),  # few tiles
    ((65536, 2, 512), 4, "stacked"), ((65536, 2, 1024), 2, "stacked"),  # wider columns, rows of threads to spare
    ((16384, 16, 512), 2, "outer"), ((262144, 256), 4, "outer"), ((65536, 2, 4096), 4, "outer"),
], ids=str)
def test_aligned_columns_over_too_few_rows_for_the_outer_tile(shape, itemsize, kernel):
    """Kept columns of at most STAGE_FEW_ROW_COLUMN_BYTES, 16-byte aligned, over fewer reduced rows
    than a step of ReduceOuter's shared tile (128 float16 columns: 16 threads wide, 64 rows deep)
    take ReduceOuter's stacked walk where a thread's tile holds every row, else they are staged. Wider columns stack too while a block holds several
    rows of threads (512 float32 columns: two rows of 128); more rows than a thread's tile, and
    columns a row of threads spans alone (4096 float32 ones), keep ReduceOuter's shared tiles."""
    words = dict(folds_words=True, word_columns=True) if itemsize == 1 else {}  # a bool `any`
    cfg = plan(shape, (len(shape) - 2,), itemsize=itemsize, **words)
    assert _regime(cfg) == kernel, cfg


def test_narrow_columns_over_two_rows_are_staged_at_half_a_vector_a_thread():
    """Columns over two reduced rows, staged in spans of half a vector a thread
    (STAGE_MIN_WHOLE_SPAN_VECTORS_PER_THREAD: the span holds their whole reductions) where a 1-byte
    element's width (3-65 columns) or a float16 state's slots (129-255 columns, wider than a block's
    row of threads) leave no whole vector: ReduceOuter would take a block an outer index for 34-260
    elements. A state's 3-65 columns take ReduceOuter's stacked walk instead. Spans that reduce over
    stages keep a vector a thread (4095 odd 1-byte columns over 4M rows: ReduceOuter), and a span of
    7 x 7 floats stays too small."""
    cases = [(w, 1, kw) for w in (3, 17, 65) for kw in (dict(folds_words=True, word_columns=True), {})]
    cases += [(w, 2, dict(state=True, acc_itemsize=32)) for w in (129, 255)]
    for w, itemsize, kw in cases:
        shape = ((64 << 20) // (2 * w * itemsize), 2, w)
        assert plan(shape, (1,), itemsize=itemsize, **kw).kernel == "staged", (w, itemsize, kw)
    for w in (3, 17, 65):
        for itemsize, kw in ((2, dict(state=True, acc_itemsize=32)), (8, dict(state=True, acc_itemsize=64))):
            assert _regime(plan(((64 << 20) // (2 * w * itemsize), 2, w), (1,), itemsize=itemsize, **kw)) == "stacked"
    assert plan((4194304, 4095), (0,), itemsize=1).kernel == "outer"
    assert plan((7, 7), (0,)).kernel != "staged"


@pytest.mark.parametrize("itemsize", [2, 4, 8])
@pytest.mark.parametrize("blocks_per_sm", [0, 3, 4, 5])
def test_a_block_per_row_only_where_the_row_fills_its_steps(itemsize, blocks_per_sm):
    """A row of a block step or more takes a block where its last, partial step leaves at most
    BLOCK_ROW_IDLE_PER_BLOCK of the steps' loads idle for every resident block (not compiled yet:
    INNER_MIN_BLOCKS), a warp elsewhere: rows of 1.25 steps leave 3/8 idle, of 1.5 and 2.25 steps
    1/4 (a block only at 4 or more resident), of 1.75 and 2.5 at most 1/6."""
    step = policy.BLOCK_THREADS * policy.MAX_TILE_ROWS * policy.LOAD_BYTES // itemsize  # elements
    resident = blocks_per_sm or policy.INNER_MIN_BLOCKS
    for steps, block in [(1, True), (1.25, False), (1.5, resident >= 4), (1.75, True), (2.25, resident >= 4),
                         (2.5, True), (16, True)]:
        width = int(step * steps)
        cfg = plan(((256 << 20) // (width * itemsize), width), (1,), itemsize=itemsize, blocks_per_sm=blocks_per_sm)
        assert cfg.kernel == "inner" and cfg.num_splits == 1
        assert cfg.lanes == (policy.BLOCK_THREADS if block else policy.WARP_SIZE), steps
    # where a warp each would leave the GPU short of blocks, a block per row all the same
    assert plan((100, int(step * 1.25)), (1,), itemsize=itemsize, blocks_per_sm=blocks_per_sm).lanes == \
        policy.BLOCK_THREADS


@pytest.mark.parametrize("blocks_per_sm", [0, 3, 4, 5])
def test_a_heavy_state_keeps_its_columns_blocks_resident(blocks_per_sm):
    """A heavy state's columns: ReduceOuter bound to HEAVY_COL_MIN_BLOCKS blocks per SM, and split
    (32 x 4096 x 1024 over axis 1: 256 tiles) to fill the waves of the blocks that are resident,
    never one wave and a bit; rows keep ReduceInner's bound, other states and scalars none."""
    resident = 132 * max(blocks_per_sm, policy.HEAVY_COL_MIN_BLOCKS)
    cfg = plan((32, 4096, 1024), (1,), acc_itemsize=8, state=True, heavy=True, blocks_per_sm=blocks_per_sm)
    blocks = cfg.num_tiles * cfg.num_splits
    assert cfg.kernel == "outer" and cfg.min_blocks == policy.HEAVY_COL_MIN_BLOCKS
    assert cfg.num_tiles < resident < blocks * 2
    assert blocks <= resident or blocks / (-(-blocks // resident) * resident) >= policy.MIN_WAVE_FILL
    light = plan((32, 4096, 1024), (1,), acc_itemsize=8, state=True, blocks_per_sm=blocks_per_sm)
    wide = plan((32, 4096, 1024), (1,), acc_itemsize=8, blocks_per_sm=blocks_per_sm)
    scalar = plan((32, 4096, 1024), (1,), blocks_per_sm=blocks_per_sm)
    assert light.kernel == wide.kernel == scalar.kernel == "outer"
    assert light.min_blocks == wide.min_blocks == scalar.min_blocks == 0
    rows = plan((4096, 65536), (1,), acc_itemsize=8, state=True, heavy=True, blocks_per_sm=blocks_per_sm)
    assert rows.kernel == "inner" and rows.min_blocks == policy.INNER_MIN_BLOCKS


def test_a_tile_of_fewer_elements_has_fewer_rows():
    """`tile_elements` (the launcher's halving of a heavy state's tile that spills) takes rows off a
    column tile, down to one; columns off the 16-byte grid keep their element-wise tile."""
    full = plan((4096, 65536), (0,), itemsize=2, acc_itemsize=8, state=True, heavy=True)
    assert (full.vec, full.ny) == (8, 4)
    for elements, ny in ((16, 2), (8, 1), (4, 1)):
        cfg = plan((4096, 65536), (0,), itemsize=2, acc_itemsize=8, state=True, heavy=True,
                   tile_elements=elements)
        assert (cfg.vec, cfg.ny, cfg.min_blocks) == (8, ny, policy.HEAVY_COL_MIN_BLOCKS)
    odd = plan((4096, 65535), (0,), itemsize=2, acc_itemsize=8, state=True, heavy=True, tile_elements=8)
    assert odd.vec == 1 and odd.ny == policy.MISALIGNED_COL_TILE_ROWS


def test_a_spilling_tile_is_made_lighter():
    """planner.lighter, the launcher's step for a bounded tile that spills: half the elements of a
    heavy state's columns and then, where they cannot shrink, the plain plan (no bound); a state's
    rows to the lower bound where they spill at all, then, over BOUNDED_MAX_LOCAL_BYTES, half their
    elements down to one row, then nothing (their bound stays). A tile within its bytes stays."""
    def planner_of(shape, axes, **traits):
        kept = [n for i, n in enumerate(shape) if i not in axes]
        layout, traits, _ = config.values(shape, c_strides(shape), axes, c_strides(kept), 2, 2, acc_itemsize=16,
                                          state=True, **traits)
        return lambda budget: planner.plan(layout, traits, budget, 132)

    columns = planner_of((4096, 65536), (0,), heavy=True)
    spill = policy.BOUNDED_MAX_LOCAL_BYTES + 1
    budget, cfg = Budget(), columns(Budget())
    assert planner.lighter(columns, cfg, budget, policy.BOUNDED_MAX_LOCAL_BYTES) is None
    seen = [(cfg.ny, cfg.min_blocks)]
    while cfg.bounded:
        budget, cfg = planner.lighter(columns, cfg, budget, spill)
        seen.append((cfg.ny, cfg.min_blocks))
    bound = policy.HEAVY_COL_MIN_BLOCKS
    assert seen == [(8, bound), (4, bound), (2, bound), (1, bound), (8, 0)]
    assert budget == Budget(min_blocks=0)

    rows = planner_of((4096, 65536), (1,))
    assert planner.lighter(rows, rows(Budget()), Budget(), 0) is None
    budget, cfg = Budget(), rows(Budget())
    seen = [(cfg.vec, cfg.ny, cfg.min_blocks)]
    while (after := planner.lighter(rows, cfg, budget, spill)) is not None:
        budget, cfg = after
        seen.append((cfg.vec, cfg.ny, cfg.min_blocks))
        assert cfg.kernel == "inner" and cfg.bounded
    low, high = policy.INNER_SPILL_MIN_BLOCKS, policy.INNER_MIN_BLOCKS
    assert seen == [(8, 4, high), (8, 4, low), (8, 2, low), (8, 1, low)]
    # a spill within BOUNDED_MAX_LOCAL_BYTES lowers the bound and keeps the tile
    budget, cfg = planner.lighter(rows, rows(Budget()), Budget(), 1)
    assert (cfg.ny, cfg.min_blocks) == (4, low) and planner.lighter(rows, cfg, budget, 1) is None


@pytest.mark.parametrize("acc_itemsize,state", [(4, False), (8, False), (16, True)])
@pytest.mark.parametrize("shape,axes,kernel", [((104044, 5, 129), (1,), "staged"), ((32, 4096, 1024), (1,), "outer"),
                                               ((4096, 65536), (1,), "inner")])
def test_a_kernel_with_few_blocks_resident_is_offered_raised_bounds(acc_itemsize, state, shape, axes, kernel):
    """planner.raised_bounds: for a plan with no launch bound whose kernel allows `occupancy`
    blocks an SM, the bounds from RAISED_MIN_BLOCKS down to one above it (none at or above it);
    none for a plan the policy bounds or a budget that has its bound. A raised budget plans the
    same launch with that bound."""
    kept = [n for i, n in enumerate(shape) if i not in axes]
    layout, traits, _ = config.values(shape, c_strides(shape), axes, c_strides(kept), 4, 4,
                                      acc_itemsize=acc_itemsize, state=state)
    make = lambda budget: planner.plan(layout, traits, budget, 132)
    cfg = make(Budget())
    assert cfg.kernel == kernel
    if cfg.bounded:  # a state's rows: the policy's bound, checked by planner.lighter instead
        assert kernel == "inner" and state and planner.raised_bounds(cfg, Budget(), 1) == ()
        return
    top = policy.RAISED_MIN_BLOCKS
    for occupancy in range(1, top + 3):
        assert planner.raised_bounds(cfg, Budget(), occupancy) == tuple(range(top, occupancy, -1))
    assert planner.raised_bounds(cfg, Budget(), top - 2) == (top, top - 1)
    for bound in (0, top):
        assert planner.raised_bounds(make(Budget(min_blocks=bound)), Budget(min_blocks=bound), 1) == ()
    raised = make(Budget(min_blocks=top - 1))
    assert raised.bounded and dataclasses.replace(raised, min_blocks=0) == cfg


def test_a_bound_for_one_kernel_does_not_pass_to_another_at_the_real_occupancy():
    """planner.at_occupancy: the re-plan with the compiled kernel's occupancy keeps the budget's
    bound while the kernel stays (a raised staged span); where the occupancy changes the kernel
    ((270336, 4) over 1: staged at the policy's estimate, ReduceInner at 4 blocks), the new kernel
    takes the policy's bound, none for a sum's rows."""
    def maker(shape, axes):
        kept = [n for i, n in enumerate(shape) if i not in axes]
        layout, traits, _ = config.values(shape, c_strides(shape), axes, c_strides(kept), 4, 4, acc_itemsize=8)
        return lambda budget: planner.plan(layout, traits, budget, 132)

    raised = Budget(min_blocks=policy.RAISED_MIN_BLOCKS)
    stays = maker((45191, 5, 9, 33), (0, 2))
    cfg = stays(raised)
    again = planner.at_occupancy(stays, cfg, raised, policy.RAISED_MIN_BLOCKS)
    assert again.kernel == cfg.kernel == "staged" and again.min_blocks == policy.RAISED_MIN_BLOCKS
    moves = maker((270336, 4), (1,))
    cfg = moves(raised)
    assert cfg.kernel == "staged" and moves(dataclasses.replace(raised, blocks_per_sm=4)).kernel == "inner"
    again = planner.at_occupancy(moves, cfg, raised, 4)
    assert again.kernel == "inner" and not again.bounded


@pytest.mark.parametrize("itemsize,acc_itemsize,vec", [(2, 4, 8), (2, 16, 4), (2, 32, 2), (4, 8, 4), (4, 32, 2)])
def test_column_accumulators_are_capped_in_bytes(itemsize, acc_itemsize, vec):
    cfg = plan((4096, 65536), (0,), itemsize=itemsize, acc_itemsize=acc_itemsize, state=acc_itemsize > 8)
    assert cfg.kernel == "outer" and cfg.vec == vec


@pytest.mark.parametrize("blocks_per_sm", [2, 3, 4, 8])
def test_column_tiles_beyond_one_wave_split_to_fill_the_last(blocks_per_sm):
    """512 column tiles: one wave at 4 or more resident blocks per SM, two nearly full waves at 2
    (no split either way); at 3, 1.3 waves, so the rows split until the last wave runs at least
    MIN_WAVE_FILL full."""
    cfg = plan((4096, 65536), (0,), blocks_per_sm=blocks_per_sm)
    resident = 132 * blocks_per_sm

    def fill(blocks):
        return blocks / (-(-blocks // resident) * resident)

    assert cfg.num_tiles == 512
    assert (cfg.num_splits > 1) == (blocks_per_sm == 3)
    blocks = cfg.num_tiles * cfg.num_splits
    assert blocks <= resident or fill(blocks) >= policy.MIN_WAVE_FILL


@pytest.mark.parametrize("itemsize,acc_itemsize", [(1, 8), (2, 4), (4, 4), (4, 16), (4, 24), (8, 8)])
def test_short_runs_side_by_side_within_their_bounds(itemsize, acc_itemsize):
    """A thread folding whole short runs alone takes NY of them side by side (staged), or ROWS of
    them (ReduceInner, aligned runs of whole vectors): a power of two, their elements and
    accumulators within the policy's bounds, few runs folded twice; the widths where several fit
    get several."""
    several = set()
    for width in range(1, 41):
        for rows in (20000, 1000, 77):
            cfg = plan((rows, width), (1,), itemsize=itemsize, acc_itemsize=acc_itemsize)
            if cfg.kernel == "inner" and cfg.rows > 1:
                several.add(width)
                assert cfg.rows & (cfg.rows - 1) == 0 and cfg.rows * cfg.ny <= policy.SHORT_ROW_VECTORS
                assert width * itemsize == cfg.ny * 16 and cfg.lanes == 1 and cfg.num_splits == 1
            st = cfg.stage if cfg.kernel == "staged" else None
            if st is None or not st.direct or cfg.lanes != cfg.block or len(st.folds) != 1:
                continue
            ny = cfg.ny
            assert ny & (ny - 1) == 0 and 1 <= ny <= policy.STAGE_DIRECT_ROWS
            if ny > 1:
                several.add(width)
                assert ny * st.num_folds <= policy.STAGE_DIRECT_FOLDS
                assert ny * acc_itemsize <= policy.STAGE_DIRECT_ACC_BYTES
                groups = sum(-(-(st.num_slots - t) // (cfg.block * ny)) for t in range(min(st.num_slots, cfg.block)))
                assert groups * ny <= st.num_slots * (1 + policy.STAGE_DIRECT_REFOLDS)
    if acc_itemsize * 2 <= policy.STAGE_DIRECT_ACC_BYTES:
        assert several and max(several) <= policy.STAGE_DIRECT_FOLDS // 2
    else:
        assert not several


@pytest.mark.parametrize("itemsize", [1, 2, 4])
def test_a_thread_holds_at_most_the_policys_slots(itemsize):
    """A staged tile of kept columns gives a thread at most STAGE_MAX_SLOTS outputs, a state's
    STAGE_MAX_STATE_SLOTS; the few-row columns here reach those bounds."""
    reached = set()
    for inner in ((2, 128), (3, 256), (3, 33), (3, 129), (8, 128)):
        shape = ((64 << 20) // (itemsize * int(np.prod(inner))),) + inner
        for state, most in ((False, policy.STAGE_MAX_SLOTS), (True, policy.STAGE_MAX_STATE_SLOTS)):
            kw = dict(state=True, acc_itemsize=24) if state else {}
            cfg = plan(shape, (1,), itemsize=itemsize, **kw)
            if cfg.kernel != "staged" or not cfg.stage.slots_per_thread:
                continue
            assert cfg.stage.slots_per_thread <= most
            if cfg.stage.slots_per_thread == most:
                reached.add(state)
    assert reached == {False, True} if itemsize > 1 else False in reached


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_few_slots_of_several_dim_folds_take_lanes_to_fill_the_block(itemsize):
    """A direct staged span whose slots each fold several dims (an index calculator an element)
    gives each scalar slot lanes until the slots fill the block; a slot of one strided run, or a
    state, only as far as STAGE_DIRECT_RUN_FILL times the slots fill it, but a scalar's run of
    elements of 4 bytes or more until they fill it or a lane folds only STAGE_RUN_LANE_ELEMENTS
    (odd runs here: no bank rule's minimum)."""
    seen = set()
    cases = [(((64 << 20) // (itemsize * int(np.prod(inner))),) + inner, axes)
             for inner, axes in (((5, 9, 33), (1, 3)), ((64, 7, 7), (1, 3)), ((4, 5, 6, 7), (1, 3, 4)),
                                 ((6, 10, 14), (1, 3)), ((33,), (1,)), ((127,), (1,)))]
    cases.append(((5, 9, 33), (0, 2)))  # the span's row dim is a reduced dim of the folds
    for shape, axes in cases:
        for state in (False, True):
            kw = dict(state=True, acc_itemsize=24) if state else {}
            cfg = plan(shape, axes, itemsize=itemsize, **kw)
            st = cfg.stage if cfg.kernel == "staged" else None
            if st is None or not st.direct:
                continue
            lanes = cfg.block // cfg.lanes  # on one slot's folds
            several = len(st.folds) > 1 and not state
            wide = not several and not state and itemsize >= 4
            seen.add((several, wide))
            share = 1 if several or wide else policy.STAGE_DIRECT_RUN_FILL
            run = shape[-1] if axes[-1] == len(shape) - 1 else 1
            assert lanes == 1 or st.num_slots * lanes * share <= cfg.block
            assert not wide or lanes == 1 or lanes * policy.STAGE_RUN_LANE_ELEMENTS <= run
            assert (lanes == policy.WARP_SIZE or st.num_slots * lanes * share * 2 > cfg.block
                    or wide and lanes * 2 * policy.STAGE_RUN_LANE_ELEMENTS > run)
    assert {(False, False), (True, False)} <= seen and ((False, True) in seen) == (itemsize >= 4)


@pytest.mark.parametrize("blocks_per_sm", [0, 2, 4])
def test_inputs_off_the_grid_take_short_tiles_on_warp_groups(blocks_per_sm):
    """A transform of several inputs, one off the first one's 16-byte grid (x[1:] beside x[:-1]):
    groups of a warp or more share its chunks between lanes (kps::ReadDataVecLanes) in tiles of
    INPUTS_TILE_ROWS rows, split as far as INPUTS_SPLIT_BLOCKS_PER_SM; narrower groups (short rows),
    and inputs on one grid, plan as before. A shift common to the inputs off the grid goes to the
    kernel only where its lanes share chunks; the rest of the plan is the one a shift read at run
    time gets."""
    def shared(cfg):  # (only ReduceInner's lanes share chunks)
        return cfg.kernel == "inner" and cfg.shared_lanes

    def shift(cfg):
        return cfg.input_shift if cfg.kernel == "inner" else 0

    def both(shape, strides, axes):
        kept = [n for i, n in enumerate(shape) if i not in axes]
        on, off, shifted = (config.plan(shape, strides, axes, c_strides(kept), 4, 4, 132, blocks_per_sm=blocks_per_sm,
                                        inputs=2, inputs_off_grid=o, inputs_shift=s)
                            for o, s in ((False, 0), (True, 0), (True, 12)))
        assert shift(shifted) == (12 if shared(off) else 0) and shift(off) == shift(on) == 0
        assert (dataclasses.replace(shifted, input_shift=0) if shifted.kernel == "inner" else shifted) == off
        return on, off

    for shape, strides, axes in [((89_999_999,), (1,), (0,)), ((8192, 4096), (4097, 1), (1,)),
                                 ((262144, 258), (259, 1), (1,))]:
        on, off = both(shape, strides, axes)
        assert on.ny == policy.MAX_TILE_ROWS and off.ny == policy.INPUTS_TILE_ROWS
        assert off.lanes >= policy.WARP_SIZE and off.kernel == on.kernel == "inner"
        assert off.shared_lanes and not on.shared_lanes
        limit = 132 * min(policy.INPUTS_SPLIT_BLOCKS_PER_SM, blocks_per_sm or policy.BLOCKS_PER_SM)
        assert off.grid[0] * off.num_splits <= max(limit, off.grid[0])
    on, off = both((89_999_999,), (1,), (0,))
    if (blocks_per_sm or policy.BLOCKS_PER_SM) > policy.INNER_SPLIT_BLOCKS_PER_SM:
        assert off.num_splits > on.num_splits
    on, off = both((1 << 20, 65), (66, 1), (1,))  # rows of 65: a group of 8 lanes
    assert off == on and off.lanes < policy.WARP_SIZE and not off.shared_lanes
    assert not any(shared(c) for c in both((1 << 16, 4096), c_strides((1 << 16, 4096)), (0,)))  # columns


@pytest.mark.parametrize("itemsize", [2, 4, 8, 16])
def test_short_aligned_rows_fold_several_a_thread(itemsize):
    """Rows of 1 to 4 whole 16-byte vectors on the grid fold ROWS a thread in ReduceInner (a tile of
    the row's vectors), SHORT_ROW_VECTORS loads in flight at most (a state's no more than
    SHORT_ROW_ACC_BYTES of its accumulators hold), while the grid keeps a wave of blocks; rows
    off the grid, of bytes or with segments do not."""
    for vectors in (1, 2, 3, 4):
        width = vectors * 16 // itemsize
        if width < 2:
            continue
        cfg = plan(((1 << 28) // (width * itemsize), width), (1,), itemsize=itemsize, acc_itemsize=8)
        assert cfg.kernel == "inner" and cfg.lanes == 1 and cfg.ny == vectors, cfg
        side = 2 if vectors == 3 else policy.SHORT_ROW_VECTORS // vectors  # (a power of two)
        assert cfg.rows == side and cfg.grid[0] * cfg.block * cfg.rows >= cfg.num_out
        mid = plan((3 * 132 * 8 * 256, width), (1,), itemsize=itemsize, acc_itemsize=8)  # three waves of rows
        assert mid.kernel == "inner" and mid.rows == min(2, side) and mid.ny == vectors, mid
        few = plan((132 * 256, width), (1,), itemsize=itemsize, acc_itemsize=8)
        assert few.kernel == "staged" if vectors == 1 else few.rows == 1 and few.ny == 1 << (vectors - 1).bit_length(), few
        for acc in (16, 32, 64):  # argmax's, a float var's, a complex var's
            state = plan(((1 << 28) // (width * itemsize), width), (1,), itemsize=itemsize, acc_itemsize=acc,
                         state=True)
            assert state.kernel == "inner" and state.rows == min(cfg.rows, policy.SHORT_ROW_ACC_BYTES // acc)
        for other in (plan((1 << 20, width), (1,), itemsize=itemsize, acc_itemsize=8, in_misalign=8),
                      plan((1 << 18, 4, width), (1, 2), itemsize=itemsize, acc_itemsize=8,
                           strides=[8 * width, 2 * width, 1])):
            assert getattr(other, "rows", 1) == 1, other
    assert getattr(plan((1 << 22, 16), (1,), itemsize=1, acc_itemsize=8), "rows", 1) == 1


def test_columns_take_ragged_rows_of_threads_where_they_pay():
    """ReduceOuter takes every column in one tile of threads side by side, in rows that need not
    divide the block, where that keeps OUTER_RAGGED_MIN_GAIN times the threads busy that tiles of a
    power of two keep and each block still walks OUTER_RAGGED_MIN_STEPS steps (outer.py)."""
    def busy(cfg, vectors):
        return vectors / (cfg.col_tiles * cfg.lanes) * (cfg.block // cfg.lanes) * cfg.lanes / cfg.block

    cfg = plan((300, 256, 68), (1,))  # 17 vectors: one tile of 17 x 15 threads, not two of 32 x 8
    assert (cfg.kernel, cfg.lanes, cfg.col_tiles) == ("outer", 17, 1) and busy(cfg, 17) > 0.99
    for shape, axes in (((400, 240, 33), (1,)), ((100_000, 33), (0,))):  # complex var, a column a thread
        cfg = plan(shape, axes, itemsize=8, acc_itemsize=64, state=True)
        assert (cfg.kernel, cfg.lanes, cfg.col_tiles) == ("outer", 33, 1), shape
        steps = cfg.rows_per_split // (cfg.block // cfg.lanes * cfg.ny)
        assert steps >= policy.OUTER_RAGGED_MIN_STEPS
    # fewer rows: splits of a step or two stay in tiles of 32
    cfg = plan((40_000, 33), (0,), itemsize=8, acc_itemsize=64, state=True)
    assert cfg.lanes == 32 and cfg.col_tiles == 2
    # 66 vectors: rows of 66 keep 198 threads busy against 66 of 96 in three tiles of 32, too little
    cfg = plan((1 << 20, 132), (0,), acc_itemsize=32, state=True)
    assert cfg.kernel == "outer" and cfg.vec == 2 and policy.BLOCK_THREADS % cfg.lanes == 0
    ragged = 0
    for width in range(17, 300):  # any ragged tile: more than half a warp, at most a block, every column
        cfg = plan((1 << 20, width), (0,), itemsize=8, acc_itemsize=64, state=True)
        if cfg.kernel == "outer" and policy.BLOCK_THREADS % cfg.lanes:
            assert policy.WARP_SIZE // 2 < cfg.lanes <= policy.BLOCK_THREADS and cfg.col_tiles == 1
            assert cfg.lanes * cfg.vec >= width
            ragged += 1
    assert ragged >= 10


def test_a_wide_state_over_short_runs_of_few_outputs_is_staged():
    """Complex Welford's 64-byte state over many short reduced runs of a few outputs is staged a
    slot a thread (ReduceInner would give each output one thread of its block), split across
    blocks; over runs longer than STAGE_WIDE_MAX_RUN_BYTES it stays with ReduceInner."""
    for shape, axes in (((100_000, 3, 5), (0, 2)), ((20_000, 3, 7, 5), (0, 1, 3))):
        cfg = plan(shape, axes, itemsize=8, acc_itemsize=64, state=True)
        assert cfg.kernel == "staged" and cfg.num_splits > 1, (shape, cfg)
        assert cfg.stage.slots_per_thread == 1 and cfg.stage.num_slots == shape[-2] and not cfg.stage.direct
    assert 200 * 8 > policy.STAGE_WIDE_MAX_RUN_BYTES
    assert plan((100_000, 3, 200), (0, 2), itemsize=8, acc_itemsize=64, state=True).kernel == "inner"


def test_runs_that_end_inside_a_sector_are_staged_in_large_inputs():
    """A scalar's reduced runs of 48 bytes (one and a half L2 sectors) under four kept outputs or more,
    over STAGE_STRADDLING_MIN_BYTES: staged, so the sector two outputs' runs share is read once; under
    fewer outputs, in smaller inputs, over runs of whole sectors, rows of one run, or for a state,
    ReduceInner's flat runs stay."""
    assert policy.STAGE_STRADDLING_RUN_BYTES == 48 and policy.SECTOR_BYTES == 32
    big = policy.STAGE_STRADDLING_MIN_BYTES
    for itemsize in (4, 8, 16):
        r = 48 // itemsize
        for k in (4, 16, 1024):
            n = -(-big // (k * r * itemsize))
            assert plan((n, k, r), (0, 2), itemsize=itemsize).kernel == "staged", (itemsize, k)
            assert plan((n - n // 4, k, r), (0, 2), itemsize=itemsize).kernel == "inner", (itemsize, k)  # (in L2)
            assert plan((n, k, r), (0, 2), itemsize=itemsize, acc_itemsize=2 * itemsize, state=True).kernel == "inner"
        n = -(-big // (3 * r * itemsize))
        assert plan((n, 3, r), (0, 2), itemsize=itemsize).kernel == "inner"  # three outputs between runs
        n = -(-big // (16 * 64))
        assert plan((n, 16, 64 // itemsize), (0, 2), itemsize=itemsize).kernel == "inner"  # two whole sectors
        n = -(-big // (16 * r * itemsize))
        assert plan((n * 16, r), (1,), itemsize=itemsize).kernel != "staged"  # rows: one run an output
    for itemsize in (1, 2):  # a span folds narrow elements slower than the second fetch costs
        n = -(-big // (16 * 48))
        assert plan((n, 16, 48 // itemsize), (0, 2), itemsize=itemsize).kernel == "inner"
