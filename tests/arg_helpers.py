"""NumPy references and data for the arg-reductions, shared by the NumPy-backend tests and the GPU suite."""
from __future__ import annotations

import numpy as np

import ops
from kernels.config import normalize_axis

ARGS = {"argmax": (ops.reduce_argmax, np.argmax), "argmin": (ops.reduce_argmin, np.argmin)}


def reference(name: str, x: np.ndarray, axis, keepdims: bool = False) -> np.ndarray:
    """NumPy's argmax / argmin; for a tuple of axes, over those axes flattened in C order (ours)."""
    fn = ARGS[name][1]
    axes = normalize_axis(axis, x.ndim) if isinstance(axis, tuple) else None
    if axes is None:
        return np.asarray(fn(x, axis=axis, keepdims=keepdims))
    kept = [a for a in range(x.ndim) if a not in axes]
    flat = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
    out = fn(flat, axis=-1)
    if keepdims:
        out = out.reshape([1 if a in axes else n for a, n in enumerate(x.shape)])
    return np.asarray(out)


def data(shape, dtype, rng: np.random.Generator, nan_fraction: float = 0.0) -> np.ndarray:
    """Random values with many ties (few distinct values, so first-occurrence decides often), and
    NaN in a float array at `nan_fraction` of the places."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    values = rng.integers(-20, 21, size=shape)
    if dtype.kind == "u":
        values = values + 20
    x = (values / 4 if dtype.kind == "f" else values).astype(dtype)
    if nan_fraction and dtype.kind == "f":
        x[rng.random(shape) < nan_fraction] = np.nan
    return x
