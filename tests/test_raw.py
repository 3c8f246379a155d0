"""Raw states (kps/raw.py): the bits the kernels hand back for a block of a larger reduction turn
back into exactly the accumulators the NumPy twin made, for every op with and without a state and
every dtype; a block's indices are placed in the whole reduction's range."""
from __future__ import annotations

import numpy as np
import pytest

import kps
from kps import raw
from ops import dask_backend, numpy_backend

SPECS = [(kps.ADD, kps.MEAN), (kps.MAX, kps.NONE), (kps.LOGICAL_OR, kps.NONE), (kps.WELFORD, kps.variance(1)),
         (kps.LOGSUMEXP, kps.LOG_OF_SUM), (kps.ARGMAX, kps.INDEX), (kps.nan.NANARGMIN, kps.INDEX),
         (kps.MINMAX, kps.PEAK_TO_PEAK), (kps.nan.SUM_COUNT, kps.nan.MEAN_OF_NUMBERS),
         (kps.precise.NEUMAIER, kps.precise.PRECISE_SUM), (kps.norms.SUM_OF_SQUARES, kps.norms.ROOT)]
DTYPES = ["float32", "float64", "float16", "int8", "int32", "uint32", "int64", "uint64", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,epilogue", SPECS, ids=lambda s: s.name)
def test_raw_bits_give_back_the_accumulators(op, epilogue, dtype):
    if op in (kps.LOGSUMEXP, kps.norms.SUM_OF_SQUARES) and dtype.startswith("complex"):
        pytest.skip("no complex numbers (the complex 2-norm sums the squares of their magnitudes)")
    f = kps.resolve(op, kps.IDENTITY, epilogue, np.dtype(dtype))
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 9)) * 50 + (rng.standard_normal((6, 9)) * 30j if "complex" in dtype else 0)).astype(dtype)
    if x.dtype.kind in "fc":
        x[2, 3] = np.nan
    acc = numpy_backend.block_states(x, (1,), f, np.arange(9, dtype=np.int64) if op.indexed else None)
    rf = raw.functors(f)
    assert rf.out_dtype == np.int64 and rf.acc_dtype == f.acc_dtype
    bits = rf.epilogue.numpy(numpy_backend.unpack(acc, f), 9)
    bits = np.stack(bits, axis=-1) if isinstance(bits, tuple) else bits[..., None]
    assert bits.shape == acc.shape + (raw.fields(f),)
    back = raw.state(bits, f)
    assert back.dtype == acc.dtype and back.shape == acc.shape
    for name in acc.dtype.names or (None,):
        a, b = (acc, back) if name is None else (acc[name], back[name])
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), name
    assert np.array_equal(raw.bits(back, f), bits)  # and back to the same bits


def test_a_blocks_indices_are_placed_in_the_whole_range():
    red_shape, starts = (4, 10), (2, 5)  # the block's rows 2-3 of 4, columns 5-9 of 10
    local = np.array([0, 1, 5, 9, dask_backend.NO_INDEX])  # in the block's own (2, 5) reduced range
    got = dask_backend._global_index(local, [2, 5], starts, red_shape)
    expect = [2 * 10 + 5, 2 * 10 + 6, 3 * 10 + 5, 3 * 10 + 9, dask_backend.NO_INDEX]
    assert got.tolist() == expect


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [kps.ARGMAX, kps.nan.NANARGMIN], ids=lambda s: s.name)
def test_an_index_entry_is_where_the_bits_hold_the_index(op, dtype):
    """ops/dask_backend.py places a CuPy block's indices in the whole range at `raw.entry(f, "i")`:
    after both parts of a complex value (the field's place among the names is one short there)."""
    f = kps.resolve(op, kps.IDENTITY, kps.INDEX, np.dtype(dtype))
    x = (np.arange(1, 13).reshape(3, 4) * (1 + 1j if "complex" in dtype else 1)).astype(dtype)
    acc = numpy_backend.block_states(x, (1,), f, np.arange(4, dtype=np.int64) + 100)
    assert np.array_equal(raw.bits(acc, f)[..., raw.entry(f, "i")], acc["i"])


@pytest.mark.parametrize("op,epilogue", SPECS, ids=lambda s: s.name)
def test_merging_bits_is_merging_the_accumulators(op, epilogue):
    """CuPy blocks' states travel as bits (ops/dask_backend.py): their merge gives the bits of the
    accumulators' merge."""
    f = kps.resolve(op, kps.IDENTITY, epilogue, np.dtype("float32"))
    x = np.random.default_rng(6).standard_normal((4, 5, 8)).astype(np.float32)
    x[1, 2, 3] = np.nan
    acc = numpy_backend.block_states(x, (2,), f, np.arange(8, dtype=np.int64) if op.indexed else None)
    merged = dask_backend._Merge(f, gpu=True)(raw.bits(acc, f), (0,))
    expect = numpy_backend.merge_states(acc, (0,), f)
    assert np.array_equal(merged, raw.bits(expect, f))


@pytest.mark.parametrize("op,epilogue", SPECS[:3], ids=lambda s: s.name)
def test_bits_handed_over_unjoined_merge_as_joined(op, epilogue):
    """Dask hands CuPy blocks' bits to a merge as nested lists, a level a reduced axis (they are not
    joined on a GPU first): the merge joins them on the host, the same as merging them joined."""
    f = kps.resolve(op, kps.IDENTITY, epilogue, np.dtype("float32"))
    x = np.random.default_rng(7).standard_normal((4, 6, 8)).astype(np.float32)
    acc = numpy_backend.block_states(x, (2,), f, np.arange(8, dtype=np.int64) if op.indexed else None)
    bits = raw.bits(acc, f)
    nested = [[bits[i:i + 2, j:j + 3] for j in (0, 3)] for i in (0, 2)]  # 2 x 2 blocks over axes 0 and 1
    merge = dask_backend._Merge(f, gpu=True)
    assert np.array_equal(merge(nested, (0, 1)), merge(bits, (0, 1)))
