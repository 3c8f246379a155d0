"""The named reductions as torch custom ops (`torch.ops.kps.reduce_sum`, ...), so a model compiled
with `torch.compile(fullgraph=True)` keeps them in its graph, and autograd differentiates every one
whose results are floats, with its torch twin's gradient (ops/torch_grads.py, the formula its table
entry names).

`ops.reduce_*` route a torch tensor here while torch.compile traces the call or autograd records it
(ops/torch_route.py); eager calls without autograd keep the direct path. Where autograd records an
eager call (no trace), a differentiable op runs as a `torch.autograd.Function` of the same
implementation and backward instead of through the custom op's dispatch, whose autograd wrapper and
redispatch cost more than the rest of such a call (`eager_function`). Every entry of the table
(ops/named.py) with torch arguments (`named.torch_args`) and a torch twin or a gradient is one
custom op, `(Tensor x, int[]? axis, bool keepdims, <its arguments>) -> Tensor` (a pair: `(Tensor,
Tensor)`), whose implementation is the op's eager function (ops/build.py, ops/own.py: no routing).
The fake (meta) implementation gives the results' shape (this project's planner) and dtype (as eager
calls get it: the torch twin's rule, ops/interop.py, or, without a twin, NumPy's, which the eager
function answers). Imported by `ops` when torch is imported first, else by the first call that
needs it.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from kernels import config

from . import build, interop, named, own, torch_grads, torch_kernels


def _axis(axis):
    return None if axis is None else tuple(axis)


def _axes(axis, ndim):
    """The reduced axes, non-negative and sorted (NumPy's rules: kernels.config)."""
    return tuple(sorted(config.normalize_axis(_axis(axis), ndim)))


def _numpy_dtype(dtype):
    return None if dtype is None else interop.kernel_dtype(dtype)


def _torch_dtype(dtype):
    return dtype if isinstance(dtype, torch.dtype) else interop.torch_dtype(np.dtype(dtype))


#: An argument's conversion, by name: from the public call to the custom op's, and from the custom
#: op's to the eager function's (others pass as they are).
_TO_SCHEMA = {"dtype": _torch_dtype, "ord": float, "ddof": float}
_TO_EAGER = {"dtype": _numpy_dtype}


def _names(entry: named.Named) -> tuple:
    return tuple(name for _, name, _ in named.torch_args(entry))


def schema(entry: named.Named) -> str:
    """`entry`'s custom op schema: x, axis, keepdims, its own arguments with their defaults; its results."""
    args = "".join(f", {kind} {name}={default}" for kind, name, default in named.torch_args(entry))
    returns = "(" + ", ".join(["Tensor"] * entry.outputs) + ")" if entry.outputs > 1 else "Tensor"
    return f"(Tensor x, int[]? axis, bool keepdims{args}) -> {returns}"


def _eager(entry: named.Named):
    """`entry`'s function without routing: the custom op's implementation."""
    return (own.function if entry.kind == "own" else build.function)(entry)


@functools.lru_cache(maxsize=None)  # keyed by an op, a torch dtype and a dtype=: a few hundred at most
def _numpy_rule(name: str, t_dtype, requested=None) -> tuple:
    """The result dtypes NumPy's rule gives a tensor of `t_dtype` with `dtype=requested` (a NumPy
    dtype or None), as the op's eager function answers it for a 2 x 3 NumPy array of ones (no torch
    tensor: the fake runs this under torch's fake mode)."""
    kwargs = {} if requested is None else {"dtype": requested}
    result = _EAGER[name](np.ones((2, 3), dtype=interop.kernel_dtype(t_dtype)), axis=0, **kwargs)
    return tuple(interop.torch_dtype(np.asarray(r).dtype) for r in (result if isinstance(result, tuple) else (result,)))


def _result_dtypes(entry: named.Named, x, dtype) -> tuple:
    """The results' dtypes as the eager call gets them (ops/dispatch.py): NumPy's rule with the
    `dtype=` given, or without one, with the torch twin's dtype where it differs from NumPy's (a
    uint8 sum is int64; the mean and variance of complex numbers a complex mean and a real
    variance, whatever the `dtype=`). The twin's refusals are the eager call's (argmax of bool)."""
    if dtype is not None:
        return _numpy_rule(entry.name, x.dtype, interop.kernel_dtype(dtype))
    natural = _numpy_rule(entry.name, x.dtype)
    if entry.torch is None:
        return natural
    with unset_fake_temporarily():  # the twin runs on a real CPU tensor, as for the eager call
        want = interop.torch_result_dtype(entry.torch, x.dtype)
    return natural if interop.torch_dtype(want) == natural[0] else _numpy_rule(entry.name, x.dtype, want)


def _own_storage(result, x):
    """The eager results as a custom op must return them: no storage shared with x or each other
    (a pair written side by side on the GPU, a result of no reduced axis)."""
    results, seen = [], {x.untyped_storage().data_ptr()} if x.numel() else set()
    for r in (result if isinstance(result, tuple) else (result,)):
        ptr = r.untyped_storage().data_ptr() if r.numel() else None
        results.append(r.clone() if ptr in seen else r)
        seen.add(ptr)
    return tuple(results) if isinstance(result, tuple) else results[0]


def _register(entry: named.Named):
    names, eager = _names(entry), _EAGER[entry.name]

    def impl(x, axis, keepdims, *rest):
        kwargs = {name: _TO_EAGER.get(name, _same)(value) for name, value in zip(names, rest)}
        with torch.no_grad():  # the eager path itself: no routing back here
            return _own_storage(eager(x, axis=_axis(axis), keepdims=keepdims, **kwargs), x)

    op = torch.library.custom_op(f"kps::{entry.name}", impl, mutates_args=(), schema=schema(entry))

    @op.register_fake
    def _(x, axis, keepdims, *rest):
        shape = config.result_shape(tuple(x.shape), _axes(axis, x.dim()), keepdims)
        dtype = dict(zip(names, rest)).get("dtype")
        results = tuple(x.new_empty(shape, dtype=d) for d in _result_dtypes(entry, x, dtype))
        return results if entry.outputs > 1 else results[0]

    if entry.grad is not None:
        setup_context, backward = _backward(entry, names)
        op.register_autograd(backward, setup_context=setup_context)
        _FUNCTIONS[entry.name] = eager_function(entry.name, impl, setup_context, backward)
    return op


def _same(value):
    return value


def _backward(entry: named.Named, names: tuple):
    """`entry`'s (setup_context, backward) for torch's autograd: its formula (ops/torch_grads.py),
    the gradient broadcast to the input's shape (a view) in the input's dtype."""
    formula = torch_grads.FORMULAS[entry.grad]

    def setup_context(ctx, inputs, output):
        x, axis, keepdims = inputs[:3]
        ctx.axes, ctx.keepdims, ctx.shape, ctx.dtype = _axes(axis, x.dim()), keepdims, tuple(x.shape), x.dtype
        ctx.n = math.prod(ctx.shape[a] for a in ctx.axes)  # (once here, not per formula's use)
        ctx.args = dict(zip(names, inputs[3:]))
        outs = tuple(output) if entry.outputs > 1 else (output,)
        ctx.save_for_backward(*((x,) if formula.saves_x else ()), *(outs if formula.saves_out else ()))

    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        x, outs = (saved[0], saved[1:]) if formula.saves_x else (None, saved)
        reduced = torch_grads.Reduced(x, tuple(outs), ctx.axes, ctx.keepdims, ctx.shape, ctx.args, ctx.n)
        grad = formula.grad(reduced, *grads)
        if tuple(grad.shape) != ctx.shape:  # (tuples: torch.Size's comparison costs microseconds)
            grad = grad.expand(ctx.shape)
        if grad.dtype != ctx.dtype:
            grad = grad.to(ctx.dtype)
        return (grad, None, None) + (None,) * len(names)

    return setup_context, backward


def eager_function(name: str, impl, setup_context, backward):
    """The op as a `torch.autograd.Function` for eager calls that autograd records: the custom op's
    implementation, setup_context and backward, without the dispatcher's autograd wrapper around them
    (the custom op stays what torch.compile and torch.func transforms see). A forward that takes
    `ctx`: with a separate setup_context, every `apply` binds its arguments with inspect.signature,
    which cost more than the rest of the call (CPU tensors, cProfile)."""

    def forward(ctx, *inputs):
        output = impl(*inputs)
        setup_context(ctx, inputs, output)
        return output

    return type(f"{name}_function", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


#: Every named op with a torch custom op (ops/named.py), and its eager function.
_EAGER = {entry.name: _eager(entry) for entry in named.TABLE if named.has_torch_op(entry)}
#: The differentiable ones as autograd Functions (`eager_function`), filled by `_register`.
_FUNCTIONS = {}
_registered = {name: _register(named.BY_NAME[name]) for name in _EAGER}


def call(name: str, x, axis, keepdims, out, **kwargs):
    """`ops.<name>(x, ...)` through its torch custom op: `kwargs` its arguments by name (as the
    public function's keywords; those not given take their defaults)."""
    if out is not None:
        raise TypeError("out: not supported where torch.compile traces the call or autograd records it")
    if axis is not None and not isinstance(axis, (tuple, list)):
        axis = (axis,)
    args = [x, None if axis is None else list(axis), bool(keepdims)]
    for _, arg, default in named.torch_args(named.BY_NAME[name]):
        value = kwargs.get(arg, default)
        args.append(value if value is None or arg not in _TO_SCHEMA else _TO_SCHEMA[arg](value))
    function = _FUNCTIONS.get(name)
    if function is not None and torch_kernels.untraced(x):  # (else the custom op: its fake and schema)
        return function.apply(*args)
    return _registered[name](*args)
