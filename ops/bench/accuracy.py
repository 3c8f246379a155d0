"""`python -m ops.bench --accuracy`: the sums' accuracy on data kinds where a float sum loses digits,
each laid out as one whole sum, rows, wide columns and narrow columns; the correctly rounded answer
(math.fsum of the exact values, rounded once to the input's float type); and the table of this
project's plain and precise sums against torch's and CuPy's (NumPy's without a GPU)."""
from __future__ import annotations

import math

import numpy as np

from ops import interop


def _cancelling(rng, m, k, scale=1.0):
    """Each row: values and their negatives, shuffled, and two small ones the sum is left with."""
    half = (rng.standard_normal((m, (k - 2) // 2)) * scale).astype(np.float32)
    rows = np.concatenate([half, -half, rng.uniform(1e-4, 1e-3, (m, k - 2 * half.shape[1])).astype(np.float32)], axis=1)
    return rng.permuted(rows, axis=1)


def _mixed(rng, m, k):
    """1e8, u, -1e8, u, ...: each small value lost beside a large one in float32."""
    x = rng.uniform(0, 1, (m, k)).astype(np.float32)
    x[:, 0::2] = 1e8
    x[:, 2::4] *= -1
    return x


def _large_cancelling_small(rng, m, k):
    """Large values of both signs (up to ~1e6) that cancel, mixed with as many small ones."""
    large = _cancelling(rng, m, k // 2, scale=1e6)
    small = rng.standard_normal((m, k - k // 2)).astype(np.float32)
    return rng.permuted(np.concatenate([large, small], axis=1), axis=1)


#: Data kinds: (rng, outputs, length) -> float array of one row per output.
KINDS = {
    "uniform": lambda rng, m, k: rng.uniform(0, 1, (m, k)).astype(np.float32),
    "normal": lambda rng, m, k: rng.standard_normal((m, k)).astype(np.float32),
    "cancelling": _cancelling,
    "mixed_magnitudes": _mixed,
    "large_cancel_small": _large_cancelling_small,
    "float16": lambda rng, m, k: rng.standard_normal((m, k)).astype(np.float16),
}

#: Layouts: name -> outputs (0: one whole sum), and whether an output is a column (axis 0) or a row.
LAYOUTS = {"whole": (0, False), "rows": (64, False), "columns": (64, True), "narrow_columns": (4, True)}


def accuracy_cases(n: int = 1 << 16, seed: int = 0):
    """"kind/layout" -> (array of n elements, the reduced axis or None)."""
    rng = np.random.default_rng(seed)
    cases = {}
    for kind, make in KINDS.items():
        for layout, (outputs, columns) in LAYOUTS.items():
            data = make(rng, max(outputs, 1), n // max(outputs, 1))
            if outputs == 0:
                cases[f"{kind}/{layout}"] = (data.reshape(-1), None)
            else:
                cases[f"{kind}/{layout}"] = (np.ascontiguousarray(data.T), 0) if columns else (data, 1)
    return cases


def exact_sums(x: np.ndarray, axis) -> np.ndarray:
    """math.fsum of each output: the exact sum, rounded once to float64."""
    rows = x.astype(np.float64).reshape(1, -1) if axis is None else np.moveaxis(x.astype(np.float64), axis, -1)
    sums = np.array([math.fsum(row) for row in rows.reshape(-1, rows.shape[-1])]).reshape(rows.shape[:-1])
    return sums.reshape(()) if axis is None else sums


def correctly_rounded(x: np.ndarray, axis) -> np.ndarray:
    """The exact sum of each output (`exact_sums`), rounded to x's float type."""
    return exact_sums(x, axis).astype(x.dtype)


def ulps(got, expect) -> np.ndarray:
    """Distance in units in the last place of the expected value's type."""
    got, expect = np.asarray(got, dtype=expect.dtype), np.asarray(expect)
    return np.abs(got.astype(np.float64) - expect.astype(np.float64)) / np.spacing(np.abs(expect)).astype(np.float64)


PEERS = ("torch", "cupy", "numpy")


def table(rows) -> str:
    """The worst ulps per case and implementation, the best peer's, and whether the plain sum is at
    or below it."""
    impls = [k for k in rows[0] if k not in ("case", "shape", "best_peer", "ok")]
    head = f"{'case':32} {'shape':>13}" + "".join(f" | {k:>9}" for k in impls) + " | best peer | plain <= best"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['case']:32} {r['shape']:>13}" + "".join(f" | {r[k][1]:9.3g}" for k in impls)
                     + f" | {r['best_peer']:9.3g} | {'yes' if r['ok'] else 'NO'}")
    return "\n".join(lines)


def _calls(gpu: bool, axis):
    """implementation -> function of the data (as the implementation takes it)."""
    import ops

    calls = {"plain": lambda a: ops.reduce_sum(a, axis=axis), "precise": lambda a: ops.reduce_sum(a, axis=axis, precise=True)}
    if not gpu:
        calls["numpy"] = lambda a: np.sum(a, axis=axis)
        return calls
    import cupy

    calls["cupy"] = lambda a: cupy.sum(a, axis=axis)
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the environment
        return calls
    calls["torch"] = lambda a: torch.sum(torch.from_dlpack(a), dim=axis) if axis is not None else torch.sum(torch.from_dlpack(a))
    return calls


def run(gpu: bool, n: int = 1 << 22):
    """One row per case: (relative error, ulps) of each implementation, worst over the outputs."""
    rows = []
    for name, (x, axis) in accuracy_cases(n).items():
        expect = correctly_rounded(x, axis)
        data = x
        if gpu:
            import cupy

            data = cupy.asarray(x)
        row = {"case": name, "shape": "x".join(map(str, x.shape))}
        e64 = expect.astype(np.float64)
        for k, fn in _calls(gpu, axis).items():
            got = interop.to_numpy(fn(data))
            rel = float(np.max(np.abs(got.astype(np.float64) - e64) / np.maximum(np.abs(e64), np.finfo(np.float64).tiny)))
            row[k] = (rel, float(ulps(got, expect).max()))
        row["best_peer"] = min(row[k][1] for k in PEERS if k in row)
        row["ok"] = row["plain"][1] <= row["best_peer"]
        rows.append(row)
    return rows
