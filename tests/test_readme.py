"""The README's "Write your own reduction" example, extracted from README.md and run as written
(NumPy backend), so the README cannot drift from the code."""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(section: str):
    text = README.read_text()
    start = text.index(f"## {section}")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_write_your_own_reduction_runs_as_written():
    """The blocks in order, in one namespace, as a reader would run them."""
    blocks = _blocks("Write your own reduction")
    assert len(blocks) >= 2
    namespace = {}
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
