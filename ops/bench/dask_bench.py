"""`python -m ops.bench --dask`: this project's reductions of a dask array bigger than one GPU's memory,
generated block by block on the workers (never whole), on 1 and on N GPUs (dask-cuda's
LocalCUDACluster: one worker per GPU), against dask's own reductions of the same CuPy blocks in the
same run. Without a GPU: NumPy blocks on a LocalCluster of CPU worker processes, scaled down, and
it says so. Time is the wall clock of `.compute()`, generation included (it is the same for both);
GB/s per GPU = the array's bytes / time / workers. The same graph with each block cut to one
element instead of reduced is timed too (generation and dask's own work alone): the reduction's own
GB/s per GPU is the bytes over the time beyond it, to set beside one GPU's in-memory figure."""
from __future__ import annotations

import time
from typing import Callable, Dict, List

import numpy as np

import ops
from ops.interop import to_numpy

#: The reductions: name -> (this project's, dask's own), each of a dask array.
REDUCTIONS: Dict[str, tuple] = {
    "sum": (lambda d: ops.reduce_sum(d), lambda d: d.sum()),
    "column sum": (lambda d: ops.reduce_sum(d, axis=0), lambda d: d.sum(axis=0)),
    "argmax": (lambda d: ops.reduce_argmax(d), lambda d: d.argmax()),
    "var": (lambda d: ops.reduce_var(d), lambda d: d.var()),
}

#: Columns of the generated array (a block holds whole rows).
COLUMNS = 4096


#: splitmix64 of (seed + the element's place) -> a float32 uniform in [-1, 1): a GPU block written at
#: the memory's speed (CuPy's normal generator took 7 ms a GB, five times the reduction's time).
_HASH_SOURCE = ("unsigned long long z = seed + start + i;"
                " z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull; z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;"
                " z ^= z >> 31; y = (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;")


def _generate(xp_name: str, rows: int, seed: int, block_info=None):
    """One block of random float32 rows, seeded by its place (NumPy: standard normal; CuPy: uniform
    in [-1, 1) from a hash of each element's place)."""
    start = block_info[None]["array-location"][0][0]
    if xp_name == "numpy":
        return np.random.default_rng(seed + start).standard_normal((rows, COLUMNS), dtype=np.float32)
    import cupy

    out = cupy.empty((rows, COLUMNS), dtype=np.float32)
    cupy.ElementwiseKernel("uint64 seed, uint64 start", "float32 y", _HASH_SOURCE, "kps_bench_block")(
        np.uint64(seed), np.uint64(start * COLUMNS), out)
    return out


def _corner(block):
    """A block cut to its first element (a copy: a view would keep the whole block alive): the graph
    of a reduction with next to no reduction."""
    return block[:1, :1].copy()


def array(total_bytes: int, block_bytes: int, gpu: bool, seed: int = 0):
    """A lazy (rows, COLUMNS) float32 dask array of about `total_bytes`, generated block by block."""
    import dask.array as da

    rows = max(1, block_bytes // (4 * COLUMNS))
    blocks = max(1, total_bytes // (rows * COLUMNS * 4))
    xp_name = "cupy" if gpu else "numpy"
    meta = __import__(xp_name).empty((0, 0), dtype=np.float32)
    return da.map_blocks(_generate, xp_name, rows, seed, chunks=((rows,) * blocks, (COLUMNS,)), dtype=np.float32,
                         meta=meta)


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _cluster(workers: int, gpu: bool):
    import distributed

    if gpu:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise SystemExit("--dask on GPUs needs dask-cuda (pip install 'kps-reduce[dask-gpu]')") from None
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(workers)), dashboard_address=None)
    return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)


def run(worker_counts: List[int], total_bytes: int, block_bytes: int, gpu: bool, repeat: int = 1) -> List[dict]:
    """One row per (workers, reduction, implementation): the best of `repeat` wall times and the
    GB/s per worker; the two implementations' results are checked against each other."""
    import distributed

    rows = []
    for workers in worker_counts:
        with _cluster(workers, gpu) as cluster, distributed.Client(cluster):
            d = array(total_bytes, block_bytes, gpu)
            nbytes = d.nbytes
            corners = d.map_blocks(_corner, chunks=((1,) * d.numblocks[0], (1,) * d.numblocks[1]))
            generation = min(_time(lambda: corners.compute()) for _ in range(repeat))
            for name, (ours, theirs) in REDUCTIONS.items():
                results = {}
                for impl, fn in (("ours", ours), ("dask", theirs)):
                    seconds = min(_time(lambda: results.__setitem__(impl, fn(d).compute())) for _ in range(repeat))
                    beyond = seconds - generation
                    rows.append({"workers": workers, "op": name, "impl": impl, "s": seconds,
                                 "GBps_per_worker": nbytes / seconds / 1e9 / workers, "GB": nbytes / 1e9,
                                 "generation_s": generation,
                                 "reduction_GBps_per_worker": nbytes / beyond / 1e9 / workers if beyond > 0 else None})
                got, expect = (np.asarray(to_numpy(results[k]), dtype=np.float64) for k in ("ours", "dask"))
                ok = np.allclose(got, expect, rtol=1e-4, atol=1e-3 * np.sqrt(nbytes / 4 / max(1, got.size)))
                rows[-1]["ok"] = rows[-2]["ok"] = bool(ok)
    return rows


def in_memory(block_bytes: int) -> Dict[str, float]:
    """GB/s of each reduction of this project on one in-memory CuPy block of `block_bytes`, one GPU
    (CUDA events, median: timing.py), the figure a GPU's share of the dask run is set beside."""
    import cupy

    from . import timing

    x = cupy.random.default_rng(0).standard_normal((max(1, block_bytes // (4 * COLUMNS)), COLUMNS), dtype=np.float32)
    return {name: x.nbytes / timing.median_us(lambda: ours(x)) / 1e3 for name, (ours, _) in REDUCTIONS.items()}


def table(rows: List[dict], gpu: bool) -> str:
    unit = "GPU" if gpu else "worker"
    lines = [f"{'workers':>7}  {'op':<11}{'ours s':>9}{'dask s':>9}{f'ours GB/s/{unit}':>18}{f'dask GB/s/{unit}':>18}"
             f"{'vs dask':>9}{'gen s':>8}{'ours net GB/s':>15}{'dask net':>10}  ok"]
    for ours, theirs in zip(rows[::2], rows[1::2]):
        net = [f"{r['reduction_GBps_per_worker']:.0f}" if r["reduction_GBps_per_worker"] else "-" for r in (ours, theirs)]
        lines.append(f"{ours['workers']:>7}  {ours['op']:<11}{ours['s']:>9.3f}{theirs['s']:>9.3f}"
                     f"{ours['GBps_per_worker']:>18.1f}{theirs['GBps_per_worker']:>18.1f}"
                     f"{theirs['s'] / ours['s']:>8.2f}x{ours['generation_s']:>8.3f}{net[0]:>15}{net[1]:>10}"
                     f"  {'yes' if ours['ok'] else 'NO'}")
    lines.append(f"(gen s: the same graph with each block cut to one element, not reduced; net GB/s per {unit}: "
                 "the bytes over the time beyond it)")
    return "\n".join(lines)
