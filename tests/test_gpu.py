"""The GPU suite: every op, dtype and reduce type against a float64 NumPy reference, on fresh random
data, with outputs poisoned before each call. Skipped where no GPU is usable."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import kps
import ops
from kernels import config, policy

from helpers import DTYPES, OPS, check, check_or_raises, data

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

#: One shape per reduce type, odd sizes so that no tile is whole.
REDUCE_TYPES = {
    "full": ((1001,), None),
    "last": ((67, 1029), 1),
    "higher": ((1029, 67), 0),
    "any": ((5, 33, 7, 9), (0, 2)),
}


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.nodeid)) % 2**32)


def poison_pool(nbytes: int) -> None:
    """Leave garbage in the pool block the next allocation of about `nbytes` will reuse."""
    junk = cp.empty(max(nbytes, 1), dtype=cp.uint8)
    junk.fill(0x7F)
    del junk


def poisoned_like(shape, dtype):
    out = cp.empty(shape, dtype=dtype)
    if out.size:
        out.reshape(-1).view(cp.uint8).fill(0x7F)
    return out


def run(op, xd, axis, keepdims=False, dtype=None):
    """Our result both ways: into a fresh (poisoned-pool) array, and into a poisoned `out=`."""
    fn = OPS[op][0]
    kwargs = {} if dtype is None else {"dtype": dtype}
    expect_dtype = np.asarray(OPS[op][1](np.ones((1,) * xd.ndim, dtype=xd.dtype), axis=axis, **kwargs)).dtype
    shape = config.result_shape(xd.shape, config.normalize_axis(axis, xd.ndim), keepdims)
    poison_pool(int(np.prod(shape)) * expect_dtype.itemsize)
    fresh = fn(xd, axis=axis, keepdims=keepdims, dtype=dtype)
    out = poisoned_like(shape, expect_dtype)
    got = fn(xd, axis=axis, keepdims=keepdims, dtype=dtype, out=out)
    assert got is out
    np.testing.assert_array_equal(cp.asnumpy(fresh), cp.asnumpy(out))
    return cp.asnumpy(fresh)


@pytest.mark.parametrize("kind", list(REDUCE_TYPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_op_dtype_reduce_type(op, dtype, kind, rng):
    shape, axis = REDUCE_TYPES[kind]
    x = data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axis), x, axis)


def test_reduce_types_are_the_planned_ones():
    for kind, (shape, axis) in REDUCE_TYPES.items():
        axes = config.normalize_axis(axis, len(shape))
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        cfg = config.plan(shape, strides, axes, [1] * (len(shape) - len(axes)), 4, 4, 132)
        assert cfg.reduce_type == kind


SUBSET_SHAPES = [(7,), (31, 17), (5, 33, 3), (3, 17, 5, 65), (2, 9, 31, 7)]


@pytest.mark.parametrize("shape", SUBSET_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["sum", "max"])
def test_all_axis_subsets(shape, op, rng):
    x = data(shape, np.float32, op, rng)
    xd = cp.asarray(x)
    subsets = [None] + [s for r in range(len(shape) + 1) for s in itertools.combinations(range(len(shape)), r)]
    for axis in subsets:
        for keepdims in (False, True):
            check(op, run(op, xd, axis, keepdims), x, axis, keepdims)


LAYOUTS = {
    "transposed": lambda a, xp: a.transpose(2, 0, 1),
    "stepped": lambda a, xp: a[:, ::2, 1::3],
    "negative": lambda a, xp: a[::-1, :, ::-2],
    "broadcast": lambda a, xp: xp.broadcast_to(a[:, :1, :], a.shape),
    "offset": lambda a, xp: a[1:, 1:, 1:],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_non_contiguous_inputs(layout, op, rng):
    base = data((17, 33, 65), np.float32, op, rng)
    x = LAYOUTS[layout](base, np)
    xd = LAYOUTS[layout](cp.asarray(base), cp)
    assert xd.shape == x.shape and not xd.flags.c_contiguous
    for axis in [None, 0, 1, 2, (0, 1), (0, 2), (1, 2)]:
        check(op, run(op, xd, axis), np.array(x, order="C"), axis)


def _planned(shape, axes, itemsize):
    """The plan of a C-contiguous array of `shape` reduced over `axes` on 132 SMs."""
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    kept = [n for i, n in enumerate(shape) if i not in axes]
    return config.plan(shape, strides, axes, [int(np.prod(kept[i + 1:])) for i in range(len(kept))],
                       itemsize, 8, 132)


def long_data(shape, dtype, op, rng) -> np.ndarray:
    """`data` for reductions of up to tens of thousands of elements an output: a product's factors
    are signs only, so no product leaves float16's range."""
    if op == "prod":
        return np.where(rng.random(shape) < 0.5, -1, 1).astype(dtype)
    return data(shape, dtype, op, rng)


def _off_grid(x: np.ndarray):
    """x on the GPU, one element past the start of its allocation (off the 16-byte grid)."""
    moved = cp.empty(x.size + 1, dtype=x.dtype)[1:].reshape(x.shape)
    moved[...] = cp.asarray(x)
    return moved


#: Short runs that every dtype walks flat (16-byte aligned, whole vectors): batch-norm statistics,
#: many runs per output, two segment dims, a split by runs.
FLAT_SHAPES = [((6, 5, 4, 16), (0, 2, 3)), ((33, 3, 48), (0, 2)), ((4, 3, 5, 2, 16), (0, 2, 4)),
               ((300, 2, 64), (0, 2)), ((64, 8, 32, 32), (0, 2, 3))]


@pytest.mark.parametrize("shape,axes", FLAT_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_flat_runs(op, dtype, shape, axes, rng):
    cfg = _planned(shape, axes, dtype.itemsize)
    assert cfg.kernel == "inner" and cfg.flat_runs
    x = long_data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)
    # one element off the 16-byte grid: the same reduction run by run
    check(op, run(op, _off_grid(x), axes), x, axes)


#: Runs off the 16-byte grid under a few outputs, walked flat an element a load (kernels/planner/
#: inner.py, `_walks_elements`): 8-byte elements in runs of 257 (past ReduceStaged's) and of 33 under
#: two segment dims.
ELEMENT_RUN_SHAPES = [((300, 5, 257), (0, 2)), ((40, 5, 9, 33), (0, 2, 3))]


@pytest.mark.parametrize("shape,axes", ELEMENT_RUN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(d) for d in ("float64", "int64")], ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_runs_walked_an_element_a_load(op, dtype, shape, axes, rng):
    cfg = _planned(shape, axes, dtype.itemsize)
    assert cfg.kernel == "inner" and cfg.flat_runs and cfg.vec == 1
    x = long_data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)


#: Rows of 1 to 4 whole 16-byte vectors, enough of them that ReduceInner folds several a thread
#: (kernels/planner/inner.py, `short_rows`): 2 to 8 side by side, the last group ragged, and kept
#: dims that step over the rows of a 3-d layout.
SHORT_ROW_SHAPES = [((1_100_003, 16), (1,)), ((2_200_001, 8), (1,)), ((1_100_003, 4), (1,)), ((600_001, 3, 8), (2,)),
                    ((2_200_001, 2), (1,)), ((1_100_003, 12), (1,))]


@pytest.mark.parametrize("shape,axes", SHORT_ROW_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(d) for d in ("float16", "float32", "float64", "int32", "uint16")],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "prod"])
def test_short_rows_side_by_side(op, dtype, shape, axes, rng):
    cfg = _planned(shape, axes, dtype.itemsize)
    whole = shape[-1] * dtype.itemsize in (16, 32, 48, 64)
    assert (cfg.kernel == "inner" and cfg.rows > 1) == whole, cfg
    x = data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)
    # one element off the 16-byte grid: no longer rows of whole vectors on it
    check(op, run(op, _off_grid(x), axes), x, axes)


#: Runs that ReduceStaged reads through shared memory: narrow and odd rows and columns, odd runs
#: between kept dims, spans cut into chunks of rows (the last one short), splits (up to the long
#: combine of a few wide tiles), several kept dims in a span, odd columns a thread each in rows of
#: threads that do not divide the block (17, 65, 99 and 3 x 23 columns), and a tile of 448 slots
#: split further than one level of the combine folds (two levels).
STAGED_SHAPES = [((2003, 3), (1,)), ((60001, 3), (0,)), ((40009, 7), (0,)), ((517, 63), (1,)), ((30001, 13), (0,)),
                 ((401, 16, 11), (0, 2)), ((3001, 7, 3), (1,)), ((370, 5, 9, 7), (0, 2)), ((60, 64, 7, 7), (0, 2, 3)),
                 ((50, 1001, 7), (0, 2)), ((30, 2001, 5), (0, 2)), ((70001, 5), (1,)), ((20001, 65), (0,)),
                 ((5001, 255), (0,)), ((9, 1001), (0,)), ((40001, 17), (0,)), ((10007, 99), (0,)),
                 ((3001, 3, 23), (0,)), ((400, 64, 7, 7), (0, 3)), ((301, 7, 64), (1,)),
                 ((30001, 2, 17), (1,))]  # (narrow columns over two rows: spans of half a vector a thread)


def _kept_run(shape, axes):
    """Elements of the innermost kept dims, contiguous (0 where the innermost dim is reduced)."""
    run = 1
    for i in reversed(range(len(shape))):
        if i in axes:
            return run if run > 1 else 0
        run *= shape[i]
    return run


@pytest.mark.parametrize("shape,axes", STAGED_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_staged(op, dtype, shape, axes, rng):
    wide = dtype.itemsize >= 4 and _kept_run(shape, axes) * dtype.itemsize > policy.STAGE_MAX_WIDE_COLUMN_BYTES
    cfg = _planned(shape, axes, dtype.itemsize)
    assert cfg.kernel == "staged" or dtype.itemsize == 1 and op in ("any", "all") \
        or wide or cfg.kernel == "outer" and cfg.stacked  # (ReduceOuter: those columns; 7 rows of 4-8 bytes stacked)
    x = long_data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)
    # one element off the 16-byte grid: every span starts mid-vector
    check(op, run(op, _off_grid(x), axes), x, axes)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64)], ids=lambda d: d.name)
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_runs_that_end_inside_a_sector(op, dtype, rng):
    """Reduced runs of 48 bytes under four outputs, an input just over STAGE_STRADDLING_MIN_BYTES:
    staged (kernels/planner/staged.py, `_straddles_sectors`)."""
    r = 48 // dtype.itemsize
    shape, axes = (-(-policy.STAGE_STRADDLING_MIN_BYTES // (4 * r * dtype.itemsize)) + 3, 4, r), (0, 2)
    assert _planned(shape, axes, dtype.itemsize).kernel == "staged"
    x = long_data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)


#: A few long reduced rows under a wide kept dim: tiles of 1 and 2 rows, and 3, 5 and 7 rows that end
#: in a part tile.
FEW_ROWS_SHAPES = [((1, 40001), (0,)), ((2, 40003), (0,)), ((3, 40009), (0,)), ((5, 4099), (0,)), ((7, 2, 3001), (0,)),
                   ((40001, 1), (1,))]


@pytest.mark.parametrize("shape,axes", FEW_ROWS_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_few_reduced_rows(op, dtype, shape, axes, rng):
    x = data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)
    check(op, run(op, _off_grid(x), axes), x, axes)  # off the grid: a column per thread


def test_staged_plans_reach_every_regime():
    seen = set()
    for shape, axes in STAGED_SHAPES:
        cfg = _planned(shape, axes, 4)
        if cfg.kernel != "staged":  # (odd columns of over STAGE_MAX_WIDE_COLUMN_BYTES: ReduceOuter)
            continue
        st = cfg.stage
        seen |= {"two-level split"} if 0 < cfg.split_group < cfg.num_splits else set()
        seen |= {("rows" if st.lanes_adjacent else "columns"), ("kept chunks" if st.chunk_kept else "reduced chunks"),
                 ("split" if st.stages_per_split < st.num_stages else "unsplit"), f"{len(st.slots)} slot dims"}
        seen |= {"short last chunk"} if st.rows_total % st.rows else set()
        seen |= {"ragged lanes"} if 256 % cfg.lanes else set()
    assert seen >= {"rows", "columns", "kept chunks", "reduced chunks", "split", "unsplit", "2 slot dims",
                    "short last chunk", "ragged lanes", "two-level split"}, seen


#: Spans cut into chunks of rows where a block takes several work items, so the chunk each item holds
#: is counted along them (ReduceStaged): a block's stages walk the chunks of the reduced dim (A), kept
#: chunks grid-strided (B: the grid does not divide the chunks), reduced chunks grid-strided (C: every
#: tile starts again from its first chunk).
CHUNK_WALK_SHAPES = [((401, 301, 7), (0, 2), np.float64, "A"), ((1001, 301, 7), (0, 2), np.float32, "A"),
                     ((40001, 5, 11), (2,), np.float64, "B"), ((10007, 64, 7), (2,), np.float32, "B"),
                     ((3001, 1001, 5), (1,), np.float64, "C"), ((3001, 1001, 11), (1,), np.float32, "C")]


@pytest.mark.parametrize("shape,axes,dtype,walk", CHUNK_WALK_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_staged_chunks_counted_along_work_items(op, shape, axes, dtype, walk, rng):
    cfg = _planned(shape, axes, np.dtype(dtype).itemsize)
    st = cfg.stage
    assert cfg.kernel == "staged" and st.row_chunks > 1, cfg
    assert {"A": not st.chunk_kept and st.stages_per_split > 1,
            "B": st.chunk_kept and st.num_tiles > cfg.grid[0] and cfg.grid[0] % st.row_chunks,
            "C": not st.chunk_kept and st.num_tiles > cfg.grid[0]}[walk], cfg
    x = data(shape, np.dtype(dtype), op, rng)
    check(op, run(op, cp.asarray(x), axes), x, axes)
    check(op, run(op, _off_grid(x), axes), x, axes)


@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_one_byte_any_all_read_as_words(op, dtype, rng):
    shape = (37, 6, 64)
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    assert config.plan(shape, strides, (2,), [6, 1], 1, 1, 132, folds_words=True).words
    for axis in [None, 2, (1, 2), (0, 2), 0]:  # axis 0 keeps the innermost dim: words of four columns
        x = data(shape, dtype, op, rng)
        check(op, run(op, cp.asarray(x), axis), x, axis)
    # one byte off the word grid: byte by byte
    x = data(shape, dtype, op, rng)
    check(op, run(op, _off_grid(x), 2), x, 2)
    # bytes other than 0 and 1 (a bool array over raw bytes): every nonzero byte is true, as in NumPy
    raw = rng.choice(np.array([0, 1, 2, 0x80, 0xFF], dtype=np.uint8), size=shape, p=[0.02, 0.2, 0.3, 0.3, 0.18])
    x = raw.view(dtype)
    for axis in [None, 2, (0, 2), 0, (0, 1)]:
        check(op, run(op, cp.asarray(raw).view(dtype), axis), x, axis)


#: 1-byte `any` / `all` whose innermost dim is kept: whole uint32 words of columns, read four a word.
WORD_COLUMN_SHAPES = [((1000, 64), (0,)), ((37, 8, 12), (0, 1)), ((5, 300, 16), (1,)), ((3, 4), (0,)),
                      ((20001, 4), (0,)), ((2, 3, 1024), (0,)), ((64, 40), (0,)), ((6, 7, 8), (0,))]


@pytest.mark.parametrize("shape,axes", WORD_COLUMN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_one_byte_columns_read_as_words(op, dtype, shape, axes, rng):
    x = _sparse_bytes(op, dtype, shape, rng)
    xd = cp.asarray(x)
    assert _reads_word_columns(xd, axes)
    check(op, run(op, xd, axes), x, axes)
    check(op, run(op, xd, axes, keepdims=True), x, axes, keepdims=True)
    moved = _off_grid(x)  # a byte off the word grid: byte by byte
    assert not _reads_word_columns(moved, axes)
    check(op, run(op, moved, axes), x, axes)


#: 1-byte `any` / `all` of kept columns that are no whole words: staged, folded as words by residue
#: (FoldWordColumns), the columns read off the residues' bytes; split and not, one row of residues
#: per period up to 510 columns, two a thread at 257 (wider ones: test_wide_columns_off_the_word_grid).
ODD_WORD_COLUMNS = [3, 5, 6, 7, 17, 33, 65, 255, 510, 257]


@pytest.mark.parametrize("width", ODD_WORD_COLUMNS)
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_odd_columns_folded_as_words(op, dtype, width, rng):
    rows = max(64, 2_000_000 // width)
    x = _sparse_bytes(op, dtype, (rows, width), rng)
    for shift in (0, 1, 3, 6):  # every span starts `shift` bytes into a word
        moved = cp.empty(x.size + shift, dtype=dtype)[shift:].reshape(x.shape)
        moved[...] = cp.asarray(x)
        assert _plan_bytes(moved, (0,)).stage.word_columns, (width, shift)
        check(op, run(op, moved, 0), x, 0)
        check(op, run(op, moved, 0, keepdims=True), x, 0, keepdims=True)
        first = cp.asnumpy(run(op, moved, 0))
        assert (cp.asnumpy(run(op, moved, 0)) == first).all()  # the same bytes every run
    # a bool array over raw bytes: every nonzero byte is true, as in NumPy
    raw = np.where(x.view(np.uint8) != 0, rng.choice(np.array([1, 2, 0x80, 0xFF], np.uint8), size=x.shape), 0)
    check(op, run(op, cp.asarray(raw).view(dtype), 0), raw.view(dtype), 0)


@pytest.mark.parametrize("width", [513, 1024, 1025, 1026, 1027, 2047, 4099])
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_wide_columns_off_the_word_grid(op, dtype, width, rng):
    """1-byte `any` / `all` of 512 or more kept columns off the word grid (W no multiple of 4, or
    the rows start off it): four columns a word from the aligned words around them
    (ReadWordsShifted), the row's last word stored byte by byte; split over rows and not, a batch
    of such rows, results into `out` on the word grid and off it (bytes one by one), the same bits
    every run, rows read from the last."""
    for rows in (7, 3001):
        x = _sparse_bytes(op, dtype, (rows, width), rng)
        for shift in (0, 1, 2, 3):
            xd = cp.empty(x.size + shift, dtype=dtype)[shift:].reshape(x.shape)
            xd[...] = cp.asarray(x)
            cfg = _plan_bytes(xd, (0,))
            assert (cfg.kernel == "outer" and bool(cfg.shifted_words)) == (width % 4 != 0 or shift != 0), (width, shift)
            check(op, run(op, xd, 0), x, 0)
            check(op, run(op, xd, 0, keepdims=True), x, 0, keepdims=True)
            check(op, run(op, xd[::-1], 0), x[::-1], 0)  # from the last row (an offset in bytes)
            first = cp.asnumpy(run(op, xd, 0))
            assert (cp.asnumpy(run(op, xd, 0)) == first).all()
            for out in (poisoned_like(width + 1, np.bool_)[1:], poisoned_like(width + 4, np.bool_)[4:]):
                OPS[op][0](xd, axis=0, out=out)
                check(op, cp.asnumpy(out), x, 0)
    x = _sparse_bytes(op, dtype, (3, 501, width), rng)  # a batch: each row of results a word apart or not
    for axes in ((1,), (0, 1)):
        check(op, run(op, cp.asarray(x), axes), x, axes)
    big = _sparse_bytes(op, dtype, (3, 5, 4 * width), rng)
    view = cp.asarray(big)[:, :, 1:width + 1]  # rows of width off the grid, 4 * width apart
    check(op, run(op, view, (1,)), big[:, :, 1:width + 1], (1,))


#: Flipped reduced dims on the paths whose kernels read bytes their word functors fold: rows folded as
#: words (short, long, two dims), odd columns by residue, shifted word columns.
FLIPPED_BYTE_VIEWS = [((3000, 7), np.s_[:, ::-1], (1,)), ((50, 3000), np.s_[:, ::-1], (1,)),
                      ((300, 7, 5), np.s_[:, ::-1, ::-1], (1, 2)), ((3000, 33), np.s_[::-1], (0,)),
                      ((3000, 1025), np.s_[::-1], (0,))]


@pytest.mark.parametrize("shape,index,axes", FLIPPED_BYTE_VIEWS, ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_flipped_views_read_as_bytes(op, shape, index, axes, rng):
    """The offset to a flipped view's first element counts bytes where the kernel reads bytes (once
    it counted words there: a misaligned address)."""
    x = _sparse_bytes(op, np.dtype(np.bool_), shape, rng)
    view = cp.asarray(x)[index]
    cfg = _plan_bytes(view, axes)
    assert cfg.reads_bytes and cfg.in_offset != 0, cfg
    check(op, run(op, view, axes), x[index], axes)
    check(op, run(op, view, axes, keepdims=True), x[index], axes, keepdims=True)


def _sparse_bytes(op, dtype, shape, rng):
    """1-byte data whose `any` / `all` turns on a few elements: for `all` true but for a few, for
    `any` false but for a few; the nonzero bytes of every kind (1 & 2 == 0 and 0x80 carry no shared
    bit, so a raw AND of the words would be wrong)."""
    base = op == "all"
    truth = np.full(shape, base)
    flat = truth.reshape(-1)
    flat[rng.choice(flat.size, size=max(1, flat.size // 97), replace=False)] = not base
    values = [True] if dtype == np.bool_ else ([1, 2, -1, -128] if dtype.kind == "i" else [1, 2, 128, 255])
    return np.where(truth, rng.choice(values, size=shape), 0).astype(dtype)


#: 1-byte `any` / `all` over rows that are no whole words (or start off the word grid): staged and
#: folded as words (FoldSharedWords), short rows a thread each, long ones a warp or the whole block.
WORD_FOLD_SHAPES = [((1000, 5), (1,)), ((30000, 7), (1,)), ((64, 1001), (1,)), ((9, 4095), (1,)), ((5, 9999), (1,)),
                    ((3, 20001), (1,)), ((20000, 5, 7), (1, 2)), ((5000, 12), (1,)), ((7000, 3, 11), (2,))]


@pytest.mark.parametrize("shape,axes", WORD_FOLD_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_one_byte_rows_folded_as_words(op, dtype, shape, axes, rng):
    for shift in range(4):  # every start in a word
        x = _sparse_bytes(op, dtype, shape, rng)
        xd = cp.empty(x.size + shift, dtype=dtype)[shift:].reshape(shape)
        xd[...] = cp.asarray(x)
        cfg = _plan_bytes(xd, axes)
        assert cfg.kernel == "staged" and (cfg.stage.word_folds or cfg.stage.byte_rows) or cfg.words
        check(op, run(op, xd, axes), x, axes)
        check(op, run(op, xd, axes, keepdims=True), x, axes, keepdims=True)


@pytest.mark.parametrize("width", [2, 3, 4, 5, 6, 7, 9, 11, 13, 15])
@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8)], ids=str)
@pytest.mark.parametrize("op", ["any", "all"])
def test_byte_rows(op, dtype, width, rng):
    """Rows of 2-15 bytes on the 16-byte grid, 16 a thread (FoldByteRows): row counts that leave a
    thread a partial 16 at the end, spans cut into chunks of rows, results stored 16 at once where
    the output allows (contiguous, on the grid) and one by one where it does not (a byte off it,
    every other byte); off the grid the other folds; the same bits every run."""
    for rows in (4099, 5000, 300_001):
        x = _sparse_bytes(op, dtype, (rows, width), rng)
        for shift in (0, 16, 1):
            xd = cp.empty(x.size + shift, dtype=dtype)[shift:].reshape(x.shape)
            xd[...] = cp.asarray(x)
            assert bool(_plan_bytes(xd, (1,)).stage.byte_rows) == (shift % 16 == 0), (width, rows, shift)
            check(op, run(op, xd, 1), x, 1)
            first = cp.asnumpy(run(op, xd, 1))
            assert (cp.asnumpy(run(op, xd, 1)) == first).all()
            for out in (poisoned_like(rows + 1, np.bool_)[1:], poisoned_like(2 * rows, np.bool_)[::2]):
                OPS[op][0](xd, axis=1, out=out)
                check(op, cp.asnumpy(out), x, 1)
    # a batch whose rows are no whole 16 bytes apart from one batch to the next (16-row spans
    # would start off the grid): the other folds; and one that is
    for extra in (1, 16):
        x = _sparse_bytes(op, dtype, (3, 4000 + extra, width), rng)
        xd = cp.asarray(x)[:, :4000]
        assert bool(_plan_bytes(xd, (2,)).stage.byte_rows) == ((4000 + extra) * width % 16 == 0)
        check(op, run(op, xd, 2), x[:, :4000], 2)


def _plan_bytes(xd, axes):
    """The planner's plan of `xd`'s 1-byte any/all over `axes` (a fresh 256-aligned bool result)."""
    kept = [n for i, n in enumerate(xd.shape) if i not in axes]
    return config.plan(xd.shape, xd.strides, axes, [int(np.prod(kept[i + 1:])) for i in range(len(kept))], 1, 1, 132,
                       in_misalign=xd.data.ptr % 16, out_align=256, folds_words=True, word_columns=True,
                       acc_itemsize=1)


def _reads_word_columns(xd, axes) -> bool:
    """Whether the planner reads `xd`'s 1-byte any/all over `axes` four columns a word."""
    return _plan_bytes(xd, axes).word_columns


def test_non_contiguous_out(rng):
    x = data((40, 50, 30), np.float32, "sum", rng)
    big = poisoned_like((60, 50), np.float32)
    out = big[::2, :][:, ::-1].T  # (50, 30), strided, reversed
    ops.reduce_sum(cp.asarray(x).transpose(1, 0, 2), axis=1, out=out)
    check("sum", cp.asnumpy(out), x.transpose(1, 0, 2), 1)
    rest = cp.asnumpy(big)[1::2]
    assert (rest.view(np.uint8) == 0x7F).all(), "wrote outside out"


def test_unsplit_grid_over_65536_blocks(rng):
    """More blocks than the split counters cover, in a launch that does not split: rows of 3 floats,
    8 apart (too short a span to stage, not whole vectors to fold several a thread), a row per lane."""
    shape = (17_000_000, 3)
    cfg = config.plan(shape, [8, 1], (1,), [1], 4, 4, 132)
    assert cfg.kernel == "inner" and cfg.num_splits == 1 and cfg.grid[0] > 65536 and cfg.rows == 1
    x = data(shape, np.float32, "sum", rng)
    wide = cp.empty((shape[0], 8), dtype=np.float32)
    wide[:, :3] = cp.asarray(x)
    check("sum", run("sum", wide[:, :3], 1), x, 1)


@pytest.mark.parametrize("shape,dtype", [((524281, 2), np.float32), ((270336, 2), np.float32),
                                         ((442368, 1), np.float16), ((540672, 1), np.float16)])
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_grid_limit_shapes(shape, dtype, op, rng):
    x = data(shape, dtype, op, rng)
    check(op, run(op, cp.asarray(x), 0), x, 0)


@pytest.mark.parametrize("shape,axis", [((1 << 24,), None), ((1 << 22, 16), 0), ((16, 1 << 20), 1),
                                        ((64, 56, 56 * 8), (0, 2)), ((1 << 16, 4096), 0),
                                        ((32, 64, 28, 28), (0, 2, 3)), ((1 << 20, 7), 0), ((1 << 20, 7), 1),
                                        ((1 << 17, 7, 11), (0, 2)), ((1 << 18, 65), 0), ((1 << 16, 1001), 0)])
def test_repeat_runs_bit_identical(shape, axis, rng):
    xd = cp.asarray(data(shape, np.float32, "sum", rng))
    first = cp.asnumpy(ops.reduce_sum(xd, axis=axis))
    for _ in range(9):
        np.testing.assert_array_equal(cp.asnumpy(ops.reduce_sum(xd, axis=axis)).view(np.uint32), first.view(np.uint32))


def test_input_over_2_31_elements(rng):
    shape = (2**16 + 1, 2**15 + 3)  # 2^31 + ... elements, one byte each
    assert np.prod(shape) > 2**31
    x = rng.integers(0, 256, size=shape, dtype=np.uint8)
    xd = cp.asarray(x)
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_sum(xd, axis=0)), x.sum(axis=0, dtype=np.uint64))
    assert int(ops.reduce_sum(xd)) == int(x.sum(dtype=np.uint64))
    np.testing.assert_array_equal(cp.asnumpy(ops.reduce_max(xd, axis=1)), x.max(axis=1))


@pytest.mark.parametrize("op", list(OPS))
def test_empty_and_scalar(op, rng):
    for shape, axis in [((0, 3), 0), ((3, 0), 1), ((3, 0), 0), ((0,), None), ((), None), ((), ()), ((4, 5), ())]:
        x = data(shape, np.float32, op, rng)
        xd = cp.asarray(x)
        fn, ref = OPS[op]
        try:
            with np.errstate(all="ignore"):
                expect = ref(x, axis=axis)
        except ValueError:
            with pytest.raises(ValueError):
                fn(xd, axis=axis)
            continue
        got = cp.asnumpy(fn(xd, axis=axis))
        np.testing.assert_array_equal(got, np.asarray(expect))


def test_dtype_and_out_cast_in_kernel(rng):
    x = data((300, 257), np.int16, "sum", rng)
    xd = cp.asarray(x)
    check("sum", cp.asnumpy(ops.reduce_sum(xd, axis=1, dtype=np.float32)), x, 1, dtype=np.float32)
    out = poisoned_like((300,), np.float64)
    ops.reduce_sum(xd, axis=1, out=out)
    np.testing.assert_array_equal(cp.asnumpy(out), x.sum(axis=1).astype(np.float64))
    h = data((129, 1000), np.float16, "sum", rng)
    out32 = poisoned_like((1000,), np.float32)
    ops.reduce_mean(cp.asarray(h), axis=0, out=out32)
    np.testing.assert_allclose(cp.asnumpy(out32), h.astype(np.float64).mean(axis=0), rtol=1e-5, atol=1e-5)


def test_int_products_into_a_float_out_compute_in_its_dtype(rng):
    """As NumPy's ufunc.reduce: no int64 wrap where out= is a float array (tests/test_api_cpu.py)."""
    x = rng.integers(2, 90, size=(300, 257)).astype(np.int16)
    out = poisoned_like((300,), np.float64)
    assert ops.reduce_prod(cp.asarray(x), axis=1, out=out) is out
    np.testing.assert_allclose(cp.asnumpy(out), np.prod(x, axis=1, out=np.zeros(300)), rtol=1e-12)


def test_nan_propagates(rng):
    x = data((64, 1000), np.float32, "max", rng)
    x[3, 17] = np.nan
    x[40, 999] = np.nan
    for op in ("max", "min", "sum"):
        for axis in (0, 1, None):
            got = cp.asnumpy(OPS[op][0](cp.asarray(x), axis=axis))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(OPS[op][1](x, axis=axis)))


def test_user_transform_sum_of_squares(rng):
    x = data((333, 444), np.float32, "sum", rng)
    cube = kps.TransformOp("cube", "x * x * x", numpy=lambda v: v * v * v)
    for transform, ref in ((kps.SQUARE, x.astype(np.float64) ** 2), (kps.ABS, np.abs(x.astype(np.float64))),
                           (cube, x.astype(np.float64) ** 3)):
        for axis in (0, 1):
            got = cp.asnumpy(ops.reduce(cp.asarray(x), axis=axis, op=kps.ADD, transform=transform))
            np.testing.assert_allclose(got, ref.sum(axis=axis), rtol=1e-4, atol=1e-3)


def test_hypothesis_shapes_and_axes():
    pytest.importorskip("hypothesis")
    from hypothesis import given, strategies as st
    from hypothesis.extra import numpy as hnp

    @given(
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=40),
        op=st.sampled_from(["sum", "max", "mean", "any"]),
        data_=st.data(),
    )
    def inner(shape, op, data_):
        axis = data_.draw(st.one_of(st.none(), hnp.valid_tuple_axes(len(shape))), label="axis")
        keepdims = data_.draw(st.booleans(), label="keepdims")
        x = data(shape, np.float32, op, np.random.default_rng(len(shape) * 1000 + sum(shape)))
        check_or_raises(op, lambda: cp.asnumpy(OPS[op][0](cp.asarray(x), axis=axis, keepdims=keepdims)), x, axis,
                        keepdims)

    inner()
