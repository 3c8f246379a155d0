"""Where a torch tensor's call goes through the op's torch custom op (ops/torch_ops.py): while
torch.compile traces the call, or where autograd records it (the custom op carries the fake shape
and dtype, and the gradient). Eager calls without autograd keep the direct path. ops/build.py
takes `ROUTE` for the public functions; torch_ops is imported by the first call that needs it.
"""
from __future__ import annotations

from . import interop, named

#: The named ops with a torch custom op.
TORCH_OPS = frozenset(entry.name for entry in named.TABLE if named.has_torch_op(entry))


def graph(name: str, x) -> bool:
    """Whether this call goes through the op's torch custom op. Never a CuPy or NumPy array: the
    caller tests `type(x) is not gpu_backend.ndarray` first."""
    if name not in TORCH_OPS or not interop.is_torch(x):
        return False
    torch = interop.torch_module()
    return torch.compiler.is_compiling() or (x.requires_grad and torch.is_grad_enabled())


def call(name: str, x, axis, keepdims, out, **kwargs):
    """`ops.<name>(x, ...)` through its torch custom op."""
    from . import torch_ops

    return torch_ops.call(name, x, axis, keepdims, out, **kwargs)


ROUTE = (graph, call)
