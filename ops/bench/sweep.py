"""`python -m ops.bench --sweep`: speed on the shapes the public cases leave out, against the peers.

Two families, each timed against torch and CuPy in the same run (GB/s = input + output bytes over
the time of one call, CUDA events, median, as in the public table):
- widths: (N, W) arrays of about 256 MB for every W from 1 to 64 and odd widths up to 9,999,
  reduced over axis 0 (columns) and axis 1 (rows): float32, float16, complex64 and complex128 sums,
  bool `any`;
- layouts: 3-d and 4-d arrays of about 256 MB whose dims are short or odd, reduced over every
  proper combination of axes: float32 and float16 sums, bool `any`, float32 and complex64 `var` (a
  state; complex: real variances of complex128 sums) and complex128 `prod`.
`kinds` (`--kinds` on the command line) picks the (op, dtype) pairs of both families.
Every result is checked against a float64 reference computed on the GPU. `--plot FILE.png` draws
GB/s against W for this project and each peer, one panel per (op, dtype, axis).
"""
from __future__ import annotations

import itertools
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from kps import dtypes

from . import timing
from .cases import add_cap, make_input, time_against_peers
from .peers import OPS, check_result

#: Every width from 1 to 64, then odd ones (and 2^k - 1) up to about 10,000, and float32 rows of 33 and 65
#: aligned vectors (132, 260), where a step of lanes once left half its loads idle.
WIDTHS = list(range(1, 65)) + [65, 99, 127, 132, 255, 257, 260, 511, 1001, 1023, 2047, 4095, 9999]

#: (op, dtype) pairs of the width family.
KINDS = [("sum", "float32"), ("sum", "float16"), ("any", "bool"), ("sum", "complex64"), ("sum", "complex128")]

#: Bytes of every input (rounded down to whole rows).
SWEEP_BYTES = 256 << 20

#: The inner dims of the layout family (N is chosen for SWEEP_BYTES): short, odd and mixed runs, a
#: short reduced middle axis under a wide kept one, batch-norm planes of 7 x 7, and narrow columns
#: over two to twelve rows (ReduceOuter's tile is deeper than they are: staged or not).
LAYOUTS = [(7, 11), (3, 5), (16, 3), (33, 7), (5, 129), (7, 2048), (3, 7, 5), (64, 7, 7), (5, 9, 33),
           (2, 128), (3, 33), (3, 256), (12, 512)]

#: (op, dtype) pairs of the layout family.
LAYOUT_KINDS = [("sum", "float32"), ("sum", "float16"), ("any", "bool"), ("var", "float32"), ("var", "complex64"),
                ("prod", "complex128")]

#: Share of the read ceiling every case of the sweep should reach (widths of 2 and more).
TARGET = 0.85

#: Share of `%cap` (the read-ceiling kernel over the same bytes, timed as one call is: cases.add_cap)
#: every case of 64 MB and more should reach (BENCH.md's target for one call).
CAP_TARGET = 0.90

#: A call slower than this is timed fewer times (CuPy's narrow column sums take tens of ms).
SLOW_CALL_MS = 3.0


def _sized(inner: Sequence[int], dtype: str) -> Tuple[int, ...]:
    """(N,) + inner with N the most rows of `inner` that SWEEP_BYTES of `dtype` hold."""
    return (SWEEP_BYTES // (np.dtype(dtype).itemsize * math.prod(inner)),) + tuple(inner)


def width_cases(widths: Sequence[int] = WIDTHS, kinds=KINDS) -> List[Tuple[str, str, Tuple[int, ...], Tuple[int, ...]]]:
    """(op, dtype, shape, axes) of the width family."""
    return [(op, dtype, _sized((w,), dtype), (axis,)) for op, dtype in kinds for w in widths for axis in (0, 1)]


def layout_cases(layouts=LAYOUTS, kinds=LAYOUT_KINDS) -> List[Tuple[str, str, Tuple[int, ...], Tuple[int, ...]]]:
    """(op, dtype, shape, axes) of the layout family: every non-empty axis subset but the full one
    (a full reduction is the same flat walk whatever the shape)."""
    cases = []
    for op, dtype in kinds:
        for inner in layouts:
            shape = _sized(inner, dtype)
            for r in range(1, len(shape)):
                for axes in itertools.combinations(range(len(shape)), r):
                    cases.append((op, dtype, shape, axes))
    return cases


def parse_kinds(text: str) -> List[Tuple[str, str]]:
    """'sum:float16,any:bool' -> [("sum", "float16"), ("any", "bool")] (dtypes by their NumPy names); a
    pair the sweep cannot run (an unknown op, a dtype this project does not reduce, bfloat16, which
    CuPy arrays do not hold) is a ValueError naming the argument."""
    kinds = []
    for part in text.split(","):
        op, _, name = part.strip().partition(":")
        if op not in OPS:
            raise ValueError(f"--kinds: unknown op {op!r} in {part!r}; known: {sorted(OPS)}")
        try:
            dtype = dtypes.check_dtype(name, "--kinds")
        except TypeError as err:
            raise ValueError(str(err)) from None
        if dtype.name == "bfloat16":
            raise ValueError(f"--kinds: {part!r}: the sweep reads CuPy arrays, which hold no bfloat16")
        kinds.append((op, dtype.name))
    return kinds


def measure(op: str, dtype: str, shape, axes, ceiling: float, repeat: int = 30) -> dict:
    """One case: this project and the peers, GB/s and the check."""
    import cupy

    x = make_input(shape, np.dtype(dtype), cupy)
    n_out = math.prod(n for i, n in enumerate(shape) if i not in axes)
    nbytes = (x.size + n_out) * x.itemsize
    row = {"op": op, "dtype": dtype, "shape": list(shape), "axes": list(axes), "MB": nbytes / 1e6}
    row["ok"] = check_result(OPS[op][0](x, axis=axes), x, op, axes, on_gpu=True)
    time_against_peers(row, op, x, axes, nbytes, ceiling, repeat, slow_ms=SLOW_CALL_MS)
    add_cap(row, nbytes, ceiling)
    for name in ("ours", "torch", "cupy"):
        if f"{name}_us" in row:
            row[f"{name}_GBps"] = nbytes / row[f"{name}_us"] / 1e3
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return row


def _cell(row: Optional[dict]) -> str:
    if row is None:
        return " " * 27
    flag = "" if row["ok"] else " WRONG"
    mark = "<" if row["vs_best_peer"] < 1 else " "
    return (f"{row['ours_GBps']:>6.0f}{mark}{row.get('torch_GBps', float('nan')):>6.0f}"
            f"{row.get('cupy_GBps', float('nan')):>6.0f}{row['pct_ceiling']:>6.0f}%{flag}")


def width_table(rows: List[dict]) -> str:
    """One block per (op, dtype): W, then for each axis this project / torch / cupy GB/s and this
    project's % of the ceiling; '<' marks a cell behind the best peer."""
    out = []
    by_key: Dict[tuple, dict] = {(r["op"], r["dtype"], r["shape"][1], r["axes"][0]): r for r in rows}
    for op, dtype in dict.fromkeys((r["op"], r["dtype"]) for r in rows):
        out.append(f"{op} {dtype}: GB/s this / torch / cupy, % of ceiling ('<': behind the best peer)")
        out.append(f"{'W':>6}  {'axis 0 (columns)':<27}  {'axis 1 (rows)':<27}")
        for w in sorted({r["shape"][1] for r in rows if (r["op"], r["dtype"]) == (op, dtype)}):
            out.append(f"{w:>6}  {_cell(by_key.get((op, dtype, w, 0)))}  {_cell(by_key.get((op, dtype, w, 1)))}")
    return "\n".join(out)


def layout_table(rows: List[dict]) -> str:
    w = max([len(r["op"]) for r in rows] + [2]) + 1
    out = [f"{'op':<{w}}{'dtype':<9}{'shape':<26}{'axes':<14}{'this':>7} {'torch':>6}{'cupy':>6}{'%ceil':>7}  (GB/s)"]
    for r in rows:
        out.append(f"{r['op']:<{w}}{r['dtype']:<9}{'x'.join(map(str, r['shape'])):<26}{str(tuple(r['axes'])):<14}"
                   f"{_cell(r)}")
    return "\n".join(out)


def summary(rows: List[dict], ceiling: float) -> str:
    behind = [r for r in rows if r["vs_best_peer"] < 1]
    counted = [r for r in rows if not (len(r["shape"]) == 2 and r["shape"][1] < 2)]
    low = [r for r in counted if r["pct_ceiling"] < 100 * TARGET]
    capped = [r for r in rows if "pct_cap" in r]
    at_cap = [r for r in capped if r["pct_ceiling"] >= CAP_TARGET * r["pct_cap"]]
    wrong = sum(not r["ok"] for r in rows)
    return (f"sweep: {len(rows) - len(behind)}/{len(rows)} cases at or faster than the best peer; "
            f"{len(counted) - len(low)}/{len(counted)} at >= {TARGET:.0%} of the ceiling (W >= 2); "
            f"{len(at_cap)}/{len(capped)} at >= {CAP_TARGET:.0%} of %cap (64 MB and more); "
            f"{wrong} wrong results; ceiling {ceiling:.0f} GB/s")


def plot(rows: List[dict], ceiling: float, path: str) -> None:
    """GB/s against W (log scale), one panel per (op, dtype, axis): this project, torch, cupy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    widths = [r for r in rows if len(r["shape"]) == 2]
    panels = list(dict.fromkeys((r["op"], r["dtype"], r["axes"][0]) for r in widths))
    ncols = 2
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig, axs = plt.subplots(nrows, ncols, figsize=(12, 3.4 * nrows), squeeze=False)
    for ax, (op, dtype, axis) in zip(axs.flat, panels):
        sel = sorted((r for r in widths if (r["op"], r["dtype"], r["axes"][0]) == (op, dtype, axis)),
                     key=lambda r: r["shape"][1])
        w = [r["shape"][1] for r in sel]
        for name, style in (("ours", "-o"), ("torch", "-s"), ("cupy", "-^")):
            ax.plot(w, [r.get(f"{name}_GBps", float("nan")) for r in sel], style, markersize=2.5, linewidth=1,
                    label="this project" if name == "ours" else name)
        ax.axhline(ceiling, color="k", linestyle="--", linewidth=0.8, label="read ceiling")
        ax.axhline(ceiling * TARGET, color="grey", linestyle=":", linewidth=0.8, label=f"{TARGET:.0%} of it")
        ax.set_xscale("log")
        ax.set_ylim(0, ceiling * 1.1)
        ax.set_title(f"{op} {dtype}, axis {axis} ({'columns' if axis == 0 else 'rows'}) of (N, W), ~256 MB",
                     fontsize=9)
        ax.set_xlabel("W")
        ax.set_ylabel("GB/s")
    for ax in list(axs.flat)[len(panels):]:
        ax.axis("off")
    axs.flat[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _warm(case) -> None:
    """Compile (into the disk cache) what one case needs: run in a worker process."""
    import cupy

    op, dtype, shape, axes = case
    OPS[op][0](cupy.empty(shape, dtype=dtype), axis=axes)
    cupy.cuda.Device().synchronize()


def warm(cases, workers: int = 0) -> None:
    """Compile every kernel the cases need in parallel processes, before timing any of them."""
    import multiprocessing
    import os

    with multiprocessing.get_context("spawn").Pool(workers or os.cpu_count() or 1) as pool:
        pool.map(_warm, cases, chunksize=1)


def run(widths: Sequence[int] = WIDTHS, layouts: bool = True, repeat: int = 30, kinds=None, on_row=None):
    """Measure both families (`kinds`: the (op, dtype) pairs of both; None: KINDS for the widths,
    LAYOUT_KINDS for the layouts); returns (rows, ceiling). `on_row(rows, ceiling)` after each row,
    so a sweep cut short still leaves what it measured."""
    ceiling = timing.read_ceiling_gbps()
    cases = (width_cases(widths, kinds or KINDS)
             + (layout_cases(kinds=kinds or LAYOUT_KINDS) if layouts else []))
    print(f"sweep: {len(cases)} cases; compiling their kernels first", flush=True)
    warm(cases)
    rows = []
    for op, dtype, shape, axes in cases:
        rows.append(measure(op, dtype, shape, axes, ceiling, repeat))
        if on_row:
            on_row(rows, ceiling)
    return rows, ceiling


def progress_line(row: dict) -> str:
    """One measured row as a line: op, dtype, shape, axes, GB/s of this project and the peers."""
    peers = " ".join(f"{name} {row[name + '_GBps']:.0f}" for name in ("torch", "cupy") if name + "_GBps" in row)
    return (f"{row['op']} {row['dtype']} {tuple(row['shape'])} over {tuple(row['axes'])}: "
            f"{row.get('ours_GBps', float('nan')):.0f} GB/s, {peers}{'' if row['ok'] else ' WRONG'}")


def parse_widths(text: str) -> List[int]:
    """'1-64,65,127' -> [1, ..., 64, 65, 127]."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out
