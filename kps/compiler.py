"""NVRTC compile helper: CUDA source + template name expressions -> cubin, cached in memory and on disk.

Compiling goes straight through NVRTC (`cupy_backends.cuda.libs.nvrtc`), which needs no GPU, so a
machine without one can compile-check every kernel specialisation. Loading a cubin onto a device
(`load`) is the only step that needs the driver.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Sequence

from . import cache

#: The primitives' headers; callers add their own kernel folders through `include_dirs`.
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
_OPTIONS = ("-std=c++17", "-DNDEBUG")
#: NVRTC's fast-compile mode, for programs compiled to prove they compile (`optimise=False`): the
#: front end, NVVM and ptxas still see every instantiation for the architecture, less optimised
#: (2026-11-27, two cores: a Welford float16 program of 74 kernels 68.6 s -> 31.5 s). Not `max`:
#: it keeps shared arrays the optimiser drops, and ptxas then refuses staged kernels that fit.
_PROOF_OPTIONS = ("-Ofc=mid",)


class CompileError(RuntimeError):
    """NVRTC rejected a program. The message carries the compiler's log and the offending lines."""


@dataclass(frozen=True)
class Program:
    cubin: bytes
    lowered: Dict[str, str]  # name expression -> mangled symbol


_lock = threading.Lock()
#: Compiled programs, keyed by the source, the kernel names, the architecture and the headers: what
#: the kernel text depends on, never a shape, so they stay few (host bytes; not bounded).
_programs: Dict[str, Program] = {}
#: Loaded modules per (program, device): CUDA handles, which a forked child forgets (kps/cache.py).
_modules = cache.device_state(cache.Lru())
#: Programs being compiled now: a second thread asking for one waits for the first's result.
_compiling: Dict[str, threading.Event] = {}


def _reset_in_child() -> None:
    """After fork(): the threads that held the lock or were compiling are not in the child."""
    global _lock
    _lock = threading.Lock()
    _compiling.clear()


os.register_at_fork(after_in_child=_reset_in_child)


def cache_dir() -> Path:
    return Path(os.environ.get("KPS_CACHE_DIR", Path.home() / ".cache" / "kps"))


_digests: Dict[tuple, str] = {}


def _headers_digest(include_dirs: Sequence[Path]) -> str:
    """Hash of every header a program can include: an edited header invalidates the disk cache."""
    key = tuple(include_dirs)
    if key not in _digests:
        h = hashlib.sha256()
        for d in include_dirs:
            for f in sorted(Path(d).rglob("*.cuh")):
                h.update(f.read_bytes())
        _digests[key] = h.hexdigest()
    return _digests[key]


_version = None


def _nvrtc_version() -> str:
    """NVRTC's version, asked once: asked again while another thread compiled its first program,
    NVRTC at times failed that compile ("failed to open libnvrtc-builtins")."""
    global _version
    if _version is None:
        from cupy_backends.cuda.libs import nvrtc

        with _lock:
            _version = _version or str(nvrtc.getVersion())
    return _version


def _key(source: str, names: Sequence[str], arch: str, include_dirs: Sequence[Path], options: Sequence[str]) -> str:
    h = hashlib.sha256()
    headers = _headers_digest(include_dirs)
    for part in (source, "\0".join(names), arch, " ".join(options), headers, _nvrtc_version()):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()


def _excerpt(source: str, log: str) -> str:
    """The program lines the log points at (`kps_program.cu(LINE)`), so a user functor's mistake
    shows next to the compiler's words."""
    lines = source.splitlines()
    shown = []
    for n in sorted({int(m) for m in re.findall(r"kps_program\.cu\((\d+)\)", log)}):
        if 0 < n <= len(lines):
            shown.append(f"  line {n}: {lines[n - 1].strip()}")
    return "\n".join(shown)


def compile_program(source: str, names: Sequence[str], arch: str = "sm_90",
                    include_dirs: Sequence[Path] = (), optimise: bool = True) -> Program:
    """Compile `source` for `arch`, instantiating every template in `names`; `include_dirs` are
    searched after the primitives' own headers. `optimise=False` compiles only to prove the source
    compiles (`_PROOF_OPTIONS`): such a program is cached apart and never loaded to run."""
    names = tuple(names)
    include_dirs = (INCLUDE_DIR, *include_dirs)
    options = _OPTIONS if optimise else _OPTIONS + _PROOF_OPTIONS
    key = _key(source, names, arch, include_dirs, options)
    while True:
        with _lock:
            prog = _programs.get(key)
            busy = _compiling.get(key) if prog is None else None
            if prog is None and busy is None:
                done = _compiling[key] = threading.Event()
        if prog is not None:
            return prog
        if busy is None:
            break
        busy.wait()  # another thread compiles it: take its program (or, if it failed, try here)
    try:
        return _compile_once(source, names, arch, include_dirs, options, key)
    finally:
        with _lock:
            del _compiling[key]
        done.set()


def _compile_once(source: str, names: tuple, arch: str, include_dirs: tuple, options: tuple, key: str) -> Program:
    """The program from the disk cache, or from NVRTC (then written to the disk cache)."""
    path = cache_dir() / f"{key}.cubin"
    meta = path.with_suffix(".json")
    try:
        prog = Program(path.read_bytes(), json.loads(meta.read_text()))
    except (OSError, ValueError):
        prog = _nvrtc(source, names, arch, include_dirs, options)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(prog.cubin)
            meta.write_text(json.dumps(prog.lowered))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache directory only costs a recompile next time
    with _lock:
        _programs[key] = prog
    return prog


def _nvrtc(source: str, names: Sequence[str], arch: str, include_dirs: Sequence[Path],
           options: Sequence[str]) -> Program:
    from cupy_backends.cuda.libs import nvrtc

    options = [f"-arch={arch}", *options, *(f"-I{d}" for d in include_dirs)]
    prog = nvrtc.createProgram(source, "kps_program.cu", [], [])
    try:
        for n in names:
            nvrtc.addNameExpression(prog, n)
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise CompileError(f"NVRTC failed ({exc}):\n{log}\nin:\n{_excerpt(source, log)}") from None
        cubin = nvrtc.getCUBIN(prog)
        lowered = {n: nvrtc.getLoweredName(prog, n) for n in names}
    finally:
        nvrtc.destroyProgram(prog)
    return Program(bytes(cubin), lowered)


def device_arch(device_id: int) -> str:
    import cupy

    return f"sm_{cupy.cuda.Device(device_id).compute_capability}"


def load(source: str, names: Sequence[str], device_id: int, include_dirs: Sequence[Path] = ()) -> Dict[str, object]:
    """Compile for the device's architecture and load: name expression -> `cupy.cuda.function.Function`."""
    arch = device_arch(device_id)
    prog = compile_program(source, names, arch, include_dirs)
    key = (id(prog), device_id)
    funcs = _modules.get(key)
    if funcs is None:
        import cupy
        from cupy.cuda import function

        with cupy.cuda.Device(device_id):
            module = function.Module()
            module.load(prog.cubin)
            funcs = {n: module.get_function(prog.lowered[n]) for n in names}
            funcs["__module__"] = module  # keeps the module loaded as long as its functions live
        funcs = _modules.put(key, funcs)
    return funcs
