"""The peers a user would call instead of this project (NumPy/CuPy functions, torch's), per op, and
the float64 check every timed result passes first (a benchmark of a wrong kernel means nothing)."""
from __future__ import annotations

import functools
import math

import numpy as np

import ops
from ops import interop

def cuda_torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


def _reduced_last(x, axes, permute):
    """`x` with the reduced axes moved last and flattened into one: how NumPy, CuPy and torch users
    take an argmax over several axes (a copy unless the axes are already last)."""
    kept = [a for a in range(x.ndim) if a not in axes]
    return permute(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])


def _arg_peer(name: str):
    def call(xp, x, axes):
        return getattr(xp, name)(_reduced_last(x, axes, xp.transpose), axis=-1)
    return call


def _arg_torch(name: str):
    def call(torch, t, axes):
        return getattr(torch, name)(_reduced_last(t, axes, lambda a, p: a.permute(*p)), dim=-1)
    return call


def _logsumexp_peer(xp, x, axes):
    """What a NumPy or CuPy user writes: the maximum, then the log of the sum of shifted exps."""
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    return xp.squeeze(xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m, axis=axes)


#: op name -> (our function, the NumPy/CuPy function: its name, or a callable (xp, x, axes); the
#: torch function: its name, a callable (torch, t, axes), or None)
OPS = {
    "sum": (ops.reduce_sum, "sum", "sum"),
    "sum_precise": (functools.partial(ops.reduce_sum, precise=True), "sum", "sum"),
    "mean": (ops.reduce_mean, "mean", "mean"),
    "max": (ops.reduce_max, "max", "amax"),
    "min": (ops.reduce_min, "min", "amin"),
    "prod": (ops.reduce_prod, "prod", None),
    "all": (ops.reduce_all, "all", "all"),
    "any": (ops.reduce_any, "any", "any"),
    "argmax": (ops.reduce_argmax, _arg_peer("argmax"), _arg_torch("argmax")),
    "argmin": (ops.reduce_argmin, _arg_peer("argmin"), _arg_torch("argmin")),
    "var": (ops.reduce_var, "var", lambda torch, t, axes: torch.var(t, dim=axes, correction=0)),
    "std": (ops.reduce_std, "std", lambda torch, t, axes: torch.std(t, dim=axes, correction=0)),
    "logsumexp": (ops.reduce_logsumexp, _logsumexp_peer, "logsumexp"),
    "mean_var": (ops.reduce_mean_var, lambda xp, x, axes: (xp.mean(x, axis=axes), xp.var(x, axis=axes)),
                 lambda torch, t, axes: torch.var_mean(t, dim=axes, correction=0)),
    "nansum": (ops.reduce_nansum, "nansum", "nansum"),
    "nanmean": (ops.reduce_nanmean, "nanmean", "nanmean"),
    "nanmax": (ops.reduce_nanmax, "nanmax", None),
    "nanvar": (ops.reduce_nanvar, "nanvar", None),
    "nanargmax": (ops.reduce_nanargmax, _arg_peer("nanargmax"), None),
    "count_nonzero": (ops.count_nonzero, "count_nonzero", "count_nonzero"),
    "ptp": (ops.reduce_ptp, "ptp", None),
    "norm": (ops.reduce_norm, lambda xp, x, axes: xp.sqrt(xp.sum(x * x, axis=axes)),
             lambda torch, t, axes: torch.linalg.vector_norm(t, dim=axes)),
    "minmax": (ops.reduce_minmax, lambda xp, x, axes: (xp.min(x, axis=axes), xp.max(x, axis=axes)),
               lambda torch, t, axes: (torch.aminmax(t, dim=axes[0]) if len(axes) == 1
                                       else (torch.amin(t, dim=axes), torch.amax(t, dim=axes)))),
}


#: An op's plain twin (the same reduction without NaN skipping or compensation), timed in the same
#: rounds, so the table shows what the feature costs (`vs plain`: the twin's time over ours).
PLAIN_TWINS = {"sum_precise": "sum", "nansum": "sum", "nanmean": "mean", "nanmax": "max", "nanvar": "var",
               "nanargmax": "argmax"}


#: Ops whose result is an index or a count: compared exactly.
INDEX_OPS = ("argmax", "argmin", "nanargmax", "count_nonzero")


def numpy_call(op: str, xp, x, axes):
    """The NumPy (xp=numpy) or CuPy (xp=cupy) equivalent of `op` on `x`."""
    fn = OPS[op][1]
    return fn(xp, x, axes) if callable(fn) else getattr(xp, fn)(x, axis=axes)


def peer_calls(op: str, x, axes):
    """name -> zero-argument callable, for the peers that run this op on `x` (a CuPy array: cupy,
    and torch if installed; a torch tensor: torch)."""
    import cupy

    torch_fn = OPS[op][2]
    calls = {}
    if isinstance(x, cupy.ndarray):
        calls["cupy"] = lambda: numpy_call(op, cupy, x, axes)
    torch = cuda_torch()
    if torch is not None and torch_fn is not None:
        t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
        if callable(torch_fn):
            calls["torch"] = lambda: torch_fn(torch, t, axes)
        else:
            fn = getattr(torch, torch_fn)
            calls["torch"] = lambda: fn(t, dim=axes)
    return calls


def _host64(a) -> np.ndarray:
    """float64 host copy of a NumPy or CuPy array or a torch tensor (bool stays bool, complex
    numbers complex128)."""
    h = interop.to_numpy(a)
    return h if h.dtype == np.bool_ else h.astype(_wide(h.dtype))


def _wide(dtype) -> np.dtype:
    """The reference's dtype: complex128 for complex numbers, float64 for the rest."""
    return np.dtype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)


def check_result(result, x, op: str, axes, on_gpu: bool = False) -> bool:
    """Our result against a float64 reference (a benchmark of a wrong kernel means nothing), computed
    by NumPy, or with `on_gpu` by CuPy on the GPU (quick enough for the sweep's 256 MB inputs)."""
    if on_gpu:
        import cupy

        ref = numpy_call(op, cupy, x if x.dtype == np.bool_ else x.astype(_wide(x.dtype)), axes)
        ref = tuple(map(cupy.asnumpy, ref)) if isinstance(ref, tuple) else cupy.asnumpy(ref)
    else:
        ref = numpy_call(op, np, _host64(x), axes)
    if isinstance(result, tuple):  # several results (mean and variance): side by side
        result, ref = np.stack([_host64(r) for r in result]), np.stack(ref)
    if op in INDEX_OPS:  # float64 keeps every order and tie of the input's values
        return bool(np.array_equal(_host64(result), ref))
    tol = 2e-2 if str(x.dtype) in ("float16", "torch.bfloat16", "torch.float16") else 1e-4
    size = math.prod(x.shape)
    return bool(np.allclose(_host64(result), ref, rtol=tol, atol=tol * math.sqrt(size / max(ref.size, 1))))
