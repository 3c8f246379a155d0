"""The rest of the family on the NumPy backend against NumPy: the NaN-skipping reductions with
NumPy's all-NaN warnings and errors, count_nonzero, ptp and minmax; NaN, inf, empty cases."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ops
from family_helpers import COUNTED, NAN_OPS, close, count_warnings, infinite_slices, reference, scale, with_nans
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
                close(got, reference(name, x, axis, keepdims, **kw), dtype, scale=scale(name, x, axis, keepdims))


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


@pytest.mark.parametrize("name", COUNTED)
def test_nans_from_infinities_are_not_said_to_be_empty_slices(name):
    """A NaN result from infinities (inf - inf) is no slice short of numbers: NumPy's count warning
    only where some slice holds ddof numbers or fewer that are not NaN, for every row alone and all
    together, over either axis, on NumPy arrays and torch tensors; NumPy's values."""
    ours, theirs, _ = NAN_OPS[name]
    x = infinite_slices(np.float32)
    inputs = [np.asarray]
    try:
        import torch
        inputs.append(lambda a: torch.from_numpy(np.ascontiguousarray(a)))
    except ImportError:
        pass
    for ddof in ((0, 1, 0.5, 2) if name != "nanmean" else (None,)):
        kw = {} if ddof is None else {"ddof": ddof}
        for rows in [slice(k, k + 1) for k in range(len(x))] + [slice(None)]:
            for axis in (1, 0, None):
                part = x[rows]
                expect = count_warnings(theirs, part, axis=axis, **kw)
                for make in inputs:
                    assert count_warnings(ours, make(part), axis=axis, **kw) == expect, (rows, axis, ddof, make)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    got = ours(part, axis=axis, **kw)
                close(got, reference(name, part, axis, **kw), x.dtype)


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


def _dof_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if "Degrees of freedom" in str(w.message)]


@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nan_variances_give_numpys_warnings_once(name):
    """numpy.nanvar of ints is numpy.var (its warning, once); of floats its own, where n - ddof <= 0."""
    ours, theirs = getattr(ops, f"reduce_{name}"), getattr(np, name)
    for x in (np.arange(3), np.array([True, False]), np.array([1.0, np.nan]), np.array([np.nan, np.nan])):
        for ddof in (0, 1, 3):
            assert _dof_warnings(lambda: ours(x, ddof=ddof)) == _dof_warnings(lambda: theirs(x, ddof=ddof)), (x, ddof)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float32], ids=lambda d: np.dtype(d).name)
def test_nanmean_of_empty_slices_warns_once_as_numpy(dtype):
    """numpy.nanmean of ints and bool is numpy.mean: 'Mean of empty slice' where n = 0, from the
    shape, where no result is NaN too (an empty output); of floats, where a result is NaN."""
    for shape in ((0, 0), (3, 0), (0, 3), (2, 0, 3)):
        for axis in (0, 1, None, (0, 1)):
            x = np.zeros(shape, dtype)
            assert count_warnings(ops.reduce_nanmean, x, axis=axis) == count_warnings(np.nanmean, x, axis=axis), (
                shape, axis)


#: The out= dtypes numpy.argmax takes: those that cast safely to int64.
INDEX_OUTS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]


@pytest.mark.parametrize("out_dtype", INDEX_OUTS, ids=lambda d: np.dtype(d).name)
def test_arg_reductions_write_into_every_out_numpy_takes(out_dtype):
    """Indices cast into out= as NumPy casts them; an all-NaN slice still raises where its marker
    index (int64's largest) would cast to a plausible one (-1, 255, True)."""
    x = np.random.default_rng(8).standard_normal((300, 7))
    for name in ("argmax", "argmin", "nanargmax", "nanargmin"):
        ours, theirs = getattr(ops, f"reduce_{name}"), getattr(np, name)
        out = np.full(7, 3, dtype=out_dtype)
        assert ours(x, axis=0, out=out) is out
        np.testing.assert_array_equal(out, theirs(x, axis=0, out=np.zeros(7, dtype=out_dtype)))
    x[:, 4] = np.nan
    for name in ("nanargmax", "nanargmin"):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            getattr(ops, f"reduce_{name}")(x, axis=0, out=np.zeros(7, dtype=out_dtype))
    for refused in (np.float64, np.uint64):
        with pytest.raises(TypeError, match="out"):
            ops.reduce_argmax(x, axis=0, out=np.zeros(7, dtype=refused))


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


def test_edges_the_review_found():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(ops.reduce_nanvar(np.array([np.inf, np.nan])))  # inf - inf, as NumPy's
        for x in (np.array([1, 2]), np.array([[1, 2], [3, 3]])):  # ints: numpy.var's inf, not NaN
            close(ops.reduce_nanvar(x, axis=-1, ddof=2), np.nanvar(x, axis=-1, ddof=2), x.dtype)
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max])
    close(ops.reduce_ptp(extremes), np.ptp(extremes), extremes.dtype)  # wraps, with no signed overflow


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
    with pytest.raises(TypeError, match="ddof"):
        ops.reduce_nanvar(np.ones(3), ddof=True)
    with pytest.raises(TypeError, match="ddof"):
        ops.reduce_nanstd(np.ones(3), ddof="1.5")


ORDS = [2, 1, np.inf, -np.inf, 0, 3, 0.5, -1, -2.5]


def norm64(x: np.ndarray, ord, axis, keepdims=False) -> np.ndarray:
    """The vector norm in float64 over any axes, as numpy.linalg.norm computes it for one axis."""
    a = np.abs(x.astype(np.float64))
    with np.errstate(all="ignore"):
        if ord == np.inf:
            return np.max(a, axis=axis, keepdims=keepdims)
        if ord == -np.inf:
            return np.min(a, axis=axis, keepdims=keepdims)
        if ord == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
        return np.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_norms_match_numpy(ord, dtype):
    x = with_nans((6, 7, 5), dtype, np.random.default_rng(9), all_nan_row=False)
    if dtype.kind == "f":
        x[np.isnan(x)] = 1.5  # NaN propagates (below); here every value is a number
    for axis in (0, -1):  # one axis: numpy.linalg.norm itself
        for keepdims in (False, True):
            with np.errstate(all="ignore"):  # 0 ** -2.5
                expect = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
            close(ops.reduce_norm(x, ord=ord, axis=axis, keepdims=keepdims), expect, dtype)
    for axis in (None, (0, 2), (0, 1, 2)):  # several axes: the vector norm of their elements
        expect = norm64(x, ord, axis).astype(np.linalg.norm(x[0, 0], ord=ord).dtype)
        close(ops.reduce_norm(x, ord=ord, axis=axis), expect, dtype)


def test_the_two_norm_neither_overflows_nor_underflows():
    """float32 and 16-bit data square in float64; float64 data are scaled."""
    for dtype, big in ((np.float32, 1e20), (np.float64, 1e200), (np.float16, 2e3), (np.float64, 1e-200)):
        x = np.full((3, 1000), big, dtype=dtype)
        x[1] *= -0.5
        expect = np.sqrt(1000) * np.abs(x[:, 0].astype(np.float64))
        close(ops.reduce_norm(x, axis=1), expect.astype(dtype), np.dtype(dtype))
    tiny = np.full(100, 1e-30, dtype=np.float32)  # squares would underflow to zero
    close(ops.reduce_norm(tiny), np.float32(1e-29), tiny.dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_norms_of_the_least_signed_int_take_its_magnitude(dtype):
    """numpy.linalg.norm converts ints to float64 first: |int8(-128)| is 128, where np.abs wraps."""
    low = np.iinfo(dtype).min
    x = np.array([[low, 5, -3], [7, low, low]], dtype=dtype)
    for ord in ORDS + [None]:
        with np.errstate(all="ignore"):
            expect = np.linalg.norm(x.astype(np.float64), ord=ord, axis=1)
        np.testing.assert_allclose(ops.reduce_norm(x, ord=ord, axis=1), expect, rtol=1e-12)


def test_norm_edges_and_errors():
    inf, nan = np.inf, np.nan
    for ord in ORDS:
        assert np.isnan(ops.reduce_norm(np.array([1.0, nan, 2.0]), ord=ord)) or ord == 0
        if ord not in (0, -np.inf) and not (ord < 0):
            assert ops.reduce_norm(np.array([inf, 1.0]), ord=ord) == inf
    assert ops.reduce_norm(np.array([0.0, 0.0])) == 0 and ops.reduce_norm(np.empty(0)) == 0
    # NumPy 2's inf-norm of nothing is 0 (every magnitude is >= 0); its -inf-norm has no identity
    assert ops.reduce_norm(np.empty(0), ord=np.inf) == np.linalg.norm(np.empty(0), ord=np.inf) == 0
    np.testing.assert_array_equal(ops.reduce_norm(np.empty((0, 3)), ord=np.inf, axis=0), np.zeros(3))
    with pytest.raises(ValueError):
        ops.reduce_norm(np.empty(0), ord=-np.inf)
    assert ops.reduce_norm(np.array([3.0, 4.0]), ord=None) == 5.0  # NumPy's None: the 2-norm
    with pytest.raises(ValueError, match="ord"):
        ops.reduce_norm(np.ones(3), ord="fro")
    with pytest.raises(ValueError, match="ord"):
        ops.reduce_norm(np.ones(3), ord=np.nan)
    with pytest.raises(TypeError, match="ord"):
        ops.reduce_norm(np.ones(3), ord=[2])
