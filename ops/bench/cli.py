"""`python -m ops.bench`: this project against cupy.sum and torch.sum on the public cases.

On a GPU: every case in bench_cases.json (or --case NAME, or --shape/--axis/--dtype), timed with
CUDA events in one process, with the read ceiling measured in the same run; GB/s = (input + output
bytes) / time. Without a GPU it says so first and runs the NumPy backend on scaled-down cases
against NumPy, so the command works on any machine.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import timing
from .cases import Case, run_cpu_case, run_gpu_case, select_cases, table
from .graphs import main_graph
from .peers import OPS, cuda_torch
from .plots import plot
from .rosenbrock import run_cpu_rosenbrock, run_rosenbrock


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m ops.bench", description=__doc__.splitlines()[0])
    p.add_argument("--case", action="append", help="run only this public case (repeatable)")
    p.add_argument("--shape", help="a custom case: comma-separated shape, e.g. 4096,1024")
    p.add_argument("--axis", help="custom case axes, comma-separated (default: all)")
    p.add_argument("--dtype", help="override the dtype (default: the case's)")
    p.add_argument("--op", default="sum", choices=sorted(OPS))
    p.add_argument("--repeat", type=int, default=30, help="timed calls per measurement (median)")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="also draw a bar chart of GB/s per case (needs matplotlib)")
    p.add_argument("--sweep", action="store_true",
                   help="instead of the public cases: GB/s against width of (N, W) arrays, both axes, float32 and "
                        "float16 sums and bool any, and 3-d/4-d layouts over every axis set (ops/bench/sweep.py); "
                        "--plot then draws GB/s against W")
    p.add_argument("--widths", help="the sweep's widths, e.g. 1-64,127,1001 (default: 1-64, 11 odd ones up to 9999, and 132 and 260)")
    p.add_argument("--no-layouts", action="store_true", help="the sweep without its 3-d/4-d layouts")
    p.add_argument("--no-widths", action="store_true", help="the sweep without its (N, W) widths: the layouts alone")
    p.add_argument("--kinds", help="the sweep's op:dtype pairs for both families, e.g. sum:float16,any:bool "
                                   "(default: float32 and float16 sums and bool any for the widths, and float32 "
                                   "var too for the layouts)")
    p.add_argument("--accuracy", action="store_true",
                   help="the sums' accuracy table: plain and precise=True against torch and CuPy (relative error, ulps)")
    p.add_argument("--dask", action="store_true",
                   help="dask arrays bigger than the GPUs' memory, generated block by block, on 1, 2 and 4 GPUs "
                        "(dask-cuda's LocalCUDACluster), against dask's own reductions (without a GPU: NumPy blocks "
                        "on CPU worker processes, scaled down)")
    p.add_argument("--dask-gb", type=float, help="--dask: the array's size in GB (default: four times the memory of "
                                                 "all the GPUs of the largest row; 1 GB without a GPU)")
    p.add_argument("--dask-block-gb", type=float, help="--dask: a block's size in GiB (default: about an eighth of one "
                                                       "GPU's memory, a power of two; 1/16 without a GPU)")
    p.add_argument("--graph", action="store_true",
                   help="the small cases as direct calls and replayed from CUDA graphs (per reduction), against "
                        "torch.sum captured the same way")
    p.add_argument("--rosenbrock", action="store_true",
                   help="the named transform-reduce case: the Rosenbrock cost of 90M float32 values, one pass over "
                        "x[:-1] and x[1:] (GB/s counts the input once), against CuPy and torch")
    p.add_argument("--ab", metavar="PATH", type=Path,
                   help="A/B: this tree against the checkout at PATH, each timing the same cases in processes of "
                        "its own, in turns (ops/bench/ab.py)")
    p.add_argument("--ab-rounds", type=int, default=2, help="--ab: timed rounds of each tree after the warm-up")
    p.add_argument("--ab-cases", metavar="FILE", type=Path,
                   help="--ab: time these cases instead, a JSON list of [name, op, shape, axes, dtype]")
    p.add_argument("--torch", action="store_true",
                   help="what a torch user pays (GPU): small calls on a CuPy array and a torch tensor against "
                        "torch.sum and an empty launch; the backward of sum, mean and var against torch's own")
    return p.parse_args(argv)


def main_ab(args) -> int:
    """The --ab table (ab.py)."""
    from . import ab

    gpu = timing.gpu_available()
    print(("GPU" if gpu else "no GPU: the NumPy backend, scaled-down cases") + f": A/B against {args.ab}, "
          f"{args.ab_rounds} rounds after a warm-up", flush=True)
    todo = ab.read_cases(args.ab_cases) if args.ab_cases else None
    rows = ab.run(args.ab, gpu, args.ab_rounds, args.repeat, todo)
    print(ab.table(rows, args.ab))
    both = ab.timed(rows)
    if both:
        worst = max(both, key=lambda r: r["ratio"])
        print(f"summary: {sum(r['ratio'] <= 1.02 for r in both)}/{len(both)} cases within 2% or faster; slowest "
              f"{worst['case']} at {worst['ratio']:.3f}x; {len(rows) - len(both)} refused by a tree")
    else:
        print(f"summary: no case timed by both trees; {len(rows)} refused by a tree")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def main_torch(args) -> int:
    """The --torch tables (torch_bench.py): a GPU and torch, or nothing to measure."""
    from . import torch_bench

    if not timing.gpu_available() or cuda_torch() is None:
        print("--torch: needs a GPU and torch with CUDA; nothing measured")
        return 0
    small, back = torch_bench.small_calls(), torch_bench.backward()
    print(torch_bench.small_table(small))
    print(torch_bench.backward_table(back))
    worst = max(r["torch in"] - r["cupy in"] for r in small)
    behind = [r for r in small if r["torch in"] > r["torch.sum"]]
    print(f"summary: torch in at most {worst:+.2f} us over CuPy in; {len(small) - len(behind)}/{len(small)} small"
          f" calls at or ahead of torch.sum; backward at or ahead of torch's on"
          f" {sum(r['vs_torch'] >= 1 for r in back)}/{len(back)}; a bare Python node's sum backward at"
          f" {min(r['floor_vs_torch'] for r in back if 'floor_vs_torch' in r):.3f}x-"
          f"{max(r['floor_vs_torch'] for r in back if 'floor_vs_torch' in r):.3f}x of torch's")
    if args.json:
        Path(args.json).write_text(json.dumps({"small": small, "backward": back}, indent=1))
    return 0


def main_dask(args) -> int:
    """The --dask table (dask_bench.py)."""
    from . import dask_bench

    gpu = timing.gpu_available()
    if gpu:
        import cupy

        devices, device_bytes = cupy.cuda.runtime.getDeviceCount(), cupy.cuda.Device(0).mem_info[1]
        p = dask_bench.plan(devices, device_bytes, args.dask_gb, args.dask_block_gb)
        print(f"GPU: dask arrays of {p.describe('GPU')}", flush=True)
    else:
        total = args.dask_gb or 1
        p = dask_bench.plan(2, 0, total, args.dask_block_gb or min(1 / 16, total / 4))
        print(f"no GPU: NumPy blocks on CPU worker processes, {p.describe('worker')}", flush=True)
    rows = dask_bench.run(p, gpu)
    alone = dask_bench.in_memory(p.block_bytes) if gpu else None
    dask_bench.derive(rows, alone)
    print(dask_bench.table(rows, gpu))
    if alone:
        print(f"one in-memory block of {p.block_bytes / 2**30:g} GiB on one GPU: "
              + ", ".join(f"{k} {v:.0f} GB/s" for k, v in alone.items()))
    faster = sum(o["s"] <= t["s"] for o, t in zip(rows[::2], rows[1::2]))
    print(f"summary: {faster}/{len(rows) // 2} reductions at or faster than dask's own; "
          f"{sum(not r['ok'] for r in rows[::2])} wrong results")
    if args.json:
        Path(args.json).write_text(json.dumps({"plan": vars(p) | {"blocks": p.blocks}, "in_memory_GBps": alone,
                                               "rows": rows}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


def main_sweep(args) -> int:
    from . import sweep

    try:
        kinds = sweep.parse_kinds(args.kinds) if args.kinds else None
    except ValueError as err:
        raise SystemExit(str(err)) from None
    if not timing.gpu_available():
        print("no GPU: the sweep measures GPU kernels against torch and CuPy and needs one")
        return 0
    widths = [] if args.no_widths else sweep.parse_widths(args.widths) if args.widths else sweep.WIDTHS

    def on_row(rows, ceiling):  # a line a row, and the JSON so far: a sweep cut short keeps both
        print(sweep.progress_line(rows[-1]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({"ceiling_GBps": ceiling, "rows": rows}, indent=1))

    rows, ceiling = sweep.run(widths, layouts=not args.no_layouts, repeat=args.repeat, kinds=kinds, on_row=on_row)
    print(f"read ceiling {ceiling:.0f} GB/s (measured now)")
    width_rows = [r for r in rows if len(r["shape"]) == 2]
    if width_rows:
        print(sweep.width_table(width_rows))
    layout_rows = [r for r in rows if len(r["shape"]) > 2]
    if layout_rows:
        print(sweep.layout_table(layout_rows))
    print(sweep.summary(rows, ceiling))
    if args.json:
        Path(args.json).write_text(json.dumps({"ceiling_GBps": ceiling, "rows": rows}, indent=1))
    if args.plot:
        if width_rows:
            sweep.plot(rows, ceiling, args.plot)
        else:
            print("--plot: it draws GB/s against W, and this sweep ran no widths")
    return 1 if any(not r["ok"] for r in rows) else 0


def main_accuracy(args) -> int:
    """The sums against the correctly rounded answer: this project's plain and precise sums, and
    torch's and CuPy's on a GPU (NumPy's without one), on every data kind and layout of
    ops/bench/accuracy.py. Fails where precise=True misses by > 1 ulp."""
    from . import accuracy

    gpu = timing.gpu_available()
    print(("GPU" if gpu else "no GPU: the NumPy backend against NumPy") + ": sums against the correctly rounded"
          " answer (relative error, ulps of the input's float type)", flush=True)
    rows = accuracy.run(gpu, n=(1 << 24) if gpu else (1 << 18))
    print(accuracy.table(rows))
    worst = max(r["precise"][1] for r in rows)
    level = sum(r["ok"] for r in rows)
    print(f"summary: plain at or below the best peer on {level} of {len(rows)} cases; precise=True within"
          f" {worst:.0f} ulp of the correctly rounded sum")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if worst <= 1 else 1


def main(argv=None) -> int:
    args = _parse(argv)
    if args.ab_cases and not args.ab:
        raise SystemExit("--ab-cases: the cases of an A/B, which --ab PATH asks for")
    for flag, mode in _MODES:
        if getattr(args, flag):
            return mode(args)
    cases = select_cases(args)
    gpu = timing.gpu_available()
    if gpu:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        ceiling = timing.read_ceiling_gbps()
        print(f"GPU: {props['name'].decode()} | read ceiling {ceiling:.0f} GB/s (measured now) | op {args.op}",
              flush=True)
        if args.rosenbrock:
            cases = []
        elif not args.case and not args.shape and cuda_torch() is not None:
            cases.append(Case("bf16_last_8192x8192", (8192, 8192), (1,), "bfloat16"))  # through torch
        rows = [r for c in cases if (r := run_gpu_case(c, args.op, ceiling, args.dtype, args.repeat))]
        if args.rosenbrock:
            rows.append(run_rosenbrock(ceiling, args.repeat))
            r = rows[-1]
            print(f"rosenbrock_90M: relative error {r['rel_err']:.2e} against float64; kernel alone (CUDA graph) "
                  f"{r['graph_us']:.1f} us, {r['MB'] / r['graph_us'] * 1e3:.0f} GB/s; the plain sum of x: one call "
                  f"{r['sum_us']:.1f} us, kernel alone {r['sum_graph_us']:.1f} us")
    else:
        ceiling = None
        print("no GPU: running the NumPy backend on scaled-down cases against NumPy (CPU backend)", flush=True)
        rows = [run_cpu_rosenbrock()] if args.rosenbrock else [run_cpu_case(c, args.op, args.dtype) for c in cases]
    print(table(rows, gpu))
    faster = sum(r["vs_best_peer"] >= 1.0 for r in rows)
    wrong = sum(not r["ok"] for r in rows)
    print(f"summary: {faster}/{len(rows)} cases at or faster than the best peer; {wrong} wrong results"
          + (f"; ceiling {ceiling:.0f} GB/s" if ceiling else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"ceiling_GBps": ceiling, "rows": rows}, indent=1))
    if args.plot:
        plot(rows, ceiling, args.plot)
    return 1 if wrong else 0


#: The flags that run a table of their own instead of the public cases, first given first.
_MODES = (("sweep", main_sweep), ("accuracy", main_accuracy), ("graph", main_graph), ("dask", main_dask),
          ("torch", main_torch), ("ab", main_ab))


if __name__ == "__main__":
    sys.exit(main())
