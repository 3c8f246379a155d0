"""Functor descriptors: what to reduce and how to map each element, in CUDA and in NumPy.

A descriptor carries a CUDA expression and its NumPy twin, so the GPU kernels and the NumPy
backend compute the same function from one definition. A new functor is a few lines:

    SQUARE = TransformOp("square", "x * x", numpy=np.square)
    NORM2 = Epilogue("sqrt", "sqrt(a)", numpy=lambda a, n: np.sqrt(a))

Kernels see them as generated structs (see `render`), never as edits to a kernel file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional, Tuple

import numpy as np

from . import cache, dtypes

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

TypeRule = Callable[[np.dtype, Optional[np.dtype]], "tuple[np.dtype, np.dtype]"]


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name: functor names are C identifiers, got {name!r}")


def _accumulate_wide(dtype: np.dtype, requested: Optional[np.dtype]):
    """sum/prod (NumPy): bool and signed ints -> int64, unsigned -> uint64, floats keep their type.
    16-bit floats accumulate in float32 but keep their type on output."""
    if requested is not None:
        out = requested
    elif dtype.kind in "bi":
        out = np.dtype(np.int64)
    elif dtype.kind == "u":
        out = np.dtype(np.uint64)
    else:
        out = dtype
    return (np.dtype(np.float32) if dtypes.is_half(out) else out), out


def _accumulate_sum(dtype: np.dtype, requested: Optional[np.dtype]):
    """sum: NumPy's result type (`_accumulate_wide`); a float32 sum accumulates in float64 (a
    complex64 one in complex128, each part as a float32 sum). Its
    rounding is then 2^-53 an add, so the float32 result is the correctly rounded sum unless the data
    cancel to below 2^-29 of their magnitude, where a float32 accumulator loses digits on every add
    that meets a larger partial sum (1e8 beside 1). On the H100 the public cases and most widths
    keep their speed; odd columns and small columns lose some (docs/tuning.md, "Float32 sums in
    float64"). 16-bit floats keep float32, 13 bits beyond their own."""
    acc, out = _accumulate_wide(dtype, requested)
    return _wider(acc, out), out


def _wider(acc: np.dtype, out: np.dtype) -> np.dtype:
    """A float32 accumulator's float64, a complex64's complex128; any other as it is."""
    if acc == np.float32 and not dtypes.is_half(out):
        return np.dtype(np.float64)
    return np.dtype(np.complex128) if acc == np.complex64 else acc


def _accumulate_mean_sum(dtype: np.dtype, requested: Optional[np.dtype]):
    """mean: NumPy's result type (`_accumulate_mean`); a float32 mean sums in float64 as sum does."""
    acc, out = _accumulate_mean(dtype, requested)
    return _wider(acc, out), out


def _accumulate_same(dtype: np.dtype, requested: Optional[np.dtype]):
    """max/min: the input's own type (exact); 16-bit floats compare in float32."""
    acc = np.dtype(np.float32) if dtypes.is_half(dtype) else dtype
    return acc, (requested if requested is not None else dtype)


def _accumulate_bool(dtype: np.dtype, requested: Optional[np.dtype]):
    return np.dtype(np.bool_), (requested if requested is not None else np.dtype(np.bool_))


def _accumulate_mean(dtype: np.dtype, requested: Optional[np.dtype]):
    """mean (NumPy): ints and bool -> float64; floats keep their type, 16-bit ones summed in float32."""
    if requested is not None:
        out = requested
    elif dtype.kind in "biu":
        out = np.dtype(np.float64)
    else:
        out = dtype
    return (np.dtype(np.float32) if dtypes.is_half(out) else out), out


#: Types a state field may have: "acc" (the accumulate dtype the op's type rule picks), "real" (its
#: real part's: a count or a sum of squares beside complex sums), or one of these.
STATE_FIELD_TYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64")


@dataclass(frozen=True, eq=False)
class ReduceOp:
    """A reduction: an associative, commutative `combine` of accumulators `a` and `b` (CUDA, in
    `acc_t`), its `identity` per accumulate dtype, the NumPy ufunc whose `.reduce` is its twin, and
    the rule (input dtype, requested dtype) -> (accumulate dtype, output dtype).

    `empty_ok=False` makes an empty reduction an error, as NumPy's maximum and minimum do.

    With `state` the accumulator is a struct of several fields, `((name, type), ...)`, each type
    "acc" or one of STATE_FIELD_TYPES. Then `lift` (CUDA) makes the state of one element `x` (in
    `value_t`, the accumulate dtype), `combine` (CUDA) merges states `a` and `b`, `identity(dtype)`
    gives every field's value as a dict, and the NumPy twins work on dicts of arrays, field by
    field: `numpy_lift(x)` and `numpy(a, b)`. CUDA text containing `return` is a function body,
    anything else one expression. The epilogue reads the fields as `a.name`.

    `indexed=True` (a state op only) gives `lift` each element's index in the reduced range as `i`
    (`long long`; NumPy: `numpy_lift(x, i)` with an int64 array): its place in the C-order
    flattening of the reduced axes, the same on every kernel path (argmax: kps/arg.py). Over a dask
    array of CuPy blocks each block lifts its own indices and a field named `i` holding them as
    lifted is moved into the whole range (ops/dask_backend.py): such a state keeps them there.

    `exact=True` says `combine` never rounds (it selects one of its arguments: max, min): its folds
    keep the plain order, with no short-chain levels (kps/include/kps/chains.cuh). Integer, bool and
    state accumulators never take the levels, exact or not.

    `fold` (CUDA, a state op only; optional; PyTorch's `reduce`) merges one more element `x` (index
    `i`) into a state `a` that has already taken one through `combine(b, lift(y, j))`: it must give
    `combine(a, lift(x, i))`, and may leave out what only an empty side needs (Welford's test for
    an empty state and the selects behind it). The kernels take it for every element of a register
    tile after each accumulator's first, which goes through `combine`; without one every element
    does (no Fold is rendered, so those kernels compile as before). A state that can stay empty after
    an element (NaN-skipping Welford) declares none.

    `push` (CUDA, a state op only; optional) merges one element `x` into a state `a` that may be
    empty: it must give `combine(a, lift(x, i))`. The kernels take it for each accumulator's first
    element of a register tile, where that state may be a running one. Without it they compile
    `combine(a, lift(x, i))`, which the compiler shortens where the lift's fields are constants
    (Welford's count, its -0.0 sums); an op whose lift selects its fields by the element
    (Welford's finite shift) declares one, so that element costs a test and a fold, not a merge.

    `heavy=True` (a state op only) says one element's merge is long: an exp (logsumexp), a value and
    an int64 index (the arg-reductions). Over columns, such an op runs out of warps before it runs
    out of memory bandwidth, so ReduceOuter keeps more of them resident (kernels/policy.py,
    HEAVY_COL_MIN_BLOCKS) at the price of registers.
    """

    name: str
    combine: str
    identity: Callable[[np.dtype], object]
    numpy: Callable
    accumulate: TypeRule = _accumulate_same
    empty_ok: bool = True
    state: Tuple[Tuple[str, str], ...] = ()
    lift: str = ""
    numpy_lift: Optional[Callable] = None
    fold: str = ""
    push: str = ""
    indexed: bool = False
    heavy: bool = False
    exact: bool = False

    def __post_init__(self):
        _check_name(self.name)
        if not callable(self.numpy) or not (self.state or callable(getattr(self.numpy, "reduce", None))):
            raise TypeError(f"numpy: a scalar op's twin is a NumPy ufunc (its .reduce folds an axis; a state op's "
                            f"a function of two dicts of fields), got {self.numpy!r}")
        if not isinstance(self.state, tuple):
            raise TypeError(f"state: expected a tuple of (name, type) pairs, got {self.state!r}")
        for field in self.state:
            if not (isinstance(field, tuple) and len(field) == 2 and isinstance(field[0], str)
                    and _NAME.match(field[0])):
                raise TypeError(f"state: expected (name, type) pairs with C identifiers for names, got {field!r}")
            if field[1] not in ("acc", "real") and field[1] not in STATE_FIELD_TYPES:
                raise TypeError(f"state: field {field[0]!r} has unsupported type {field[1]!r}; supported: "
                                f"'acc', 'real', {', '.join(map(repr, STATE_FIELD_TYPES))}")
        if len({name for name, _ in self.state}) != len(self.state):
            raise ValueError(f"state: duplicate field names in {self.state!r}")
        if self.state and not (self.lift and callable(self.numpy_lift)):
            raise TypeError("lift: a state needs `lift` (CUDA) and `numpy_lift` (NumPy)")
        if self.fold and not self.state:
            raise TypeError("fold: only a state op folds one element into a state (declare `state` and `lift`)")
        if self.push and not self.state:
            raise TypeError("push: only a state op merges one element into a state (declare `state` and `lift`)")
        if self.indexed and not self.state:
            raise TypeError("indexed: only a state op receives the element's index (declare `state` and `lift`)")
        if self.heavy and not self.state:
            raise TypeError("heavy: only a state op is planned as heavy (declare `state` and `lift`)")

    def state_dtype(self, acc: np.dtype) -> np.dtype:
        """The accumulator's layout as a NumPy structured dtype: the CUDA struct's field order,
        offsets and size (the kernels' partials and shared memory are sized by it). A complex field
        aligns to its whole size, as kps::complex<T> does (alignas(2 * sizeof(T))), where NumPy's
        own alignment is its part's: complex Welford's state is 64 bytes, not NumPy's 48. The
        rendered struct checks its size and each field's alignment where it compiles
        (`_render_state`), which pins these offsets."""
        return _state_layout(self.state, np.dtype(acc))


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def _state_layout(state: tuple, acc: np.dtype) -> np.dtype:
    """`ReduceOp.state_dtype`, once per (fields, accumulate dtype): every checked call resolves one."""
    names, formats, offsets, end, widest = [], [], [], 0, 1
    for name, t in state:
        field = _field_dtype(t, acc)
        align = _cuda_alignment(field)
        offsets.append(-(-end // align) * align)
        names.append(name)
        formats.append(field)
        end, widest = offsets[-1] + field.itemsize, max(widest, align)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": -(-end // widest) * widest})


def _cuda_alignment(dtype: np.dtype) -> int:
    """A state field's alignment in CUDA: a complex number's whole size (kps::complex<T> is
    alignas(2 * sizeof(T))), else NumPy's."""
    return dtype.itemsize if dtype.kind == "c" else dtype.alignment


def _field_dtype(t: str, acc: np.dtype) -> np.dtype:
    """A state field's dtype: "acc" the accumulate dtype, "real" its real part's (float64 for
    complex128; the accumulate dtype itself where it is real), else the named dtype."""
    return acc if t == "acc" else dtypes.real_dtype(acc) if t == "real" else np.dtype(t)


#: The most arrays one transform may read (kps::kMaxInputs in kps/include/kps/types.cuh).
MAX_INPUTS = 4

_INPUT_NAME = re.compile(r"\bx(\d+)\b")


@dataclass(frozen=True, eq=False)
class TransformOp:
    """An elementwise map applied before reducing: a CUDA expression of `x` and its NumPy twin.

    `x` arrives in the input's math type (float for 16-bit floats); the result type follows NumPy:
    whatever `numpy` returns for the input dtype. A transform of several arrays (`ops.reduce` given
    a tuple) reads them as `x0`, `x1`, ... and its NumPy twin takes them as positional arrays;
    `inputs` says how many (by default the highest `x<k>` the CUDA text names, plus one).
    """

    name: str
    cuda: str
    numpy: Callable[..., np.ndarray]
    inputs: int = 0

    def __post_init__(self):
        _check_name(self.name)
        if not isinstance(self.cuda, str):
            raise TypeError(f"cuda: expected a CUDA expression, got {self.cuda!r}")
        if not callable(self.numpy):
            raise TypeError(f"numpy: expected the transform's NumPy twin (a function of arrays), got {self.numpy!r}")
        if self.inputs == 0:
            named = [int(k) for k in _INPUT_NAME.findall(self.cuda)]
            object.__setattr__(self, "inputs", max(named) + 1 if named else 1)
        if isinstance(self.inputs, bool) or not isinstance(self.inputs, int) or not 1 <= self.inputs <= MAX_INPUTS:
            raise ValueError(f"inputs: a transform reads 1 to {MAX_INPUTS} arrays, got {self.inputs!r}")

    def result_dtype(self, dtype) -> np.dtype:
        """The result type for an input dtype, or a tuple of them (one per input)."""
        dts = tuple(np.dtype(d) for d in dtype) if isinstance(dtype, tuple) else (np.dtype(dtype),)
        return _result_dtype(self, dts)


@lru_cache(maxsize=cache.DEFAULT_LIMIT)
def _result_dtype(op: TransformOp, dts: Tuple[np.dtype, ...]) -> np.dtype:
    result = op.numpy(*(np.ones(1, dtype=d) for d in dts))
    return dtypes.check_dtype(np.asarray(result).dtype, f"transform {op.name}")


@dataclass(frozen=True, eq=False)
class Epilogue:
    """The last step on each output: a CUDA expression of the accumulator `a` and the reduced count
    `n`, its NumPy twin `numpy(a, n)`, and optionally its own type rule (mean: ints -> float64).

    A tuple of expressions gives several results per output from one pass (mean and variance),
    in the result dtype each; the NumPy twin then returns a tuple of arrays."""

    name: str
    cuda: object  # str, or a tuple of str
    numpy: Callable[[np.ndarray, int], np.ndarray]
    accumulate: Optional[TypeRule] = None

    def __post_init__(self):
        _check_name(self.name)
        texts = self.cuda if isinstance(self.cuda, tuple) else (self.cuda,)
        if not texts or not all(isinstance(t, str) and t for t in texts):
            raise TypeError(f"cuda: expected a CUDA expression or a tuple of them, got {self.cuda!r}")
        if isinstance(self.cuda, tuple) and len(self.cuda) == 1:
            raise TypeError(f"cuda: a tuple gives several results, one an expression; give one result's "
                            f"expression as a str, got {self.cuda!r}")
        if not callable(self.numpy):
            raise TypeError(f"numpy: expected the epilogue's NumPy twin, numpy(a, n), got {self.numpy!r}")

    @property
    def outputs(self) -> int:
        """Results per output: 1, or one per expression of a tuple."""
        return len(self.cuda) if isinstance(self.cuda, tuple) else 1


def _lowest(dt: np.dtype):
    """The least value of `dt` (complex: -inf - inf j, first in NumPy's lexicographic order)."""
    if dt == np.bool_:
        return False
    if dt.kind == "c":
        return complex(-np.inf, -np.inf)
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: np.dtype):
    if dt == np.bool_:
        return True
    if dt.kind == "c":
        return complex(np.inf, np.inf)
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


# max/min propagate NaN: a NaN on either side wins (NumPy's maximum/minimum).
ADD = ReduceOp("add", "a + b", lambda dt: 0, np.add, _accumulate_sum)
MUL = ReduceOp("mul", "a * b", lambda dt: 1, np.multiply, _accumulate_wide)
MAX = ReduceOp("max", "(a > b || a != a) ? a : b", _lowest, np.maximum, _accumulate_same, empty_ok=False, exact=True)
MIN = ReduceOp("min", "(a < b || a != a) ? a : b", _highest, np.minimum, _accumulate_same, empty_ok=False, exact=True)
LOGICAL_AND = ReduceOp("logical_and", "a && b", lambda dt: True, np.logical_and, _accumulate_bool)
LOGICAL_OR = ReduceOp("logical_or", "a || b", lambda dt: False, np.logical_or, _accumulate_bool)

IDENTITY = TransformOp("identity", "x", lambda x: x)
SQUARE = TransformOp("square", "x * x", np.square)
ABS = TransformOp("abs", "kps::Abs(x)", np.abs)  # a complex number's magnitude (hypot), as numpy.abs
NONZERO = TransformOp("nonzero", "x != 0", lambda x: x != 0)  # numpy.count_nonzero's view (NaN counts)

NONE = Epilogue("none", "a", lambda a, n: a)
# (a complex sum over its count as NumPy divides it: kps::DivideByCount, kps/include/kps/complex.cuh)
MEAN = Epilogue("mean", "kps::DivideByCount(a, static_cast<decltype(kps::Real(a))>(n))",
                lambda a, n: np.true_divide(a, n), _accumulate_mean_sum)

# Logical reductions of 1-byte inputs read four bytes at once (kernels/planner/words.py, `folds_words`):
# a word holds a true byte when it is nonzero, and nothing but true bytes when no byte is zero.
# The latter is the classic has-a-zero-byte test, nonzero exactly when some byte is zero (a borrow
# starts only at a zero byte, so a word without one borrows nowhere).
ANY_BYTE = TransformOp("any_byte", "x != 0u", lambda w: w != 0)
ALL_BYTES = TransformOp("all_bytes", "((x - 0x01010101u) & ~x & 0x80808080u) == 0u",
                        lambda w: ((w - np.uint32(0x01010101)) & ~w & np.uint32(0x80808080)) == 0)

REDUCE_OPS = (ADD, MUL, MAX, MIN, LOGICAL_AND, LOGICAL_OR)
TRANSFORMS = (IDENTITY, SQUARE, ABS)
EPILOGUES = (NONE, MEAN)


def _body(code: str) -> str:
    """A function body from CUDA text: as it is when it returns, else `return <expression>;`."""
    return code if re.search(r"\breturn\b", code) else f"return {code};"


@dataclass(frozen=True)
class Functors:
    """One reduction's functors with the dtypes they run at, and the CUDA structs naming them.
    For a state op `acc_dtype` is the state's structured dtype and `value_dtype` the accumulate
    dtype of its "acc" fields; otherwise both are the accumulate dtype."""

    op: ReduceOp
    transform: TransformOp
    epilogue: Epilogue
    in_dtype: np.dtype
    acc_dtype: np.dtype
    out_dtype: np.dtype
    value_dtype: Optional[np.dtype] = None
    more_dtypes: Tuple[np.dtype, ...] = ()  # a transform of several inputs: theirs after in_dtype

    @property
    def in_dtypes(self) -> Tuple[np.dtype, ...]:
        return (self.in_dtype,) + self.more_dtypes

    @property
    def input_type(self) -> str:
        """The CUDA type the kernels read an element as: the input's, or a kps::Pack of several."""
        if not self.more_dtypes:
            return dtypes.cuda_type(self.in_dtype)
        return f"kps::Pack<{', '.join(dtypes.cuda_type(d) for d in self.in_dtypes)}>"

    @property
    def acc_code(self) -> str:
        if self.op.state:
            return f"{self.op.name}_{dtypes.code(self.value_dtype)}"
        return dtypes.code(self.acc_dtype)

    @property
    def reduce_struct(self) -> str:
        return f"Reduce_{self.op.name}_{dtypes.code(self.value_dtype or self.acc_dtype)}"

    @property
    def transform_struct(self) -> str:
        return f"Transform_{self.transform.name}_{'_'.join(dtypes.code(d) for d in self.in_dtypes)}"

    @property
    def epilogue_struct(self) -> str:
        return f"Epilogue_{self.epilogue.name}_{self.acc_code}_{dtypes.code(self.out_dtype)}"

    def render(self) -> str:
        """The CUDA structs the kernels are instantiated with (interface: kps/primitives.cuh)."""
        arg = dtypes.math_type(self.in_dtype) if not self.more_dtypes else self.input_type
        res = dtypes.math_type(self.transform.result_dtype(self.in_dtypes))
        out = dtypes.cuda_type(self.out_dtype)
        if self.op.state:
            acc, reduce = f"State_{self.acc_code}", self._render_state()
        else:
            acc = dtypes.cuda_type(self.acc_dtype)
            identity = dtypes.cuda_literal(self.op.identity(self.acc_dtype), self.acc_dtype)
            reduce = (
                f"struct {self.reduce_struct} {{\n"
                f"  typedef {acc} acc_t;\n"
                f"  enum {{ kExact = {int(self.op.exact)} }};\n"
                f"  __device__ static acc_t Identity() {{ return {identity}; }}\n"
                f"  __device__ static acc_t Combine(acc_t a, acc_t b) {{ return {self.op.combine}; }}\n"
                f"}};\n"
            )
        return (
            reduce +
            f"struct {self.transform_struct} {{\n"
            f"  typedef {arg} arg_t;\n"
            f"  typedef {res} res_t;\n"
            + self._render_apply() +
            f"}};\n"
            + (f"namespace kps {{\ntemplate <>\nstruct Lifter<{acc}, {res}> {{\n"
               f"  __device__ static {acc} Apply({res} x, long long i) {{\n"
               f"    return {self.reduce_struct}::Lift(Cast<{self.reduce_struct}::value_t>(x), i);\n  }}\n"
               f"}};\n}}  // namespace kps\n" if self.op.state else "") +
            f"struct {self.epilogue_struct} {{\n"
            f"  typedef {acc} acc_t;\n"
            + self._render_epilogue(out) +
            f"}};\n"
        )

    def _render_epilogue(self, out: str) -> str:
        """The epilogue's out_t and Apply: one result, or a kps::Results of several (one per expression)."""
        ep = self.epilogue
        if ep.outputs == 1:
            return (f"  typedef {out} out_t;\n"
                    f"  __device__ static out_t Apply(acc_t a, long long n) {{ return kps::Cast<out_t>({ep.cuda}); }}\n")
        fill = " ".join(f"r.val[{k}] = kps::Cast<{out}>({e});" for k, e in enumerate(ep.cuda))
        return (f"  typedef kps::Results<{out}, {ep.outputs}> out_t;\n"
                f"  __device__ static out_t Apply(acc_t a, long long n) {{ out_t r; {fill} return r; }}\n")

    def _render_apply(self) -> str:
        """The transform's Apply: of `x`, or of `x0`, `x1`, ... unpacked from a kps::Pack in their math types."""
        if not self.more_dtypes:
            # (a transform of one input may name it x0, as one of several does)
            alias = " const arg_t x0 = x;" if "0" in _INPUT_NAME.findall(self.transform.cuda) else ""
            return (f"  __device__ static res_t Apply(arg_t x) {{{alias} "
                    f"return static_cast<res_t>({self.transform.cuda}); }}\n")
        unpack = " ".join(f"const {dtypes.math_type(d)} x{k} = kps::Cast<{dtypes.math_type(d)}>(v{'.tail' * k}.head);"
                          for k, d in enumerate(self.in_dtypes))
        return f"  __device__ static res_t Apply(arg_t v) {{ {unpack} return static_cast<res_t>({self.transform.cuda}); }}\n"

    def _render_state(self) -> str:
        """A state op's struct and its reduce functor, with `Lift` (one element and its index -> a
        state): the kernels reach it through kps::Lift, as they reach a scalar accumulator's cast."""
        state, value = f"State_{self.acc_code}", dtypes.cuda_type(self.value_dtype)
        fields = [(name, self.acc_dtype.fields[name][0]) for name, _ in self.op.state]
        identity = self.op.identity(self.value_dtype)
        init = " ".join(f"a.{name} = {dtypes.cuda_literal(identity[name], dt)};" for name, dt in fields)
        # (NVRTC has no offsetof in constant expressions: the size, and each field's alignment in
        # C's order, pin the offsets the NumPy twin computed)
        layout = "".join(f"static_assert(alignof(decltype({state}::{name})) == {_cuda_alignment(dt)}, "
                         f"\"{state}.{name}: the alignment of its NumPy twin\");\n" for name, dt in fields)
        return (
            f"struct {state} {{\n" + "".join(f"  {dtypes.cuda_type(dt)} {name};\n" for name, dt in fields) + "};\n"
            f"static_assert(sizeof({state}) == {self.acc_dtype.itemsize}, \"{state}: the size of its NumPy twin\");\n"
            + layout +
            f"struct {self.reduce_struct} {{\n"
            f"  typedef {state} acc_t;\n"
            f"  typedef {value} value_t;\n"
            f"  typedef {dtypes.cuda_type(dtypes.real_dtype(self.value_dtype))} real_t;\n"
            f"  enum {{ kExact = {int(self.op.exact)} }};\n"
            f"  __device__ static acc_t Identity() {{ acc_t a; {init} return a; }}\n"
            f"  __device__ static acc_t Combine(acc_t a, acc_t b) {{ {_body(self.op.combine)} }}\n"
            f"  __device__ static acc_t Lift(value_t x, long long i) {{ {_body(self.op.lift)} }}\n"
            + (f"  __device__ static acc_t Fold(acc_t a, value_t x, long long i) {{ {_body(self.op.fold)} }}\n"
               if self.op.fold else "") +
            (f"  __device__ static acc_t Push(acc_t a, value_t x, long long i) {{ {_body(self.op.push)} }}\n"
             if self.op.push else "") +
            f"}};\n"
        )


_BYTES_IN_A_WORD = {LOGICAL_OR: ANY_BYTE, LOGICAL_AND: ALL_BYTES}


def packs_words(f: Functors) -> bool:
    """Whether the reduction may read its input four bytes at a time: `any` or `all` of the bytes
    of a 1-byte input themselves (no transform, and no epilogue that counts elements)."""
    return f.in_dtype.itemsize == 1 and f.op in _BYTES_IN_A_WORD and f.transform is IDENTITY and f.epilogue is NONE


def _byte_lanes(w: np.ndarray, fn) -> np.ndarray:
    """uint32 words with `fn` applied to each of their four bytes (uint8 in, uint8 out)."""
    lanes = np.ascontiguousarray(w, dtype=np.uint32).view(np.uint8)
    return np.ascontiguousarray(fn(lanes).astype(np.uint8)).view(np.uint32).reshape(np.shape(w))


#: Kept columns of a 1-byte `any` / `all` read as uint32 words, four columns a word
#: (the planner's `word_columns`): the words OR-ed (any), or AND-ed once each byte is 0xFF where nonzero
#: (all), byte lane by byte lane, and each byte of the result written as a bool.
BIT_OR = ReduceOp("bit_or", "a | b", lambda dt: 0, np.bitwise_or)
BIT_AND = ReduceOp("bit_and", "a & b", lambda dt: 0xFFFFFFFF, np.bitwise_and)
BYTES_NONZERO = TransformOp("bytes_nonzero", "__vcmpne4(x, 0u)", lambda w: _byte_lanes(w, lambda b: (b != 0) * 255))
BYTES_AS_BOOLS = Epilogue("bytes_as_bools", "(__vcmpne4(a, 0u) & 0x01010101u)",
                          lambda a, n: _byte_lanes(a, lambda b: b != 0))
_WORD_COLUMNS = {LOGICAL_OR: (BIT_OR, IDENTITY), LOGICAL_AND: (BIT_AND, BYTES_NONZERO)}


def word_columns(f: Functors) -> Functors:
    """The same reduction over uint32 words of four kept columns, where `packs_words(f)` and the
    result is bool: each word's bytes reduced lane by lane, four bools written a word."""
    op, transform = _WORD_COLUMNS[f.op]
    word = np.dtype(np.uint32)
    return Functors(op, transform, BYTES_AS_BOOLS, word, word, word, word)


def word_functors(f: Functors) -> Functors:
    """The same reduction over uint32 words of four input bytes (see `packs_words`)."""
    return Functors(f.op, _BYTES_IN_A_WORD[f.op], f.epilogue, np.dtype(np.uint32), f.acc_dtype, f.out_dtype,
                    f.value_dtype)


def _sums_in_out_dtype(op: ReduceOp, epilogue: Epilogue, t_dt: np.dtype, out_dtype: np.dtype) -> bool:
    """NumPy's ufunc.reduce (sum, prod, nansum) computes in out='s dtype where no dtype= is given:
    ints and bool into a float or complex out= sum and multiply in it, not in int64, where a product
    would wrap. (Between ints the wrapped int64 result casts to the same bits; a float sum keeps its
    wider accumulator.)"""
    return (epilogue is NONE and op.numpy in (np.add, np.multiply) and t_dt.kind in "biu"
            and out_dtype.kind in "fc")


def resolve(op: ReduceOp, transform: TransformOp, epilogue: Epilogue, in_dtype, requested=None,
            out_dtype=None) -> Functors:
    """Pick the accumulate and output dtypes as NumPy would.

    `in_dtype` is the input's dtype, or a tuple of them for a transform of several inputs;
    `requested` is the user's `dtype=`; `out_dtype` the dtype of a user's `out=` array, into which the
    kernel casts directly (no extra pass)."""
    in_dts = tuple(np.dtype(d) for d in in_dtype) if isinstance(in_dtype, tuple) else (np.dtype(in_dtype),)
    t_dt = transform.result_dtype(in_dts)
    if requested is None and out_dtype is not None and _sums_in_out_dtype(op, epilogue, t_dt, np.dtype(out_dtype)):
        requested = out_dtype
    rule = epilogue.accumulate or op.accumulate
    acc, out = rule(t_dt, None if requested is None else np.dtype(requested))
    state = op.state_dtype(acc) if op.state else acc
    return Functors(op, transform, epilogue, in_dts[0], state, np.dtype(out_dtype) if out_dtype is not None else out,
                    acc, in_dts[1:])
