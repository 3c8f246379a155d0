"""Dask arrays of NumPy blocks against NumPy: every op, uneven and empty blocks, every axis form,
keepdims, a user's functors with and without a state, the errors, and a lazy result."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kps
import ops
from helpers import examples

da = pytest.importorskip("dask.array")

X = np.random.default_rng(0).standard_normal((13, 7, 5))
#: uneven blocks, and an empty one, on every axis
CHUNKS = ((5, 0, 8), (3, 4), (2, 3))

#: name -> (our function, NumPy's)
NAMED = {
    "sum": (ops.reduce_sum, np.sum), "mean": (ops.reduce_mean, np.mean), "prod": (ops.reduce_prod, np.prod),
    "max": (ops.reduce_max, np.max), "min": (ops.reduce_min, np.min),
    "any": (ops.reduce_any, np.any), "all": (ops.reduce_all, np.all),
    "argmax": (ops.reduce_argmax, None), "argmin": (ops.reduce_argmin, None),
    "var": (ops.reduce_var, np.var), "std": (ops.reduce_std, np.std),
    "logsumexp": (ops.reduce_logsumexp, None),
}
AXES = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2), ()]


def data(name: str) -> np.ndarray:
    if name in ("any", "all"):
        return X > 0.8
    if name == "prod":
        return 1 + X / 8
    return X


def expected(name: str, x: np.ndarray, axis, keepdims: bool):
    """NumPy's answer where NumPy has the op, else this project's NumPy backend (argmax over a
    tuple of axes, logsumexp), which the other tests hold to NumPy and SciPy."""
    fn = NAMED[name][1]
    if fn is None:
        return NAMED[name][0](x, axis=axis, keepdims=keepdims)
    return fn(x, axis=axis, keepdims=keepdims)


def same(got, expect, rtol=1e-12):
    got, expect = np.asarray(got), np.asarray(expect)
    assert got.dtype == expect.dtype and got.shape == expect.shape, (got.dtype, got.shape, expect.dtype, expect.shape)
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expect)
    else:
        np.testing.assert_allclose(got, expect, rtol=rtol, atol=1e-13)


def check_op(name, axis, keepdims, blocks=lambda x: da.from_array(x, chunks=CHUNKS), host=lambda r: r,
             rtol=1e-12):
    """`name` over `axis` of a dask array of `blocks(x)`: lazy, and NumPy's answer once computed
    (`host` brings the result to NumPy)."""
    x = data(name)
    if name in ("argmax", "argmin") and axis == ():
        pytest.skip("an arg-reduction over no axis has no NumPy twin")
    got = NAMED[name][0](blocks(x), axis=axis, keepdims=keepdims)
    assert isinstance(got, da.Array)
    same(host(got.compute()), expected(name, x, axis, keepdims), rtol)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_op_matches_numpy(name, axis, keepdims):
    check_op(name, axis, keepdims)


@pytest.mark.parametrize("axis", [None, 1, (0, 2)], ids=str)
def test_mean_and_variance_from_one_pass(axis):
    mean, var = ops.reduce_mean_var(da.from_array(X, chunks=CHUNKS), axis=axis, ddof=1)
    same(mean.compute(), np.mean(X, axis=axis))
    same(var.compute(), np.var(X, axis=axis, ddof=1))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "bool"])
def test_dtypes_follow_numpy(dtype):
    """NumPy's result dtypes; values as the NumPy backend's on the whole array (the same
    accumulate types, merged in another order: a unit of the result's last place for 16-bit floats)."""
    x = (X * 10).astype(dtype)
    d = da.from_array(x, chunks=CHUNKS)
    for name in ("sum", "mean", "max", "argmin", "var"):
        rtol = {"float16": 2e-3, "float32": 2e-6}.get(dtype, 1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = NAMED[name][0](d, axis=(0, 2)).compute()
            same(got, NAMED[name][0](x, axis=(0, 2)), rtol)
            if NAMED[name][1] is not None:
                assert got.dtype == NAMED[name][1](x, axis=(0, 2)).dtype


def test_zero_d_and_no_axis():
    same(ops.reduce_argmax(da.from_array(np.array(3.0))).compute(), np.argmax(np.array(3.0)))
    same(ops.reduce_sum(da.from_array(X, chunks=CHUNKS), axis=()).compute(), np.sum(X, axis=()))


def test_only_an_arg_reduction_asks_dask_for_its_blocks_places():
    """dask writes each block's place into the graph for a step whose signature takes it: only an
    arg-reduction's over some axes, whose indices go into the whole range; by the block's id where
    the reduced axes' blocks are regular, by `block_info` (a dict a block) where they are not."""
    from dask.utils import has_keyword

    from ops import dask_backend

    f = {name: kps.resolve(op, kps.IDENTITY, ep, np.dtype("float64"))
         for name, op, ep in (("sum", kps.ADD, kps.NONE), ("argmax", kps.ARGMAX, kps.INDEX))}
    assert dask_backend._placed(f["argmax"], (1,)) and not dask_backend._placed(f["argmax"], ())
    assert not dask_backend._placed(f["sum"], (1,))
    regular, irregular = ((2, 2), (3, 3, 1)), ((2, 2), (3, 4))
    for gpu in (False, True):
        for name, chunks, keyword in (("sum", regular, None), ("argmax", regular, "block_id"),
                                      ("argmax", irregular, "block_info"), ("argmax", ((4,), (7,)), "block_id")):
            step = dask_backend._step(f[name], (1,), chunks, gpu)
            assert [k for k in ("block_id", "block_info") if has_keyword(step, k)] == ([keyword] if keyword else [])
            assert step.red_shape == (sum(chunks[1]),)


def test_argmax_finds_the_first_of_ties_and_nan_across_blocks():
    x = np.zeros((6, 9))
    x[:, 2] = x[:, 7] = 5  # ties in different blocks: the first wins
    x[4, 8] = np.nan  # NaN wins, the first one
    x[4, 5] = np.nan
    d = da.from_array(x, chunks=(4, (3, 3, 3)))
    for axis in (None, 0, 1):
        same(ops.reduce_argmax(d, axis=axis).compute(), np.argmax(x, axis=axis))
    same(ops.reduce_argmax(d, axis=(0, 1)).compute(), np.argmax(x))


def test_the_family_on_dask_arrays():
    x = X.copy()
    x[x > 1] = np.nan
    x[0, 1] = np.nan
    d = da.from_array(x, chunks=CHUNKS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("nansum", "nanmean", "nanmax", "nanvar"):
            same(getattr(ops, f"reduce_{name}")(d, axis=(0, 2)).compute(), getattr(np, name)(x, axis=(0, 2)))
    same(ops.reduce_nanargmin(d, axis=1).compute(), np.nanargmin(x, axis=1))
    same(ops.count_nonzero(d, axis=0).compute(), np.count_nonzero(x, axis=0).astype(np.int64))
    same(ops.reduce_ptp(d, axis=2).compute(), np.ptp(x, axis=2))
    lazy = ops.reduce_nanargmax(d, axis=2)  # row (0, 1) is all NaN: raised when computed, as dask's own
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        lazy.compute()


MINMAX = kps.ReduceOp(
    "minmax_dask",
    combine="acc_t r; r.lo = a.lo < b.lo ? a.lo : b.lo; r.hi = a.hi > b.hi ? a.hi : b.hi; return r;",
    identity=lambda dt: {"lo": np.inf, "hi": -np.inf},
    numpy=lambda a, b: {"lo": np.minimum(a["lo"], b["lo"]), "hi": np.maximum(a["hi"], b["hi"])},
    state=(("lo", "acc"), ("hi", "acc")),
    lift="acc_t r; r.lo = x; r.hi = x; return r;",
    numpy_lift=lambda x: {"lo": x, "hi": x},
)
SPREAD = kps.Epilogue("spread_dask", "a.hi - a.lo", lambda a, n: a["hi"] - a["lo"])
RMS = kps.Epilogue("rms_dask", "sqrt(a / n)", lambda a, n: np.sqrt(a / n))


@pytest.mark.parametrize("axis", [None, 0, (1, 2)], ids=str)
def test_user_functors_need_no_extra_code(axis):
    d = da.from_array(X, chunks=CHUNKS)
    same(ops.reduce(d, axis=axis, op=MINMAX, epilogue=SPREAD).compute(),
         np.max(X, axis=axis) - np.min(X, axis=axis))
    same(ops.reduce(d, axis=axis, transform=kps.SQUARE, epilogue=RMS).compute(),
         np.sqrt(np.mean(X * X, axis=axis)))


def _first_of(a, b):
    return {"i": np.minimum(a["i"], b["i"])}


#: A user's indexed op whose identity may be a result: the first positive element's index, or int64's
#: largest where there is none (an index field named i, as kps.ARGMAX's: dask moves it per block).
FIRST_POSITIVE = kps.ReduceOp(
    "first_positive", combine="return a.i <= b.i ? a : b;", identity=lambda dt: {"i": np.iinfo(np.int64).max},
    numpy=_first_of, state=(("i", "int64"),), lift="acc_t r; r.i = x > 0 ? i : 9223372036854775807LL; return r;",
    numpy_lift=lambda x, i: {"i": np.where(x > 0, i, np.iinfo(np.int64).max)}, indexed=True,
    accumulate=lambda dt, req: (dt, np.dtype(np.int64)))
FIRST_INDEX = kps.Epilogue("first_index", "a.i", lambda a, n: a["i"])


def test_a_users_indexed_op_may_keep_its_identity():
    """Only nanargmax and nanargmin read int64's largest index as a slice of NaN (NumPy's ValueError)."""
    x = np.array([[-1.0, -2, 3, 4], [-1, -1, -1, -1], [5, -1, 2, 2]])
    expect = ops.reduce(x, axis=1, op=FIRST_POSITIVE, epilogue=FIRST_INDEX)
    assert expect.tolist() == [2, np.iinfo(np.int64).max, 0]
    for chunks in ((1, 2), (2, 1), (3, 4)):
        d = da.from_array(x, chunks=chunks)
        np.testing.assert_array_equal(ops.reduce(d, axis=1, op=FIRST_POSITIVE, epilogue=FIRST_INDEX).compute(), expect)


@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_any_blocking_gives_the_same_answer(data):
    shape = data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=3), label="shape")
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    chunks = tuple(data.draw(st.integers(1, n), label=f"chunk{i}") for i, n in enumerate(shape))
    axis = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1), label="axis")))
    d = da.from_array(x, chunks=chunks)
    for name in ("sum", "max", "argmax", "var"):
        same(NAMED[name][0](d, axis=axis).compute(), expected(name, x, axis, False))


def test_errors_name_the_argument():
    d = da.from_array(X, chunks=CHUNKS)
    with pytest.raises(TypeError, match="out"):
        ops.reduce_sum(d, axis=0, out=np.empty((7, 5)))
    with pytest.raises(ValueError, match="empty sequence"):
        ops.reduce_argmax(da.from_array(np.empty((0, 3))), axis=0)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        ops.reduce_sum(d[d[:, 0, 0] > 0], axis=0)
    with pytest.raises(TypeError, match="x"):
        ops.reduce_sum(d.map_blocks(lambda b: b, meta=np.ma.empty((0, 0, 0))), axis=0)


def test_importing_ops_does_not_import_dask():
    code = "import sys, ops; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_readme_example_runs_as_written():
    from test_readme import _blocks

    blocks = _blocks("Dask arrays")
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
