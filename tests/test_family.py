"""The rest of the family on the NumPy backend against NumPy: the NaN-skipping reductions with
NumPy's all-NaN warnings and errors, count_nonzero, ptp and minmax; NaN, inf, empty cases."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ops
from family_helpers import NAN_OPS, close, reference, with_nans
from helpers import DTYPES

AXES = [None, 0, 1, -1, (0, 2), (1, 2), ()]
FLOATS = [d for d in DTYPES if d.kind == "f"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_nan_reductions_match_numpy(name, dtype):
    if dtype == np.bool_ and name in ("nanvar", "nanstd", "nanmean"):
        pytest.skip("NumPy's nanvar / nanmean of bool are TypeErrors of its own")
    x = with_nans((6, 7, 5), dtype, np.random.default_rng(3))
    ours = NAN_OPS[name][0]
    for axis in AXES:
        for keepdims in (False, True):
            kwargs = [{"ddof": 0}, {"ddof": 1}, {"ddof": 3}] if name in ("nanvar", "nanstd") else [{}]
            for kw in kwargs:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    got = ours(x, axis=axis, keepdims=keepdims, **kw)
                close(got, reference(name, x, axis, keepdims, **kw), dtype)


@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_all_nan_slices_warn_as_numpy_does(name):
    x = with_nans((4, 9), np.float32, np.random.default_rng(4))  # row 0: nothing but NaN
    ours, theirs, message = NAN_OPS[name]
    if message is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            close(ours(x, axis=1), theirs(x, axis=1), x.dtype)
        return
    with pytest.warns(RuntimeWarning, match=message):
        theirs(x, axis=1)
    with pytest.warns(RuntimeWarning, match=message):
        got = ours(x, axis=1)
    assert np.isnan(got[0]) and not np.isnan(got[1:]).any()
    with warnings.catch_warnings():  # no slice of NaN alone: no warning
        warnings.simplefilter("error")
        ours(x[1:], axis=1)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nan_arg_reductions_match_numpy(name, dtype):
    ours, theirs = getattr(ops, f"reduce_{name}"), getattr(np, name)
    x = with_nans((6, 7, 5), dtype, np.random.default_rng(5), all_nan_row=False)
    for axis in (None, 0, 1, -1):
        for keepdims in (False, True):
            got = ours(x, axis=axis, keepdims=keepdims)
            close(got, theirs(x, axis=axis, keepdims=keepdims), dtype)
    if dtype.kind == "f":
        x[0, 2] = np.nan
        x[0, :, 3] = np.nan
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            theirs(x, axis=1)
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            ours(x, axis=1)
        ties = np.array([[np.nan, 2, 2, np.nan], [3, np.nan, 3, 1], [np.inf, np.nan, -np.inf, np.inf]], dtype=dtype)
        close(ours(ties, axis=1), theirs(ties, axis=1), dtype)
        # where the best number is -inf NumPy answers a NaN's index before it (it reads NaN as -inf);
        # the NaN is skipped here, as the name says
        assert ours(np.array([np.nan, -np.inf, -np.inf], dtype=dtype)) == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_count_nonzero_ptp_and_minmax_match_numpy(dtype):
    x = with_nans((6, 7, 5), dtype, np.random.default_rng(6), all_nan_row=False)
    if dtype.kind in "iu":
        x[1] = 0
    for axis in AXES:
        for keepdims in (False, True):
            close(ops.count_nonzero(x, axis=axis, keepdims=keepdims),
                  np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims), dtype=np.int64), dtype)
            lo, hi = ops.reduce_minmax(x, axis=axis, keepdims=keepdims)
            close(lo, np.min(x, axis=axis, keepdims=keepdims), dtype)
            close(hi, np.max(x, axis=axis, keepdims=keepdims), dtype)
            if dtype != np.bool_:
                with np.errstate(all="ignore"):
                    close(ops.reduce_ptp(x, axis=axis, keepdims=keepdims), np.ptp(x, axis=axis, keepdims=keepdims), dtype)
    wrap = np.array([[-128, 127, 5]], dtype=np.int8)
    close(ops.reduce_ptp(wrap, axis=1), np.ptp(wrap, axis=1), wrap.dtype)  # wraps, as NumPy's


def test_empty_and_bad_input_raise_as_numpy_does():
    empty = np.empty((0, 3), dtype=np.float32)
    for fn in (ops.reduce_nanmax, ops.reduce_nanargmax, ops.reduce_ptp, ops.reduce_minmax):
        with pytest.raises(ValueError):
            fn(empty, axis=0)
    close(ops.reduce_nansum(empty, axis=0), np.nansum(empty, axis=0), empty.dtype)
    close(ops.count_nonzero(empty, axis=0), np.count_nonzero(empty, axis=0).astype(np.int64), empty.dtype)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(ops.reduce_nanmean(empty, axis=0)).all()
    with pytest.raises(TypeError, match="x"):
        ops.reduce_ptp(np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="ddof"):
        ops.reduce_nanvar(np.ones(3), ddof=-1)
    with pytest.raises(TypeError, match="ddof"):
        ops.reduce_nanstd(np.ones(3), ddof=1.5)
