"""The planner: a reduction's shape, strides and axes -> which kernel, with what launch shape.

Pure Python (no CuPy), so every planning rule is unit-tested on a machine without a GPU.

Steps, as in Paddle's ReduceConfig:
1. Normalise axes (NumPy's rules and errors).
2. Drop size-1 dims; flip reduced dims with negative strides (summation order is free, so the
   pointer moves to the lowest address instead of copying).
3. Sort the kept dims and the reduced dims each by stride, outermost first, and merge neighbours
   that are contiguous with each other (in the input, and for kept dims in the output too). Kept
   and reduced dims never need to be adjacent: offsets are `kept(o) + red(r)`.
4. The dim with the smallest stride decides the kernel: reduced -> ReduceInner, kept ->
   ReduceOuter (see kernels/cuda/reduce.cuh). The reduce type (`full`, `last`, `higher`, `any`)
   names the case for people and tests.
5. Launch shape from the SM count (kernels/policy.py), split across blocks only when the outputs
   alone cannot keep the GPU's memory busy.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Sequence, Tuple

from numpy.exceptions import AxisError

from . import policy

#: 32-bit index math while every index and offset stays below this (headroom for the loop
#: counters that run a few steps past the end before their bound check).
INDEX32_LIMIT = 2**31 - 2**24


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


@dataclass(frozen=True)
class Dim:
    """One (merged) dim: its size and its strides, in elements, in the input and the output."""

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


def _stride_key(d: Dim) -> float:
    """Sort key, outermost first: larger strides first, broadcast (stride 0) dims outermost of all."""
    return -(abs(d.in_stride) or math.inf)


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _pow2_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class ReduceConfig:
    """A planned launch. `kept`/`red` are index-calculator dims (outermost first); `inner` is the
    innermost run: the reduced dim walked with vector loads (inner kernel) or the kept dim whose
    neighbouring outputs share loads (outer kernel)."""

    reduce_type: str  # "full" | "last" | "higher" | "any"
    kernel: str  # "inner" | "outer"
    kept: Tuple[Dim, ...]
    red: Tuple[Dim, ...]
    inner: Dim
    in_offset: int  # elements added to the input pointer (flipped reduced dims)
    num_out: int
    num_red: int
    index_bits: int
    vec: int  # elements per thread access along `inner` (the outer kernel's columns per thread)
    ny: int  # register-tile rows: loads in flight per thread
    lanes: int  # inner: threads sharing one output; outer: threads side by side (BX)
    block: int
    grid: Tuple[int, int]
    num_splits: int
    segs_per_split: int = 1  # inner kernel split: whole segments per block
    chunks: int = 1  # inner kernel split: chunks per segment
    chunk_len: int = 0
    rows_per_split: int = 0  # outer kernel split
    col_tiles: int = 1  # outer kernel: tiles of lanes * vec columns
    num_tiles: int = 0
    vec_in: bool = False  # outer kernel: 16-byte loads allowed (alignment checked here)
    vec_out: bool = False  # outer kernel: vector stores allowed
    flat_runs: bool = False  # inner kernel: the runs of an output walked as one sequence of vectors
    words: bool = False  # a 1-byte input read as uint32 words (every size, stride and offset in words)

    @property
    def num_seg(self) -> int:
        return math.prod(d.size for d in self.red) if self.kernel == "inner" else 1

    @property
    def red_calc(self) -> Tuple[Dim, ...]:
        """The dims of the kernel's reduced-index calculator: the segments, and with flat runs the
        vectors of a run as one more, innermost dim (flat index = segment x vectors + vector)."""
        if self.flat_runs:
            return self.red + (Dim(self.inner.size // self.vec, self.vec),)
        return self.red

    @property
    def partial_count(self) -> int:
        """Accumulators in the split scratch buffer (0: no split)."""
        return self.num_splits * self.num_out if self.num_splits > 1 else 0


def plan(
    shape: Sequence[int],
    strides: Sequence[int],
    axes: Sequence[int],
    out_strides: Sequence[int],
    itemsize: int,
    out_itemsize: int,
    sm_count: int,
    in_misalign: int = 0,
    out_align: int = 256,
    tuning=policy,
    blocks_per_sm: int = 0,
    pack_words: bool = False,
) -> ReduceConfig:
    """Plan a reduction of a non-empty input with at least one output.

    strides/out_strides are in elements; out_strides lists the output stride of each kept axis in
    order. in_misalign is the input address mod 16; out_align the largest power of two (<= 256)
    dividing the output address. `tuning` holds the constants of kernels/policy.py (tests pass
    smaller ones to reach splits and tails with small shapes). `blocks_per_sm` is the compiled
    kernel's measured occupancy, when known (0: the policy's estimate). `pack_words`: the reduction
    of a 1-byte input may read it as uint32 words of four bytes (kps.packs_words says when);
    the plan says whether it does (`words`), in word units throughout.
    """
    axes = set(axes)
    kept, red = [], []
    in_offset = 0
    out_iter = iter(out_strides)
    for i, (n, s) in enumerate(zip(shape, strides)):
        if i in axes:
            if n == 1:
                continue
            if s < 0:
                in_offset += (n - 1) * s
                s = -s
            red.append(Dim(n, s))
        else:
            o = next(out_iter)
            if n != 1:
                kept.append(Dim(n, s, o))
    num_out = math.prod(d.size for d in kept)
    num_red = math.prod(d.size for d in red)
    kept = merge(sorted(kept, key=_stride_key))
    red = merge(sorted(red, key=_stride_key)) or (Dim(1, 1),)

    red_inner = red[-1].in_stride or math.inf
    kept_inner = (abs(kept[-1].in_stride) or math.inf) if kept else math.inf
    use_inner = not kept or red_inner < kept_inner or red_inner == kept_inner == math.inf
    words = pack_words and itemsize == 1 and use_inner and _packs_words(kept, red, in_offset, in_misalign)
    if words:  # a lane element is 4 bytes of the innermost reduced run: 4x fewer, 4x wider
        w_kept = tuple(Dim(d.size, d.in_stride // 4, d.out_stride) for d in kept)
        w_red = tuple(Dim(d.size, d.in_stride // 4) for d in red[:-1]) + (Dim(red[-1].size // 4, 1),)
        # a run of one word beside a kept stride of one word would tie: such plans stay in bytes
        words = not w_kept or 1 < (abs(w_kept[-1].in_stride) or math.inf)
        if words:
            kept, red = w_kept, w_red
            in_offset, num_red, itemsize = in_offset // 4, num_red // 4, 4

    extent = abs(in_offset) + sum((d.size - 1) * abs(d.in_stride) for d in kept + red)
    out_extent = sum((d.size - 1) * abs(d.out_stride) for d in kept)
    target = sm_count * (blocks_per_sm or tuning.BLOCKS_PER_SM)  # resident blocks: one full wave
    split_target = sm_count * min(tuning.SPLIT_BLOCKS_PER_SM, blocks_per_sm or tuning.BLOCKS_PER_SM)
    block = tuning.BLOCK_THREADS
    common = dict(in_offset=in_offset, num_out=num_out, num_red=num_red, block=block)

    if use_inner:
        inner, segs = red[-1], red[:-1]
        vec = tuning.LOAD_BYTES // itemsize if inner.in_stride == 1 and inner.size > 1 else 1
        ny = _tile_rows(tuning, vec)
        num_seg = math.prod(d.size for d in segs)
        vectors = _ceil(inner.size, vec)

        def group(walk):  # -> (lanes, row blocks) for an output group walking `walk` vectors per pass
            lanes = min(tuning.WARP_SIZE, _pow2_at_least(_ceil(walk, ny)))
            row_blocks = _ceil(num_out, block // lanes)
            # A block per output when an output fills a step of the whole block, and either its
            # run does or warps per output would leave the GPU short of blocks (policy.py).
            if (lanes == tuning.WARP_SIZE and vectors * num_seg >= block * ny
                    and (vectors >= block * ny or row_blocks < target)):
                lanes, row_blocks = block, num_out
            return lanes, row_blocks

        # Short aligned runs are walked as one flat sequence of vectors (see FLAT_RUN_MAX_STEPS).
        flat = (vec > 1 and num_seg > 1 and inner.size % vec == 0
                and _aligned(in_misalign + in_offset * itemsize, [d.in_stride for d in kept + segs], itemsize,
                             tuning.LOAD_BYTES))
        lanes, row_blocks = group(vectors * num_seg if flat else vectors)
        if flat and vectors >= tuning.FLAT_RUN_MAX_STEPS * lanes * ny:
            flat = False
            lanes, row_blocks = group(vectors)
        step = lanes * ny * vec  # elements one step of the group covers
        split = dict(segs_per_split=1, chunks=1, chunk_len=inner.size)
        num_splits = 1
        steps_per_seg = _ceil(inner.size, step)
        steps = _ceil(vectors * num_seg, lanes * ny) if flat else steps_per_seg * num_seg
        if (row_blocks < split_target and row_blocks <= tuning.MAX_GRID_X
                and steps >= tuning.INNER_SPLIT_MIN_STEPS):
            # flat runs split by whole runs only
            chunk_max = 1 if flat else max(1, steps_per_seg // tuning.MIN_SPLIT_STEPS)

            def realize(want):  # -> (splits, segments per split, chunks, chunk length)
                if want <= num_seg or chunk_max == 1:
                    per = _ceil(num_seg, want)
                    return _ceil(num_seg, per), per, 1, inner.size
                chunk_len = _ceil(_ceil(inner.size, min(want // num_seg, chunk_max)), step) * step
                chunks = _ceil(inner.size, chunk_len)
                return num_seg * chunks, 1, chunks, chunk_len

            max_splits = min(num_seg * chunk_max, tuning.MAX_GRID_Y)
            num_splits = _choose_splits(row_blocks, split_target, max_splits, lambda w: realize(w)[0])
            _, per, chunks, chunk_len = realize(num_splits)
            split.update(segs_per_split=per, chunks=chunks, chunk_len=chunk_len)
            if num_splits == 1:
                split = dict(segs_per_split=1, chunks=1, chunk_len=inner.size)
        index_bits = _index_bits(extent, out_extent, num_out, num_red, num_splits * num_out)
        reduce_type = "full" if not kept else ("last" if not segs else "any")
        return ReduceConfig(
            reduce_type=reduce_type, kernel="inner", kept=kept, red=segs, inner=inner,
            index_bits=index_bits, vec=vec, ny=ny, lanes=lanes,
            grid=(min(row_blocks, tuning.MAX_GRID_X), num_splits), num_splits=num_splits,
            flat_runs=flat, words=words, **split, **common,
        )

    inner, outer = kept[-1], kept[:-1]
    vec = min(tuning.LOAD_BYTES // itemsize, tuning.MAX_COL_VEC, _pow2_at_most(inner.size))
    ny = _tile_rows(tuning, vec)
    in_base = in_misalign + in_offset * itemsize
    vec_in = inner.in_stride == 1 and _aligned(in_base, [d.in_stride for d in outer + red], itemsize, vec * itemsize)
    vec_out = inner.out_stride == 1 and _aligned(out_align, [d.out_stride for d in outer], out_itemsize,
                                                 vec * out_itemsize)
    bx = min(tuning.MAX_COL_THREADS, _pow2_at_least(_ceil(inner.size, vec)))
    by = block // bx
    col_tiles = _ceil(inner.size, bx * vec)
    num_tiles = math.prod(d.size for d in outer) * col_tiles
    step = by * ny
    rows_per_split, num_splits = num_red, 1
    if num_tiles < split_target and num_tiles <= tuning.MAX_GRID_X:
        max_splits = min(max(1, num_red // (tuning.MIN_SPLIT_STEPS * step)), tuning.MAX_GRID_Y)

        def rows_for(want):
            return _ceil(_ceil(num_red, want), step) * step

        num_splits = _choose_splits(num_tiles, split_target, max_splits, lambda w: _ceil(num_red, rows_for(w)))
        rows_per_split = rows_for(num_splits)
        num_splits = _ceil(num_red, rows_per_split)
        if num_splits == 1:
            rows_per_split = num_red
    index_bits = _index_bits(extent, out_extent, num_out, num_red, num_splits * num_out)
    reduce_type = "higher" if len(red) == 1 else "any"
    return ReduceConfig(
        reduce_type=reduce_type, kernel="outer", kept=outer, red=red, inner=inner,
        index_bits=index_bits, vec=vec, ny=ny, lanes=bx,
        grid=(min(num_tiles, tuning.MAX_GRID_X), num_splits), num_splits=num_splits,
        rows_per_split=rows_per_split, col_tiles=col_tiles, num_tiles=num_tiles,
        vec_in=vec_in, vec_out=vec_out, **common,
    )


def _aligned(base: int, strides, itemsize: int, nbytes: int) -> bool:
    """Whether every address `base + sum(i * stride * itemsize)` is a multiple of `nbytes` (strides in
    elements; `base` in bytes, or the alignment known of it)."""
    return base % nbytes == 0 and all(s * itemsize % nbytes == 0 for s in strides)


def _packs_words(kept, red, in_offset: int, in_misalign: int) -> bool:
    """Whether a 1-byte input reads as aligned uint32 words, each inside the innermost reduced run
    (the offset too becomes words, so it must be whole words itself)."""
    return (red[-1].in_stride == 1 and red[-1].size % 4 == 0 and in_offset % 4 == 0
            and _aligned(in_misalign, [d.in_stride for d in kept + red[:-1]], 1, 4))


def _choose_splits(units: int, slots: int, max_splits: int, realize) -> int:
    """Blocks per unit of work (an output group or a column tile) when `units` alone cannot fill
    the `slots` (SMs x resident blocks). `realize(s)` is the split count a request for `s` turns
    into once rounded to whole steps. Picks the count whose grid best fills the waves it occupies
    (a grid of 1.1 waves runs as long as 2 full ones), the fewest splits on a tie, looking no
    further than about two waves."""
    best, best_fill = 1, 0.0
    for s in range(1, min(max_splits, _ceil(2 * slots, units)) + 1):
        real = realize(s)
        blocks = real * units
        fill = blocks / (_ceil(blocks, slots) * slots)
        if fill > best_fill + 1e-9:
            best, best_fill = real, fill
    return best


def _tile_rows(tuning, vec: int) -> int:
    """Loads in flight per thread for a vector width."""
    return max(1, min(tuning.MAX_TILE_ROWS, tuning.MAX_TILE_ELEMENTS // vec))


def _index_bits(*sizes: int) -> int:
    return 32 if max(sizes) < INDEX32_LIMIT else 64


def alignment(address: int, cap: int = 256) -> int:
    """Largest power of two (<= cap) dividing an address."""
    return min(cap, address & -address) if address else cap


def result_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> Tuple[int, ...]:
    axes = set(axes)
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)

