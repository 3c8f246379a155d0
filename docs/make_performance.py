#!/usr/bin/env python3
"""Write docs/performance.md from measured data, so no figure in it is typed by hand.

    python3 docs/make_performance.py [--data docs/data] [--asv asv_benches/results] [--out docs/performance.md]

Inputs (each optional; whatever is absent is named in the page instead):
- `--data`: a folder of JSON files written by `python -m ops.bench ... --json FILE`. Each file is
  recognised by its content, not its name: `{"ceiling_GBps", "rows"}` with `op` rows (the public
  cases, `--op OP`, `--rosenbrock`) or `shape` rows (`--sweep`); a list of rows with `direct_us`
  (`--graph`), with `precise` (`--accuracy`) or with `workers` (`--dask`).
- `--asv`: asv's results folder (one folder per machine, one JSON per measured commit); the page
  summarises the latest commit of each machine.

Standard library only: it runs anywhere, with no GPU and nothing installed.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
#: The share of the read ceiling the project aims for (as ops/bench/sweep.py's TARGET).
TARGET_PCT = 85.0
#: The share of `%cap` one call of 64 MB and more aims for (as ops/bench/sweep.py's CAP_TARGET).
CAP_TARGET = 0.90

REPRODUCE = """\
```bash
python3 -m pip install -e ".[cuda13,test,bench]"
mkdir -p docs/data
python3 -m ops.bench --json docs/data/bench_sum.json                 # the public cases, sum
for op in argmax argmin var std logsumexp mean_var nansum nanmean nanmax nanvar nanargmax \\
          count_nonzero ptp minmax norm sum_precise; do
  python3 -m ops.bench --op $op --json docs/data/bench_$op.json
done
python3 -m ops.bench --rosenbrock --json docs/data/bench_rosenbrock.json
python3 -m ops.bench --graph --json docs/data/bench_graph.json
python3 -m ops.bench --accuracy --json docs/data/bench_accuracy.json
python3 -m ops.bench --sweep --json docs/data/sweep.json --plot asv_benches/sweep.png
python3 -m ops.bench --dask --json docs/data/dask.json              # dask-gpu extra; 1 and all GPUs
python3 -m ops.bench --torch --json docs/data/torch.json            # small calls and backward, torch
bash .ci/asv SHA                                                     # asv results of one commit
python3 docs/make_performance.py                                     # this page
```

A change is claimed faster (or no slower) by a same-machine A/B against the tree before it:
`git worktree add /tmp/base <commit>` and `python3 -m ops.bench --ab /tmp/base` (ops/bench/ab.py:
each tree in processes of its own, in turns; the public cases, the widths and a few ops, or with
`--ab-cases FILE` the cases a JSON file lists, [name, op, shape, axes, dtype] each). The
torch-side figures: `python3 -m ops.bench --torch` (small calls against CuPy arrays, torch.sum and an
empty launch; the backward against torch's own).

`bash .ci/gpu` runs the GPU tests and the sum, Rosenbrock and graph tables in one call, writing
their JSON to `$OUT` (`OPS="sum argmax var" bash .ci/gpu` for more ops); copy it to `docs/data/`.
Times are CUDA events around one call (host dispatch included), the median of `--repeat` calls in
interleaved rounds with the peers; GB/s = (input + output bytes) / time; `% ceiling` is against the
read ceiling measured in the same process; `%cap` (inputs of 64 MB and more) is the read-ceiling
kernel itself over the same bytes, timed as one call: the most one call can show there.
"""


def _fmt(value, spec: str, blank: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return blank
    return format(value, spec)


def _pct(value) -> str:
    return _fmt(value, ".1f") + ("%" if _fmt(value, ".1f") else "")


def _times(value) -> str:
    return _fmt(value, ".2f") + ("x" if _fmt(value, ".2f") else "")


def _gbps(value) -> str:
    """GB/s: whole numbers, but two decimals under 10 (the small cases, which dispatch rules)."""
    return _fmt(value, ".0f" if value is None or abs(value) >= 10 else ".2f")


def _kind(data) -> Optional[str]:
    """What `python -m ops.bench` wrote this JSON for, from its content."""
    if isinstance(data, dict) and isinstance(data.get("small"), list) and isinstance(data.get("backward"), list):
        return "torch"
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return None
    first = rows[0]
    if isinstance(data, dict):
        if "shape" in first:
            return "sweep"
        if "op" in first and "ours_us" in first:
            return "cases"
        if "workers" in first:
            return "dask"
        return None
    if "direct_us" in first:
        return "graph"
    if "precise" in first:
        return "accuracy"
    if "workers" in first:
        return "dask"
    return None


def load_bench(folder: Path) -> Tuple[Dict[str, List[Tuple[str, object]]], List[str]]:
    """{kind: [(file name, data)]} for every recognised JSON in `folder`, and notes on the rest."""
    found: Dict[str, List[Tuple[str, object]]] = {}
    notes = []
    if not folder.is_dir():
        return found, [f"No benchmark data: the folder `{_show(folder)}` is absent (see \"How to reproduce\")."]
    files = sorted(folder.glob("*.json"))
    if not files:
        return found, [f"No benchmark data: `{_show(folder)}` holds no JSON files (see \"How to reproduce\")."]
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            notes.append(f"`{path.name}` skipped: not readable JSON ({err.__class__.__name__}).")
            continue
        kind = _kind(data)
        if kind is None:
            notes.append(f"`{path.name}` skipped: not a table written by `python -m ops.bench --json`.")
            continue
        found.setdefault(kind, []).append((path.name, data))
    return found, notes


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def case_tables(entries) -> Tuple[List[str], List[str]]:
    """One table per op over the public cases (and Rosenbrock), and one summary line per op."""
    by_op: Dict[str, List[Tuple[dict, Optional[float], str]]] = {}
    for name, data in entries:
        for row in data["rows"]:
            by_op.setdefault(row["op"], []).append((row, data.get("ceiling_GBps"), name))
    out, summary = [], []
    for op, rows in by_op.items():
        files = sorted({name for _, _, name in rows})
        ceilings = sorted({c for _, c, _ in rows if c})
        ceiling = ", ".join(f"{c:.0f}" for c in ceilings) or "not measured (no GPU)"
        gpu = any("GBps" in r for r, _, _ in rows)
        out.append(f"### `{op}`\n")
        out.append(f"From {', '.join(f'`{f}`' for f in files)}; read ceiling {ceiling} GB/s.\n")
        if gpu:
            out.append("| case | dtype | MB | time us | GB/s | % ceiling | %cap | torch us | cupy us | best peer / ours | ok |")
            out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        else:
            out.append("| case | dtype | MB | time us | numpy us | numpy / ours | ok |")
            out.append("| --- | --- | ---: | ---: | ---: | ---: | --- |")
        for r, _, _ in rows:
            ok = "yes" if r.get("ok") else "NO"
            if gpu:
                out.append(f"| {r['case']} | {r.get('dtype', '')} | {_fmt(r.get('MB'), '.1f' if r.get('MB', 0) >= 1 else '.3f')} | {_fmt(r.get('ours_us'), '.1f')}"
                           f" | {_gbps(r.get('GBps'))} | {_pct(r.get('pct_ceiling'))} | {_pct(r.get('pct_cap'))}"
                           f" | {_fmt(r.get('torch_us'), '.1f')} | {_fmt(r.get('cupy_us'), '.1f')}"
                           f" | {_times(r.get('vs_best_peer'))} | {ok} |")
            else:
                out.append(f"| {r['case']} | {r.get('dtype', '')} | {_fmt(r.get('MB'), '.2f')} | {_fmt(r.get('ours_us'), '.1f')}"
                           f" | {_fmt(r.get('numpy_us'), '.1f')} | {_times(r.get('vs_best_peer'))} | {ok} |")
        ahead = sum(1 for r, _, _ in rows if (r.get("vs_best_peer") or 0) >= 1.0)
        wrong = sum(1 for r, _, _ in rows if not r.get("ok"))
        big = [r["pct_ceiling"] for r, _, _ in rows if r.get("pct_ceiling") is not None and (r.get("MB") or 0) >= 100]
        line = (f"`{op}`: {ahead}/{len(rows)} cases at or faster than the best peer; {wrong} wrong"
                + (f"; inputs of 100 MB or more at {_span(big)}% of the ceiling" if big else ""))
        out.append("\n" + line + ".\n")
        summary.append(line)
    if len(by_op) > 1:
        every = [r for rows in by_op.values() for r, _, _ in rows]
        summary.insert(0, f"All {len(by_op)} ops: {sum((r.get('vs_best_peer') or 0) >= 1.0 for r in every)}/{len(every)}"
                          f" rows at or faster than the best peer; {sum(not r.get('ok') for r in every)} wrong")
    return out, summary


def _span(values: List[float]) -> str:
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}-{high}"


def _at_cap(row: dict) -> bool:
    return row["pct_ceiling"] >= CAP_TARGET * row["pct_cap"]


def sweep_section(entries) -> List[str]:
    out = []
    for name, data in entries:
        rows, ceiling = data["rows"], data.get("ceiling_GBps")
        ahead = sum(1 for r in rows if (r.get("vs_best_peer") or 0) >= 1.0)
        wrong = sum(1 for r in rows if not r.get("ok"))
        counted = [r["pct_ceiling"] for r in rows if r.get("pct_ceiling") is not None
                   and not (len(r["shape"]) == 2 and r["shape"][1] < 2)]
        high = sum(1 for p in counted if p >= TARGET_PCT)
        median = f"{statistics.median(counted):.1f}%" if counted else "n/a"
        capped = [r for r in rows if r.get("pct_cap")]  # (sweeps written before rows carried their cap: none)
        at_cap = (f"; {sum(_at_cap(r) for r in capped)}/{len(capped)} at {CAP_TARGET:.0%} of %cap or more"
                  if capped else "")
        out.append(f"`{name}`: {len(rows)} cases; {ahead} at or faster than the best peer; {wrong} wrong; "
                   f"{high}/{len(counted)} at {TARGET_PCT:.0f}% of the ceiling or more (W >= 2), median {median}"
                   + at_cap + (f"; ceiling {ceiling:.0f} GB/s" if ceiling else "") + ".\n")
        groups: Dict[Tuple[str, str, str], List[dict]] = {}
        for r in rows:
            family = f"axis {r['axes'][0]}" if len(r["shape"]) == 2 else "layouts"
            groups.setdefault((r["op"], r["dtype"], family), []).append(r)
        out.append(f"| op | dtype | family | cases | median % ceiling | at >= 85% | at >= {CAP_TARGET:.0%} of %cap |")
        out.append("| --- | --- | --- | ---: | ---: | ---: | ---: |")
        for (op, dtype, family), group in groups.items():
            pcts = [r.get("pct_ceiling") or 0.0 for r in group]
            caps = [r for r in group if r.get("pct_cap")]
            out.append(f"| {op} | {dtype} | {family} | {len(pcts)} | {statistics.median(pcts):.1f}% "
                       f"| {sum(p >= TARGET_PCT for p in pcts)} "
                       f"| {f'{sum(_at_cap(r) for r in caps)}/{len(caps)}' if caps else ''} |")
        out.append("")
    return out


def graph_section(entries) -> List[str]:
    out = []
    for name, rows in entries:  # (a table a file: each machine's figures apart)
        out += [f"From `{name}`:", "", "| case | direct us | from a graph us | torch.sum us | torch.sum from a graph us | ok |",
                "| --- | ---: | ---: | ---: | ---: | --- |"]
        for r in rows:
            out.append(f"| {r['case']} | {_fmt(r.get('direct_us'), '.2f')} | {_fmt(r.get('graph_us'), '.2f')}"
                       f" | {_fmt(r.get('torch_direct_us'), '.2f')} | {_fmt(r.get('torch_graph_us'), '.2f')}"
                       f" | {'yes' if r.get('ok') else 'NO'} |")
        out.append("")
    return out


def _accuracy_cell(v) -> str:
    """(relative error, ulps) as written by `--accuracy`; a relative error of None shows ulps alone."""
    if not (isinstance(v, (list, tuple)) and len(v) == 2):
        return ""
    return f"{v[1]:.3g} ulp" if v[0] is None else f"{v[0]:.1e} ({v[1]:.0f} ulp)"


def accuracy_section(entries) -> List[str]:
    impls = ["plain", "precise", "cupy", "torch", "numpy"]
    out = []
    for name, rows in entries:
        out += [f"From `{name}`:", ""]
        cols = [k for k in impls if any(k in r for r in rows)]
        verdict = all("ok" in r for r in rows)
        out.append("| case | shape | " + " | ".join(cols) + (" | plain at or below the best peer |" if verdict else " |"))
        out.append("| --- | --- | " + " | ".join("---:" for _ in cols) + (" | --- |" if verdict else " |"))
        for r in rows:
            cells = [_accuracy_cell(r.get(k)) for k in cols] + (["yes" if r["ok"] else "no"] if verdict else [])
            out.append(f"| {r['case']} | {r.get('shape', '')} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def dask_section(entries) -> List[str]:
    """A table per file, one row per (workers, op): ours and dask's own seconds, scaling over one
    worker, GB/s per worker end to end, the net GB/s per worker (in % of one in-memory block's), and
    the blocks each worker reduced in our best run."""
    out = []
    for name, data in entries:
        rows = data.get("rows", []) if isinstance(data, dict) else data
        plan = data.get("plan", {}) if isinstance(data, dict) else {}
        out.append(f"From `{name}`" + (f": {plan.get('total_bytes', 0) / 1e9:.0f} GB in {plan.get('blocks')} blocks of "
                                       f"{plan.get('block_bytes', 0) / 2**30:g} GiB." if plan else ".") + "\n")
        out += ["| GPUs | op | ours s | dask's own s | scaling | vs dask | GB/s per GPU | net GB/s per GPU | blocks a GPU | ok |",
                "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
        for ours, theirs in zip(rows[::2], rows[1::2]):
            pct = ours.get("net_pct_of_alone")
            net = _fmt(ours.get("net_GBps_per_worker"), ".0f") + (f" ({pct:.0f}%)" if pct is not None else "")
            ok = ours.get("ok")
            out.append(f"| {ours.get('workers')} | {ours.get('op')} | {_fmt(ours.get('s'), '.3f')}"
                       f" | {_fmt(theirs.get('s'), '.3f')} | {_fmt(ours.get('scaling'), '.2f')}x"
                       f" | {theirs['s'] / ours['s']:.2f}x | {_fmt(ours.get('GBps_per_worker'), '.0f')} | {net}"
                       f" | {'/'.join(map(str, ours.get('blocks_per_worker') or ())) or '-'}"
                       f" | {'' if ok is None else ('yes' if ok else 'NO')} |")
        out.append("")
    return out


def torch_section(entries) -> List[str]:
    """Per file: the small calls (CuPy in, torch in, torch.sum, an empty launch) and the backward
    of this project's custom ops against torch's own (`--torch`)."""
    out = []
    for name, data in entries:
        out += [f"From `{name}`: small calls, eager, no autograd (CUDA events, interleaved rounds).", "",
                "| case | CuPy in us | torch in us | torch.sum us | empty launch us | torch in - CuPy in |",
                "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in data["small"]:
            out.append(f"| {r.get('case')} | {_fmt(r.get('cupy in'), '.2f')} | {_fmt(r.get('torch in'), '.2f')}"
                       f" | {_fmt(r.get('torch.sum'), '.2f')} | {_fmt(r.get('empty launch'), '.2f')}"
                       f" | {r['torch in'] - r['cupy in']:+.2f} us |")
        out += ["", "The backward pass alone, this project's against torch's own; beside sum, the floor of any"
                " backward written in Python (a bare autograd.Function returning torch's own view):", "",
                "| op | shape | axis | MB | ours us | torch us | torch / ours | Python floor us | torch / floor |",
                "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in data["backward"]:
            floor = (f"{_fmt(r.get('floor_us'), '.1f')} | {_fmt(r.get('floor_vs_torch'), '.3f')}x"
                     if "floor_us" in r else " | ")
            out.append(f"| {r.get('op')} | {r.get('shape')} | {r.get('axis')} | {r.get('MB')} | {_fmt(r.get('kps_us'), '.1f')}"
                       f" | {_fmt(r.get('torch_us'), '.1f')} | {_fmt(r.get('vs_torch'), '.3f')}x | {floor} |")
        out.append("")
    return out


def load_asv(folder: Path) -> Tuple[List[dict], List[str]]:
    """The latest run of each machine: {machine, commit, date, results: {benchmark: {params: value}}}."""
    if not folder.is_dir():
        return [], [f"No asv results: the folder `{_show(folder)}` is absent."]
    latest = []
    for machine in sorted(p for p in folder.iterdir() if p.is_dir()):
        runs = []
        for path in machine.glob("*.json"):
            if path.name == "machine.json":
                continue
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "results" in data and "commit_hash" in data:
                runs.append((data.get("date") or 0, data))
        if not runs:
            continue
        _, data = max(runs, key=lambda r: r[0])
        columns = data.get("result_columns", ["result", "params"])
        results = {}
        for bench, entry in data["results"].items():
            rec = dict(zip(columns, entry)) if isinstance(entry, list) else {}
            values, params = rec.get("result"), rec.get("params") or []
            if not isinstance(values, list):
                continue
            keys = itertools.product(*[[str(p).strip("'") for p in axis] for axis in params]) if params else [()]
            results[bench] = {k: v for k, v in zip(keys, values) if isinstance(v, (int, float)) and not math.isnan(v)}
        latest.append({"machine": machine.name, "commit": data["commit_hash"][:8], "date": data.get("date"),
                       "runs": len(runs), "results": results})
    if not latest:
        return [], [f"No asv results: `{_show(folder)}` holds no result files."]
    return latest, []


def _date(ms) -> str:
    if not ms:
        return "unknown date"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d")


def asv_section(latest: List[dict]) -> List[str]:
    out = []
    for run in latest:
        res = run["results"]
        out.append(f"Machine `{run['machine']}`: latest of {run['runs']} measured commits is `{run['commit']}` "
                   f"({_date(run['date'])}).\n")
        public = res.get("reductions.PublicCases.track_gbps", {})
        pct = res.get("reductions.PercentOfCeiling.track_pct_ceiling", {})
        cases = list(dict.fromkeys(k[0] for k in public))
        if cases:
            out.append("| case | kps GB/s | torch GB/s | cupy GB/s | % ceiling |")
            out.append("| --- | ---: | ---: | ---: | ---: |")
            for c in cases:
                out.append(f"| {c} | {_gbps(public.get((c, 'kps')))} | {_gbps(public.get((c, 'torch')))}"
                           f" | {_gbps(public.get((c, 'cupy')))} | {_pct(pct.get((c,)))} |")
            out.append("")
        matrix = res.get("reductions.OpsByDtype.track_pct_ceiling", {})
        if matrix:
            high = sum(v >= TARGET_PCT for v in matrix.values())
            out.append(f"`OpsByDtype`: {high} of {len(matrix)} op x dtype x case cells at {TARGET_PCT:.0f}% of the "
                       f"ceiling or more (small cases included).\n")
        others = sorted(b for b in res if b not in ("reductions.PublicCases.track_gbps",
                                                    "reductions.PercentOfCeiling.track_pct_ceiling",
                                                    "reductions.OpsByDtype.track_pct_ceiling"))
        if others:
            out.append("Also measured: " + ", ".join(f"`{b.split('.', 1)[-1]}` ({len(res[b])} values)" for b in others)
                       + ".\n")
    return out


def render(data_dir: Path, asv_dir: Path) -> str:
    bench, notes = load_bench(data_dir)
    latest, asv_notes = load_asv(asv_dir)
    lines = ["# Performance", "",
             "<!-- Generated by docs/make_performance.py from benchmark JSON and asv results: do not edit by hand. -->", "",
             f"Benchmark data from `{_show(data_dir)}`, asv results from `{_show(asv_dir)}`. How each figure is "
             "measured, and how to measure them again, is at the end. The dated record of how the design "
             "got here is [tuning.md](tuning.md).", ""]
    summary = []
    body = []
    if "cases" in bench:
        tables, summary = case_tables(bench["cases"])
        body += ["## The public cases, per op", ""] + tables
    for kind, title, fn in (("sweep", "Every width and layout (`--sweep`)", sweep_section),
                            ("graph", "Small cases from CUDA graphs (`--graph`)", graph_section),
                            ("accuracy", "Accuracy of float32 sums (`--accuracy`)", accuracy_section),
                            ("dask", "Dask arrays (`--dask`)", dask_section),
                            ("torch", "What a torch user pays (`--torch`)", torch_section)):
        if kind in bench:
            body += [f"## {title}", ""] + fn(bench[kind])
    lines += ["## Summary", ""]
    if summary:
        lines += [f"- {s}" for s in summary]
    else:
        lines += ["- No public-case table in the benchmark data."]
    lines += [f"- {n}" for n in notes]
    missing = [name for name in ("sweep", "graph", "accuracy", "dask") if name not in bench and bench]
    if missing:
        lines.append("- Absent from the benchmark data: " + ", ".join(f"`{m}`" for m in missing) + ".")
    lines.append("")
    lines += body
    lines += ["## Latest asv results", ""]
    lines += asv_section(latest) if latest else [f"{n}\n" for n in asv_notes]
    lines += ["## How to reproduce", "", REPRODUCE]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=ROOT / "docs" / "data", help="folder of `ops.bench --json` files")
    p.add_argument("--asv", type=Path, default=ROOT / "asv_benches" / "results", help="asv's results folder")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md", help="the page to write")
    args = p.parse_args(argv)
    text = render(args.data, args.asv)
    args.out.write_text(text)
    print(f"wrote {_show(args.out)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
