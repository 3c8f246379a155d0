"""Run a planned reduction on CuPy arrays: the one entry point `ops` uses on the GPU."""
from __future__ import annotations

from typing import Sequence

from kps.functors import Functors

from . import config, launcher


def reduce_into(x, y, axes: Sequence[int], keepdims: bool, functors: Functors) -> None:
    """out[...] = reduction of `x` over `axes`, written into `y` (any strides, result shape).

    `x` must be non-empty and `y` must not overlap it; both on the current device.
    """
    itemsize, out_itemsize = x.dtype.itemsize, y.dtype.itemsize
    strides = tuple(s // itemsize for s in x.strides)
    out_strides = tuple(s // out_itemsize for s in y.strides)
    if keepdims:
        out_strides = tuple(s for i, s in enumerate(out_strides) if i not in axes)
    x_ptr, y_ptr = x.data.ptr, y.data.ptr
    device_id = x.device.id
    out_align = config.alignment(y_ptr)
    key = (x.shape, strides, axes, out_strides, functors, x_ptr % 16, out_align, device_id)

    def make_cfg():
        return config.plan(
            x.shape, strides, axes, out_strides, itemsize, out_itemsize,
            launcher.sm_count(device_id), in_misalign=x_ptr % 16, out_align=out_align,
        )

    launch = launcher.get_launch(key, make_cfg, functors, device_id)
    import cupy

    launch(x_ptr, y_ptr, cupy.cuda.get_current_stream().ptr, device_id)
