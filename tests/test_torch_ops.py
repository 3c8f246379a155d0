"""The named reductions as torch custom ops, on CPU tensors: torch.compile(fullgraph=True) keeps
them in one graph and matches eager, the fake implementation agrees with the real one and the
autograd registration holds (opcheck), autograd of sum, mean, max and min matches torch's (every
other op's gradient: tests/test_torch_grads.py). The same on CUDA: tests/test_gpu_torch_ops.py."""
from __future__ import annotations

import pytest

import ops
from ops import named

torch = pytest.importorskip("torch")
from ops import torch_ops  # noqa: E402,F401 - registers torch.ops.kps (import ops came before torch)


class Stats(torch.nn.Module):
    def forward(self, x):
        total = ops.reduce_sum(x, axis=1)
        centred = x - ops.reduce_mean(x, axis=(0, 1), keepdims=True)
        peak = ops.reduce_max(centred, axis=1)
        return total * 2 + peak, ops.reduce_var(x, axis=2, ddof=1), ops.reduce_argmax(x, axis=0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_module_runs_in_one_graph_and_matches_eager(backend):
    torch._dynamo.reset()
    model = Stats()
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    for shape in ((3, 4, 5), (6, 2, 7)):
        x = torch.randn(*shape)
        for got, expect in zip(compiled(x), model(x)):
            assert got.dtype == expect.dtype and got.shape == expect.shape
            torch.testing.assert_close(got, expect)


def test_compiled_calls_follow_torchs_dtype_rules():
    torch._dynamo.reset()
    fn = torch.compile(lambda t: (ops.reduce_sum(t, axis=0), ops.reduce_any(t, axis=1)), fullgraph=True,
                       backend="aot_eager")
    t = torch.randint(0, 250, (5, 3), dtype=torch.uint8)
    total, anything = fn(t)
    assert total.dtype == torch.int64 and anything.dtype == torch.uint8
    assert total.tolist() == t.sum(dim=0).tolist()


@pytest.mark.parametrize("name,args", [
    ("reduce_sum", ([1], False, None)), ("reduce_mean", ([0, 1], True, None)), ("reduce_max", ([1], False, None)),
    ("reduce_min", (None, False, None)), ("reduce_var", ([1], False, None, 1)), ("reduce_argmax", ([0], False)),
    ("reduce_logsumexp", ([1], True, None)), ("reduce_nansum", ([0], False, torch.float64)),
    ("reduce_sum", ([0, 1], False, None, True)), ("reduce_prod", ([1], False, None)),
    ("reduce_std", (None, True, None, 1)), ("reduce_mean_var", ([0], False, None, 1)), ("reduce_minmax", ([1], True)),
    ("reduce_ptp", ([0, 1], False)), ("reduce_norm", ([1], False, 3.0)), ("reduce_norm", (None, False, float("inf"))),
    ("reduce_nanvar", ([1], False, None, 0)), ("reduce_nanmax", ([0], True, None)), ("reduce_nanmean", ([1], False, None)),
])
def test_the_custom_ops_pass_torchs_opcheck(name, args):
    """torch's checks of a custom op (its fake against its real results, its autograd registration,
    its backward traced by AOT autograd) on a tensor that requires grad where the op differentiates."""
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=named.BY_NAME[name].grad is not None)
    torch.library.opcheck(getattr(torch.ops.kps, name).default, (x, *args))


def test_gradients_of_sum_and_mean_pass_gradcheck():
    x = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    for fn in (lambda t: ops.reduce_sum(t, axis=1), lambda t: ops.reduce_mean(t, axis=(0, 2), keepdims=True),
               lambda t: ops.reduce_sum(t), lambda t: ops.reduce_mean(t, axis=())):
        assert torch.autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("ours,theirs", [(ops.reduce_max, torch.amax), (ops.reduce_min, torch.amin)])
def test_gradients_of_max_and_min_are_torchs_ties_included(ours, theirs):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 0.0, 2.0, 2.0], [5.0, -1.0, 4.0, 5.0]], requires_grad=True)
    for axis in (1, 0, (0, 1)):
        x.grad = None
        (ours(x, axis=axis) * torch.arange(1.0, 1.0 + ours(x, axis=axis).numel()).reshape(
            ours(x, axis=axis).shape)).sum().backward()
        mine = x.grad.clone()
        x.grad = None
        out = theirs(x, dim=axis)
        (out * torch.arange(1.0, 1.0 + out.numel()).reshape(out.shape)).sum().backward()
        torch.testing.assert_close(mine, x.grad)


def test_eager_calls_without_autograd_take_the_direct_path():
    x = torch.randn(4, 5)
    assert ops.reduce_sum(x, axis=1).grad_fn is None
    with torch.no_grad():
        assert ops.reduce_sum(x.requires_grad_(), axis=1).grad_fn is None


def test_out_is_refused_where_autograd_records():
    x = torch.randn(4, 5, requires_grad=True)
    with pytest.raises(TypeError, match="out"):
        ops.reduce_sum(x, axis=1, out=torch.empty(4))


def test_eager_calls_that_autograd_records_run_as_an_autograd_function():
    x = torch.randn(4, 5, requires_grad=True)
    assert type(ops.reduce_var(x, axis=1).grad_fn).__name__ == "reduce_var_functionBackward"


def _dtypes_or_error(fn):
    try:
        result = fn()
    except (TypeError, ValueError) as e:
        return type(e).__name__
    return tuple(r.dtype for r in result) if isinstance(result, tuple) else result.dtype


@pytest.mark.filterwarnings("ignore")  # (complex data with dtype=float64: NumPy's ComplexWarning, and the like)
@pytest.mark.parametrize("entry", [e for e in named.TABLE if named.has_torch_op(e)], ids=lambda e: e.name)
def test_the_fakes_dtypes_are_the_eager_calls(entry):
    """Every custom op on a tensor of every kind of dtype, with and without `dtype=`: the fake gives
    the results' dtypes the real call gives, or the same refusal (var of complex numbers with
    dtype=complex128 is real; the mean and variance of complex numbers a complex mean, a real
    variance)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    op, args = getattr(torch.ops.kps, entry.name), named.torch_args(entry)
    requests = (None, torch.complex128, torch.float64) if any(name == "dtype" for _, name, _ in args) else (None,)
    for t_dtype in (torch.complex128, torch.complex64, torch.float32, torch.float16, torch.uint8, torch.bool):
        x = (torch.randn(3, 4, dtype=torch.float64) * 3).to(t_dtype)
        for requested in requests:
            rest = [requested if name == "dtype" else default for _, name, default in args]
            real = _dtypes_or_error(lambda: op(x, [1], False, *rest))
            with FakeTensorMode() as mode:
                fake = _dtypes_or_error(lambda: op(mode.from_tensor(x), [1], False, *rest))
            assert fake == real, (t_dtype, requested, fake, real)


def test_tensors_without_memory_and_traced_calls_take_the_custom_op():
    """A meta tensor, FakeTensorMode and make_fx see the custom op (its fake implementation), not
    the eager function: make_fx records `kps.reduce_var`, not the eager call's own ops."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    meta = torch.empty(4, 5, device="meta", requires_grad=True)
    assert ops.reduce_var(meta, axis=1).shape == (4,)
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.randn(4, 5)).requires_grad_()
        assert ops.reduce_var(fake, axis=1, ddof=1).shape == (4,)
    graph = make_fx(lambda t: ops.reduce_var(t, axis=1))(torch.randn(4, 5, requires_grad=True))
    assert "kps.reduce_var" in str(graph.graph)
