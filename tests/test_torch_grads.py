"""Gradients of every named op on CPU torch tensors: gradcheck in float64 over axes, keepdims, ddof
and ord; float32 gradients equal torch's own (its twin's, or for the NaN-skipping ops torch lacks,
NumPy's definition written with torch's ops: a NaN gets 0); prod's zeros and the zero vector's
norm as torch has them; ties shared; `precise=True` and `dtype=` take the plain op's gradient;
every public op either differentiates or, as its torch twin, gives a result that does not require
grad; a training step of mean, var, logsumexp and norm compiles whole (`fullgraph=True`) with
torch's gradients. Fresh random data (no zeros, no ties) except in the explicit cases. The same
on CUDA tensors: tests/test_gpu_torch_ops.py, which reuses the helpers here."""
from __future__ import annotations

import math
import zlib

import pytest

import ops
from ops import interop, named

torch = pytest.importorskip("torch")

SHAPE = (2, 3, 4)
AXES = [None, 1, -1, (0, 2), ()]


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))


def reference(fn):
    """torch's own op `fn(t, dims, keepdim)` with NumPy's axis rules: None every axis, () none
    (torch reads dim=() as every dim: the input with a trailing axis of 1, reduced over it)."""
    def theirs(t, axis=None, keepdims=False, **kwargs):
        dims = _dims(axis, t.dim())
        if not dims:
            return fn(t.unsqueeze(-1), (-1,), False, **kwargs)
        return fn(t, dims, keepdims, **kwargs)
    return theirs


def _prod(t, dims, keepdim):
    for d in sorted(dims, reverse=True):  # torch.prod takes one dim
        t = t.prod(dim=d, keepdim=keepdim)
    return t


def _masked(t):
    """The numbers of t (NaN as 0), where they are, and how many a slice holds."""
    number = ~torch.isnan(t)
    return torch.where(number, t, 0), number


def _nanvar(t, dims, keepdim, ddof=0):
    """numpy.nanvar written with torch's ops (a NaN's gradient 0, no NaN in the graph)."""
    values, number = _masked(t)
    count = number.sum(dims, keepdim=True)
    deviation = torch.where(number, values - values.sum(dims, keepdim=True) / count, 0)
    var = (deviation ** 2).sum(dims, keepdim=True) / (count - ddof)
    return var if keepdim else var.squeeze(dims)


def _nanextreme(which):
    fill = -math.inf if which is torch.amax else math.inf
    return lambda t, dims, keepdim: which(torch.where(torch.isnan(t), fill, t), dims, keepdim)


#: Each public op of a float result with torch's own way to compute it (a pair: a tuple), and the
#: extra arguments it is checked with: ddof, ord.
THEIRS = {
    "reduce_sum": reference(lambda t, d, k: t.sum(d, keepdim=k)),
    "reduce_mean": reference(lambda t, d, k: t.mean(d, keepdim=k)),
    "reduce_max": reference(lambda t, d, k: t.amax(d, keepdim=k)),
    "reduce_min": reference(lambda t, d, k: t.amin(d, keepdim=k)),
    "reduce_prod": reference(_prod),
    "reduce_logsumexp": reference(lambda t, d, k: t.logsumexp(d, keepdim=k)),
    "reduce_var": reference(lambda t, d, k, ddof=0: t.var(d, keepdim=k, correction=ddof)),
    "reduce_std": reference(lambda t, d, k, ddof=0: t.std(d, keepdim=k, correction=ddof)),
    "reduce_mean_var": reference(lambda t, d, k, ddof=0: (t.mean(d, keepdim=k), t.var(d, keepdim=k, correction=ddof))),
    "reduce_nansum": reference(lambda t, d, k: t.nansum(d, keepdim=k)),
    "reduce_nanmean": reference(lambda t, d, k: t.nanmean(d, keepdim=k)),
    "reduce_nanmax": reference(_nanextreme(torch.amax)),
    "reduce_nanmin": reference(_nanextreme(torch.amin)),
    "reduce_nanvar": reference(_nanvar),
    "reduce_nanstd": reference(lambda t, d, k, ddof=0: _nanvar(t, d, k, ddof).sqrt()),
    "reduce_minmax": reference(lambda t, d, k: (t.amin(d, keepdim=k), t.amax(d, keepdim=k))),
    "reduce_ptp": reference(lambda t, d, k: t.amax(d, keepdim=k) - t.amin(d, keepdim=k)),
    "reduce_norm": reference(lambda t, d, k, ord=2: torch.linalg.vector_norm(t, ord, d, keepdim=k)),
}

DDOF_OPS = ("reduce_var", "reduce_std", "reduce_mean_var", "reduce_nanvar", "reduce_nanstd")
ORDS = [2, 1, math.inf, -math.inf, 0, 3, 0.5, 1.5, -1]


def cases():
    """(op, axis, keepdims, extra arguments) for every differentiable op: ddof 0 and 1, every ord;
    not a std over no axis (std 0: no derivative) nor a ddof >= the count."""
    found = []
    for name in sorted(THEIRS):
        extras = ([{"ddof": d} for d in (0, 1)] if name in DDOF_OPS else
                  [{"ord": p} for p in ORDS] if name == "reduce_norm" else [{}])
        for axis in AXES:
            count = math.prod(SHAPE[a] for a in _dims(axis, len(SHAPE)))
            for keepdims in (False, True):
                for extra in extras:
                    if (count == 1 and "std" in name) or extra.get("ddof", 0) >= count:
                        continue
                    found.append((name, axis, keepdims, extra))
    return found


def _id(case):
    name, axis, keepdims, extra = case
    return f"{name}-{axis}-{'keep' if keepdims else 'drop'}" + "".join(f"-{k}{v}" for k, v in extra.items())


def fresh(shape=SHAPE, dtype=torch.float64, device="cpu", seed=0):
    """Random data away from zero, without ties (a fresh draw per case)."""
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(shape, generator=g, dtype=torch.float64) + 0.5
    t = t * torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0)
    return t.to(dtype=dtype, device=device).requires_grad_()


def ours(name):
    fn = getattr(ops, name)
    return lambda t, axis, keepdims, extra: fn(t, axis=axis, keepdims=keepdims, **extra)


def check_gradcheck(case, device="cpu"):
    name, axis, keepdims, extra = case
    x = fresh(device=device, seed=zlib.crc32(_id(case).encode()) % 1000)
    assert torch.autograd.gradcheck(lambda t: ours(name)(t, axis, keepdims, extra), (x,))


def _grads(fn, x, seed):
    """fn(x)'s gradient against a random upstream gradient of each result (torch's 0-norm has an
    undefined one: zeros)."""
    out = fn(x)
    outs = out if isinstance(out, tuple) else (out,)
    g = torch.Generator().manual_seed(seed)
    ups = [torch.randn(o.shape, generator=g, dtype=torch.float64).to(o) for o in outs]
    return torch.autograd.grad(outs, x, ups, allow_unused=True, materialize_grads=True)[0]


def check_torchs_gradient(case, x):
    """Our gradient equals torch's own (float32: within rounding)."""
    name, axis, keepdims, extra = case
    mine = _grads(lambda t: ours(name)(t, axis, keepdims, extra), x, 1)
    theirs = _grads(lambda t: THEIRS[name](t, axis, keepdims, **extra), x, 1)
    assert mine.dtype == x.dtype and mine.shape == x.shape
    tol = {} if x.dtype == torch.float64 else {"rtol": 1e-5, "atol": 1e-5}
    torch.testing.assert_close(mine, theirs, equal_nan=True, **tol)


@pytest.mark.parametrize("case", cases(), ids=_id)
def test_gradcheck_in_float64(case):
    check_gradcheck(case)


@pytest.mark.parametrize("case", cases(), ids=_id)
def test_float32_gradients_are_torchs(case):
    check_torchs_gradient(case, fresh(dtype=torch.float32, seed=zlib.crc32(_id(case).encode()) % 1000))


def test_the_cases_cover_every_differentiable_op():
    differentiable = {e.name for e in named.TABLE if e.grad is not None}
    assert differentiable == set(THEIRS) == {case[0] for case in cases()}


@pytest.mark.parametrize("name,data", [
    ("reduce_prod", [[1.5, 0.0, -2.0, 3.0], [0.0, 2.0, 0.0, 1.5], [1.5, -2.0, 3.0, 0.5]]),  # one zero, two, none
    ("reduce_norm", [[0.0, 0.0, 0.0, 0.0], [1.5, 0.0, -2.0, 0.0], [0.0, 0.0, 0.0, 0.0]]),  # the zero vector
])
@pytest.mark.parametrize("axis", [1, 0, None])
def test_zeros_get_torchs_gradient(name, data, axis):
    extras = [{"ord": p} for p in ORDS] if name == "reduce_norm" else [{}]
    for extra in extras:
        x = torch.tensor(data, dtype=torch.float64, requires_grad=True)
        case = (name, axis, False, extra)
        check_torchs_gradient(case, x)
        assert torch.isfinite(_grads(lambda t: ours(name)(t, axis, False, extra), x, 2)).all(), extra


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_nanmax", "reduce_nanmin", "reduce_minmax",
                                  "reduce_ptp", "reduce_norm"])
def test_ties_share_the_gradient_as_torchs_amax(name):
    x = torch.tensor([[1.0, 3.0, 3.0, -3.0], [2.0, -1.0, 2.0, 2.0], [5.0, -1.0, 4.0, 5.0]], dtype=torch.float64,
                     requires_grad=True)
    for axis in (1, 0, (0, 1)):
        extras = [{"ord": math.inf}, {"ord": -math.inf}] if name == "reduce_norm" else [{}]
        for extra in extras:
            check_torchs_gradient((name, axis, False, extra), x)


@pytest.mark.parametrize("name", ["reduce_nansum", "reduce_nanmean", "reduce_nanmax", "reduce_nanmin", "reduce_nanvar",
                                  "reduce_nanstd"])
def test_nan_positions_get_zero_gradient(name):
    x = fresh((3, 5), seed=7).detach()
    x[0, 1] = x[1, 0] = x[1, 4] = x[2, 2] = math.nan
    x.requires_grad_()
    for axis in (1, 0):
        extras = [{"ddof": 0}, {"ddof": 1}] if name in DDOF_OPS else [{}]
        for extra in extras:
            check_torchs_gradient((name, axis, False, extra), x)
            grad = _grads(lambda t: ours(name)(t, axis, False, extra), x, 3)
            assert (grad[torch.isnan(x.detach())] == 0).all() and torch.isfinite(grad).all()
        assert torch.autograd.gradcheck(lambda t: ours(name)(t, axis, False, extras[-1]), (x,))


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:All-NaN slice")  # NumPy's, as expected
def test_a_slice_of_nan_gets_zero_gradient():
    x = fresh((2, 3), seed=8).detach()
    x[0] = math.nan
    x.requires_grad_()
    for name in ("reduce_nansum", "reduce_nanmean", "reduce_nanmax", "reduce_nanmin"):
        grad = _grads(lambda t: ours(name)(t, 1, False, {}), x, 4)
        assert (grad[0] == 0).all() and torch.isfinite(grad[1]).all(), name


#: The differentiable ops NumPy defines for complex numbers (logsumexp it does not).
COMPLEX_OPS = sorted(set(THEIRS) - {"reduce_logsumexp"})


def fresh_complex(shape, dtype=torch.complex128, device="cpu", seed=0):
    """Random complex data away from zero, without ties in either part."""
    parts = fresh(shape, seed=seed).detach(), fresh(shape, seed=seed + 1).detach()
    return torch.complex(*parts).to(dtype=dtype, device=device).requires_grad_()


def check_complex_gradcheck(name, device="cpu"):
    """torch's convention for complex inputs (the conjugate Wirtinger derivative: prod's gradient is
    the conjugate of the product of the others), checked against finite differences."""
    x = fresh_complex((3, 4), device=device, seed=zlib.crc32(name.encode()) % 1000)
    extras = ([{"ddof": 0}, {"ddof": 1}] if name in DDOF_OPS else
              [{"ord": p} for p in (2, 1, math.inf, 3, 0.5)] if name == "reduce_norm" else [{}])
    for axis in (1, 0, None):
        for extra in extras:
            assert torch.autograd.gradcheck(lambda t: ours(name)(t, axis, False, extra), (x,)), (axis, extra)


@pytest.mark.parametrize("name", COMPLEX_OPS)
def test_complex_gradients_pass_gradcheck(name):
    check_complex_gradcheck(name)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_var", "reduce_std", "reduce_norm"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_gradients_are_torchs(name, dtype):
    x = fresh_complex((3, 5), dtype, seed=11)
    for axis in (1, 0):
        mine = torch.autograd.grad(ours(name)(x, axis, False, {}).abs().sum(), x)[0]
        theirs = torch.autograd.grad(THEIRS[name](x, axis).abs().sum(), x)[0]
        assert mine.dtype == dtype
        torch.testing.assert_close(mine, theirs)


def test_complex_extremes_take_the_gradient_in_numpys_order():
    """max, min and ptp of complex numbers: the real parts first, then the imaginary (torch's amax has
    no complex kernel), so a tie of real parts sends the gradient to the larger imaginary part."""
    x = torch.tensor([[1 + 1j, 2 - 1j], [1 + 3j, 2 - 2j], [0 + 5j, 2 - 3j]], dtype=torch.complex128, requires_grad=True)
    high = torch.tensor([[0, 1], [1, 0], [0, 0]], dtype=torch.complex128)
    low = torch.tensor([[0, 0], [0, 0], [1, 1]], dtype=torch.complex128)
    for name, want in (("reduce_max", high), ("reduce_min", low), ("reduce_ptp", high - low)):
        grad = torch.autograd.grad(ours(name)(x, 0, False, {}).real.sum(), x)[0]
        torch.testing.assert_close(grad, want)
    x = x.detach().clone()
    x[2, 1] = complex(2, math.nan)
    x.requires_grad_()
    grad = torch.autograd.grad(ops.reduce_ptp(x, axis=0).real.sum(), x)[0]
    assert torch.isnan(grad[:, 1]).all() and torch.equal(grad[:, 0], (high - low)[:, 0])  # a NaN slice: torch's NaN


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean"])
def test_precise_and_dtype_take_the_plain_gradient(name):
    x = fresh((3, 4), dtype=torch.float32, seed=9)
    plain = _grads(lambda t: getattr(ops, name)(t, axis=1), x, 5)
    precise = _grads(lambda t: getattr(ops, name)(t, axis=1, precise=True), x, 5)
    wide = _grads(lambda t: getattr(ops, name)(t, axis=1, dtype=torch.float64), x, 5)
    torch.testing.assert_close(precise, plain)
    assert wide.dtype == torch.float32
    torch.testing.assert_close(wide, plain)
    assert torch.autograd.gradcheck(lambda t: getattr(ops, name)(t, axis=(0, 1), precise=True), (x.double(),))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_nansum", "reduce_norm",
                                  "reduce_logsumexp"])
def test_empty_reductions_differentiate(name):
    x = torch.empty((2, 0, 3), dtype=torch.float64, requires_grad=True)
    for axis in (1, (0, 1)):
        grad = _grads(lambda t: getattr(ops, name)(t, axis=axis), x, 6)
        assert grad.shape == x.shape


def public_ops():
    """Every public op, from the API itself (ops.__all__), with its table entry (None: `reduce`)."""
    return [(name, named.BY_NAME.get(name)) for name in ops.__all__]


def check_no_silent_detach(name, entry, x, **kwargs):
    """`ops.<name>(x)` either differentiates (a grad_fn on every float result, backward runs, finite)
    or gives results that do not require grad, as its torch twin's (no twin: ints or bools)."""
    out = getattr(ops, name)(x, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    if any(o.requires_grad for o in outs):
        assert all(o.grad_fn is not None for o in outs), name
        grad = torch.autograd.grad(sum(o.sum() for o in outs), x)[0]
        assert grad.shape == x.shape and torch.isfinite(grad).all(), name
        return "differentiates"
    if entry is not None and entry.torch is not None:
        assert not interop.TORCH_TWINS[entry.torch](torch, x).requires_grad, name
    assert all(not o.dtype.is_floating_point for o in outs), name
    return "refuses"


@pytest.mark.parametrize("name,entry", public_ops(), ids=[n for n, _ in public_ops()])
def test_no_public_op_detaches_a_result_silently(name, entry):
    x = fresh((3, 4), seed=10)
    kinds = {check_no_silent_detach(name, entry, x), check_no_silent_detach(name, entry, x, axis=1, keepdims=True)}
    assert len(kinds) == 1
    assert kinds == {"refuses" if entry is not None and entry.grad is None else "differentiates"}, name


def test_reduce_of_other_descriptors_refuses_where_autograd_records():
    import kps

    x = fresh((3, 4), seed=11)
    torch.testing.assert_close(_grads(lambda t: ops.reduce(t, axis=1, op=kps.MAX), x, 7),
                               _grads(lambda t: ops.reduce_max(t, axis=1), x, 7))
    with pytest.raises(TypeError, match="x: requires grad"):
        ops.reduce(x, axis=1, transform=kps.ABS)
    with torch.no_grad():
        assert not ops.reduce(x, axis=1, transform=kps.ABS).requires_grad
    assert not ops.reduce(x.detach(), axis=1, transform=kps.ABS).requires_grad


class Step(torch.nn.Module):
    """A normalisation and a loss of mean, var, logsumexp and norm, from `lib`: this project's ops
    or torch's."""

    def __init__(self, lib):
        super().__init__()
        self.lib = lib
        self.linear = torch.nn.Linear(6, 5)

    def forward(self, x):
        mean, var, logsumexp, norm = self.lib
        h = self.linear(x)
        z = (h - mean(h, 0, True)) / torch.sqrt(var(h, 0, True) + 1e-5)
        return mean(logsumexp(z, 1), None, False) + 0.1 * mean(norm(z, 1), None, False)


OURS = (lambda t, a, k: ops.reduce_mean(t, axis=a, keepdims=k), lambda t, a, k: ops.reduce_var(t, axis=a, keepdims=k),
        lambda t, a: ops.reduce_logsumexp(t, axis=a), lambda t, a: ops.reduce_norm(t, axis=a))
TORCHS = (lambda t, a, k: t.mean() if a is None else t.mean(a, keepdim=k),
          lambda t, a, k: t.var(a, keepdim=k, correction=0), lambda t, a: t.logsumexp(a),
          lambda t, a: torch.linalg.vector_norm(t, dim=a))


def check_compiled_training_step(device):
    """One forward and backward of `Step(OURS)` under torch.compile(fullgraph=True) (inductor: a
    graph break raises) against `Step(TORCHS)` in eager, the same weights."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    mine, theirs = Step(OURS).to(device), Step(TORCHS).to(device)
    theirs.load_state_dict(mine.state_dict())
    compiled = torch.compile(mine, fullgraph=True)
    for seed in (1, 2):
        x = torch.randn(8, 6, device=device, generator=torch.Generator(device).manual_seed(seed))
        for model in (mine, theirs):
            model.zero_grad()
        loss, expect = compiled(x), theirs(x)
        loss.backward()
        expect.backward()
        torch.testing.assert_close(loss, expect)
        for (name, p), q in zip(mine.named_parameters(), theirs.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_a_training_step_compiles_whole_with_torchs_gradients():
    check_compiled_training_step("cpu")


@pytest.mark.parametrize("name", ["reduce_var", "reduce_std", "reduce_mean_var"])
def test_reducing_no_axis_differentiates_as_a_slice_of_one(name):
    """axis=() (each result one element, its own mean) gives the gradient of the same reduction over
    an axis of length 1: with ddof=1 the divisor is 0, and the gradient NaN as torch's."""
    x = fresh((3, 4), seed=13)
    fn = getattr(ops, name)

    def total(result):
        return sum(r.sum() for r in result) if isinstance(result, tuple) else result.sum()

    (none,) = torch.autograd.grad(total(fn(x, axis=(), ddof=1)), x)
    (one,) = torch.autograd.grad(total(fn(x[..., None], axis=-1, ddof=1)), x)
    torch.testing.assert_close(none, one, equal_nan=True)
    assert torch.isnan(none).all()
