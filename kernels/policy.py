"""Tuning constants, in one place. Each says why it has its value; the planner (config.py) reads
them, and the launcher one (SPLIT_COUNTERS); changing one changes no
kernel source (they arrive as template arguments)."""

#: Threads per block. 8 warps: eight resident blocks fill an H100 SM's 2048 threads, and a block
#: is wide enough to cover a 4096-float row in one step of 16-byte loads.
BLOCK_THREADS = 256

#: Resident blocks per SM that "fill the GPU once" (2048 threads / BLOCK_THREADS): fewer row
#: blocks than SM count x this give each output a whole block instead of a warp. A run that
#: fills a whole block's step gets a block whatever the count: one block reading a contiguous
#: 16 KB step beat eight warps on eight rows on the H100 (kernel alone: 65536 x 4096 float32
#: 345.8 -> 337.1 us, 16384 x 8192 float16 88.1 -> 86.0); shorter rows lose (65536 x 4096
#: float16, half a step: 171.5 -> 218.0), so they keep a warp.
BLOCKS_PER_SM = 8

#: ... but only where the run fills the block's steps: a block per output waits on its last,
#: partial step, a warp per output on one an eighth the size. The share of a run's step loads left
#: idle may be this much for every resident block (4 blocks, the float32 kernel: 1/4; 3, the
#: float16 one at 69 registers: 3/16). H100, kernel alone, same run, 256 MB of rows, % of the
#: ceiling, block -> warp: float32 rows of 4160-5120 (1.02-1.25 steps) 88-92 -> 100-101, int32
#: of 5000 87 -> 97, float16 of 8320-11264 75-85 -> 99-101, of 9999 78 -> 98; a block stays
#: ahead where the steps fill: float32 of 6144-7168 (1.5-1.75 steps) 103 vs 98-99, float32 of
#: 4096 104 vs 101, float16 of 14336 and 16384 102-106 vs 99-102; float16 of 12288 and 18432 (idle
#: 1/4, 3 blocks) 91 vs 99-100 take a warp. Missed: rows one or two vectors past whole steps read
#: as fast as whole ones with a block (float32 of 4100 / 4104: 86.3 / 86.6 us, a warp 90.3 / 90.4;
#: from 4112 on 101.6 with a block), unexplained, so left to the rule.
BLOCK_ROW_IDLE_PER_BLOCK = 1 / 16

#: Work is split across blocks only until the grid reaches SM count x this. Three blocks of 256
#: threads with four 16-byte loads in flight each keep an SM's share of HBM busy; more blocks only
#: add partials and a longer tail. Kernel alone on the H100 (CUDA graph), target 8 -> 3 per SM:
#: higher_16Mx16 361.5 -> 350.6 us, higher_65536x4096 355.6 -> 346.5, mid_256x1024x256 92.9 -> 88.6
#: (no split), nchw 37.9 -> 36.9, full_1d 354.8 -> 350.1.
SPLIT_BLOCKS_PER_SM = 3

#: ReduceInner's launch bound for a struct state (argmax, Welford, logsumexp): registers must allow
#: this many resident blocks per SM. Unbounded, a state took 96-110 registers and held an SM to two
#: blocks: a bound of three took argmax on the H100 (kernel alone, same run) 2733 -> 2989 GB/s over
#: 256M floats, 2644 -> 3009 over 4096 rows of 65536, with no spills. Given three, ptxas spends them
#: (float32 argmax over rows of 64: 64 registers unbounded, 71 bounded); four holds a fold of short
#: rows, whose blocks live one tile, to 64. 3 -> 4, H100, kernel alone, same run, 256 MB of float32
#: rows, % of the ceiling: argmax over widths 16-65536 76-92 -> 85-98 (64: 79 -> 87), nanargmax
#: 73-95 -> 76-97; logsumexp, the 2-norm, ptp and the compensated sum unchanged (48-64 registers:
#: four blocks either way; rows of 64, 4096 and 16M, twice each, within 1 point but one 4096 call);
#: Welford spills 24 bytes at four and loses where the fold loops (rows of 4096: 98 -> 91), so a
#: bound that spills at all falls back to INNER_SPILL_MIN_BLOCKS (config.lighter).
#: Scalars keep no bound (0): given one, ptxas spends it (48 -> 79 registers for a float32 sum).
INNER_MIN_BLOCKS = 4

#: The bound a state's rows fall back to where INNER_MIN_BLOCKS spills (see above).
INNER_SPILL_MIN_BLOCKS = 3

#: ReduceOuter's launch bound for a heavy state (kps.ReduceOp's `heavy`: logsumexp and the
#: arg-reductions), whose splits then fill the waves of these blocks. Unbounded, their float32
#: kernels take 74-80 registers, 3 blocks per SM: too few warps to hide the merges. H100, one call,
#: same run, three rounds, % of the ceiling, unbounded -> bounded: logsumexp over (4096, 65536) axis 0
#: 87 -> 98, (1024, 262144) 87 -> 97, (64, 4M) 92 -> 97, (256, 1024, 256) axis 1 72 -> 89; argmax
#: 93 -> 98, 92 -> 98, 94 -> 95, 76 -> 89; nanargmax 95 -> 97, 97 -> 98, 95 -> 95, 82 -> 89. Lost:
#: columns of 64 floats, (1M, 64): argmax 69 -> 65, nanargmax 72 -> 70. Not heavy: Welford (var
#: gains nothing; nanvar 96 -> 99 over (4096, 65536) but 58 -> 50 over (1M, 64), 95 -> 93 over
#: (16M, 16)). With splits at SPLIT_BLOCKS_PER_SM instead, (32, 4096, 1024) over axis 1 logsumexp
#: fell 93 -> 82 (768 blocks: 1.45 waves of 528). Over every width (256 MB, 25 widths from 1 to
#: 9999, axis 0, heavy against not): float32 logsumexp 0.97-1.10x, argmax 0.92-1.01x (the losses at
#: 32-100 columns); float16 logsumexp 0.99-2.00x, argmax 0.99-1.54x (with the halved tiles below).
#: At 64 MB the narrow columns lost more (float32 argmax over 48-100 columns 0.82-0.88x, (5349, 64,
#: 7, 7) over (0, 2) 0.87x: one tile split over the whole GPU, whose extra splits lengthened the last
#: block's combine); since that combine has two levels (SPLIT_ONE_LEVEL_ROUNDS) and states fold an
#: element at a time (kps::ReduceUnary), over columns 16 to 1024 wide and two 3-d/4-d layouts, one
#: call: float32 logsumexp 1.00-1.04x, argmax 0.95-1.00x, bool argmax 0.96-0.98x, float16 logsumexp
#: 1.06-1.31x, argmax 0.97-1.31x, (5349, 64, 7, 7) argmax 0.96x.
HEAVY_COL_MIN_BLOCKS = 4

#: The local memory (stack and spilled registers) a thread of a bounded state tile may take (a heavy
#: state's columns, HEAVY_COL_MIN_BLOCKS; any state's rows, INNER_MIN_BLOCKS): float32 argmax columns
#: take 32 bytes (ptxas), logsumexp and nanargmax none. Where the bound takes more, the
#: launcher halves the tile's elements until it fits (float16 logsumexp: 32 elements, 120 bytes; 16,
#: 16, kept; before kps::ReduceUnary 264, 48 and at 8 none). A spill in the fold loop costs more than
#: the smaller tile: float32 logsumexp bounded with 64 bytes ran at 52% of the ceiling over (65536,
#: 4096) where without a spill it runs at 100 (kernel alone), float16 logsumexp at 16 elements (48
#: bytes) over 256 columns 24% where 8 elements ran at 29. H100, one call, same run, % of the
#: ceiling, float16 columns, unbounded 32 elements ->
#: bounded 8: logsumexp over (65536, 8192) axis 0 28 -> 61, (16M, 16) 28 -> 58, (256, 1024, 256) axis 1
#: 25 -> 47, (1M, 64) 23 -> 40; argmax 35 -> 59, 35 -> 57, 30 -> 50, 30 -> 38; bfloat16 logsumexp
#: over (8192, 8192) 24 -> 47. Lost: nanargmax over (1M, 128) 48 -> 40 and (1M, 64) 44 -> 38;
#: int16 argmax over (4096, 65536) (bounded, 16 elements, no spill) 67 -> 63. Rows: before a state's
#: elements were lifted and folded one at a time (kps::ReduceUnary), 32 float16 elements lifted to
#: argmax states spilled 304 bytes (nanargmax 1128, logsumexp 104) and halving them gained (H100,
#: kernel alone, argmax over (8192, 8192) axis 1 32 -> 60% of the ceiling, (4096, 1000) 12 -> 35);
#: now nothing there spills, and where nothing spills halving loses (float16 var over (1M, 64) 72 ->
#: 50, int16 argmax over (8192, 8192) 63 -> 58).
BOUNDED_MAX_LOCAL_BYTES = 32

#: ReduceInner gives an output of a struct state (argmax, Welford, logsumexp) a whole block only
#: where its run spans this many block steps: the block's combine at the end (shuffles of several
#: fields, shared memory, two barriers) is paid per output. Rows of 4096 floats (one step), H100,
#: kernel alone, same run, block -> warp per row: argmax 2201 -> 3014 GB/s, logsumexp 1960 ->
#: 2919, var 2617 -> 3095; rows of 8192 (two steps): argmax 2742 -> 3000, logsumexp 2493 -> 2926.
STATE_BLOCK_ROW_STEPS = 4

#: Bytes per load: the widest global access a thread can issue.
LOAD_BYTES = 16

#: Register-tile rows (loads in flight per thread before the first use). Four 16-byte loads per
#: thread at full occupancy is ~128 KB in flight per SM, well over what HBM3 latency asks for.
MAX_TILE_ROWS = 4

#: ReduceInner's tile rows where a transform reads an input off the first one's 16-byte grid (x[1:]
#: beside x[:-1]) and a group of lanes is a warp or more: its lanes share that input's chunks
#: (kps::ReadDataVecLanes), which holds every input's loads of every row in registers at once:
#: 121-128 registers with MAX_TILE_ROWS rows (two blocks per SM), 58-78 with two. H100, kernel alone,
#: same call, 4 -> 2 rows: (8192, 4097) float32 rows as two views over axis 1 75.5 -> 63.2 us,
#: (262144, 259) 263.5 -> 164.7, the Rosenbrock cost over 90M floats 129.2 -> 128.4 (with the split
#: below), three views of 90M floats 135.8 -> 140.4, float16 views 133.1 -> 137.0. Narrower groups
#: (rows of 65: 8 lanes) read each input alone with MAX_TILE_ROWS rows: sharing there took
#: 206 -> 271 us.
INPUTS_TILE_ROWS = 2

#: SPLIT_BLOCKS_PER_SM for those tiles: more blocks for half the rows keeps as many loads in flight,
#: as far as the registers allow (the launcher re-plans with the compiled kernel's occupancy: four
#: at 58 registers, five at 48 where the shift is a constant, kps::LoadShiftedLanes). H100,
#: kernel alone, same call, 3 -> 4: the Rosenbrock cost 133.0 -> 128.6 us, x[1:] beside x[:-1]
#: 133.2 -> 131.5, two arrays off each other's grid 253.5 -> 249.7; 4 -> 5 with the constant shift:
#: the Rosenbrock cost 127.0 -> 125.5, others within 0.3 us.
INPUTS_SPLIT_BLOCKS_PER_SM = 5

#: Elements a register tile may hold (rows x vector width): caps registers for 1-byte inputs.
MAX_TILE_ELEMENTS = 32

#: A split block gets at least this many full tile steps of work. One step is already 32+ rows
#: (or 4096+ elements) per output, so the partials cost at most a few percent of the input's
#: traffic, and small inputs split finely enough to hide DRAM latency (a thread looping 16 times
#: over dependent loads costs 16 round trips: seen as 10 us on a 4 MB column sum).
MIN_SPLIT_STEPS = 1

#: A split's combine (ReduceOuter, ReduceStaged): where its last block would take more rounds of
#: partial loads than this (a round: each thread's rows of partials in flight at once, then folded,
#: about an L2 round trip), the partials are combined in two levels, groups of splits first, each by
#: the last of its blocks while the others still fold (kps::CombineSplits). H100, kernel alone, same
#: run, 64 MB float32 columns over axis 0, one level -> two (of 38 plans it changes, float32 and
#: float16, widths 48-256: 1.03-2.11x, geomean 1.39x): 64 wide var 29 -> 55% of the ceiling, argmax 34
#: -> 55, logsumexp 36 -> 42, sum 77 -> 80; 100 wide argmax 24 -> 51; 255 wide (staged) sum 52 -> 75,
#: var 32 -> 55; float16 255 wide sum 55 -> 74; 256 wide with 528 splits forced, sum 66 -> 79, var 13
#: -> 44. With 2 rounds here the losses were plans of 3 (511 wide, 24 splits: var 74 -> 71, argmax
#: 71 -> 69): a second level costs a fence and an atomic more.
SPLIT_ONE_LEVEL_ROUNDS = 4

#: Last-block counters reserved at the head of a split launch's workspace (uint32 each): one per
#: block column, and one per group of splits in each where the combine has two levels.
SPLIT_COUNTERS = 65536

#: ReduceInner splits an output group across blocks only when the group has at least this many
#: tile steps in all. A split has a fixed cost (a fence, an atomic, a second pass over the
#: partials) that one saved DRAM round trip does not repay: a 1024 x 1024 float32 row sum (2 steps
#: per row) took 3.86 us split in two and 2.52 us unsplit on the H100 (kernel alone, CUDA graph of
#: 20 launches). ReduceOuter keeps splitting short work: its column sums gain (5.3 vs 8.6 us).
INNER_SPLIT_MIN_STEPS = 3

#: ReduceInner walks the runs of an output (its contiguous reduced stretches, e.g. the H x W planes
#: of a batch-norm statistic) as one flat sequence of vectors when a run is shorter than this many
#: steps of the group and every run starts 16-byte aligned. Run by run, a short run leaves lanes
#: idle and its last step half empty. Measured on the H100 (kernel alone, CUDA graph of 20
#: launches), run by run -> flat: NCHW (128, 64, 56, 56) float16 over (0, 2, 3) 25.8 -> 22.3 us,
#: (256, 32, 28, 28) float32 14.0 -> 8.8 us, (4096, 8, 64) over (0, 2) 56.9 -> 6.4 us; runs of
#: 2.5 steps still gain 1.5% ((32, 64, 10240) float32), longer runs gain nothing.
FLAT_RUN_MAX_STEPS = 4

#: CUDA's grid limits (x: 2^31 - 1, y: 65535). Work beyond them is looped over, never dropped.
MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535

#: ReduceOuter: the most threads side by side along the kept dim (BX). A warp's 32 x 16 bytes
#: is a 512-byte contiguous run per reduced row.
MAX_COL_THREADS = 32

#: ReduceOuter: the tile steps a thread walks down its columns before the block takes more columns
#: side by side instead (BX up to the block) where the reduced rows are few: each row of threads
#: ends in a combine in shared memory (a state's: several fields, a Welford merge) and a block's
#: tile is short-lived, so fewer, wider tiles walked longer win. States, H100, one call, same run,
#: % of the ceiling, 1 -> 16: (64, 4M) over axis 0 var 69 -> 94, argmax 76 -> 92, logsumexp 66 ->
#: 91, nanvar 63 -> 87; (16, 16M) var 49 -> 91, argmax 69 -> 88, logsumexp 62 -> 88, nanvar 41 ->
#: 78; (256, 1M) var 91 -> 93, logsumexp 84 -> 89 (4 gave half of it). Sums (scalars took 1 until
#: 2026-11-27), kernel alone, same run, 1 -> 16, over the middle axis of 256 MB: float32 (N, 5,
#: 2048) 84.9 -> 100.0, (N, 7, 2048) 95.7 -> 100.8, (N, 12, 512) 89.5 -> 97.1, (N, 24, 2048) 88.2
#: -> 98.1; float16 (N, 7, 2048) 68.3 -> 88.7, (N, 12, 2048) 57.3 -> 97.8, (N, 24, 2048) 54.4 ->
#: 95.4, (N, 32, 512) 83.6 -> 94.2, (N, 40, 8192) 63.9 -> 90.4; (64, 4M) over axis 0 float32 100.7
#: -> 101.5, float16 92.7 -> 99.2; none of 45 layouts slower than noise (4 sat between 1 and 16).
#: Columns of 1024 rows or more are unchanged.
COL_ROW_STEPS = 16

#: ReduceOuter: the bytes a thread keeps in flight down a state op's columns. Where the state's
#: size caps the columns a thread takes (MAX_COL_ACC_BYTES: 2 for Welford's 32 bytes, so 8-byte
#: loads), more rows make up for it (8 rows of float32, 16 of float16), as a sum keeps 4 rows of 16
#: bytes. H100, one call, same run, % of the ceiling, 4 rows -> 64 bytes: var over (65536, 4096)
#: axis 0 94.5 -> 98.8, (16M, 16) 91.8 -> 94.7, float16 (65536, 8192) 69 -> 85; nanvar 89.8 -> 94.7,
#: 87.6 -> 90.6, 58.6 -> 67.8. Lost: nanvar over (4096, 65536) 94 -> 91-92 and (256, 1024, 256) axis
#: 1 78 -> 75 (74 registers: 3 blocks per SM).
STATE_COL_TILE_BYTES = 64

#: ReduceOuter: rows in flight per thread where the rows start off the 16-byte grid (a column per
#: thread, element by element, so four rows would keep only 16 bytes in flight). Same run on the
#: H100, kernel alone, against 16-byte loads realigned in registers (two loads per vector):
#: float16 columns 257 / 2047 / 4095 wide 1823 -> 2509 / 2142 -> 2763 / 2144 -> 2763 GB/s, bool
#: `any` 1198 -> 1817 / 1391 -> 1990 / 1433 -> 2013, float32 1001 wide 2776 -> 2838; 9999 wide
#: lost (float16 2786 -> 2529 GB/s, bool 2047 -> 1711), as did 511 floats (2777 -> 2626).
MISALIGNED_COL_TILE_ROWS = 16

#: ReduceOuter: the most adjacent columns (outputs) one thread accumulates. 1-byte inputs would
#: fit 16 in a load, but 16 accumulators and their tile held bool any to 3 blocks per SM; with 8
#: (8-byte loads, 4 rows in flight) the H100 ran higher_65536x4096 111.4 -> 101.0 us, mid_32x4096x1024
#: 56.3 -> 51.9, small_1024x1024_ax0 15.3 -> 6.4, and higher_64x4M 117.2 -> 120.4 (kernel alone,
#: 5 of 7 column cases faster). Wider types are not affected.
MAX_COL_VEC = 8

#: ReduceOuter: the bytes of accumulators one thread keeps for its adjacent columns. A struct state
#: is 16 (argmax) to 32 bytes (Welford) a column, and 8 columns of float16 argmax took 169
#: registers (one block per SM); capped, H100, kernel alone, same run: float16 argmax 16M x 16
#: columns 1065 -> 1513 GB/s, 4096 x 65536 1056 -> 1519; float32 var (1M, 100) over axis 0 1555 -> 2067.
#: Scalars are not affected (16-byte loads already cap them at 32 bytes).
MAX_COL_ACC_BYTES = 64

#: ReduceOuter: shared memory its accumulators may take (BLOCK x columns per thread x accumulator
#: bytes), under the 48 KB a kernel may declare: a 24-byte state (Welford in float64) over bool
#: columns takes 4 columns a thread instead of 8.
MAX_COL_SHARED_BYTES = 32768

#: The widest group of lanes that shares one output by warp shuffles alone; beyond it the whole
#: block shares one output (ReduceInner with LANES == BLOCK_THREADS).
WARP_SIZE = 32

#: ReduceStaged: 16-byte vectors each thread loads per span, so a span holds up to
#: BLOCK_THREADS x this x 16 bytes (32 KB) and every thread keeps this many loads in flight
#: while the block folds the span before.
STAGE_VECTORS = 8

#: ReduceStaged: the same where a span holds whole reductions (short rows, each folded and stored
#: straight away): a smaller span is a smaller tile, so the grid has more of them.
STAGE_VECTORS_DIRECT = 4

#: ReduceStaged: the most outputs (slots) one thread accumulates across the spans of a tile.
#: (Where every span holds whole reductions, a thread folds and stores its slots one at a time and
#: takes any number.) More slots make a tile's span wider, so more bytes are in flight a block.
#: H100, kernel alone, same run, % of the ceiling, 4 -> 8 (-> 16): float32 (N, 3, 256) over axis 1
#: 89.8 -> 95.2 (88.4), (N, 2, 256) 69.4 -> 75.3 (80.4), (N, 3, 33) 89.7 -> 95.2 (91.0), (N, 5, 9,
#: 33) over axis 1 86.3 -> 95.6, float16 (N, 2 / 3 / 8, 128) 37.3 / 49.1 / 74.5 -> 41.5 / 54.5 /
#: 81.4, bool `any` (N, 2, 128) 67.7 -> 73.3, (N, 3, 256) 88.3 -> 93.1, (N, 4, 5, 6, 7) over axis 1
#: 13.1 -> 34.6 (ReduceOuter before: four slots gave it no span); lost: float16 columns 2047 wide
#: over axis 0 89.5 -> 85.3 and (N, 5, 9, 33) over axis 0 88.1 -> 85.8 (ReduceOuter before). A power
#: of two of at most 16 (the split combine folds 16 / slots partial rows a round).
STAGE_MAX_SLOTS = 8

#: ... for a state (several fields an accumulator): var and argmax ran the same at 4 and 8 (var
#: float32 (N, 3, 33) over axis 1 28.2 / 29.5%), and 4 keeps their registers (a power of two, as above).
STAGE_MAX_STATE_SLOTS = 4

#: ReduceStaged takes a reduction whose innermost reduced run is at most this many bytes and off
#: the 16-byte grid (a thread per short row, or a few lanes per longer one, reading the span from
#: shared memory); longer runs stream through ReduceInner's 16-byte loads with a head and a tail.
STAGE_MAX_RUN_BYTES = 2048
#: (A limit of 512 for rows, tried: H100, kernel alone, same run, float32 rows of W in ReduceInner
#: against staged: W = 255 / 383 / 511 2842 -> 2891 / 2764 -> 2912 / 2858 -> 3011 GB/s, but W = 129 /
#: 257 2824 -> 2333 / 2840 -> 2465, and several reduced dims far worse ((45191, 5, 9, 33) over
#: (0, 2, 3) 2448 -> 425 in the sweep), 1-byte rows of 1001 2058 -> 1095. Kept at 2048.)

#: ... and runs of STAGE_WORD_MIN_RUN_BYTES to this many bytes where a 1-byte `any` / `all` folds
#: them as words (FoldSharedWords: a word per shared-memory read, and lanes enough to share the
#: block among a span's runs). Bool `any` rows, H100, kernel alone, same run, bytes -> words (GB/s):
#: W = 5 / 9 / 33 / 43 / 127 / 511 / 1023 / 2047: 1690 -> 1799 / 1996 -> 2328 / 2471 -> 2726 /
#: 1661 -> 2722 / 1691 -> 2699 / 1367 -> 2770 / 1042 -> 2787 / 1586 -> 2773; `all` 1001 2530 ->
#: 2716. Up to 32 KB (a span) the longer rows ReduceInner read as misaligned bytes gain too: W =
#: 4095 2091 -> 2729, 9999 1251 -> 1902; runs of 2 and 3 bytes lose (1215 -> 1178, 1522 -> 1281), and
#: since bytes fold side by side (FoldSharedRows), so do runs of 4 (bool `any` (N, 4) words -> bytes
#: 1789 -> 1976); 5 to 7 bytes stay words for `any` (6: 2014 -> 1795, 7: 1960 -> 1818 as bytes), which
#: gives up `all` of 5 / 7 (1733 -> 2087 / 1809 -> 2147 as bytes). (Words side by side too, tried:
#: 2014 -> 1726 at 6, 2627 -> 2412 at 13, `all` of 13 2468 -> 2073; not kept.) H100, kernel alone.
STAGE_WORD_MAX_RUN_BYTES = 32768
STAGE_WORD_MIN_RUN_BYTES = 5

#: ReduceStaged across kept columns: a thread per column side by side (BX = the columns, which need
#: not divide the block; the threads past BLOCK // BX rows of them only stage), where the columns
#: are more than half a warp and at most half a block. A power of two of them idles the lanes past
#: the last column in every row of threads: 15 of 32 at 17 columns, 63 of 128 at 65, while each lane
#: folds its column a shared-memory load per element (bool columns 17 / 33 / 65 wide: 74-79% of the
#: ceiling alone, H100, 1c2570b, where 127 / 255 reach 84-86%). Wider than half a block, BX = BLOCK
#: issues as many warps, and one row of 129-255 threads took more registers (float32 112 against
#: 96). Same registers as the power of two below that (NVRTC, sm_90). Not yet measured on the H100.
STAGE_RAGGED_COLUMNS = True

#: ReduceStaged: a 1-byte `any` / `all` of kept columns that are no whole words (W not a multiple of
#: 4; multiples are read four columns a word by ReduceOuter) folds the span as words, a residue of
#: lcm(W, 4) / 4 words a slot, and reads the columns off the residues' bytes at the end (config.py,
#: `_plan_staged`): a shared-memory load per four bytes where each column took one per byte (bool
#: columns 17 / 33 / 65 / 1001 wide: 74-79% of the ceiling alone, H100, 1c2570b), where the residues
#: are at most a block (one a thread: W up to 256, or 512 for W = 2 mod 4). Not yet measured.
STAGE_WORD_COLUMNS = True

#: ReduceStaged: rows of a 1-byte `any` / `all` at most this many bytes long, each a whole reduction,
#: on the 16-byte grid, are folded 16 a thread (FoldByteRows: their 16-byte chunks from shared
#: memory, the rows' bytes picked out of the words in registers, one 16-byte store of 16 results).
#: Before, bool rows of 2-7 ran at 58-67% of the ceiling alone (H100, 6400a25): a shared-memory
#: load per byte (2-4) or per word with a shuffle per row (5-7), and a byte store per row. 0: off.
STAGE_BYTE_ROWS_MAX = 16

#: Rows of whole words (8, 12, 16 bytes) that fold 16 a thread as above rather than as words read
#: from global memory (ReduceInner / ReduceStaged over uint32). Not yet measured.
STAGE_BYTE_ROWS_OVER_WORDS = True

#: FoldByteRows' threads load their 16-byte chunks W apart: gcd(W, 8) threads of a quarter-warp on
#: one bank group. Rows of 8 and 16 (8-way) lost to words on the H200 (bool `any`, kernel alone,
#: d7e0c61, words -> 16 a thread: 8 wide 81.9% -> 71.8% of the ceiling, 16 wide 87.8% -> 64.2%;
#: 12 wide, 4-way, 81.1% -> 92.6%; the H100 showed 8 wide 91.4% -> 94.9%, 16 92.6% -> 92.7%).
STAGE_BYTE_ROWS_MAX_BANK_WAYS = 4

#: Residues of the word columns (above) a thread may fold: lcm(W, 4) / 4 may be this many blocks.
#: H100, kernel alone, bool `any` columns, one residue a thread -> two -> four: 257 wide 78.5% ->
#: 83.4% -> 82.8% of the ceiling (bytes -> words), 511 84.8% -> 84.1% -> 83.4%, 1001 and 1023 75.3%
#: -> 75.9% -> 74.2% (several residues take 118-123 registers, not 80).
STAGE_WORD_COLUMN_RESIDUES = 2

#: ReduceOuter: a 1-byte `any` / `all` of kept columns off the word grid (W no multiple of 4, or a
#: start off it) at least this wide reads each row's columns four a word, from the aligned word that
#: holds the first byte and the next (kps::ReadWordsShifted), where the staged kernel folds bytes
#: (its word columns stop at 510, STAGE_WORD_COLUMN_RESIDUES). H200, kernel alone, bool any over
#: axis 0, ~256 MB, % of the ceiling, bytes -> shifted words: 513 wide 50.7 -> 71.0, 1001 54.0 -> 80.2,
#: 1025 48.1 -> 76.4, 2047 48.3 -> 81.3, 4095 48.0 -> 82.8, 9999 40.4 -> 80.8, 30001 47.3 -> 72.6;
#: below, the staged word columns are as fast or faster (511: 78.3 staged, 79.7 shifted; 257: 74.7
#: staged, 61.9 shifted).
SHIFTED_WORD_COLUMNS_MIN = 512

#: ReduceStaged takes a reduction whose innermost kept dim is at most this many bytes and off the
#: 16-byte grid. Wider columns keep ReduceOuter, which reads misaligned rows a column a thread
#: (MISALIGNED_COL_TILE_ROWS) and splits them into column tiles, so its split combine stays short.
STAGE_MAX_COLUMN_BYTES = 4096

#: Short runs that are 16-byte aligned and whole vectors are staged too where they are at most this
#: many bytes (a reduced run of one vector gives ReduceInner a lane per row and a shuffle per
#: vector); longer aligned runs keep ReduceInner's and ReduceOuter's vector loads.
STAGE_ALIGNED_RUN_BYTES = 16

#: ... and aligned kept columns of at most this many bytes where the reduced rows are fewer than a
#: step of ReduceOuter's tile (config._few_rows_for_columns): a tile of 128 float16 columns is 16
#: threads wide and 64 rows deep, so over 3 rows 61 of its 64 rows of threads had none. H100,
#: kernel alone, same run, 256 MB over the middle axis, ReduceOuter -> staged, % of the ceiling:
#: float16 (N, 2-12, 128) 6.8-19.7 -> 37-93, (N, 3-12, 512) 25-57 -> 49-93 ((N, 2, 512) 37 either
#: way), float32 (N, 2-12, 256) 42-90 -> 69-97, bool `any` (N, 3 / 8, 256) 15 / 30 -> 87 / 96.
#: States keep ReduceOuter (config._wants_stage): var float16 (N, 3 / 8, 512) 29 / 55 -> 15 / 30
#: staged (argmax gained, 22 / 42 -> 52 / 75, var float32 (N, 8, 256) 40 -> 55, as one rule with the
#: split's two_levels: states staged where ReduceOuter is the other way were slower there too).
#: Wider columns: float32 (N, 2, 512) staged 82 -> 69 (and (N, 3 / 5, 512) 69 / 86 -> 90 / 93).
STAGE_FEW_ROW_COLUMN_BYTES = 1024

#: ReduceStaged: lanes on one reduced run read neighbouring words of shared memory, a thread every
#: run bytes / lanes apart; as many lanes share a run as keep those reads within this many-way bank
#: conflicts (a thread per run where the run's bytes allow it). Bank conflicts cost less than lanes
#: sharing a run (a shuffle and a store's bookkeeping each): 16-byte rows, H100, kernel alone, same
#: run, 2 -> 4 ways (two lanes a row -> one): float32 of 4 2610 -> 2819 GB/s, float16 of 8 2413 ->
#: 2701, bool `any` of 16 (read as words) 1982 -> 2769; other widths unchanged.
STAGE_ROW_BANK_WAYS = 4

#: ReduceStaged, a direct span (every reduced dim whole in it) whose slots fold one strided run each
#: (FoldStrided): lanes share a run beyond the bank rule above only as far as this many times the
#: slots fill the block (a thread folds short runs side by side, FoldSharedRows). A scalar slot whose
#: folds are several dims (FoldRuns: an index calculator an element) takes lanes until the slots fill
#: it. H100, kernel alone, same run (base / new twice), % of the ceiling, several-dim folds 4 -> 1:
#: float32 (N, 5, 9, 33) over axes (1, 3) 62.3 -> 86.3, float16 47.7 -> 58.7, (N, 64, 7, 7) over
#: (1, 3) float32 85.1 -> 94.9, float16 51.3 -> 64.6, bool `any` 25.3 -> 38.7, (N, 16, 16, 16) bool
#: over (1, 3) 75.6 -> 95.4, (N, 4, 5, 6, 7) float32 over (1, 3, 4) 70.5 -> 94.0, (N, 6, 10, 14) over
#: (1, 3) 68.7 -> 92.8; lost: bool (N, 4, 5, 6, 7) over (1, 2, 4) 43.3 -> 41.9. States keep 4: var
#: (N, 4, 5, 6, 7) over (1, 4) 77.8 -> 59.2, (N, 64, 7, 7) over (1, 3) 58.5 -> 49.6 (their lanes'
#: combine costs several times a scalar's). One run a slot lost at 1: float16 rows of 127 94.6 ->
#: 82.0, var rows of 33 93.5 -> 84.0.
STAGE_DIRECT_RUN_FILL = 4

#: ReduceStaged: where a thread folds whole short runs of a span alone (direct, a lane a run), it
#: folds up to this many side by side (FoldSharedRows), so the loop's bookkeeping and the store's
#: address are paid once for them and their shared-memory reads are in flight together...
STAGE_DIRECT_ROWS = 4
#: ... as many as keep their elements at most this many (longer runs amortise their loop alone)...
STAGE_DIRECT_FOLDS = 16
#: ... their accumulators at most this many bytes (Welford's 24-byte state runs best alone)...
STAGE_DIRECT_ACC_BYTES = 32
#: ... and the runs a thread folds twice (its last group passing the span's end) at most this share.
#: Kernel alone, same run, one run a thread element by element (before) -> FoldSharedRows with the
#: NY this rule picks (GB/s), H100: float32 rows of 2 / 3 / 4 / 7 / 17 2724 -> 2701 / 2825 -> 2834 /
#: 2604 -> 2833 / 2762 -> 2882 / 2726 -> 2876, float16 of 2 / 3 / 8 / 13 2290 -> 2637 / 2645 -> 2725 /
#: 2412 -> 2672 / 2682 -> 2788, bool `any` of 2 / 3 / 16 1218 -> 1776 / 1526 -> 1731 / 1977 -> 2775,
#: var of 7 2561 -> 2712; H200, the rule itself: float32 of 4 2721 -> 3983, float16 of 2 2337 -> 3359,
#: of 17 3378 -> 3806, bool of 16 1998 -> 3810, (290514, 33, 7) over axis 2 3816 -> 4023; none of 32
#: cases more than 0.3% slower.
STAGE_DIRECT_REFOLDS = 0.1

#: ReduceStaged splits a tile only while the last block's combine of the partials takes at most
#: this many round trips to L2 (16 loads in flight per thread)...
STAGE_COMBINE_TRIPS = 4

#: ... or, where that leaves fewer than STAGE_MIN_BLOCKS_PER_SM blocks per SM (a few wide tiles:
#: 65 to 1024 columns over one reduced dim), up to this many: a longer combine at the end costs
#: less than a grid too small to keep the memory busy (measured: 65 floats wide, 2700 GB/s
#: kernel alone at 8 trips against 1450 in ReduceOuter).
STAGE_MAX_COMBINE_TRIPS = 16
#: ... and this many for 1-byte inputs, whose other way, ReduceOuter reading misaligned columns a
#: column per thread, loads one byte at a time. H100, kernel alone, same run, 16 -> 64 trips: bool
#: `any` columns 257 / 511 / 1001 wide 1814 -> 2348 / 1897 -> 2527 / 1920 -> 2265 GB/s (ReduceOuter
#: -> staged), `all` 511 wide 1881 -> 2540, (85596, 64, 7, 7) over (0, 3) 426 -> 1261, over (0, 2)
#: 897 -> 1107, (180764, 5, 9, 33) over (0, 1) 1836 -> 2406; 255 wide (staged either way, 250 -> 258
#: splits) 2585 -> 2495. Wider types lose (float32 511 2636 -> 2554, float16 1001 2601 -> 2202).
STAGE_MAX_COMBINE_TRIPS_1_BYTE = 64
STAGE_MIN_BLOCKS_PER_SM = 2
#: Where one level of the combine folds too few splits in those trips to give every SM a block
#: (tiles of hundreds of slots, a few rows of partials a round), the splits are as many as two
#: levels fold in as many rounds (kps::CombineSplits). H100, kernel alone, same run, % of the
#: ceiling, one level -> two: float32 sums over (N, 64, 7, 7) / (N, 128, 5, 5) / (N, 200, 3, 3) /
#: (N, 96, 7, 3) axes (0, 3) 57.5 / 43.6 / 32.2 / 35.6 -> 88.2 / 89.7 / 89.8 / 90.8 (ReduceInner, a
#: 28-byte run a thread -> staged), (N, 512, 3) / (N, 1000, 5) over (0, 2) 39.3 / 50.1 -> 88.3 /
#: 86.3, (N, 5, 129) over 0 and (N, 5, 9, 33) over (0, 1) 89.1 / 87.8 -> 91.4 / 93.9, the 4-d ones
#: over (0, 2) 61.3-87.6 -> 87.2-91.1 but (N, 64, 7, 7) 89.9 -> 87.6 (ReduceOuter -> staged);
#: float16, the same 13 layouts, 16.0-86.9 -> 58.8-91.9, none slower; bool `any` (N, 200, 3, 3)
#: over 0 88.2 -> 93.6; odd columns over axis 0 (ReduceOuter -> staged), float32 257 / 511 / 1001 /
#: 1023 wide 87.3 / 88.7 / 89.8 / 89.8 -> 94.3 / 94.7 / 91.4 / 92.6, float16 257-1023 83.3-88.5 ->
#: 90.6-93.7, bool 1500 / 3000 89.4 / 90.1 -> 94.7 / 91.5. States: var / argmax / logsumexp where
#: the other way is ReduceInner 15.7-26.3 -> 40.4-57.6; where it is ReduceOuter they keep one level
#: (staged there: 1.14-1.80x slower, var 81.4 -> 45.3 on (N, 64, 7, 7)).

#: ReduceStaged's span is at least one 16-byte vector per thread: a smaller one leaves the block
#: waiting on a few loads (a span of 7 x 7 floats ran at 12 GB/s).
STAGE_MIN_SPAN_VECTORS_PER_THREAD = 1


#: Splits are counted so the grid fills the waves of SM count x SPLIT_BLOCKS_PER_SM it occupies;
#: the fewest waves whose fill comes within this much of the best win. Taking the best fill
#: outright doubled the blocks for a 1-3% fuller second wave and cost more than it gave: of 599
#: planned layouts 12 change, all faster (H100, kernel alone, same run, twice, best fill -> 0.05;
#: 0.10 plans the same): 16 rows of 16M floats 2980 -> 3074 GB/s (49 -> 24 splits), 8 of 32M 2933 ->
#: 3038, 24 of 11M 2829 -> 2926, columns 511 wide float32 / float16 / bool any 2554 -> 2641 / 2452
#: -> 2545 / 1832 -> 1895, (104044, 5, 129) over axis 0 2589 -> 2654, (4681, 7, 2048) over (0, 1)
#: 2883 -> 2944, (21399, 64, 7, 7) over axis 0 2910 -> 2956, (262144, 16, 64) over (0, 2) 3059 -> 3085.
SPLIT_FILL_SLACK = 0.05

#: ReduceOuter splits the reduced rows of column tiles that outnumber the resident blocks when
#: whole tiles would leave the last wave this empty or emptier (a grid of 1.3 waves runs as long as
#: 2 full ones). H100, kernel alone, same run: argmax over 4096 x 65536 floats, axis 0 (512 tiles,
#: 396 resident) 2506 -> 2853 GB/s, logsumexp 1986 -> 2369, float16 sum over 4096 x 70000 2276 -> 2571.
MIN_WAVE_FILL = 0.8
