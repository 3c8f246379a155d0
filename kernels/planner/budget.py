"""The launcher's knobs on a plan: the compiled kernel's occupancy, the lighter tiles it retries
with where a bounded state tile spills (`lighter`), and the bounds it tries where an unbounded
kernel's registers leave few blocks resident (`raised_bounds`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional, Tuple

from .. import policy
from .plans import ReduceConfig


@dataclass(frozen=True)
class Budget:
    """`blocks_per_sm`: the compiled kernel's resident blocks per SM, when known (0: the policy's
    estimate). `tile_elements`: ReduceOuter's aligned tile and ReduceInner's take rows only up to
    this many elements a thread (rows x vector width, one row at least; 0: MAX_TILE_ELEMENTS;
    columns off the 16-byte grid keep their element-wise tile). `min_blocks`: the launch bound of a
    plan (`min_blocks_or`): None the policy's for its kind, 0 none, k that bound (planner.lighter's,
    or a raised one: `raised_bounds`)."""

    blocks_per_sm: int = 0
    tile_elements: int = 0
    min_blocks: Optional[int] = None

    def min_blocks_or(self, policy_bound: int) -> int:
        """The launch bound of a plan whose kind the policy bounds to `policy_bound` resident blocks
        an SM (0 where it takes none): the budget's where it has one."""
        return policy_bound if self.min_blocks is None else self.min_blocks

    def resident(self, sm_count: int, tuning) -> int:
        """Resident blocks over the GPU: one full wave."""
        return sm_count * (self.blocks_per_sm or tuning.BLOCKS_PER_SM)

    def split_target(self, sm_count: int, tuning, per_sm: int = 0) -> int:
        """The grid splits fill up to: SPLIT_BLOCKS_PER_SM (or `per_sm`) a SM, at most the resident."""
        return sm_count * min(per_sm or tuning.SPLIT_BLOCKS_PER_SM, self.blocks_per_sm or tuning.BLOCKS_PER_SM)

    def tile_rows(self, vec: int, tuning, rows: Optional[int] = None, elements: int = 0) -> int:
        """Loads in flight per thread for a vector width: `rows` (MAX_TILE_ROWS unless given), at
        most the budget's tile elements (`elements`, or MAX_TILE_ELEMENTS, unless the budget has its own)."""
        most = self.tile_elements or elements or tuning.MAX_TILE_ELEMENTS
        return max(1, min(rows or tuning.MAX_TILE_ROWS, most // vec))


def lighter(make: Callable[[Budget], ReduceConfig], cfg: ReduceConfig, budget: Budget, local_bytes: int,
            tuning=policy) -> Optional[Tuple[Budget, ReduceConfig]]:
    """The budget to try after `budget`, whose plan `cfg` is bounded by the policy and whose kernel
    takes `local_bytes` of local memory a thread (its stack and spills), and the plan `make` makes
    of it; None where `cfg` stays. A state's rows bounded above INNER_SPILL_MIN_BLOCKS that spill
    at all: that bound. Then, over BOUNDED_MAX_LOCAL_BYTES: half the tile's elements; where the
    tile cannot shrink (one row, or columns off the 16-byte grid), a heavy state's columns planned
    with no bound (whole tile), and None for rows (their bound stays)."""
    if cfg.kernel == "inner" and local_bytes > 0 and cfg.min_blocks > tuning.INNER_SPILL_MIN_BLOCKS:
        fewer = replace(budget, min_blocks=tuning.INNER_SPILL_MIN_BLOCKS)
        return fewer, make(fewer)
    if local_bytes <= tuning.BOUNDED_MAX_LOCAL_BYTES:
        return None
    half = replace(budget, tile_elements=cfg.vec * cfg.ny // 2)
    smaller = make(half)
    if smaller.ny < cfg.ny:
        return half, smaller
    if cfg.kernel != "outer":
        return None
    plain = replace(budget, min_blocks=0, tile_elements=0)
    return plain, make(plain)


def raised_bounds(cfg: ReduceConfig, budget: Budget, occupancy: int, tuning=policy) -> Tuple[int, ...]:
    """The launch bounds to compile `cfg` with, highest first, where its kernel, planned with no
    bound by the policy and by `budget`, allows only `occupancy` resident blocks an SM: from
    RAISED_MIN_BLOCKS down to one block more than that. The launcher keeps the first that spills
    nothing and adds blocks (a bound that spills costs more than the blocks it adds: docs/tuning.md),
    else `cfg`."""
    if cfg.bounded or budget.min_blocks is not None:
        return ()
    return tuple(range(tuning.RAISED_MIN_BLOCKS, occupancy, -1))


def at_occupancy(make: Callable[[Budget], ReduceConfig], cfg: ReduceConfig, budget: Budget,
                 occupancy: int) -> ReduceConfig:
    """The plan `make` makes of `budget`, whose plan is `cfg`, with its kernel's real `occupancy`
    (so a split grid fills the GPU in one wave). A bound the budget holds for `cfg`'s kernel does
    not pass to another: where the occupancy changes the kernel, it takes the policy's bound."""
    again = make(replace(budget, blocks_per_sm=occupancy))
    if again.kernel != cfg.kernel and budget.min_blocks is not None:
        again = make(replace(budget, blocks_per_sm=occupancy, min_blocks=None))
    return again
