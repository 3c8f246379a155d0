"""The named reductions as torch custom ops (`torch.ops.kps.reduce_sum`, ...), so a model compiled
with `torch.compile(fullgraph=True)` keeps them in its graph, and autograd differentiates sum and
mean (the gradient broadcast back) and max and min (to the selected elements, shared among ties as
torch's amax and amin share it).

`ops.reduce_*` route a torch tensor here while torch.compile traces the call or autograd records it
(ops/torch_route.py); eager calls without autograd keep the direct path. Every entry of the table
(ops/named.py) with a torch twin and a signature kind of `named.TORCH_SCHEMAS` is one custom op,
whose implementation is the op's eager function (ops/build.py, no routing). The fake (meta)
implementation gives the result's shape (this project's planner) and dtype (torch's own rule, as
eager calls get it: ops/interop.py). Imported by `ops` when torch is imported first, else by the
first call that needs it.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from kernels import config

from . import build, interop, named

#: The twins whose ops autograd differentiates here.
DIFFERENTIABLE = ("sum", "mean", "amax", "amin")


def _axis(axis):
    return None if axis is None else tuple(axis)


def _numpy(dtype):
    return None if dtype is None else interop.kernel_dtype(dtype)


def _result_dtype(twin: str, x, dtype):
    if dtype is not None:
        return dtype
    return interop.TORCH_TWINS[twin](torch, torch.empty((2, 3), dtype=x.dtype, device="meta")).dtype


def _expand(grad, axes, keepdims, shape):
    """`grad` of a reduced result broadcast back to the input's shape."""
    if not keepdims:
        for a in sorted(axes):
            grad = grad.unsqueeze(a)
    return grad.expand(shape)


def _register(entry: named.Named):
    name, twin, extra = entry.name, entry.torch, named.TORCH_SCHEMAS[entry.kind]
    eager = build.function(entry)

    def impl(x, axis, keepdims, *rest):
        kwargs = {}
        if rest:
            kwargs["dtype"] = _numpy(rest[0])
        if len(rest) > 1:
            kwargs["ddof"] = rest[1]
        with torch.no_grad():  # the eager path itself: no routing back here
            return eager(x, axis=_axis(axis), keepdims=keepdims, **kwargs)

    op = torch.library.custom_op(f"kps::{name}", impl, mutates_args=(),
                                 schema=f"(Tensor x, int[]? axis, bool keepdims{extra}) -> Tensor")

    @op.register_fake
    def _(x, axis, keepdims, *rest):
        axes = config.normalize_axis(_axis(axis), x.dim())
        shape = config.result_shape(tuple(x.shape), axes, keepdims)
        return x.new_empty(shape, dtype=_result_dtype(twin, x, rest[0] if rest else None))

    if twin in DIFFERENTIABLE:
        def setup_context(ctx, inputs, output):
            x, axis, keepdims = inputs[:3]
            ctx.axes, ctx.keepdims, ctx.shape = config.normalize_axis(_axis(axis), x.dim()), keepdims, x.shape
            ctx.count = math.prod(x.shape[a] for a in ctx.axes)
            if twin in ("amax", "amin"):
                ctx.save_for_backward(x, output)

        def backward(ctx, grad):
            g = _expand(grad, ctx.axes, ctx.keepdims, ctx.shape)
            if twin == "mean":
                g = g / ctx.count
            elif twin in ("amax", "amin") and ctx.axes:
                x, result = ctx.saved_tensors
                chosen = x == _expand(result, ctx.axes, ctx.keepdims, ctx.shape)
                g = g * chosen / chosen.sum(dim=ctx.axes, keepdim=True)
            return (g, None, None) + (None,) * (extra.count(",") if extra else 0)

        op.register_autograd(backward, setup_context=setup_context)
    return op


#: Every named op with a torch custom op (ops/named.py).
_registered = {entry.name: _register(entry) for entry in named.TABLE if named.has_torch_op(entry)}


def call(name: str, x, axis, keepdims, out, **kwargs):
    """`ops.<name>(x, ...)` through its torch custom op."""
    if out is not None:
        raise TypeError("out: not supported where torch.compile traces the call or autograd records it")
    if axis is not None and not isinstance(axis, (tuple, list)):
        axis = (axis,)
    args = [x, None if axis is None else list(axis), bool(keepdims)]
    extra = named.TORCH_SCHEMAS[named.BY_NAME[name].kind]
    if extra:
        dtype = kwargs.get("dtype")
        args.append(dtype if dtype is None or isinstance(dtype, torch.dtype) else interop.torch_dtype(np.dtype(dtype)))
    if "ddof" in extra:
        args.append(float(kwargs.get("ddof", 0)))
    return _registered[name](*args)
