"""The airspeed-velocity suite: this project's reductions next to cupy.sum and torch.sum on the
public cases (ops/bench/bench_cases.json), and the read ceiling, commit by commit.

Asynchronous launches make asv's own wall-clock timer meaningless for GPU work, so the `track_`
benchmarks report the median of CUDA-event timings from `ops.bench.timing` (the code `python -m
ops.bench` uses). Each class measures all its parameters once, in `setup_cache` (one process, one
CUDA context, one ceiling measurement), and the tracks read the numbers back. Without a GPU the
cache is empty and every setup raises NotImplementedError: asv skips the suite.
"""
from ops.bench import cases, peers, rosenbrock, sweep, timing

_CASES = {c.name: c for c in cases.load_cases()}
CASES = list(_CASES)
SMALL_CASES = [n for n in CASES if n.startswith(("small_", "tiny_"))]
#: The cases of the history chart in the README: the simplest and the hardest layout.
HEADLINE_CASES = ["full_1d_256M", "nchw_stats_128x64x56x56"]
OPS = ["sum", "mean", "max", "min", "prod", "all", "any"]
#: Reductions with a state of several fields (kps/statistics.py, kps/arg.py), tracked on float32 against the peers.
STATE_OPS = ["argmax", "argmin", "var", "std", "logsumexp", "mean_var"]
FAMILY_OPS = ["nansum", "nanmean", "nanmax", "nanvar", "nanargmax", "count_nonzero", "ptp", "minmax", "norm",
              "sum_precise"]
DTYPES = ["float32", "float16", "int32", "bool", "complex64", "complex128"]
#: What complex numbers are tracked on: sums (rows, columns: every case's axes), products, variances.
COMPLEX_OPS = ("sum", "prod", "var")
IMPLS = ["kps", "cupy", "torch"]


def applies(op: str, dtype: str) -> bool:
    """all/any on bool; the arithmetic ops on numbers; complex numbers on COMPLEX_OPS."""
    if dtype.startswith("complex"):
        return op in COMPLEX_OPS
    if op not in OPS:  # (var of real numbers: StateOps, against the peers)
        return False
    return (op in ("all", "any")) == (dtype == "bool")


#: Widths of `python -m ops.bench --sweep` the history tracks: odd, narrow and wide, off the 16-byte grid.
WIDTHS = [3, 7, 17, 33, 65, 127, 1001]
WIDTH_KINDS = [f"{op}-{dt}" for op, dt in sweep.KINDS]

#: The op x dtype matrix's ops: OPS, and var of complex numbers.
MATRIX_OPS = OPS + ["var"]

#: "op-dtype" pairs that apply (one parameter, so asv spends no process on a pair that does not).
OP_DTYPES = [f"{op}-{dt}" for op in MATRIX_OPS for dt in DTYPES if applies(op, dt)]


def _call(impl: str, op: str, x, axes):
    """A zero-argument call of `impl` reducing `x`, or None where that peer is missing."""
    if impl == "kps":
        fn = peers.OPS[op][0]
        return lambda: fn(x, axis=axes)
    return peers.peer_calls(op, x, axes).get(impl)


def _measure(runs):
    """{(case, op, dtype, impl): GB/s} for runs of (case, dtype, ops, impls), plus the ceiling."""
    if not timing.gpu_available():
        return None
    import cupy

    out = {"ceiling": timing.read_ceiling_gbps()}
    for case, dtype, ops, impls in runs:
        c = _CASES[case]
        x = cases.make_input(c.shape, dtype, cupy)
        for op in ops:
            for impl in impls:
                fn = _call(impl, op, x, c.axes)
                if fn is not None:
                    out[(case, op, dtype, impl)] = c.nbytes(dtype) / timing.median_us(fn) / 1e3
        del x
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def _matrix_runs():
    """(case, dtype, the ops that apply) for every public case and dtype of the op x dtype matrix."""
    return [(case, dt, [op for op in MATRIX_OPS if applies(op, dt)]) for case in CASES for dt in DTYPES]


class _Tracked:
    """A class whose numbers come from its `setup_cache`. asv skips a benchmark whose setup raises
    NotImplementedError: no GPU (no cache), or no number for these parameters (a missing peer)."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 1800

    def setup(self, cache, *params):  # asv passes the cache first
        if cache is None:
            raise NotImplementedError("no GPU")
        if self.key(*params) not in cache:
            raise NotImplementedError(f"not measured here: {params}")

    def value(self, cache, *params) -> float:
        return cache[self.key(*params)]


class PublicCases(_Tracked):
    """Every public case's sum in GB/s: this project and the peers on one chart."""

    params = (CASES, IMPLS)
    param_names = ["case", "impl"]

    def setup_cache(self):
        return _measure([(name, c.dtype, ["sum"], IMPLS) for name, c in _CASES.items()])

    @staticmethod
    def key(case, impl):
        return (case, "sum", _CASES[case].dtype, impl)

    def track_gbps(self, cache, case, impl):
        return self.value(cache, case, impl)

    track_gbps.unit = "GB/s"


class PercentOfCeiling(_Tracked):
    """This project's sum on every public case as a share of the read ceiling measured in the
    same process."""

    params = (CASES,)
    param_names = ["case"]

    def setup_cache(self):
        return _measure([(name, c.dtype, ["sum"], ["kps"]) for name, c in _CASES.items()])

    @staticmethod
    def key(case):
        return (case, "sum", _CASES[case].dtype, "kps")

    def track_pct_ceiling(self, cache, case):
        return 100.0 * self.value(cache, case) / cache["ceiling"]

    track_pct_ceiling.unit = "%"


class OpsByDtype(_Tracked):
    """Every op over the dtypes that matter (all/any on bool), on every public case."""

    params = (CASES, OP_DTYPES)
    param_names = ["case", "op_dtype"]

    def setup_cache(self):
        return _measure([(case, dt, ops, ["kps"]) for case, dt, ops in _matrix_runs()])

    @staticmethod
    def key(case, op_dtype):
        return (case, *op_dtype.split("-"), "kps")

    def track_gbps(self, cache, case, op_dtype):
        return self.value(cache, case, op_dtype)

    def track_pct_ceiling(self, cache, case, op_dtype):
        return 100.0 * self.value(cache, case, op_dtype) / cache["ceiling"]

    track_gbps.unit = "GB/s"
    track_pct_ceiling.unit = "%"


class StateOps(_Tracked):
    """The reductions with a state (index, Welford, running maximum) on every public case, float32,
    next to torch's and CuPy's equivalents (GB/s)."""

    params = (CASES, STATE_OPS, IMPLS)
    param_names = ["case", "op", "impl"]

    def setup_cache(self):
        return _measure([(name, "float32", STATE_OPS, IMPLS) for name in CASES])

    @staticmethod
    def key(case, op, impl):
        return (case, op, "float32", impl)

    def track_gbps(self, cache, case, op, impl):
        return self.value(cache, case, op, impl)

    track_gbps.unit = "GB/s"


class FamilyOps(StateOps):
    """The rest of the family (NaN-skipping, counts, both extremes) on every public case, float32,
    next to torch's and CuPy's equivalents where they have one (GB/s). Its own cache: asv keys a
    cache by the function that fills it."""

    params = (CASES, FAMILY_OPS, IMPLS)

    def setup_cache(self):
        return _measure([(name, "float32", FAMILY_OPS, IMPLS) for name in CASES])


class Rosenbrock(_Tracked):
    """The named transform-reduce case: the Rosenbrock cost of 90M float32 values over x[:-1] and
    x[1:] in one pass (GB/s counts the input once), next to what CuPy and torch users write."""

    params = (IMPLS,)
    param_names = ["impl"]

    def setup_cache(self):
        if not timing.gpu_available():
            return None
        row = rosenbrock.run_rosenbrock(timing.read_ceiling_gbps())
        return {impl: row["MB"] * 1e3 / row[f"{name}_us"]
                for impl, name in (("kps", "ours"), ("cupy", "cupy"), ("torch", "torch")) if f"{name}_us" in row}

    @staticmethod
    def key(impl):
        return impl

    def track_gbps(self, cache, impl):
        return self.value(cache, impl)

    track_gbps.unit = "GB/s"


class Widths(_Tracked):
    """(N, W) inputs of the sweep (about 256 MB) reduced over axis 0 (columns) or 1 (rows): GB/s of
    this project and the peers (GB/s = input + output bytes over the time of one call)."""

    params = (WIDTH_KINDS, WIDTHS, [0, 1], IMPLS)
    param_names = ["kind", "width", "axis", "impl"]

    def setup_cache(self):
        if not timing.gpu_available():
            return None
        out = {"ceiling": timing.read_ceiling_gbps()}
        for op, dtype, shape, (axis,) in sweep.width_cases(WIDTHS):
            row = sweep.measure(op, dtype, shape, (axis,), out["ceiling"])
            for impl, name in (("kps", "ours"), ("cupy", "cupy"), ("torch", "torch")):
                if f"{name}_GBps" in row:
                    out[(f"{op}-{dtype}", shape[1], axis, impl)] = row[f"{name}_GBps"]
        return out

    @staticmethod
    def key(kind, width, axis, impl):
        return (kind, int(width), int(axis), impl)

    def track_gbps(self, cache, kind, width, axis, impl):
        return self.value(cache, kind, width, axis, impl)

    track_gbps.unit = "GB/s"


def warm(job) -> None:
    """Compile (into the disk cache) the kernels one (case, dtype, ops) needs: run in a worker."""
    import cupy

    case, dtype, ops = job
    c = _CASES[case]
    x = cases.make_input(c.shape, dtype, cupy)
    for op in ops:
        _call("kps", op, x, c.axes)()
    cupy.cuda.Device().synchronize()


def warm_all(workers: int) -> int:
    """Compile every kernel the suite measures, in parallel processes, before `asv run` (whose
    measurements run one process at a time and would otherwise compile serially)."""
    import multiprocessing

    jobs = _matrix_runs() + [(name, "float32", STATE_OPS + FAMILY_OPS) for name in CASES]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(warm, jobs, chunksize=1)
    widths = sweep.width_cases(WIDTHS)
    sweep.warm(widths, workers)
    return len(jobs) + len(widths)


class SmallEndToEnd:
    """Small and tiny inputs, where dispatch dominates: seconds per call end to end (host
    dispatch and the wait for the result included), by asv's own timer."""

    params = (SMALL_CASES, IMPLS)
    param_names = ["case", "impl"]
    repeat = 10
    timeout = 300

    def setup(self, case, impl):
        if not timing.gpu_available():
            raise NotImplementedError("no GPU")
        if impl == "torch" and peers.cuda_torch() is None:
            raise NotImplementedError("torch is not installed")
        import cupy

        c = _CASES[case]
        self.x = cases.make_input(c.shape, c.dtype, cupy)
        self.fn = _call(impl, "sum", self.x, c.axes)
        self.sync = cupy.cuda.get_current_stream().synchronize
        self.fn()
        self.sync()

    def time_call(self, case, impl):
        self.fn()
        self.sync()
