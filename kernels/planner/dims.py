"""Dims and the small integer helpers every regime of the planner uses."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Tuple

#: 32-bit index math while every index and offset stays below this (headroom for the loop
#: counters that run a few steps past the end before their bound check).
INDEX32_LIMIT = 2**31 - 2**24


@dataclass(frozen=True)
class Dim:
    """One (merged) dim: its size and its strides, in elements, in the input and the output (for a
    reduced dim, the output stride is the index stride: see `Layout.of`'s `indexed`)."""

    size: int
    in_stride: int
    out_stride: int = 0


def merge(dims: Sequence[Dim]) -> Tuple[Dim, ...]:
    """Merge neighbours (outermost first) that are contiguous in the input and in the output."""
    out = []
    for d in dims:
        if out:
            prev = out[-1]
            if prev.in_stride == d.in_stride * d.size and prev.out_stride == d.out_stride * d.size:
                out[-1] = Dim(prev.size * d.size, d.in_stride, d.out_stride)
                continue
        out.append(d)
    return tuple(out)


def stride_key(d: Dim) -> float:
    """Sort key, outermost first: larger strides first, broadcast (stride 0) dims outermost of all."""
    return -(abs(d.in_stride) or math.inf)


def size_of(dims: Sequence[Dim]) -> int:
    """The elements the dims span (their sizes' product)."""
    return math.prod(d.size for d in dims)


def ceil(a: int, b: int) -> int:
    return -(-a // b)


def pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def pow2_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def two_adic(n: int) -> int:
    """The largest power of two dividing n."""
    return n & -n


def aligned(base: int, strides, itemsize: int, nbytes: int) -> bool:
    """Whether every address `base + sum(i * stride * itemsize)` is a multiple of `nbytes` (strides in
    elements; `base` in bytes, or the alignment known of it)."""
    return base % nbytes == 0 and all(s * itemsize % nbytes == 0 for s in strides)


def index_bits(*sizes: int) -> int:
    """The kernel's index width: 32 bits while every size and offset stays below INDEX32_LIMIT."""
    return 32 if max(sizes) < INDEX32_LIMIT else 64
