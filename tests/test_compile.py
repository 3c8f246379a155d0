"""NVRTC compile of every kernel x functor x dtype specialisation for sm_90, on the CPU.

NVRTC needs no GPU (the pip package nvidia-cuda-nvrtc provides it), so CI proves every template
instantiation the planner can pick compiles. Programs compile in parallel processes, in NVRTC's
fast-compile mode (the proof is that they compile: `kps.compile_program(..., optimise=False)`), and
land in the disk cache (KPS_CACHE_DIR), keyed by their content, so a rerun on the same machine
compiles nothing. The fast tier compiles every kernel variant once for a scalar, a state, an index,
1-byte words and several inputs; the exhaustive tier every reduction x transform x dtype.
"""
from __future__ import annotations

import functools
import itertools
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

import kps
from inputs_helpers import FMA, ROSENBROCK
from kernels import config, look, planner, source
from kps import raw

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

#: Shapes and axes that make the planner pick each kernel variant (per itemsize): short rows,
#: warp rows, block rows with a split, strided rows, segments, narrow and wide columns, strided
#: columns, several reduced dims, short runs walked flat, 64-bit indexing, short odd runs and
#: columns staged through shared memory (direct, split, several slots), misaligned columns,
#: columns of 1 and 2 reduced rows (tiles that short), rows of 2 (a thread folds several side by
#: side), of 8 and of 12 (16-64 bytes: several a thread in ReduceInner, 48-byte rows in tiles of 3
#: vectors), long odd rows (a 1-byte `any` / `all` folds them as words, a whole block on one row, and
#: short ones 16 a thread where they lie on the 16-byte grid), and odd columns a thread each, side by
#: side in rows of threads that do not divide the block, and wide odd 1-byte columns read four a word
#: from the aligned words around them, and a state's few-row tiles over many, each block's next one
#: loaded while it folds this one.
VARIANTS = [
    ((4096, 64), None, (1,)),
    ((4096, 4096), None, (1,)),
    ((16, 1 << 20), None, (1,)),
    ((300, 301), "T", (0,)),
    ((64, 32, 3000), None, (0, 2)),
    ((1 << 16, 16), None, (0,)),
    ((4096, 4096), None, (0,)),
    ((300, 301), "T", (1,)),
    ((8, 9, 10, 11), None, (0, 2)),
    ((8, 64, 56, 64), None, (0, 2, 3)),
    ((1 << 16, 1 << 16), None, (0,)),
    ((1 << 16, 1 << 16), None, (1,)),
    ((1 << 20, 7), None, (1,)),
    ((1 << 20, 2), None, (1,)),
    ((1 << 22, 8), None, (1,)),
    ((1 << 22, 12), None, (1,)),
    ((1 << 20, 7), None, (0,)),
    ((1 << 14, 7, 5), None, (1,)),  # (off the 16-byte grid: stacked, a load an element, for 4 bytes or more and states)
    ((4096, 33, 7), None, (0, 2)),
    ((4096, 1001), None, (0,)),
    ((2, 1 << 16), None, (0,)),
    ((1 << 16, 1), None, (1,)),
    ((512, 9999), None, (1,)),
    ((1 << 16, 17), None, (0,)),
    ((1 << 14, 65), None, (0,)),
    ((1 << 12, 2047), None, (0,)),
    ((300, 256, 68), None, (1,)),  # ReduceOuter's ragged rows of threads (17 and 34 wide)
    ((100_000, 33), None, (0,)),  # ... 33 wide, split (complex var)
    ((1 << 20, 20), None, (0,)),  # ... 5 and 10 wide (float32, float64), rows of threads a warp splits unevenly
    ((1 << 20, 5), None, (0,)),  # ... 5 wide (complex var)
    ((100_000, 3, 5), None, (0, 2)),  # complex var's split staged spans, a slot a thread
    ((1 << 15, 3, 1024), None, (1,)),  # a state's few-row tiles, each block's next one loaded early
    ((1 << 15, 5, 129), None, (1,)),  # ... off the 16-byte grid (complex var)
    ((1 << 15, 2, 128), None, (1,)),  # few rows under narrow columns, a row of threads a tile (stacked)
    ((1 << 15, 3, 132), None, (1,)),  # ... in ragged rows of 33 threads, the row's last vector ragged for 8-byte elements
]

SPECS = [(op, kps.NONE) for op in kps.REDUCE_OPS] + [(kps.ADD, kps.MEAN)]

#: Reductions whose accumulator is a struct (kps/statistics.py, kps/arg.py), with the identity transform;
#: the arg-reductions are planned with index strides, as the GPU path plans them.
STATE_SPECS = [(kps.WELFORD, kps.variance(1)), (kps.LOGSUMEXP, kps.LOG_OF_SUM), (kps.ARGMAX, kps.INDEX),
               (kps.ARGMIN, kps.INDEX), (kps.WELFORD_FINITE_SHIFT, kps.mean_and_variance(0))]


def _names(functors: kps.Functors):
    """{functors the kernels are instantiated with: kernel names}: a 1-byte `any` or `all` also
    reads words (source.plan_functors) wherever the planner packs them; a transform of several inputs
    reads element by element, and with 16-byte loads too where they share an itemsize."""
    itemsize = functors.in_dtype.itemsize
    several = bool(functors.more_dtypes)
    alike = all(d.itemsize == itemsize for d in functors.more_dtypes)
    names = {}
    for shape, layout, axes in VARIANTS:
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        if layout == "T":
            shape, strides = shape[::-1], strides[::-1]
        kept = [n for i, n in enumerate(shape) if i not in axes]
        out_strides = [int(np.prod(kept[i + 1:])) for i in range(len(kept))]
        # (a 1-byte `any` / `all` one byte off the 16-byte grid too: rows folded as words, not 16 a thread)
        # (inputs off the first one's grid: by shifts known only at run time, or by one the kernel
        # takes as a constant, whole words or not)
        grids = [(False, 0)] + [(True, s) for s in sorted({0, itemsize % 16, -itemsize % 16})] * several
        for pack, vectors, (off_grid, shift), misalign in itertools.product(
                {False, kps.packs_words(functors)}, {not several, several and alike}, grids,
                {0, kps.packs_words(functors)}):
            in_layout, traits, _ = config.values(
                shape, strides, axes, out_strides, itemsize, functors.out_dtype.itemsize, in_misalign=int(misalign),
                folds_words=pack, acc_itemsize=functors.acc_dtype.itemsize, indexed=functors.op.indexed,
                vector_loads=vectors, inputs=1 + len(functors.more_dtypes), inputs_off_grid=off_grid,
                inputs_shift=shift, state=bool(functors.op.state), heavy=functors.op.heavy)
            make = functools.partial(planner.plan, in_layout, traits, sm_count=132)
            budget = planner.Budget()
            cfg = make(budget)
            f = source.plan_functors(cfg, functors)
            names.setdefault(f, set()).add(source.kernel_name(cfg, f))
            # the launcher's lighter tiles (as if every one spilled), down to the last; a step that
            # only lowers the launch bound compiles the same code (with more registers): not again
            after = planner.lighter(make, cfg, budget, 1 << 20) if cfg.bounded else None
            while after is not None:
                budget, next_cfg = after
                if replace(next_cfg, min_blocks=0) != replace(cfg, min_blocks=0):
                    names[f].add(source.kernel_name(next_cfg, f))
                cfg = next_cfg
                after = planner.lighter(make, cfg, budget, 1 << 20) if cfg.bounded else None
        if kps.packs_words(functors) and functors.out_dtype == np.bool_:  # kept columns read as words
            cfg = config.plan(shape, strides, axes, out_strides, itemsize, 1, 132, word_columns=True,
                              acc_itemsize=functors.acc_dtype.itemsize)
            # (odd ones staged, or wide ones read from the words around them)
            if cfg.word_columns or (cfg.kernel == "outer" and cfg.shifted_words) or (
                    cfg.kernel == "staged" and cfg.stage.word_columns):
                f = source.plan_functors(cfg, functors)
                names.setdefault(f, set()).add(source.kernel_name(cfg, f))
    return names


def _compile_functors(f: kps.Functors) -> int:
    """Compile every kernel the variants plan for `f`; how many."""
    count = 0
    for functors, names in _names(f).items():
        kps.compile_program(source.program(functors), sorted(names), "sm_90", [source.INCLUDE_DIR], optimise=False)
        count += len(names)
    return count


def _compile(args):
    op_i, tr_i, dt_name = args
    op, ep = SPECS[op_i] if op_i >= 0 else STATE_SPECS[-op_i - 1]
    return _compile_functors(kps.resolve(op, kps.TRANSFORMS[tr_i], ep, np.dtype(dt_name)))


def _compile_in_parallel(fn, jobs) -> list:
    with ProcessPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        return list(pool.map(fn, jobs))


#: One program of each kind the kernels are instantiated for: a scalar sum (float32, in float64), one
#: whose folds keep their chains short (float64: kps/chains.cuh), a struct state with the element's
#: index, a 1-byte `any` (words, word columns), several inputs, and the widest state (complex
#: Welford's 64 bytes: complex128 sums beside real counts).
REGIMES = [(kps.ADD, kps.IDENTITY, kps.NONE, ("float32",)), (kps.ADD, kps.IDENTITY, kps.NONE, ("float64",)),
           (kps.ARGMAX, kps.IDENTITY, kps.INDEX, ("float32",)),
           (kps.LOGICAL_OR, kps.IDENTITY, kps.NONE, ("bool",)), (kps.ADD, ROSENBROCK, kps.NONE, ("float32", "float32")),
           (kps.WELFORD, kps.IDENTITY, kps.variance(1), ("complex64",))]


def _compile_regime(i):
    op, transform, epilogue, dts = REGIMES[i]
    dtypes = tuple(np.dtype(d) for d in dts)
    return _compile_functors(kps.resolve(op, transform, epilogue, dtypes if len(dtypes) > 1 else dtypes[0]))


def test_every_kernel_regime_compiles_for_sm_90():
    """The fast tier's compile: every kernel variant the planner picks (VARIANTS, the launcher's
    lighter tiles, words), once for each kind of functor."""
    counts = _compile_in_parallel(_compile_regime, list(range(len(REGIMES))))
    assert min(counts) >= 4


@pytest.mark.exhaustive
def test_every_specialisation_compiles_for_sm_90():
    jobs = list(itertools.product(range(len(SPECS)), range(len(kps.TRANSFORMS)), [d.name for d in kps.dtypes.REAL]))
    counts = _compile_in_parallel(_compile, jobs)
    print(f"\ncompiled {sum(counts)} kernel specialisations in {len(jobs)} programs "
          f"({len(SPECS)} reductions x {len(kps.TRANSFORMS)} transforms x {len(kps.dtypes.REAL)} dtypes) for sm_90")
    assert len(counts) == len(jobs) and min(counts) >= 4


@pytest.mark.exhaustive
def test_every_state_specialisation_compiles_for_sm_90():
    """Struct accumulators through every kernel variant: shuffles, shared memory, split partials, and
    the element's index on every path (arg-reductions)."""
    jobs = [(-i - 1, 0, d.name) for i in range(len(STATE_SPECS)) for d in kps.dtypes.REAL]
    counts = _compile_in_parallel(_compile, jobs)
    assert len(counts) == len(jobs) and min(counts) >= 4


#: Transforms of several inputs (read element by element through a kps::Zip), with mixed dtypes,
#: into a plain sum, a state and an index.
MULTI_SPECS = [(kps.ADD, ROSENBROCK, kps.NONE, ("float32", "float32")),
               (kps.ADD, ROSENBROCK, kps.NONE, ("float16", "float16")),
               (kps.ADD, ROSENBROCK, kps.MEAN, ("float16", "float64")),
               (kps.MAX, FMA, kps.NONE, ("int32", "float32", "bool")),
               (kps.MIN, FMA, kps.NONE, ("int8", "uint8", "bool")),
               (kps.WELFORD, ROSENBROCK, kps.variance(0), ("float32", "float32")),
               (kps.ARGMAX, FMA, kps.INDEX, ("float64", "int64", "float64"))]


def _compile_multi(i):
    op, transform, epilogue, dts = MULTI_SPECS[i]
    return _compile_functors(kps.resolve(op, transform, epilogue, tuple(np.dtype(d) for d in dts)))


@pytest.mark.exhaustive
def test_every_multi_input_specialisation_compiles_for_sm_90():
    counts = _compile_in_parallel(_compile_multi, list(range(len(MULTI_SPECS))))
    assert min(counts) >= 3


#: The rest of the family (ops/family.py), one spec per kernel shape: a transform into a sum, a
#: count, a NaN-skipping extreme, the NaN-skipping states (a mean, Welford, an index), both
#: extremes as a range and as two results, the scaled 2-norm and a p-norm, the compensated sum and mean. (nanmin, nanargmin and nanstd differ from these by a
#: comparison or an epilogue's expression alone.)
FAMILY_SPECS = [(kps.ADD, kps.nan.NAN_TO_ZERO, kps.NONE, None), (kps.ADD, kps.NONZERO, kps.NONE, "int64"),
                (kps.nan.NANMAX, kps.IDENTITY, kps.NONE, None),
                (kps.nan.SUM_COUNT, kps.IDENTITY, kps.nan.MEAN_OF_NUMBERS, None),
                (kps.nan.NAN_WELFORD, kps.IDENTITY, kps.nan.nan_variance(1), None),
                (kps.nan.NANARGMAX, kps.IDENTITY, kps.INDEX, None),
                (kps.MINMAX, kps.IDENTITY, kps.PEAK_TO_PEAK, None), (kps.MINMAX, kps.IDENTITY, kps.MIN_AND_MAX, None),
                (*kps.norms.descriptors(2), None), (*kps.norms.descriptors(2, True), None),
                (*kps.norms.descriptors(2.5), None), (*kps.norms.descriptors(np.inf), None),
                (kps.precise.NEUMAIER, kps.IDENTITY, kps.precise.PRECISE_SUM, None),
                (kps.precise.NEUMAIER, kps.IDENTITY, kps.precise.PRECISE_MEAN, None)]


def _compile_family(args):
    i, dt_name = args
    op, transform, epilogue, requested = FAMILY_SPECS[i]
    return _compile_functors(kps.resolve(op, transform, epilogue, np.dtype(dt_name), requested))


@pytest.mark.exhaustive
def test_every_family_specialisation_compiles_for_sm_90():
    jobs = [(i, d.name) for i in range(len(FAMILY_SPECS)) for d in kps.dtypes.REAL]
    counts = _compile_in_parallel(_compile_family, jobs)
    assert len(counts) == len(jobs) and min(counts) >= 4


#: Raw states (kps/raw.py: a dask block's accumulators as bits), for the ops of every kind of state:
#: scalar, struct of one dtype, one field, value and index, narrow fields.
RAW_SPECS = [(kps.ADD, kps.MEAN), (kps.LOGICAL_OR, kps.NONE), (kps.WELFORD, kps.variance(0)), (kps.ARGMAX, kps.INDEX),
             (kps.MINMAX, kps.PEAK_TO_PEAK), (kps.norms.SUM_OF_SQUARES, kps.norms.ROOT)]
RAW_DTYPES = ["float32", "float16", "float64", "int32", "bool", "complex64", "complex128"]


def _compile_raw(args):
    i, dt_name = args
    op, epilogue = RAW_SPECS[i]
    # (complex data's 2-norm sums the squares of their magnitudes: kps.norms.of_magnitudes)
    transform = kps.ABS if op is kps.norms.SUM_OF_SQUARES and dt_name.startswith("complex") else kps.IDENTITY
    return _compile_functors(raw.functors(kps.resolve(op, transform, epilogue, np.dtype(dt_name))))


@pytest.mark.exhaustive
def test_every_raw_state_specialisation_compiles_for_sm_90():
    jobs = [(i, d) for i in range(len(RAW_SPECS)) for d in RAW_DTYPES]
    counts = _compile_in_parallel(_compile_raw, jobs)
    assert len(counts) == len(jobs) and min(counts) >= 4


def _compile_complex(args):
    from test_complex import COMPLEX_SPECS

    i, dt_name = args
    op, transform, epilogue = COMPLEX_SPECS[i]
    return _compile_functors(kps.resolve(op, transform, epilogue, np.dtype(dt_name)))


@pytest.mark.exhaustive
def test_every_complex_specialisation_compiles_for_sm_90():
    """Every op NumPy defines for complex numbers (tests/test_complex.py's specs) through every
    kernel variant, complex64 and complex128 (the fast tier compiles each op's row kernel)."""
    from test_complex import COMPLEX_SPECS

    jobs = [(i, d.name) for i in range(len(COMPLEX_SPECS)) for d in kps.dtypes.COMPLEX]
    counts = _compile_in_parallel(_compile_complex, jobs)
    assert len(counts) == len(jobs) and min(counts) >= 4


def test_the_look_kernels_compile_for_sm_90():
    """kernels/look.py's kernel, one per result width."""
    prog = kps.compile_program(look.SOURCE, list(look.NAMES.values()), "sm_90", [source.INCLUDE_DIR], optimise=False)
    assert sorted(prog.lowered) == sorted(look.NAMES.values()) and prog.cubin


def test_compile_error_names_the_functor_line():
    bad = kps.TransformOp("broken", "x +* 2", numpy=lambda x: x)
    f = kps.resolve(kps.ADD, bad, kps.NONE, np.float32)
    cfg = config.plan((64, 64), (64, 1), (1,), (1,), 4, 4, 132)
    with pytest.raises(kps.CompileError) as err:
        kps.compile_program(source.program(f), [source.kernel_name(cfg, f)], "sm_90", [source.INCLUDE_DIR],
                            optimise=False)
    assert "x +* 2" in str(err.value) and "error" in str(err.value)


def test_selections_are_exact_and_sums_are_not():
    """A selection never rounds (`ReduceOp(exact=True)`), so its float folds keep the plain order;
    the kernels read it from the generated struct (kps::kShortChains)."""
    from kps import nan

    assert all(op.exact for op in (kps.MAX, kps.MIN, nan.NANMAX, nan.NANMIN))
    assert not any(op.exact for op in (kps.ADD, kps.MUL, kps.WELFORD))
    rendered = {op.name: kps.resolve(op, kps.IDENTITY, kps.NONE, np.dtype(np.float64)).render() for op in (kps.MAX, kps.ADD)}
    assert "enum { kExact = 1 };" in rendered["max"] and "enum { kExact = 0 };" in rendered["add"]


def _ptx(f, cfg) -> str:
    """The PTX of the kernel `cfg` launches for functors `f` (NVRTC, sm_90)."""
    name = source.kernel_name(cfg, f)
    prog = nvrtc.createProgram(source.program(f), "p.cu", [], [])
    nvrtc.addNameExpression(prog, name)
    nvrtc.compileProgram(prog, ["-arch=sm_90", "-std=c++17", "-DNDEBUG", f"-I{source.INCLUDE_DIR}",
                                f"-I{kps.compiler.INCLUDE_DIR}"])
    ptx = nvrtc.getPTX(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


@pytest.mark.parametrize("shape, axes, kernel", [((1024, 1024), (0,), "outer"), ((32, 65536), (1,), "inner"),
                                                  ((2033601, 33), (0,), "staged")])
def test_float64_partials_load_straight_into_registers(shape, axes, kernel):
    """A split's combine loads each float64 partial of a float32 sum with one `ld.global.cg.f64`
    (kps::LoadGlobalCG's branch for scalars), in every kernel. Through a union of two 32-bit words
    (`ld.global.cg.v2.s32`), ptxas gave every partial the same scratch pair and moved each out
    before the next load could issue: a round trip to L2 a partial (docs/tuning.md, session 16)."""
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    cfg = config.plan(shape, strides, axes, (1,), 4, 4, 132, acc_itemsize=8)
    assert cfg.kernel == kernel and cfg.num_splits > 1
    ptx = _ptx(kps.resolve(kps.ADD, kps.IDENTITY, kps.NONE, np.dtype(np.float32)), cfg)
    loads = set(re.findall(r"ld\.global\.cg\.[\w.]+", ptx))
    assert loads == {"ld.global.cg.f64"}


@pytest.mark.parametrize("epilogue", [kps.variance(1), kps.std(0), kps.mean_and_variance(0.5)], ids=lambda e: e.name)
def test_a_variance_multiplies_by_reciprocals_of_the_launch_count(epilogue):
    """var, std and mean_var of a WELFORD state read the launch's count and multiply by 1 / n and
    1 / max(n - ddof, 0) (kps/statistics.py): a var over rows of 2, where two float64 divisions an
    output set the speed (docs/tuning.md), compiles to reciprocals and no float64 division. A
    NaN-skipping state counts its own numbers and divides by them."""
    shape = (1 << 20, 2)
    cfg = config.plan(shape, (2, 1), (1,), (1,), 4, 4, 132, acc_itemsize=32, state=True)
    ptx = _ptx(kps.resolve(kps.WELFORD, kps.IDENTITY, epilogue, np.dtype(np.float32)), cfg)
    assert "rcp.rn.f64" in ptx and "div.rn.f64" not in ptx
    nan = kps.resolve(kps.nan.NAN_WELFORD, kps.IDENTITY, kps.nan.nan_variance(1), np.dtype(np.float32))
    assert "div.rn.f64" in _ptx(nan, cfg)
