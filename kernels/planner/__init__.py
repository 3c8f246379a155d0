"""The planner: a reduction's shape, strides and axes -> which kernel, with what launch shape.

Pure Python (no CuPy), so every planning rule is unit-tested on a machine without a GPU. Rooms:

- layout.py: `Layout`, the dims as the kernels see them (merged, sorted, flipped), built once;
- traits.py: `Traits`, what the reduction is and reads (state, heavy, indexed, inputs, ...);
- budget.py: `Budget`, the launcher's knobs (occupancy, tile elements, launch bounds), and
  `lighter`, the next budget where a bounded state tile spills, and `raised_bounds`, the bounds
  to try where an unbounded kernel's registers leave few blocks resident;
- words.py: a 1-byte `any` / `all` read as uint32 words (the layout views the kernels read);
- staged.py, inner.py, outer.py: the three kernels' regimes (kernels/cuda/inner.cuh, outer.cuh, staged.cuh), each an
  `applies` / `plan` pair;
- splits.py: splits across blocks and the combine rounds of their partials;
- plans.py: `ReduceConfig`, what every launch has, and each kernel's plan (`InnerPlan`, `OuterPlan`,
  `StagedPlan` with its `Stage`), what the launcher, source.py and params.py read;
- dims.py: `Dim`, `merge` and the integer helpers.

Tuning constants live in kernels/policy.py (tests pass smaller ones to reach splits and tails with
small shapes), hardware facts in kernels/hardware.py.
"""
from __future__ import annotations

from .. import policy
from . import inner, outer, staged
from .budget import Budget, at_occupancy, lighter, raised_bounds
from .dims import INDEX32_LIMIT, Dim, merge
from .layout import AxisError, Layout, alignment, normalize_axis, result_shape
from .plans import InnerPlan, OuterPlan, ReduceConfig, Stage, StagedPlan
from .traits import Traits
from .words import reading

#: The regimes, in the order they are tried: the first that applies and finds a plan makes it
#: (ReduceStaged finds none where no span fits; ReduceInner and ReduceOuter always do).
REGIMES = (staged, inner, outer)


def plan(layout: Layout, traits: Traits, budget: Budget, sm_count: int, tuning=policy) -> ReduceConfig:
    """Plan a reduction of a non-empty input with at least one output on `sm_count` SMs: the layout
    the kernels read (`words.reading`), then the first regime that plans it. The dim with the
    smallest stride decides between ReduceInner (reduced) and ReduceOuter (kept), unless its runs
    are short, odd or misaligned and the innermost dims are contiguous: then ReduceStaged."""
    layout, traits = reading(layout, traits, tuning)
    for regime in REGIMES:
        if regime.applies(layout, traits, tuning):
            cfg = regime.plan(layout, traits, budget, sm_count, tuning)
            if cfg is not None:
                return cfg
    raise AssertionError("ReduceInner or ReduceOuter applies to every layout")


__all__ = ["INDEX32_LIMIT", "AxisError", "Budget", "Dim", "InnerPlan", "Layout", "OuterPlan", "REGIMES", "ReduceConfig",
           "Stage", "StagedPlan", "Traits", "alignment", "at_occupancy", "lighter", "merge", "normalize_axis", "plan", "raised_bounds", "result_shape"]
