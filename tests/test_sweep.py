"""The sweep's case lists and its --kinds argument, on the CPU (the sweep itself needs a GPU)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ops import bench
from ops.bench import peers, sweep


def test_layout_cases_cover_every_kind_layout_and_proper_axis_set():
    cases = sweep.layout_cases()
    for op, dtype in sweep.LAYOUT_KINDS:
        item = np.dtype(dtype).itemsize
        for inner in sweep.LAYOUTS:
            mine = [c for c in cases if c[:2] == (op, dtype) and c[2][1:] == tuple(inner)]
            ndim = len(inner) + 1
            assert len(mine) == 2 ** ndim - 2  # every non-empty axis set but the full one
            shape = mine[0][2]
            assert sweep.SWEEP_BYTES - item * math.prod(inner) < math.prod(shape) * item <= sweep.SWEEP_BYTES
    assert {op for op, _ in sweep.LAYOUT_KINDS} <= set(peers.OPS)


def test_kinds_parse_and_bad_ones_name_the_argument():
    assert sweep.parse_kinds("sum:float16, any:bool,var:f4") == [("sum", "float16"), ("any", "bool"),
                                                                 ("var", "float32")]
    for bad in ("median:float32", "sum", "sum:float99", "sum:complex256", "sum:U3", "sum:bfloat16"):
        with pytest.raises(ValueError, match="--kinds"):
            sweep.parse_kinds(bad)
    with pytest.raises(SystemExit, match="--kinds"):
        bench.main(["--sweep", "--kinds", "median:float32"])


def test_a_measured_row_prints_as_one_line_and_a_wrong_one_says_so():
    row = {"op": "sum", "dtype": "float16", "shape": [1000, 8], "axes": [1], "ok": True,
           "ours_GBps": 2678.4, "torch_GBps": 361.2, "cupy_GBps": 3008.0}
    line = sweep.progress_line(row)
    assert line == "sum float16 (1000, 8) over (1,): 2678 GB/s, torch 361 cupy 3008"
    assert sweep.progress_line(dict(row, ok=False)).endswith(" WRONG")


def test_the_summary_counts_the_cases_at_the_share_of_their_cap():
    """BENCH.md's target for one call over 64 MB or more: `pct_ceiling` at least CAP_TARGET of
    `pct_cap`, the read-ceiling kernel over the same bytes (rows of smaller inputs carry no cap)."""
    def row(pct, cap=None):
        r = {"op": "sum", "dtype": "complex64", "shape": [1000, 8], "axes": [0], "ok": True, "vs_best_peer": 1.1,
             "pct_ceiling": pct}
        return r if cap is None else dict(r, pct_cap=cap)

    rows = [row(80.0, 88.0), row(79.0, 88.0), row(90.0, 100.0), row(5.0)]
    assert "2/3 at >= 90% of %cap (64 MB and more)" in sweep.summary(rows, 4400.0)
