"""The input's layout as the kernels see it: merged, sorted dims, the offset of flipped dims, and
the alignment known of the addresses; built once (`Layout.of`), and re-viewed (never edited) where
a 1-byte input is read as uint32 words.

Kept and reduced dims are each sorted by stride, outermost first, and neighbours that are
contiguous with each other (in the input, and for kept dims in the output too) are merged. Kept
and reduced dims never need to be adjacent: offsets are `kept(o) + red(r)`.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Tuple

from numpy.exceptions import AxisError  # noqa: F401 (re-exported)

from .dims import Dim, aligned, ceil, merge, size_of, stride_key


def normalize_axis(axis, ndim: int) -> Tuple[int, ...]:
    """NumPy's axis rules: None is every axis; an int or a tuple of ints, negative from the end;
    out of range -> AxisError, duplicates -> ValueError, anything else -> TypeError."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        if isinstance(a, bool):
            raise TypeError(f"axis: expected an integer or a tuple of integers, got {a!r}")
        try:
            a = operator.index(a)
        except TypeError:
            raise TypeError(f"axis: expected an integer or a tuple of integers, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise AxisError(a, ndim)
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise ValueError(f"axis: duplicate value in axis={axis!r}")
    return tuple(sorted(out))


def result_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> Tuple[int, ...]:
    axes = set(axes)
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def alignment(address: int, cap: int = 256) -> int:
    """Largest power of two (<= cap) dividing an address."""
    return min(cap, address & -address) if address else cap


@dataclass(frozen=True)
class Layout:
    """A reduction's dims, outermost first, in units of the element the kernels read (a byte, or a
    uint32 word of four: `words`, `word_columns`). `red` is never empty (a full reduction of one
    element reduces Dim(1, 1)). `in_offset` moves the input pointer to the lowest address (flipped
    reduced dims), `index_offset` is that element's index in the reduced range. `in_misalign` is the
    input address mod 16; `out_align` the largest power of two (<= 256) dividing the output's."""

    kept: Tuple[Dim, ...]
    red: Tuple[Dim, ...]
    in_offset: int
    index_offset: int
    num_out: int
    num_red: int
    itemsize: int
    out_itemsize: int
    in_misalign: int = 0
    out_align: int = 256
    words: bool = False  # a 1-byte input read as uint32 words of its innermost reduced run
    word_columns: bool = False  # ... read and written four kept columns a word
    shifted_words: int = 0  # 1-byte kept columns off the word grid, this many, read four a word (ReduceOuter)

    @classmethod
    def of(cls, shape: Sequence[int], strides: Sequence[int], axes: Sequence[int], out_strides: Sequence[int],
           itemsize: int, out_itemsize: int, indexed: bool = False, in_misalign: int = 0,
           out_align: int = 256) -> "Layout":
        """The layout of an input of `shape` and `strides` (elements) reduced over `axes`, into an
        output whose kept axes, in order, have `out_strides`. Size-1 dims are dropped; reduced dims
        with negative strides are flipped (summation order is free, so the pointer moves instead
        of copying). `indexed`: the kernels tell each element's index in the reduced range (the
        C-order flattening of the reduced axes), the reduced dims' second stride; they then merge
        only where their indices run on as their addresses do."""
        axes = set(axes)
        kept, red = [], []
        in_offset = index_offset = 0
        out_iter = iter(out_strides)
        index_stride = math.prod(shape[a] for a in axes)
        for i, (n, s) in enumerate(zip(shape, strides)):
            if i in axes:
                index_stride //= n or 1
                if n == 1:
                    continue
                t = index_stride if indexed else 0
                if s < 0:
                    in_offset += (n - 1) * s
                    index_offset += (n - 1) * t
                    s, t = -s, -t
                red.append(Dim(n, s, t))
            else:
                o = next(out_iter)
                if n != 1:
                    kept.append(Dim(n, s, o))
        return cls(kept=merge(sorted(kept, key=stride_key)), red=merge(sorted(red, key=stride_key)) or (Dim(1, 1),),
                   in_offset=in_offset, index_offset=index_offset, num_out=size_of(kept), num_red=size_of(red),
                   itemsize=itemsize, out_itemsize=out_itemsize, in_misalign=in_misalign, out_align=out_align)

    @property
    def indexed(self) -> bool:
        """Whether the kernels tell each element's index in the reduced range (`of`'s `indexed`: the
        reduced dims carry index strides, a size-1 one aside)."""
        return any(d.out_stride for d in self.red if d.size > 1)

    @property
    def inner_reduced(self) -> bool:
        """Whether the dim with the smallest stride is reduced (ReduceInner's case, else ReduceOuter's)."""
        red_inner = self.red[-1].in_stride or math.inf
        kept_inner = (abs(self.kept[-1].in_stride) or math.inf) if self.kept else math.inf
        return not self.kept or red_inner < kept_inner or red_inner == kept_inner == math.inf

    @property
    def reduce_type(self) -> str:
        """The case's name for people and tests: `full`, `last`, `higher` or `any`."""
        if self.inner_reduced:
            return "full" if not self.kept else ("last" if len(self.red) == 1 else "any")
        return "higher" if len(self.red) == 1 else "any"

    @property
    def in_base(self) -> int:
        """The alignment known of the first element read, in bytes (mod 16)."""
        return self.in_misalign + self.in_offset * self.itemsize

    @property
    def extent(self) -> int:
        """The farthest input offset from the pointer (for the index width)."""
        return abs(self.in_offset) + sum((d.size - 1) * abs(d.in_stride) for d in self.kept + self.red)

    @property
    def out_extent(self) -> int:
        return sum((d.size - 1) * abs(d.out_stride) for d in self.kept)

    def as_words(self) -> Optional["Layout"]:
        """The layout in uint32 words of the innermost reduced run (4x fewer, 4x wider); None where
        a run of one word beside a kept stride of one word would tie (such plans stay in bytes).
        The caller checks `packs_words` first."""
        kept = tuple(Dim(d.size, d.in_stride // 4, d.out_stride) for d in self.kept)
        red = tuple(Dim(d.size, d.in_stride // 4) for d in self.red[:-1]) + (Dim(self.red[-1].size // 4, 1),)
        if kept and 1 >= (abs(kept[-1].in_stride) or math.inf):
            return None
        return replace(self, kept=kept, red=red, in_offset=self.in_offset // 4, num_red=self.num_red // 4,
                       itemsize=4, words=True)

    def as_word_columns(self) -> "Layout":
        """The layout in uint32 words of four adjacent kept columns, in and out (4x fewer outputs,
        4x wider); a kept dim of one word of columns is a reduction of whole words. The caller
        checks `packs_word_columns` first."""
        kept = tuple(Dim(d.size, d.in_stride // 4, d.out_stride // 4) for d in self.kept[:-1])
        kept += (Dim(self.kept[-1].size // 4, 1, 1),)
        red = tuple(Dim(d.size, d.in_stride // 4, d.out_stride) if d.size > 1 else d for d in self.red)
        return replace(self, kept=tuple(d for d in kept if d.size > 1), red=red, in_offset=self.in_offset // 4,
                       num_out=self.num_out // 4, itemsize=4, out_itemsize=4, word_columns=True)

    def as_shifted_words(self) -> "Layout":
        """ReduceOuter's view of 1-byte kept columns off the word grid: a column of the tile is a word
        of four results, read from the aligned words around its bytes (kps::ReadWordsShifted): the
        innermost kept dim becomes ceil(W / 4) words 4 bytes apart, written as words. The input
        stays in bytes."""
        width = self.kept[-1].size
        kept = tuple(Dim(d.size, d.in_stride, d.out_stride // 4) for d in self.kept[:-1]) + (Dim(ceil(width, 4), 4, 1),)
        return replace(self, kept=kept, num_out=self.num_out // width * ceil(width, 4), out_itemsize=4,
                       shifted_words=width)

    def packs_words(self) -> bool:
        """Whether a 1-byte input reads as aligned uint32 words, each inside the innermost reduced run
        (the offset too becomes words, so it must be whole words itself)."""
        kept, red = self.kept, self.red
        return (red[-1].in_stride == 1 and red[-1].size % 4 == 0 and self.in_offset % 4 == 0
                and aligned(self.in_misalign, [d.in_stride for d in kept + red[:-1]], 1, 4))

    def packs_word_columns(self) -> bool:
        """Whether a 1-byte input's innermost kept dim reads and writes as aligned uint32 words of four
        columns: whole words of results (`word_results`), whole words long, every other stride, the
        offset and the input's address whole words."""
        return (self.word_results() and self.kept[-1].size % 4 == 0 and self.in_offset % 4 == 0
                and aligned(self.in_misalign, [d.in_stride for d in self.kept[:-1] + self.red if d.size > 1], 1, 4))

    def word_results(self) -> bool:
        """Whether the innermost kept dim is contiguous in and out and its results can be written as
        words of four: the result's start and its other strides whole words."""
        inner = self.kept[-1]
        return (inner.in_stride == 1 and inner.out_stride == 1 and self.out_align % 4 == 0
                and aligned(0, [d.out_stride for d in self.kept[:-1] if d.size > 1], 1, 4))
