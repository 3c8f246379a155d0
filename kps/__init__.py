"""kps: the kernel primitives (CUDA headers under kps/include), the functor descriptors, and the
NVRTC compile helper. Imports nothing from `kernels` or `ops`, and touches no GPU at import time."""
from .compiler import CompileError, compile_program
from .dtypes import SUPPORTED, check_dtype
from .functors import (
    ABS,
    ADD,
    EPILOGUES,
    IDENTITY,
    LOGICAL_AND,
    LOGICAL_OR,
    MAX,
    MEAN,
    MIN,
    MUL,
    NONE,
    NONZERO,
    REDUCE_OPS,
    SQUARE,
    TRANSFORMS,
    Epilogue,
    Functors,
    ReduceOp,
    TransformOp,
    STATE_FIELD_TYPES,
    packs_words,
    resolve,
    word_columns,
    word_functors,
)
from .statistics import LOG_OF_SUM, LOGSUMEXP, WELFORD, WELFORD_FINITE_SHIFT, mean_and_variance, std, variance
from .arg import ARGMAX, ARGMIN, INDEX
from .extrema import MIN_AND_MAX, MINMAX, PEAK_TO_PEAK
from . import nan, norms, precise

__all__ = [
    "ABS", "ADD", "EPILOGUES", "IDENTITY", "LOGICAL_AND", "LOGICAL_OR", "MAX", "MEAN", "MIN", "MUL",
    "NONE", "REDUCE_OPS", "SQUARE", "TRANSFORMS", "SUPPORTED", "CompileError", "Epilogue", "Functors",
    "ReduceOp", "TransformOp", "check_dtype", "compile_program", "packs_words", "resolve", "word_columns", "word_functors",
    "STATE_FIELD_TYPES", "LOG_OF_SUM", "LOGSUMEXP", "WELFORD", "WELFORD_FINITE_SHIFT", "mean_and_variance", "std", "variance", "ARGMAX", "ARGMIN", "INDEX",
    "NONZERO", "MIN_AND_MAX", "MINMAX", "PEAK_TO_PEAK", "nan", "norms", "precise",
]
