"""The launcher: plan + compile once per call signature, then a dictionary lookup and one launch.

A `Launch` holds everything a repeated call needs: the kernel handle, the grid, and the packed
parameter struct with only the pointers left to fill. Launches go through `cuLaunchKernel` on the
caller's current stream, with scratch for split reductions from CuPy's memory pool.
"""
from __future__ import annotations

import threading
from typing import Dict, Tuple

import numpy as np

from kps import compiler
from kps.functors import Functors

from . import config, params, source

_lock = threading.Lock()
_plans: Dict[tuple, "Launch"] = {}
_semaphores: Dict[Tuple[int, int], object] = {}
_sm_counts: Dict[int, int] = {}


def sm_count(device_id: int) -> int:
    n = _sm_counts.get(device_id)
    if n is None:
        import cupy

        n = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
        _sm_counts[device_id] = n
    return n


def _semaphores_for(device_id: int, stream_ptr: int, count: int) -> int:
    """Zeroed counters for last-block-done, one set per (device, stream): launches on one stream
    run in order and each leaves its counters at zero, so the set is reused without a memset."""
    import cupy

    key = (device_id, stream_ptr)
    with _lock:
        sem = _semaphores.get(key)
        if sem is None or sem.size < count:
            sem = cupy.zeros(max(count, 1024), dtype=np.uint32)
            _semaphores[key] = sem
    return sem.data.ptr


class Launch:
    """One planned, compiled kernel: call it with the data pointers and the stream."""

    __slots__ = ("cfg", "name", "function", "func_ptr", "template", "scratch_bytes", "x_offset")

    def __init__(self, cfg: config.ReduceConfig, functors: Functors, device_id: int):
        self.cfg = cfg
        self.name = source.kernel_name(cfg, functors)
        self.function = compiler.load(source.program(functors), [self.name], device_id,
                                     [source.INCLUDE_DIR])[self.name]
        self.func_ptr = self.function.ptr
        self.template = np.array(params.pack(cfg), dtype=np.int64)
        self.scratch_bytes = cfg.partial_count * functors.acc_dtype.itemsize
        self.x_offset = cfg.in_offset * functors.in_dtype.itemsize  # flipped reduced dims

    def __call__(self, x_ptr: int, y_ptr: int, stream_ptr: int, device_id: int) -> None:
        from cupy.cuda import driver

        cfg = self.cfg
        p = self.template.copy()
        p[params.X] = x_ptr + self.x_offset
        p[params.Y] = y_ptr
        scratch = None
        if self.scratch_bytes:
            import cupy

            scratch = cupy.empty(self.scratch_bytes, dtype=np.uint8)
            p[params.PARTIALS] = scratch.data.ptr
            p[params.SEMAPHORES] = _semaphores_for(device_id, stream_ptr, cfg.grid[0])
        args = np.array([p.ctypes.data], dtype=np.uint64)
        driver.launchKernel(
            self.func_ptr, cfg.grid[0], cfg.grid[1], 1, cfg.block, 1, 1, 0, stream_ptr, args.ctypes.data, 0
        )
        del scratch  # back to the pool, stream-ordered after this launch


def get_launch(key: tuple, make_cfg, functors: Functors, device_id: int) -> Launch:
    """The cached launch for `key`, planning and compiling it on first use."""
    launch = _plans.get(key)
    if launch is None:
        launch = Launch(make_cfg(), functors, device_id)
        with _lock:
            launch = _plans.setdefault(key, launch)
    return launch


def clear_cache() -> None:
    with _lock:
        _plans.clear()
