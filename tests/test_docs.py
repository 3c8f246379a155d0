"""docs/make_performance.py, on the CPU: from a tiny benchmark JSON of the rows `python -m ops.bench`
writes, it renders the per-op table with every case, a summary line, the --graph and --torch tables
and the asv summary; a missing data folder or asv folder is named in the page, not a crash."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("make_performance", ROOT / "docs" / "make_performance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(case, op="sum", ours=360.0, torch=365.0, cupy=366.0, mb=1073.7, ok=True):
    """A row as ops/bench/cases.py's run_gpu_case writes it."""
    row = {"case": case, "op": op, "dtype": "float32", "MB": mb, "ok": ok, "ours_us": ours,
           "torch_us": torch, "cupy_us": cupy, "vs_best_peer": min(torch, cupy) / ours,
           "pct_ceiling": 100 * mb / ours / 1e3 / 3000.0, "GBps": mb / ours / 1e3 * 1e3}
    if mb >= 64:
        row["pct_cap"] = 100.2
    return row


def _asv(folder: Path):
    """One asv result file of the layout asv writes (results/<machine>/<commit>-<env>.json)."""
    machine = folder / "h100"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "h100"}))
    data = {"commit_hash": "abcdef0123456789", "date": 1795700681000,
            "result_columns": ["result", "params", "version"],
            "results": {"reductions.PublicCases.track_gbps":
                        [[2980.0, 2900.0, 2950.0], [["'full_1d_256M'"], ["'kps'", "'cupy'", "'torch'"]], "v"],
                        "reductions.PercentOfCeiling.track_pct_ceiling": [[99.5], [["'full_1d_256M'"]], "v"]}}
    (machine / "abcdef01-existing-py.json").write_text(json.dumps(data))


def test_the_tables_name_every_case(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [_row("full_1d_256M"), _row("last_1Mx64", ours=102.7, torch=248.3, cupy=153.6, mb=272.6),
            _row("tiny_32x32", ours=11.8, torch=11.6, cupy=16.1, mb=0.004)]
    (data / "bench.json").write_text(json.dumps({"ceiling_GBps": 2943.0, "rows": rows}))
    (data / "bench_argmax.json").write_text(json.dumps({"ceiling_GBps": 2943.0, "rows": [_row("full_1d_256M", op="argmax")]}))
    (data / "bench_graph.json").write_text(json.dumps([{"case": "tiny_32x32", "direct_us": 11.7, "graph_us": 1.9,
                                                       "ok": True, "torch_direct_us": 12.1, "torch_graph_us": 2.3}]))
    (data / "torch.json").write_text(json.dumps({  # as ops/bench/torch_bench.py writes it
        "small": [{"case": "32x32, whole sum", "cupy in": 12.4, "torch in": 13.63, "torch.sum": 11.41, "empty launch": 7.04}],
        "backward": [{"op": "var", "shape": "4096x4096", "axis": 1, "MB": 67, "kps_us": 250.3, "torch_us": 203.6,
                      "vs_torch": 0.813},
                     {"op": "sum", "shape": "4096x4096", "axis": 1, "MB": 67, "kps_us": 98.1, "torch_us": 86.6,
                      "vs_torch": 0.883, "floor_us": 95.0, "floor_vs_torch": 0.911}]}))
    (data / "notes.json").write_text(json.dumps({"something": "else"}))
    asv = tmp_path / "results"
    _asv(asv)
    out = tmp_path / "performance.md"
    assert _generator().main(["--data", str(data), "--asv", str(asv), "--out", str(out)]) == 0
    text = out.read_text()
    for case in ("full_1d_256M", "last_1Mx64", "tiny_32x32"):
        assert f"| {case} | float32 |" in text
    assert "### `sum`" in text and "### `argmax`" in text
    assert "`sum`: 2/3 cases at or faster than the best peer; 0 wrong" in text
    assert "| tiny_32x32 | 11.70 | 1.90 |" in text            # the --graph table
    assert "| 32x32, whole sum | 12.40 | 13.63 | 11.41 | 7.04 | +1.23 us |" in text  # the --torch tables
    assert "| var | 4096x4096 | 1 | 67 | 250.3 | 203.6 | 0.813x |  |  |" in text
    assert "| sum | 4096x4096 | 1 | 67 | 98.1 | 86.6 | 0.883x | 95.0 | 0.911x |" in text  # the Python floor
    assert "`notes.json` skipped" in text
    assert "`abcdef01`" in text and "| full_1d_256M | 2980 | 2950 | 2900 | 99.5% |" in text
    assert "## How to reproduce" in text and "python3 -m ops.bench --json" in text


def test_a_missing_folder_is_reported_not_a_crash(tmp_path):
    out = tmp_path / "performance.md"
    gen = _generator()
    assert gen.main(["--data", str(tmp_path / "absent"), "--asv", str(tmp_path / "no_asv"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "No benchmark data: the folder" in text and "absent" in text
    assert "No asv results: the folder" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no JSON files" in gen.render(empty, tmp_path / "no_asv")


def test_the_committed_asv_results_render():
    text = _generator().render(ROOT / "docs" / "no-such-folder", ROOT / "asv_benches" / "results")
    assert "## Latest asv results" in text and "full_1d_256M" in text


def test_the_sweep_section_counts_the_cases_at_90_percent_of_their_cap(tmp_path):
    data = tmp_path / "data"
    data.mkdir()

    def row(w, axis, pct, cap):
        return {"op": "sum", "dtype": "complex64", "shape": [1000, w], "axes": [axis], "MB": 268.4, "ok": True,
                "vs_best_peer": 1.1, "pct_ceiling": pct, "pct_cap": cap}

    rows = [row(3, 0, 80.0, 88.0), row(4, 0, 70.0, 88.0), row(3, 1, 85.0, 90.0)]
    (data / "sweep_complex.json").write_text(json.dumps({"ceiling_GBps": 4380.0, "rows": rows}))
    out = tmp_path / "performance.md"
    assert _generator().main(["--data", str(data), "--asv", str(tmp_path / "none"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "2/3 at 90% of %cap or more" in text
    assert "| sum | complex64 | axis 0 | 2 | 75.0% | 0 | 1/2 |" in text
