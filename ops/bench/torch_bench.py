"""`python -m ops.bench --torch`: what a torch user pays, on the GPU. Two tables:

- small calls (eager, no autograd): one call of this project on a CuPy array and on a torch tensor,
  torch.sum, and an empty kernel launch, CUDA events around each call, interleaved rounds;
- backward: the gradient of sum, mean and var over 64 MB and 256 MB float32 inputs, this project's
  (its custom op's formula, ops/torch_grads.py) against torch's own, the backward pass alone. Beside
  sum, the floor of any backward written in Python: a bare `torch.autograd.Function` whose backward
  is the same view (`g` unsqueezed and expanded) that torch's SumBackward returns from C++.
"""
from __future__ import annotations

from typing import List

from . import timing

#: (name, shape, axis) of the small calls (the issue's three).
SMALL = [("32x32, whole sum", (32, 32), None), ("1024x1024 over axis 1", (1024, 1024), 1),
         ("1024x1024 over axis 0", (1024, 1024), 0)]

#: (op, torch's own) of the backward table.
BACKWARD_OPS = {"sum": "sum", "mean": "mean", "var": "var"}
BACKWARD_SHAPES = [((4096, 4096), 1), ((4096, 4096), 0), ((16384, 4096), 1), ((16384, 4096), 0)]


def _empty_launch():
    import cupy

    kernel = cupy.RawKernel('extern "C" __global__ void empty() {}', "empty")
    return lambda: kernel((1,), (32,), ())


def small_calls(repeat: int = 200) -> List[dict]:
    import cupy
    import torch

    import ops

    empty = _empty_launch()
    rows = []
    for name, shape, axis in SMALL:
        c = cupy.random.default_rng(0).standard_normal(shape, dtype=cupy.float32)
        t = torch.from_dlpack(c).clone()
        fns = {"cupy in": lambda: ops.reduce_sum(c, axis=axis), "torch in": lambda: ops.reduce_sum(t, axis=axis),
               "torch.sum": (lambda: torch.sum(t)) if axis is None else (lambda: torch.sum(t, dim=axis)),
               "empty launch": empty}
        us = timing.interleaved_us(fns, warmup=20, repeat=repeat, rounds=5)
        rows.append({"case": name, **{k: round(v, 2) for k, v in us.items()}})
    return rows


def _bare_sum(torch, shape, axis):
    """A sum whose backward is a bare Python node returning torch's own view: the floor."""

    class BareSum(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(axis)

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(axis).expand(shape)

    return BareSum.apply


def backward(repeat: int = 100) -> List[dict]:
    """One row per shape and op: the median backward of ours and torch's (beside sum, the bare Python
    node's), `repeat` calls each over five interleaved rounds. (At 20 calls, the 64 MB rows of one
    tree swung by up to 2x between runs in one session on the H100.)"""
    import torch

    import ops

    rows = []
    for (shape, axis) in BACKWARD_SHAPES:
        x = torch.randn(shape, device="cuda").requires_grad_()
        for op, own in BACKWARD_OPS.items():
            outs = {"kps": getattr(ops, f"reduce_{op}")(x, axis=axis), "torch": getattr(torch, own)(x, dim=axis)}
            if op == "sum":
                outs["floor"] = _bare_sum(torch, shape, axis)(x)
            g = torch.randn_like(outs["torch"])
            fns = {name: (lambda out=out: torch.autograd.grad(out, x, g, retain_graph=True))
                   for name, out in outs.items()}
            us = timing.interleaved_us(fns, warmup=10, repeat=repeat, rounds=5)
            mb = x.numel() * 4 / 1e6
            row = {"op": op, "shape": "x".join(map(str, shape)), "axis": axis, "MB": round(mb),
                   "kps_us": round(us["kps"], 1), "torch_us": round(us["torch"], 1),
                   "vs_torch": round(us["torch"] / us["kps"], 3)}
            if "floor" in us:
                row.update(floor_us=round(us["floor"], 1), floor_vs_torch=round(us["torch"] / us["floor"], 3))
            rows.append(row)
    return rows


def small_table(rows) -> str:
    head = f"{'case':24} | {'CuPy in':>8} | {'torch in':>8} | {'torch.sum':>9} | {'empty launch':>12} | torch - CuPy"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['case']:24} | {r['cupy in']:8.2f} | {r['torch in']:8.2f} | {r['torch.sum']:9.2f} | "
                     f"{r['empty launch']:12.2f} | {r['torch in'] - r['cupy in']:+.2f} us")
    return "\n".join(lines)


def backward_table(rows) -> str:
    head = (f"{'op':5} {'shape':>11} {'axis':>4} {'MB':>5} | {'kps us':>8} | {'torch us':>8} | vs torch | "
            "Python floor us (vs torch)")
    lines = [head, "-" * len(head)]
    for r in rows:
        floor = f"{r['floor_us']:8.1f} ({r['floor_vs_torch']:.3f}x)" if "floor_us" in r else ""
        lines.append(f"{r['op']:5} {r['shape']:>11} {r['axis']:>4} {r['MB']:5} | {r['kps_us']:8.1f} | "
                     f"{r['torch_us']:8.1f} | {r['vs_torch']:.3f}x  | {floor}")
    return "\n".join(lines)
