"""A bar chart of one run of the public cases (`python -m ops.bench --plot FILE.png`)."""
from __future__ import annotations

from typing import List, Optional

def plot(rows: List[dict], ceiling: Optional[float], path: str) -> None:
    """Bars per case: this project, torch and cupy in GB/s (NumPy on the CPU backend), the read
    ceiling as a line. Small cases are drawn too, though dispatch, not bandwidth, rules them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["case"] for r in rows]
    series = [("ours", "ours_us"), ("torch", "torch_us"), ("cupy", "cupy_us"), ("numpy", "numpy_us")]
    series = [(label, key) for label, key in series if any(key in r for r in rows)]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    for i, (label, key) in enumerate(series):
        gbps = [r["MB"] * 1e3 / r[key] if r.get(key) else 0.0 for r in rows]
        ax.bar([j + i * width for j in range(len(rows))], gbps, width, label=label)
    if ceiling:
        ax.axhline(ceiling, color="k", linestyle="--", linewidth=1, label=f"read ceiling {ceiling:.0f} GB/s")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))])
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("GB/s (input + output bytes / time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
