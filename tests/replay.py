"""A Python replay of a planned launch: which input offsets each thread of the grid reads and which
output offsets are written, following ReduceInner / ReduceOuter / ReduceStaged
(kernels/cuda/inner.cuh, outer.cuh, staged.cuh) loop by loop. The coverage tests check every input element is read
exactly once and every output written exactly once, on the CPU, for the tail blocks and splits too,
and that the index each element is lifted with (arg-reductions) is its place in the reduced range.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Tuple

from kernels.planner import ReduceConfig


def _calc(dims) -> Callable[[int], Tuple[int, int]]:
    """kps::IndexCalc: flat index -> (input offset, output offset), dims outermost first."""
    def get(idx: int):
        in_off = out_off = 0
        for d in reversed(dims):
            idx, r = divmod(idx, d.size)
            in_off += r * d.in_stride
            out_off += r * d.out_stride
        return in_off, out_off
    return get


def _ceil(a, b):
    return -(-a // b)


class Replay:
    def __init__(self, cfg: ReduceConfig, itemsize: int, misalign: int):
        self.cfg, self.itemsize, self.misalign = cfg, itemsize, misalign
        self.reads: Counter = Counter()
        self.writes: Counter = Counter()
        self.positions: dict = {}  # input offset -> the index in the reduced range it was lifted with

    def _address(self, offset: int) -> int:
        return self.misalign + (offset + self.cfg.in_offset) * self.itemsize

    def _read(self, offset: int, pos: int) -> None:
        self.reads[offset + self.cfg.in_offset] += 1
        self.positions[offset + self.cfg.in_offset] = pos

    # --- ReduceInner -------------------------------------------------------------------------
    def _fold_strided(self, run, length, stride, lane, lanes, ny, pos, pos_stride):
        i, step = 0, lanes * ny
        while i + step <= length:
            for y in range(ny):
                k = i + lane + y * lanes
                self._read(run + k * stride, pos + k * pos_stride)
            i += step
        if i + lane < length:
            num_y = _ceil(length - i - lane, lanes)
            assert num_y <= ny
            for y in range(num_y):
                k = i + lane + y * lanes
                self._read(run + k * stride, pos + k * pos_stride)

    def _vectors(self, body, v, lane, lanes, num_y, pos, pos_stride):
        vec = self.cfg.vec
        for y in range(num_y):
            k = (v + lane + y * lanes) * vec
            assert self._address(body + k) % 16 == 0, "misaligned vector load"
            for j in range(vec):
                self._read(body + k + j, pos + (k + j) * pos_stride)

    def _fold_contiguous(self, run, length, lane, lanes, pos, pos_stride):
        vec, ny = self.cfg.vec, self.cfg.ny
        head = min(length, ((16 - self._address(run) % 16) % 16) // self.itemsize)
        self._fold_strided(run, head, 1, lane, lanes, 1, pos, pos_stride)
        body = run + head
        num_vec = (length - head) // vec
        v, step = 0, lanes * ny
        body_pos = pos + head * pos_stride
        while v + step <= num_vec:
            self._vectors(body, v, lane, lanes, ny, body_pos, pos_stride)
            v += step
        if v + lane < num_vec:
            num_y = _ceil(num_vec - v - lane, lanes)
            assert num_y <= ny
            self._vectors(body, v, lane, lanes, num_y, body_pos, pos_stride)
        done = head + num_vec * vec
        self._fold_strided(run + done, length - done, 1, lane, lanes, 1, pos + done * pos_stride, pos_stride)

    def _fold_runs(self, row, begin, end, lane):
        """FoldRuns: flat vector indices through the calculator with the run's vectors innermost (a
        vector of one element, VEC 1, is an element load: aligned to its own size)."""
        cfg = self.cfg
        runs = _calc(cfg.red_calc)
        lanes, ny = cfg.lanes, cfg.ny
        i = begin + lane
        while i < end:
            num_y = ny if i + (ny - 1) * lanes < end else _ceil(end - i, lanes)
            for y in range(num_y):
                offset, pos = runs(i + y * lanes)
                w = row + offset
                assert self._address(w) % (cfg.vec * self.itemsize) == 0, "misaligned vector load"
                for j in range(cfg.vec):
                    self._read(w + j, cfg.index_offset + pos + j * cfg.inner.out_stride)
            i += lanes * ny

    def inner(self):
        cfg = self.cfg
        kept, red = _calc(cfg.kept), _calc(cfg.red)
        groups = cfg.block // cfg.lanes
        gx, gy = cfg.grid
        vecs = cfg.inner.size // cfg.vec
        if cfg.rows > 1:  # ROWS: a thread folds rows t, t + BLOCK, ... of one aligned run of NY vectors each
            assert cfg.lanes == 1 and gy == 1 and cfg.num_seg == 1 and not cfg.flat_runs and vecs == cfg.ny
            per_block = cfg.block * cfg.rows  # (a row past the last folds the last again and is not stored)
            for bx in range(gx):
                for base in range(bx * per_block, cfg.num_out, gx * per_block):
                    for row in range(base, min(base + per_block, cfg.num_out)):
                        in_off, out_off = kept(row)
                        self._vectors(in_off, 0, 0, 1, cfg.ny, cfg.index_offset, cfg.inner.out_stride)
                        self.writes[out_off] += 1
            return self
        for split in range(gy):
            seg_begin, seg_end, in_begin, in_end = 0, cfg.num_seg, 0, cfg.inner.size
            if cfg.chunks > 1:
                seg_begin = split // cfg.chunks
                seg_end = seg_begin + 1
                in_begin = (split - seg_begin * cfg.chunks) * cfg.chunk_len
                in_end = min(in_end, in_begin + cfg.chunk_len)
            elif cfg.num_splits > 1:
                seg_begin = split * cfg.segs_per_split
                seg_end = min(seg_end, seg_begin + cfg.segs_per_split)
            for bx in range(gx):
                for base in range(bx * groups, cfg.num_out, gx * groups):
                    assert cfg.num_splits == 1 or base == bx * groups, "split launches must not grid-stride"
                    for group in range(groups):
                        row = base + group
                        if row >= cfg.num_out:
                            continue
                        in_off, out_off = kept(row)
                        if cfg.flat_runs:
                            for lane in range(cfg.lanes):
                                self._fold_runs(in_off, seg_begin * vecs, seg_end * vecs, lane)
                        else:
                            for seg in range(seg_begin, seg_end):
                                seg_off, seg_pos = red(seg)
                                run = in_off + seg_off + in_begin * cfg.inner.in_stride
                                pos = cfg.index_offset + seg_pos + in_begin * cfg.inner.out_stride
                                for lane in range(cfg.lanes):
                                    if cfg.vec > 1:
                                        self._fold_contiguous(run, max(0, in_end - in_begin), lane, cfg.lanes, pos,
                                                              cfg.inner.out_stride)
                                    else:
                                        self._fold_strided(run, max(0, in_end - in_begin), cfg.inner.in_stride, lane,
                                                           cfg.lanes, cfg.ny, pos, cfg.inner.out_stride)
                        if split == gy - 1:  # one block per output group finishes (last-block-done)
                            self.writes[out_off] += 1
        return self

    # --- ReduceOuter -------------------------------------------------------------------------
    def outer(self):
        cfg = self.cfg
        if cfg.stacked:
            return self._stacked()
        kept, red = _calc(cfg.kept), _calc(cfg.red)
        bx, vec, ny = cfg.lanes, cfg.vec, cfg.ny
        by = cfg.block // bx
        gx, gy = cfg.grid
        for split in range(gy):
            r_begin = split * cfg.rows_per_split
            r_end = min(cfg.num_red, r_begin + cfg.rows_per_split)
            for block_x in range(gx):
                for tile in range(block_x, cfg.num_tiles, gx):
                    assert cfg.num_splits == 1 or tile == block_x, "split launches must not grid-stride"
                    for col, ncols, base, out_off in self._tile_threads(kept, tile):
                        if cfg.shifted_words:
                            self._shifted_words(cfg, base, ncols, by, r_begin, r_end, red, col)
                            if split == gy - 1 and ncols:
                                for j in range(min(4, cfg.shifted_words - 4 * col)):  # bytes of its word
                                    self.writes[4 * out_off + 4 * col + j] += 1
                            continue
                        if cfg.prefetch:  # a tile's rows one step: rows ty, ty + by, ... of every thread
                            self._prefetched_rows(cfg, base, ncols, by, red)
                            if ncols:
                                for j in range(ncols):
                                    self.writes[out_off + (col + j) * cfg.inner.out_stride] += 1
                            continue
                        for ty in range(by):
                            r = r_begin + ty
                            if ncols == vec:
                                while r + (ny - 1) * by < r_end:
                                    for y in range(ny):
                                        offset, pos = red(r + y * by)
                                        row = base + offset
                                        if cfg.vec_in:
                                            assert self._address(row) % (vec * self.itemsize) == 0
                                        for j in range(vec):
                                            self._read(row + j * cfg.inner.in_stride, cfg.index_offset + pos)
                                    r += by * ny
                            if ncols > 0:
                                while r < r_end:
                                    for y in range(min(ny, _ceil(r_end - r, by))):
                                        offset, pos = red(r + y * by)
                                        for j in range(ncols):
                                            self._read(base + offset + j * cfg.inner.in_stride, cfg.index_offset + pos)
                                    r += by * ny
                        if split == gy - 1:
                            for j in range(ncols):
                                self.writes[out_off + (col + j) * cfg.inner.out_stride] += 1
        return self

    def _tile_threads(self, kept, tile):
        """ReduceOuter's threads side by side over tile `tile` (a tile of columns of a kept outer
        index): (its first column, its columns, the input offset they start at, the output offset of
        the outer index) for each."""
        cfg = self.cfg
        outer, ct = divmod(tile, cfg.col_tiles)
        in_off, out_off = kept(outer)
        for tx in range(cfg.lanes):
            col = (ct * cfg.lanes + tx) * cfg.vec
            yield col, max(0, min(cfg.vec, cfg.inner.size - col)), in_off + col * cfg.inner.in_stride, out_off

    def _stacked(self):
        """ReduceOuter's Stacked walk (kernels/cuda/outer.cuh): row of threads ty of block b folds tiles
        b * by + ty, b * by + ty + gx * by, ..., every reduced row of a tile in its thread's NY rows
        (whole vectors where its columns are, element by element in a row's last tile), and stores
        them; the threads past the last whole row of threads (ragged rows) do nothing."""
        cfg = self.cfg
        kept, red = _calc(cfg.kept), _calc(cfg.red)
        vec, by = cfg.vec, cfg.block // cfg.lanes
        gx, gy = cfg.grid
        assert gy == cfg.num_splits == 1 and cfg.ny == cfg.num_red, "a tile's rows: one thread's, unsplit"
        for block_x in range(gx):
            for ty in range(by):
                for tile in range(block_x * by + ty, cfg.num_tiles, gx * by):
                    for col, ncols, base, out_off in self._tile_threads(kept, tile):
                        for y in range(cfg.ny if ncols else 0):
                            offset, pos = red(y)
                            if cfg.vec_in and ncols == vec:
                                assert self._address(base + offset) % (vec * self.itemsize) == 0
                            for j in range(ncols):
                                self._read(base + offset + j * cfg.inner.in_stride, cfg.index_offset + pos)
                        for j in range(ncols):
                            self.writes[out_off + (col + j) * cfg.inner.out_stride] += 1
        return self

    def _prefetched_rows(self, cfg, base, ncols, by, red):
        """ReduceOuter's Prefetch walk of one thread column's tile (kernels/cuda/outer.cuh,
        FoldTilesPrefetched): every row of threads reads its rows of the tile at once, whole vectors
        where its columns are (vector loads on the tile's last rows too), element by element in a
        row's last tile."""
        assert cfg.num_splits == 1 and cfg.num_red <= by * cfg.ny, "a tile's rows: one step"
        for ty in range(min(by, cfg.num_red)):
            for y in range(min(cfg.ny, _ceil(cfg.num_red - ty, by))):
                offset, pos = red(ty + y * by)
                row = base + offset
                if cfg.vec_in and ncols == cfg.vec:
                    assert self._address(row) % (cfg.vec * self.itemsize) == 0
                for j in range(ncols):
                    self._read(row + j * cfg.inner.in_stride, cfg.index_offset + pos)

    def _shifted_words(self, cfg, base, ncols, by, r_begin, r_end, red, col):
        """ReduceOuter's ShiftedWords: a thread's word column `col` (bytes 4 col on in each row), one
        word a row: the bytes of it inside the row are read, from the aligned word holding the first
        and, only where they pass it, the next."""
        nbytes = min(4, cfg.shifted_words - 4 * col)
        for ty in range(by if ncols else 0):
            for r in range(r_begin + ty, r_end, by):
                offset, pos = red(r)
                row = base + offset
                for j in range(nbytes):
                    self._read(row + j, cfg.index_offset + pos)
                assert self._address(row) % 4 + nbytes <= 8, "a word's bytes span more than two aligned words"

    # --- ReduceStaged ------------------------------------------------------------------------
    def _fold_calc(self, base, calc, end, lane, lanes, ny, span, pos):
        """FoldRuns with VEC == 1: indices lane, lane + lanes, ... < end through `calc`, each read
        from the staged span [span[0], span[1])."""
        i = lane
        while i < end:
            num_y = ny if i + (ny - 1) * lanes < end else _ceil(end - i, lanes)
            for y in range(num_y):
                offset, fold_pos = calc(i + y * lanes)
                assert span[0] <= base + offset < span[1], "folded an element outside the staged span"
                self._read(base + offset, pos + fold_pos)
            i += lanes * ny

    def _fold_words(self, run, length, lane, lanes, span, pos):
        """FoldSharedWords: words lane, lane + lanes, ... of the 4-byte grid over the `length` bytes
        at `run`, each inside the span's staged vectors; a word's bytes in the run are read."""
        head = self._address(run) % 4
        lo, hi = self._address(span[0]) // 16 * 16, _ceil(self._address(span[1]), 16) * 16
        for i in range(lane, _ceil(head + length, 4), lanes):
            assert lo <= self._address(run) - head + 4 * i and self._address(run) - head + 4 * i + 4 <= hi, \
                "a word outside the staged vectors"
            for j in range(max(0, 4 * i - head), min(length, 4 * i + 4 - head)):
                assert span[0] <= run + j < span[1], "folded a byte outside the staged span"
                self._read(run + j, pos + j)

    def _word_columns(self, start, length, width, period, bx, slots_per_thread, by, heads):
        """FoldWordColumns over one span of whole rows of `width` byte columns at `start`: residue r's
        words, lane ty of `by`; every byte is read where it lies in the span, by the residue whose
        bytes the end maps to that byte's column (StoreWordColumns)."""
        head = self._address(start) % 16
        heads.add(head)
        lo16 = self._address(start) - head
        hi16 = lo16 + _ceil(head + length, 16) * 16
        w_lo, w_hi = head // 4, _ceil(head + length, 4)
        for tx in range(bx):
            for k in range(slots_per_thread):
                r = tx + k * bx
                if r >= period:
                    continue
                first = r if r >= w_lo else r + _ceil(w_lo - r, period) * period
                count = _ceil(w_hi - first, period) if first < w_hi else 0
                for ty in range(by):
                    for j in range(ty, count, by):
                        w = first + j * period
                        assert lo16 <= lo16 + 4 * w and lo16 + 4 * w + 4 <= hi16, "a word outside the staged vectors"
                        for b in range(4):
                            i = 4 * w + b
                            if head <= i < head + length:
                                offset = start + i - head
                                assert (4 * (w % period) + b - head) % width == (offset - start) % width, \
                                    "a byte folded into another column's residue"
                                self._read(offset, 0)

    def _byte_rows(self, start, num_slots, width, slot_offset, capacity, pos):
        """FoldByteRows over one span on the 16-byte grid: a thread takes rows 16 g to 16 g + 15 from
        the chunks g * width to (g + 1) * width - 1 (inside the staged vectors), which hold exactly
        their bytes; rows past the span's are folded from what lies there and not stored."""
        assert self._address(start) % 16 == 0, "a byte-rows span off the 16-byte grid"
        for g in range(_ceil(num_slots, 16)):
            assert (g + 1) * width * 16 <= capacity, "chunks past the staged vectors"
            for r in range(16 * g, min(16 * g + 16, num_slots)):
                assert slot_offset(r) == r * width, "byte rows are adjacent"
                for j in range(width):
                    self._read(start + r * width + j, pos + j)

    def staged(self):
        cfg, st = self.cfg, self.cfg.stage
        kept, red = _calc(cfg.kept), _calc(cfg.red)
        if st.word_columns:
            assert self.itemsize == 1 and st.num_tiles == 1 and st.rows % 16 == 0 and not st.chunk_kept
            width, period, bx = st.row_stride, st.num_slots, cfg.lanes
            assert (4 * period) % width == 0 and width % 4, "residues of whole periods of odd columns"
            heads = set()
            for split in range(cfg.grid[1]):
                for stage in range(split * st.stages_per_split, min(st.num_stages, (split + 1) * st.stages_per_split)):
                    rows = st.chunk_rows(stage % st.row_chunks)
                    start = kept(0)[0] + red(stage)[0]
                    self._word_columns(start, rows * width, width, period, bx, st.slots_per_thread,
                                       cfg.block // bx, heads)
            assert len(heads) == 1, "every span starts at the same place in its 16-byte vector"
            for c in range(width):
                self.writes[kept(0)[1] + c] += 1
            return self
        slots, folds = _calc(st.slots), _calc(st.folds)
        bx, slots_per_thread = cfg.lanes, st.slots_per_thread
        by = cfg.block // bx
        if slots_per_thread == 0:  # direct: a thread takes every BX-th slot of a span, as many as there are
            # (NY of them side by side where it folds a run alone, FoldSharedRows: the same slots; a
            # group passing the last slot folds that one again and stores nothing of it)
            assert st.num_stages == 1 and cfg.num_splits == 1 and st.lanes_adjacent, "direct spans hold whole reductions"
            slots_per_thread = _ceil(st.num_slots, bx)
        assert bx * slots_per_thread >= st.num_slots, "slots without a thread"
        gx, gy = cfg.grid
        for split in range(gy):
            s_begin = split * st.stages_per_split
            s_end = min(st.num_stages, s_begin + st.stages_per_split)
            assert s_begin < s_end, "a split without stages"
            for block_x in range(gx):
                assert cfg.num_splits == 1 or gx == st.num_tiles, "split launches must not grid-stride"
                for tile in range(block_x, st.num_tiles, gx):
                    for stage in range(s_begin, s_end):
                        rows = st.chunk_rows((tile if st.chunk_kept else stage) % st.row_chunks)
                        stage_off, stage_pos = red(stage)
                        start = kept(tile)[0] + stage_off
                        span = (start, start + rows * st.row_stride)
                        head = 16 - self.itemsize  # the most bytes of its first vector before a span
                        assert (span[1] - span[0]) * self.itemsize + head <= cfg.block * st.vectors * 16, \
                            "the span does not fit the staged vectors"
                        num_slots = rows * st.slots_per_row if st.chunk_kept else st.num_slots
                        num_folds = st.num_folds if st.chunk_kept else rows * st.folds_per_row
                        if st.byte_rows:
                            assert self.itemsize == 1 and bx == cfg.block and st.num_folds == st.byte_rows
                            self._byte_rows(start, num_slots, st.byte_rows, lambda r: slots(r)[0],
                                            cfg.block * st.vectors * 16, cfg.index_offset + stage_pos)
                            continue
                        for tx in range(bx):
                            for k in range(slots_per_thread):
                                slot = tx + k * bx
                                if slot < num_slots:
                                    for ty in range(by):
                                        if st.word_folds:
                                            assert self.itemsize == 1 and len(st.folds) == 1 and \
                                                st.folds[0].in_stride == 1, "words fold one run of bytes"
                                            self._fold_words(start + slots(slot)[0], num_folds, ty, by, span,
                                                             cfg.index_offset + stage_pos)
                                        else:
                                            self._fold_calc(start + slots(slot)[0], folds, num_folds, ty, by, cfg.ny,
                                                            span, cfg.index_offset + stage_pos)
                    if split == gy - 1:
                        num_slots = (st.chunk_rows(tile % st.row_chunks) * st.slots_per_row if st.chunk_kept
                                     else st.num_slots)
                        for slot in range(num_slots):
                            self.writes[kept(tile)[1] + slots(slot)[1]] += 1
        return self

    def run(self):
        return {"inner": self.inner, "outer": self.outer, "staged": self.staged}[self.cfg.kernel]()


def shared_lane_chunks(num_vec: int, lanes: int, ny: int, shift: int, warp: int = 32) -> Counter:
    """kps::ReadDataVecLanes with lanes sharing (FoldContiguous's steps over one run of `num_vec`
    vectors of the first input, chunks 0, 1, ... of 16 bytes) for an input `shift` bytes from it
    (shift % 16 != 0): every lane's vector of that input must be assembled from the two aligned
    chunks that cover it, the second taken from the next lane only where that lane holds the chunk
    (same warp, its row in range), and no chunk may be loaded that holds none of the input's bytes
    of the run. Returns how often each chunk is loaded."""
    loads: Counter = Counter()
    v, step = 0, lanes * ny
    while v < num_vec:
        left = num_vec - v
        rows = [ny if left >= step else (_ceil(left - lane, lanes) if lane < left else 0) for lane in range(lanes + 1)]
        lo = {}
        for lane in range(lanes):  # the loads
            for y in range(rows[lane]):
                k = v + lane + y * lanes
                first = (16 * k + shift) // 16  # the chunk holding the vector's first byte
                lo[lane, y] = first
                if first != k:  # (less than 16 bytes after the first input, it is its own vector)
                    loads[first] += 1
                last = lane % warp == warp - 1
                if last or y >= rows[lane + 1]:
                    loads[first + 1] += 1
                    lo[lane, y, "own"] = first + 1
        for lane in range(lanes):  # the shuffles and what each vector is made of
            for y in range(rows[lane]):
                last = lane % warp == warp - 1
                if last or y >= rows[lane + 1]:
                    second = lo[lane, y, "own"]
                else:
                    assert (lane + 1) // warp == lane // warp and (lane + 1, y) in lo, "a shuffle from no chunk"
                    second = lo[lane + 1, y]
                assert second == lo[lane, y] + 1, "a vector assembled from the wrong chunks"
        v += step
    lowest, highest = shift // 16, (16 * num_vec + shift - 1) // 16
    assert all(lowest <= c <= highest for c in loads), "a chunk outside the input's bytes"
    return loads
