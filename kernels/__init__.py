"""kernels: the reduce kernels (kernels/cuda), the planner (`planner`; `config` plans by keywords),
and the launcher with its plan cache. Imports `kps`, never `ops`; touches no GPU at import time."""
from .config import AxisError, Dim, ReduceConfig, normalize_axis, plan, result_shape
from .dispatch import launch_for
from .launcher import CaptureError, capturing

__all__ = ["AxisError", "CaptureError", "Dim", "ReduceConfig", "capturing", "launch_for", "normalize_axis", "plan",
           "result_shape"]
