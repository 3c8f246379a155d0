"""The look after a NaN-skipping reduction (kernels/look.py) on the CPU: the bit rule its kernel
applies finds NaN, and only NaN, in every bit pattern of each float width, in either part of a
complex number, and the all-NaN slice's index and nothing else among int64 results."""
from __future__ import annotations

import numpy as np
import pytest

from kernels import look
from kps import dtypes, nan

_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _matches(kind, dtype, values):
    """The kernel's test, `(bits & mask) > above` on the results' bits (a complex result's parts:
    `values` as the parts), applied in NumPy."""
    mask, above = look.bit_rule(kind, dtype)
    u = _UNSIGNED[values.dtype.itemsize]
    return (values.view(u) & u(mask)) > u(above)


def _patterns(dtype, rng):
    """Every bit pattern of a 16-bit float; for wider ones random patterns, the infinities, the
    largest finite values, zeros and NaN with the smallest and largest payloads of both signs."""
    u = _UNSIGNED[dtype.itemsize]
    if dtype.itemsize == 2:
        return np.arange(1 << 16, dtype=np.uint32).astype(u).view(dtype)
    bits = rng.integers(0, np.iinfo(u).max, 1 << 16, dtype=u, endpoint=True)
    special = np.array([np.inf, -np.inf, np.finfo(dtype).max, -np.finfo(dtype).max, 0.0, -0.0], dtype=dtype).view(u)
    nmant = np.finfo(dtype).nmant
    inf_bits = int(special[0])
    nans = [inf_bits + 1, inf_bits | ((1 << nmant) - 1), inf_bits | (1 << (nmant - 1))]
    sign = 1 << (8 * dtype.itemsize - 1)
    more = np.array(nans + [b | sign for b in nans], dtype=u)
    return np.concatenate([bits, special, more]).view(dtype)


FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)] + (
    [dtypes.BFLOAT16] if dtypes.BFLOAT16 is not None else [])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_the_nan_rule_finds_every_nan_and_nothing_else(dtype):
    values = _patterns(dtype, np.random.default_rng(11))
    if dtypes.BFLOAT16 is not None and dtype == dtypes.BFLOAT16:  # bfloat16 is float32's upper half (None == float64 in NumPy)
        expect = np.isnan((values.view(np.uint16).astype(np.uint32) << 16).view(np.float32))
    else:
        expect = np.isnan(values)
    assert expect.any() and not expect.all()
    np.testing.assert_array_equal(_matches(look.NAN, dtype, values), expect)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_a_complex_result_is_nan_where_either_part_is(dtype):
    """The kernels apply the parts' rule to each part (kps::LookAt, `look.any_match`): a complex
    result matches where numpy.isnan is true of it, a NaN in its real part, its imaginary part or
    both, of any payload and sign."""
    dtype = np.dtype(dtype)
    part = dtypes.real_dtype(dtype)
    rng = np.random.default_rng(14)
    real = _patterns(part, rng)
    imag = rng.permutation(_patterns(part, rng))
    z = np.stack([real, imag], axis=-1).view(dtype)[:, 0]  # the parts' bits as they are
    expect = np.isnan(z)
    assert look.parts(dtype) == 2 and np.isnan(real).any() and np.isnan(imag).any() and not expect.all()
    assert (np.isnan(real) != np.isnan(imag)).any()  # a NaN in one part alone
    found = _matches(look.NAN, dtype, z.view(part)).reshape(-1, 2).any(axis=1)
    np.testing.assert_array_equal(found, expect)


def test_only_results_of_one_word_are_looked_at_by_the_reduction_kernels():
    """kps::Look compares a result's bits whole, so complex results are looked at after the call,
    part by part (`look.any_match`), and never armed in a reduction kernel."""
    for dtype in FLOATS + [np.dtype(np.int64)]:
        kind = look.LARGEST_INDEX if dtype == np.int64 else look.NAN
        assert look.in_kernel(kind, dtype)
    for dtype in (np.complex64, np.complex128):
        assert look.bit_rule(look.NAN, np.dtype(dtype)) is not None and not look.in_kernel(look.NAN, np.dtype(dtype))


def test_the_index_rule_finds_the_all_nan_slices_index_only():
    rng = np.random.default_rng(12)
    values = np.concatenate([rng.integers(0, nan.NO_INDEX, 1 << 16, dtype=np.int64),
                             np.array([0, 1, nan.NO_INDEX - 1, nan.NO_INDEX], dtype=np.int64)])
    np.testing.assert_array_equal(_matches(look.LARGEST_INDEX, np.dtype(np.int64), values), values == nan.NO_INDEX)


@pytest.mark.parametrize("kind,dtype", [(look.NAN, np.int32), (look.NAN, np.bool_), (look.NAN, np.int64),
                                        (look.LARGEST_INDEX, np.int32), (look.LARGEST_INDEX, np.float64),
                                        (look.LARGEST_INDEX, np.complex64)])
def test_results_without_a_rule_are_left_to_the_elementwise_look(kind, dtype):
    assert look.bit_rule(kind, np.dtype(dtype)) is None
