"""`python -m ops.bench --ab PATH`: a same-machine A/B of this tree against the tree at PATH (another
checkout, say `git worktree add /tmp/base <commit>`). Each tree times the same cases in a process of
its own (`PYTHONPATH` the tree), the two in turns: a warm-up round of each (compiles, discarded),
then `rounds` rounds, each tree first in every other round (the second process of a round ran 2-5%
slower over 256 MB, up to 15% over 16 MB, on the same plans: H200, 2026-11-28). Every process runs
on the same one core (`one_core`): unpinned, whichever tree ran second ran up to 30% slower on
host-bound small calls whatever its code, pinned about 10% (H200, 2026-12-01, docs/tuning.md session
23). A case's time is the best of its rounds' medians, so what drifts between processes (the host,
the clocks) falls on both. The child process uses only the public API
(`ops.reduce_<op>`) and CUDA events (a GPU) or wall time (the NumPy backend, no GPU), so any older
tree can be measured.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .cases import cpu_shape, load_cases

#: The widths of (N, W) float32 and float64 sums both ways, N x W = ELEMENTS (the sweep's odd and
#: narrow ones, and a few wide).
WIDTHS = {"float32": (1, 3, 4, 16, 64, 1001, 4096), "float64": (4, 64, 4096)}
ELEMENTS = 1 << 26
#: Other ops over rows and columns of an 8192 x 8192 float32 array.
OPS = ("mean", "nansum", "nanmean", "var")
#: States over short rows, where how many lanes share a row decides (N x W elements, W below).
#: Width 1 is a map: each output's state lifted from one element and its epilogue, nothing merged.
STATE_ROWS = {("var", "float32"): (1, 24, 48, 128, 1001), ("argmax", "float32"): (48, 128),
              ("var", "complex64"): (1, 2, 8, 33, 127)}


def cases(gpu: bool) -> List[Tuple[str, str, tuple, object, str]]:
    """(name, op, shape, axis, dtype) of every case: the public ones (bfloat16 aside: it takes torch),
    the widths, the ops and the states over short rows. Without a GPU each is cut as the CPU cases
    are (`cases.cpu_shape`)."""
    out = [(c.name, "sum", c.shape, c.axis, c.dtype) for c in load_cases() if c.dtype != "bfloat16"]
    for dtype, widths in WIDTHS.items():
        n = ELEMENTS // (2 if dtype == "float64" else 1)
        for w in widths:
            out += [(f"cols{w}_{dtype}", "sum", (n // w, w), (0,), dtype), (f"rows{w}_{dtype}", "sum", (n // w, w), (1,), dtype)]
    out += [(f"{op}_{kind}", op, (8192, 8192), (axis,), "float32") for op in OPS for kind, axis in (("rows", 1), ("cols", 0))]
    for (op, dtype), widths in STATE_ROWS.items():
        n = ELEMENTS // (2 if dtype == "complex64" else 1)
        out += [(f"{op}_rows{w}_{dtype}", op, (n // w, w), (1,), dtype) for w in widths]
    return out if gpu else [(name, op, cpu_shape(shape), axis, dtype) for name, op, shape, axis, dtype in out]


def read_cases(path: Path) -> List[Tuple[str, str, tuple, tuple, str]]:
    """The cases of `--ab-cases PATH`: a JSON list of [name, op, shape, axes, dtype] (the shape and
    axes lists of ints; axes null for every axis), timed instead of `cases`, as given (no cut for
    the NumPy backend: give small shapes there). A malformed file is a SystemExit naming it."""
    try:
        rows = json.loads(Path(path).read_text())
        out = [(str(name), str(op), tuple(int(n) for n in shape), None if axes is None else tuple(int(a) for a in axes),
                str(dtype)) for name, op, shape, axes, dtype in rows]
    except (OSError, ValueError, TypeError) as exc:
        raise SystemExit(f"--ab-cases: {path}: expected a JSON list of [name, op, shape, axes, dtype] ({exc})")
    if not out:
        raise SystemExit(f"--ab-cases: {path} lists no case")
    return out


#: What a child process runs, in the tree under test: the cases as JSON on stdin, a line of JSON a
#: case out ({"case": name, "us": median}, or {"case": name, "refused": why} where the tree raises
#: TypeError or ValueError: an older tree lacks a dtype or an op). Public API only.
CHILD = r"""
import json, statistics, sys, time
import numpy as np
import ops
cases, gpu, repeat = json.loads(sys.stdin.read())
if gpu:
    import cupy as xp
    start, end = xp.cuda.Event(), xp.cuda.Event()
else:
    xp = np
rng = xp.random.default_rng(0)  # on the GPU there: a host generator took seconds a case
for name, op, shape, axis, dtype in cases:
    x = rng.standard_normal(shape)
    x = (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)
    fn = getattr(ops, "reduce_" + op)
    axis = None if axis is None else tuple(axis)
    try:
        fn(x, axis=axis)
    except (TypeError, ValueError) as exc:
        print(json.dumps({"case": name, "refused": str(exc)[:120]}), flush=True)
        continue
    for _ in range(10):
        fn(x, axis=axis)
    times = []
    for _ in range(repeat):
        if gpu:
            start.record(); fn(x, axis=axis); end.record(); end.synchronize()
            times.append(xp.cuda.get_elapsed_time(start, end) * 1e3)
        else:
            t = time.perf_counter(); fn(x, axis=axis); times.append((time.perf_counter() - t) * 1e6)
    print(json.dumps({"case": name, "us": statistics.median(times)}), flush=True)
    del x
"""


def one_core() -> Optional[int]:
    """The core every child process runs on: the last this process may use (None where the system
    cannot pin a process)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def _child(tree: Path, todo, gpu: bool, repeat: int) -> Dict[str, float]:
    """One round of one tree, on `one_core`: case -> median us (None: the tree refused the case)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    core = one_core()
    pin = None if core is None else (lambda: os.sched_setaffinity(0, {core}))
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps([todo, gpu, repeat]), text=True,
                          capture_output=True, cwd=tree, env=env, check=False, preexec_fn=pin)
    if done.returncode:
        raise RuntimeError(f"--ab: the tree at {tree} failed:\n{done.stderr[-2000:]}")
    return {row["case"]: row.get("us") for row in map(json.loads, done.stdout.splitlines())}


def run(other: Path, gpu: bool, rounds: int = 2, repeat: int = 40, todo=None) -> List[dict]:
    """Rows of (case, A us, B us, B / A, every round's figures): A the tree at `other`, B this one. A
    case either tree refused has its figures None (`refused`: "A", "B" or "A and B")."""
    other, here = Path(other).resolve(), Path(__file__).resolve().parents[2]
    if not (other / "ops" / "__init__.py").is_file():
        raise SystemExit(f"--ab: {other} is not a checkout of this project (no ops/__init__.py)")
    todo = cases(gpu) if todo is None else todo
    samples = {"a": {}, "b": {}}
    for k in range(rounds + 1):
        turns = (("a", other), ("b", here))
        for side, tree in turns if k % 2 else turns[::-1]:  # timed rounds 1, 3, ...: A first; 2, 4, ...: B
            for name, us in _child(tree, todo, gpu, repeat).items():
                if k:  # round 0 warms up
                    samples[side].setdefault(name, []).append(us)
    rows = []
    for name, *_ in todo:
        a, b = samples["a"].get(name), samples["b"].get(name)
        if a and b and None not in a + b:
            rows.append({"case": name, "a_us": min(a), "b_us": min(b), "ratio": min(b) / min(a),
                         "a_all": a, "b_all": b})
        else:
            refused = " and ".join(s.upper() for s, got in (("a", a), ("b", b)) if not got or None in got)
            rows.append({"case": name, "a_us": None, "b_us": None, "ratio": None, "refused": refused})
    return rows


def timed(rows: List[dict]) -> List[dict]:
    """The rows both trees timed."""
    return [r for r in rows if r["ratio"] is not None]


def table(rows: List[dict], other: Path) -> str:
    head = f"{'case':28} {'A us':>10} {'B us':>10} {'B / A':>7}   A = {other}, B = this tree"
    lines = [head, "-" * len(head)]
    lines += [f"{r['case']:28} {r['a_us']:10.2f} {r['b_us']:10.2f} {r['ratio']:7.3f}" if r["ratio"] is not None
              else f"{r['case']:28} {'refused by ' + r['refused']:>30}" for r in rows]
    return "\n".join(lines)
