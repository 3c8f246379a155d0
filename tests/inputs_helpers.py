"""Transforms of several inputs, shared by the NumPy-backend tests and the GPU suite."""
from __future__ import annotations

import numpy as np

import kps
from ops.bench.rosenbrock import ROSENBROCK  # noqa: F401 - the named bench case's descriptor

SQDIST = kps.TransformOp("sqdist", "(x0 - x1) * (x0 - x1)", numpy=lambda a, b: (a - b) ** 2)
FMA = kps.TransformOp("fma3", "x0 * x1 + x2", numpy=lambda a, b, c: a * b + c)


def rosenbrock64(x: np.ndarray) -> float:
    """The Rosenbrock cost of a 1-d array in float64."""
    a, b = x[:-1].astype(np.float64), x[1:].astype(np.float64)
    return float(np.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2))


def reference(transform: kps.TransformOp, arrays, axis, op=np.sum) -> np.ndarray:
    """`op` over `axis` of the transform of the arrays, broadcast together, in float64."""
    return np.asarray(op(transform.numpy(*(np.asarray(a, dtype=np.float64) for a in arrays)), axis=axis))
