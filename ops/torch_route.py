"""Where a torch tensor's call goes through the op's torch custom op (ops/torch_ops.py): while
torch.compile traces the call, or where autograd records it (the custom op carries the fake shape
and dtype, and the gradient). Eager calls without autograd keep the direct path. ops/build.py
and ops/own.py take `ROUTE` for the public functions; torch_ops is imported by the first call that
needs it. `ops.reduce` of a tensor autograd records takes the named op of the same descriptors, or
refuses (`named_for`): no result comes back silently detached from autograd.
"""
from __future__ import annotations

from . import interop, named

#: The named ops with a torch custom op.
TORCH_OPS = frozenset(entry.name for entry in named.TABLE if named.has_torch_op(entry))


#: torch.Tensor and torch's two switches, bound at the first torch tensor (torch is imported then).
_tensor = _compiling = _grad_enabled = None


def graph(name: str, x) -> bool:
    """Whether this call goes through the op's torch custom op. Never a CuPy or NumPy array: the
    caller tests `type(x) is not gpu_backend.ndarray` first. A plain torch.Tensor skips the module
    test (0.51 -> 0.32 us a call on this project's CPU host); subclasses take it."""
    global _tensor, _compiling, _grad_enabled
    if name not in TORCH_OPS:
        return False
    if type(x) is not _tensor:
        if not interop.is_torch(x):
            return False
        if _tensor is None:
            torch = interop.torch_module()
            _tensor, _compiling, _grad_enabled = torch.Tensor, torch.compiler.is_compiling, torch.is_grad_enabled
    return _compiling() or (x.requires_grad and _grad_enabled())


#: The named ops of the plain signatures by their descriptors (the first entry of the table wins).
_BY_DESCRIPTORS = {}
for _entry in reversed(named.TABLE):
    if _entry.kind in ("sum", "plain") and _entry.name in TORCH_OPS:
        _BY_DESCRIPTORS[(_entry.op, _entry.transform, _entry.epilogue)] = _entry.name


def named_for(x, op, transform, epilogue):
    """For `ops.reduce(x, ...)` of a torch tensor that requires grad: where autograd records, the
    named op of these descriptors, whose custom op carries the gradient (`reduce(t)` is `reduce_sum(t)`),
    or a TypeError: a reduction of other descriptors has no gradient, and its result would come back
    detached. None where autograd does not record (the direct path)."""
    if not interop.is_torch(x) or not interop.torch_module().is_grad_enabled():
        return None
    try:
        name = _BY_DESCRIPTORS.get((op, transform, epilogue))
    except TypeError:  # an unhashable descriptor: none of the table's
        name = None
    if name is None:
        raise TypeError("x: requires grad, and ops.reduce of these descriptors has no gradient (only the"
                        " named reductions differentiate: ops.reduce_sum, ...); pass x.detach() to reduce"
                        " without one")
    return name


def call(name: str, x, axis, keepdims, out, **kwargs):
    """`ops.<name>(x, ...)` through its torch custom op."""
    from . import torch_ops

    return torch_ops.call(name, x, axis, keepdims, out, **kwargs)


ROUTE = (graph, call)
