"""How speed is measured, once, for `python -m ops.bench` and the asv suite alike.

CUDA events around one call (host dispatch included: that is what a user waits for), median of
`repeat` calls after `warmup`; the read ceiling from a tuned read-only streaming kernel in the
same process. See BENCH.md's method.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

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


def median_us(fn: Callable[[], object], warmup: int = 3, repeat: int = 30, slow_ms: float = 0.0) -> float:
    """Median time of one call in microseconds, CUDA events around each call. With `slow_ms`, a call
    that takes longer than that (after the warm-up) is timed 5 times, not `repeat`."""
    import cupy

    for _ in range(warmup):
        fn()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    while len(times) < repeat:
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
        if slow_ms and times[0] > slow_ms * 1e3:
            repeat = min(repeat, 5)
    return statistics.median(times)


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
    """Device read bandwidth in GB/s, measured now, in this process."""
    import cupy

    n = nbytes // 16
    buf = cupy.random.random(n * 4, dtype=cupy.float32)
    sink = cupy.zeros(1, dtype=cupy.float32)
    kernel = cupy.RawKernel(_CEILING_SOURCE, "read_ceiling")
    blocks = cupy.cuda.Device().attributes["MultiProcessorCount"] * CEILING_BLOCKS_PER_SM
    us = median_us(lambda: kernel((blocks,), (256,), (buf, cupy.int64(n), sink)))
    del buf
    return n * 16 / us / 1e3
