"""`python -m ops.bench --accuracy`: the accuracy cases of the sums (data where a float32 sum loses
digits), the correctly rounded answer (math.fsum of the exact values, rounded once to the input's
float type), and the table of this project's plain and precise sums against torch's and CuPy's."""
from __future__ import annotations

import math

import numpy as np

from ops import interop


def accuracy_cases(n: int = 1 << 16, seed: int = 0):
    """name -> (float32 or float16 array, the reduced axis or None)."""
    rng = np.random.default_rng(seed)
    half = rng.standard_normal(n // 2).astype(np.float32)
    cancel = np.concatenate([half, -half, np.float32([1e-3, 2.5e-4])])
    rng.shuffle(cancel)
    # 1e8, u, -1e8, u, ...: each small value lost beside a large one in float32
    mixed = np.where(np.arange(n) % 2 == 0, np.float32(1e8), rng.uniform(0, 1, n).astype(np.float32)).astype(np.float32)
    mixed[2::4] *= -1
    return {
        "normal": (rng.standard_normal(n).astype(np.float32), None),
        "uniform_columns": (rng.uniform(0, 1, (n // 64, 64)).astype(np.float32), 0),
        "mixed_magnitudes": (mixed, None),
        "cancellation": (cancel, None),
        "long_columns": (rng.standard_normal((n, 4)).astype(np.float32) + 1e3, 0),
        "float16": (rng.standard_normal(n).astype(np.float16), None),
    }


def correctly_rounded(x: np.ndarray, axis) -> np.ndarray:
    """math.fsum (exact, rounded once to float64) of each output, rounded to x's float type."""
    x64 = np.moveaxis(x.astype(np.float64), axis if axis is not None else 0, -1) if axis is not None else x.astype(np.float64).reshape(1, -1)
    sums = np.array([math.fsum(row) for row in x64.reshape(-1, x64.shape[-1])]).reshape(x64.shape[:-1])
    sums = sums.astype(x.dtype)
    return sums if axis is not None else sums.reshape(())


def ulps(got, expect) -> np.ndarray:
    """Distance in units in the last place of the expected value's type."""
    got, expect = np.asarray(got, dtype=expect.dtype), np.asarray(expect)
    return np.abs(got.astype(np.float64) - expect.astype(np.float64)) / np.spacing(np.abs(expect)).astype(np.float64)


def table(rows) -> str:
    """Relative error and ulps per case and implementation."""
    impls = [k for k in rows[0] if k not in ("case", "shape")]
    head = f"{'case':18} {'shape':>14}" + "".join(f" | {k:>20}" for k in impls)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['case']:18} {r['shape']:>14}" + "".join(
            f" | {r[k][0]:9.1e} {r[k][1]:7.0f}ulp" if r[k] is not None else f" | {'-':>20}" for k in impls))
    return "\n".join(lines)


def run(gpu: bool, n: int = 1 << 22):
    """One row per case: (relative error, ulps) of each implementation on the case's data."""
    import ops

    rows = []
    for name, (x, axis) in accuracy_cases(n).items():
        expect = correctly_rounded(x, axis)
        calls = {"plain": lambda a: ops.reduce_sum(a, axis=axis), "precise": lambda a: ops.reduce_sum(a, axis=axis, precise=True)}
        data = x
        if gpu:
            import cupy

            data = cupy.asarray(x)
            calls["cupy"] = lambda a: cupy.sum(a, axis=axis)
            try:
                import torch

                t = torch.from_dlpack(data)
                calls["torch"] = lambda a: torch.sum(t, dim=axis) if axis is not None else torch.sum(t)
            except ImportError:
                pass
        else:
            calls["numpy"] = lambda a: np.sum(a, axis=axis)
        row = {"case": name, "shape": "x".join(map(str, x.shape))}
        e64 = expect.astype(np.float64)
        for k, fn in calls.items():
            got = fn(data)
            got = interop.to_numpy(got)
            rel = float(np.max(np.abs(got.astype(np.float64) - e64) / np.maximum(np.abs(e64), np.finfo(np.float64).tiny)))
            row[k] = (rel, float(ulps(got, expect).max()))
        rows.append(row)
    return rows
