"""The planner: a reduction's shape, strides and axes -> which kernel, with what launch shape.

Pure Python (no CuPy), so every planning rule is unit-tested on a machine without a GPU.

Steps, as in Paddle's ReduceConfig:
1. Normalise axes (NumPy's rules and errors).
2. Drop size-1 dims; flip reduced dims with negative strides (summation order is free, so the
   pointer moves to the lowest address instead of copying). A reduction that needs each element's
   index (argmax) gives its reduced dims a second stride, the index's: the element's place in the
   C-order flattening of the reduced axes, whatever order the planner walks them in.
3. Sort the kept dims and the reduced dims each by stride, outermost first, and merge neighbours
   that are contiguous with each other (in the input, and for kept dims in the output too). Kept
   and reduced dims never need to be adjacent: offsets are `kept(o) + red(r)`.
4. The dim with the smallest stride decides the kernel: reduced -> ReduceInner, kept ->
   ReduceOuter (see kernels/cuda/reduce.cuh), unless its runs are short, odd or misaligned and
   the innermost dims are contiguous: then ReduceStaged, which reads them through shared memory.
   The reduce type (`full`, `last`, `higher`, `any`) names the case for people and tests.
5. Launch shape from the SM count (kernels/policy.py), split across blocks only when the outputs
   alone cannot keep the GPU's memory busy.
"""
from __future__ import annotations

import math
import operator
import functools
from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence, Tuple

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
    """One (merged) dim: its size and its strides, in elements, in the input and the output (for a
    reduced dim, the output stride is the index stride: see `plan`'s `index_strides`)."""

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


def _fills_block_steps(vectors: int, step: int, blocks_per_sm: int, tuning) -> bool:
    """Whether a run of `vectors` fills the steps of a whole block (`step` vectors each) closely
    enough to take one: the share of its steps' loads that its last, partial step leaves idle is at
    most BLOCK_ROW_IDLE_PER_BLOCK for every block resident on an SM (`blocks_per_sm`, the compiled
    kernel's; 0: not compiled yet, INNER_MIN_BLOCKS)."""
    idle = 1 - vectors / (_ceil(vectors, step) * step)
    return idle <= (blocks_per_sm or tuning.INNER_MIN_BLOCKS) * tuning.BLOCK_ROW_IDLE_PER_BLOCK


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Stage:
    """ReduceStaged's span: the innermost dims of the input, contiguous in memory, staged in shared
    memory one span at a time. The span's outermost dim (`rows_total` long, `row_stride` elements
    apart) is cut into chunks of `rows` rows where it does not fit whole; the chunk index is then
    the innermost dim of the tile calculator (`chunk_kept`) or of the stage calculator. Slots are a
    span's kept elements (the tile's outputs), folds its reduced ones."""

    slots: Tuple[Dim, ...]  # kept dims of a span: size, stride in the span, output stride
    folds: Tuple[Dim, ...]  # reduced dims of a span: size, stride in the span
    rows: int
    rows_total: int
    row_stride: int
    chunk_kept: bool
    slots_per_thread: int  # accumulators per thread (SLOTS); 0: direct (each span holds whole reductions)
    lanes_adjacent: bool  # the threads folding one slot are neighbours (rows) or BX apart (columns)
    vectors: int  # 16-byte loads per thread per span
    num_tiles: int  # output tiles: the tile calculator's size
    num_stages: int  # spans per output tile: the stage calculator's size
    stages_per_split: int
    word_folds: bool = False  # a 1-byte logical reduction folding its one contiguous reduced run as words
    word_columns: bool = False  # a 1-byte logical reduction folding odd kept columns as words (slots: word residues)
    byte_rows: int = 0  # a 1-byte logical reduction of rows this many bytes, 16 a thread (16-byte aligned spans)

    @property
    def num_slots(self) -> int:
        return math.prod(d.size for d in self.slots)

    @property
    def num_folds(self) -> int:
        return math.prod(d.size for d in self.folds)

    @property
    def row_chunks(self) -> int:
        return _ceil(self.rows_total, self.rows)

    @property
    def direct(self) -> bool:
        return self.slots_per_thread == 0

    @property
    def slots_per_row(self) -> int:
        """Slots per row of the span's outermost dim, where it is kept (else 0)."""
        return self.num_slots // self.rows if self.chunk_kept else 0

    @property
    def folds_per_row(self) -> int:
        """Folds per row of the span's outermost dim, where it is reduced (else 0)."""
        return 0 if self.chunk_kept else self.num_folds // self.rows

    def chunk_rows(self, chunk: int) -> int:
        """Rows in chunk `chunk` of the span's outermost dim (the last one may be short)."""
        return min(self.rows, self.rows_total - chunk * self.rows)


@dataclass(frozen=True)
class ReduceConfig:
    """A planned launch. `kept`/`red` are index-calculator dims (outermost first); `inner` is the
    innermost run: the reduced dim walked with vector loads (inner kernel) or the kept dim whose
    neighbouring outputs share loads (outer kernel)."""

    reduce_type: str  # "full" | "last" | "higher" | "any"
    kernel: str  # "inner" | "outer" | "staged"
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
    word_columns: bool = False  # the same, four kept columns a word, in and out (kps.word_columns)
    shifted_words: int = 0  # outer kernel, 1-byte kept columns off the word grid read four a word: their bytes
    stage: Optional[Stage] = None  # staged kernel: `kept` holds the output tiles, `red` the stages
    index_offset: int = 0  # with index strides: the index of the element at in_offset (flipped dims)
    min_blocks: int = 0  # inner and outer kernels: resident blocks per SM its registers must allow (0: no bound)
    shared_lanes: bool = False  # inner kernel: lanes share the chunks of inputs off the first one's grid
    input_shift: int = 0  # with shared_lanes: the bytes every input off the grid lies past it (0: read at run time)
    split_group: int = 0  # outer and staged kernels' splits: splits per group of the combine (kps::GroupOfSplit)

    @property
    def num_seg(self) -> int:
        return math.prod(d.size for d in self.red) if self.kernel == "inner" else 1

    @property
    def red_calc(self) -> Tuple[Dim, ...]:
        """The dims of the kernel's reduced-index calculator: the segments, and with flat runs the
        vectors of a run as one more, innermost dim (flat index = segment x vectors + vector)."""
        if self.flat_runs:
            return self.red + (Dim(self.inner.size // self.vec, self.vec, self.vec * self.inner.out_stride),)
        return self.red

    @property
    def bounded(self) -> bool:
        """A launch bound on a state's tile (ReduceOuter for a heavy state, ReduceInner for any):
        the launcher checks what the bound spills (config.lighter)."""
        return self.kernel in ("inner", "outer") and self.min_blocks > 0

    @property
    def counters(self) -> int:
        """Last-block counters a split launch takes: one per block column, and one per group of
        splits in each where the combine has two levels (0: no split)."""
        if self.num_splits == 1:
            return 0
        groups = _ceil(self.num_splits, self.split_group or self.num_splits)
        return self.grid[0] * (1 + groups if groups > 1 else 1)

    @property
    def partial_count(self) -> int:
        """Accumulators in the split scratch buffer (0: no split)."""
        if self.num_splits == 1:
            return 0
        if self.stage is not None:  # every slot of every tile, the last tile's unused ones too
            return self.num_splits * self.stage.num_tiles * self.stage.num_slots
        return self.num_splits * self.num_out


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
    pack_word_columns: bool = False,
    acc_itemsize: int = 4,
    index_strides: bool = False,
    vector_loads: bool = True,
    inputs: int = 1,
    inputs_off_grid: bool = False,
    inputs_shift: int = 0,
    state_acc: bool = False,
    heavy_state: bool = False,
    tile_elements: int = 0,
    state_min_blocks: int = 0,
) -> ReduceConfig:
    """Plan a reduction of a non-empty input with at least one output.

    strides/out_strides are in elements; out_strides lists the output stride of each kept axis in
    order. in_misalign is the input address mod 16; out_align the largest power of two (<= 256)
    dividing the output address. `tuning` holds the constants of kernels/policy.py (tests pass
    smaller ones to reach splits and tails with small shapes). `blocks_per_sm` is the compiled
    kernel's measured occupancy, when known (0: the policy's estimate). `pack_words`: the reduction
    of a 1-byte input may read it as uint32 words of four bytes (kps.packs_words says when);
    the plan says whether it does (`words`), in word units throughout. `pack_word_columns`: where the
    innermost dim is kept instead, its columns may be read and written four a word (`word_columns`:
    the reduction's bool results written as bytes of words, kps.word_columns). `acc_itemsize`: bytes of one
    accumulator (a state of several fields is wider), which bounds what shared memory holds.
    `index_strides`: the kernels tell each element's index in the reduced range (the C-order
    flattening of the reduced axes) to the reduction; reduced dims then merge only where their
    indices run on as their addresses do. `vector_loads=False` reads element by element (no 16-byte
    loads, no words, no staging): a transform of several inputs reads them so where their itemsizes
    differ. `inputs`: the arrays a transform reads; several are never staged (ReduceStaged stages
    one). `inputs_off_grid`: some input lies off the first one's 16-byte grid (x[1:] beside x[:-1]):
    ReduceInner's groups of a warp or more then read tiles of INPUTS_TILE_ROWS rows. `inputs_shift`:
    where every input off the grid lies the same number of bytes (1-15) past it, that number, which
    the kernel then takes as a constant (4 for float32 x[1:] beside x[:-1]: a row is three words of
    its own chunk and one shuffled from the next lane's); 0 where they differ.
    `state_acc`: the accumulator is a struct of several fields (a state op), whose combine and
    shuffles cost several times a scalar's. `heavy_state`: a state op whose merge of one element
    is long (kps.ReduceOp's `heavy`): ReduceOuter is bounded to keep at least
    HEAVY_COL_MIN_BLOCKS blocks resident, and its splits fill waves of max(blocks_per_sm,
    HEAVY_COL_MIN_BLOCKS). `tile_elements`: ReduceOuter's aligned tile and ReduceInner's take rows
    only up to this many elements a thread (rows x vector width, one row at least; 0:
    MAX_TILE_ELEMENTS; columns off the 16-byte grid keep their element-wise tile): the launcher
    halves a bounded state tile whose launch bound spills (config.lighter). `state_min_blocks`:
    ReduceInner's launch bound for a state (0: INNER_MIN_BLOCKS; the launcher lowers it where that
    spills).
    """
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
            t = index_stride if index_strides else 0
            if s < 0:
                in_offset += (n - 1) * s
                index_offset += (n - 1) * t
                s, t = -s, -t
            red.append(Dim(n, s, t))
        else:
            o = next(out_iter)
            if n != 1:
                kept.append(Dim(n, s, o))
    num_out = math.prod(d.size for d in kept)
    num_red = math.prod(d.size for d in red)
    kept = merge(sorted(kept, key=_stride_key))
    red = merge(sorted(red, key=_stride_key)) or (Dim(1, 1),)

    use_inner = _innermost_reduced(kept, red)
    words = (pack_words and vector_loads and itemsize == 1 and use_inner
             and _packs_words(kept, red, in_offset, in_misalign)
             and not _byte_rows_first(kept, red, in_misalign + in_offset, tuning))
    if words:  # a lane element is 4 bytes of the innermost reduced run: 4x fewer, 4x wider
        w_kept = tuple(Dim(d.size, d.in_stride // 4, d.out_stride) for d in kept)
        w_red = tuple(Dim(d.size, d.in_stride // 4) for d in red[:-1]) + (Dim(red[-1].size // 4, 1),)
        # a run of one word beside a kept stride of one word would tie: such plans stay in bytes
        words = not w_kept or 1 < (abs(w_kept[-1].in_stride) or math.inf)
        if words:
            kept, red = w_kept, w_red
            in_offset, num_red, itemsize = in_offset // 4, num_red // 4, 4
    word_columns = (pack_word_columns and vector_loads and itemsize == 1 and out_itemsize == 1 and not use_inner
                    and _packs_word_columns(kept, red, in_offset, in_misalign, out_align))
    if word_columns:  # an element is 4 adjacent columns, in and out: 4x fewer outputs, 4x wider
        kept = tuple(Dim(d.size, d.in_stride // 4, d.out_stride // 4) for d in kept[:-1]) + (Dim(kept[-1].size // 4, 1, 1),)
        kept = tuple(d for d in kept if d.size > 1)  # one word of columns: a reduction of whole words
        red = tuple(Dim(d.size, d.in_stride // 4, d.out_stride) if d.size > 1 else d for d in red)
        in_offset, num_out, itemsize, out_itemsize, acc_itemsize = in_offset // 4, num_out // 4, 4, 4, 4
        use_inner = _innermost_reduced(kept, red)
    # (or, off the word grid, words of four columns from the aligned words around them: ReduceOuter)
    shifted = (pack_word_columns and vector_loads and itemsize == 1 and out_itemsize == 1 and not use_inner
               and not word_columns and _shifts_word_columns(kept, out_align, tuning))

    extent = abs(in_offset) + sum((d.size - 1) * abs(d.in_stride) for d in kept + red)
    out_extent = sum((d.size - 1) * abs(d.out_stride) for d in kept)
    target = sm_count * (blocks_per_sm or tuning.BLOCKS_PER_SM)  # resident blocks: one full wave
    split_target = sm_count * min(tuning.SPLIT_BLOCKS_PER_SM, blocks_per_sm or tuning.BLOCKS_PER_SM)
    block = tuning.BLOCK_THREADS
    common = dict(in_offset=in_offset, num_out=num_out, num_red=num_red, block=block, index_offset=index_offset)

    in_base = in_misalign + in_offset * itemsize
    word_folds = pack_words and itemsize == 1 and use_inner  # (words=True has made itemsize 4)
    # (word_columns=True has made itemsize 4: these are the odd columns it leaves in bytes)
    odd_word_columns = pack_word_columns and itemsize == 1 and out_itemsize == 1 and tuning.STAGE_WORD_COLUMNS
    if (not shifted and vector_loads and inputs == 1
            and _wants_stage(kept, red, use_inner, itemsize, in_base, tuning, word_folds, state_acc)):
        # a state's wide tiles read faster in ReduceOuter than staged over two-level splits (policy.py)
        two_levels = use_inner or not state_acc
        staged = _plan_staged(kept, red, itemsize, target, split_target, sm_count, tuning, tuning.STAGE_VECTORS,
                              word_folds, odd_word_columns, in_base, two_levels, state_acc)
        if staged is not None and staged[0].direct and tuning.STAGE_VECTORS_DIRECT != tuning.STAGE_VECTORS:
            staged = _plan_staged(kept, red, itemsize, target, split_target, sm_count, tuning,
                                  tuning.STAGE_VECTORS_DIRECT, word_folds, odd_word_columns, in_base, two_levels,
                                  state_acc)
        if staged is not None and not staged[0].word_folds and use_inner and \
                red[-1].size * itemsize > tuning.STAGE_MAX_RUN_BYTES:
            staged = None  # a run only word folds stage this long (its span folded it in bytes)
        if staged is not None:
            stage, grid, tiles, stages, bx = staged
            partials = stage.num_tiles * stage.num_slots * grid[1] if grid[1] > 1 else 0
            side_by_side = stage.direct and bx == block and len(stage.folds) == 1 and not stage.word_folds
            ny = _direct_rows(stage, bx, acc_itemsize, tuning) if side_by_side else tuning.MAX_TILE_ROWS
            per_round = 0 if stage.direct else (block // bx) * (16 // stage.slots_per_thread)  # kRows there
            return ReduceConfig(
                reduce_type=_reduce_type(kept, red, use_inner), kernel="staged", kept=tiles, red=stages,
                inner=red[-1] if use_inner else kept[-1],
                index_bits=_index_bits(extent, out_extent, num_out, num_red, partials),
                vec=tuning.LOAD_BYTES // itemsize, ny=ny, lanes=bx,
                grid=grid, num_splits=grid[1], words=words, word_columns=word_columns, stage=stage,
                split_group=_split_group(grid[1], per_round, grid[0], tuning), **common,
            )

    if use_inner:
        inner, segs = red[-1], red[:-1]
        vec = tuning.LOAD_BYTES // itemsize if vector_loads and inner.in_stride == 1 and inner.size > 1 else 1
        ny = _tile_rows(tuning, vec, elements=tile_elements)
        num_seg = math.prod(d.size for d in segs)
        vectors = _ceil(inner.size, vec)

        def group(walk, ny=ny):  # -> (lanes, row blocks) for an output group walking `walk` vectors per pass
            lanes = min(tuning.WARP_SIZE, _pow2_at_least(_ceil(walk, ny)))
            row_blocks = _ceil(num_out, block // lanes)
            # A block per output when an output fills a step of the whole block (a state: several
            # steps), and either its run fills the block's steps or warps per output would leave
            # the GPU short of blocks (policy.py).
            block_walk = block * ny * (tuning.STATE_BLOCK_ROW_STEPS if state_acc else 1)
            if (lanes == tuning.WARP_SIZE and vectors * num_seg >= block_walk
                    and (vectors >= block_walk and _fills_block_steps(vectors, block * ny, blocks_per_sm, tuning)
                         or row_blocks < target)):
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
        shared_lanes = False
        if inputs_off_grid and vec > 1 and not flat:
            # Groups of a warp or more share the chunks of inputs off the first one's grid between
            # lanes, holding every input's loads of a tile at once: fewer rows a tile, more blocks.
            rows = min(ny, tuning.INPUTS_TILE_ROWS)
            shared = group(vectors, rows)
            if shared[0] >= tuning.WARP_SIZE:
                shared_lanes, ny, (lanes, row_blocks) = True, rows, shared
                split_target = sm_count * min(tuning.INPUTS_SPLIT_BLOCKS_PER_SM, blocks_per_sm or tuning.BLOCKS_PER_SM)
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
            num_splits = _choose_splits(row_blocks, split_target, max_splits, lambda w: realize(w)[0],
                                        tuning.SPLIT_FILL_SLACK)
            _, per, chunks, chunk_len = realize(num_splits)
            split.update(segs_per_split=per, chunks=chunks, chunk_len=chunk_len)
            if num_splits == 1:
                split = dict(segs_per_split=1, chunks=1, chunk_len=inner.size)
        index_bits = _index_bits(extent, out_extent, num_out, num_red, num_splits * num_out)
        reduce_type = _reduce_type(kept, red, use_inner)
        return ReduceConfig(
            reduce_type=reduce_type, kernel="inner", kept=kept, red=segs, inner=inner,
            index_bits=index_bits, vec=vec, ny=ny, lanes=lanes,
            grid=(min(row_blocks, tuning.MAX_GRID_X), num_splits), num_splits=num_splits,
            flat_runs=flat, words=words, word_columns=word_columns, shared_lanes=shared_lanes,
            input_shift=inputs_shift if shared_lanes else 0,
            min_blocks=(state_min_blocks or tuning.INNER_MIN_BLOCKS) if state_acc else 0, **split, **common,
        )

    if shifted:  # a word of four columns (bytes from the aligned words around them), written as a word
        width = kept[-1].size
        kept = tuple(Dim(d.size, d.in_stride, d.out_stride // 4) for d in kept[:-1]) + (Dim(_ceil(width, 4), 4, 1),)
        num_out, out_itemsize, acc_itemsize = num_out // width * _ceil(width, 4), 4, 4
        common["num_out"] = num_out
    inner, outer = kept[-1], kept[:-1]
    vec = min(tuning.LOAD_BYTES // itemsize, tuning.MAX_COL_VEC, _pow2_at_most(inner.size),
              _pow2_at_most(tuning.MAX_COL_SHARED_BYTES // (tuning.BLOCK_THREADS * acc_itemsize)),
              _pow2_at_most(tuning.MAX_COL_ACC_BYTES // acc_itemsize))
    # Tile rows: no more than the reduced rows need (H100, same run, kernel alone: (N, 1) over axis 1
    # float16 1608 -> 2771 GB/s, bool 669 -> 1935; (2, N) over axis 0 float16 2005 -> 2977, bool
    # 878 -> 2089): the unused rows of a 4-row tile cost registers (bool 89 -> 40 a thread), so blocks.
    # A state's columns: as many rows as keep STATE_COL_TILE_BYTES in flight (policy.py).
    rows = max(tuning.MAX_TILE_ROWS, tuning.STATE_COL_TILE_BYTES // (vec * itemsize)) if state_acc else None
    ny = min(_tile_rows(tuning, vec, rows, tile_elements), _pow2_at_least(num_red))
    vec_in = vector_loads and inner.in_stride == 1 and _aligned(in_base, [d.in_stride for d in outer + red if d.size > 1], itemsize,
                                               vec * itemsize)  # a size-1 dim's stride is never stepped
    if shifted or (inner.in_stride == 1 and not vec_in):  # rows off the grid: a column per thread (policy.py)
        vec, ny, vec_in = 1, tuning.MISALIGNED_COL_TILE_ROWS, False
    vec_out = inner.out_stride == 1 and _aligned(out_align, [d.out_stride for d in outer], out_itemsize,
                                                 vec * out_itemsize)
    # (7 rows under a 2048-wide kept dim: one row of 256 threads walks all 7, where 8 rows of 32
    # would leave 25 of 32 idle)
    bx = _col_threads(_pow2_at_least(_ceil(inner.size, vec)), num_red, ny, tuning)
    by = block // bx
    col_tiles = _ceil(inner.size, bx * vec)
    num_tiles = math.prod(d.size for d in outer) * col_tiles
    step = by * ny
    rows_per_split, num_splits = num_red, 1
    # More tiles than resident blocks: split anyway where the last wave would run mostly empty.
    few_waves = target < num_tiles and _fill(num_tiles, target) < tuning.MIN_WAVE_FILL
    if heavy_state:  # its resident blocks hide the combine's work: splits fill whole waves of them
        split_target = sm_count * max(blocks_per_sm, tuning.HEAVY_COL_MIN_BLOCKS)
    if (num_tiles < split_target or few_waves) and num_tiles <= tuning.MAX_GRID_X:
        max_splits = min(max(1, num_red // (tuning.MIN_SPLIT_STEPS * step)), tuning.MAX_GRID_Y)

        def rows_for(want):
            return _ceil(_ceil(num_red, want), step) * step

        num_splits = _choose_splits(num_tiles, target if few_waves else split_target, max_splits,
                                    lambda w: _ceil(num_red, rows_for(w)), tuning.SPLIT_FILL_SLACK)
        rows_per_split = rows_for(num_splits)
        num_splits = _ceil(num_red, rows_per_split)
        if num_splits == 1:
            rows_per_split = num_red
    # a round of the combine: each row of threads' partial rows (kps::kPartialRows: one for a state,
    # else the tile's)
    split_group = _split_group(num_splits, by * (1 if state_acc else ny), min(num_tiles, tuning.MAX_GRID_X), tuning)
    index_bits = _index_bits(extent, out_extent, num_out, num_red, num_splits * num_out)
    reduce_type = _reduce_type(kept, red, use_inner)
    return ReduceConfig(
        reduce_type=reduce_type, kernel="outer", kept=outer, red=red, inner=inner,
        index_bits=index_bits, vec=vec, ny=ny, lanes=bx,
        grid=(min(num_tiles, tuning.MAX_GRID_X), num_splits), num_splits=num_splits,
        rows_per_split=rows_per_split, col_tiles=col_tiles, num_tiles=num_tiles,
        vec_in=vec_in, vec_out=vec_out, word_columns=word_columns, shifted_words=width if shifted else 0,
        min_blocks=tuning.HEAVY_COL_MIN_BLOCKS if heavy_state else 0, split_group=split_group, **common,
    )


def lighter(make: Callable[..., ReduceConfig], cfg: ReduceConfig, local_bytes: int,
            tuning=policy) -> Optional[Tuple[Callable[..., ReduceConfig], ReduceConfig]]:
    """The plan to try after `cfg`, a bounded state tile whose kernel takes `local_bytes` of local
    memory a thread (its stack and spills), and the planner that makes it; None where `cfg` stays.
    A state's rows bounded above INNER_SPILL_MIN_BLOCKS that spill at all: that bound. Then, over
    BOUNDED_MAX_LOCAL_BYTES: half the tile's elements; where the tile cannot shrink (one row, or
    columns off the 16-byte grid), a heavy state's columns planned as any other state's (whole
    tile, no bound), and None for rows (their bound stays). `make` plans as `plan` does from
    (blocks_per_sm, heavy_state=, tile_elements=, state_min_blocks=)."""
    if cfg.kernel == "inner" and local_bytes > 0 and cfg.min_blocks > tuning.INNER_SPILL_MIN_BLOCKS:
        fewer = functools.partial(make, state_min_blocks=tuning.INNER_SPILL_MIN_BLOCKS)
        return fewer, fewer(0)
    if local_bytes <= tuning.BOUNDED_MAX_LOCAL_BYTES:
        return None
    half = functools.partial(make, tile_elements=cfg.vec * cfg.ny // 2)
    smaller = half(0)
    if smaller.ny < cfg.ny:
        return half, smaller
    if cfg.kernel != "outer":
        return None
    plain = functools.partial(make, heavy_state=False, tile_elements=0)
    return plain, plain(0)


def _innermost_reduced(kept, red) -> bool:
    """Whether the dim with the smallest stride is reduced (ReduceInner's case)."""
    red_inner = red[-1].in_stride or math.inf
    kept_inner = (abs(kept[-1].in_stride) or math.inf) if kept else math.inf
    return not kept or red_inner < kept_inner or red_inner == kept_inner == math.inf


def _reduce_type(kept, red, use_inner: bool) -> str:
    if use_inner:
        return "full" if not kept else ("last" if len(red) == 1 else "any")
    return "higher" if len(red) == 1 else "any"


def _wants_stage(kept, red, use_inner: bool, itemsize: int, in_base: int, tuning, word_folds: bool,
                 state_acc: bool) -> bool:
    """Whether the innermost run is one the other kernels read badly: short (a reduced run of at
    most STAGE_MAX_RUN_BYTES, STAGE_WORD_MAX_RUN_BYTES where a 1-byte logical reduction folds it as
    words, or kept columns of at most STAGE_MAX_COLUMN_BYTES) and off the 16-byte grid (its length,
    or a stride or the start of the others), or a run of at most STAGE_ALIGNED_RUN_BYTES, or (not
    for a state, which ReduceOuter reads faster) aligned columns over too few rows for ReduceOuter's
    tile. Longer aligned runs are whole vectors, which ReduceInner and ReduceOuter read at full speed."""
    inner = red[-1] if use_inner else kept[-1]
    limit = tuning.STAGE_MAX_COLUMN_BYTES
    if use_inner:
        limit = tuning.STAGE_WORD_MAX_RUN_BYTES if word_folds else tuning.STAGE_MAX_RUN_BYTES
    if inner.in_stride != 1 or inner.size * itemsize > limit:
        return False
    others = [d.in_stride for d in kept + red if d.size > 1 and d is not inner]
    return (inner.size * itemsize <= tuning.STAGE_ALIGNED_RUN_BYTES
            or (not use_inner and not state_acc
                and _few_rows_for_columns(inner.size * itemsize, math.prod(d.size for d in red), tuning))
            or not _aligned(in_base, [inner.size] + others, itemsize, tuning.LOAD_BYTES))


def _col_threads(cols: int, num_red: int, ny: int, tuning) -> int:
    """ReduceOuter's threads side by side (BX) over `cols` vectors of columns (a power of two):
    MAX_COL_THREADS, wider where the `num_red` reduced rows are too few for every row of threads
    to walk COL_ROW_STEPS steps of `ny` rows, at most one a column and the block."""
    block = tuning.BLOCK_THREADS
    few_rows = block // _pow2_at_least(_ceil(num_red, ny * tuning.COL_ROW_STEPS))
    return min(cols, block, max(tuning.MAX_COL_THREADS, few_rows))


def _few_rows_for_columns(column_bytes: int, num_red: int, tuning) -> bool:
    """Whether kept columns of `column_bytes` (at most STAGE_FEW_ROW_COLUMN_BYTES, 16-byte
    aligned) have fewer reduced rows than one step of ReduceOuter's tile takes (its rows of
    threads, MAX_TILE_ROWS rows each): its block would leave rows of threads without a row
    (policy.py)."""
    ny = tuning.MAX_TILE_ROWS
    bx = _col_threads(_pow2_at_least(_ceil(column_bytes, tuning.LOAD_BYTES)), num_red, ny, tuning)
    return column_bytes <= tuning.STAGE_FEW_ROW_COLUMN_BYTES and num_red < tuning.BLOCK_THREADS // bx * ny


def _two_adic(n: int) -> int:
    """The largest power of two dividing n."""
    return n & -n


def _plan_staged(kept, red, itemsize: int, target: int, split_target: int, sm_count: int, tuning, vectors: int,
                 word_folds: bool, word_columns: bool, in_base: int, two_levels: bool, state_acc: bool):
    """ReduceStaged's span and grid, or None where the innermost dims are not contiguous or no span
    gives every thread at most STAGE_MAX_SLOTS outputs (STAGE_MAX_STATE_SLOTS for a state).
    `word_folds`: a 1-byte logical reduction, which folds a span's reduced elements as words where
    they are one contiguous run. `word_columns`: a 1-byte logical reduction with bool results, which
    folds the rows of W kept columns (W not a multiple of 4, one contiguous output row) as the words
    of the span: a word's four bytes belong to the same four columns every lcm(W, 4) / 4 words (its
    residue, the slot), so a thread folds a residue's words and the columns are read off the residues'
    bytes at the end (spans of whole 16-row multiples, so every span starts where the first does in
    its 16-byte vector). With
    `word_folds`, contiguous rows of at most STAGE_BYTE_ROWS_MAX bytes, each a whole reduction, whose
    spans all start on the 16-byte grid (`in_base`: the alignment known of the input's start) are
    `byte_rows`: a thread folds 16 of them from its 16-byte chunks (spans of 16-row multiples).
    `two_levels`: where the splits one level of the combine folds in the rounds allowed leave an
    SM without a block, as many as two levels fold in those rounds (else a narrower span).
    `state_acc`: the accumulator is a state of several fields: a slot takes more registers, and
    lanes cost more to combine.

    The span is the widest block of innermost dims that is contiguous in memory and fits
    BLOCK x `vectors` vectors, its outermost dim cut into chunks of rows where it does not
    fit whole. Its reduced elements are folded by lanes that read neighbouring words of shared
    memory: adjacent lanes along a reduced innermost run (as many as divide the run, for
    conflict-free banks, or a warp for runs of 32 and more; with word folds, neighbouring words are
    conflict-free, so as many as share the block among the span's slots), or adjacent threads
    across kept innermost columns."""
    dims = sorted([(d, True) for d in kept if d.size > 1] + [(d, False) for d in red if d.size > 1],
                  key=lambda e: _stride_key(e[0]))
    if not dims or dims[-1][0].in_stride != 1:
        return None
    vec = tuning.LOAD_BYTES // itemsize
    capacity = tuning.BLOCK_THREADS * vectors * vec - (vec - 1)  # a span may start mid-vector
    block = tuning.BLOCK_THREADS
    max_slots = tuning.STAGE_MAX_STATE_SLOTS if state_acc else tuning.STAGE_MAX_SLOTS
    widest, inner = len(dims) - 1, 1
    while widest > 0 and dims[widest][0].size * inner <= capacity and \
            dims[widest - 1][0].in_stride == dims[widest][0].size * inner:
        inner *= dims[widest][0].size
        widest -= 1
    lanes_adjacent = not dims[-1][1]
    for i in range(widest, len(dims)):  # the span's outermost dim, from the widest span inwards
        row_dim, row_kept = dims[i]
        inside = dims[i + 1:]
        inner = math.prod(d.size for d, _ in inside)
        slots_per_row = math.prod(d.size for d, k in inside if k)
        rows = min(row_dim.size, capacity // inner)
        # direct: every reduced dim lies whole in the span, so a tile is one span (policy.py)
        direct = lanes_adjacent and all(k for _, k in dims[:i]) and (row_kept or rows == row_dim.size)
        num_slots = slots_per_row * (rows if row_kept else 1)
        fold_run = math.prod(d.size for d, _ in inside) * (1 if row_kept else rows)  # a slot's folds
        byte_rows = _byte_rows(dims, i, direct, word_folds, in_base, tuning)
        words = (word_folds and lanes_adjacent and not any(k for _, k in inside)  # one contiguous fold run
                 and fold_run >= tuning.STAGE_WORD_MIN_RUN_BYTES and not byte_rows)
        word_cols = False
        if lanes_adjacent:
            run_bytes = (dims[-1][0].size if inside else rows) * itemsize
            # lanes on one run: as many as keep shared-memory reads within STAGE_ROW_BANK_WAYS-way bank
            # conflicts, more where a span has too few slots to occupy the block (in a direct span whose
            # slots fold one strided run each, or a state, as far as STAGE_DIRECT_RUN_FILL, policy.py)
            one_run = len(_span_dims(row_dim, row_kept, inside, kept=False)) <= 1
            share = tuning.STAGE_DIRECT_RUN_FILL if direct and (one_run or state_acc) else 1
            fill = _pow2_at_most(max(1, block // (num_slots * share)))
            by = min(tuning.WARP_SIZE, max(_two_adic(run_bytes) // (4 * tuning.STAGE_ROW_BANK_WAYS), fill, 1))
            if words:  # (wider than a warp only as the whole block, on a span of one slot)
                by = min(_pow2_at_most(max(1, block // num_slots)), _pow2_at_least(_ceil(fold_run, 4)))
                by = by if by <= tuning.WARP_SIZE or by == block else tuning.WARP_SIZE
            if byte_rows:  # a thread 16 rows, from the chunks that hold them: spans of 16-row multiples
                by = 1
                rows = min(rows, block * vectors // byte_rows * 16)
                rows = rows if rows == row_dim.size else rows - rows % 16
            if not direct:
                if row_kept:
                    rows = min(rows, block // by * max_slots // slots_per_row)
                elif slots_per_row > block // by * max_slots:
                    by = _pow2_at_most(block * max_slots // slots_per_row) if slots_per_row <= block * max_slots else 0
            if not rows or not by:
                continue
            bx = block // by
        else:
            if row_kept:
                rows = min(rows, block * max_slots // slots_per_row)
            if not rows or slots_per_row > block * max_slots:
                continue
            columns = inside[0][0] if len(inside) == 1 else None
            word_cols = (word_columns and i == 0 and not row_kept and columns is not None and columns.size % 4
                         and columns.out_stride == 1 and rows >= 16)
            if word_cols:
                period = math.lcm(columns.size, 4) // 4
                word_cols = period <= block * tuning.STAGE_WORD_COLUMN_RESIDUES
            if word_cols:
                rows -= rows % 16
            slots = period if word_cols else slots_per_row * (rows if row_kept else 1)
            # a thread per slot where they are more than half a warp and fit two rows of threads (policy.py)
            ragged = tuning.STAGE_RAGGED_COLUMNS and tuning.WARP_SIZE // 2 < slots <= block // 2
            bx = slots if ragged else min(block, _pow2_at_least(slots))
        if rows * inner < block * vec * tuning.STAGE_MIN_SPAN_VECTORS_PER_THREAD:
            continue  # too small a span (policy.py)
        num_slots = period if word_cols else slots_per_row * (rows if row_kept else 1)
        slots_per_thread = 0 if direct else _pow2_at_least(_ceil(num_slots, bx))
        chunk = Dim(_ceil(row_dim.size, rows), rows * row_dim.in_stride, rows * row_dim.out_stride)
        chunked = rows < row_dim.size
        tiles = [d for d, k in dims[:i] if k] + ([chunk] if chunked and row_kept else [])
        stages = [d for d, k in dims[:i] if not k] + ([chunk] if chunked and not row_kept else [])
        row = Dim(rows, row_dim.in_stride, row_dim.out_stride)  # reduced: the index stride
        num_tiles = math.prod(d.size for d in tiles)
        num_stages = math.prod(d.size for d in stages)
        splits = 1
        if num_tiles < split_target and num_tiles <= tuning.MAX_GRID_X and num_stages > 1:
            def realize(want):
                return _ceil(num_stages, _ceil(num_stages, want))

            # no more splits than the combine folds in a few round trips (policy.py): in one level
            # where that makes a block an SM, else in two
            per_trip = (block // bx) * 16 // slots_per_thread
            max_trips = tuning.STAGE_MAX_COMBINE_TRIPS if itemsize > 1 else tuning.STAGE_MAX_COMBINE_TRIPS_1_BYTE
            most = max_trips * per_trip
            if num_tiles * most < sm_count and two_levels:
                most = _splits_within(max_trips, per_trip, num_tiles, tuning)
            cap = min(num_stages, tuning.MAX_GRID_Y, max(
                tuning.STAGE_COMBINE_TRIPS * per_trip,
                min(most, _ceil(tuning.STAGE_MIN_BLOCKS_PER_SM * sm_count, num_tiles))))
            if cap < num_stages and num_tiles * cap < sm_count:
                continue  # too few blocks to keep the memory busy: a narrower span, or ReduceOuter
            splits = _choose_splits(num_tiles, split_target, cap, realize, tuning.SPLIT_FILL_SLACK)
        per_split = _ceil(num_stages, splits)
        splits = _ceil(num_stages, per_split)
        # loads per thread: as many as the span needs (a span may start mid-vector), so a small
        # span keeps no idle registers and shared memory
        span_vectors = _ceil(rows, 16) * inner if byte_rows else _ceil(rows * inner + vec - 1, vec)
        vectors = min(vectors, _pow2_at_least(_ceil(span_vectors, block)))
        if word_cols:  # slots: the residues (a word each); folds: a residue's words, the most a span holds
            slots, folds = (Dim(period, 1, 0),), (Dim(_ceil(rows * inner + 3, 4 * period) + 1, period),)
        else:
            slots = _span_dims(row, row_kept, inside, kept=True)
            folds = _span_dims(row, row_kept, inside, kept=False)
        stage = Stage(
            slots=slots, folds=folds,
            rows=rows, rows_total=row_dim.size, row_stride=row_dim.in_stride, chunk_kept=row_kept,
            slots_per_thread=slots_per_thread, lanes_adjacent=lanes_adjacent,
            vectors=vectors, num_tiles=num_tiles, num_stages=num_stages, stages_per_split=per_split,
            word_folds=words, word_columns=word_cols, byte_rows=byte_rows,
        )
        grid_x = num_tiles if splits > 1 else min(num_tiles, target, tuning.MAX_GRID_X)
        return stage, (grid_x, splits), tuple(tiles), tuple(stages), bx
    return None


def _span_dims(row: Dim, row_kept: bool, inside, kept: bool) -> Tuple[Dim, ...]:
    """A staged span's slot dims (`kept`) or fold dims: its row dim where it is of that kind, then
    the dims inside the span of that kind, size-1 dims left out, merged."""
    return merge([d for d in ([row] if row_kept == kept else []) + [d for d, k in inside if k == kept] if d.size > 1])


def _byte_row_bytes(run: Dim, rows: Dim, outer_strides, in_base: int, tuning) -> int:
    """The bytes of a 1-byte row FoldByteRows folds 16 a thread, else 0: a contiguous reduced `run`
    of 2 to STAGE_BYTE_ROWS_MAX bytes whose chunks meet in at most STAGE_BYTE_ROWS_MAX_BANK_WAYS-way
    bank conflicts, `rows` of them adjacent, every span of 16-row multiples on
    the 16-byte grid (`in_base`, the alignment known of the input's start, and the strides of the
    dims outside the rows)."""
    if run.in_stride != 1 or rows.in_stride != run.size or not 2 <= run.size <= tuning.STAGE_BYTE_ROWS_MAX:
        return 0
    if math.gcd(run.size, 8) > tuning.STAGE_BYTE_ROWS_MAX_BANK_WAYS:  # a thread's chunks run.size apart
        return 0
    return run.size if _aligned(in_base, outer_strides, 1, 16) else 0


def _byte_rows_first(kept, red, in_base: int, tuning) -> bool:
    """Whether rows of whole words that ReduceStaged could fold 16 a thread (`_byte_row_bytes`) stay
    in bytes for it, rather than read as words (STAGE_BYTE_ROWS_OVER_WORDS)."""
    return (tuning.STAGE_BYTE_ROWS_OVER_WORDS and len(red) == 1 and bool(kept)
            and _byte_row_bytes(red[-1], kept[-1], [d.in_stride for d in kept[:-1]], in_base, tuning) > 0)


def _byte_rows(dims, i: int, direct: bool, word_folds: bool, in_base: int, tuning) -> int:
    """`_byte_row_bytes` of a span whose outermost dim is `dims[i]`, where a 1-byte logical
    reduction (`word_folds`) keeps those rows, each a whole reduction (`direct`) of one run."""
    row_dim, row_kept = dims[i]
    inside = dims[i + 1:]
    if not (word_folds and direct and row_kept and len(inside) == 1) or inside[0][1]:
        return 0
    return _byte_row_bytes(inside[0][0], row_dim, [d.in_stride for d, _ in dims[:i]], in_base, tuning)


def _direct_rows(stage: Stage, bx: int, acc_itemsize: int, tuning) -> int:
    """Runs a thread folds side by side where it folds whole short runs alone (FoldSharedRows): the
    most, a power of two, that their lengths, their accumulators and the span's runs allow (policy.py).
    A thread whose group of runs passes the span's last folds that one again: at most
    STAGE_DIRECT_REFOLDS of the span's runs may be folded twice."""
    most = min(tuning.STAGE_DIRECT_ROWS, tuning.STAGE_DIRECT_ACC_BYTES // acc_itemsize,
               tuning.STAGE_DIRECT_FOLDS // stage.num_folds)
    ny = _pow2_at_most(max(1, most))
    slots = stage.num_slots
    while ny > 1:
        whole, rest = divmod(slots, bx * ny)
        groups = min(slots, bx) * whole + min(rest, bx)  # groups of ny runs the block's threads fold
        if groups * ny <= slots * (1 + tuning.STAGE_DIRECT_REFOLDS):
            break
        ny //= 2
    return ny


def _aligned(base: int, strides, itemsize: int, nbytes: int) -> bool:
    """Whether every address `base + sum(i * stride * itemsize)` is a multiple of `nbytes` (strides in
    elements; `base` in bytes, or the alignment known of it)."""
    return base % nbytes == 0 and all(s * itemsize % nbytes == 0 for s in strides)


def _packs_words(kept, red, in_offset: int, in_misalign: int) -> bool:
    """Whether a 1-byte input reads as aligned uint32 words, each inside the innermost reduced run
    (the offset too becomes words, so it must be whole words itself)."""
    return (red[-1].in_stride == 1 and red[-1].size % 4 == 0 and in_offset % 4 == 0
            and _aligned(in_misalign, [d.in_stride for d in kept + red[:-1]], 1, 4))


def _packs_word_columns(kept, red, in_offset: int, in_misalign: int, out_align: int) -> bool:
    """Whether a 1-byte input's innermost kept dim reads and writes as aligned uint32 words of four
    columns: whole words of results (`_word_results`), whole words long, every other stride, the
    offset and the input's address whole words."""
    return (_word_results(kept, out_align) and kept[-1].size % 4 == 0 and in_offset % 4 == 0
            and _aligned(in_misalign, [d.in_stride for d in kept[:-1] + red if d.size > 1], 1, 4))


def _shifts_word_columns(kept, out_align: int, tuning) -> bool:
    """Whether a 1-byte `any` / `all` whose innermost kept dim is contiguous bytes off the word grid
    (or W no multiple of 4) and at least SHIFTED_WORD_COLUMNS_MIN wide reads them as words from the
    aligned words around them (kps::ReadWordsShifted), writing whole words of results."""
    return bool(kept) and _word_results(kept, out_align) and kept[-1].size >= tuning.SHIFTED_WORD_COLUMNS_MIN


def _word_results(kept, out_align: int) -> bool:
    """Whether the innermost kept dim is contiguous in and out and its results can be written as
    words of four: the result's start and its other strides whole words."""
    inner = kept[-1]
    return (inner.in_stride == 1 and inner.out_stride == 1 and out_align % 4 == 0
            and _aligned(0, [d.out_stride for d in kept[:-1] if d.size > 1], 1, 4))


def _choose_splits(units: int, slots: int, max_splits: int, realize, slack: float) -> int:
    """Blocks per unit of work (an output group or a column tile) when `units` alone cannot fill
    the `slots` (SMs x resident blocks). `realize(s)` is the split count a request for `s` turns
    into once rounded to whole steps. Picks the count whose grid best fills the waves it occupies
    (a grid of 1.1 waves runs as long as 2 full ones), on the fewest waves that come within `slack`
    of the best fill (more splits cost partials and a longer tail), the fewest splits on a tie,
    looking no further than about two waves."""
    fills = {}
    for s in range(1, min(max_splits, _ceil(2 * slots, units)) + 1):
        real = realize(s)
        fills.setdefault(real, _fill(real * units, slots))
    best = max(fills.values(), default=0.0)
    waves = min((_ceil(real * units, slots) for real, fill in fills.items() if fill >= best - slack), default=1)
    return max((real for real in fills if _ceil(real * units, slots) == waves), key=lambda r: (fills[r], -r), default=1)


def _split_group(num_splits: int, per_round: int, columns: int, tuning) -> int:
    """Splits per group of a split combine (kps::GroupOfSplit) whose one block folds `per_round`
    rows of partials a round: all of them (one level) where that takes at most SPLIT_ONE_LEVEL_ROUNDS
    rounds, where no two levels take fewer, or where the groups' counters would not fit SPLIT_COUNTERS
    over `columns` block columns; else the group that takes the fewest rounds over both levels (the
    last group's, then the groups'), the fewest groups on a tie. 0 where nothing splits."""
    if num_splits == 1:
        return 0
    one = _group_rounds(num_splits, num_splits, per_round)
    if one <= tuning.SPLIT_ONE_LEVEL_ROUNDS:
        return num_splits

    def two(g: int) -> int:
        return _group_rounds(num_splits, g, per_round)

    group = min(range(per_round, num_splits, per_round), key=lambda g: (two(g), -g), default=num_splits)
    if two(group) >= one or columns * (1 + _ceil(num_splits, group)) > tuning.SPLIT_COUNTERS:
        return num_splits
    return group


def _group_rounds(num_splits: int, group: int, per_round: int) -> int:
    """Rounds of partial loads a split combine in groups of `group` splits takes: the last group's
    rows, then (several groups) the groups' rows."""
    first = _ceil(group, per_round)
    return first if group >= num_splits else first + _ceil(_ceil(num_splits, group), per_round)


def _combine_rounds(num_splits: int, per_round: int, columns: int, tuning) -> int:
    """Rounds of partial loads the split combine of `num_splits` splits takes, in the groups
    _split_group gives it (0: no split)."""
    group = _split_group(num_splits, per_round, columns, tuning)
    return _group_rounds(num_splits, group, per_round) if group else 0


def _splits_within(rounds: int, per_round: int, columns: int, tuning) -> int:
    """The most splits whose combine takes at most `rounds` rounds: one level folds rounds x
    per_round rows; two, groups of k rounds' rows, k(rounds - k) x per_round^2 (at most 2^16)."""
    two = max((k * (rounds - k) for k in range(1, rounds)), default=0) * per_round * per_round
    most = min(max(rounds * per_round, two), 1 << 16)
    while most > rounds * per_round and _combine_rounds(most, per_round, columns, tuning) > rounds:
        most = max(rounds * per_round, most * 3 // 4)  # (where the groups' counters do not fit)
    return most


def _fill(blocks: int, slots: int) -> float:
    """How full the waves of `blocks` over `slots` resident blocks run, on average (1: every one)."""
    return blocks / (_ceil(blocks, slots) * slots)


def _tile_rows(tuning, vec: int, rows: Optional[int] = None, elements: int = 0) -> int:
    """Loads in flight per thread for a vector width: `rows` (MAX_TILE_ROWS unless given), at most
    `elements` elements (MAX_TILE_ELEMENTS unless given)."""
    return max(1, min(rows or tuning.MAX_TILE_ROWS, (elements or tuning.MAX_TILE_ELEMENTS) // vec))


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

