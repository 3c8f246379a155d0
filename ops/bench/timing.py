"""How speed is measured, once, for `python -m ops.bench` and the asv suite alike.

CUDA events around one call (host dispatch included: that is what a user waits for), median of
`repeat` calls after `warmup`, this project and its peers timed in turns (`interleaved_us`); the
read ceiling from a tuned read-only streaming kernel in the same process. See BENCH.md's method.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List

_CEILING_SOURCE = r"""
extern "C" __global__ void read_ceiling(const float4* __restrict__ p, long long n, float* sink) {
  __shared__ float warp_sums[32];
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (; i + 3 * stride < n; i += 4 * stride) {  // four 16-byte loads in flight per thread
    const float4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc += (a.x + b.y) + (c.z + d.w);
  }
  for (; i < n; i += stride) acc += p[i].x;
  for (int m = 16; m > 0; m /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, m);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < blockDim.x / 32; ++w) s += warp_sums[w];
    atomicAdd(sink, s);  // one atomic per block
  }
}
"""

CEILING_BYTES = 1 << 30
CEILING_BLOCKS_PER_SM = 16


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.is_available()
    except Exception:  # noqa: BLE001 - no CuPy, no driver: no GPU
        return False


def event_times_us(fn: Callable[[], object], count: int, slow_ms: float = 0.0) -> List[float]:
    """`count` timings of one call in microseconds, CUDA events around each; with `slow_ms`, no more
    than 5 once a call has taken longer than that."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times: List[float] = []
    while len(times) < count:
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
        if slow_ms and times[0] > slow_ms * 1e3:
            count = min(count, 5)
    return times


def interleaved_us(fns: Dict[str, Callable[[], object]], warmup: int = 3, repeat: int = 30, rounds: int = 3,
                   slow_ms: float = 0.0, times=event_times_us) -> Dict[str, float]:
    """Median time of one call of each of `fns` (name -> zero-argument callable) in microseconds:
    after `warmup` calls each, `rounds` rounds in which every function in turn is timed for its share
    of `repeat` calls, so what drifts over a run (clocks, heat, the memory's state) falls on all of
    them alike. (Timed one after the other, the 2-norm read up to 8% slower than in turns, in the
    same H100 call.) A function slower than `slow_ms` is timed at most twice a round."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    share = max(1, -(-repeat // rounds))
    samples: Dict[str, List[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            slow = bool(slow_ms and samples[name] and samples[name][0] > slow_ms * 1e3)
            samples[name] += times(fn, min(share, 2) if slow else share, slow_ms)
    return {name: statistics.median(s) for name, s in samples.items()}


def median_us(fn: Callable[[], object], warmup: int = 3, repeat: int = 30, slow_ms: float = 0.0) -> float:
    """Median time of one call in microseconds, CUDA events around each call. With `slow_ms`, a call
    that takes longer than that (after the warm-up) is timed 5 times, not `repeat`."""
    return interleaved_us({"fn": fn}, warmup, repeat, 1, slow_ms)["fn"]


def median_us_cpu(fn: Callable[[], object], warmup: int = 1, repeat: int = 10) -> float:
    """Median wall time of one call in microseconds (the NumPy backend)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def read_ceiling_gbps(nbytes: int = CEILING_BYTES) -> float:
    """Device read bandwidth in GB/s, measured now, in this process (`cap_gbps`: once a size)."""
    import cupy

    n = nbytes // 16
    buf = cupy.random.random(n * 4, dtype=cupy.float32)
    sink = cupy.zeros(1, dtype=cupy.float32)
    kernel = cupy.RawKernel(_CEILING_SOURCE, "read_ceiling")
    blocks = cupy.cuda.Device().attributes["MultiProcessorCount"] * CEILING_BLOCKS_PER_SM
    us = median_us(lambda: kernel((blocks,), (256,), (buf, cupy.int64(n), sink)))
    del buf
    return n * 16 / us / 1e3


_caps: Dict[int, float] = {}


def cap_gbps(nbytes: int) -> float:
    """The read-ceiling kernel over `nbytes`, timed as every call is (`read_ceiling_gbps`), measured
    once a size in a process: a sweep's many inputs of one size share it."""
    if nbytes not in _caps:
        _caps[nbytes] = read_ceiling_gbps(nbytes)
    return _caps[nbytes]
