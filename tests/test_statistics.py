"""State reductions (var, std, logsumexp, mean and variance in one call) and user-declared states, on
the NumPy backend."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kps
import ops
from helpers import DTYPES, data
from stats_helpers import STATS, check, check_mean_var, check_sprinkled, outliers, sprinkled

AXES = [None, 0, 1, 2, (0, 2), (1, 2), ()]



@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(STATS))
def test_state_reductions_match_the_float64_reference(name, dtype):
    rng = np.random.default_rng(11)
    x = data((6, 7, 5), dtype, "sum", rng)
    for axis in AXES:
        for keepdims in (False, True):
            for ddof in ((0, 1, 2) if name != "logsumexp" else (0,)):
                kwargs = {"ddof": ddof} if name != "logsumexp" else {}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    got = STATS[name](x, axis=axis, keepdims=keepdims, **kwargs)
                check(name, got, x, axis, keepdims, ddof)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_mean_and_variance_from_one_call(dtype):
    x = data((6, 7, 5), dtype, "sum", np.random.default_rng(12))
    for axis in AXES:
        for keepdims in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = ops.reduce_mean_var(x, axis=axis, keepdims=keepdims, ddof=1)
            check_mean_var(got, x, axis, keepdims, ddof=1)
    far = (np.random.default_rng(3).standard_normal((4096, 9)) + 1e4).astype(np.float32)
    check_mean_var(ops.reduce_mean_var(far, axis=0), far, 0, rtol=1e-5)
    with pytest.raises(TypeError, match="out:"):
        ops.reduce(x, op=kps.WELFORD, epilogue=kps.mean_and_variance(0), out=np.empty(()))
    with pytest.raises(TypeError, match="ddof"):
        ops.reduce_mean_var(x, ddof="1")


def test_variance_keeps_its_digits_far_from_zero():
    # mean 1e4, spread 1, float32: a sum-of-squares formula cancels; the state does not
    x = (np.random.default_rng(3).standard_normal((4096, 9)) + 1e4).astype(np.float32)
    for axis in (None, 0):
        check("var", ops.reduce_var(x, axis=axis, ddof=1), x, axis, ddof=1, rtol=1e-5)
        check("std", ops.reduce_std(x, axis=axis), x, axis, rtol=1e-5)


def test_variance_keeps_its_digits_when_the_shift_is_an_outlier():
    x = outliers()
    for axis in (None, 1):
        check("var", ops.reduce_var(x, axis=axis), x, axis, rtol=1e-9)
        check_mean_var(ops.reduce_mean_var(x, axis=axis), x, axis, rtol=1e-9)


def test_one_element_and_infinite_shifts_follow_numpy():
    """A state of one element has sums of -0.0 and, for inf or NaN, a shift that is not a number:
    variance +0.0 and NaN as NumPy's; the mean of [inf] is inf."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for row in ([5.0], [np.nan], [np.inf], [-np.inf, -np.inf], [np.inf, 1.0]):
            x = np.array([row])
            got, expect = ops.reduce_var(x, axis=1), np.var(x, axis=1)
            assert np.array_equal(got, expect, equal_nan=True) and not np.signbit(got[~np.isnan(got)]).any(), (row, got)
        mean, var = ops.reduce_mean_var(np.array([np.inf]))
        assert mean == np.inf and np.isnan(var)


@pytest.mark.parametrize("shape,axis", [((64, 300), 1), ((300, 64), 0), ((5000,), None), ((30, 7, 40), (0, 2)),
                                        ((30, 7, 40), 1), ((2000, 3), 1), ((3, 2000), 0)], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_infinities_nans_and_overflowing_squares_follow_numpy(dtype, shape, axis):
    """var, std, nanvar, nanstd and mean_var over data with infinities, NaN and values whose squares
    overflow at random places (a state's shift among them): NaN, inf and values where NumPy's are."""
    rng = np.random.default_rng([len(dtype), *shape])
    for _ in range(3):
        check_sprinkled(sprinkled(shape, dtype, axis, rng), axis)
    small = np.array([1e30, -1.0, 1.0], dtype=np.float32)  # a float32 state's squares overflow at 1e30
    for fn, numpys in ((ops.reduce_var, np.var), (ops.reduce_std, np.std), (ops.reduce_nanvar, np.nanvar)):
        with np.errstate(over="ignore"):
            assert fn(small, dtype=np.float32) == numpys(small, dtype=np.float32) == np.inf


def test_edges_follow_numpy_and_scipy():
    inf, nan = np.inf, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isinf(ops.reduce_var(np.array([1.0, 2.0, 3.0]), ddof=3))  # max(n - ddof, 0) = 0
        assert np.isnan(ops.reduce_var(np.array([], dtype=np.float32)))
        assert np.isnan(ops.reduce_var(np.array([1.0, nan])))
    lse = ops.reduce_logsumexp
    assert lse(np.array([inf, inf])) == inf and lse(np.array([1.0, inf])) == inf
    assert lse(np.array([-inf, -inf])) == -inf and lse(np.array([], dtype=np.float32)) == -inf
    assert np.isnan(lse(np.array([nan, 1.0]))) and np.isnan(lse(np.array([1.0, nan, inf])))
    big = np.array([1e4, 1e4], dtype=np.float32)  # exp(1e4) overflows; the running maximum does not
    assert abs(float(lse(big)) - (1e4 + np.log(2))) < 1e-2


@pytest.mark.parametrize("ddof,exc", [(True, TypeError), (np.bool_(False), TypeError), ("1", TypeError),
                                      (None, TypeError), (1j, TypeError), ([1], TypeError)])
def test_bad_ddof_names_the_argument(ddof, exc):
    out = np.full(3, 7.0, dtype=np.float32)
    with pytest.raises(exc, match="ddof"):
        ops.reduce_var(np.ones((4, 3), np.float32), axis=0, ddof=ddof, out=out)
    assert (out == 7.0).all()


def test_a_user_declared_state_min_and_max_in_one_pass():
    def minmax_combine(a, b):
        return {"lo": np.minimum(a["lo"], b["lo"]), "hi": np.maximum(a["hi"], b["hi"])}

    minmax = kps.ReduceOp(
        "minmax", combine="acc_t r; r.lo = min(a.lo, b.lo); r.hi = max(a.hi, b.hi); return r;",
        identity=lambda dt: {"lo": np.inf, "hi": -np.inf}, numpy=minmax_combine,
        state=(("lo", "acc"), ("hi", "acc")), lift="acc_t r; r.lo = x; r.hi = x; return r;",
        numpy_lift=lambda x: {"lo": x, "hi": x})
    spread = kps.Epilogue("spread", "a.hi - a.lo", lambda a, n: a["hi"] - a["lo"])
    x = np.random.default_rng(5).standard_normal((50, 8)).astype(np.float32)
    got = ops.reduce(x, axis=0, op=minmax, epilogue=spread)
    np.testing.assert_array_equal(got, x.max(axis=0) - x.min(axis=0))
    f = kps.resolve(minmax, kps.IDENTITY, spread, np.float32)
    assert f.acc_dtype.names == ("lo", "hi") and f.acc_dtype.itemsize == 8
    assert "struct State_minmax_float32 {" in f.render()
    assert "Lifter<State_minmax_float32, float>" in f.render()


@pytest.mark.parametrize("state,message", [
    ((("n", "complex64"),), "unsupported type"),
    ((("n", "acc"), ("n", "acc")), "duplicate"),
    ((("1n", "acc"),), "C identifiers"),
    ([("n", "acc")], "tuple"),
])
def test_bad_state_names_the_argument(state, message):
    with pytest.raises((TypeError, ValueError), match=f"state.*{message}|{message}"):
        kps.ReduceOp("bad", "a", lambda dt: {"n": 0}, lambda a, b: a, state=state, lift="a",
                     numpy_lift=lambda x: {"n": x})


def test_a_fold_is_rendered_only_where_declared():
    """`fold` merges one element into a state that holds one (kps.ReduceOp); a state without one
    renders no Fold, so its kernels combine every lifted element (kps::HasFold)."""
    f = kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), np.float32)
    assert f"Fold(acc_t a, value_t x, long long i) {{ {kps.WELFORD.fold} }}" in f.render()
    g = kps.resolve(kps.LOGSUMEXP, kps.IDENTITY, kps.LOG_OF_SUM, np.float32)
    assert "Fold(" not in g.render()


def test_a_push_is_rendered_only_where_declared():
    """`push` merges one element into a state that may be empty (kps.ReduceOp): mean_var's finite
    shift declares one (its lift selects its fields by the element); var's Welford, whose lift's
    fields are constants, does not (kps::HasPush)."""
    f = kps.resolve(kps.WELFORD_FINITE_SHIFT, kps.IDENTITY, kps.mean_and_variance(0), np.float32)
    assert f"Push(acc_t a, value_t x, long long i) {{ {kps.WELFORD_FINITE_SHIFT.push} }}" in f.render()
    assert kps.WELFORD.fold in kps.WELFORD_FINITE_SHIFT.push and kps.WELFORD_FINITE_SHIFT.lift in kps.WELFORD_FINITE_SHIFT.push
    assert "Push(" not in kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), np.float32).render()


def test_only_a_state_pushes():
    with pytest.raises(TypeError, match="push"):
        kps.ReduceOp("bad", "a + b", lambda dt: 0, np.add, push="return a;")


def test_only_a_state_folds():
    with pytest.raises(TypeError, match="fold"):
        kps.ReduceOp("bad", "a + b", lambda dt: 0, np.add, fold="return a;")


def test_a_state_needs_its_lift():
    with pytest.raises(TypeError, match="lift"):
        kps.ReduceOp("bad", "a", lambda dt: {"n": 0}, lambda a, b: a, state=(("n", "acc"),))
