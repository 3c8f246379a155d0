"""The rest of the family on the GPU against NumPy: the NaN-skipping reductions (with NumPy's
warnings and errors for slices of nothing but NaN), count_nonzero, ptp and minmax, on every reduce
path, from a poisoned pool, repeats bit-identical."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ops
from family_helpers import NAN_OPS, close, reference, scale, with_nans

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import FLAT_SHAPES, STAGED_SHAPES, poison_pool  # noqa: E402

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32, np.uint8, np.bool_)]
PATH_SHAPES = ([((4096, 4096), (1,)), ((4096, 4096), (0,)), ((16, 1 << 20), (1,)), ((1 << 20, 16), (0,)),
                ((1 << 22,), (0,)), ((64, 32, 3000), (0, 2))] + FLAT_SHAPES + STAGED_SHAPES[:8])


def _twice(fn, xd, axes, **kwargs):
    """A fresh result, and again from a poisoned pool: bit-identical."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = fn(xd, axis=axes, **kwargs)
        results = first if isinstance(first, tuple) else (first,)
        poison_pool(sum(r.nbytes for r in results))
        again = fn(xd, axis=axes, **kwargs)
    for a, b in zip(results, again if isinstance(again, tuple) else (again,)):
        np.testing.assert_array_equal(cp.asnumpy(a), cp.asnumpy(b))
    return tuple(cp.asnumpy(r) for r in results) if isinstance(first, tuple) else cp.asnumpy(first)


def _data(shape, dtype):
    return with_nans(shape, dtype, np.random.default_rng(abs(hash((dtype.name, shape))) % 2**32))


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_nan_reductions_on_every_path(name, dtype, shape, axes):
    if dtype == np.bool_ and name in ("nanvar", "nanstd", "nanmean"):
        pytest.skip("NumPy's nanvar / nanmean of bool are TypeErrors of its own")
    x = _data(shape, dtype)
    kwargs = {"ddof": 1} if name in ("nanvar", "nanstd") else {}
    expect = reference(name, x, axes, **kwargs)
    # float64 results: a sequential float64 state's forward error over the reduced count
    rtol = 1e-12 + 4 * (x.size // max(1, expect.size)) * np.finfo(np.float64).eps if expect.dtype == np.float64 else None
    close(_twice(NAN_OPS[name][0], cp.asarray(x), axes, **kwargs), expect, dtype, rtol=rtol, scale=scale(name, x, axes))


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_extremes_counts_and_nan_indices_on_every_path(dtype, shape, axes):
    x = with_nans(shape, dtype, np.random.default_rng(7), all_nan_row=False)
    xd = cp.asarray(x)
    close(_twice(ops.count_nonzero, xd, axes), np.count_nonzero(x, axis=axes).astype(np.int64), dtype)
    lo, hi = _twice(ops.reduce_minmax, xd, axes)
    close(lo, np.min(x, axis=axes), dtype)
    close(hi, np.max(x, axis=axes), dtype)
    if dtype != np.bool_:
        with np.errstate(all="ignore"):
            close(_twice(ops.reduce_ptp, xd, axes), np.ptp(x, axis=axes), dtype)
    flat = np.isnan(x).reshape(-1) if dtype.kind == "f" else np.zeros(x.size, dtype=bool)
    if len(axes) == 1 and not flat.all():
        for name in ("nanargmax", "nanargmin"):
            try:
                expect = getattr(np, name)(x, axis=axes[0])
            except ValueError:
                with pytest.raises(ValueError, match="All-NaN slice encountered"):
                    getattr(ops, f"reduce_{name}")(xd, axis=axes)
                continue
            close(_twice(getattr(ops, f"reduce_{name}"), xd, axes), expect, dtype)


@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_all_nan_slices_warn_on_the_gpu(name):
    x = with_nans((64, 4099), np.float32, np.random.default_rng(8))  # row 0: nothing but NaN
    ours, _, message = NAN_OPS[name]
    if message is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours(cp.asarray(x), axis=1)
        return
    with pytest.warns(RuntimeWarning, match=message):
        got = cp.asnumpy(ours(cp.asarray(x), axis=1))
    assert np.isnan(got[0]) and not np.isnan(got[1:]).any()
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        ops.reduce_nanargmax(cp.asarray(x), axis=1)


def _runtime_warnings(fn):
    """fn()'s result and the RuntimeWarnings' messages it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("where", [None, 0, -1], ids=["nowhere", "first", "last"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_the_look_finds_an_all_nan_slice_among_many_results(dtype, where):
    """300,001 results, more than one stride of the look kernel's grid: a slice of nothing but NaN
    first, last or nowhere (kernels/look.py), on a stream of its own, into a fresh result and into
    a strided `out` (looked at elementwise)."""
    x = np.random.default_rng(9).standard_normal((300_001, 3)).astype(dtype)
    if where is not None:
        x[where] = np.nan
    expect = ["All-NaN slice encountered"] if where is not None else []
    with cp.cuda.Stream(non_blocking=True):
        xd = cp.asarray(x)
        strided = cp.full(2 * x.shape[0], -1.0, dtype)[::2]
        for out in (None, strided):
            got, said = _runtime_warnings(lambda: ops.reduce_nanmax(xd, axis=1, out=out))
            assert said == expect
            np.testing.assert_array_equal(cp.asnumpy(got), _runtime_warnings(lambda: np.nanmax(x, axis=1))[0])
        if where is None:
            np.testing.assert_array_equal(cp.asnumpy(ops.reduce_nanargmax(xd, axis=1)), np.nanargmax(x, axis=1))
        else:
            with pytest.raises(ValueError, match="All-NaN slice encountered"):
                ops.reduce_nanargmax(xd, axis=1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_look_reads_torch_results_on_torchs_stream(dtype):
    torch = pytest.importorskip("torch")
    x = torch.randn(4097, 65, device="cuda").to(getattr(torch, dtype))
    x[4096] = float("nan")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        got, said = _runtime_warnings(lambda: ops.reduce_nanmin(x, axis=1))
        assert said == ["All-NaN slice encountered"] and got.isnan().sum().item() == 1 and got[4096].isnan().item()
        assert _runtime_warnings(lambda: ops.reduce_nanmin(x[:4096], axis=1))[1] == []


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64), np.dtype(np.int32)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("ord", [2, 1, np.inf, 0, 3], ids=str)
def test_norms_on_every_path(ord, dtype, shape, axes):
    from test_family import norm64

    x = with_nans(shape, dtype, np.random.default_rng(10), all_nan_row=False)
    if dtype.kind == "f":
        x[np.isnan(x)] = 1.5
    expect = norm64(x, ord, axes).astype(np.linalg.norm(x.reshape(-1)[:1], ord=ord).dtype)
    close(_twice(lambda a, axis: ops.reduce_norm(a, ord=ord, axis=axis), cp.asarray(x), axes), expect, dtype)


def test_the_two_norm_neither_overflows_nor_underflows_on_the_gpu():
    for dtype, big in ((cp.float32, 1e20), (cp.float32, 1e-30), (cp.float64, 1e200), (cp.float64, 1e-200)):
        x = cp.full((3, 1 << 20), big, dtype=dtype)
        got = cp.asnumpy(ops.reduce_norm(x, axis=1))
        np.testing.assert_allclose(got, np.sqrt(1 << 20) * big, rtol=1e-5)


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32)], ids=lambda d: d.name)
def test_precise_sums_on_every_path(dtype, shape, axes):
    x = with_nans(shape, dtype, np.random.default_rng(11), all_nan_row=False)
    if dtype.kind == "f":
        x[np.isnan(x)] = 0.25
    got = _twice(lambda a, axis: ops.reduce_sum(a, axis=axis, precise=True), cp.asarray(x), axes)
    expect = np.sum(x, axis=axes) if dtype.kind != "f" else np.sum(x.astype(np.float64), axis=axes).astype(dtype)
    close(got, expect, dtype, rtol=2e-7 if dtype == np.float32 else None)


def test_precise_sums_are_correctly_rounded_on_the_gpu():
    from ops.accuracy import accuracy_cases, correctly_rounded, ulps

    for name, (x, axis) in accuracy_cases(1 << 20).items():
        got = cp.asnumpy(ops.reduce_sum(cp.asarray(x), axis=axis, precise=True))
        assert ulps(got, correctly_rounded(x, axis)).max() <= 1, name
