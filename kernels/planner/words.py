"""The byte/word rewrites: a 1-byte `any` / `all` read as uint32 words of four bytes.

Three ways, each a view of the layout (`Layout.as_words`, `as_word_columns`, `as_shifted_words`):
- words: the innermost reduced run, four bytes a word, folded by the word functors (kps.word_functors);
- word columns: four adjacent kept columns a word, in and out (kps.word_columns);
- shifted words: kept columns off the word grid, read four a word from the aligned words around
  them by ReduceOuter (kps::ReadWordsShifted), written as words.
ReduceStaged has word folds of its own for what stays in bytes (kernels/planner/staged.py).
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Tuple

from .dims import Dim, aligned
from .layout import Layout
from .traits import Traits


def reading(layout: Layout, traits: Traits, tuning) -> Tuple[Layout, Traits]:
    """The layout the kernels read, and the traits of its elements: a 1-byte input in words where
    it packs them (a word of four columns accumulates in 4 bytes), else as it is. Rows of whole
    words that ReduceStaged folds 16 a thread stay in bytes (`byte_rows_first`)."""
    if not (traits.vector_loads and layout.itemsize == 1):
        return layout, traits
    if layout.inner_reduced:
        if traits.folds_words and layout.packs_words() and not byte_rows_first(layout, tuning):
            return layout.as_words() or layout, traits
        return layout, traits
    if traits.word_columns and layout.out_itemsize == 1 and layout.packs_word_columns():
        return layout.as_word_columns(), replace(traits, acc_itemsize=4)
    return layout, traits


def shifts_words(layout: Layout, traits: Traits, tuning) -> bool:
    """Whether a 1-byte `any` / `all` whose innermost kept dim is contiguous bytes off the word grid
    (or W no multiple of 4) and at least SHIFTED_WORD_COLUMNS_MIN wide reads them as words from the
    aligned words around them (ReduceOuter, `Layout.as_shifted_words`), writing whole words of results."""
    return (traits.word_columns and traits.vector_loads and layout.itemsize == 1 and layout.out_itemsize == 1
            and not layout.inner_reduced and bool(layout.kept) and layout.word_results()
            and layout.kept[-1].size >= tuning.SHIFTED_WORD_COLUMNS_MIN)


def byte_row_bytes(run: Dim, rows: Dim, outer_strides, in_base: int, tuning) -> int:
    """The bytes of a 1-byte row FoldByteRows folds 16 a thread, else 0: a contiguous reduced `run`
    of 2 to STAGE_BYTE_ROWS_MAX bytes whose chunks meet in at most STAGE_BYTE_ROWS_MAX_BANK_WAYS-way
    bank conflicts, `rows` of them adjacent, every span of 16-row multiples on
    the 16-byte grid (`in_base`, the alignment known of the input's start, and the strides of the
    dims outside the rows)."""
    if run.in_stride != 1 or rows.in_stride != run.size or not 2 <= run.size <= tuning.STAGE_BYTE_ROWS_MAX:
        return 0
    if math.gcd(run.size, 8) > tuning.STAGE_BYTE_ROWS_MAX_BANK_WAYS:  # a thread's chunks run.size apart
        return 0
    return run.size if aligned(in_base, outer_strides, 1, 16) else 0


def byte_rows_first(layout: Layout, tuning) -> bool:
    """Whether rows of whole words that ReduceStaged could fold 16 a thread (`byte_row_bytes`) stay
    in bytes for it, rather than read as words."""
    kept, red = layout.kept, layout.red
    return (len(red) == 1 and bool(kept)
            and byte_row_bytes(red[-1], kept[-1], [d.in_stride for d in kept[:-1]], layout.in_base, tuning) > 0)
