"""kernels/params.py's field tables and kernels/source.py's template arguments name the fields of
the parameter structs (kernels/cuda/params.cuh) and the parameters of the kernel templates
(inner.cuh, outer.cuh, staged.cuh), in their order: the Python side and the CUDA side read as one
layout (checked on the source text, no GPU)."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import kps
from kernels import config, params, source
from kps import compiler

CUDA = "\n".join(path.read_text() for path in sorted(source.INCLUDE_DIR.glob("*.cuh")))
FUNCTORS = SimpleNamespace(input_type="float", reduce_struct="R", transform_struct="Tr", epilogue_struct="Ep",
                           op=SimpleNamespace(state=()))

#: A plan of each kernel.
PLANS = {"inner": config.plan((64, 64), (64, 1), (1,), (1,), 4, 4, 132),
         "outer": config.plan((64, 64), (64, 1), (0,), (1,), 4, 4, 132),
         "staged": config.plan((999, 3), (3, 1), (1,), (1,), 4, 4, 132)}


def _struct_fields(name: str):
    body = re.search(r"struct %s \{(.*?)\n\};" % name, CUDA, re.S).group(1)
    fields = []
    for line in body.splitlines():
        code = line.split("//")[0].strip()
        if code.endswith(";"):
            fields.append(re.match(r".*?(\w+)\s*(\[[^\]]*\])?;$", code).group(1))
    return fields


def _template_params(kernel: str):
    found = re.search(r"template <([^>]*(?:<[^>]*>[^>]*)*)>\s*__global__ void __launch_bounds__\([^)]*\) %s\(" % kernel,
                      CUDA, re.S)
    return [p.split()[-1] for p in found.group(1).split(",")]


@pytest.mark.parametrize("kernel", sorted(params.STRUCTS))
def test_field_tables_name_the_struct_fields_in_order(kernel):
    struct, scalars = params.STRUCTS[kernel]
    calcs = ["kept", "red"] + (["slots", "folds"] if kernel == "staged" else [])
    expect = ["x", "y", "partials", "semaphores"] + calcs + [name for name, _ in scalars] + ["look", "more_inputs"]
    assert _struct_fields(struct) == expect
    cfg = PLANS[kernel]
    assert cfg.kernel == kernel
    assert len(params.pack(cfg)) == params.POINTERS + sum(
        len(params.index_calc(d, cfg.index_bits)) for d in (cfg.kept, cfg.red_calc)) + (
        sum(len(params.index_calc(d, 32)) for d in (cfg.stage.slots, cfg.stage.folds)) if kernel == "staged" else 0) + len(
        scalars) + params.LOOK_FIELDS + params.MORE_INPUTS


@pytest.mark.parametrize("kernel", sorted(source.KERNELS))
def test_template_arguments_name_the_kernel_parameters_in_order(kernel):
    names = [name for name, _ in source.template_args(PLANS[kernel], FUNCTORS)]
    assert names == _template_params(source.KERNELS[kernel])


@pytest.mark.parametrize("kernel", sorted(params.STRUCTS))
def test_the_struct_layout_is_checked_where_the_kernels_compile(kernel, monkeypatch):
    """Every program carries `params.layout_asserts()`: NVRTC compiles it as it is, and refuses it,
    naming kernels/params.py, where a table and its struct drift apart (two fields swapped, one
    dropped). No GPU: NVRTC alone."""
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

    def compiles(text):
        prog = nvrtc.createProgram('#include "reduce.cuh"\n' + text, "layout.cu", [], [])
        try:
            nvrtc.compileProgram(prog, ["-arch=compute_90", "-std=c++17", f"-I{source.INCLUDE_DIR}",
                                        f"-I{compiler.INCLUDE_DIR}"])
            return ""
        except nvrtc.NVRTCError:
            return nvrtc.getProgramLog(prog)
        finally:
            nvrtc.destroyProgram(prog)

    assert compiles(params.layout_asserts()) == ""
    struct, scalars = params.STRUCTS[kernel]
    for drifted in ((scalars[1], scalars[0]) + scalars[2:], scalars[:-1]):
        monkeypatch.setitem(params.STRUCTS, kernel, (struct, drifted))
        assert f"kernels/params.py: {struct}" in compiles(params.layout_asserts())


def _split_flag(shape, axes, functors, state):
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    kept = [n for i, n in enumerate(shape) if i not in axes]
    out_strides = [int(np.prod(kept[i + 1:])) for i in range(len(kept))]
    cfg = config.plan(shape, strides, axes, out_strides, 4, functors.out_dtype.itemsize, 132,
                      acc_itemsize=functors.acc_dtype.itemsize, state=state)
    flags = dict(source.template_args(cfg, functors))
    return cfg.kernel, cfg.num_splits > 1, flags.get("Split")


def test_the_split_combine_is_compiled_where_it_can_run():
    """ReduceInner and ReduceStaged compile their split combine only for split plans, ReduceOuter
    wherever (a runtime test: docs/tuning.md): its registers would bound the blocks of the launches
    that never split."""
    add = kps.resolve(kps.ADD, kps.IDENTITY, kps.NONE, np.dtype(np.float32))
    var = kps.resolve(kps.WELFORD, kps.IDENTITY, kps.variance(0), np.dtype(np.float32))
    seen = set()
    for shape, axes in (((4096, 4096), (1,)), ((4, 1 << 22), (1,)), ((87381, 3, 256), (1,)), ((1 << 20, 3), (1,)),
                        ((30, 2001, 5), (0, 2)), ((1 << 20, 5), (0,)), ((4096, 4096), (0,)), ((64, 4096), (0,))):
        for functors, state in ((add, False), (var, True)):
            kernel, splits, flag = _split_flag(shape, axes, functors, state)
            seen.add((kernel, splits))
            if kernel == "outer":
                assert flag is None
            else:
                assert flag == ("true" if splits else "false")
    assert {(k, s) for k in ("inner", "staged") for s in (False, True)} <= seen
