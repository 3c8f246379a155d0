"""From CuPy arrays to a cached, planned launch: the entry point `ops` uses on the GPU."""
from __future__ import annotations

from typing import Sequence

import numpy as np

import kps
from kps import dtypes
from kps.functors import Functors

from . import launcher, planner


def launch_for(x, y, axes: Sequence[int], keepdims: bool, functors: Functors, more=(),
               in_capture: bool = False) -> launcher.Launch:
    """The cached launch that reduces `x` over `axes` into `y` (any strides, the result's shape).
    An epilogue of several results writes them side by side: `y` is then the first results, each
    output's others following it. `more`: a transform's further inputs, laid out as `x`; they are
    read with 16-byte loads beside x's where all share its itemsize, else element by element. One
    off x's 16-byte grid is read as the two aligned chunks around each vector, shifted in registers
    (kps::LoadShifted); where the lanes of a warp walk a run together they share the chunks
    (kps::ReadDataVecLanes), and the plan gives them smaller tiles and, where every input off the
    grid lies the same bytes past it, that shift as a constant."""
    itemsize, out_itemsize = x.dtype.itemsize, y.dtype.itemsize * functors.epilogue.outputs
    strides = tuple(s // itemsize for s in x.strides)
    out_strides = tuple(s // out_itemsize for s in y.strides)
    if keepdims:
        out_strides = tuple(s for i, s in enumerate(out_strides) if i not in axes)
    x_misalign = x.data.ptr % 16
    out_align = planner.alignment(y.data.ptr)
    device_id = x.data.device_id
    vectors = all(a.itemsize == x.itemsize for a in more)
    shifts = {(a.data.ptr - x.data.ptr) % 16 for a in more} - {0}
    off_grid, shift = bool(shifts), shifts.pop() if len(shifts) == 1 else 0
    key = (x.shape, strides, axes, out_strides, functors, x_misalign, out_align, device_id, vectors, off_grid, shift)

    def make_cfg(budget: planner.Budget) -> planner.ReduceConfig:  # (only where the launch is not cached)
        words = kps.packs_words(functors)
        layout = planner.Layout.of(x.shape, strides, axes, out_strides, itemsize, out_itemsize,
                                   indexed=functors.op.indexed, in_misalign=x_misalign, out_align=out_align)
        traits = planner.Traits(
            state=bool(functors.op.state), complex_acc=not functors.op.state and dtypes.is_complex(functors.acc_dtype),
            heavy=functors.op.heavy, acc_itemsize=functors.acc_dtype.itemsize,
            folds_words=words, word_columns=words and functors.out_dtype == np.bool_,
            inputs=1 + len(functors.more_dtypes), vector_loads=vectors, inputs_off_grid=off_grid, inputs_shift=shift,
        )
        return planner.plan(layout, traits, budget, launcher.sm_count(device_id))

    return launcher.get_launch(key, make_cfg, functors, device_id, in_capture)
