"""The element types the kernels know: NumPy dtype <-> CUDA type name, and CUDA literals.

Only NumPy is imported here, so the table serves the GPU path, the NumPy backend and the compile
checks on a machine without a GPU alike.
"""
from __future__ import annotations

import numpy as np

try:  # bfloat16 has no NumPy dtype of its own; ml_dtypes (shipped with JAX) provides one.
    from ml_dtypes import bfloat16 as _bfloat16

    BFLOAT16 = np.dtype(_bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    BFLOAT16 = None

_CUDA_TYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float16): "kps::float16",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.complex64): "kps::complex<float>",  # kps/include/kps/complex.cuh
    np.dtype(np.complex128): "kps::complex<double>",
}
if BFLOAT16 is not None:
    _CUDA_TYPES[BFLOAT16] = "kps::bfloat16"

#: The dtypes the kernels know, in a stable order (tests and compile checks iterate it): the real
#: ones, which every op accepts, then the complex ones, which every op NumPy defines for them accepts
#: (not logsumexp, ptp of bool aside; docs/usage.md lists them).
SUPPORTED = tuple(_CUDA_TYPES)
COMPLEX = tuple(dt for dt in SUPPORTED if dt.kind == "c")
REAL = tuple(dt for dt in SUPPORTED if dt.kind != "c")

#: Short names used in generated symbol names.
_CODES = {dt: (dt.name if dt != BFLOAT16 else "bfloat16") for dt in _CUDA_TYPES}


def is_half(dtype: np.dtype) -> bool:
    """16-bit floats: stored as such, computed in float32."""
    return dtype == np.float16 or (BFLOAT16 is not None and dtype == BFLOAT16)


def check_dtype(dtype, argument: str = "x") -> np.dtype:
    """The dtype as np.dtype, or a TypeError that names `argument`."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{argument}: {dtype!r} is not a dtype") from exc
    if dt not in _CUDA_TYPES:
        supported = ", ".join(d.name for d in SUPPORTED)
        raise TypeError(f"{argument}: unsupported dtype ({dt}); supported: {supported}")
    return dt


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def is_inexact(dtype) -> bool:
    """Floats (16-bit ones too) and complex numbers."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fc" or is_half(dtype)


def inexact_requested(requested, what: str):
    """`dtype=` for a reduction that computes in a float type (a variance, logsumexp): a bool or
    integer `dtype=` is a TypeError that names it (NumPy's var of bool gives nonsense or fails on
    subtracting booleans)."""
    if requested is not None and not is_inexact(requested):
        raise TypeError(f"dtype: {what} computes in a float or complex type, got {np.dtype(requested)}")
    return requested


def refuse_complex(dtype, what: str) -> np.dtype:
    """`dtype`, or a TypeError naming `x` where it is complex and `what` takes no complex numbers."""
    if is_complex(dtype):
        raise TypeError(f"x: {what} of complex numbers ({np.dtype(dtype)}) is not supported")
    return dtype


def real_dtype(dtype) -> np.dtype:
    """The dtype of a value's parts: float32 for complex64, float64 for complex128, a real dtype itself."""
    dtype = np.dtype(dtype)
    return np.empty(0, dtype).real.dtype if dtype.kind == "c" else dtype


def storage(dtype: np.dtype) -> np.dtype:
    """The dtype an array library holds a value in: bfloat16 as its raw uint16 bits."""
    dtype = np.dtype(dtype)
    return np.dtype(np.uint16) if BFLOAT16 is not None and dtype == BFLOAT16 else dtype


def cuda_type(dtype: np.dtype) -> str:
    return _CUDA_TYPES[check_dtype(dtype)]


def math_type(dtype: np.dtype) -> str:
    """The CUDA type a functor computes in: float for the 16-bit floats, the type itself otherwise."""
    return "float" if is_half(np.dtype(dtype)) else cuda_type(dtype)


def code(dtype: np.dtype) -> str:
    return _CODES[np.dtype(dtype)]


def cuda_literal(value, dtype: np.dtype) -> str:
    """A CUDA expression of `value` in `dtype`: exact for every integer and float, inf and NaN included."""
    dt = np.dtype(dtype)
    ctype = cuda_type(dt)
    if dt == np.bool_:
        return "true" if value else "false"
    if dt.kind in "iu":
        v = int(value)
        if dt == np.int64 and v == np.iinfo(np.int64).min:
            return "(-9223372036854775807LL - 1)"
        suffix = {"int64": "LL", "uint64": "ULL", "uint32": "U"}.get(dt.name, "")
        return f"static_cast<{ctype}>({v}{suffix})"
    if dt.kind == "c":  # kps::complex<T>(re, im), each part exact
        v, part = complex(value), real_dtype(dt)
        return f"{ctype}({cuda_literal(v.real, part)}, {cuda_literal(v.imag, part)})"
    v = float(value)
    if dt == np.float64:
        bits = int(np.array(v, dtype=np.float64).view(np.uint64))
        return f"__longlong_as_double(0x{bits:016x}LL)"
    bits = int(np.array(v, dtype=np.float32).view(np.uint32))
    literal = f"__int_as_float(0x{bits:08x})"
    if dt == np.float32:
        return literal
    return f"kps::Cast<{ctype}>({literal})"

