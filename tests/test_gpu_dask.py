"""Dask arrays of CuPy blocks against NumPy: the GPU kernels reduce each block to its raw state
(kps/raw.py), merged and finished as for NumPy blocks; every named op, uneven and empty blocks,
every axis form, keepdims, ties and NaN across blocks, a user's functor with a state."""
from __future__ import annotations

import numpy as np
import pytest

import kps
import ops
from test_dask import AXES, CHUNKS, FIRST_INDEX, FIRST_POSITIVE, NAMED, X, check_op

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
da = pytest.importorskip("dask.array")


def _dask_of_cupy(x):
    return da.from_array(cp.asarray(x), chunks=CHUNKS, asarray=False)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_op_on_cupy_blocks_matches_numpy(name, axis, keepdims):
    def host(result):
        assert isinstance(result, cp.ndarray)
        return cp.asnumpy(result)

    # the GPU folds in another order than NumPy: float64 to a few units of its last place
    check_op(name, axis, keepdims, _dask_of_cupy, host, rtol=1e-10)


def test_ties_and_nan_across_cupy_blocks():
    x = X.copy()
    x[:, 2] = x[:, 5] = 9.0  # ties in different blocks: the first wins
    got = ops.reduce_argmax(_dask_of_cupy(x), axis=1).compute()
    np.testing.assert_array_equal(cp.asnumpy(got), np.argmax(x, axis=1))
    x[4, 6, 1] = np.nan
    got = ops.reduce_nanargmin(_dask_of_cupy(x), axis=(1, 2)).compute()
    np.testing.assert_array_equal(cp.asnumpy(got), ops.reduce_nanargmin(x, axis=(1, 2)))


def test_a_users_state_functor_on_cupy_blocks():
    minmax = kps.ReduceOp(
        "minmax_dask_gpu",
        combine="acc_t r; r.lo = a.lo < b.lo ? a.lo : b.lo; r.hi = a.hi > b.hi ? a.hi : b.hi; return r;",
        identity=lambda dt: {"lo": np.inf, "hi": -np.inf},
        numpy=lambda a, b: {"lo": np.minimum(a["lo"], b["lo"]), "hi": np.maximum(a["hi"], b["hi"])},
        state=(("lo", "acc"), ("hi", "acc")), lift="acc_t r; r.lo = x; r.hi = x; return r;",
        numpy_lift=lambda x: {"lo": x, "hi": x})
    spread = kps.Epilogue("spread_dask_gpu", "a.hi - a.lo", lambda a, n: a["hi"] - a["lo"])
    got = ops.reduce(_dask_of_cupy(X), axis=(0, 2), op=minmax, epilogue=spread).compute()
    np.testing.assert_allclose(cp.asnumpy(got), np.ptp(X, axis=(0, 2)), rtol=1e-12)


def test_a_users_indexed_op_on_cupy_blocks():
    """The index field (named i) moved into the whole reduced range per block; the identity may stay a
    result; a state without an i field is refused by name before any block runs."""
    x = np.array([[-1.0, -2, 3, 4], [-1, -1, -1, -1], [5, -1, 2, 2]])
    d = da.from_array(cp.asarray(x), chunks=(1, 2), asarray=False)
    got = ops.reduce(d, axis=1, op=FIRST_POSITIVE, epilogue=FIRST_INDEX).compute()
    np.testing.assert_array_equal(cp.asnumpy(got), [2, np.iinfo(np.int64).max, 0])
    renamed = kps.ReduceOp("first_positive_j", combine="return a.j <= b.j ? a : b;",
                           identity=lambda dt: {"j": np.iinfo(np.int64).max},
                           numpy=lambda a, b: {"j": np.minimum(a["j"], b["j"])}, state=(("j", "int64"),),
                           lift="acc_t r; r.j = i; return r;", numpy_lift=lambda x, i: {"j": i}, indexed=True)
    with pytest.raises(TypeError, match="op: .*field named 'i'"):
        ops.reduce(d, axis=1, op=renamed, epilogue=kps.Epilogue("j_index", "a.j", lambda a, n: a["j"]))
