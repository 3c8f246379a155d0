"""`python -m ops.bench`: how fast and how accurate this project is, against the peers a user would
call instead, measured in one process (BENCH.md's method). Not part of the API: the tools live here.

- `cli`: the command line (`python -m ops.bench --help`);
- `cases`: the public cases (bench_cases.json) and their table; `peers`: each op's NumPy / CuPy /
  torch twin and the float64 check every timed result passes; `timing`: CUDA-event timing and the
  read ceiling, shared with the asv suite;
- `sweep` (`--sweep`): every width and layout; `graphs` (`--graph`): the small cases replayed from
  CUDA graphs; `rosenbrock` (`--rosenbrock`): the named transform-reduce case; `accuracy`
  (`--accuracy`): the sums against the correctly rounded answer; `dask_bench` (`--dask`): dask
  arrays bigger than the GPUs' memory on 1, 2 and 4 GPUs; `plots`: the bar chart.
"""
from .cli import main

__all__ = ["main"]
