"""The table of named reductions (ops/named.py) is what `ops` exports and what torch registers:
every entry is `ops.<name>`, made from its entry where its kind has a maker (ops/build.py), and
the torch custom ops are exactly the entries with torch arguments and a torch twin or a gradient. `import ops` imports
neither torch nor dask; torch imported first registers the custom ops with `import ops`."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import ops
from ops import named, torch_route

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_entry_is_a_public_function_and_every_public_function_an_entry():
    assert sorted(ops.__all__) == sorted(["reduce"] + [entry.name for entry in named.TABLE])
    for entry in named.TABLE:
        fn = getattr(ops, entry.name)
        assert fn.__name__ == entry.name, entry.name
        if entry.kind != "own":
            assert fn.__doc__.startswith(entry.doc), entry.name


def test_the_entries_are_consistent():
    assert len(named.BY_NAME) == len(named.TABLE)
    for entry in named.TABLE:
        assert entry.kind in ("sum", "plain", "ddof", "arg", "own"), entry.name
        assert entry.numpy, entry.name
        assert (entry.precise_op is not None) == (entry.kind == "sum"), entry.name
        assert entry.kind == "own" or entry.op is not None, entry.name
        assert entry.torch is None or entry.torch in ops.interop.TORCH_TWINS, entry.name
        assert entry.grad is None or named.torch_args(entry) is not None, entry.name  # a gradient needs a custom op
        assert (entry.outputs == 2) == entry.numpy.startswith("("), entry.name
    assert torch_route.TORCH_OPS == {e.name for e in named.TABLE if named.has_torch_op(e)}
    # every op of float results is a custom op: the NaN-skipping ones and those of their own signature too
    assert {e.name for e in named.TABLE if not named.has_torch_op(e)} == {
        "count_nonzero", "reduce_nanargmax", "reduce_nanargmin"}


def _fresh(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT),
                         env={"PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_import_ops_imports_neither_torch_nor_dask():
    assert _fresh("import sys, ops; print('torch' in sys.modules, 'dask' in sys.modules)") == "False False"


def test_torch_imported_first_registers_the_custom_ops_on_import():
    pytest.importorskip("torch")
    code = ("import torch, ops\nfrom ops import named\n"
            "print(sorted(e.name for e in named.TABLE if named.has_torch_op(e) and hasattr(torch.ops.kps, e.name)))")
    expect = sorted(e.name for e in named.TABLE if named.has_torch_op(e))
    assert _fresh(code) == str(expect)
    assert len(expect) == 22
