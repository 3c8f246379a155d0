"""State reductions (var, std, logsumexp, mean and variance in one call) on the GPU: every reduce path against the float64
reference, outputs poisoned first, edges, the 1e4-mean accuracy case and repeat bit-identity."""
from __future__ import annotations

import dataclasses
import itertools
import warnings

import numpy as np
import pytest

from helpers import OPS, check as check_op, data
import kps
import ops
from kernels import dispatch, launcher, planner, policy
from stats_helpers import STATS, check, check_mean_var, check_sprinkled, outliers, sprinkled

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import (FLAT_SHAPES, SHORT_ROW_SHAPES, STAGED_SHAPES, SUBSET_SHAPES, poison_pool, poisoned_like,  # noqa: E402
                      run)

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32, np.bool_)]

#: Every reduce path: rows (inner), columns (outer), splits of each, flat runs, staged spans (kept
#: columns over a few rows between kept dims among them).
PATH_SHAPES = ([((4096, 4096), (1,)), ((4096, 4096), (0,)), ((16, 1 << 20), (1,)), ((1 << 20, 16), (0,)),
                ((1 << 22,), (0,)), ((64, 32, 3000), (0, 2)), ((4099, 1), (1,))] + FLAT_SHAPES
               + STAGED_SHAPES[:8] + [((999, 3, 256), (1,)), ((1001, 5, 3, 16), (1,))]
               + [((30001, 2, 17), (1,))])  # (a state's narrow columns over two rows, staged)



def _run(name, xd, axis, keepdims=False, **kwargs):
    """Our result into a fresh array from a poisoned pool and into a poisoned out=, which must agree."""
    fn = STATS[name]
    fresh = fn(xd, axis=axis, keepdims=keepdims, **kwargs)
    poison_pool(fresh.nbytes)
    again = fn(xd, axis=axis, keepdims=keepdims, **kwargs)
    out = poisoned_like(fresh.shape, fresh.dtype)
    got = fn(xd, axis=axis, keepdims=keepdims, out=out, **kwargs)
    assert got is out
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(out))
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(again))  # bit-identical repeats
    return cp.asnumpy(fresh)


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(STATS))
def test_every_path(name, dtype, shape, axes):
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32))
    kwargs = {"ddof": 1} if name != "logsumexp" else {}
    check(name, _run(name, cp.asarray(x), axes, **kwargs), x, axes, ddof=kwargs.get("ddof", 0))


@pytest.mark.parametrize("shape,axes", SHORT_ROW_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.float16, np.float32, np.float64)], ids=lambda d: d.name)
def test_states_over_short_rows_fold_several_a_thread(dtype, shape, axes):
    """States over short rows of whole 16-byte vectors fold several rows a thread, as far as their
    accumulators allow (kernels/planner/inner.py, `short_rows`; the last group ragged, kept dims
    stepping over the rows of a 3-d layout): var, std, logsumexp, mean and variance in one call, and
    argmax as NumPy's, from a poisoned pool, repeats bit-identical."""
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))
    xd = cp.asarray(x)
    whole = shape[-1] * dtype.itemsize in (16, 32, 48, 64)
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    for op, epilogue in ((kps.WELFORD, kps.variance(1)), (kps.ARGMAX, kps.INDEX)):
        f = kps.resolve(op, kps.IDENTITY, epilogue, dtype)
        cfg = dispatch.launch_for(xd, poisoned_like(kept, f.out_dtype), axes, False, f).cfg
        rows = getattr(cfg, "rows", 1)  # (a staged plan's spans fold rows their own way)
        assert (cfg.kernel == "inner" and rows > 1) == whole, cfg
        assert rows * f.acc_dtype.itemsize <= max(policy.SHORT_ROW_ACC_BYTES, f.acc_dtype.itemsize)
    for name in STATS:
        kwargs = {"ddof": 1} if name != "logsumexp" else {}
        check(name, _run(name, xd, axes, **kwargs), x, axes, ddof=kwargs.get("ddof", 0))
    check_mean_var(tuple(cp.asnumpy(r) for r in ops.reduce_mean_var(xd, axis=axes)), x, axes)
    axis = axes[0]
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=axis)), np.argmax(x, axis=axis))


#: Few reduced rows under kept columns, a tile's rows one step of a thread's tile, over more tiles
#: than the grid's blocks: ReduceOuter loads each block's next tile while it folds this one
#: (kernels/planner/outer.py, `_prefetches`, here from one tile a block on; real rows of 16-byte
#: vectors of two elements, float16 columns a tile wide).
PREFETCH_CASES = [(np.dtype(np.float32), (300, 7, 2048), (1,)), (np.dtype(np.float16), (1200, 12, 512), (1,))]


@pytest.mark.parametrize("dtype,shape,axes", PREFETCH_CASES, ids=str)
def test_few_row_tiles_prefetched(dtype, shape, axes, monkeypatch):
    """Every state (var, std, logsumexp, nanvar), the sum, the precise sum and argmax of few-row tiles
    walked with the next tile's loads in flight, against NumPy, from poisoned outputs, repeats
    bit-identical; the variance's plan prefetches."""
    monkeypatch.setattr(policy, "OUTER_PREFETCH_MIN_TILES", 1)
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))
    xd = cp.asarray(x)
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    f = kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), dtype)
    cfg = dispatch.launch_for(xd, poisoned_like(kept, f.out_dtype), axes, False, f).cfg
    assert cfg.kernel == "outer" and cfg.prefetch and cfg.grid[0] < cfg.num_tiles, cfg
    for name in STATS:
        kwargs = {"ddof": 1} if name != "logsumexp" else {}
        check(name, _run(name, xd, axes, **kwargs), x, axes, ddof=kwargs.get("ddof", 0))
    nan = x.copy()
    nan[::3, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = cp.asnumpy(ops.reduce_nanvar(cp.asarray(nan), axis=axes))
        expect = np.nanvar(nan.astype(np.float64), axis=axes)
        np.testing.assert_allclose(got, expect, rtol=1e-3 if dtype.itemsize > 2 else 2e-2)
    for precise in (False, True):
        fresh = ops.reduce_sum(xd, axis=axes, precise=precise)
        poison_pool(fresh.nbytes)
        np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(ops.reduce_sum(xd, axis=axes, precise=precise)))
        check_op("sum", cp.asnumpy(fresh), x, axes)
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=axes[0])), np.argmax(x, axis=axes[0]))


#: Few reduced rows under narrow kept columns, each row of threads a tile of its own (kernels/planner/
#: outer.py, `_stacked`): 2 rows under 128 columns, ragged rows of 33 threads over 132 float32 columns,
#: 8 rows, the reduced dim outermost (64 of 72 columns: kept dims that do not merge), a 4-d input, and
#: columns off the 16-byte grid (5 of them, and 33 over 24 rows). (shape, axes, the last dim's slice)
STACK_CASES = [((3000, 2, 128), (1,), 128), ((1500, 3, 132), (1,), 132), ((700, 8, 64), (1,), 64),
               ((3, 3000, 72), (0,), 64), ((900, 2, 3, 16), (1,), 16),
               ((2000, 3, 5), (1,), 5), ((600, 24, 33), (1,), 33)]  # (off the 16-byte grid: a load an element)


@pytest.mark.parametrize("shape,axes,width", STACK_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)], ids=str)
def test_every_op_on_stacked_tiles(dtype, shape, axes, width):
    """The sums, products, extremes, logical ops, every state, the precise sum and argmax of tiles
    folded a row of threads each, against NumPy, from poisoned outputs, repeats bit-identical; the
    float32 sum's plan stacks."""
    rng = np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32)
    full = data(shape, dtype, "sum", rng)
    x, xd = full[..., :width], cp.asarray(full)[..., :width]
    kept = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    f = kps.resolve(kps.ADD, kps.IDENTITY, kps.NONE, dtype)
    cfg = dispatch.launch_for(xd, poisoned_like(kept, f.out_dtype), axes, False, f).cfg
    assert dtype != np.float32 or (cfg.kernel == "outer" and cfg.stacked), cfg
    for op in OPS:
        y = data(shape, dtype, op, rng)
        check_op(op, run(op, cp.asarray(y)[..., :width], axes), y[..., :width], axes)
    for name in STATS:
        kwargs = {"ddof": 1} if name != "logsumexp" else {}
        check(name, _run(name, xd, axes, **kwargs), x, axes, ddof=kwargs.get("ddof", 0))
    for precise in (False, True):
        check_op("sum", cp.asnumpy(ops.reduce_sum(xd, axis=axes, precise=precise)), x, axes)
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=axes[0])), np.argmax(x, axis=axes[0]))


#: Columns that ReduceOuter takes in ragged rows of threads (kernels/planner/outer.py, `_ragged_lanes`):
#: float32 sums in rows of 17 vectors and var in rows of 34, float64 sums and var in rows of 34; rows
#: narrower than half a warp: float32 sums in rows of 5 and 9 vectors (var 10 and 18), float64 in 5.
RAGGED_CASES = [(np.dtype(np.float32), (300, 256, 68), (1,)), (np.dtype(np.float64), (300, 256, 68), (1,)),
                (np.dtype(np.float32), (20_000, 5, 68), (0, 1)), (np.dtype(np.float32), (300_000, 20), (0,)),
                (np.dtype(np.float32), (300_000, 36), (0,)), (np.dtype(np.float64), (300_000, 10), (0,))]


@pytest.mark.parametrize("dtype,shape,axes", RAGGED_CASES, ids=str)
def test_columns_in_ragged_rows_of_threads(dtype, shape, axes):
    """ReduceOuter's threads side by side over every column in one tile, in rows that do not divide
    the block: the threads past the last whole row read and write nothing. The sum, every state and
    argmax against NumPy, from poisoned outputs, repeats bit-identical; the sum's or the variance's
    plan is ragged."""
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))
    xd = cp.asarray(x)
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    lanes = []
    for op, epilogue in ((kps.ADD, kps.NONE), (kps.WELFORD, kps.variance(0))):
        f = kps.resolve(op, kps.IDENTITY, epilogue, dtype)
        cfg = dispatch.launch_for(xd, poisoned_like(kept, f.out_dtype), axes, False, f).cfg
        lanes.append(cfg.lanes if cfg.kernel == "outer" else 0)
    assert any(n and policy.BLOCK_THREADS % n for n in lanes), lanes
    fresh = ops.reduce_sum(xd, axis=axes)
    poison_pool(fresh.nbytes)
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(ops.reduce_sum(xd, axis=axes)))
    check_op("sum", cp.asnumpy(fresh), x, axes)
    for name in STATS:
        kwargs = {"ddof": 1} if name != "logsumexp" else {}
        check(name, _run(name, xd, axes, **kwargs), x, axes, ddof=kwargs.get("ddof", 0))
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=axes[0])), np.argmax(x, axis=axes[0]))


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_mean_and_variance_from_one_call(dtype, shape, axes):
    """Two results per output, side by side, on every path: from a poisoned pool, repeated bit-identical."""
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))
    xd = cp.asarray(x)
    mean, var = ops.reduce_mean_var(xd, axis=axes, ddof=1)
    poison_pool(2 * mean.nbytes)
    again = ops.reduce_mean_var(xd, axis=axes, ddof=1)
    for first, second in zip((mean, var), again):
        np.testing.assert_array_equal(cp.asnumpy(first), cp.asnumpy(second))
    check_mean_var((cp.asnumpy(mean), cp.asnumpy(var)), x, axes, ddof=1)
    kept = ops.reduce_mean_var(xd, axis=axes, keepdims=True)
    check_mean_var(tuple(cp.asnumpy(g) for g in kept), x, axes, keepdims=True)


@pytest.mark.parametrize("shape,axes", PATH_SHAPES + SHORT_ROW_SHAPES[:2], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_infinities_nans_and_overflowing_squares_on_every_path(dtype, shape, axes):
    """var, std, nanvar, nanstd and mean_var where infinities, NaN and values whose squares overflow
    lie at random places (the first of a register tile, a fold, a merge of threads, warps, blocks
    or splits): NaN, inf and values where NumPy's are (kps/statistics.py, M2 and the finite shift)."""
    x = sprinkled(shape, dtype, axes, np.random.default_rng([len(dtype), *shape]))
    check_sprinkled(x, axes, device=cp.asarray, host=cp.asnumpy)


@pytest.mark.parametrize("shape", SUBSET_SHAPES, ids=str)
@pytest.mark.parametrize("name", list(STATS))
def test_every_axis_subset(name, shape):
    x = data(shape, np.dtype(np.float32), "sum", np.random.default_rng(len(shape)))
    for r in range(len(shape) + 1):
        for axes in itertools.combinations(range(len(shape)), r):
            check(name, _run(name, cp.asarray(x), axes), x, axes)


def test_variance_far_from_zero_to_1e_5():
    x = (np.random.default_rng(3).standard_normal((1 << 20, 8)) + 1e4).astype(np.float32)
    for axis in (None, 0, 1):
        check("var", _run("var", cp.asarray(x), axis, ddof=1), x, axis, ddof=1, rtol=1e-5)


def test_variance_with_outlying_shifts_to_1e_9():
    x = outliers()
    for axis in (None, 0, 1):
        check("var", _run("var", cp.asarray(x), axis), x, axis, rtol=1e-9)


def test_edges():
    inf, nan = np.inf, np.nan
    lse = STATS["logsumexp"]
    x = np.array([[inf, inf], [1.0, inf], [-inf, -inf], [nan, 1.0], [1e4, 1e4]], dtype=np.float32)
    check("logsumexp", cp.asnumpy(lse(cp.asarray(x), axis=1)), x, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ddof in (0, 3, 4):
            y = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
            check("var", cp.asnumpy(STATS["var"](cp.asarray(y), axis=1, ddof=ddof)), y, 1, ddof=ddof)
        empty = np.empty((3, 0), np.float32)
        check_mean_var(tuple(cp.asnumpy(g) for g in ops.reduce_mean_var(cp.asarray(empty), axis=1)), empty, 1)
        check("var", cp.asnumpy(STATS["var"](cp.asarray(empty), axis=1)), empty, 1)
        check("logsumexp", cp.asnumpy(lse(cp.asarray(empty), axis=1)), empty, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_heavy_bound_is_kept_only_where_it_does_not_spill(dtype):
    """logsumexp over columns: ReduceOuter bounded to HEAVY_COL_MIN_BLOCKS resident blocks only where
    that leaves a thread at most BOUNDED_MAX_LOCAL_BYTES of local memory (the launcher halves a
    float16 tile until it does; float32 fits at once); the launch agrees with the reference."""
    x = cp.asarray(np.random.default_rng(5).standard_normal((512, 4096)).astype(dtype))
    f = kps.resolve(kps.LOGSUMEXP, kps.IDENTITY, kps.LOG_OF_SUM, np.dtype(dtype))
    y = poisoned_like((4096,), f.out_dtype)
    launch = dispatch.launch_for(x, y, (0,), False, f)
    assert launch.cfg.kernel == "outer"
    if launch.cfg.min_blocks:
        assert launch.local_bytes() <= policy.BOUNDED_MAX_LOCAL_BYTES
        assert launch.occupancy() >= policy.HEAVY_COL_MIN_BLOCKS
    if dtype == np.float32:
        assert launch.cfg.min_blocks == policy.HEAVY_COL_MIN_BLOCKS
    got = ops.reduce_logsumexp(x, axis=0)
    ref = np.logaddexp.reduce(cp.asnumpy(x).astype(np.float64), axis=0)
    np.testing.assert_allclose(cp.asnumpy(got).astype(np.float64), ref, rtol=2e-3 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8], ids=lambda d: np.dtype(d).name)
def test_a_state_row_tile_is_halved_where_its_bound_spills(dtype, monkeypatch):
    """argmax over rows: ReduceInner bounded to INNER_MIN_BLOCKS, a thread at most
    BOUNDED_MAX_LOCAL_BYTES of local memory (a state folds an element at a time: nothing spills);
    and where every tile counts as spilling, the launcher halves it down to one row, whose result is
    still NumPy's."""
    for width, limit in ((3000, policy.BOUNDED_MAX_LOCAL_BYTES), (3001, -1)):
        monkeypatch.setattr(policy, "BOUNDED_MAX_LOCAL_BYTES", limit)
        x = data((1024, width), dtype, "sum", np.random.default_rng(width))
        xd = cp.asarray(x)
        f = kps.resolve(kps.ARGMAX, kps.IDENTITY, kps.INDEX, np.dtype(dtype))
        launch = dispatch.launch_for(xd, poisoned_like((1024,), f.out_dtype), (1,), False, f)
        assert launch.cfg.kernel == "inner" and launch.cfg.bounded
        if limit < 0:
            assert launch.cfg.ny == 1
        else:
            assert launch.local_bytes() <= limit
            if dtype == np.float32:
                assert launch.cfg.ny == policy.MAX_TILE_ROWS
        np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=1)), np.argmax(x, axis=1))


@pytest.mark.parametrize("case", [("sum", np.float32, (2000, 5, 129), (1,)), ("sum", np.float32, (2000, 5, 9, 33), (0, 2)),
                                  ("sum", np.float32, (2000, 5, 9, 33), (2,)), ("sum", np.float32, (400, 7, 2048), (1,)),
                                  ("var", np.complex64, (4000, 1001), (0,)), ("var", np.float32, (40000, 66), (0,)),
                                  ("sum", np.float64, (4000, 3, 33), (1,)), ("sum", np.complex128, (3000, 1001), (1,))],
                         ids=lambda c: f"{c[0]}-{np.dtype(c[1]).name}-{c[2]}-{c[3]}")
def test_a_raised_bound_spills_nothing(case):
    """A kernel with no launch bound of the policy's: bounded by the launcher only where its
    registers allowed fewer blocks (planner.raised_bounds), to the first bound offered that spills
    nothing and adds blocks; left unbounded only where it has RAISED_MIN_BLOCKS resident or no
    bound it was offered does both. The launch's results NumPy's."""
    name, dtype, shape, axes = case
    rng = np.random.default_rng(shape[-1])
    x = data(shape, np.float32, name, rng) + 1j * data(shape, np.float32, name, rng) if np.dtype(dtype).kind == "c" \
        else data(shape, dtype, name, rng)
    x = x.astype(dtype)
    xd = cp.asarray(x)
    op, epilogue, ours, theirs = {"sum": (kps.ADD, kps.NONE, ops.reduce_sum, np.sum),
                                  "var": (kps.WELFORD, kps.variance(0), ops.reduce_var, np.var)}[name]
    f = kps.resolve(op, kps.IDENTITY, epilogue, np.dtype(dtype))
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    launch = dispatch.launch_for(xd, poisoned_like(kept, f.out_dtype), axes, False, f)
    unbounded = launcher.Launch(dataclasses.replace(launch.cfg, min_blocks=0), f, xd.data.device_id)
    offered = planner.raised_bounds(unbounded.cfg, planner.Budget(), unbounded.occupancy())
    if launch.cfg.bounded:
        assert launch.cfg.min_blocks in offered
        assert launch.local_bytes() == 0 and launch.occupancy() > unbounded.occupancy()
    passed = offered[:offered.index(launch.cfg.min_blocks)] if launch.cfg.bounded else offered
    for bound in passed:  # every bound offered before the one taken spills or adds no block
        trial = launcher.Launch(dataclasses.replace(launch.cfg, min_blocks=bound), f, xd.data.device_id)
        assert trial.local_bytes() > 0 or trial.occupancy() <= unbounded.occupancy()
    got = cp.asnumpy(ours(xd, axis=axes))
    expect = theirs(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), axis=axes)
    np.testing.assert_allclose(got.astype(expect.dtype), expect, rtol=1e-5, atol=1e-5 * np.abs(expect).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(4096, 64), (64, 4096), (3, 100003)], ids=str)
def test_a_state_rows_bound_above_the_fallback_never_spills(shape, dtype):
    """States over rows: ReduceInner bounded to INNER_MIN_BLOCKS where that spills nothing, else to
    INNER_SPILL_MIN_BLOCKS (planner.lighter); the occupancy the bound asks for, and NumPy's results."""
    x = data(shape, dtype, "sum", np.random.default_rng(shape[1]))
    xd = cp.asarray(x)
    cases = [(kps.ARGMAX, kps.INDEX, ops.reduce_argmax, np.argmax),
             (kps.WELFORD, kps.variance(0), ops.reduce_var, np.var),
             (kps.LOGSUMEXP, kps.LOG_OF_SUM, ops.reduce_logsumexp, lambda a, axis: np.logaddexp.reduce(a, axis=axis)),
             (kps.nan.NANARGMAX, kps.INDEX, ops.reduce_nanargmax, np.nanargmax)]
    for op, epilogue, ours, theirs in cases:
        f = kps.resolve(op, kps.IDENTITY, epilogue, np.dtype(dtype))
        launch = dispatch.launch_for(xd, poisoned_like(shape[:1], f.out_dtype), (1,), False, f)
        assert launch.cfg.kernel == "inner"
        assert launch.cfg.min_blocks in (policy.INNER_MIN_BLOCKS, policy.INNER_SPILL_MIN_BLOCKS)
        if launch.cfg.min_blocks > policy.INNER_SPILL_MIN_BLOCKS:
            assert launch.local_bytes() == 0
        assert launch.occupancy() >= launch.cfg.min_blocks
        got = cp.asnumpy(ours(xd, axis=1))
        expect = theirs(x.astype(np.float64), axis=1)
        if op.indexed:
            np.testing.assert_array_equal(got, expect)
        else:
            np.testing.assert_allclose(got.astype(np.float64), expect, rtol=2e-3 if dtype == np.float16 else 1e-5)


#: Columns split over hundreds of blocks, whose split combine has two levels (kps::CombineSplits):
#: ReduceOuter over 48, 64 and 100 columns, ReduceStaged over 127 (float64's: ReduceOuter); last
#: groups shorter than the rest. (float16 over 100 columns stages in few enough splits for one level.)
TWO_LEVEL_CASES = [(np.dtype(d), shape) for d in (np.float32, np.float16, np.float64, np.int32)
                   for shape in [(65536, 48), (65536, 64), (8192, 100), (32768, 127)]
                   if not (d == np.float16 and shape[1] == 100)]


@pytest.mark.parametrize("dtype,shape", TWO_LEVEL_CASES, ids=str)
def test_a_split_combines_in_two_levels(dtype, shape):
    """The last block of each group of splits combines the group's partials, the last group those of
    the groups: sum, var and argmax (ties among the integers: the first wins across groups) against
    the reference, from a poisoned pool, repeats bit-identical."""
    x = data(shape, dtype, "sum", np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))
    xd = cp.asarray(x)
    two_levels = 0
    for op, ep in ((kps.ADD, kps.NONE), (kps.WELFORD, kps.variance(0)), (kps.ARGMAX, kps.INDEX)):
        f = kps.resolve(op, kps.IDENTITY, ep, dtype)
        cfg = dispatch.launch_for(xd, poisoned_like((shape[1],), f.out_dtype), (0,), False, f).cfg
        two_levels += cfg.num_splits > cfg.combine_group
    assert two_levels >= 2, "the shapes no longer split in two levels: pick others"
    check("var", _run("var", xd, 0), x, 0)
    sums = cp.asnumpy(ops.reduce_sum(xd, axis=0))
    np.testing.assert_array_equal(sums, cp.asnumpy(ops.reduce_sum(xd, axis=0)))
    check_op("sum", sums, x, 0)
    poison_pool(8 * shape[1])
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_argmax(xd, axis=0)), np.argmax(x, axis=0))


def _probe_folds():
    """A user state that counts the elements it took through `fold` beside their sum (its fold gives
    other bits than combine of lift on purpose, to be seen): the sum must be right on every path, and
    every accumulator's first element of a tile comes through combine."""
    def combine(a, b):
        return {"s": a["s"] + b["s"], "k": a["k"] + b["k"]}

    op = kps.ReduceOp(
        "fold_probe", combine="acc_t r; r.s = a.s + b.s; r.k = a.k + b.k; return r;",
        identity=lambda dt: {"s": 0, "k": 0}, numpy=combine, state=(("s", "acc"), ("k", "acc")),
        lift="acc_t r; r.s = x; r.k = value_t(0); return r;",
        numpy_lift=lambda x: {"s": x, "k": np.zeros_like(x)},
        fold="acc_t r; r.s = a.s + x; r.k = a.k + value_t(1); return r;")
    return (op, kps.Epilogue("probe_sum", "a.s", lambda a, n: a["s"]),
            kps.Epilogue("probe_folds", "a.k", lambda a, n: a["k"]))


def _probe_sum(op, total, shape, axes):
    """A probe op's input on the GPU and how many elements each output reduces, once the probe's
    sum over them is right."""
    x = np.random.default_rng(abs(hash(shape)) % 2**32).standard_normal(shape)
    xd = cp.asarray(x)
    n = int(np.prod([shape[a] for a in axes]))
    np.testing.assert_allclose(cp.asnumpy(ops.reduce(xd, axis=axes, op=op, epilogue=total)), x.sum(axis=axes),
                               rtol=1e-12, atol=1e-12 * n)
    return xd, n


@pytest.mark.parametrize("shape,axes", PATH_SHAPES + SHORT_ROW_SHAPES, ids=str)
def test_a_declared_fold_takes_the_elements_after_each_accumulators_first(shape, axes):
    op, total, folds = _probe_folds()
    xd, n = _probe_sum(op, total, shape, axes)
    k = cp.asnumpy(ops.reduce(xd, axis=axes, op=op, epilogue=folds))
    assert ((k >= 0) & (k <= n - 1) & (k == np.round(k))).all()
    if n >= 16:
        assert k.sum() > 0  # the kernels fold (no path takes every element through combine)


def _probe_pushes():
    """A user state that counts the elements it took through `push` (p) and through `fold` (k) beside
    their sum (both give other counts than combine of lift on purpose, to be seen)."""
    def combine(a, b):
        return {name: a[name] + b[name] for name in ("s", "k", "p")}

    op = kps.ReduceOp(
        "push_probe", combine="acc_t r; r.s = a.s + b.s; r.k = a.k + b.k; r.p = a.p + b.p; return r;",
        identity=lambda dt: {"s": 0, "k": 0, "p": 0}, numpy=combine, state=(("s", "acc"), ("k", "acc"), ("p", "acc")),
        lift="acc_t r; r.s = x; r.k = value_t(0); r.p = value_t(0); return r;",
        numpy_lift=lambda x: {"s": x, "k": np.zeros_like(x), "p": np.zeros_like(x)},
        fold="acc_t r; r.s = a.s + x; r.k = a.k + value_t(1); r.p = a.p; return r;",
        push="acc_t r; r.s = a.s + x; r.k = a.k; r.p = a.p + value_t(1); return r;")
    return op, kps.Epilogue("probe_sum", "a.s", lambda a, n: a["s"]), kps.Epilogue("probe_taken", "a.k + a.p",
                                                                                   lambda a, n: a["k"] + a["p"])


@pytest.mark.parametrize("shape,axes", PATH_SHAPES + SHORT_ROW_SHAPES, ids=str)
def test_a_declared_push_takes_each_accumulators_first_element(shape, axes):
    """With `push` and `fold` declared, every element goes through one of them (kps::ReduceUnary):
    none is lifted and merged by `combine`, on every path."""
    op, total, taken = _probe_pushes()
    xd, n = _probe_sum(op, total, shape, axes)
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce(xd, axis=axes, op=op, epilogue=taken)), np.full(
        [s for i, s in enumerate(shape) if i not in axes], float(n)))
