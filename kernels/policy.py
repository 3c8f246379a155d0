"""Tuning constants, in one place. Each says why it has its value; the planner (config.py) is the
only reader, and changing one changes no kernel source (they arrive as template arguments)."""

#: Threads per block. 8 warps: eight resident blocks fill an H100 SM's 2048 threads, and a block
#: is wide enough to cover a 4096-float row in one step of 16-byte loads.
BLOCK_THREADS = 256

#: Resident blocks per SM that "fill the GPU once" (2048 threads / BLOCK_THREADS). Work is split
#: across blocks only until the grid reaches SM count x this.
BLOCKS_PER_SM = 8

#: Bytes per load: the widest global access a thread can issue.
LOAD_BYTES = 16

#: Register-tile rows (loads in flight per thread before the first use). Four 16-byte loads per
#: thread at full occupancy is ~128 KB in flight per SM, well over what HBM3 latency asks for.
MAX_TILE_ROWS = 4

#: Elements a register tile may hold (rows x vector width): caps registers for 1-byte inputs.
MAX_TILE_ELEMENTS = 32

#: A split block must get at least this many full tile steps of work, or the partials cost more
#: than the parallelism gains.
MIN_SPLIT_STEPS = 4

#: CUDA's grid limits (x: 2^31 - 1, y: 65535). Work beyond them is looped over, never dropped.
MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535

#: The widest group of lanes that shares one output by warp shuffles alone; beyond it the whole
#: block shares one output (ReduceInner with LANES == BLOCK_THREADS).
WARP_SIZE = 32

