"""ddof as NumPy takes it, on the NumPy backend: any real number (0.5, negative, inf, NaN) through
every op that takes it, NumPy's values and its 'Degrees of freedom <= 0' warning where n - ddof <= 0;
an integral ddof keeps its integer kernel; the float ddof epilogues compile for sm_90 (NVRTC); torch
tensors and dask arrays take a float ddof too. The same on the GPU: tests/test_gpu_ddof.py."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kps
import ops
from ddof_helpers import AXES, DDOF_OPS, DDOFS, DTYPES, check, ddof_data, dof_warned
from kernels import config, source
from ops.call import check_ddof


def _ours(name, x, axis, ddof):
    """(our result, whether it warned about the degrees of freedom)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = DDOF_OPS[name][0](x, axis=axis, ddof=ddof)
    return got, dof_warned(caught)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(DDOF_OPS))
def test_every_ddof_op_matches_numpy_for_any_real_ddof(name, dtype):
    x = ddof_data(dtype, np.random.default_rng(43))
    for axis in AXES:
        for ddof in DDOFS:
            got, warned = _ours(name, x, axis, ddof)
            check(name, got, x, axis, ddof, warned)


def test_an_empty_reduction_warns_as_numpy_var_does():
    empty = np.empty((0, 3))
    for name in DDOF_OPS:
        for ddof in (0, -0.5, 0.5):
            got, warned = _ours(name, empty, 0, ddof)
            check(name, got, empty, 0, ddof, warned)


def test_an_integral_ddof_keeps_its_integer_kernel():
    """ddof=1.0 (or numpy's 1) runs ddof=1's epilogue: the kernel an int always had."""
    for value in (1, 1.0, np.float32(1), np.int16(1)):
        assert check_ddof(value) == 1 and type(check_ddof(value)) is int
    assert kps.variance(check_ddof(1.0)) is kps.variance(1)
    assert kps.variance(1).name == "variance_ddof1" and "static_cast<decltype(a.n)>(1)" in kps.variance(1).cuda
    assert isinstance(check_ddof(0.5), float) and check_ddof(-2) == -2


def test_each_real_ddof_names_its_own_epilogue():
    values = [0.5, -0.5, -1, 2, np.inf, -np.inf, np.nan, 1e-300]
    names = {kps.variance(v).name for v in values} | {kps.nan.nan_std(v).name for v in values}
    assert len(names) == 2 * len(values)
    for name in names:
        assert name.isidentifier()


@pytest.mark.parametrize("ddof", [True, np.bool_(True), "1", None, 1j, [1], np.ones(2)])
def test_a_ddof_that_is_not_a_real_number_is_a_type_error(ddof):
    for name, (fn, _) in DDOF_OPS.items():
        with pytest.raises(TypeError, match="ddof"):
            fn(np.ones((2, 3)), axis=0, ddof=ddof)


def test_torch_tensors_take_a_float_ddof():
    torch = pytest.importorskip("torch")
    t = torch.randn(4, 6, dtype=torch.float64)
    for ddof in (0.5, -1.5, 2):
        got = ops.reduce_var(t, axis=1, ddof=ddof)
        torch.testing.assert_close(got, torch.var(t, dim=1, correction=ddof))
        torch.testing.assert_close(ops.reduce_std(t, axis=0, ddof=ddof), torch.std(t, dim=0, correction=ddof))


def test_dask_arrays_take_a_float_ddof():
    da = pytest.importorskip("dask.array")
    x = np.random.default_rng(4).standard_normal((12, 10))
    for name in ("var", "nanstd", "mean_var"):
        got = DDOF_OPS[name][0](da.from_array(x, chunks=(5, 4)), axis=0, ddof=0.5)
        np.testing.assert_allclose(np.asarray(got.compute()), DDOF_OPS[name][1](x, axis=0, ddof=0.5), rtol=1e-12)


#: Each ddof epilogue with a ddof that is no integer (its float64 bits), one that is negative, and
#: NaN's select, over float32 and float64 states.
FLOAT_DDOF_SPECS = [(kps.WELFORD, kps.variance(0.5), "float32"), (kps.WELFORD, kps.std(np.nan), "float64"),
                    (kps.WELFORD, kps.mean_and_variance(-1.5), "float32"), (kps.WELFORD, kps.variance(-2), "int32"),
                    (kps.nan.NAN_WELFORD, kps.nan.nan_variance(2.5), "float64"),
                    (kps.nan.NAN_WELFORD, kps.nan.nan_std(-1), "float32")]


def test_float_ddof_epilogues_compile_for_sm_90():
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    cfg = config.plan((64, 64), (64, 1), (1,), (1,), 4, 4, 132)
    for op, epilogue, dtype in FLOAT_DDOF_SPECS:
        f = source.plan_functors(cfg, kps.resolve(op, kps.IDENTITY, epilogue, np.dtype(dtype)))
        prog = kps.compile_program(source.program(f), [source.kernel_name(cfg, f)], "sm_90", [source.INCLUDE_DIR],
                                   optimise=False)
        assert prog.cubin
