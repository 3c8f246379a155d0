"""Hardware facts the planner builds on: CUDA's, not choices (kernels/policy.py holds the choices).

The planner reads them through its `tuning` namespace (kernels/policy.py re-exports them), so tests
can shrink the grid limits to reach grid-stride loops with small shapes.
"""

#: Threads of a warp: the widest group of lanes that shares one output by shuffles alone.
WARP_SIZE = 32

#: The widest global access one thread can issue, in bytes (a 16-byte vector load).
LOAD_BYTES = 16

#: CUDA's grid limits (x: 2^31 - 1, y: 65535). Work beyond them is looped over, never dropped.
MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535
