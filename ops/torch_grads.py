"""The gradients of the named reductions' torch custom ops: each entry of the table (ops/named.py)
names its formula (`Named.grad`); ops/torch_ops.py registers it as the custom op's backward.

Each formula is the derivative torch's own twin has (torch's `derivatives.yaml` and
`FunctionsManual.cpp`: amax's shared ties, prod's zeros, vector_norm's zero vector and inf-norm),
or, for the NaN-skipping ops torch lacks, the derivative of NumPy's definition (a NaN gets 0). They
are written with torch's elementwise ops on the reduced result broadcast back (`unsqueeze` and
`expand`, views), so a backward traces into a compiled graph and a sum-like op's backward is one
elementwise pass. A formula gets a `Reduced` (the saved tensors, the axes, the op's other
arguments) and the outputs' gradients (None for an output nothing used), and answers a gradient
that broadcasts to the input's shape.

Note: torch reads `dim=()` as every dim, NumPy's `axis=()` as none; the helpers here take the
empty tuple as NumPy does (`Reduced.total`, `Reduced.product`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Optional

import torch

from . import torch_kernels


@dataclass
class Reduced:
    """One call as its backward sees it: the input `x` and the results `out` (where the formula
    saves them), the reduced axes (non-negative, sorted), keepdims, the input's shape, the op's
    arguments after keepdims by name (`ddof`, `ord`, `dtype`, `precise`) and the count a result
    reduces."""

    x: Optional[torch.Tensor]
    out: tuple
    axes: tuple
    keepdims: bool
    shape: tuple
    args: dict
    n: int  # the count of elements a result reduces

    @cached_property
    def one_pass(self) -> bool:
        """Whether the centred gradients take ops/torch_kernels.py's kernel (asked once a backward)."""
        return bool(self.axes) and torch_kernels.applies(self.x)

    def keep(self, t):
        """A reduced tensor with the reduced axes back as 1s: it broadcasts against x."""
        if t is None or self.keepdims:
            return t
        for a in self.axes:
            t = t.unsqueeze(a)
        return t

    def total(self, t):
        """t summed over the reduced axes, kept as 1s (none: t)."""
        return t.sum(dim=self.axes, keepdim=True) if self.axes else t

    def product(self, t):
        """t multiplied over the reduced axes, kept as 1s (torch.prod takes one dim at a time)."""
        for a in self.axes:
            t = t.prod(dim=a, keepdim=True)
        return t

    def divisor(self, n):
        """The variance's divisor max(n - ddof, 0) (NumPy's; `n` a count, symbolic where torch.compile
        traces dynamic shapes, or a tensor of counts)."""
        d = n - self.args["ddof"]
        return d.clamp_min(0) if isinstance(d, torch.Tensor) else torch.sym_max(d, 0)


@dataclass(frozen=True)
class Formula:
    """A backward: `grad(reduced, *output_grads)`, and whether it needs the input and the results
    saved (sum and mean need neither: their backward keeps no tensor alive)."""

    grad: Callable
    saves_x: bool = False
    saves_out: bool = False


def _sum(r: Reduced, g):
    return r.keep(g)


def _mean(r: Reduced, g):
    return r.keep(g / r.n) if r.n else r.keep(g)


def share(r: Reduced, g, chosen_value, empty_slices_get_zero=False):
    """`g` to the elements of x equal to the chosen value (a max or a min), shared among ties as
    torch's amax and amin share it. A slice with none chosen (NaN) gets NaN as torch's, or 0 (a
    NaN-skipping op's slice of NaN)."""
    if g is None:
        return None
    if not r.axes:
        return g
    chosen = r.x == r.keep(chosen_value)
    count = r.total(chosen)
    if empty_slices_get_zero:
        count = count.clamp_min(1)
    return chosen * (r.keep(g) / count)


def _extreme(r: Reduced, g):
    return share(r, g, r.out[0])


def _nan_extreme(r: Reduced, g):
    return share(r, g, r.out[0], empty_slices_get_zero=True)


def _minmax(r: Reduced, g_min, g_max):
    parts = [p for p in (share(r, g_min, r.out[0]), share(r, g_max, r.out[1])) if p is not None]
    return sum(parts[1:], parts[0]) if parts else torch.zeros_like(r.x)


def _ptp(r: Reduced, g):
    """max - min: the extremes recomputed (the custom op returns only the range), shared as torch's
    amax and amin share them."""
    if not r.axes:
        return torch.zeros_like(r.x)
    g, kept = r.keep(g), Reduced(r.x, (), r.axes, True, r.shape, r.args, r.n)
    return share(kept, g, _extreme_of(r, largest=True)) - share(kept, g, _extreme_of(r, largest=False))


def _extreme_of(r: Reduced, largest: bool):
    """x's max (min) over the reduced axes, kept: torch's amax (amin), or of complex numbers NumPy's
    order (the real parts first, then the imaginary; a slice holding a NaN gives NaN), which torch's
    amax lacks."""
    pick = torch.amax if largest else torch.amin
    if not r.x.is_complex():
        return pick(r.x, dim=r.axes, keepdim=True)
    real = pick(r.x.real, dim=r.axes, keepdim=True)
    tied = torch.where(r.x.real == real, r.x.imag, -math.inf if largest else math.inf)
    value = torch.complex(real, pick(tied, dim=r.axes, keepdim=True))
    return torch.where(r.total(torch.isnan(r.x)) > 0, complex(math.nan, math.nan), value)


def _prod(r: Reduced, g):
    """torch's prod gradient, zeros included: with no zero in a slice the product of the others,
    with one zero the product of the others at the zero and 0 elsewhere, with two or more 0 (of
    complex numbers their conjugate, torch's convention for a holomorphic function)."""
    x = r.x
    zero = x == 0
    zeros = r.total(zero)
    safe = torch.where(zero, 1, x)
    others = r.product(safe)  # the product of the nonzeros
    grad = torch.where(zero, torch.where(zeros == 1, others, 0), torch.where(zeros == 0, others / safe, 0))
    return r.keep(g) * grad.conj()


def _logsumexp(r: Reduced, g):
    return r.keep(g) * torch.exp(r.x - r.keep(r.out[0]))


def centred_scaled(r: Reduced, scale, mean=None, shift=None, scale_by=1.0, shift_by=1.0):
    """(x - mean) * (scale * scale_by) (+ shift * shift_by): x about the mean of its slice (`mean`
    the op's own, or computed as torch's var_backward recomputes it; none reduced: 0), scaled and
    shifted by tensors of the reduced shape kept, each times a number. One pass over x where
    ops/torch_kernels.py applies (eager CUDA calls, the numbers folded in there), torch's ops elsewhere."""
    if r.one_pass:
        if mean is None:
            mean = r.x.mean(dim=r.axes, keepdim=True, dtype=torch_kernels.wide(r.x.dtype))
        grad = torch_kernels.centred_scaled(r.x, r.axes, mean, scale, shift, scale_by, shift_by)
        if grad is not None:
            return grad
    if mean is not None:
        centred = r.x - mean
    else:
        centred = r.x - r.total(r.x) / r.n if r.axes else torch.zeros_like(r.x)
    scaled = (scale * scale_by) * centred
    return scaled if shift is None else scaled + shift * shift_by


def _widened(r: Reduced, t):
    """An output's gradient in the one-pass kernel's arithmetic dtype where it runs: float32 for
    16-bit data, whose own dtype would flush a scale such as 2 / n."""
    return t.to(torch_kernels.wide(r.x.dtype)) if r.one_pass else t


def _scale(d):
    """1 / d for the variance's divisor d (a tensor; a count: inf for 0, as NumPy's variance is)."""
    return 1 / d if isinstance(d, torch.Tensor) or d != 0 else math.inf


def _var(r: Reduced, g):
    return centred_scaled(r, r.keep(_widened(r, g)), scale_by=2 * _scale(r.divisor(r.n)))


def _std(r: Reduced, g):
    return centred_scaled(r, r.keep(_widened(r, g)) / r.keep(r.out[0]), scale_by=_scale(r.divisor(r.n)))


def _mean_var(r: Reduced, g_mean, g_var):
    """(mean, var): the mean's gradient and the variance's, about the mean the op returned."""
    if g_var is None:  # (a view of the mean's gradient: no pass over x)
        return _mean(r, g_mean) if g_mean is not None else torch.zeros((), dtype=r.out[0].dtype, device=r.out[0].device)
    shift = r.keep(_widened(r, g_mean)) if g_mean is not None else None
    return centred_scaled(r, r.keep(_widened(r, g_var)), mean=r.keep(r.out[0]), shift=shift,
                          scale_by=2 * _scale(r.divisor(r.n)), shift_by=1 / r.n if r.n else 1.0)


def _nansum(r: Reduced, g):
    return torch.where(torch.isnan(r.x), 0, r.keep(g))


def _numbers(r: Reduced):
    """Where x is a number (not NaN), and how many a slice holds (in x's real dtype: a count of
    complex numbers is real)."""
    number = ~torch.isnan(r.x)
    return number, r.total(number.to(r.x.real.dtype if r.x.is_complex() else r.x.dtype))


def _nanmean(r: Reduced, g):
    number, count = _numbers(r)
    return torch.where(number, r.keep(g) / count, 0)


def _nan_centred(r: Reduced, number, count):
    """x minus the mean of its slice's numbers (NaN where x is)."""
    return r.x - r.total(torch.where(number, r.x, 0)) / count


def _nanvar(r: Reduced, g):
    number, count = _numbers(r)
    return torch.where(number, (r.keep(g) * 2 / r.divisor(count)) * _nan_centred(r, number, count), 0)


def _nanstd(r: Reduced, g):
    number, count = _numbers(r)
    scale = r.keep(g) / (r.divisor(count) * r.keep(r.out[0]))
    return torch.where(number, scale * _nan_centred(r, number, count), 0)


def _norm(r: Reduced, g):
    """torch's linalg.vector_norm gradient for every ord (FunctionsManual.cpp `norm_backward`): the
    zero vector's subgradient 0, the inf-norms' shared among the elements of the largest (smallest)
    magnitude, 0 for the 0-norm (a count)."""
    x, p, norm, g = r.x, float(r.args["ord"]), r.keep(r.out[0]), r.keep(g)
    if p == 0:
        return torch.zeros_like(x)
    if p == 1:
        return torch.sgn(x) * g
    if p == 2:
        return g * (x / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):  # the largest (smallest) magnitude as torch's abs gives it: a complex one's
        magnitude = x.abs()  # may differ from the norm's by an ulp
        if not r.axes:
            return torch.sgn(x) * g
        extreme = (torch.amax if p > 0 else torch.amin)(magnitude, dim=r.axes, keepdim=True)
        chosen = (magnitude == extreme) | torch.isnan(magnitude)
        return torch.sgn(x) * (chosen * (g / r.total(chosen)))
    if p < 1:
        return torch.sgn(x) * x.abs().pow(p - 1).masked_fill(x == 0, 0) * (g * norm.pow(1 - p))
    scale = (g / norm.pow(p - 1)).masked_fill(norm == 0, 0)
    return (torch.sgn(x) * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)) * scale


#: The formulas by name (`Named.grad`).
FORMULAS = {
    "sum": Formula(_sum),
    "mean": Formula(_mean),
    "extreme": Formula(_extreme, saves_x=True, saves_out=True),
    "nan_extreme": Formula(_nan_extreme, saves_x=True, saves_out=True),
    "minmax": Formula(_minmax, saves_x=True, saves_out=True),
    "ptp": Formula(_ptp, saves_x=True),
    "prod": Formula(_prod, saves_x=True),
    "logsumexp": Formula(_logsumexp, saves_x=True, saves_out=True),
    "var": Formula(_var, saves_x=True),
    "std": Formula(_std, saves_x=True, saves_out=True),
    "mean_var": Formula(_mean_var, saves_x=True, saves_out=True),
    "nansum": Formula(_nansum, saves_x=True),
    "nanmean": Formula(_nanmean, saves_x=True),
    "nanvar": Formula(_nanvar, saves_x=True),
    "nanstd": Formula(_nanstd, saves_x=True, saves_out=True),
    "norm": Formula(_norm, saves_x=True, saves_out=True),
}
