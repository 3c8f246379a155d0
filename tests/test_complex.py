"""complex64 and complex128 through every op NumPy defines for them, on the NumPy backend, against
NumPy (complex128 reference, NumPy's result dtypes: real variances and norms, NumPy's lexicographic
order and NaN rules for the orderings); user functors reading complex values; torch complex tensors
and dask arrays of complex blocks; every op's kernel for both complex dtypes compiles for sm_90
(NVRTC). The same on the GPU: tests/test_gpu_complex.py."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kps
import ops
from complex_helpers import COMPLEX, COMPLEX_OPS, ORDS, axes_for, check, complex_data, same
from kernels import config, source
from kps import raw


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(COMPLEX_OPS))
def test_every_op_matches_numpy_on_complex_data(name, dtype):
    rng = np.random.default_rng(abs(hash((name, dtype.name))) % 2**32)
    for shape in ((7, 9), (4, 5, 6), (33,)):
        x = complex_data(shape, dtype, name, rng)
        for axis in axes_for(name, len(shape)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = COMPLEX_OPS[name][0](x, axis=axis)
            check(name, got, x, axis)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_norms_of_complex_vectors_are_real(dtype):
    x = complex_data((6, 8), dtype, "norm", np.random.default_rng(8))
    x[0, :3] = 0
    for ord in ORDS:
        for axis in (None, 0, 1):
            with np.errstate(all="ignore"):
                wide = x.astype(np.complex128)
                expect = np.asarray(np.linalg.norm(wide.reshape(-1) if axis is None else wide, ord=ord,
                                                   axis=0 if axis is None else axis))
                got = ops.reduce_norm(x, ord=ord, axis=axis)
            expect = expect.astype(kps.dtypes.real_dtype(dtype))
            same(got, expect, f"norm{ord}", x.size // max(1, expect.size))


def test_numpy_orders_complex_numbers_by_real_then_imaginary_part():
    x = np.array([1 + 2j, 1 + 3j, 0 + 9j, 1 - 5j, -2 + 0j], dtype=np.complex64)
    assert ops.reduce_max(x) == 1 + 3j and ops.reduce_argmax(x) == 1
    assert ops.reduce_min(x) == -2 and ops.reduce_argmin(x) == 4
    assert ops.reduce_ptp(x) == np.ptp(x)
    nan_im = np.array([1 + 1j, complex(1, np.nan), 2 + 0j])  # a NaN in either part wins, the first one
    assert np.isnan(ops.reduce_max(nan_im)) and ops.reduce_argmax(nan_im) == np.argmax(nan_im) == 1
    assert ops.reduce_nanmax(nan_im) == 2 and ops.reduce_nanargmin(nan_im) == 0


def test_empty_and_nan_slices_follow_numpy():
    empty = np.empty((0, 3), np.complex64)
    assert ops.reduce_sum(empty, axis=0).dtype == np.complex64 and (ops.reduce_prod(empty, axis=0) == 1).all()
    with pytest.raises(ValueError):
        ops.reduce_max(empty, axis=0)
    nans = np.full((2, 3), complex(np.nan, 0), np.complex128)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(ops.reduce_nanmean(nans, axis=1)).all()
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        assert np.isnan(ops.reduce_nanmax(nans, axis=1)).all()
    assert (ops.reduce_nansum(nans, axis=1) == 0).all()


def test_what_numpy_does_not_define_for_complex_is_a_clear_error():
    x = np.ones(3, np.complex64)
    with pytest.raises(TypeError, match="x: logsumexp of complex"):
        ops.reduce_logsumexp(x)


#: A user's functors on complex values: |x|^2 through kps::Norm and a transform of the parts.
NORM_SQ = kps.TransformOp("norm_sq", "kps::Norm(x)", numpy=lambda x: (x * np.conj(x)).real)
ROTATE = kps.TransformOp("rotate", "kps::complex<double>(kps::Imag(x), kps::Real(x)) * kps::complex<double>(kps::Conj(x))",
                         numpy=lambda x: (x.imag + 1j * x.real).astype(np.complex128) * np.conj(x))


def test_user_functors_read_and_accumulate_complex_values():
    x = complex_data((5, 8), np.dtype(np.complex64), "sum", np.random.default_rng(2))
    got = ops.reduce(x, axis=1, transform=NORM_SQ)
    np.testing.assert_allclose(got, np.sum(np.abs(x) ** 2, axis=1), rtol=1e-5)
    assert got.dtype == np.float32
    got = ops.reduce(x, axis=0, op=kps.MUL, transform=ROTATE)
    wide = x.astype(np.complex128)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.prod((wide.imag + 1j * wide.real) * np.conj(wide), axis=0), rtol=1e-9)


def test_torch_complex_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 6, dtype=torch.complex64)
    total = ops.reduce_sum(t, axis=1)
    assert isinstance(total, torch.Tensor) and total.dtype == torch.complex64
    torch.testing.assert_close(total, t.sum(dim=1))
    var = ops.reduce_var(t, axis=0)
    assert var.dtype == torch.float32
    torch.testing.assert_close(var, t.var(dim=0, correction=0))
    torch.testing.assert_close(ops.reduce_norm(t, axis=1), torch.linalg.vector_norm(t, dim=1))


@pytest.mark.parametrize("name", list(COMPLEX_OPS))
def test_every_op_on_torch_complex_tensors_as_on_numpy_arrays(name):
    """Each op on a complex torch tensor gives what it gives the NumPy array (the values, and the
    dtype in torch's name): a complex mean with a real variance (torch.var_mean's pair), the data's
    imaginary parts kept."""
    torch = pytest.importorskip("torch")
    x = complex_data((9, 14), np.dtype(np.complex64), name, np.random.default_rng(9))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mine, theirs = COMPLEX_OPS[name][0](torch.from_numpy(x), 1), COMPLEX_OPS[name][0](x, 1)
    for got, expect in zip(*((r if isinstance(r, tuple) else (r,)) for r in (mine, theirs))):
        assert isinstance(got, torch.Tensor) and got.numpy().dtype == expect.dtype, (got.dtype, expect.dtype)
        np.testing.assert_array_equal(got.numpy(), expect)
    if name == "mean_var":
        var, mean = torch.var_mean(torch.from_numpy(x), dim=1, correction=0)
        torch.testing.assert_close(mine, (mean, var))


def test_torch_views_with_a_lazy_conjugate_or_negative_bit():
    """torch's z.conj() and its .imag only mark the view (the memory holds z): they are read with the
    bit applied, and as `out=` refused by name (tests/test_gpu_complex.py: CUDA tensors)."""
    torch = pytest.importorskip("torch")
    z = torch.randn(5, 7, dtype=torch.complex128, generator=torch.Generator().manual_seed(2))
    conj, neg = z.conj(), z.conj().imag
    assert conj.is_conj() and neg.is_neg()
    torch.testing.assert_close(ops.reduce_sum(conj, axis=0), z.sum(dim=0).conj())
    torch.testing.assert_close(ops.reduce_max(neg, axis=1), (-z.imag).amax(dim=1))
    torch.testing.assert_close(ops.reduce_mean(conj, axis=1), z.mean(dim=1).conj())
    with pytest.raises(TypeError, match="out: .*conjugate or negative bit"):
        ops.reduce_sum(z, axis=0, out=torch.zeros(7, dtype=torch.complex128).conj())


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
def test_torch_complex_tensors_where_torchs_cpu_kernel_has_none(name):
    """torch's CPU nansum and nanmean refuse complex inputs for want of a kernel ("nansum on CPU does
    not support complex inputs"), not by a dtype rule (on the meta device they give complex): a
    complex tensor gets NumPy's answer, as a complex tensor (tests/test_gpu_complex.py: CUDA tensors)."""
    torch = pytest.importorskip("torch")
    x = complex_data((40, 30), np.dtype(np.complex64), name, np.random.default_rng(7))
    got = COMPLEX_OPS[name][0](torch.from_numpy(x), axis=0)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.complex64
    check(name, got.numpy(), x, 0)


def test_dask_arrays_of_complex_blocks():
    da = pytest.importorskip("dask.array")
    for name in ("sum", "var", "argmax", "nanmean", "max"):
        x = complex_data((12, 10), np.dtype(np.complex128), name, np.random.default_rng(6))
        got = COMPLEX_OPS[name][0](da.from_array(x, chunks=(5, 4)), axis=0)
        check(name, np.asarray(got.compute()), x, 0)


#: One spec of each op's kernel (op, transform, epilogue): every op NumPy defines for complex numbers.
COMPLEX_SPECS = [(kps.ADD, kps.IDENTITY, kps.NONE), (kps.MUL, kps.IDENTITY, kps.NONE), (kps.ADD, kps.IDENTITY, kps.MEAN),
                 (kps.MAX, kps.IDENTITY, kps.NONE), (kps.MIN, kps.IDENTITY, kps.NONE),
                 (kps.LOGICAL_OR, kps.IDENTITY, kps.NONE), (kps.LOGICAL_AND, kps.IDENTITY, kps.NONE),
                 (kps.ADD, kps.NONZERO, kps.NONE), (kps.ARGMAX, kps.IDENTITY, kps.INDEX),
                 (kps.ARGMIN, kps.IDENTITY, kps.INDEX), (kps.WELFORD, kps.IDENTITY, kps.variance(1)),
                 (kps.WELFORD, kps.IDENTITY, kps.std(0.5)), (kps.WELFORD, kps.IDENTITY, kps.mean_and_variance(0)),
                 (kps.nan.NAN_WELFORD, kps.IDENTITY, kps.nan.nan_variance(1)),
                 (kps.nan.SUM_COUNT, kps.IDENTITY, kps.nan.MEAN_OF_NUMBERS), (kps.ADD, kps.nan.NAN_TO_ZERO, kps.NONE),
                 (kps.nan.NANMAX, kps.IDENTITY, kps.NONE), (kps.nan.NANMIN, kps.IDENTITY, kps.NONE),
                 (kps.nan.NANARGMAX, kps.IDENTITY, kps.INDEX), (kps.MINMAX, kps.IDENTITY, kps.PEAK_TO_PEAK),
                 (kps.MINMAX, kps.IDENTITY, kps.MIN_AND_MAX), (kps.precise.NEUMAIER, kps.IDENTITY, kps.precise.PRECISE_SUM),
                 (kps.precise.NEUMAIER, kps.IDENTITY, kps.precise.PRECISE_MEAN),
                 *(kps.norms.of_magnitudes(o, f) for o, f in ((2, False), (2, True), (1, False), (np.inf, False),
                                                             (0, False), (2.5, False))),
                 (kps.ADD, NORM_SQ, kps.NONE), (kps.MUL, ROTATE, kps.NONE)]


def test_every_complex_kernel_compiles_for_sm_90():
    """The fast tier's compile of complex numbers: each op's kernel, rows reduced, for complex64 and
    complex128, and raw states of a few (every kernel variant: test_compile.py, exhaustive tier)."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    for dtype in COMPLEX:
        cfg = config.plan((64, 64), (64, 1), (1,), (1,), dtype.itemsize, dtype.itemsize, 132)
        for op, transform, epilogue in COMPLEX_SPECS:
            f = source.plan_functors(cfg, kps.resolve(op, transform, epilogue, dtype))
            prog = kps.compile_program(source.program(f), [source.kernel_name(cfg, f)], "sm_90", [source.INCLUDE_DIR],
                                       optimise=False)
            assert prog.cubin, (op.name, epilogue.name, dtype)
        for op, epilogue in ((kps.WELFORD, kps.variance(0)), (kps.ADD, kps.NONE), (kps.ARGMIN, kps.INDEX)):
            f = source.plan_functors(cfg, raw.functors(kps.resolve(op, kps.IDENTITY, epilogue, dtype)))
            prog = kps.compile_program(source.program(f), [source.kernel_name(cfg, f)], "sm_90", [source.INCLUDE_DIR],
                                       optimise=False)
            assert prog.cubin, ("raw", op.name, dtype)  # a dask block's raw state (kps/raw.py): parts apart


def test_the_widest_states_take_the_kernels_that_hold_them():
    """complex Welford's 64-byte state is staged in spans of whole reductions, which keep no slots
    in shared memory (policy.STAGE_MAX_DIRECT_ACC_BYTES), in split spans over short reduced runs a
    slot a thread (STAGE_WIDE_MAX_RUN_BYTES), and across kept columns over a few rows a slot a thread
    (STAGE_WIDE_STATE_SLOTS: 40 rows, more than ReduceOuter's stacked walk holds a thread); four slots
    of it beside a span would overflow shared memory (policy.STAGE_MAX_ACC_BYTES), so its wide columns
    of many rows take ReduceOuter. float64 Welford's 32 bytes take every span."""
    cfg = config.plan((4001, 40, 5), [200, 5, 1], (1,), [5, 1], 8, 8, 132, acc_itemsize=64, state=True)
    assert cfg.kernel == "staged" and not cfg.stage.direct and cfg.stage.slots_per_thread == 1
    for shape, axes, direct, wide_staged in (((2003, 3), (1,), True, True), ((60001, 3), (0,), False, False),
                                             ((401, 16, 11), (0, 2), False, True)):
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        kept = [n for i, n in enumerate(shape) if i not in axes]
        out_strides = [int(np.prod(kept[i + 1:])) for i in range(len(kept))]
        plans = {acc: config.plan(shape, strides, axes, out_strides, 8, 8, 132, acc_itemsize=acc, state=True)
                 for acc in (32, 64)}
        assert plans[32].kernel == "staged" and plans[32].stage.direct == direct, shape
        assert (plans[64].kernel == "staged") == wide_staged, (shape, plans[64].kernel)
        if wide_staged:
            assert plans[64].stage.direct == direct and plans[64].stage.slots_per_thread <= 1


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_complex_state_is_laid_out_as_its_cuda_struct(dtype):
    """A state's NumPy twin has the CUDA struct's offsets and size, which size the kernels' partials:
    kps::complex<T> aligns to its whole size, so complex Welford's state (a count, a complex shift
    and sum, a real sum of squares) is 64 bytes with its complex fields at 16 and 32, not NumPy's
    packed 48 (a split launch's partials overran their buffer by a quarter). Every program also
    checks the size and each field's alignment where it compiles (kps/functors.py)."""
    welford = kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), np.dtype(dtype)).acc_dtype
    assert welford.itemsize == 64
    assert [welford.fields[name][1] for name in ("n", "shift", "s1", "s2")] == [0, 16, 32, 48]
    count = kps.resolve(kps.nan.SUM_COUNT, kps.IDENTITY, kps.nan.MEAN_OF_NUMBERS, np.dtype(dtype)).acc_dtype
    assert count.itemsize == 32  # a complex sum and a real count: padded to the complex sum's 16
