"""The small cases timed as direct calls and replayed from CUDA graphs (per reduction), against
torch.sum captured the same way: what a call costs once the host's dispatch is gone."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Tuple

import ops

from . import timing
from .cases import load_cases, make_input
from .peers import cuda_torch

#: The cases whose time is mostly launch and host work: timed replayed from CUDA graphs too.
GRAPH_CASES = ("tiny_32x32", "small_1024x1024_ax0", "small_1024x1024_ax1")


#: Reductions one captured graph holds (the per-reduction time is the replay's over this).
GRAPH_CALLS = 20


def graph_us_cupy(fn, repeat: int = 30) -> Tuple[float, object]:
    """Per-call time of `fn` replayed from a CUDA graph of GRAPH_CALLS calls captured on a CuPy
    stream (warmed up on that stream first), and the last call's result."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fn()
        stream.synchronize()
        stream.begin_capture()
        outs = [fn() for _ in range(GRAPH_CALLS)]
        graph = stream.end_capture()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()

        def replay_ms():
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            return cupy.cuda.get_elapsed_time(start, end)

        return _per_call_us(replay_ms, repeat), outs[-1]


def graph_us_torch(torch, fn, repeat: int = 30) -> float:
    """The same for a torch call, captured with torch.cuda.graph (the anchor)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for _ in range(GRAPH_CALLS):
            fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay_ms():
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    return _per_call_us(replay_ms, repeat)


def _per_call_us(replay_ms, repeat: int) -> float:
    """Per reduction, in microseconds: the median of `repeat` timed replays (`replay_ms`: one
    replay of a graph of GRAPH_CALLS reductions, in ms) after three warm-ups."""
    times = [replay_ms() for _ in range(repeat + 3)][3:]
    return statistics.median(times) * 1e3 / GRAPH_CALLS


def main_graph(args) -> int:
    """The small cases timed as direct calls and replayed from CUDA graphs, this project's sum and
    torch.sum, per reduction."""
    if not timing.gpu_available():
        print("no GPU: CUDA graphs need one")
        return 0
    import cupy

    torch = cuda_torch()
    rows = []
    for case in (c for c in load_cases() if c.name in GRAPH_CASES):
        x = make_input(case.shape, case.dtype, cupy)
        axes = case.axes
        row = {"case": case.name, "direct_us": timing.median_us(lambda: ops.reduce_sum(x, axis=axes), repeat=args.repeat)}
        row["graph_us"], replayed = graph_us_cupy(lambda: ops.reduce_sum(x, axis=axes), args.repeat)
        row["ok"] = bool(cupy.array_equal(replayed, ops.reduce_sum(x, axis=axes)))
        if torch is not None:
            t = torch.from_dlpack(x)
            row["torch_direct_us"] = timing.median_us(lambda: torch.sum(t, dim=axes), repeat=args.repeat)
            row["torch_graph_us"] = graph_us_torch(torch, lambda: torch.sum(t, dim=axes), args.repeat)
        rows.append(row)
    print(f"{'case':<24}{'ours us':>9}{'graph us':>10}{'torch us':>10}{'torch graph us':>16}  ok")
    for r in rows:
        print(f"{r['case']:<24}{r['direct_us']:>9.2f}{r['graph_us']:>10.2f}{r.get('torch_direct_us', float('nan')):>10.2f}"
              f"{r.get('torch_graph_us', float('nan')):>16.2f}  {'yes' if r['ok'] else 'NO'}")
    print(f"summary: per reduction, CUDA events; a graph replays {GRAPH_CALLS} reductions")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1
