"""kernels: the reduce kernels (kernels/cuda), the planner (`config`), and the launcher with its
plan cache. Imports `kps`, never `ops`; touches no GPU at import time."""
from .config import AxisError, Dim, ReduceConfig, normalize_axis, plan, result_shape
from .dispatch import launch_for

__all__ = ["AxisError", "Dim", "ReduceConfig", "launch_for", "normalize_axis", "plan", "result_shape"]
