"""What the reduction is and reads, as far as planning goes: its functors' traits and its inputs'."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traits:
    """The traits of a reduction that shape its plan (kps.Functors and the call's further inputs).

    `state`: the accumulator is a struct of several fields (a state op), whose combine and shuffles
    cost several times a scalar's. `complex_acc`: the accumulator is a complex number (kps::complex,
    two parts in the kernels: a split's combine loads COMPLEX_PARTIAL_BYTES of its partials a
    thread a round, kernels/planner/splits.py). `heavy`: a state op whose merge of one element is
    long (kps.ReduceOp's `heavy`): ReduceOuter keeps HEAVY_COL_MIN_BLOCKS blocks resident, and its splits
    fill waves of them. `acc_itemsize`: bytes of one accumulator, which bounds what
    shared memory and registers hold. `folds_words`: a 1-byte reduction that may read its input as
    uint32 words of four bytes (kps.packs_words). `word_columns`: where the innermost dim is kept
    instead, its columns may be read and written four a word (bool results, kps.word_columns).
    `inputs`: the arrays a transform reads; several are never staged (ReduceStaged stages one).
    `vector_loads=False` reads element by element (no 16-byte loads, no words, no staging): a
    transform of several inputs reads them so where their itemsizes differ. `inputs_off_grid`: some
    input lies off the first one's 16-byte grid (x[1:] beside x[:-1]): ReduceInner's groups of a
    warp or more then read tiles of INPUTS_TILE_ROWS rows. `inputs_shift`: where every input off the
    grid lies the same number of bytes (1-15) past it, that number, which the kernel then takes as a
    constant; 0 where they differ."""

    state: bool = False
    complex_acc: bool = False
    heavy: bool = False
    acc_itemsize: int = 4
    folds_words: bool = False
    word_columns: bool = False
    inputs: int = 1
    vector_loads: bool = True
    inputs_off_grid: bool = False
    inputs_shift: int = 0
