"""torch tensors follow torch's dtype rules: every named reduction against torch's own on CPU tensors
of every torch dtype (the GPU path takes the same rule: tests/test_gpu_robustness.py)."""
from __future__ import annotations

import numpy as np
import pytest

import ops

torch = pytest.importorskip("torch")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]

#: ops' named reduction -> torch's own, both over axis 1
PAIRS = {
    "reduce_sum": lambda t: torch.sum(t, dim=1),
    "reduce_mean": lambda t: torch.mean(t, dim=1),
    "reduce_max": lambda t: torch.amax(t, dim=1),
    "reduce_min": lambda t: torch.amin(t, dim=1),
    "reduce_prod": lambda t: torch.prod(t, dim=1),
    "reduce_all": lambda t: torch.all(t, dim=1),
    "reduce_any": lambda t: torch.any(t, dim=1),
    "reduce_var": lambda t: torch.var(t, dim=1, correction=0),
    "reduce_std": lambda t: torch.std(t, dim=1, correction=0),
    "reduce_logsumexp": lambda t: torch.logsumexp(t, dim=1),
    "reduce_nansum": lambda t: torch.nansum(t, dim=1),
    "reduce_nanmean": lambda t: torch.nanmean(t, dim=1),
    "reduce_norm": lambda t: torch.linalg.vector_norm(t, dim=1),
    "reduce_argmax": lambda t: torch.argmax(t, dim=1),
    "count_nonzero": lambda t: torch.count_nonzero(t, dim=1),
}


def _tensor(dtype):
    g = torch.Generator().manual_seed(3)
    if dtype == torch.bool:
        return torch.rand(4, 6, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(4, 6, generator=g).to(dtype)
    return torch.randint(1, 5, (4, 6), generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_torch_tensors_get_torchs_result_dtype(name, dtype):
    t = _tensor(dtype)
    try:
        expect = PAIRS[name](t)
    except (RuntimeError, NotImplementedError) as e:
        if "not implemented for" in str(e):  # torch has no CPU kernel: its dtype rule still holds
            expect = PAIRS[name](torch.empty_like(t, device="meta"))
        else:  # torch refuses the dtype (the mean of ints): so do we, naming x
            with pytest.raises(TypeError, match="x: "):
                getattr(ops, name)(t, axis=1)
            return
    got = getattr(ops, name)(t, axis=1)
    assert isinstance(got, torch.Tensor) and got.dtype == expect.dtype, (got.dtype, expect.dtype)
    if expect.device.type == "meta":
        return
    tol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    np.testing.assert_allclose(got.double().numpy(), expect.double().numpy(), rtol=tol, atol=tol)


def test_numpy_and_torch_rules_differ_where_torch_says():
    t = torch.full((3, 100), 200, dtype=torch.uint8)
    assert ops.reduce_sum(t, axis=1).dtype == torch.int64  # NumPy: uint64
    assert ops.reduce_sum(t.numpy(), axis=1).dtype == np.uint64
    assert ops.reduce_any(t, axis=1).dtype == torch.uint8  # torch keeps uint8 for any/all of uint8
    assert ops.reduce_logsumexp(t.to(torch.int32), axis=1).dtype == torch.float32  # NumPy: float64
    assert ops.reduce_sum(t, axis=1, dtype=np.uint64).dtype == torch.uint64  # dtype= still rules


def test_a_named_op_keeps_its_prepared_calls_apart_from_ops_reduce():
    """ops.reduce of a named op's descriptors follows NumPy's dtype rule on a torch tensor, the named op
    torch's: a prepared call of one (GPU: keyed by the input's layout alone) must not answer the other."""
    from ops import build, gpu_backend, named

    for entry in (named.SUM, named.MEAN, named.ANY, named.VAR):
        mine = build.reduction(entry)
        generic = ops.call.Reduction(mine.op, mine.transform, mine.epilogue)
        assert gpu_backend.table(mine.key) is not gpu_backend.table(generic.key)
    t = torch.full((3, 100), 200, dtype=torch.uint8)
    assert ops.reduce(t, axis=1).dtype == torch.uint64 and ops.reduce_sum(t, axis=1).dtype == torch.int64


def test_torch_rules_keep_the_accurate_accumulation():
    """Where torch and NumPy agree on the result dtype, the accumulation stays this project's:
    a float32 variance of data far from zero is still accumulated in float64."""
    t = (torch.randn(2, 1 << 16, dtype=torch.float64) + 1e4).float()
    got = ops.reduce_var(t, axis=1)
    expect = np.var(t.double().numpy(), axis=1)
    np.testing.assert_allclose(got.double().numpy(), expect, rtol=1e-5)


def test_a_full_reduction_of_a_cpu_tensor_is_0_d_as_torchs():
    t = torch.randn(3, 4)
    for fn, theirs in ((ops.reduce_sum, torch.sum), (ops.reduce_max, torch.amax)):
        assert fn(t).shape == theirs(t).shape == torch.Size([])


#: ops' named reduction -> torch's own with out=, both over axis 1
OUTS = {
    "reduce_sum": lambda t, o: torch.sum(t, dim=1, out=o),
    "reduce_mean": lambda t, o: torch.mean(t, dim=1, out=o),
    "reduce_max": lambda t, o: torch.amax(t, dim=1, out=o),
    "reduce_min": lambda t, o: torch.amin(t, dim=1, out=o),
    "reduce_prod": lambda t, o: torch.prod(t, dim=1, out=o),
    "reduce_all": lambda t, o: torch.all(t, dim=1, out=o),
    "reduce_any": lambda t, o: torch.any(t, dim=1, out=o),
    "reduce_var": lambda t, o: torch.var(t, dim=1, correction=0, out=o),
    "reduce_logsumexp": lambda t, o: torch.logsumexp(t, dim=1, out=o),
    "reduce_nansum": lambda t, o: torch.nansum(t, dim=1, out=o),
    "reduce_nanmean": lambda t, o: torch.nanmean(t, dim=1, out=o),
    "reduce_argmax": lambda t, o: torch.argmax(t, dim=1, out=o),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(OUTS))
def test_out_takes_the_result_as_torchs_own_out(name, dtype):
    """With out=, the result takes out's dtype (torch's and NumPy's reductions alike): a uint8 sum
    into a uint8 tensor wraps as torch's, all of uint8 goes into a bool tensor. Out tensors of the
    input's dtype, of torch's result dtype and bool, where torch takes them and NumPy's 'same_kind'
    rule does (ops/call.py `check_out`: float results into int arrays are refused by name)."""
    t = _tensor(dtype) * (50 if dtype in (torch.uint8, torch.int16, torch.int32, torch.int64) else 1)
    try:
        natural = PAIRS[name](torch.empty_like(t, device="meta")).dtype if name in PAIRS else dtype
    except RuntimeError:  # torch's rule refuses the dtype (the mean of ints)
        natural = dtype
    for out_dtype in dict.fromkeys((dtype, natural, torch.bool)):
        try:
            expect = OUTS[name](t, torch.empty(4, dtype=out_dtype))
        except (RuntimeError, NotImplementedError):
            continue
        out = torch.full((4,), 7, dtype=out_dtype)
        try:
            got = getattr(ops, name)(t, axis=1, out=out)
        except TypeError as e:
            assert str(e).startswith("out: cannot cast") and not out_dtype.is_floating_point, e
            continue
        assert got is out
        tol = 2e-2 if torch.float16 in (dtype, out_dtype) or torch.bfloat16 in (dtype, out_dtype) else 1e-6
        torch.testing.assert_close(got.double(), expect.double(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.int64, torch.complex128], ids=str)
def test_dtype_takes_torch_dtypes(dtype):
    t = torch.randn(3, 5, generator=torch.Generator().manual_seed(4))
    for fn in (ops.reduce_sum, ops.reduce_mean, ops.reduce_prod):
        if fn is ops.reduce_mean and not (dtype.is_floating_point or dtype.is_complex):
            continue
        got = fn(t, axis=1, dtype=dtype)
        expect = fn(t.numpy(), axis=1, dtype=ops.interop.kernel_dtype(dtype))
        assert got.dtype == dtype
        np.testing.assert_allclose(got.numpy(), expect)
    with pytest.raises(TypeError, match="dtype: unsupported dtype torch.float8"):
        ops.reduce_sum(t, axis=1, dtype=torch.float8_e4m3fn)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")  # torch's own
@pytest.mark.parametrize("kind", ["float8", "complex32", "sparse", "meta"])
def test_tensors_the_backends_cannot_read_are_refused_by_name(kind):
    """A dtype the kernels lack, a sparse layout, the meta device: a TypeError naming x or out."""
    make = {"float8": lambda: torch.ones(4, 3).to(torch.float8_e4m3fn),
            "complex32": lambda: torch.ones(4, 3, dtype=torch.complex32),
            "sparse": lambda: torch.eye(4, 3).to_sparse(),
            "meta": lambda: torch.empty(4, 3, device="meta")}[kind]
    for fn in (ops.reduce_sum, ops.reduce_max, ops.reduce_var, ops.reduce_argmax):
        with pytest.raises(TypeError, match="^x: "):
            fn(make(), axis=0)
        with pytest.raises(TypeError, match="^out: "):
            fn(torch.ones(3, 4), axis=0, out=make()[0])


def test_an_out_tensor_that_requires_grad_is_refused_as_torchs():
    x, out = torch.randn(3, 4), torch.zeros(4, requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.sum(x, dim=0, out=out)
    with pytest.raises(TypeError, match="^out: the tensor requires grad"):
        ops.reduce_sum(x, axis=0, out=out)
    with torch.no_grad():
        assert ops.reduce_sum(x, axis=0, out=out) is out
    torch.testing.assert_close(out.detach(), x.sum(0))
