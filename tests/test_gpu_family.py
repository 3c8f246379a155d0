"""The rest of the family on the GPU against NumPy: the NaN-skipping reductions (with NumPy's
warnings and errors for slices of nothing but NaN), count_nonzero, ptp and minmax, on every reduce
path, from a poisoned pool, repeats bit-identical."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kps
import ops
from family_helpers import COUNTED, NAN_OPS, close, count_warnings, infinite_slices, reference, scale, with_nans

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import FLAT_SHAPES, STAGED_SHAPES, poison_pool  # noqa: E402

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.float64, np.int32, np.uint8, np.bool_)]
PATH_SHAPES = ([((4096, 4096), (1,)), ((4096, 4096), (0,)), ((16, 1 << 20), (1,)), ((1 << 20, 16), (0,)),
                ((1 << 22,), (0,)), ((64, 32, 3000), (0, 2)), ((4099, 1), (1,))] + FLAT_SHAPES
               + STAGED_SHAPES[:8])


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


@pytest.mark.parametrize("out_dtype", [np.bool_, np.uint8, np.int16, np.int32, np.uint32], ids=lambda d: np.dtype(d).name)
def test_indices_into_a_narrower_out_on_the_gpu(out_dtype):
    """The kernels cast the indices into out= as NumPy does; an all-NaN slice raises all the same."""
    x = np.random.default_rng(9).standard_normal((300, 4099)).astype(np.float32)
    xd = cp.asarray(x)
    for name in ("argmax", "nanargmin"):
        out = cp.full(300, 3, dtype=out_dtype)
        assert getattr(ops, f"reduce_{name}")(xd, axis=1, out=out) is out
        np.testing.assert_array_equal(cp.asnumpy(out), getattr(np, name)(x, axis=1).astype(out_dtype))
    xd[7] = cp.nan
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        ops.reduce_nanargmax(xd, axis=1, out=cp.zeros(300, dtype=out_dtype))


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


#: The named ops that look at their results: name -> (op, NumPy's op, its warning, or None for its
#: ValueError 'All-NaN slice encountered').
LOOKED = {name: spec for name, spec in NAN_OPS.items() if spec[2] is not None}
LOOKED.update({name: (getattr(ops, f"reduce_{name}"), getattr(np, name), None) for name in ("nanargmax", "nanargmin")})


def _said(ours, xd, axes):
    """(the result or None, what was said: the RuntimeWarnings' messages, or the ValueError's)."""
    try:
        return _runtime_warnings(lambda: ours(xd, axis=axes))
    except ValueError as exc:
        return None, [str(exc)]


def _all_nan(shape, axes, where):
    """float32 data without NaN but for the slices over `axes` at the first or the last output, all
    of them, or none."""
    x = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
    if where == "everywhere":
        x[...] = np.nan
    elif where != "nowhere":
        k = 0 if where == "first" else -1
        x[tuple(slice(None) if i in axes else k for i in range(len(shape)))] = np.nan
    return x


def _numpy(theirs, message, x, axes):
    """NumPy's answer in float64; an arg-reduction's over the reduced axes flattened in C order."""
    if message is not None:
        return theirs(x.astype(np.float64), axis=axes)
    tail = tuple(range(x.ndim - len(axes), x.ndim))
    moved = np.moveaxis(x, axes, tail)
    return theirs(moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,)), axis=-1)


@pytest.mark.parametrize("where", ["nowhere", "first", "last", "everywhere"])
@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
def test_repeated_calls_have_the_kernel_look(shape, axes, where):
    """The first call of a signature looks after the reduction (the look kernel); the next ones
    have the reduction kernel look as it writes its results (kps::Look): on every path, the same
    warnings and errors as NumPy's, for one slice of nothing but NaN among many results, for all of
    them (one flag however many match), or none; repeats bit-identical from a poisoned pool."""
    x = _all_nan(shape, axes, where)
    xd = cp.asarray(x)
    for name, (ours, theirs, message) in LOOKED.items():
        expect = [message or "All-NaN slice encountered"] if where != "nowhere" else []
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            reference = None if message is None and expect else _numpy(theirs, message, x, axes)
        results = []
        for call in range(3):
            if call == 2:
                poison_pool(max(1, int(np.prod([n for i, n in enumerate(shape) if i not in axes]))) * 8)
            got, said = _said(ours, xd, axes)
            assert said == expect, (name, call)
            if got is not None:
                got = cp.asnumpy(got)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(reference), err_msg=name)
                if message is None:
                    np.testing.assert_array_equal(got, reference, err_msg=name)
                results.append(got)
        for later in results[1:]:
            np.testing.assert_array_equal(later, results[0], err_msg=name)


def test_the_kernels_look_keeps_to_the_named_op_and_to_its_thread():
    """A plain ops.reduce with a named op's descriptors never looks, before or after the named op
    has prepared its looked calls; two threads looking at the same time, one finding an all-NaN
    slice in every call and the other none, each hear only of their own (nanargmax's ValueError:
    an exception stays in its thread, where warnings.catch_warnings does not)."""
    import threading

    from kps import nan

    x = cp.asarray(_all_nan((512, 1000), (1,), "first"))
    clean = _all_nan((512, 1000), (1,), "nowhere")
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ops.reduce(x, axis=1, op=nan.NANMAX)
            ops.reduce(x, axis=1, op=nan.NANARGMAX, epilogue=kps.INDEX)
        assert _said(ops.reduce_nanmax, x, 1)[1] == ["All-NaN slice encountered"]

    heard = {"nan": [], "clean": []}

    def calls(name, data):  # (no warnings.catch_warnings here: it is not thread-safe)
        with cp.cuda.Stream(non_blocking=True):
            for _ in range(200):
                try:
                    heard[name].append(([], cp.asnumpy(ops.reduce_nanargmax(data, axis=1))))
                except ValueError as exc:
                    heard[name].append(([str(exc)], None))

    threads = [threading.Thread(target=calls, args=a) for a in (("nan", x), ("clean", cp.asarray(clean)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [said for said, _ in heard["nan"]] == [["All-NaN slice encountered"]] * 200
    assert [said for said, _ in heard["clean"]] == [[]] * 200
    for _, got in heard["clean"]:
        np.testing.assert_array_equal(got, np.nanargmax(clean, axis=1))


@pytest.mark.parametrize("name", COUNTED)
def test_nans_from_infinities_are_not_said_to_be_empty_slices_on_the_gpu(name):
    """NumPy's count warning only where a slice is short of numbers, not where infinities gave the
    NaN: on the first call of a signature (the look kernel), on its prepared repeats (the reduction
    kernel's look) and on a torch CUDA tensor; NumPy's values."""
    ours, theirs, _ = NAN_OPS[name]
    x = infinite_slices(np.float32)
    inputs = [cp.asarray]
    try:
        import torch
        inputs.append(lambda a: torch.from_dlpack(cp.asarray(a)))
    except ImportError:  # (the CuPy calls all the same)
        pass
    for ddof in ((0, 1, 0.5) if name != "nanmean" else (None,)):
        kw = {} if ddof is None else {"ddof": ddof}
        for rows in [slice(k, k + 1) for k in range(len(x))] + [slice(None)]:
            part = np.ascontiguousarray(x[rows])
            expect = count_warnings(theirs, part, axis=1, **kw)
            for make in inputs:
                for call in range(3):
                    assert count_warnings(ours, make(part), axis=1, **kw) == expect, (rows, ddof, call)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                close(cp.asnumpy(ours(cp.asarray(part), axis=1, **kw)), reference(name, part, 1, **kw), x.dtype)


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


#: The longest chain of rounding adds an element meets, bounded by the structure (kps/chains.cuh):
#: a pairwise tile (log2 16), two carried levels of 16, the high level, the shuffle and block trees
#: and the split combines (log2 of 2^16 each at most), with room to spare.
CHAIN_BOUND = 4 + 2 * 16 + 8 + 3 * 16


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_plain_sums_stay_within_the_bound_of_their_chains(dtype):
    """On every data kind and layout of the accuracy table: |error| <= 1/2 ulp of the result (the
    final rounding) + chain x 2^-53 x sum |x|. float64 sums keep their chains short (CHAIN_BOUND);
    float32 sums accumulate in float64 and keep the plain order, a thread's chain under 2^13 adds at
    2^21 elements. Data that cancel or mix magnitudes make the second term all but the whole error,
    which a float32 accumulator, or a long chain into a float64 one, breaks."""
    from ops.bench.accuracy import accuracy_cases, exact_sums

    for name, (x, axis) in accuracy_cases(1 << 21).items():
        if x.dtype == np.float16:
            continue
        x = x.astype(dtype)
        got = cp.asnumpy(ops.reduce_sum(cp.asarray(x), axis=axis)).astype(np.float64)
        exact = exact_sums(x, axis)
        magnitude = np.sum(np.abs(x.astype(np.float64)), axis=axis)
        chain = CHAIN_BOUND if dtype == np.float64 else 1 << 13
        ulp = np.maximum(np.spacing(np.abs(exact).astype(dtype)), np.spacing(np.abs(got).astype(dtype)))
        bound = 0.5 * ulp.astype(np.float64) + chain * 2.0 ** -53 * magnitude
        assert np.all(np.abs(got - exact) <= bound), (name, np.max(np.abs(got - exact) / bound))


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
    from ops.bench.accuracy import accuracy_cases, correctly_rounded, ulps

    for name, (x, axis) in accuracy_cases(1 << 20).items():
        got = cp.asnumpy(ops.reduce_sum(cp.asarray(x), axis=axis, precise=True))
        assert ulps(got, correctly_rounded(x, axis)).max() <= 1, name
