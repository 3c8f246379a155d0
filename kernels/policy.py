"""Tuning constants, in one place: the planner (kernels/planner) reads them, the launcher one
(SPLIT_COUNTERS). Changing one changes no kernel source (they arrive as template arguments).

Each keeps a one-line justification: the figure that settled it and the date. The measurements
behind them (H100 unless said, kernel alone or one call, same run) are in docs/tuning.md, a
section per constant. The hardware facts are in kernels/hardware.py, re-exported here so the
planner reads one namespace (tests pass a smaller one to reach splits and tails with small shapes).
"""
from .hardware import LOAD_BYTES, MAX_GRID_X, MAX_GRID_Y, WARP_SIZE  # noqa: F401 (re-exported)

# --- Blocks and occupancy ------------------------------------------------------------------------

#: Threads per block: 8 warps, eight resident blocks fill an SM's 2048 threads (2026-11-22).
BLOCK_THREADS = 256

#: Resident blocks that fill an SM once; a run filling a block step gets a block (345.8 -> 337.1 us, 2026-11-22).
BLOCKS_PER_SM = 8

#: Idle share of a run's last block step per resident block, else a warp an output (88-92 -> 100%, 2026-11-27).
BLOCK_ROW_IDLE_PER_BLOCK = 1 / 16

#: ReduceInner's launch bound for a state, none for scalars (argmax rows 76-92 -> 85-98% at 3 -> 4, 2026-11-26).
INNER_MIN_BLOCKS = 4

#: The state rows' bound where INNER_MIN_BLOCKS spills (Welford rows of 4096 98 -> 91% at 4, 2026-11-26).
INNER_SPILL_MIN_BLOCKS = 3

#: ReduceOuter's bound for a heavy state; splits fill its waves (logsumexp columns 87 -> 98%, 2026-11-26).
HEAVY_COL_MIN_BLOCKS = 4

#: The launch bound a kernel with none is recompiled with where its registers allow fewer blocks, kept
#: where it spills nothing and adds blocks (staged float32 sums 74 -> 56 registers, 0.90-0.94x; bounds spilling 8-32 bytes
#: 1.03-1.11x; kernels already at 4 or more, bounded, took more registers: 1.06x; H100, 2026-12-07).
RAISED_MIN_BLOCKS = 4

#: Local bytes a bounded state tile may take before it is halved (float16 logsumexp 28 -> 61%, 2026-11-26).
BOUNDED_MAX_LOCAL_BYTES = 32

#: Block steps a state's run needs for a block an output (argmax rows of 4096 2201 -> 3014 GB/s, 2026-11-23).
STATE_BLOCK_ROW_STEPS = 4
#: The same for a scalar accumulator of 8 bytes (float32 sums in float64, float64 data), where warps an
#: output fill the GPU: one step's block tail of 8-byte shuffles costs more than it walks (H200, 256 MB:
#: float32 rows of 4096 72.05 -> 69.57 us, means 73.60 -> 70.11, float64 rows of 2048 73.86 -> 70.35
#: a warp an output; rows of two steps and more are as fast a block, 2026-11-28).
WIDE_ACC_BLOCK_ROW_STEPS = 2

#: Steps of its run a state's lane walks before another lane joins the row: each lane more is one
#: more shuffle round of state merges (complex64 var rows of 33 648.7 -> 140.1 us at 1 -> 8, H200, 2026-11-28).
STATE_LANE_STEPS = 8

#: A state's walk of at least this many vectors takes two lanes, whatever its accumulator: one lane
#: alone reads 16 bytes of a row a load (H200, 256 MB, kernel alone: rows of 16 vectors float32 var
#: 85.9 -> 70.2 us, complex128 var 87.2 -> 70.8; complex64 var rows of 32 vectors 90.0 -> 73.2, 2026-12-02).
LANE_PAIR_MIN_VECTORS = 16

#: A state's tile rows, in order of preference, where its lane's share of a run is not whole steps of
#: the tile: the first that divides it without adding a step (rows of 5 vectors: 93.6 -> 72.3 us
#: float32 var; of 9 in three of 3 0.92-0.94x, complex128 1.04x; 6 rows took a resident block, 2026-12-02).
STATE_STEP_TILES = (4, 5, 3)

# --- Tiles ---------------------------------------------------------------------------------------

#: Register-tile rows (loads in flight a thread): ~128 KB in flight an SM at full occupancy (2026-11-22).
MAX_TILE_ROWS = 4

#: ReduceInner's rows where lanes share inputs off the grid ((262144, 259) 263.5 -> 164.7 us, 2026-11-25).
INPUTS_TILE_ROWS = 2

#: A scalar's run shorter than one step of its lanes, under this many loads a lane: half the lanes, each
#: holding its share whole (H200, 256 MB, kernel alone: rows of 33 vectors 62.6-67.8 -> 90.0-91.9% of
#: the ceiling; shares of 3 kept: float32 rows of 12 vectors lost 7% at two lanes, 2026-12-01) ...
LANE_MIN_LOADS = 3

#: ... in a tile of at most this many rows, which also holds a warp's run of a few steps in one (rows of
#: 130 vectors 81.1-88.2 -> 63.5-72.2 us; 8: two lanes of 8 ran 0.82-0.87x four of 4, 2026-12-01).
LANE_MAX_LOADS = 6

#: Loads in flight a thread over short aligned rows, several side by side (H200, 256 MB: float64 rows of 4
#: 92.1 -> 79.9 us, complex64 rows of 2 110.6 -> 96.8, float16 rows of 8 104.9 -> 72.7; 4 and 8 alike, 2026-11-28).
SHORT_ROW_VECTORS = 8

#: ... their accumulators a thread at most this many bytes: a scalar's never reach it; a state's rows, one a thread
#: before (H200, 256 MB: complex64 var rows of 4 140.7 -> 73.1 us, float16 var rows of 8 174.2 -> 85.2, float32
#: argmax rows of 8 126.6 -> 81.2; at 256 complex64 rows of 2 ran 84.1 against 89.8, but float32 var rows of 4
#: spilled, 2026-11-28).
SHORT_ROW_ACC_BYTES = 128

#: SPLIT_BLOCKS_PER_SM for those tiles (the Rosenbrock cost 133.0 -> 125.5 us at 3 -> 5, 2026-11-26).
INPUTS_SPLIT_BLOCKS_PER_SM = 5

#: Elements a register tile holds (rows x vector width): caps 1-byte inputs' registers (2026-11-22).
MAX_TILE_ELEMENTS = 32

#: The same for a lane's share of a run held whole where lanes halve (LANE_MIN_LOADS), inputs of 2 bytes
#: or more: float16's 6 vectors (rows of 20 vectors 105.8 -> 66.5 us, H200, kernel alone, 2026-12-02).
SHARE_MAX_ELEMENTS = 48

# --- Splits and their combine ----------------------------------------------------------------------

#: Splits fill the grid up to SM count x this (higher_16Mx16 361.5 -> 350.6 us at 8 -> 3, 2026-11-22).
SPLIT_BLOCKS_PER_SM = 3

#: SPLIT_BLOCKS_PER_SM for ReduceInner's splits, rows of few outputs and whole reductions (float32
#: logsumexp of (200, 335544) 106.8 -> 78.6 us at 3 -> 4, kernel alone; none slower than 0.975x, 2026-11-29).
INNER_SPLIT_BLOCKS_PER_SM = 4

#: Full tile steps a split block gets at least (16 dependent trips cost a 4 MB column sum 10 us, 2026-11-22).
MIN_SPLIT_STEPS = 1

#: Combine rounds of one level before splits combine in groups first (var 64 wide 29 -> 55%, 2026-11-26).
SPLIT_ONE_LEVEL_ROUNDS = 4

#: Last-block counters reserved at the head of a split launch's workspace (uint32 each), 2026-11-26.
SPLIT_COUNTERS = 65536

#: Tile steps an output group needs to split (1024 x 1024 rows 3.86 us split, 2.52 unsplit, 2026-11-22).
INNER_SPLIT_MIN_STEPS = 3

#: Runs shorter than this many steps are walked flat ((4096, 8, 64) over (0, 2) 56.9 -> 6.4 us, 2026-11-22).
FLAT_RUN_MAX_STEPS = 4

#: The fewest waves within this of the best fill win (16 rows of 16M 2980 -> 3074 GB/s, 2026-11-25).
SPLIT_FILL_SLACK = 0.05

#: ReduceOuter splits tiles past one wave whose last runs emptier (argmax 2506 -> 2853 GB/s, 2026-11-23).
MIN_WAVE_FILL = 0.8

# --- ReduceOuter -----------------------------------------------------------------------------------

#: ReduceOuter takes ragged rows of threads over every column where they keep this many times the
#: threads busy that tiles of a power of two keep (at 1.5 or more, 17-47 vectors: 0.61-1.01x, float32
#: argmax (508400, 132) 154.9 -> 93.7 us; at 1.25, 50 vectors: 0.84-1.16x; H200, kernel alone, 2026-11-29;
#: 5, 9 and 10 vectors, rows narrower than half a warp: 0.72-1.09x, argmax of 36 float32 columns
#: 133.8 -> 96.5 us, 2026-12-02)...
OUTER_RAGGED_MIN_GAIN = 1.5
#: ... and each of their blocks walks this many steps at least (splits of 1-3 steps: 0.89-1.29x,
#: float32 logsumexp (15420, 68) 16.8 -> 21.6 us; of 4 or more: 0.61-1.01x).
OUTER_RAGGED_MIN_STEPS = 4

#: ReduceOuter loads a block's next tile while it folds this one where a state's tile is one step of
#: rows and the block walks this many tiles at least (5-10 tiles a block: 0.91-1.11x, float16 var (4000,
#: 12, 512) axis 1 the slowest; 11-16: 0.85-0.89x; 22 or more: 0.62-0.97x; H200, one call, 2026-12-03)...
OUTER_PREFETCH_MIN_TILES = 16
#: ... and the tile's loads are fewer bytes than this (states over 2-8 rows: 4-14 KiB 0.62-0.97x, 16-32
#: KiB 1.02-1.10x).
OUTER_PREFETCH_MAX_TILE_BYTES = 16384

#: ReduceOuter's stacked walk over columns off the 16-byte grid (a load an element) only for elements
#: of at least this many bytes, or a state's: 80 cells of 2-32 rows under 3-100 odd columns (float32,
#: float64 and complex64 ops, float16 var) ran 0.53-1.02x the staged time, median 0.90; 1- and 2-byte
#: sums, `max` and `any` over 16-32 rows 1.04-1.38x, 1-byte word columns over 2 rows 1.16x: they stay
#: staged (H200, calls 4 and 6, 2026-12-04; docs/tuning.md, session 34).
OUTER_STACK_ELEMENT_MIN_BYTES = 4

#: The most threads side by side (BX): a warp's 32 x 16 bytes, a 512-byte run per reduced row (2026-11-22).
MAX_COL_THREADS = 32

#: Steps down the columns before the block widens over few rows (var (64, 4M) 69 -> 94%, 2026-11-27).
COL_ROW_STEPS = 16

#: Bytes in flight down a state's columns (var (65536, 4096) axis 0 94.5 -> 98.8%, 2026-11-26).
STATE_COL_TILE_BYTES = 64

#: Rows in flight for a column a thread off the grid (float16 257 wide 1823 -> 2509 GB/s, 2026-11-23).
MISALIGNED_COL_TILE_ROWS = 16

#: Adjacent columns a thread accumulates (bool any 65536 x 4096 111.4 -> 101.0 us at 16 -> 8, 2026-11-22).
MAX_COL_VEC = 8

#: Accumulator bytes a thread keeps for its columns (float16 argmax 1065 -> 1513 GB/s, 2026-11-23).
MAX_COL_ACC_BYTES = 64

#: Shared memory the accumulators may take, under the 48 KB a kernel may declare (2026-11-23).
MAX_COL_SHARED_BYTES = 32768

# --- ReduceStaged: spans ---------------------------------------------------------------------------

#: 16-byte vectors a thread loads a span: spans of up to 32 KB, as many loads in flight (2026-11-23).
STAGE_VECTORS = 8

#: The same where a span holds whole reductions: smaller tiles, more of them (2026-11-23).
STAGE_VECTORS_DIRECT = 4

#: Outputs a thread accumulates over a tile, a power of two <= 16 ((N, 3, 256) 89.8 -> 95.2%, 2026-11-27).
STAGE_MAX_SLOTS = 8

#: ... for a state (var (N, 3, 33) 28.2% at 4, 29.5% at 8: 4 keeps registers, 2026-11-27).
STAGE_MAX_STATE_SLOTS = 4

#: The widest accumulator staged as any other: every real one (float64 Welford's 32 bytes); complex
#: Welford's 64, four slots a thread, overflowed shared memory beside a span (50 KB of 48: NVRTC,
#: 2026-11-27), so it is staged only as the next lines allow.
STAGE_MAX_ACC_BYTES = 32

#: ... and in spans of whole reductions, which keep no slots in shared memory: complex Welford's 64
#: (complex64 var over rows of 2, 3, 5: 269, 256, 203 -> 153, 134, 116 us, H100, 2026-11-28)...
STAGE_MAX_DIRECT_ACC_BYTES = 64
#: ... and a slot a thread over reduced runs of at most this (rows of 127 level, of 165 and 255 5-9% slower
#: staged, 2026-11-28; split spans of few outputs: complex64 var over (2236962, 3, 5), axes (0, 2), 7243.8
#: -> 111.6 us, H200, kernel alone, 2026-11-29).
STAGE_WIDE_MAX_RUN_BYTES = 1024
#: ... and across kept columns, a slot a thread (16 KB of slots beside the span; complex64 var
#: (N, 3, 5) over axis 1: 33 -> 1191 GB/s, H200, 2026-11-28)...
STAGE_WIDE_STATE_SLOTS = 1
#: ... in spans of at most this many 16-byte vectors a thread (32 KB of them overflowed 48 KB: NVRTC).
STAGE_WIDE_COLUMN_VECTORS = 4

#: A state's aligned kept columns are staged where ReduceOuter keeps at most this share of a block's
#: threads busy (outer.busy_share): ReduceOuter runs near share x its full speed, staged columns at a
#: speed of their own (float16 var (N, 3, 256), share 0.5: 332 -> 499 GB/s; (N, 3, 512), share 1:
#: 705 outer, 406 staged; H200, 2026-11-28)...
STAGE_STATE_OUTER_BUSY = 0.5
#: ... and a state wider than STAGE_MAX_ACC_BYTES, staged a slot a thread (complex64 var (N, 2, 128),
#: share 0.5: 590.7 us outer, 264.2 staged; (N, 60, 13), share 0.41: 269.6 outer, 155.0 staged;
#: H200, 2026-11-29).
STAGE_WIDE_OUTER_BUSY = 0.5

#: Longest misaligned reduced run staged (at 512 several-dim folds fell 2448 -> 425 GB/s, 2026-11-25).
STAGE_MAX_RUN_BYTES = 2048

#: ... from STAGE_WORD_MIN_RUN_BYTES to this where 1-byte runs fold as words (1042 -> 2787 GB/s, 2026-11-25).
STAGE_WORD_MAX_RUN_BYTES = 32768
#: (runs of 2-4 bytes fold faster as bytes side by side: (N, 4) 1789 -> 1976 GB/s, 2026-11-25)
STAGE_WORD_MIN_RUN_BYTES = 5

#: Widest misaligned kept columns staged; wider keep ReduceOuter's column tiles (2026-11-23).
STAGE_MAX_COLUMN_BYTES = 4096
#: ... of elements of 4 bytes or more, which ReduceOuter reads well one a lane (H200, 256 MB / 16 MB:
#: float32 sums of 129 columns 106.6 -> 80.8 / 25.8 -> 15.6 us, complex64 of 257 113.8 -> 81.2 /
#: 25.1 -> 18.3; float16 and int8 stay: 5-16% slower over 256 MB in ReduceOuter, 2026-11-28). Columns
#: whose reductions a span holds whole stay staged: few rows between kept dims give ReduceOuter a block
#: an outer index (var float32 (104044, 5, 129) over axis 1 at 563 GB/s, torch 1516, 2026-11-28).
STAGE_MAX_WIDE_COLUMN_BYTES = 512

#: Aligned runs staged up to this (a run of one vector costs ReduceInner a shuffle a vector, 2026-11-23).
STAGE_ALIGNED_RUN_BYTES = 16
#: ... and a scalar's aligned reduced runs that end inside an L2 sector (SECTOR_BYTES), up to this:
#: ReduceInner's blocks, an output's each, fetch the sector two outputs' runs share twice (complex128
#: sum over (349525, 16, 3), axes (0, 2): 410 MB read from DRAM for 268; 137.7 -> 72.2 us staged;
#: staged over runs of 80 and 112 bytes: float32 1.09-1.15x the time, H200, 2026-11-29)...
STAGE_STRADDLING_RUN_BYTES = 48
#: ... where this many outputs' runs or more lie between an output's (over 2 and 3, float32 sums took
#: 1.05-1.74x the time staged at every size; over 4 to 1024, 0.40-0.98x from 192 MB to 1 GB)...
STAGE_STRADDLING_MIN_OUTPUTS = 4
#: ... in an input of this many bytes or more: below, the L2 (50 MB) serves more of the second fetch
#: (staged time over ReduceInner's, 24-48 MB: 0.94-2.97x; 128 MB: 0.59-1.21x, complex64 over 1024
#: outputs the 1.21x; 160 MB: 0.65-1.07x; 192 MB to 1 GB: 0.40-0.98x)...
STAGE_STRADDLING_MIN_BYTES = 192 << 20
#: ... of elements of this many bytes or more (staged at 256 MB: float16 runs of 24 0.98-1.20x the
#: time, int8 runs of 48 1.71-1.77x).
STAGE_STRADDLING_MIN_ITEMSIZE = 4
#: The L2's sector: the bytes a load brings from DRAM at least.
SECTOR_BYTES = 32

#: ... and aligned columns over too few rows for ReduceOuter (float16 6.8-19.7 -> 37-93%, 2026-11-27;
#: 1024 -> 2048 bytes, H200, 256 MB: complex128 sums of 65 columns over 2 rows 289.8 -> 118.9 us, float64
#: var of 256 over 3 rows 250.9 -> 91.7, float16 sums of 1024 over 3 rows 272.6 -> 202.0; 4096 slowed
#: complex128 sums of 129-256 over 2 rows 0.84-0.92x, 2026-11-29).
STAGE_FEW_ROW_COLUMN_BYTES = 2048
#: ... over two rows of results narrower than 8 bytes (H200, 256 MB, staged: float16 sums of 1024
#: columns over 2 rows 206.9 -> 299.5 us, float32 sums of 512 184.5 -> 188.2, 2026-11-29; the latter
#: 82 -> 69% of the ceiling on the H100, 2026-11-27).
STAGE_FEW_ROW_NARROW_COLUMN_BYTES = 1024

#: The smallest span in vectors a thread (a span of 7 x 7 floats ran at 12 GB/s, 2026-11-23).
STAGE_MIN_SPAN_VECTORS_PER_THREAD = 1
#: ... of a span that holds its outputs' whole reductions (columns of 3-129 over 2 rows, where
#: ReduceOuter took a block an outer index, H200, 256 MB, 1 -> 0.5: float16 var 105768 -> 422 us,
#: complex64 var 17758 -> 264, bool any 92584 -> 550, int8 sums 86618 -> 722, 2026-11-29).
STAGE_MIN_WHOLE_SPAN_VECTORS_PER_THREAD = 0.5

# --- ReduceStaged: folds ---------------------------------------------------------------------------

#: Bank-conflict ways allowed to lanes on one run (float32 rows of 4 2610 -> 2819 GB/s at 2 -> 4, 2026-11-25).
STAGE_ROW_BANK_WAYS = 4

#: Lanes on a direct span's strided runs fill this x its slots ((N, 5, 9, 33) 62.3 -> 86.3%, 2026-11-27)...
STAGE_DIRECT_RUN_FILL = 4
#: ... but a scalar's runs of elements of 4 bytes or more take lanes that fill the block, each folding this
#: many elements at least (H200, 256 MB: float32 rows of 383 95.4 -> 75.3 us at 4 -> 16 lanes, of 255
#: 80.2 -> 76.2 at 4 -> 8, complex64 of 165 81.6 -> 75.6 at 4 -> 8; at 8 a lane complex64 rows of 33 lost,
#: 78.9 -> 85.0; float16, kept at the quarter, lost at 1 -> 4 lanes on rows of 127, 81.7 -> 118.0; 2026-11-28).
STAGE_RUN_LANE_ELEMENTS = 16

#: Short runs a thread folds side by side (float32 rows of 4 2604 -> 2833 GB/s, 2026-11-25)...
STAGE_DIRECT_ROWS = 4
#: ... as many as keep their elements at most this many (longer runs amortise their loop alone)...
STAGE_DIRECT_FOLDS = 16
#: ... their accumulators at most this many bytes (H200, 256 MB, 32 -> 64: float16 var rows of 2 377.7 -> 296.0 us,
#: float32 var rows of 2 198.8 -> 160.3, float16 var rows of 4 240.9 -> 207.1; at 128 nanvar rows of 2 ran 7% slower,
#: 2026-11-28)...
STAGE_DIRECT_ACC_BYTES = 64
#: ... and a share of runs folded twice at most this (none of 32 cases 0.3% slower, 2026-11-25).
STAGE_DIRECT_REFOLDS = 0.1

#: 1-byte rows up to this many bytes fold 16 a thread (bool rows of 2-7 ran at 58-67% before, 2026-11-25).
STAGE_BYTE_ROWS_MAX = 16

#: ... within this many-way bank conflicts (H200: 16 wide 87.8 -> 64.2% at 8 ways, 2026-11-26).
STAGE_BYTE_ROWS_MAX_BANK_WAYS = 4

#: Word-column residues a thread folds (bool any 257 wide 78.5 -> 83.4% at 1 -> 2, 2026-11-25).
STAGE_WORD_COLUMN_RESIDUES = 2

#: 1-byte off-grid columns this wide read shifted words (H200 1001 wide 54.0 -> 80.2%, 2026-11-26).
SHIFTED_WORD_COLUMNS_MIN = 512

# --- ReduceStaged: splits --------------------------------------------------------------------------

#: A tile's splits while its last block's combine takes at most this many L2 round trips (2026-11-23)...
STAGE_COMBINE_TRIPS = 4

#: ... up to this where fewer leave an SM under STAGE_MIN_BLOCKS_PER_SM (2700 vs 1450 GB/s, 2026-11-23).
STAGE_MAX_COMBINE_TRIPS = 16
#: ... and this for 1-byte inputs (bool any 511 wide 1897 -> 2527 GB/s at 16 -> 64, 2026-11-25).
STAGE_MAX_COMBINE_TRIPS_1_BYTE = 64
#: (see STAGE_MAX_COMBINE_TRIPS, 2026-11-23)
STAGE_MIN_BLOCKS_PER_SM = 2
