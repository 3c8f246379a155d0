"""complex64 and complex128 on the GPU: every op NumPy defines for them against NumPy on a complex128
copy (tests/complex_helpers.py, as tests/test_complex.py holds the NumPy backend), on fresh random
data, over every reduce path (rows, columns, splits, flat runs, staged spans), each result from a
poisoned pool and repeated bit-identical; norms of every ord; out= arrays; torch CUDA complex tensors;
dask arrays of CuPy complex blocks."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from complex_helpers import COMPLEX, COMPLEX_OPS, ORDS, check, complex_data, same
import kps
import ops
from kernels import dispatch, policy

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import FLAT_SHAPES, STAGED_SHAPES, poison_pool  # noqa: E402
from test_gpu_family import _said  # noqa: E402

#: Rows (inner), columns (outer), split rows and columns, one long run, several reduced dims,
#: flat runs and staged spans (complex Welford's 64-byte state: spans of whole reductions, and kept
#: columns over a few rows between kept dims, a slot a thread), short rows folded several a thread.
PATH_SHAPES = ([((512, 1000), (1,)), ((1000, 512), (0,)), ((8, 1 << 17), (1,)), ((1 << 17, 8), (0,)),
                ((1 << 20,), (0,)), ((64, 32, 300), (0, 2)), ((4099, 1), (1,))] + FLAT_SHAPES[:3]
               + STAGED_SHAPES[:6] + [((4001, 3, 5), (1,)), ((2001, 7, 11), (1,)), ((301, 3, 65), (1,))]
               + [((600_001, 2), (1,)), ((300_007, 4), (1,))]  # short rows of whole vectors, several a thread
               + [((400, 240, 33), (1,)), ((100_000, 33), (0,)), ((1 << 20, 5), (0,))]  # var's ragged rows of threads
               + [((100_000, 3, 5), (0, 2)), ((20_000, 3, 7, 5), (0, 1, 3))]  # var's split staged spans
               + [((300, 5, 129), (0, 2))]  # complex64 var's odd runs walked an element a load
               + [((30001, 2, 17), (1,))])  # var's narrow columns over two rows, staged

ARG_OPS = ("argmax", "argmin", "nanargmax", "nanargmin")


def _host(r):
    return tuple(cp.asnumpy(v) for v in r) if isinstance(r, tuple) else cp.asnumpy(r)


def _run(name, xd, axis):
    """Our result from a poisoned pool, and again, bit-identical."""
    fn = COMPLEX_OPS[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fresh = _host(fn(xd, axis=axis))
        poison_pool(xd.nbytes)
        again = _host(fn(xd, axis=axis))
    for a, b in zip(fresh if isinstance(fresh, tuple) else (fresh,), again if isinstance(again, tuple) else (again,)):
        np.testing.assert_array_equal(a, b)
    return fresh


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(COMPLEX_OPS))
def test_every_op_on_every_path(name, dtype, shape, axes):
    if name in ARG_OPS and len(axes) > 1:
        axes = axes[-1:]  # NumPy's arg-reductions take one axis
    x = complex_data(shape, dtype, name, np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32))
    axis = axes[0] if name in ARG_OPS else axes
    poison_pool(x.nbytes)
    if name.startswith("nanarg") and math.prod(shape[a] for a in axes) == 1:  # each NaN is a slice of NaN
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            COMPLEX_OPS[name][0](cp.asarray(x), axis=axis)
        return
    check(name, _run(name, cp.asarray(x), axis), x, axis)


#: Few reduced rows under kept columns over more tiles than the grid's blocks, which ReduceOuter walks
#: with the next tile's loads in flight where the reduction is a state (kernels/planner/outer.py,
#: `_prefetches`, here from one tile a block on): complex var's columns off the 16-byte grid (a tile's
#: 129 columns over 256 threads; kept dims merged around the reduced one, the row's last tile ragged)
#: and over aligned rows of 256.
PREFETCH_SHAPES = [((1200, 5, 129), (1,)), ((600, 5, 9, 33), (1,)), ((1200, 3, 256), (1,))]


@pytest.mark.parametrize("shape,axes", PREFETCH_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_every_op_on_prefetched_tiles(dtype, shape, axes, monkeypatch):
    """Every complex op against NumPy, repeats bit-identical, on tiles whose variance's plan (where
    its tile is one step of rows: complex128's is 4 rows deep) loads each block's next tile early."""
    monkeypatch.setattr(policy, "OUTER_PREFETCH_MIN_TILES", 1)
    xd = cp.asarray(complex_data(shape, dtype, "var", np.random.default_rng(0)))
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    f = kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), dtype)
    cfg = dispatch.launch_for(xd, cp.empty(kept, f.out_dtype), axes, False, f).cfg
    one_step = shape[1] <= cfg.block // cfg.lanes * cfg.ny
    assert cfg.kernel == "outer" and cfg.prefetch == one_step and (one_step or dtype == np.complex128), cfg
    for name in COMPLEX_OPS:
        if name.startswith("nanarg"):
            continue  # (a slice of NaN raises after the call: test_every_op_on_every_path)
        x = complex_data(shape, dtype, name, np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32))
        axis = axes[0] if name in ARG_OPS else axes
        check(name, _run(name, cp.asarray(x), axis), x, axis)


#: Few reduced rows under narrow kept columns, each row of threads a tile of its own (kernels/planner/
#: outer.py, `_stacked`, here from one tile on): complex128 columns of 5 in ragged rows of 5 threads
#: (complex64's, off the 16-byte grid, are staged), 2 rows under 128 columns, a 4-d input.
STACK_SHAPES = [((2000, 3, 5), (1,)), ((1500, 2, 128), (1,)), ((600, 2, 3, 16), (1,))]


@pytest.mark.parametrize("shape,axes", STACK_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_every_op_on_stacked_tiles(dtype, shape, axes):
    """Every complex op against NumPy, repeats bit-identical, on tiles a row of threads each; the
    sum's plan stacks, on the 16-byte grid and off it (an element of 8 or 16 bytes a load)."""
    xd = cp.asarray(complex_data(shape, dtype, "sum", np.random.default_rng(1)))
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    f = kps.resolve(kps.ADD, kps.IDENTITY, kps.NONE, dtype)
    cfg = dispatch.launch_for(xd, cp.empty(kept, f.out_dtype), axes, False, f).cfg
    assert cfg.kernel == "outer" and cfg.stacked, cfg
    for name in COMPLEX_OPS:
        if name.startswith("nanarg"):
            continue  # (a slice of NaN raises after the call: test_every_op_on_every_path)
        x = complex_data(shape, dtype, name, np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32))
        axis = axes[0] if name in ARG_OPS else axes
        check(name, _run(name, cp.asarray(x), axis), x, axis)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_norms_of_every_ord(dtype):
    x = complex_data((300, 257), dtype, "norm", np.random.default_rng(9))
    x[0, :5] = 0
    xd = cp.asarray(x)
    for ord in ORDS:
        for axis in (0, 1):
            with np.errstate(all="ignore"):
                expect = np.asarray(np.linalg.norm(x.astype(np.complex128), ord=ord, axis=axis))
            got = cp.asnumpy(ops.reduce_norm(xd, ord=ord, axis=axis))
            same(got, expect.astype(kps.dtypes.real_dtype(dtype)), f"norm{ord}", x.shape[axis])


def test_out_arrays_of_complex_and_real_results():
    x = complex_data((200, 300), np.dtype(np.complex64), "sum", np.random.default_rng(1))
    xd = cp.asarray(x)
    out = cp.full(300, complex(np.nan, np.nan), dtype=cp.complex64)
    assert ops.reduce_sum(xd, axis=0, out=out) is out
    same(cp.asnumpy(out), np.sum(x.astype(np.complex128), axis=0).astype(np.complex64), "sum", 200)
    var = cp.full(200, np.nan, dtype=cp.float32)
    assert ops.reduce_var(xd, axis=1, out=var) is var
    same(cp.asnumpy(var), np.var(x.astype(np.complex128), axis=1).astype(np.float32), "var", 300)


def test_torch_cuda_complex_tensors():
    torch = pytest.importorskip("torch")
    t = torch.randn(64, 129, dtype=torch.complex128, device="cuda")
    torch.testing.assert_close(ops.reduce_sum(t, axis=1), t.sum(dim=1))
    var = ops.reduce_var(t, axis=0)
    assert var.dtype == torch.float64 and var.is_cuda
    torch.testing.assert_close(var, t.var(dim=0, correction=0))
    for z in (t, t.to(torch.complex64)):  # a complex mean and a real variance: torch.var_mean's pair
        var, mean = torch.var_mean(z, dim=1, correction=0)
        torch.testing.assert_close(ops.reduce_mean_var(z, axis=1), (mean, var))
        assert ops.reduce_argmax(z, axis=0).tolist() == np.argmax(z.cpu().numpy(), axis=0).tolist()


def test_torch_cuda_views_with_a_lazy_conjugate_or_negative_bit():
    """The memory of z.conj() (and of its .imag) holds z: the kernels read it with the bit applied,
    on the checked path, and a prepared call of the same layout without the bit is not taken for it."""
    torch = pytest.importorskip("torch")
    z = torch.randn(64, 129, dtype=torch.complex64, device="cuda")
    for _ in range(2):  # the second round finds the plain layout's prepared call made
        torch.testing.assert_close(ops.reduce_sum(z, axis=1), z.sum(dim=1))
        torch.testing.assert_close(ops.reduce_sum(z.conj(), axis=1), z.sum(dim=1).conj())
        torch.testing.assert_close(ops.reduce_max(z.conj().imag, axis=0), (-z.imag).amax(dim=0))
    with pytest.raises(TypeError, match="out: .*conjugate or negative bit"):
        ops.reduce_sum(z, axis=1, out=torch.zeros(64, dtype=torch.complex64, device="cuda").conj())


def test_dask_arrays_of_cupy_complex_blocks():
    """Blocks reduced to raw states on the GPU (a complex field as its two parts' bits, kps/raw.py),
    merged and finished on the host."""
    da = pytest.importorskip("dask.array")
    for name in ("sum", "var", "mean_var", "argmax", "nanmean", "max", "sum_precise"):
        x = complex_data((40, 30), np.dtype(np.complex128), name, np.random.default_rng(6))
        xd = da.from_array(cp.asarray(x), chunks=(16, 13), asarray=False)
        got = COMPLEX_OPS[name][0](xd, axis=0)
        got = tuple(cp.asnumpy(g.compute()) for g in got) if isinstance(got, tuple) else cp.asnumpy(got.compute())
        check(name, got, x, 0)


def test_a_complex128_view_off_its_16_byte_grid():
    """NumPy's complex128 alignment is 8 bytes; kps::complex<double> loads 16: such an input is
    copied first (ops/gpu_backend.py)."""
    base = cp.asarray(np.random.default_rng(3).standard_normal(2 * 1001 + 1))
    view = base[1:].view(cp.complex128)
    assert view.data.ptr % 16 == 8
    x = cp.asnumpy(view)
    check("sum", cp.asnumpy(ops.reduce_sum(view)), x, None)
    check("var", cp.asnumpy(ops.reduce_var(view)), x, None)


@pytest.mark.parametrize("name", ["mean", "nanmean"])
@pytest.mark.parametrize("shape,axes", [((300, 64), (1,)), ((64, 300), (0,)), ((300, 2, 129), (1,))], ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_means_with_infinite_parts_are_numpys(name, dtype, shape, axes):
    """NumPy divides a complex sum by the complex count (n, 0): an infinite part makes the other
    part NaN (inf * 0 in Smith's division); a mean divided part by part would keep it. Every path's
    mean and nanmean give NumPy's NaNs and infinities where they are, its values elsewhere."""
    rng = np.random.default_rng(abs(hash((name, dtype.name, shape))) % 2**32)
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=flat.size // 50, replace=False)
    specials = np.array([complex(np.inf, 1), complex(1, -np.inf), complex(-np.inf, np.inf), complex(np.nan, 2)], dtype)
    flat[picks] = specials[rng.integers(0, specials.size, picks.size)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(x, axis=axes)
    poison_pool(x.nbytes)
    got = _run(name, cp.asarray(x), axes)
    for part in (np.real, np.imag):
        w, g = part(want), part(got)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        finite = np.isfinite(w)
        np.testing.assert_allclose(g[finite], w[finite], rtol=1e-4 if dtype == np.complex64 else 1e-12, atol=1e-5)


#: The NaN-skipping ops that look at their complex results: name -> NumPy's warning, or None for
#: its ValueError 'All-NaN slice encountered' (the arg-reductions).
LOOKED = {"nanmean": "Mean of empty slice", "nanmax": "All-NaN slice encountered",
          "nanmin": "All-NaN slice encountered", "nanargmax": None, "nanargmin": None}


@pytest.mark.parametrize("part", ["real", "imag", "both", "none"])
@pytest.mark.parametrize("shape,axis", [((512, 1000), 1), ((1000, 512), 0), ((64, 32, 300), 2), ((300_001, 2), 1)],
                         ids=str)
@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_a_slice_of_complex_nans_is_looked_at_part_by_part(dtype, shape, axis, part, monkeypatch):
    """A slice whose every element has a NaN in its real part, its imaginary part or both (NumPy's
    isnan of a complex number), among slices with a NaN here and there: NumPy's warning or error on
    the first call of a signature and on its prepared repeats (the look kernel over the results'
    parts, kernels/look.py; never an elementwise look), NumPy's results; without such a slice,
    nothing said. A torch CUDA tensor's results are looked at on torch's stream."""
    from kernels import look
    from ops import looks

    def elementwise(r):
        raise AssertionError("a GPU result looked at elementwise")

    monkeypatch.setitem(looks._TESTS, look.NAN, elementwise)
    for name, message in LOOKED.items():
        x = complex_data(shape, dtype, name, np.random.default_rng(abs(hash((name, shape))) % 2**32))
        if part != "none":
            where = tuple(slice(None) if i == axis else 0 for i in range(len(shape)))
            nan = {"real": complex(np.nan, 1.0), "imag": complex(1.0, np.nan), "both": complex(np.nan, np.nan)}[part]
            x[where] = nan
        expect = [] if part == "none" else [message or "All-NaN slice encountered"]
        want = _said(COMPLEX_OPS[name][1], x.astype(np.complex128), axis)[0]
        xd = cp.asarray(x)
        inputs = [xd]
        if name == "nanmean":
            torch = pytest.importorskip("torch")
            inputs.append(torch.from_dlpack(xd))
        for x_in in inputs:
            for call in range(3):
                got, said = _said(COMPLEX_OPS[name][0], x_in, axis)
                assert said == expect, (name, call, type(x_in).__name__)
                if got is not None:
                    got = got.cpu().numpy() if hasattr(got, "cpu") else cp.asnumpy(got)
                    same(got, np.asarray(want).astype(got.dtype), name, shape[axis])
