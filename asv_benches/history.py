"""Draw the history of the headline cases from the committed asv results (no GPU needed):

    python asv_benches/history.py asv_benches/history.png

One line per case for this project's sum in GB/s, commit by commit, with the best peer of the
latest run as a dotted line of the same colour. The full interactive charts: `asv publish`.
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "h100"
BENCHMARK = "reductions.PublicCases.track_gbps"
HEADLINE = ["full_1d_256M", "last_1Mx64", "higher_16Mx16", "mid_256x1024x256", "nchw_stats_128x64x56x56",
            "fp16_last_8192x8192"]


def load():
    """[(date, short hash, {(case, impl): GB/s})] in commit-date order."""
    runs = []
    for f in RESULTS.glob("*.json"):
        data = json.loads(f.read_text())
        if BENCHMARK not in data.get("results", {}):
            continue
        values, params = data["results"][BENCHMARK][:2]
        keys = itertools.product(*[[p.strip("'") for p in axis] for axis in params])
        runs.append((data["date"], data["commit_hash"][:8], {k: v for k, v in zip(keys, values) if v is not None}))
    return sorted(runs)


def main(out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i, case in enumerate(HEADLINE):
        color = f"C{i}"
        ax.plot(range(len(runs)), [r[2].get((case, "kps"), float("nan")) for r in runs], "o-", color=color, label=case)
        best = max(runs[-1][2].get((case, p), 0.0) for p in ("torch", "cupy"))
        ax.axhline(best, color=color, linestyle=":", linewidth=1)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([r[1] for r in runs], fontsize=8)
    ax.set_xlabel("commit (oldest first); dotted: best of torch.sum / cupy.sum at the latest commit")
    ax.set_ylabel("sum, GB/s (H100)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=80)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "history.png")
