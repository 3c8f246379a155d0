"""A named reduction's function from its entry in the table (ops/named.py): one maker per signature
kind. Each function is a few lines over `dispatch.run` (ops/dispatch.py), with its `Reduction` and
its table of prepared calls made once, here, so a repeated call costs a signature, a lookup and a
launch.

`route`: (`graph(name, x)`, `call(name, x, axis, keepdims, out, **kwargs)`) where a torch tensor's
call goes through the op's torch custom op instead (ops/torch_route.py: while torch.compile
traces it or autograd records it), or None: the eager function, which ops/torch_ops.py runs as
the custom op's implementation.
"""
from __future__ import annotations

import kps
from kps import cache, statistics

from . import gpu_backend as _gpu, looks
from .call import Reduction, check_ddof
from .dispatch import run, run_into_narrow_index, run_looked
from .gpu_backend import table as _table
from .named import Named

_SIGNATURE_DOC = ("\n\nNumPy semantics: `axis` None, an int or a tuple of ints; `keepdims`; `dtype` for the result (and"
                  " the accumulation); `out` of the result's shape.")


def _never(name, x) -> bool:
    return False


#: The route of an eager function (no custom op): ops/torch_ops.py runs these as its implementations.
EAGER = (_never, None)


def function(entry: Named, route=None):
    """`entry`'s function (`entry.kind` "sum", "plain", "ddof" or "arg"), under its public name."""
    makers = {"sum": _summed, "plain": _plain, "ddof": _ddof, "arg": _arg}
    fn, doc = makers[entry.kind](entry, route or EAGER)
    fn.__name__ = fn.__qualname__ = entry.name
    fn.__doc__ = doc
    return fn


def reduction(entry: Named, op=None, epilogue=None) -> Reduction:
    """`entry`'s Reduction (with another op or epilogue than its own: precise=True's, a ddof's)."""
    return Reduction(op or entry.op, entry.transform, epilogue or entry.epilogue, entry.look, entry.torch)


def _plain(entry: Named, route):
    """`(x, axis=None, keepdims=False, dtype=None, out=None)`."""
    graph, to_torch = route
    name, what = entry.name, reduction(entry)
    runner = _runner(what)
    table = _table(what.key)
    # numpy.nanmean of ints and bool is numpy.mean: its warning where n = 0, from the shape, even
    # where no result is NaN (the look sees NaN results only)
    means = entry.look is looks.MEAN_OF_EMPTY

    def fn(x, axis=None, keepdims=False, dtype=None, out=None):
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, out, dtype=dtype)
        result = runner(what, table, x, axis, keepdims, dtype, out)
        if means and 0 in x.shape and not looks.holds_nan(x):
            looks.warn_mean_of_empty(x, axis)
        return result

    return fn, (entry.doc + _SIGNATURE_DOC + " CuPy arrays in -> CuPy out (GPU); NumPy arrays in -> NumPy out"
                " (CPU backend).")


def _summed(entry: Named, route):
    """sum and mean: the plain signature and `precise=True` for the compensated state (kps/precise.py)."""
    graph, to_torch = route
    name, what = entry.name, reduction(entry)
    compensated = reduction(entry, entry.precise_op, entry.precise_epilogue)
    table, precise_table = _table(what.key), _table(compensated.key)
    means = entry.epilogue is kps.MEAN  # numpy.mean's warning where nothing is reduced

    def fn(x, axis=None, keepdims=False, dtype=None, out=None, precise=False):
        if type(x) is not _gpu.ndarray and graph(name, x):  # precise=True too: the plain op's gradient
            return to_torch(name, x, axis, keepdims, out, dtype=dtype, precise=_check_precise(precise))
        if precise is True:
            result = run(compensated, precise_table, x, axis, keepdims, dtype, out)
        else:
            if precise is not False:
                _check_precise(precise)
            result = run(what, table, x, axis, keepdims, dtype, out)
        if means and 0 in x.shape:  # (a containment test: the hot path pays tens of nanoseconds)
            looks.warn_mean_of_empty(x, axis)
        return result

    return fn, (entry.doc + _SIGNATURE_DOC + " `precise=True` accumulates floats in float64 with compensation"
                " (Neumaier) in every thread and every merge: float32 results are the correctly rounded sum where"
                " the data cancel or mix magnitudes.")


def _check_precise(precise) -> bool:
    """`precise`, a bool, or a TypeError."""
    if precise is not False and precise is not True:
        raise TypeError(f"precise: expected a bool, got {precise!r}")
    return precise


def _ddof(entry: Named, route):
    """A Welford state's `(x, axis=None, keepdims=False, dtype=None, out=None, ddof=0)`: the epilogue
    `entry.epilogue(ddof, x)` picks, each one's Reduction made once. NumPy's warnings: numpy.var's
    where ddof >= n (decided from the shape: `looks.warn_few_degrees`), the entry's look (nanvar's)
    where a result is NaN."""
    graph, to_torch = route
    name, epilogue_for = entry.name, entry.epilogue
    made = cache.Lru()  # epilogue -> (its Reduction, its prepared calls, its runner, numpy.var's warning)

    def fn(x, axis=None, keepdims=False, dtype=None, out=None, ddof=0):
        ddof = check_ddof(ddof)
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, out, dtype=dtype, ddof=ddof)
        epilogue = epilogue_for(ddof, x)
        try:
            what, table, runner, clamped = made[epilogue]
        except KeyError:
            what, table, runner, clamped = made.put(epilogue, _ddof_variant(entry, epilogue, ddof))
        result = runner(what, table if out is None else None, x, axis, keepdims, dtype, out)
        if clamped:
            looks.warn_few_degrees(x, axis, ddof)
        return result

    return fn, entry.doc


def with_table(what: Reduction) -> tuple:
    """A Reduction and its table of prepared calls, for a function that keeps the two together: the
    table is then its own, whatever the shared table of tables drops (ops/dispatch.py)."""
    return what, _table(what.key)


def _ddof_variant(entry: Named, epilogue, ddof) -> tuple:
    """What `_ddof`'s function keeps for one epilogue: its Reduction and table (`with_table`), its
    runner, and whether it takes numpy.var's warning."""
    what = ddof_reduction(entry, epilogue, ddof)
    return with_table(what) + (_runner(what), statistics.clamps_dof(epilogue))


def _runner(what: Reduction):
    """`dispatch.run`, or `dispatch.run_looked` for a Reduction with a look."""
    return run if what.look is None else run_looked


def ddof_reduction(entry: Named, epilogue, ddof) -> Reduction:
    """`entry`'s Reduction with a ddof's epilogue. The entry's look (nanvar's warning where n - ddof
    <= 0 gave NaN) only for ddof >= 0: a negative (or NaN) ddof never leaves n - ddof <= 0, and
    numpy.nanvar then never warns, though a slice of NaN (or of inf) still gives NaN. Nor where the
    epilogue is numpy.var's (nanvar of ints and bool): its warning comes from the shape, once."""
    look = None
    if entry.look is not None and ddof >= 0 and not statistics.clamps_dof(epilogue):
        look = entry.look.for_ddof(ddof)  # (nanvar's counts against this ddof)
    return Reduction(entry.op, entry.transform, epilogue, look, entry.torch)


def _arg(entry: Named, route):
    """An arg-reduction: `(x, axis=None, keepdims=False, out=None)`, int64 indices."""
    graph, to_torch = route
    name, what = entry.name, reduction(entry)
    runner = _runner(what)
    # (an all-NaN slice's marker index does not survive a cast into a narrower out=)
    into = run_into_narrow_index if what.look is looks.ALL_NAN_RAISES else runner
    table = _table(what.key)

    def fn(x, axis=None, keepdims=False, out=None):
        if type(x) is not _gpu.ndarray and graph(name, x):
            return to_torch(name, x, axis, keepdims, out)
        if out is None:
            return runner(what, table, x, axis, keepdims, None, None)
        return into(what, table, x, axis, keepdims, None, out)

    return fn, entry.doc
