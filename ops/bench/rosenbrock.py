"""The named transform-reduce case: the Rosenbrock cost of 90M float32 values, one pass over x[:-1]
and x[1:] (two views of one array, 4 bytes apart), against what a CuPy or torch user writes."""
from __future__ import annotations

from typing import Dict

import numpy as np

import kps
import ops

from . import timing
from .cases import CPU_CASE_ELEMENTS, add_cap
from .graphs import graph_us_cupy
from .peers import cuda_torch

#: The transform-reduce of two views of one array, x[:-1] and x[1:] (4 bytes apart): a named case.
ROSENBROCK = kps.TransformOp("rosenbrock", "100 * (x1 - x0 * x0) * (x1 - x0 * x0) + (1 - x0) * (1 - x0)",
                             numpy=lambda a, b: 100 * (b - a * a) ** 2 + (1 - a) ** 2)


ROSENBROCK_N = 90_000_000


def rosenbrock_calls(x) -> Dict[str, object]:
    """name -> zero-argument callable: this project in one pass, and what a CuPy or torch user
    writes (elementwise temporaries, then a sum)."""
    import cupy

    a, b = x[:-1], x[1:]
    calls = {"ours": lambda: ops.reduce((a, b), axis=None, transform=ROSENBROCK),
             "cupy": lambda: cupy.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2)}
    torch = cuda_torch()
    if torch is not None:
        t = torch.from_dlpack(x)
        ta, tb = t[:-1], t[1:]
        calls["torch"] = lambda: torch.sum(100 * (tb - ta * ta) ** 2 + (1 - ta) ** 2)
    return calls


def run_rosenbrock(ceiling: float, repeat: int = 30) -> dict:
    """The Rosenbrock cost over 90M float32 values; GB/s counts the input once."""
    import cupy

    x = cupy.random.default_rng(0).uniform(-2, 2, ROSENBROCK_N, dtype=cupy.float32)
    calls = rosenbrock_calls(x)
    nbytes = x.nbytes
    row = {"case": "rosenbrock_90M", "op": "rosenbrock", "dtype": "float32", "MB": nbytes / 1e6}
    got = float(calls["ours"]())
    h = cupy.asnumpy(x).astype(np.float64)
    expect = float(np.sum(100 * (h[1:] - h[:-1] ** 2) ** 2 + (1 - h[:-1]) ** 2))
    row["rel_err"] = abs(got - expect) / expect
    row["ok"] = row["rel_err"] < 1e-6
    for name, us in timing.interleaved_us(calls, repeat=repeat).items():
        row[f"{name}_us"] = us
    peers = [row[k] for k in ("torch_us", "cupy_us") if k in row]
    row["vs_best_peer"] = min(peers) / row["ours_us"]
    row["GBps"] = nbytes / row["ours_us"] / 1e3
    row["pct_ceiling"] = 100 * row["GBps"] / ceiling
    add_cap(row, nbytes, ceiling)
    # What bounds the one-call figure: the kernel alone (replayed from a CUDA graph), and the plain
    # sum of the same array, one call and alone, in the same run.
    plain = lambda: ops.reduce_sum(x)  # noqa: E731
    row["sum_us"] = timing.median_us(plain, repeat=repeat)
    row["graph_us"] = graph_us_cupy(calls["ours"], repeat)[0]
    row["sum_graph_us"] = graph_us_cupy(plain, repeat)[0]
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return row


def run_cpu_rosenbrock() -> dict:
    """The Rosenbrock case scaled down to CPU_CASE_ELEMENTS, on the NumPy backend against NumPy."""
    x = np.random.default_rng(0).uniform(-2, 2, CPU_CASE_ELEMENTS).astype(np.float32)
    a, b = x[:-1], x[1:]
    ours = lambda: ops.reduce((a, b), axis=None, transform=ROSENBROCK)  # noqa: E731
    numpy = lambda: np.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2)  # noqa: E731
    row = {"case": f"rosenbrock->{CPU_CASE_ELEMENTS}", "op": "rosenbrock", "dtype": "float32", "MB": x.nbytes / 1e6}
    row["ok"] = bool(np.isclose(ours(), numpy(), rtol=1e-5))
    row["ours_us"] = timing.median_us_cpu(ours)
    row["numpy_us"] = timing.median_us_cpu(numpy)
    row["vs_best_peer"] = row["numpy_us"] / row["ours_us"]
    return row
