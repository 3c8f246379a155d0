"""The backward's one-pass kernel (ops/torch_kernels.py) without a GPU: its launch arguments (the
merged dims' kps::IndexCalc: sizes, division magics, x's strides, the results' strides), walked as
the kernel walks them (NumPy, every element's coordinates), give `(x - mean) * scale` as broadcasting gives it, on contiguous, transposed,
sliced and stepped views over one axis or several; and its source compiles for every dtype (NVRTC)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from ops import torch_kernels  # noqa: E402


def _walk(x, axes, mean, scale):
    """The kernel's loop over every element at once: kps::IndexCalc's Get (its 32-bit divisions by
    the packed multiplier and shift) from the packed arguments, x's element and the result's."""
    calc, nd, bits, contiguous, last_out_stride, results = torch_kernels._plan(tuple(x.shape), x.stride(), tuple(axes))
    assert bits == 32 and contiguous == x.is_contiguous() and len(calc) == 4 * nd
    assert results == mean.size
    size, magic, x_stride, out_stride = (calc[k * nd: (k + 1) * nd] for k in range(4))
    storage = x.detach().as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,), 0).numpy()
    idx, at, out = np.arange(x.numel(), dtype=np.uint64), np.full(x.numel(), x.storage_offset()), 0
    for d in range(nd - 1, -1, -1):
        mul, shift = np.uint64(int(magic[d]) & 0xFFFFFFFF), np.uint64(int(magic[d]) >> 32)
        q = ((idx * mul >> np.uint64(32)) + idx) >> shift if d > 0 else np.zeros_like(idx)  # kps::FastDiv
        r = (idx - q * np.uint64(size[d])).astype(np.int64)
        at, out, idx = at + r * int(x_stride[d]), out + r * int(out_stride[d]), q
    return ((storage[at] - mean.reshape(-1)[out]) * scale.reshape(-1)[out]).reshape(tuple(x.shape))


def _views():
    base = torch.randn(6, 5, 8, 7, dtype=torch.float64)
    yield base, (3,)
    yield base, (0,)
    yield base, (1, 2)
    yield base, (0, 2)
    yield base, (0, 1, 2, 3)
    yield base.permute(2, 0, 3, 1), (1, 3)
    yield base[:, 1:4, ::2], (2,)
    yield base[::2, :, :, 3], (0, 1)
    yield base.transpose(0, 3)[:, :1], (0, 2)  # a dim of 1
    yield torch.randn(4096, 3, dtype=torch.float64).t(), (1,)
    yield base[:, :1].expand(6, 9, 8, 7), (1, 3)  # a zero stride
    yield base[:, :1].expand(6, 9, 8, 7), (0, 2)


@pytest.mark.parametrize("k", range(12))
def test_the_kernels_walk_gives_the_broadcast_result(k):
    x, axes = list(_views())[k]
    kept = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    gen = torch.Generator().manual_seed(k)
    mean, scale = (torch.randn(kept, dtype=torch.float64, generator=gen) for _ in range(2))
    np.testing.assert_allclose(_walk(x, axes, mean.numpy(), scale.numpy()), ((x - mean) * scale).numpy(), rtol=1e-15)


def test_merging_keeps_at_most_three_dims_for_contiguous_inputs_over_one_run_of_axes():
    for axes in [(0,), (3,), (1, 2), (0, 1), (2, 3)]:
        assert len(torch_kernels.merged_dims((6, 5, 8, 7), (280, 56, 7, 1), set(axes))) <= 3


def test_the_source_compiles_for_every_dtype_and_index():
    from kps import compiler

    names = [torch_kernels.kernel_name(d, nd, i, c, v) for d in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
             for nd in (1, torch_kernels.MAX_DIMS) for i in ("unsigned", "long long")
             for c, v in ((False, 1), (True, 1), (True, 16 // d.itemsize))]
    compiler.compile_program(torch_kernels.source(), names, "sm_90")
