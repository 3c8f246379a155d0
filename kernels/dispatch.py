"""From CuPy arrays to a cached, planned launch: the entry point `ops` uses on the GPU."""
from __future__ import annotations

from typing import Sequence

import numpy as np

import kps
from kps.functors import Functors

from . import config, launcher


def launch_for(x, y, axes: Sequence[int], keepdims: bool, functors: Functors, more=(),
               in_capture: bool = False) -> launcher.Launch:
    """The cached launch that reduces `x` over `axes` into `y` (any strides, the result's shape).
    An epilogue of several results writes them side by side: `y` is then the first results, each
    output's others following it. `more`: a transform's further inputs, laid out as `x`; they are
    read with 16-byte loads beside x's where all share its itemsize (off x's grid: two aligned
    loads shifted in registers, kps::LoadShifted), else element by element."""
    words = _word_columns(x, y, axes, functors, more)
    if words is not None:
        x, y, functors = words
    itemsize, out_itemsize = x.dtype.itemsize, y.dtype.itemsize * functors.epilogue.outputs
    strides = tuple(s // itemsize for s in x.strides)
    out_strides = tuple(s // out_itemsize for s in y.strides)
    if keepdims:
        out_strides = tuple(s for i, s in enumerate(out_strides) if i not in axes)
    x_misalign = x.data.ptr % 16
    out_align = config.alignment(y.data.ptr)
    device_id = x.data.device_id
    vectors = all(a.itemsize == x.itemsize for a in more)
    key = (x.shape, strides, axes, out_strides, functors, x_misalign, out_align, device_id, vectors)

    def make_cfg(blocks_per_sm: int) -> config.ReduceConfig:
        return config.plan(
            x.shape, strides, axes, out_strides, itemsize, out_itemsize, launcher.sm_count(device_id),
            in_misalign=x_misalign, out_align=out_align, blocks_per_sm=blocks_per_sm,
            pack_words=kps.packs_words(functors), acc_itemsize=functors.acc_dtype.itemsize,
            index_strides=functors.op.indexed, vector_loads=vectors, staging=not functors.more_dtypes,
            state_acc=bool(functors.op.state),
        )

    return launcher.get_launch(key, make_cfg, functors, device_id, in_capture)


def _word_columns(x, y, axes, functors: Functors, more):
    """`any` / `all` of a 1-byte input whose innermost dim is kept, contiguous and whole uint32
    words, in and out (every address a multiple of 4): `x` and `y` as uint32 views, four columns a
    word, and the word functors (kps.word_columns), else None. The launch is planned on the views
    and called with the arrays' own addresses, which are the views'. H100, bool over axis 0, byte
    by byte -> words, kernel alone, same run: `any` of (64, 4194304) 1838 -> 2893 GB/s, (65536, 4096)
    2475 -> 2923, (5592405, 48) 1976 -> 2795; `all` of (64, 4194304) 1760 -> 2894, (1048576, 256)
    1978 -> 2784; (32, 4096, 1024) over axis 1 2302 -> 2730."""
    if (more or not kps.packs_words(functors) or functors.out_dtype != np.bool_ or x.ndim == 0
            or x.ndim - 1 in axes or x.shape[-1] % 4 or x.strides[-1] != 1 or y.ndim == 0 or y.strides[-1] != 1
            or y.shape[-1] != x.shape[-1] or x.data.ptr % 4 or y.data.ptr % 4
            or any(s % 4 for s in x.strides[:-1] + y.strides[:-1])):
        return None
    try:
        return x.view(np.uint32), y.view(np.uint32), kps.word_columns(functors)
    except ValueError:  # a view the array's layout does not allow
        return None
