"""Splits: how many blocks share one unit of work where the units alone cannot fill the GPU, and
the combine of their partials (one level, or two: groups of splits first, kps::CombineSplits)."""
from __future__ import annotations

from .dims import ceil
from .traits import Traits


#: Bytes of a complex accumulator's partials a thread of a split combine loads a round (beside the
#: kernels' kps::kComplexPartialBytes, kps/include/kps/primitives.cuh; tests/test_planner.py checks).
COMPLEX_PARTIAL_BYTES = 64


def partial_rows(traits: Traits, ny: int, vec: int) -> int:
    """Rows of partials a thread of a split combine loads a round (kps::kPartialRows, for `vec`
    accumulators a row): a scalar's tile rows (`ny`), COMPLEX_PARTIAL_BYTES of a complex number's
    (at least one row, at most `ny`), one row of a state's."""
    if traits.state:
        return 1
    if traits.complex_acc:
        return max(1, min(ny, COMPLEX_PARTIAL_BYTES // (traits.acc_itemsize * vec)))
    return ny


def choose_splits(units: int, slots: int, max_splits: int, realize, slack: float) -> int:
    """Blocks per unit of work (an output group or a column tile) when `units` alone cannot fill
    the `slots` (SMs x resident blocks). `realize(s)` is the split count a request for `s` turns
    into once rounded to whole steps. Picks the count whose grid best fills the waves it occupies
    (a grid of 1.1 waves runs as long as 2 full ones), on the fewest waves that come within `slack`
    of the best fill (more splits cost partials and a longer tail), the fewest splits on a tie,
    looking no further than about two waves."""
    fills = {}
    for s in range(1, min(max_splits, ceil(2 * slots, units)) + 1):
        real = realize(s)
        fills.setdefault(real, wave_fill(real * units, slots))
    best = max(fills.values(), default=0.0)
    waves = min((ceil(real * units, slots) for real, fill in fills.items() if fill >= best - slack), default=1)
    return max((real for real in fills if ceil(real * units, slots) == waves), key=lambda r: (fills[r], -r), default=1)


def split_group(num_splits: int, per_round: int, columns: int, tuning) -> int:
    """Splits per group of a split combine (kps::GroupOfSplit) whose one block folds `per_round`
    rows of partials a round: all of them (one level) where that takes at most SPLIT_ONE_LEVEL_ROUNDS
    rounds, where no two levels take fewer, or where the groups' counters would not fit SPLIT_COUNTERS
    over `columns` block columns; else the group that takes the fewest rounds over both levels (the
    last group's, then the groups'), the fewest groups on a tie. 0 where nothing splits."""
    if num_splits == 1:
        return 0
    one = group_rounds(num_splits, num_splits, per_round)
    if one <= tuning.SPLIT_ONE_LEVEL_ROUNDS:
        return num_splits

    def two(g: int) -> int:
        return group_rounds(num_splits, g, per_round)

    group = min(range(per_round, num_splits, per_round), key=lambda g: (two(g), -g), default=num_splits)
    if two(group) >= one or columns * (1 + ceil(num_splits, group)) > tuning.SPLIT_COUNTERS:
        return num_splits
    return group


def group_rounds(num_splits: int, group: int, per_round: int) -> int:
    """Rounds of partial loads a split combine in groups of `group` splits takes: the last group's
    rows, then (several groups) the groups' rows."""
    first = ceil(group, per_round)
    return first if group >= num_splits else first + ceil(ceil(num_splits, group), per_round)


def combine_rounds(num_splits: int, per_round: int, columns: int, tuning) -> int:
    """Rounds of partial loads the split combine of `num_splits` splits takes, in the groups
    split_group gives it (0: no split)."""
    group = split_group(num_splits, per_round, columns, tuning)
    return group_rounds(num_splits, group, per_round) if group else 0


def splits_within(rounds: int, per_round: int, columns: int, tuning) -> int:
    """The most splits whose combine takes at most `rounds` rounds: one level folds rounds x
    per_round rows; two, groups of k rounds' rows, k(rounds - k) x per_round^2 (at most 2^16)."""
    two = max((k * (rounds - k) for k in range(1, rounds)), default=0) * per_round * per_round
    most = min(max(rounds * per_round, two), 1 << 16)
    while most > rounds * per_round and combine_rounds(most, per_round, columns, tuning) > rounds:
        most = max(rounds * per_round, most * 3 // 4)  # (where the groups' counters do not fit)
    return most


def wave_fill(blocks: int, slots: int) -> float:
    """How full the waves of `blocks` over `slots` resident blocks run, on average (1: every one)."""
    return blocks / (ceil(blocks, slots) * slots)
