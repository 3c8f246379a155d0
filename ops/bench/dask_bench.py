"""`python -m ops.bench --dask`: this project's reductions of a dask array bigger than the GPUs'
memory, generated block by block on the workers (never whole), on 1, 2 and 4 GPUs (dask-cuda's
LocalCUDACluster: one worker per GPU), against dask's own reductions of the same CuPy blocks in the
same run. Without a GPU: NumPy blocks on a LocalCluster of CPU worker processes, scaled down, and
it says so.

Time is the wall clock of `.compute()`, generation included (the same for both); GB/s per GPU =
the array's bytes / time / GPUs. The same reduction of each block cut to one element is timed too
(`gen s`: generation, scheduling and the merge, next to no reduction): the reduction's own ("net")
GB/s per GPU is the bytes over the time beyond it, set beside one GPU's figure on one in-memory
block of the same size. A line per GPU count gives the blocks each GPU reduced in each op's best
run (dask's task stream): an uneven spread costs scaling a whole block at a time.

Sizing (`plan`): blocks of about an eighth of one GPU's memory (a power of two of GB: 8 GB on an
80 GB card, 16 GB on a 141 GB one), since each task costs the scheduler and the worker a few ms
whatever its size (1 GB blocks: 2.15 s for 300 GB on one H200, 16 GB blocks: 0.45 s); a number of
blocks that every GPU count of the run divides, so no GPU waits on another's last block; and an
array of four times the memory of all the GPUs of the largest row: it never fits on them, and each
GPU's share outweighs what a `compute()` costs whatever its size (the graph sent, the last block's
merge, the result back: 40-45 ms on two H200s, 2026-11-28, a tenth of a share of twice the memory).
"""
from __future__ import annotations

import time
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

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


@dataclass(frozen=True)
class Plan:
    """What one --dask run reduces: the GPU (worker) counts of its rows, the array's and a block's bytes."""
    worker_counts: Tuple[int, ...]
    total_bytes: int
    block_bytes: int

    @property
    def blocks(self) -> int:
        return self.total_bytes // self.block_bytes

    def describe(self, unit: str) -> str:
        return (f"{self.total_bytes / 1e9:.3g} GB in {self.blocks} blocks of {self.block_bytes / 2**30:g} GiB "
                f"on {', '.join(map(str, self.worker_counts))} {unit}(s)")


def plan(devices: int, device_bytes: int, total_gb: Optional[float] = None, block_gb: Optional[float] = None) -> Plan:
    """The sizes of a run on `devices` GPUs of `device_bytes` each (see the module's docstring);
    `total_gb` / `block_gb` override the array's and the block's size."""
    counts = tuple(n for n in (1, 2, 4) if n <= devices) + ((devices,) if devices not in (1, 2, 4) else ())
    block = int(block_gb * 2**30) if block_gb else max(1 << 30, 1 << (device_bytes // 8).bit_length() - 1)
    block -= block % (4 * COLUMNS)  # whole rows
    total = int(total_gb * 1e9) if total_gb else 4 * device_bytes * counts[-1]
    every = math.lcm(*counts)
    blocks = max(every, round(total / block / every) * every)
    return Plan(counts, blocks * block, block)


def _block_spread(stream: List[dict]) -> List[int]:
    """How many of a graph's block tasks (its most numerous kind: one a block) each worker ran, most
    first, from dask's task stream of one `compute()`: the spread the scheduler gave the blocks."""
    from dask.utils import key_split

    block = Counter(key_split(t["key"]) for t in stream).most_common(1)[0][0]
    return sorted(Counter(t["worker"] for t in stream if key_split(t["key"]) == block).values(), reverse=True)


def _timed(compute: Callable[[], object]) -> Tuple[float, List[int]]:
    """The wall time of one `compute()` and its blocks' spread over the workers (the scheduler's
    task stream, which it records anyway)."""
    import distributed

    with distributed.get_task_stream() as stream:
        seconds = _time(compute)
    return seconds, _block_spread(stream.data)


def run(p: Plan, gpu: bool, repeat: int = 3) -> List[dict]:
    """One row per (GPUs, reduction, implementation): the best of `repeat` wall times, after one
    untimed compute that warms the workers up; the two implementations' results are checked against
    each other. Our rows hold the blocks each worker reduced in their best run (`blocks_per_worker`):
    an uneven spread costs scaling a whole block at a time."""
    import distributed

    rows = []
    for workers in p.worker_counts:
        with _cluster(workers, gpu) as cluster, distributed.Client(cluster):
            d = array(p.total_bytes, p.block_bytes, gpu)
            corners = d.map_blocks(_corner, chunks=((1,) * d.numblocks[0], (1,) * d.numblocks[1]))
            REDUCTIONS["sum"][0](d).compute()
            for name, (ours, theirs) in REDUCTIONS.items():
                generation = min(_time(lambda: ours(corners).compute()) for _ in range(repeat))
                results = {}
                for impl, fn in (("ours", ours), ("dask", theirs)):
                    seconds, spread = min(_timed(lambda: results.__setitem__(impl, fn(d).compute()))
                                          for _ in range(repeat))
                    rows.append({"workers": workers, "op": name, "impl": impl, "s": seconds, "GB": d.nbytes / 1e9,
                                 "generation_s": generation, "blocks_per_worker": spread})
                rows[-1]["ok"] = rows[-2]["ok"] = _agree(results["ours"], results["dask"], d.nbytes)
    return rows


def _agree(ours, theirs, nbytes: int) -> bool:
    got, expect = (np.asarray(to_numpy(r), dtype=np.float64) for r in (ours, theirs))
    return bool(np.allclose(got, expect, rtol=1e-4, atol=1e-3 * np.sqrt(nbytes / 4 / max(1, got.size))))


def in_memory(block_bytes: int) -> Dict[str, float]:
    """GB/s of each reduction of this project on one in-memory CuPy block of `block_bytes`, one GPU
    (CUDA events, median: timing.py), the figure a GPU's share of the dask run is set beside."""
    import cupy

    from . import timing

    x = cupy.random.default_rng(0).standard_normal((max(1, block_bytes // (4 * COLUMNS)), COLUMNS), dtype=np.float32)
    return {name: x.nbytes / timing.median_us(lambda: ours(x)) / 1e3 for name, (ours, _) in REDUCTIONS.items()}


def derive(rows: List[dict], alone: Optional[Dict[str, float]] = None) -> None:
    """Add the per-GPU figures to each row: GB/s per GPU, the scaling over the same op and
    implementation on one GPU, the net GB/s per GPU beyond `gen s`, and that in % of `alone` (GB/s
    of each op on one in-memory block)."""
    one = {(r["op"], r["impl"]): r["s"] for r in rows if r["workers"] == 1}
    for r in rows:
        w, beyond = r["workers"], r["s"] - r["generation_s"]
        r["GBps_per_worker"] = r["GB"] / r["s"] / w
        r["scaling"] = one[(r["op"], r["impl"])] / r["s"] if (r["op"], r["impl"]) in one else None
        r["net_GBps_per_worker"] = r["GB"] / beyond / w if beyond > 0 else None
        if alone and r["net_GBps_per_worker"]:
            r["net_pct_of_alone"] = 100 * r["net_GBps_per_worker"] / alone[r["op"]]


def _fmt(value, spec: str, width: int, suffix: str = "") -> str:
    """`value` right-aligned in `width` + len(suffix) columns, or a dash where there is none."""
    return f"{value:>{width}{spec}}{suffix}" if value is not None else f"{'-':>{width + len(suffix)}}"


def table(rows: List[dict], gpu: bool) -> str:
    unit = "GPU" if gpu else "worker"
    lines = [f"{unit + 's':>7}  {'op':<11}{'ours s':>8}{'dask s':>8}{'scaling':>9}{'vs dask':>9}{f'GB/s/{unit}':>12}"
             f"{'gen s':>8}{f'net GB/s/{unit}':>16}{'% alone':>9}  ok"]
    for ours, theirs in zip(rows[::2], rows[1::2]):
        lines.append(f"{ours['workers']:>7}  {ours['op']:<11}{ours['s']:>8.3f}{theirs['s']:>8.3f}"
                     f"{_fmt(ours['scaling'], '.2f', 8, 'x')}{theirs['s'] / ours['s']:>8.2f}x{ours['GBps_per_worker']:>12.4g}"
                     f"{ours['generation_s']:>8.3f}{_fmt(ours['net_GBps_per_worker'], '.4g', 16)}"
                     f"{_fmt(ours.get('net_pct_of_alone'), '.0f', 8, '%')}  {'yes' if ours['ok'] else 'NO'}")
    for workers in sorted({r["workers"] for r in rows if r["workers"] > 1}):
        spreads = [f"{r['op']} {'/'.join(map(str, r['blocks_per_worker']))}" for r in rows[::2] if r["workers"] == workers]
        lines.append(f"blocks a {unit} on {workers}, best run: {', '.join(spreads)}")
    lines.append(f"(scaling: one {unit}'s time over this one's; gen s: the same reduction of each block cut to one "
                 f"element; net GB/s per {unit}: the bytes over the time beyond it; % alone: of one in-memory block's)")
    return "\n".join(lines)
