"""Both extremes from one read: the state (lo, hi), NaN propagating as in numpy.min / numpy.max.

Its epilogues give the range (`PEAK_TO_PEAK`, numpy.ptp: in the input's own type, so integers
wrap as NumPy's do) or both extremes as two results per output (`MIN_AND_MAX`, torch.aminmax).
"""
from __future__ import annotations

import numpy as np

from .functors import MAX, MIN, Epilogue, ReduceOp, _accumulate_same, _highest, _lowest


def _combine(a, b):
    return {"lo": MIN.numpy(a["lo"], b["lo"]), "hi": MAX.numpy(a["hi"], b["hi"])}


# each field merges as MIN and MAX do (NaN wins); an empty reduction is an error, as theirs
MINMAX = ReduceOp(
    "minmax",
    combine=("acc_t r; r.lo = (a.lo < b.lo || a.lo != a.lo) ? a.lo : b.lo;"
             " r.hi = (a.hi > b.hi || a.hi != a.hi) ? a.hi : b.hi; return r;"),
    identity=lambda dt: {"lo": _highest(dt), "hi": _lowest(dt)},
    numpy=_combine,
    accumulate=_accumulate_same,
    empty_ok=False,
    state=(("lo", "acc"), ("hi", "acc")),
    lift="acc_t r; r.lo = x; r.hi = x; return r;",
    numpy_lift=lambda x: {"lo": x, "hi": x},
)

#: max - min, cast to the output (the input's) type: integers subtract as unsigned (no signed
#: overflow) and wrap as in numpy.ptp; complex numbers subtract as complex (kps::PeakToPeak).
PEAK_TO_PEAK = Epilogue("peak_to_peak", "kps::PeakToPeak<out_t>(a.hi, a.lo)", lambda a, n: np.subtract(a["hi"], a["lo"]))

#: (min, max) of each output.
MIN_AND_MAX = Epilogue("min_and_max", ("a.lo", "a.hi"), lambda a, n: (a["lo"], a["hi"]))
