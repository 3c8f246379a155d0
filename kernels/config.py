"""The planner by keywords, for tests and tools that plan one case at a time:

    plan(shape, strides, axes, out_strides, itemsize, out_itemsize, sm_count, tuning=policy, **options)

builds the `Layout`, `Traits` and `Budget` of kernels/planner from the options (each the name of a
field of one of them, `indexed` that of `Layout.of`) and plans. strides/out_strides are in
elements; out_strides lists the output stride of each kept axis in order. The launcher plans
through kernels.planner itself (kernels/dispatch.py).
"""
from __future__ import annotations

from dataclasses import fields
from typing import Sequence, Tuple

from . import planner, policy
from .planner import AxisError, Budget, Dim, Layout, ReduceConfig, Traits, alignment, normalize_axis, result_shape

_LAYOUT_OPTIONS = ("indexed", "in_misalign", "out_align")
_TRAITS_OPTIONS = tuple(f.name for f in fields(Traits))
_BUDGET_OPTIONS = tuple(f.name for f in fields(Budget))


def values(shape: Sequence[int], strides: Sequence[int], axes: Sequence[int], out_strides: Sequence[int],
           itemsize: int, out_itemsize: int, **options) -> Tuple[Layout, Traits, Budget]:
    """The Layout, Traits and Budget the options describe (an unknown option is a TypeError)."""
    unknown = set(options) - set(_LAYOUT_OPTIONS + _TRAITS_OPTIONS + _BUDGET_OPTIONS)
    if unknown:
        raise TypeError(f"plan: unknown options {sorted(unknown)}")

    def pick(names):
        return {k: v for k, v in options.items() if k in names}

    layout = Layout.of(shape, strides, axes, out_strides, itemsize, out_itemsize, **pick(_LAYOUT_OPTIONS))
    return layout, Traits(**pick(_TRAITS_OPTIONS)), Budget(**pick(_BUDGET_OPTIONS))


def plan(shape: Sequence[int], strides: Sequence[int], axes: Sequence[int], out_strides: Sequence[int],
         itemsize: int, out_itemsize: int, sm_count: int, tuning=policy, **options) -> ReduceConfig:
    """Plan a reduction of a non-empty input with at least one output (kernels.planner.plan)."""
    layout, traits, budget = values(shape, strides, axes, out_strides, itemsize, out_itemsize, **options)
    return planner.plan(layout, traits, budget, sm_count, tuning)


#: The planner's names the callers of this adapter use through it (the rest: kernels.planner).
__all__ = ["AxisError", "Dim", "ReduceConfig", "alignment", "normalize_axis", "plan", "result_shape", "values"]
