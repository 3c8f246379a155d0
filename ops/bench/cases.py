"""The public cases (bench_cases.json beside this file): their inputs, one row per case timed against
the peers on a GPU (or against NumPy on the NumPy backend without one), and the table."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import timing
from .peers import OPS, PLAIN_TWINS, check_result, cuda_torch, numpy_call, peer_calls

CASES_FILE = Path(__file__).with_name("bench_cases.json")


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


def make_input(shape, dtype, xp, seed: int = 0):
    """Fresh random data of `dtype` (normal floats, small ints, ~half-true bools, complex numbers on
    the unit circle, whose products over millions stay finite); never zeros."""
    dtype = np.dtype(dtype)
    rng = xp.random.default_rng(seed)
    if dtype.kind == "c":
        return xp.exp(1j * (rng.random(shape, dtype=np.float64) * (2 * np.pi))).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape, dtype=np.float32) > 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 8, size=shape).astype(dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(dtype)


def _torch_bfloat16_input(shape):
    torch = cuda_torch()
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


def add_cap(row: dict, nbytes: int, ceiling: float) -> None:
    """`row["pct_cap"]` for an input of at least CAP_MIN_BYTES (see there)."""
    if nbytes >= CAP_MIN_BYTES:
        row["pct_cap"] = 100 * timing.cap_gbps(nbytes) / ceiling


def run_gpu_case(case: Case, op: str, ceiling: float, dtype=None, repeat: int = 30) -> Optional[dict]:
    import cupy

    name = dtype or case.dtype
    if name == "bfloat16":  # no CuPy dtype: a torch tensor, against torch alone
        x = _torch_bfloat16_input(case.shape)
        if x is None:
            return None
        dtype = np.dtype(np.uint16)  # (its itemsize)
    else:
        x = make_input(case.shape, np.dtype(name), cupy)
        dtype = x.dtype  # (a 16-byte complex128 has no unsigned integer of its size)
    ours = OPS[op][0]
    axes = case.axes
    nbytes = case.nbytes(dtype)
    row = {"case": case.name, "op": op, "dtype": name, "MB": nbytes / 1e6}
    row["ok"] = check_result(ours(x, axis=axes), x, op, axes, on_gpu=isinstance(x, cupy.ndarray))
    time_against_peers(row, op, x, axes, nbytes, ceiling, repeat)
    row["GBps"] = nbytes / row["ours_us"] / 1e3
    add_cap(row, nbytes, ceiling)
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return row


def cpu_shape(shape) -> tuple:
    """`shape` cut to at most CPU_CASE_ELEMENTS elements, its longest dim halved at a time."""
    shape = list(shape)
    while math.prod(shape) > CPU_CASE_ELEMENTS:
        shape[shape.index(max(shape))] //= 2
    return tuple(shape)


def run_cpu_case(case: Case, op: str, dtype=None) -> dict:
    shape = cpu_shape(case.shape)
    small = Case(case.name, shape, case.axis, case.dtype)
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


def table(rows: List[dict], gpu: bool) -> str:
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
