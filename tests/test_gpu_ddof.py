"""ddof as NumPy takes it (any real number) on the GPU: every op that takes it against NumPy's
float64 answer and warnings, as tests/test_ddof.py holds the NumPy backend, on fresh random data,
outputs poisoned first; and on every reduce path for a ddof that is no integer."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from ddof_helpers import AXES, DDOF_OPS, DDOFS, DTYPES, check, ddof_data, dof_warned
from stats_helpers import check as check_stats

cp = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

from test_gpu import poison_pool, poisoned_like  # noqa: E402
from test_gpu_statistics import PATH_SHAPES  # noqa: E402


def _ours(name, xd, axis, ddof):
    """(our result on the host, whether it warned); where the op takes out=, a poisoned out= must
    hold the same bits as a fresh result from a poisoned pool."""
    fn = DDOF_OPS[name][0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh = fn(xd, axis=axis, ddof=ddof)
    warned = dof_warned(caught)
    poison_pool(fresh.nbytes)
    if name != "mean_var":
        out = poisoned_like(fresh.shape, fresh.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert fn(xd, axis=axis, ddof=ddof, out=out) is out
        np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(fresh))
    return cp.asnumpy(fresh), warned


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(DDOF_OPS))
def test_every_ddof_op_matches_numpy_for_any_real_ddof(name, dtype):
    x = ddof_data(dtype, np.random.default_rng(abs(hash((name, dtype.name))) % 2**32))
    xd = cp.asarray(x)
    for axis in AXES:
        for ddof in DDOFS:
            got, warned = _ours(name, xd, axis, ddof)
            check(name, got, x, axis, ddof, warned)


@pytest.mark.parametrize("shape,axes", PATH_SHAPES, ids=str)
def test_a_fractional_ddof_on_every_path(shape, axes):
    x = np.random.default_rng(abs(hash(shape)) % 2**32).standard_normal(shape).astype(np.float32)
    for name in ("var", "std"):
        got, _ = _ours(name, cp.asarray(x), axes, 0.5)
        check_stats(name, got, x, axes, ddof=0.5)
