"""The torch custom ops on CUDA tensors: a module compiled with torch.compile(fullgraph=True) (the
default inductor backend) matches eager, gradcheck of sum and mean in float64, max's gradient is
torch's, and torch's dtype rules hold on the GPU path too. Every op's gradient as on the CPU
(tests/test_torch_grads.py's checks on CUDA tensors): gradcheck and torch's own float32 gradients
over a subset of its cases, the walk over every public op, and the training step compiled whole."""
from __future__ import annotations

import pytest

import kps
import ops

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch has no CUDA", allow_module_level=True)

from test_torch_ops import Stats  # noqa: E402
from test_torch_grads import (  # noqa: E402
    COMPLEX_OPS, _id, cases, check_compiled_training_step, check_complex_gradcheck, check_gradcheck,
    check_no_silent_detach, check_torchs_gradient, fresh, public_ops)
from test_torch_rules import DTYPES, PAIRS, _tensor  # noqa: E402

#: The CPU cases over every axis and ddof, every ord, results dropped: a GPU kernel each.
GPU_CASES = [case for case in cases() if not case[2] and case[1] in (None, (0, 2), ())]


def test_a_compiled_module_on_cuda_matches_eager():
    torch._dynamo.reset()
    model = Stats()
    compiled = torch.compile(model, fullgraph=True)
    for shape in ((64, 33, 17), (8, 100, 3)):
        x = torch.randn(*shape, device="cuda")
        for got, expect in zip(compiled(x), model(x)):
            assert got.dtype == expect.dtype and got.shape == expect.shape and got.is_cuda
            torch.testing.assert_close(got, expect)


def test_gradients_on_cuda():
    x = torch.randn(7, 33, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ops.reduce_sum(t, axis=1), (x,))
    assert torch.autograd.gradcheck(lambda t: ops.reduce_mean(t, axis=0, keepdims=True), (x,))
    y = torch.randint(0, 3, (5, 9), device="cuda").float().requires_grad_()
    ops.reduce_max(y, axis=1).sum().backward()
    mine, y.grad = y.grad.clone(), None
    torch.amax(y, dim=1).sum().backward()
    torch.testing.assert_close(mine, y.grad)


def test_ops_reduce_and_a_named_op_of_its_descriptors_keep_their_own_dtype_rules():
    """Both calls of one layout: the prepared call the first leaves is not the second's."""
    t = torch.full((3, 100), 200, dtype=torch.uint8, device="cuda")
    for _ in range(2):
        assert ops.reduce(t, axis=1).dtype == torch.uint64
        assert ops.reduce_sum(t, axis=1).dtype == torch.int64
        assert ops.reduce(t, axis=1, op=kps.LOGICAL_OR).dtype == torch.bool
        assert ops.reduce_any(t, axis=1).dtype == torch.uint8


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_cuda_tensors_get_torchs_result_dtype(name, dtype):
    t = _tensor(dtype).cuda()
    try:
        expect = PAIRS[name](t)
    except (RuntimeError, NotImplementedError):
        pytest.skip("torch refuses or lacks this dtype on CUDA (the CPU test covers the refusal)")
    got = getattr(ops, name)(t, axis=1)
    assert got.is_cuda and got.dtype == expect.dtype, (got.dtype, expect.dtype)
    tol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5
    torch.testing.assert_close(got.double(), expect.double(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", GPU_CASES, ids=_id)
def test_every_gradient_on_cuda_passes_gradcheck(case):
    check_gradcheck(case, device="cuda")


@pytest.mark.parametrize("name", COMPLEX_OPS)
def test_every_complex_gradient_on_cuda_passes_gradcheck(name):
    check_complex_gradcheck(name, device="cuda")


@pytest.mark.parametrize("case", GPU_CASES, ids=_id)
def test_every_float32_gradient_on_cuda_is_torchs(case):
    check_torchs_gradient(case, fresh(dtype=torch.float32, device="cuda", seed=len(_id(case))))


@pytest.mark.parametrize("name,entry", public_ops(), ids=[n for n, _ in public_ops()])
def test_no_public_op_detaches_a_cuda_result_silently(name, entry):
    x = fresh((3, 4), device="cuda", seed=12)
    for kwargs in ({}, {"axis": 1, "keepdims": True}, {}):  # twice: the second a prepared call
        expect = "refuses" if entry is not None and entry.grad is None else "differentiates"
        assert check_no_silent_detach(name, entry, x, **kwargs) == expect


def test_a_training_step_on_cuda_compiles_whole_with_torchs_gradients():
    check_compiled_training_step("cuda")


def _spy_on_the_kernel(monkeypatch):
    from ops import torch_kernels

    calls = []
    real = torch_kernels.centred_scaled
    monkeypatch.setattr(torch_kernels, "centred_scaled", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


#: (ours, torch's own in float64) for the gradients that centre x.
CENTRED = {
    "var": (lambda t, ax, kd: ops.reduce_var(t, axis=ax, keepdims=kd, ddof=1),
            lambda t, ax, kd: torch.var(t, dim=ax, keepdim=kd, correction=1)),
    "std": (lambda t, ax, kd: ops.reduce_std(t, axis=ax, keepdims=kd),
            lambda t, ax, kd: torch.std(t, dim=ax, keepdim=kd, correction=0)),
    "mean_var": (lambda t, ax, kd: sum(r * w for r, w in zip(ops.reduce_mean_var(t, axis=ax, keepdims=kd), (0.3, 1.7))),
                 lambda t, ax, kd: sum(r * w for r, w in zip(torch.var_mean(t, dim=ax, keepdim=kd, correction=0)[::-1],
                                                             (0.3, 1.7)))),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(CENTRED))
def test_centred_gradients_take_one_kernel_and_are_torchs(monkeypatch, name, dtype):
    """var, std and mean_var's eager CUDA backward is one kernel over x (ops/torch_kernels.py), on
    contiguous tensors and strided views, over one axis and several, with keepdims, equal to torch's
    own in float64 within the dtype's rounding."""
    calls = _spy_on_the_kernel(monkeypatch)
    ours, theirs = CENTRED[name]
    gen = torch.Generator(device="cuda").manual_seed(len(name) + dtype.itemsize)
    base = 3 + torch.randn(40, 6, 64, device="cuda", dtype=torch.float64, generator=gen)
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2, torch.float32: 1e-5, torch.float64: 1e-10}[dtype]
    for axis, keepdims, view in (((2,), False, 0), ((0, 2), True, 1), ((1,), False, 0), ((2,), True, 1), ((0,), False, 1)):
        x = base.to(dtype)  # contiguous (16-byte vectors), or (64, 6, 40) strided
        x = (x.transpose(0, 2) if view else x).requires_grad_()
        out = ours(x, axis, keepdims)
        g = torch.randn(out.shape, device="cuda", dtype=torch.float64, generator=gen)
        before = len(calls)
        (mine,) = torch.autograd.grad(out, x, g.to(out.dtype))
        assert len(calls) == before + 1 and mine.dtype == dtype and mine.shape == x.shape
        x64 = x.detach().double().requires_grad_()
        (expect,) = torch.autograd.grad(theirs(x64, axis, keepdims), x64, g)
        torch.testing.assert_close(mine.double(), expect, rtol=tol, atol=tol * expect.abs().max().item())


def test_a_pair_of_results_on_torch_tensors_takes_a_prepared_call(monkeypatch):
    """mean_var and minmax of a CUDA tensor: a repeat takes the prepared call (no checked path), its
    results the first call's."""
    from ops import dispatch

    x = torch.randn(64, 33, device="cuda", dtype=torch.float32)
    for fn in (ops.reduce_mean_var, ops.reduce_minmax):
        first = fn(x, axis=1)
        monkeypatch.setattr(dispatch, "checked", lambda *a, **k: pytest.fail("a repeat took the checked path"))
        again = fn(x, axis=1)
        monkeypatch.undo()
        assert all(torch.equal(a, b) and a.data_ptr() != b.data_ptr() for a, b in zip(first, again))


def test_a_centred_gradient_that_autograd_records_takes_torchs_ops(monkeypatch):
    """create_graph=True: the backward's own ops are recorded (no kernel), and the second derivative
    of var is torch's."""
    calls = _spy_on_the_kernel(monkeypatch)
    x = torch.randn(8, 30, device="cuda", dtype=torch.float64, requires_grad=True)
    (mine,) = torch.autograd.grad(ops.reduce_var(x, axis=1).sum(), x, create_graph=True)
    (theirs,) = torch.autograd.grad(torch.var(x, dim=1, correction=0).sum(), x, create_graph=True)
    assert not calls
    torch.testing.assert_close(torch.autograd.grad((mine ** 2).sum(), x)[0], torch.autograd.grad((theirs ** 2).sum(), x)[0])


def test_centred_gradients_of_odd_layouts(monkeypatch):
    """The one-pass backward over an x whose storage starts off a 16-byte boundary (element by
    element), an expanded x (a zero stride) and an empty x (an empty gradient), equal to torch's."""
    import warnings

    calls = _spy_on_the_kernel(monkeypatch)
    gen = torch.Generator(device="cuda").manual_seed(7)
    flat = (3 + torch.randn(1 + 40 * 64, device="cuda", generator=gen)).requires_grad_()
    column = torch.randn(40, 1, 5, device="cuda", generator=gen).requires_grad_()
    for x, axis in ((flat[1:].view(40, 64), 1), (column.expand(40, 64, 5), 0), (column.expand(40, 64, 5), (0, 2))):
        g = torch.randn(ops.reduce_var(x, axis=axis).shape, device="cuda", generator=gen)
        (mine,) = torch.autograd.grad(ops.reduce_var(x, axis=axis), x, g)
        x64 = x.detach().double().requires_grad_()
        (expect,) = torch.autograd.grad(torch.var(x64, dim=axis, correction=0), x64, g.double())
        torch.testing.assert_close(mine.double(), expect, rtol=1e-5, atol=1e-6)
    assert len(calls) == 3
    empty = torch.empty(3, 0, device="cuda", requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (grad,) = torch.autograd.grad(ops.reduce_var(empty, axis=1).sum(), empty)
    assert grad.shape == (3, 0)
