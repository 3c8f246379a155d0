"""Bounded caches: every table the layers keep per call signature (plans and launches, prepared
calls, split workspaces) is an `Lru`, so a program whose shapes keep changing (variable sequence
lengths, a server) holds at most `limit()` entries in each, the least recently used dropped first.

Compiled programs are not kept here: they are keyed by what the kernel source depends on (the
functors, the dtypes and the kernel variant), never by a shape, so they stay few (kps/compiler.py).

The limit is `KPS_CACHE_ENTRIES` from the environment (default `DEFAULT_LIMIT`), or `set_limit(n)`
at run time; a smaller limit takes effect at the next insertion into each cache.

A process forked after it used the GPU inherits CUDA handles that are dead in the child (CUDA does
not survive fork()). Tables holding such handles are marked `device_state`: a forked child empties
them (keeping what they held unreleased, since releasing calls into CUDA) and `check_process()`
then refuses GPU work with a clear error, while NumPy arrays keep working, as CuPy's own arrays
fail in such a child.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

#: Entries per cache: a launch or a prepared call is a few kilobytes of host memory (a packed
#: parameter struct, a closure), so this many cost a few megabytes and cover any program that
#: repeats a working set of shapes.
DEFAULT_LIMIT = 4096

_limit = int(os.environ.get("KPS_CACHE_ENTRIES", DEFAULT_LIMIT))
_lock = threading.Lock()


def limit() -> int:
    """The most entries each cache keeps."""
    return _limit


def set_limit(entries: int) -> None:
    """Bound every cache to `entries` (at least 1) from its next insertion on."""
    global _limit
    if isinstance(entries, bool) or not isinstance(entries, int) or entries < 1:
        raise ValueError(f"entries: expected a positive int, got {entries!r}")
    _limit = entries


_device_tables = weakref.WeakValueDictionary()  # id -> table
_inherited = []  # what a forked child found in its device tables: never released
_forked_after_gpu = False


def device_state(table: "Lru") -> "Lru":
    """Mark `table` as holding CUDA handles of this process (launches, modules, prepared calls,
    workspaces): a forked child empties it. Returns the table."""
    _device_tables[id(table)] = table
    return table


def check_process() -> None:
    """Raise RuntimeError in a process forked after its parent used the GPU through these tables."""
    if _forked_after_gpu:
        raise RuntimeError("x: this process was forked after its parent ran GPU reductions, and CUDA does not "
                           "survive fork(); start workers with multiprocessing's 'spawn' or 'forkserver' method "
                           "(NumPy arrays still reduce here, on the CPU)")


def _forget_device_state_in_child() -> None:
    global _lock, _forked_after_gpu
    _lock = threading.Lock()  # another thread may have held it at the fork
    for table in list(_device_tables.values()):
        if table:
            _forked_after_gpu = True
            _inherited.append(dict(table))
            OrderedDict.clear(table)


os.register_at_fork(after_in_child=_forget_device_state_in_child)


class Lru(OrderedDict):
    """A dict of at most `limit()` entries. A reader that finds an entry marks it used with
    `move_to_end(key)` (a C call: the hot path stays a lookup); `put` inserts and drops the least
    recently used entries beyond the limit. Safe to share between threads: a reader whose entry
    another thread dropped in between just misses."""

    def put(self, key, value, replace: bool = False):
        """Insert and return the kept value: the entry already there, as dict.setdefault, unless
        `replace`."""
        with _lock:
            if replace:
                self[key] = value
            else:
                value = self.setdefault(key, value)
            self.move_to_end(key)
            while len(self) > _limit:
                self.popitem(last=False)
        return value

    def touch(self, key) -> None:
        """Mark `key` used, if it is still here."""
        try:
            self.move_to_end(key)
        except KeyError:
            pass
