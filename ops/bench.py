"""`python -m ops.bench`: this project against cupy.sum and torch.sum on the public cases.

On a GPU: every case in bench_cases.json (or --case NAME, or --shape/--axis/--dtype), timed with
CUDA events in one process, with the read ceiling measured in the same run; GB/s = (input + output
bytes) / time. Without a GPU it says so first and runs the NumPy backend on scaled-down cases
against NumPy, so the command works on any machine.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

import kps
import ops

from . import interop, timing

CASES_FILE = Path(__file__).with_name("bench_cases.json")

def _reduced_last(x, axes, permute):
    """`x` with the reduced axes moved last and flattened into one: how NumPy, CuPy and torch users
    take an argmax over several axes (a copy unless the axes are already last)."""
    kept = [a for a in range(x.ndim) if a not in axes]
    return permute(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])


def _arg_peer(name: str):
    def call(xp, x, axes):
        return getattr(xp, name)(_reduced_last(x, axes, xp.transpose), axis=-1)
    return call


def _arg_torch(name: str):
    def call(torch, t, axes):
        return getattr(torch, name)(_reduced_last(t, axes, lambda a, p: a.permute(*p)), dim=-1)
    return call


def _logsumexp_peer(xp, x, axes):
    """What a NumPy or CuPy user writes: the maximum, then the log of the sum of shifted exps."""
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    return xp.squeeze(xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m, axis=axes)


#: op name -> (our function, the NumPy/CuPy function: its name, or a callable (xp, x, axes); the
#: torch function: its name, a callable (torch, t, axes), or None)
OPS = {
    "sum": (ops.reduce_sum, "sum", "sum"),
    "sum_precise": (functools.partial(ops.reduce_sum, precise=True), "sum", "sum"),
    "mean": (ops.reduce_mean, "mean", "mean"),
    "max": (ops.reduce_max, "max", "amax"),
    "min": (ops.reduce_min, "min", "amin"),
    "prod": (ops.reduce_prod, "prod", None),
    "all": (ops.reduce_all, "all", "all"),
    "any": (ops.reduce_any, "any", "any"),
    "argmax": (ops.reduce_argmax, _arg_peer("argmax"), _arg_torch("argmax")),
    "argmin": (ops.reduce_argmin, _arg_peer("argmin"), _arg_torch("argmin")),
    "var": (ops.reduce_var, "var", lambda torch, t, axes: torch.var(t, dim=axes, correction=0)),
    "std": (ops.reduce_std, "std", lambda torch, t, axes: torch.std(t, dim=axes, correction=0)),
    "logsumexp": (ops.reduce_logsumexp, _logsumexp_peer, "logsumexp"),
    "mean_var": (ops.reduce_mean_var, lambda xp, x, axes: (xp.mean(x, axis=axes), xp.var(x, axis=axes)),
                 lambda torch, t, axes: torch.var_mean(t, dim=axes, correction=0)),
    "nansum": (ops.reduce_nansum, "nansum", "nansum"),
    "nanmean": (ops.reduce_nanmean, "nanmean", "nanmean"),
    "nanmax": (ops.reduce_nanmax, "nanmax", None),
    "nanvar": (ops.reduce_nanvar, "nanvar", None),
    "nanargmax": (ops.reduce_nanargmax, _arg_peer("nanargmax"), None),
    "count_nonzero": (ops.count_nonzero, "count_nonzero", "count_nonzero"),
    "ptp": (ops.reduce_ptp, "ptp", None),
    "norm": (ops.reduce_norm, lambda xp, x, axes: xp.sqrt(xp.sum(x * x, axis=axes)),
             lambda torch, t, axes: torch.linalg.vector_norm(t, dim=axes)),
    "minmax": (ops.reduce_minmax, lambda xp, x, axes: (xp.min(x, axis=axes), xp.max(x, axis=axes)),
               lambda torch, t, axes: (torch.aminmax(t, dim=axes[0]) if len(axes) == 1
                                       else (torch.amin(t, dim=axes), torch.amax(t, dim=axes)))),
}

#: An op's plain twin (the same reduction without NaN skipping or compensation), timed in the same
#: rounds, so the table shows what the feature costs (`vs plain`: the twin's time over ours).
PLAIN_TWINS = {"sum_precise": "sum", "nansum": "sum", "nanmean": "mean", "nanmax": "max", "nanvar": "var",
               "nanargmax": "argmax"}

#: Ops whose result is an index or a count: compared exactly.
INDEX_OPS = ("argmax", "argmin", "nanargmax", "count_nonzero")


def numpy_call(op: str, xp, x, axes):
    """The NumPy (xp=numpy) or CuPy (xp=cupy) equivalent of `op` on `x`."""
    fn = OPS[op][1]
    return fn(xp, x, axes) if callable(fn) else getattr(xp, fn)(x, axis=axes)

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
    torch = _torch()
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
    _add_cap(row, nbytes, ceiling)
    # What bounds the one-call figure: the kernel alone (replayed from a CUDA graph), and the plain
    # sum of the same array, one call and alone, in the same run.
    plain = lambda: ops.reduce_sum(x)  # noqa: E731
    row["sum_us"] = timing.median_us(plain, repeat=repeat)
    row["graph_us"] = graph_us_cupy(calls["ours"], repeat)[0]
    row["sum_graph_us"] = graph_us_cupy(plain, repeat)[0]
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return row


#: Largest input of the CPU fallback's scaled-down cases (elements).
CPU_CASE_ELEMENTS = 1 << 20


@dataclass
class Case:
    name: str
    shape: Tuple[int, ...]
    axis: Optional[Tuple[int, ...]]
    dtype: str = "float32"
    peer_us: Dict[str, float] = field(default_factory=dict)

    @property
    def axes(self) -> Tuple[int, ...]:
        return tuple(range(len(self.shape))) if self.axis is None else self.axis

    def nbytes(self, dtype=None) -> int:
        """Bytes a reduction must move: the input read once, the output written once."""
        item = np.dtype(dtype or self.dtype).itemsize
        n_in = math.prod(self.shape)
        n_out = math.prod(n for i, n in enumerate(self.shape) if i not in self.axes)
        return (n_in + n_out) * item


def load_cases() -> List[Case]:
    raw = json.loads(CASES_FILE.read_text())["cases"]
    out = []
    for c in raw:
        axis = c["axis"]
        axis = None if axis is None else tuple(axis) if isinstance(axis, list) else (axis,)
        out.append(Case(c["name"], tuple(c["shape"]), axis, c["dtype"], c.get("peer_us", {})))
    return out


def make_input(shape, dtype, xp, seed: int = 0):
    """Fresh random data of `dtype` (normal floats, small ints, ~half-true bools); never zeros."""
    dtype = np.dtype(dtype)
    rng = xp.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape, dtype=np.float32) > 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 8, size=shape).astype(dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


def peer_calls(op: str, x, axes):
    """name -> zero-argument callable, for the peers that run this op on `x` (a CuPy array: cupy,
    and torch if installed; a torch tensor: torch)."""
    import cupy

    torch_fn = OPS[op][2]
    calls = {}
    if isinstance(x, cupy.ndarray):
        calls["cupy"] = lambda: numpy_call(op, cupy, x, axes)
    torch = _torch()
    if torch is not None and torch_fn is not None:
        t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
        if callable(torch_fn):
            calls["torch"] = lambda: torch_fn(torch, t, axes)
        else:
            fn = getattr(torch, torch_fn)
            calls["torch"] = lambda: fn(t, dim=axes)
    return calls


def _host64(a) -> np.ndarray:
    """float64 host copy of a NumPy or CuPy array or a torch tensor (bool stays bool)."""
    h = interop.to_numpy(a)
    return h if h.dtype == np.bool_ else h.astype(np.float64)


def check_result(result, x, op: str, axes, on_gpu: bool = False) -> bool:
    """Our result against a float64 reference (a benchmark of a wrong kernel means nothing), computed
    by NumPy, or with `on_gpu` by CuPy on the GPU (quick enough for the sweep's 256 MB inputs)."""
    if on_gpu:
        import cupy

        ref = numpy_call(op, cupy, x if x.dtype == np.bool_ else x.astype(cupy.float64), axes)
        ref = tuple(map(cupy.asnumpy, ref)) if isinstance(ref, tuple) else cupy.asnumpy(ref)
    else:
        ref = numpy_call(op, np, _host64(x), axes)
    if isinstance(result, tuple):  # several results (mean and variance): side by side
        result, ref = np.stack([_host64(r) for r in result]), np.stack(ref)
    if op in INDEX_OPS:  # float64 keeps every order and tie of the input's values
        return bool(np.array_equal(_host64(result), ref))
    tol = 2e-2 if str(x.dtype) in ("float16", "torch.bfloat16", "torch.float16") else 1e-4
    size = math.prod(x.shape)
    return bool(np.allclose(_host64(result), ref, rtol=tol, atol=tol * math.sqrt(size / max(ref.size, 1))))


def _torch_bfloat16_input(shape):
    torch = _torch()
    if torch is None:
        return None
    return torch.randn(shape, device="cuda", dtype=torch.bfloat16)


def time_against_peers(row: dict, op: str, x, axes, nbytes: int, ceiling: float, repeat: int = 30,
                       slow_ms: float = 0.0) -> None:
    """Fill `row` with the median time of this project's call and each peer's (`ours_us`,
    `torch_us`, `cupy_us`), timed in interleaved rounds, the best peer's time over ours and our
    share of the ceiling."""
    ours = OPS[op][0]
    calls = {"ours": lambda: ours(x, axis=axes), **peer_calls(op, x, axes)}
    if op in PLAIN_TWINS:
        plain = OPS[PLAIN_TWINS[op]][0]
        calls["plain"] = lambda: plain(x, axis=axes)
    for name, us in timing.interleaved_us(calls, repeat=repeat, slow_ms=slow_ms).items():
        row[f"{name}_us"] = us
    peers = [row[k] for k in ("torch_us", "cupy_us") if k in row]
    row["vs_best_peer"] = min(peers) / row["ours_us"] if peers else float("nan")
    if "plain_us" in row:
        row["vs_plain"] = row["plain_us"] / row["ours_us"]
    row["pct_ceiling"] = 100 * nbytes / row["ours_us"] / 1e3 / ceiling


#: Cases of at least this many bytes (past the 50 MB L2) also show `pct_cap`: the read-ceiling kernel
#: itself over their bytes, timed as every call here (events around one call, host dispatch
#: included), in % of the ceiling: the most one call over that many bytes can show. (H100: 75.6% at
#: the 102.8 MB of nchw_stats, 95.1% at 360 MB, 100.2% at 1 GiB.)
CAP_MIN_BYTES = 64 << 20


def _add_cap(row: dict, nbytes: int, ceiling: float) -> None:
    """`row["pct_cap"]` for an input of at least CAP_MIN_BYTES (see there)."""
    if nbytes >= CAP_MIN_BYTES:
        row["pct_cap"] = 100 * timing.read_ceiling_gbps(nbytes) / ceiling


def run_gpu_case(case: Case, op: str, ceiling: float, dtype=None, repeat: int = 30) -> Optional[dict]:
    import cupy

    name = dtype or case.dtype
    if name == "bfloat16":  # no CuPy dtype: a torch tensor, against torch alone
        x = _torch_bfloat16_input(case.shape)
        if x is None:
            return None
        itemsize = 2
    else:
        x = make_input(case.shape, np.dtype(name), cupy)
        itemsize = x.dtype.itemsize
    ours = OPS[op][0]
    axes = case.axes
    nbytes = case.nbytes(np.dtype(f"u{itemsize}"))
    row = {"case": case.name, "op": op, "dtype": name, "MB": nbytes / 1e6}
    row["ok"] = check_result(ours(x, axis=axes), x, op, axes, on_gpu=isinstance(x, cupy.ndarray))
    time_against_peers(row, op, x, axes, nbytes, ceiling, repeat)
    row["GBps"] = nbytes / row["ours_us"] / 1e3
    _add_cap(row, nbytes, ceiling)
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return row


def run_cpu_case(case: Case, op: str, dtype=None) -> dict:
    shape = list(case.shape)
    while math.prod(shape) > CPU_CASE_ELEMENTS:
        shape[shape.index(max(shape))] //= 2
    small = Case(case.name, tuple(shape), case.axis, case.dtype)
    dtype = np.dtype(dtype or case.dtype)
    x = make_input(small.shape, dtype, np)
    ours = OPS[op][0]
    axes = small.axes
    ref = numpy_call(op, np, x, axes)
    row = {"case": f"{case.name}->{'x'.join(map(str, shape))}", "op": op, "dtype": dtype.name,
           "MB": small.nbytes(dtype) / 1e6}
    row["ok"] = bool(np.allclose(ours(x, axis=axes), ref, rtol=1e-3, atol=1e-3))
    row["ours_us"] = timing.median_us_cpu(lambda: ours(x, axis=axes))
    row["numpy_us"] = timing.median_us_cpu(lambda: numpy_call(op, np, x, axes))
    row["vs_best_peer"] = row["numpy_us"] / row["ours_us"]
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


def _table(rows: List[dict], gpu: bool) -> str:
    plain = gpu and any("vs_plain" in r for r in rows)
    if gpu:
        head = (f"{'case':<26}{'MB':>8}{'ours us':>10}{'GB/s':>8}{'%ceil':>7}{'%cap':>7}{'torch us':>10}{'cupy us':>10}"
                f"{'vs best':>9}" + (f"{'vs plain':>10}" if plain else "") + "  ok")
    else:
        head = f"{'case':<40}{'MB':>8}{'ours us':>10}{'numpy us':>10}{'vs numpy':>9}  ok"
    lines = [head]
    for r in rows:
        ok = "yes" if r["ok"] else "NO"
        if gpu:
            lines.append(
                f"{r['case']:<26}{r['MB']:>8.1f}{r['ours_us']:>10.1f}{r['GBps']:>8.0f}{r['pct_ceiling']:>6.1f}%"
                + (f"{r['pct_cap']:>6.1f}%" if "pct_cap" in r else f"{'':>7}") +
                f"{r.get('torch_us', float('nan')):>10.1f}{r.get('cupy_us', float('nan')):>10.1f}{r['vs_best_peer']:>8.2f}x"
                + (f"{r.get('vs_plain', float('nan')):>9.2f}x" if plain else "") + f"  {ok}"
            )
        else:
            lines.append(f"{r['case']:<40}{r['MB']:>8.2f}{r['ours_us']:>10.1f}{r['numpy_us']:>10.1f}"
                         f"{r['vs_best_peer']:>8.2f}x  {ok}")
    return "\n".join(lines)


def plot(rows: List[dict], ceiling: Optional[float], path: str) -> None:
    """Bars per case: this project, torch and cupy in GB/s (NumPy on the CPU backend), the read
    ceiling as a line. Small cases are drawn too, though dispatch, not bandwidth, rules them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["case"] for r in rows]
    series = [("ours", "ours_us"), ("torch", "torch_us"), ("cupy", "cupy_us"), ("numpy", "numpy_us")]
    series = [(label, key) for label, key in series if any(key in r for r in rows)]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    for i, (label, key) in enumerate(series):
        gbps = [r["MB"] * 1e3 / r[key] if r.get(key) else 0.0 for r in rows]
        ax.bar([j + i * width for j in range(len(rows))], gbps, width, label=label)
    if ceiling:
        ax.axhline(ceiling, color="k", linestyle="--", linewidth=1, label=f"read ceiling {ceiling:.0f} GB/s")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("GB/s (input + output bytes / time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


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
                        "float16 sums and bool any, and 3-d/4-d layouts over every axis set (ops/sweep.py); "
                        "--plot then draws GB/s against W")
    p.add_argument("--widths", help="the sweep's widths, e.g. 1-64,127,1001 (default: 1-64 and 11 odd ones up to 9999)")
    p.add_argument("--no-layouts", action="store_true", help="the sweep without its 3-d/4-d layouts")
    p.add_argument("--no-widths", action="store_true", help="the sweep without its (N, W) widths: the layouts alone")
    p.add_argument("--kinds", help="the sweep's op:dtype pairs for both families, e.g. sum:float16,any:bool "
                                   "(default: float32 and float16 sums and bool any for the widths, and float32 "
                                   "var too for the layouts)")
    p.add_argument("--accuracy", action="store_true",
                   help="the sums' accuracy table: plain and precise=True against torch and CuPy (relative error, ulps)")
    p.add_argument("--dask", action="store_true",
                   help="dask arrays bigger than one GPU's memory, generated block by block, on 1 and on every GPU "
                        "(dask-cuda's LocalCUDACluster), against dask's own reductions (without a GPU: NumPy blocks "
                        "on CPU worker processes, scaled down)")
    p.add_argument("--dask-gb", type=float, help="--dask: the array's size in GB (default: 2x one GPU's memory; "
                                                 "1 GB without a GPU)")
    p.add_argument("--graph", action="store_true",
                   help="the small cases as direct calls and replayed from CUDA graphs (per reduction), against "
                        "torch.sum captured the same way")
    p.add_argument("--rosenbrock", action="store_true",
                   help="the named transform-reduce case: the Rosenbrock cost of 90M float32 values, one pass over "
                        "x[:-1] and x[1:] (GB/s counts the input once), against CuPy and torch")
    return p.parse_args(argv)


#: The cases whose time is mostly launch and host work: timed replayed from CUDA graphs too.
GRAPH_CASES = ("tiny_32x32", "small_1024x1024_ax0", "small_1024x1024_ax1")
#: Reductions one captured graph holds (the per-reduction time is the replay's over this).
GRAPH_CALLS = 20


def graph_us_cupy(fn, repeat: int = 30) -> Tuple[float, object]:
    """Per-call time of `fn` replayed from a CUDA graph of GRAPH_CALLS calls captured on a CuPy
    stream (warmed up on that stream first), and the last call's result."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fn()
        stream.synchronize()
        stream.begin_capture()
        outs = [fn() for _ in range(GRAPH_CALLS)]
        graph = stream.end_capture()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()

        def replay_ms():
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end)

        return _per_call_us(replay_ms, repeat), outs[-1]


def graph_us_torch(torch, fn, repeat: int = 30) -> float:
    """The same for a torch call, captured with torch.cuda.graph (the anchor)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for _ in range(GRAPH_CALLS):
            fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay_ms():
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    return _per_call_us(replay_ms, repeat)


def _per_call_us(replay_ms, repeat: int) -> float:
    """Per reduction, in microseconds: the median of `repeat` timed replays (`replay_ms`: one
    replay of a graph of GRAPH_CALLS reductions, in ms) after three warm-ups."""
    times = [replay_ms() for _ in range(repeat + 3)][3:]
    return statistics.median(times) * 1e3 / GRAPH_CALLS


def main_graph(args) -> int:
    """The small cases timed as direct calls and replayed from CUDA graphs, this project's sum and
    torch.sum, per reduction."""
    if not timing.gpu_available():
        print("no GPU: CUDA graphs need one")
        return 0
    import cupy

    torch = _torch()
    rows = []
    for case in (c for c in load_cases() if c.name in GRAPH_CASES):
        x = make_input(case.shape, case.dtype, cupy)
        axes = case.axes
        row = {"case": case.name, "direct_us": timing.median_us(lambda: ops.reduce_sum(x, axis=axes), repeat=args.repeat)}
        row["graph_us"], replayed = graph_us_cupy(lambda: ops.reduce_sum(x, axis=axes), args.repeat)
        row["ok"] = bool(cupy.array_equal(replayed, ops.reduce_sum(x, axis=axes)))
        if torch is not None:
            t = torch.from_dlpack(x)
            row["torch_direct_us"] = timing.median_us(lambda: torch.sum(t, dim=axes), repeat=args.repeat)
            row["torch_graph_us"] = graph_us_torch(torch, lambda: torch.sum(t, dim=axes), args.repeat)
        rows.append(row)
    print(f"{'case':<24}{'ours us':>9}{'graph us':>10}{'torch us':>10}{'torch graph us':>16}  ok")
    for r in rows:
        print(f"{r['case']:<24}{r['direct_us']:>9.2f}{r['graph_us']:>10.2f}{r.get('torch_direct_us', float('nan')):>10.2f}"
              f"{r.get('torch_graph_us', float('nan')):>16.2f}  {'yes' if r['ok'] else 'NO'}")
    print(f"summary: per reduction, CUDA events; a graph replays {GRAPH_CALLS} reductions")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


def main_dask(args) -> int:
    """The --dask table (ops/dask_bench.py)."""
    from . import dask_bench

    gpu = timing.gpu_available()
    if gpu:
        import cupy

        gpus = cupy.cuda.runtime.getDeviceCount()
        total = int((args.dask_gb or 2 * cupy.cuda.Device(0).mem_info[1] / 1e9) * 1e9)
        counts, block = sorted({1, gpus}), 1 << 30
        print(f"GPU: dask arrays of {total / 1e9:.0f} GB in 1 GB blocks on {counts} GPU(s)", flush=True)
    else:
        total, counts, block = int((args.dask_gb or 1) * 1e9), [1, 2], 64 << 20
        print(f"no GPU: NumPy blocks on CPU worker processes, {total / 1e9:.1f} GB in 64 MB blocks", flush=True)
    rows = dask_bench.run(counts, total, block, gpu, repeat=2)  # the first run warms the workers up
    print(dask_bench.table(rows, gpu))
    if gpu:
        alone = dask_bench.in_memory(block)
        print("one in-memory 1 GB block on one GPU: " + ", ".join(f"{k} {v:.0f} GB/s" for k, v in alone.items()))
    faster = sum(o["s"] <= t["s"] for o, t in zip(rows[::2], rows[1::2]))
    print(f"summary: {faster}/{len(rows) // 2} reductions at or faster than dask's own; "
          f"{sum(not r['ok'] for r in rows[::2])} wrong results")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
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
    rows, ceiling = sweep.run(widths, layouts=not args.no_layouts, repeat=args.repeat, kinds=kinds)
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


def select_cases(args) -> List[Case]:
    if args.shape:
        shape = tuple(int(s) for s in args.shape.split(","))
        axis = None if args.axis is None else tuple(int(a) for a in args.axis.split(","))
        return [Case("custom", shape, axis, args.dtype or "float32")]
    cases = load_cases()
    if args.case:
        unknown = set(args.case) - {c.name for c in cases}
        if unknown:
            raise SystemExit(f"--case: unknown case(s) {sorted(unknown)}; known: {[c.name for c in cases]}")
        cases = [c for c in cases if c.name in args.case]
    return cases


def main_accuracy(args) -> int:
    """The sums against the correctly rounded answer: this project's plain and precise sums, and
    torch's and CuPy's on a GPU (NumPy's without one). Fails where precise=True misses by > 1 ulp."""
    from . import accuracy

    gpu = timing.gpu_available()
    print(("GPU" if gpu else "no GPU: the NumPy backend against NumPy") + ": sums against the correctly rounded"
          " answer (relative error, ulps of the input's float type)", flush=True)
    rows = accuracy.run(gpu, n=(1 << 22) if gpu else (1 << 18))
    print(accuracy.table(rows))
    worst = max(r["precise"][1] for r in rows)
    print(f"summary: precise=True within {worst:.0f} ulp of the correctly rounded sum on {len(rows)} cases")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if worst <= 1 else 1


def main(argv=None) -> int:
    args = _parse(argv)
    if args.sweep:
        return main_sweep(args)
    if args.accuracy:
        return main_accuracy(args)
    if args.graph:
        return main_graph(args)
    if args.dask:
        return main_dask(args)
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
        elif not args.case and not args.shape and _torch() is not None:
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
    print(_table(rows, gpu))
    faster = sum(r["vs_best_peer"] >= 1.0 for r in rows)
    wrong = sum(not r["ok"] for r in rows)
    print(f"summary: {faster}/{len(rows)} cases at or faster than the best peer; {wrong} wrong results"
          + (f"; ceiling {ceiling:.0f} GB/s" if ceiling else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"ceiling_GBps": ceiling, "rows": rows}, indent=1))
    if args.plot:
        plot(rows, ceiling, args.plot)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
