"""The launcher: plan + compile once per call signature, then a dictionary lookup and one launch.

A `Launch` holds everything a repeated call needs: the kernel handle, the grid, and the packed
parameter struct with only the pointers left to fill. Launches go through `cuLaunchKernel` on the
caller's current stream, with scratch for split reductions from CuPy's memory pool.
"""
from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import replace
from typing import Callable, Dict

from kps import cache, compiler
from kps.functors import Functors

from . import params, planner, policy, source
from .params import LOOK_FIELDS, MORE_INPUTS, PARTIALS, SEMAPHORES, X, Y

_lock = threading.Lock()
#: Call signature -> Launch, and (device, stream, thread) -> (address, size, the array keeping it):
#: bounded (kps/cache.py), and forgotten by a forked child.
_launches = cache.device_state(cache.Lru())
_workspaces = cache.device_state(cache.Lru())
#: Workspaces a CUDA graph captured: kept for the life of the process, whatever replaces them in
#: `_workspaces`, since every replay of the graph writes to the addresses it captured.
_captured: Dict[int, object] = {}
_sm_counts: Dict[int, int] = {}


class CaptureError(RuntimeError):
    """A call inside a CUDA graph capture that would have to compile, load or plan a kernel."""


def capturing(stream_ptr: int) -> bool:
    """Whether a CUDA graph is being captured on the stream (a query that itself is legal inside a
    capture). A legacy-stream query that CUDA refuses because another stream captures counts too."""
    from cupy.cuda import runtime

    try:
        return bool(runtime.streamIsCapturing(stream_ptr))  # a bool, or a status: 0 is none
    except runtime.CUDARuntimeError:
        return True


def _not_ready() -> CaptureError:
    return CaptureError("x: this call's kernel is not ready and a CUDA graph is being captured on its stream: "
                        "compiling, loading and planning cannot be captured. Make the same call (same shape, "
                        "strides, dtype and axes) once before the capture, as a warm-up, then capture it")


def _reset_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_reset_in_child)


def sm_count(device_id: int) -> int:
    n = _sm_counts.get(device_id)
    if n is None:
        import cupy

        n = _sm_counts[device_id] = cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"]
    return n


#: Bytes at the head of a workspace for the last-block-done counters (planner.ReduceConfig.counters).
_COUNTER_BYTES = policy.SPLIT_COUNTERS * 4

#: cudaStreamPerThread: one handle that names a different stream in every host thread, so its
#: workspaces are keyed by thread too.
PER_THREAD_STREAM = 2


class _StreamHandle:
    """A raw stream handle, shown to CuPy through the CUDA stream protocol."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def stream_object(ptr: int):
    """A CuPy Stream for a raw handle (the legacy and per-thread default streams by their names),
    to make it CuPy's current stream."""
    import cupy

    if ptr == 0:
        return cupy.cuda.Stream.null
    if ptr == PER_THREAD_STREAM:
        return cupy.cuda.Stream.ptds
    return cupy.cuda.Stream.from_external(_StreamHandle(ptr))


def _workspace(key: tuple, nbytes: int) -> tuple:
    """Scratch for split reductions, one buffer per stream: counters first (kept at zero: every
    launch leaves them so), partials after. Launches on one stream run in order, so they share it
    safely. It comes from CuPy's pool and is zeroed on that stream itself, so a buffer it replaces
    (a larger split arrived) is handed back to that stream's arena: the queued launches that still
    use it run before anything that reuses it. Returns (address, size, the array keeping it)."""
    ws = _workspaces.get(key)
    if ws is None or ws[1] < nbytes:
        import cupy

        with _lock, stream_object(key[1]):
            ws = _workspaces.get(key)
            if ws is None or ws[1] < nbytes:
                buf = cupy.zeros(max(nbytes, 1 << 20), dtype=cupy.uint8)
                ws = _workspaces.put(key, (buf.data.ptr, buf.nbytes, buf), replace=True)
    return ws


_launch_kernel = None  # cupy.cuda.driver.launchKernel, bound once the first Launch is built


class Launch:
    """One planned, compiled kernel: call it with the data pointers and the stream."""

    def __init__(self, cfg: planner.ReduceConfig, functors: Functors, device_id: int):
        global _launch_kernel
        from cupy.cuda import driver

        _launch_kernel = driver.launchKernel
        self.cfg = cfg
        functors = source.plan_functors(cfg, functors)
        self.name = source.kernel_name(cfg, functors)
        self.function = compiler.load(source.program(functors), [self.name], device_id,
                                      [source.INCLUDE_DIR])[self.name]
        values = params.pack(cfg)
        # The struct lives in one ctypes buffer; a lock keeps threads from interleaving between
        # filling the pointers and cuLaunchKernel, which copies the parameters before returning.
        self._params = (ctypes.c_int64 * len(values))(*values)
        self._args = (ctypes.c_void_p * 1)(ctypes.addressof(self._params))
        self._args_ptr = ctypes.addressof(self._args)
        self._call_lock = threading.Lock()
        # flipped reduced dims (in bytes where the kernel reads bytes its word functors fold)
        self._x_offset = cfg.in_offset * (1 if cfg.reads_bytes else functors.in_dtype.itemsize)
        self._more_offsets = [cfg.in_offset * d.itemsize for d in functors.more_dtypes]
        self._more_slots = len(values) - MORE_INPUTS
        self._look_slot = self._more_slots - LOOK_FIELDS
        if cfg.counters * 4 > _COUNTER_BYTES:
            raise ValueError(f"a split launch of {cfg.grid[0]} block columns needs more counters than reserved")
        partial_bytes = cfg.partial_count * functors.acc_dtype.itemsize
        self._workspace_bytes = _COUNTER_BYTES + partial_bytes if partial_bytes else 0
        self._grid = (self.function.ptr, cfg.grid[0], cfg.grid[1], 1, cfg.block, 1, 1, 0)
        self._fire, self.run = self._closures()

    def _closures(self):
        """(fire, run), closures over the constants. `fire(x, y, stream, more, workspace, look)` fills the
        pointers and the look's fields (kernels/look.py's `arm`; None: no look) and launches. `run` is what a
        repeated call runs, with `__call__`'s arguments: a split launch on the legacy default stream whose
        workspace is ready skips `__call__`'s capture query, since that stream is never captured (CUDA refuses
        it): the query cost 1.4 us on the H100's host before the launch (a split 256 MB sum's host time to its
        launch: 7.6-8.5 -> 5.1-5.4 us, with the result allocated ahead, ops/gpu_backend.py). Other split launches take
        `__call__`."""
        params, lock, args, x_offset, launch, need = (self._params, self._call_lock, self._args_ptr, self._x_offset,
                                                      _launch_kernel, self._workspace_bytes)
        function, gx, gy, gz, bx, by, bz, smem = self._grid
        # `general` holds the Launch, and so its ctypes pointer array, whose address `args` is, for as
        # long as a prepared call (ops/gpu_backend.py, ops/interop.py) keeps `run` after the launch cache let go
        more_slots, more_offsets, general = self._more_slots, self._more_offsets, self.__call__
        look_slot, look_end = self._look_slot, self._look_slot + LOOK_FIELDS

        def fire(x_ptr: int, y_ptr: int, stream_ptr: int, more, ws, look=None) -> None:
            # one lock: cuLaunchKernel copies the parameters before it returns
            with lock:
                params[X] = x_ptr + x_offset
                params[Y] = y_ptr
                for k, ptr in enumerate(more):
                    params[more_slots + k] = ptr + more_offsets[k]
                if ws is not None:
                    params[PARTIALS] = ws[0] + _COUNTER_BYTES
                    params[SEMAPHORES] = ws[0]
                if look is None:
                    params[look_slot] = 0
                else:
                    params[look_slot:look_end] = look
                launch(function, gx, gy, gz, bx, by, bz, smem, stream_ptr, args, 0)

        def run(x_ptr: int, y_ptr: int, stream_ptr: int, device_id: int, more=(), look=None) -> None:
            ws = None
            if need:
                key = (device_id, 0, 0)
                ws = _workspaces.get(key) if stream_ptr == 0 else None
                if ws is None or ws[1] < need:
                    return general(x_ptr, y_ptr, stream_ptr, device_id, more, look)
                _workspaces.touch(key)
            fire(x_ptr, y_ptr, stream_ptr, more, ws, look)

        return fire, run

    def local_bytes(self) -> int:
        """Local memory a thread of the compiled kernel takes: its stack and spilled registers."""
        from cupy.cuda import driver

        return driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, self.function.ptr)

    def occupancy(self) -> int:
        """Resident blocks per SM the compiled kernel allows."""
        from cupy.cuda import driver

        return driver.occupancyMaxActiveBlocksPerMultiprocessor(self.function.ptr, self.cfg.block, 0)

    def __call__(self, x_ptr: int, y_ptr: int, stream_ptr: int, device_id: int, more=(), look=None) -> None:
        """Launch on `stream_ptr` (the caller's current stream) in `device_id`'s context, which
        the caller has made current: the first call, and split launches `run` leaves to it (a
        capture may be on their stream). `more`: the addresses of a transform's further inputs
        (laid out as x). `look`: the look's fields (kernels/look.py's `arm`), or None."""
        need = self._workspace_bytes
        if need:
            key = (device_id, stream_ptr, threading.get_ident() if stream_ptr == PER_THREAD_STREAM else 0)
            ws = _workspaces.get(key)
            in_capture = capturing(stream_ptr)
            if ws is None or ws[1] < need:
                if in_capture:  # an allocation the capture may forbid: the warm-up makes it
                    raise CaptureError("x: a split reduction inside a CUDA graph capture needs its scratch on the "
                                       "capture stream: make the same call once on that stream before the capture "
                                       "(with torch.cuda.graph, pass stream= the warm-up's stream)")
                ws = _workspace(key, need)
            else:
                _workspaces.touch(key)
            if in_capture:
                _captured.setdefault(ws[0], ws)
        self._fire(x_ptr, y_ptr, stream_ptr, more, ws if need else None, look)


#: A planner of one call signature: the plan for a budget.
MakePlan = Callable[[planner.Budget], planner.ReduceConfig]


def _first_launch(make: MakePlan, functors: Functors, device_id: int):
    """The first launch of a signature and the budget it was planned with: a bounded state tile made
    lighter (planner.lighter) while its launch bound spills: a state's rows to a lower bound, then
    any tile that leaves a thread more than BOUNDED_MAX_LOCAL_BYTES of local memory to fewer
    elements (float16 logsumexp columns: 16 a thread where they would take 32). An unbounded
    kernel whose registers leave few blocks resident: the first of planner.raised_bounds that
    spills nothing and adds blocks (where shared memory holds them back, none does)."""
    budget = planner.Budget()
    launch = Launch(make(budget), functors, device_id)
    while launch.cfg.bounded:
        after = planner.lighter(make, launch.cfg, budget, launch.local_bytes())
        if after is None:
            break
        budget, cfg = after
        launch = Launch(cfg, functors, device_id)
    occupancy = launch.occupancy()
    for min_blocks in planner.raised_bounds(launch.cfg, budget, occupancy):
        raised = replace(budget, min_blocks=min_blocks)
        trial = Launch(make(raised), functors, device_id)
        if trial.local_bytes() == 0 and trial.occupancy() > occupancy:
            return trial, raised
    return launch, budget


def get_launch(key: tuple, make: MakePlan, functors: Functors, device_id: int, in_capture: bool = False) -> Launch:
    """The cached launch for `key`. On first use: plan with the policy's occupancy estimate,
    compile, then re-plan with the compiled kernel's real occupancy, so a split grid fills the
    GPU in one wave instead of one and a bit. `make(budget)` plans the call (`_first_launch` says
    when the budget's tile and bounds change). `in_capture`: a CUDA graph is being captured, so a
    launch not made yet is a CaptureError."""
    launch = _launches.get(key)
    if launch is None:
        if in_capture:
            raise _not_ready()
        launch, budget = _first_launch(make, functors, device_id)
        cfg = planner.at_occupancy(make, launch.cfg, budget, launch.occupancy())
        if cfg != launch.cfg:
            launch = Launch(cfg, functors, device_id)
        launch = _launches.put(key, launch)
    else:
        _launches.touch(key)
    return launch
