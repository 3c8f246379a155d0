"""The README's "Write your own reduction" examples, extracted from README.md and run as written
(NumPy backend), then what they define called on CuPy arrays (GPU), so the README cannot drift
from the code."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(section: str):
    text = README.read_text()
    start = text.index(f"## {section}")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def _run_blocks() -> dict:
    """The blocks in order, in one namespace, as a reader would run them."""
    blocks = _blocks("Write your own reduction")
    assert len(blocks) >= 3
    namespace = {}
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
    return namespace


def test_write_your_own_reduction_runs_as_written():
    _run_blocks()


@pytest.mark.gpu
def test_the_readme_functors_on_the_gpu():
    cp = pytest.importorskip("cupy")
    ns = _run_blocks()
    np, ops = ns["np"], ns["ops"]
    x, y, a, b = ns["x"], ns["y"], ns["a"], ns["b"]
    spread = ops.reduce(cp.asarray(x), axis=0, op=ns["minmax"], epilogue=ns["spread"])
    np.testing.assert_array_equal(cp.asnumpy(spread), x.max(axis=0) - x.min(axis=0))
    index = ops.reduce(cp.asarray(y), axis=0, op=ns["argmax"], epilogue=ns["index"])
    np.testing.assert_array_equal(cp.asnumpy(index), np.argmax(y, axis=0))
    dist = ns["squared_distance"](cp.asarray(a), cp.asarray(b), axis=1)
    np.testing.assert_allclose(cp.asnumpy(dist), ((a - b) ** 2).sum(axis=1), rtol=1e-5)
