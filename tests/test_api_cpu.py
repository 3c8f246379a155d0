"""The public API on the NumPy backend: NumPy's results, dtypes and errors, on the CPU."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import kps
import ops
from ops import numpy_backend
from helpers import DTYPES, OPS, check, data


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS))
def test_numpy_backend_matches_numpy(op, dtype):
    rng = np.random.default_rng(7)
    x = data((6, 7, 5), dtype, op, rng)
    for axis in [None, 0, 1, 2, (0, 2), (1, 2), ()]:
        for keepdims in (False, True):
            got = OPS[op][0](x, axis=axis, keepdims=keepdims)
            assert isinstance(got, (np.ndarray, np.generic))
            check(op, got, x, axis, keepdims)


def test_bfloat16_on_the_numpy_backend():
    from kps import dtypes

    if dtypes.BFLOAT16 is None:
        pytest.skip("ml_dtypes is not installed")
    x = np.random.default_rng(4).standard_normal((33, 65)).astype(dtypes.BFLOAT16)
    x64 = x.astype(np.float64)
    for fn, ref in ((ops.reduce_sum, np.sum), (ops.reduce_mean, np.mean), (ops.reduce_max, np.max)):
        got = fn(x, axis=1)
        assert got.dtype == dtypes.BFLOAT16
        np.testing.assert_allclose(got.astype(np.float64), ref(x64, axis=1), rtol=1e-2, atol=0.1)


def test_scalar_results_are_numpy_scalars_like_numpy():
    x = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    assert type(ops.reduce_sum(x)) is type(np.sum(x))
    assert ops.reduce_sum(x) == 21 and ops.reduce_prod(x) == 720


def test_dtype_and_out():
    x = np.random.default_rng(1).integers(-5, 5, size=(4, 9)).astype(np.int8)
    assert ops.reduce_sum(x, axis=1, dtype=np.int8).dtype == np.int8
    out = np.full(9, -1.0)
    assert ops.reduce_sum(x, axis=0, out=out) is out
    np.testing.assert_array_equal(out, x.sum(axis=0))
    np.testing.assert_allclose(ops.reduce_mean(x, axis=1), x.mean(axis=1))


def test_int_sums_and_products_into_a_float_out_compute_in_its_dtype():
    """NumPy's ufunc.reduce computes in out='s dtype where no dtype= is given: no int64 wrap."""
    rng = np.random.default_rng(4)
    big = rng.integers(2 ** 61, 2 ** 62, size=(3, 8))
    factors = rng.integers(2, 90, size=(5, 40)).astype(np.int16)
    for ours, theirs, x, dt in ((ops.reduce_sum, np.sum, big, np.float64), (ops.reduce_nansum, np.nansum, big, np.float32),
                                (ops.reduce_prod, np.prod, factors, np.float64),
                                (ops.reduce_prod, np.prod, factors, np.complex128)):
        out, expect = np.full(x.shape[0], np.nan, dt), np.zeros(x.shape[0], dt)
        theirs(x, axis=1, out=expect)
        assert ours(x, axis=1, out=out) is out
        np.testing.assert_allclose(out, expect, rtol=1e-6 if dt == np.float32 else 1e-13)
        assert np.all(np.isfinite(out)) and np.all(out.real > 0)  # (int64 would have wrapped)


def test_empty_reductions():
    e = np.empty((0, 3), np.float32)
    np.testing.assert_array_equal(ops.reduce_sum(e, axis=0), np.zeros(3, np.float32))
    np.testing.assert_array_equal(ops.reduce_prod(e, axis=0), np.ones(3, np.float32))
    assert ops.reduce_all(e, axis=0).all() and not ops.reduce_any(e, axis=0).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(ops.reduce_mean(e, axis=0)).all()
    with pytest.raises(ValueError, match="no identity"):
        ops.reduce_max(e, axis=0)
    assert ops.reduce_max(np.empty((3, 0)), axis=0).shape == (0,)


def _messages(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_the_mean_of_nothing_warns_as_numpys():
    """numpy.mean warns 'Mean of empty slice' where the reduced count is 0, not where the result is."""
    e = np.empty((0, 3))
    for axis, warns in ((0, True), (None, True), (1, False), ((0, 1), True)):
        for fn in (ops.reduce_mean, lambda x, axis: ops.reduce_mean(x, axis=axis, precise=True),
                   lambda x, axis: ops.reduce_mean_var(x, axis=axis)[0]):
            said = _messages(lambda: fn(e, axis=axis))
            assert ("Mean of empty slice" in said) == warns == ("Mean of empty slice" in _messages(
                lambda: np.mean(e, axis=axis))), (axis, said)
    assert _messages(lambda: ops.reduce_mean(np.ones((2, 3)), axis=0)) == []


def test_a_transform_of_one_input_may_name_it_x0():
    """As a transform of several names its inputs: x0 alone renders (kernels/source.py) and compiles."""
    twice = kps.TransformOp("twice_x0", "x0 * 2", numpy=lambda a: a * 2)
    x = np.random.default_rng(3).standard_normal((4, 5))
    np.testing.assert_allclose(ops.reduce(x, axis=1, transform=twice), 2 * x.sum(axis=1))
    f = kps.resolve(kps.ADD, twice, kps.NONE, np.dtype(np.float32))
    assert "const arg_t x0 = x;" in f.render()


def test_user_functors_extend_without_kernel_changes():
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    sq = kps.TransformOp("square", "x * x", numpy=np.square)
    np.testing.assert_allclose(ops.reduce(x, axis=1, op=kps.ADD, transform=sq), (x * x).sum(axis=1), rtol=1e-6)
    rms = kps.Epilogue("rms", "sqrt(a / static_cast<acc_t>(n))", numpy=lambda a, n: np.sqrt(a / n))
    np.testing.assert_allclose(ops.reduce(x, axis=0, transform=sq, epilogue=rms), np.sqrt((x * x).mean(axis=0)),
                               rtol=1e-6)


def test_word_transforms_match_their_bytes():
    """ANY_BYTE / ALL_BYTES (any and all of 1-byte inputs read as uint32 words) against the bytes,
    on random words and on words made of the bytes most likely to break the bit trick."""
    rng = np.random.default_rng(7)
    edges = rng.choice(np.array([0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF], dtype=np.uint8), size=(200_000, 4))
    for words in (rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32),
                  edges.view(np.uint32).ravel()):
        as_bytes = words.view(np.uint8).reshape(-1, 4) != 0
        np.testing.assert_array_equal(kps.functors.ANY_BYTE.numpy(words), as_bytes.any(axis=1))
        np.testing.assert_array_equal(kps.functors.ALL_BYTES.numpy(words), as_bytes.all(axis=1))
    for dt in ("bool", "int8", "uint8"):
        for op in (kps.LOGICAL_OR, kps.LOGICAL_AND):
            f = kps.resolve(op, kps.IDENTITY, kps.NONE, dt, out_dtype=np.int32)
            w = kps.word_functors(f)
            assert kps.packs_words(f) and w.in_dtype == np.uint32 and (w.acc_dtype, w.out_dtype) == (f.acc_dtype, f.out_dtype)
    assert not kps.packs_words(kps.resolve(kps.LOGICAL_OR, kps.ABS, kps.NONE, "int8"))
    assert not kps.packs_words(kps.resolve(kps.LOGICAL_OR, kps.IDENTITY, kps.NONE, "int16"))
    assert not kps.packs_words(kps.resolve(kps.MAX, kps.IDENTITY, kps.NONE, "uint8"))


def _said(caught) -> set:
    """The RuntimeWarnings a call gave, but NumPy's floating-point errors, which no reduction here gives."""
    return {str(w.message) for w in caught if "encountered in" not in str(w.message)}


@given(x=hnp.arrays(st.sampled_from(["float32", "int16", "bool", "float16"]),
                    hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6),
                    elements={"allow_nan": False, "allow_infinity": False}),
       data_=st.data())
def test_numpy_backend_property(x, data_):
    axis = data_.draw(st.one_of(st.none(), hnp.valid_tuple_axes(x.ndim)))
    op = data_.draw(st.sampled_from(["sum", "max", "any", "mean"]))
    fn, ref = OPS[op]
    try:
        with warnings.catch_warnings(record=True) as theirs, np.errstate(all="ignore"):
            warnings.simplefilter("always", RuntimeWarning)
            expect = ref(x, axis=axis)
    except ValueError:
        with pytest.raises(ValueError):
            fn(x, axis=axis)
        return
    with warnings.catch_warnings(record=True) as ours, np.errstate(all="ignore"):
        warnings.simplefilter("always", RuntimeWarning)
        got = fn(x, axis=axis)
    assert _said(ours) == _said(theirs)  # ("Mean of empty slice" where NumPy says it)
    assert np.asarray(got).dtype == np.asarray(expect).dtype
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expect, dtype=np.float64),
                               rtol=2e-2 if x.dtype == np.float16 else 1e-5, atol=1e-2, equal_nan=True)


X = np.arange(12, dtype=np.float32).reshape(3, 4)

#: (call, exception, words the message must contain): every one names its argument.
BAD_CALLS = [
    (lambda: ops.reduce_sum([1, 2, 3]), TypeError, "x"),
    (lambda: ops.reduce_sum("abc"), TypeError, "x"),
    (lambda: ops.reduce_sum(None), TypeError, "x"),
    (lambda: ops.reduce_sum(3.0), TypeError, "x"),
    (lambda: ops.reduce_sum({"a": 1}), TypeError, "x"),
    (lambda: ops.reduce_sum(np.array(["a", "b"])), TypeError, "x"),
    (lambda: ops.reduce_sum(np.array([object()])), TypeError, "x"),
    (lambda: ops.reduce_sum(np.array(["2020-01-01"], dtype="datetime64[D]")), TypeError, "x"),
    (lambda: ops.reduce_sum(np.array([1], dtype="timedelta64[s]")), TypeError, "x"),
    (lambda: ops.reduce_sum(np.zeros(2, dtype="V4")), TypeError, "x"),
    (lambda: ops.reduce_sum(np.ones(2, dtype=np.clongdouble)), TypeError, "unsupported dtype"),
    (lambda: ops.reduce_logsumexp(np.ones(2, dtype=np.complex128)), TypeError, "x: logsumexp of complex"),
    (lambda: ops.reduce_sum(np.ones(2, dtype=np.longdouble)), TypeError, "x"),
    (lambda: ops.reduce_sum(X, axis=2), np.exceptions.AxisError, "axis"),
    (lambda: ops.reduce_sum(X, axis=-3), np.exceptions.AxisError, "axis"),
    (lambda: ops.reduce_sum(X, axis=(0, 5)), np.exceptions.AxisError, "axis"),
    (lambda: ops.reduce_sum(X, axis=1.0), TypeError, "axis"),
    (lambda: ops.reduce_sum(X, axis="0"), TypeError, "axis"),
    (lambda: ops.reduce_sum(X, axis=[0, 1]), TypeError, "axis"),
    (lambda: ops.reduce_sum(X, axis=(0, 0)), ValueError, "axis"),
    (lambda: ops.reduce_sum(X, axis=(1, -1)), ValueError, "axis"),
    (lambda: ops.reduce_sum(X, axis=True), TypeError, "axis"),
    (lambda: ops.reduce_sum(X, axis=(0.5,)), TypeError, "axis"),
    (lambda: ops.reduce_sum(np.float32(1), axis=0), np.exceptions.AxisError, "axis"),
    (lambda: ops.reduce_sum(X, keepdims=1), TypeError, "keepdims"),
    (lambda: ops.reduce_sum(X, keepdims="yes"), TypeError, "keepdims"),
    (lambda: ops.reduce_sum(X, keepdims=None), TypeError, "keepdims"),
    (lambda: ops.reduce_sum(X, dtype="not-a-dtype"), TypeError, "dtype"),
    (lambda: ops.reduce_sum(X, dtype=np.clongdouble), TypeError, "dtype"),
    (lambda: ops.reduce_sum(X, dtype=object), TypeError, "dtype"),
    (lambda: ops.reduce_sum(X, dtype="U3"), TypeError, "dtype"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.empty(3, np.float32)), ValueError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.empty((1, 4), np.float32)), ValueError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, keepdims=True, out=np.empty(4, np.float32)), ValueError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.empty(4, np.int32)), TypeError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.empty(4, np.bool_)), TypeError, "out"),
    (lambda: ops.reduce_mean(X, axis=0, out=np.empty(4, np.int64)), TypeError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=[0, 0, 0, 0]), TypeError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.empty(4, np.clongdouble)), TypeError, "out"),
    (lambda: ops.reduce_sum(X.astype(np.int64), axis=0, out=np.empty(4, np.uint8)), TypeError, "out"),
    (lambda: ops.reduce_sum(X, axis=0, out=np.broadcast_to(np.float32(0), (4,))), ValueError, "out: the array is read-only"),
    (lambda: ops.reduce_var(X, dtype=bool), TypeError, "dtype"),
    (lambda: ops.reduce_std(X, dtype=np.int32), TypeError, "dtype"),
    (lambda: ops.reduce_mean_var(X, dtype=bool), TypeError, "dtype"),
    (lambda: ops.reduce_logsumexp(X, dtype=np.int64), TypeError, "dtype"),
    (lambda: ops.reduce_nanmean(X, dtype=np.int64), TypeError, "dtype"),
    (lambda: ops.reduce_nanvar(X, dtype=bool), TypeError, "dtype"),
    (lambda: kps.Epilogue("one", ("a",), numpy=lambda a, n: (a,)), TypeError, "cuda: a tuple"),
    (lambda: kps.Epilogue("e", "a", numpy=None), TypeError, "numpy"),
    (lambda: kps.TransformOp("t", "x", numpy=None), TypeError, "numpy"),
    (lambda: kps.ReduceOp("r", "a + b", lambda dt: 0, lambda a, b: a + b), TypeError, "numpy"),
    (lambda: ops.reduce(X, op=kps.MINMAX, epilogue=kps.Epilogue("three", ("a.lo", "a.hi", "a.lo"),
                                                               numpy=lambda a, n: (a["lo"], a["hi"]))),
     TypeError, "epilogue: three's NumPy twin gave 2"),
    (lambda: ops.reduce(X, op="add"), TypeError, "op"),
    (lambda: ops.reduce(X, transform=np.square), TypeError, "transform"),
    (lambda: ops.reduce(X, epilogue="mean"), TypeError, "epilogue"),
    (lambda: kps.TransformOp("bad name", "x", numpy=np.abs), ValueError, "name"),
    (lambda: kps.ReduceOp("1st", "a + b", lambda dt: 0, np.add), ValueError, "name"),
    (lambda: ops.reduce_max(np.empty((0, 2)), axis=0), ValueError, "identity"),
    (lambda: ops.reduce_min(np.empty(0)), ValueError, "identity"),
]


@pytest.mark.parametrize("call,exc,words", BAD_CALLS, ids=[f"bad{i}" for i in range(len(BAD_CALLS))])
def test_bad_calls_raise_clear_errors(call, exc, words):
    with pytest.raises(exc) as err:
        call()
    assert words in str(err.value), str(err.value)


def test_at_least_forty_bad_calls():
    assert len(BAD_CALLS) >= 40


class _CpuDLPack:
    """A foreign array that speaks only DLPack, on the CPU."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_cpu_dlpack_producers_take_the_numpy_backend():
    x = data((7, 9), np.float32, "sum", np.random.default_rng(5))
    got = ops.reduce_sum(_CpuDLPack(x), axis=1)
    assert isinstance(got, np.ndarray)
    check("sum", got, x, 1)
    out = np.full(9, -1.0, dtype=np.float32)
    assert ops.reduce_max(_CpuDLPack(x), axis=0, out=out) is out
    np.testing.assert_array_equal(out, x.max(axis=0))


def test_torch_cpu_tensors_answer_in_kind():
    torch = pytest.importorskip("torch")
    t = torch.randn(5, 6)
    r = ops.reduce_sum(t, axis=0)
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float32
    # against float64, not NumPy's float32 sum: its rounding can differ from ours by more than an
    # ulp of a result that nearly cancels; ours is the float64 sum rounded once
    x = t.numpy().astype(np.float64)
    np.testing.assert_allclose(r.numpy(), x.sum(axis=0), rtol=1e-6, atol=1e-6 * np.abs(x).sum(axis=0).max())


def _results(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("name", [n for n in ops.__all__ if n.startswith("reduce_") or n == "count_nonzero"])
def test_results_over_slices_of_one_element_are_fresh_and_writable(name):
    """A slice of one element merges nothing: its result is still a new array a user may write
    (it was the read-only broadcast of the lift for the state ops: minmax, argmax, var), apart
    from x; a torch CPU tensor's result too, with no warning from torch."""
    fn = getattr(ops, name)
    x = np.random.default_rng(12).standard_normal((3, 1, 4))
    for axis in ((), 1, (1,)):
        if name in ("reduce_argmax", "reduce_argmin", "reduce_nanargmax", "reduce_nanargmin") and axis == ():
            continue  # (numpy.argmax takes one axis or None)
        for r in _results(fn(x, axis=axis)):
            r = np.asarray(r)
            assert r.flags.writeable and not np.shares_memory(r, x), (name, axis)
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        for r in _results(fn(torch.from_numpy(x), axis=1)):
            r.fill_(7)  # writable, and x's own values stay
    np.testing.assert_array_equal(x, np.random.default_rng(12).standard_normal((3, 1, 4)))


def test_out_untouched_on_error():
    out = np.full(4, 7.0, dtype=np.float32)
    for bad in (dict(axis=5), dict(axis=0, keepdims=2), dict(axis=0, dtype="nope")):
        with pytest.raises((TypeError, ValueError)):
            ops.reduce_sum(X, out=out, **bad)
        assert (out == 7.0).all()


def test_import_without_gpu_touches_nothing():
    import subprocess
    import sys

    code = "import ops, kps, kernels; print('ok')"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"}, cwd=str(__import__("pathlib").Path(__file__).parent.parent))
    assert res.stdout.strip() == "ok", res.stderr


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_all_keepdims_axis_combinations(dtype):
    x = data((2, 3, 4), np.dtype(dtype), "sum", np.random.default_rng(3))
    for r in range(4):
        for axis in itertools.combinations(range(3), r):
            check("sum", ops.reduce_sum(x, axis=axis, keepdims=True), x, axis, True)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8])
@pytest.mark.parametrize("op", [kps.LOGICAL_OR, kps.LOGICAL_AND])
def test_the_word_column_functors_twins_are_any_and_all(op, dtype):
    """kps.word_columns (the GPU reads kept 1-byte columns four a word): its NumPy twins over uint32
    views give NumPy's any / all of the columns, bytes of every kind (1 & 2 share no bit)."""
    rng = np.random.default_rng(8)
    x = rng.choice(np.array([0, 1, 2, 0x80, 0xFF], dtype=np.uint8), size=(50, 3, 16), p=[0.2, 0.2, 0.2, 0.2, 0.2])
    x[:, 1, :4] = 2  # whole columns of one nonzero value: all is true there
    x[:, 2, 4:8] = 0  # and of zeros: any is false there
    x = x.view(dtype)
    f = kps.word_columns(kps.resolve(op, kps.IDENTITY, kps.NONE, np.dtype(dtype)))
    for axes in [(0,), (0, 1), (1,)]:
        got = numpy_backend.reduce(x.view(np.uint32), axes, False, f).view(np.bool_)
        expect = (np.all if op is kps.LOGICAL_AND else np.any)(x != 0, axis=axes)
        np.testing.assert_array_equal(got, expect)
