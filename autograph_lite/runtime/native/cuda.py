"""GPU kernels from the one generator: the CUDA dialect (`language.CUDA`) of a fused
elementwise chain, compiled by NVRTC, launched through cupy.

- `elementwise_source(steps, operands)`: the chain's kernel, the same rendering as the CPU's
  (`elementwise.source`) with the CUDA spellings: a grid-stride loop, `__restrict__`, no
  standard headers; for a float32 chain without row inputs also `kernel_vec4`, which loads
  and stores float4s (launched when every array is 16-byte aligned). Raises `Unsupported` as
  the C dialect does.
- `compile_ptx(source)`: PTX for `ARCH` (sm_90, the H100) with the options cupy compiles
  with, through NVRTC (the `nvidia-cuda-nvrtc` wheel, cupy's, or a CUDA toolkit's library)
  or, where there is no NVRTC library, the toolkit's `nvcc --ptx`. Neither needs a GPU or a
  driver, so the test suite compiles every kernel it generates (`tests/test_cuda_kernels.py`).
  `ptx_compiler()` names the compiler found, or None.
- `elementwise_kernel(xp, steps, operands)`: `run(out, inputs, n, inner)` launching the kernel
  on cupy arrays (`xp.RawModule`: cupy compiles it with NVRTC for the GPU at hand and keeps
  the binary in its own disk cache), or None where the array module has no raw kernels (the
  tests' strict stand-in without a C++ compiler) or the chain has no CUDA form: the ops then run one by one.
"""
import ctypes
import ctypes.util
import functools
import glob
import os
import shutil
import tempfile

import numpy as np

from . import compiler, elementwise
from .language import CUDA, Unsupported

ARCH = "compute_90"
OPTIONS = ("-ftz=true",)  # cupy adds this to every kernel it compiles (cupy/cuda/compiler.py)
THREADS = 256
MAX_BLOCKS = 4096         # grid-stride: more elements than threads is fine


class CompileError(Exception):
    """A kernel NVRTC (or nvcc) refused: the message holds the compiler's log and the source."""


def elementwise_source(steps, operands):
    return elementwise.source(steps, operands, language=CUDA())


# --- compiling without a GPU --------------------------------------------------------------

def _nvrtc_candidates():
    try:
        import nvidia  # the nvidia-cuda-nvrtc wheel: nvidia/cu13/lib or nvidia/cuda_nvrtc/lib
        for base in nvidia.__path__:
            yield from sorted(glob.glob(os.path.join(base, "*", "lib", "libnvrtc.so*")), reverse=True)
    except ImportError:
        pass
    for home in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home:
            yield from sorted(glob.glob(os.path.join(home, "lib64", "libnvrtc.so*")), reverse=True)
    found = ctypes.util.find_library("nvrtc")
    if found:
        yield found


@functools.lru_cache(maxsize=None)
def _nvrtc():
    for path in _nvrtc_candidates():
        if "builtins" in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            return path, lib
        except OSError:
            continue
    return None


def ptx_compiler():
    """What compiles CUDA here: 'nvrtc (<library>)', 'nvcc (<path>)', or None."""
    found = _nvrtc()
    if found:
        return f"nvrtc ({found[0]})"
    nvcc = shutil.which("nvcc")
    return f"nvcc ({nvcc})" if nvcc else None


def compile_ptx(source, arch=ARCH):
    """PTX text of CUDA `source` for `arch`; raises CompileError with the compiler's log."""
    found = _nvrtc()
    if found:
        return _nvrtc_compile(found[1], source, arch)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CompileError("no CUDA compiler: install the nvidia-cuda-nvrtc wheel or a CUDA toolkit")
    return _nvcc_compile(nvcc, source, arch)


def _nvrtc_compile(lib, source, arch):
    program = ctypes.c_void_p()

    def check(result, what):
        if result != 0:
            raise CompileError(f"NVRTC {what}: {lib.nvrtcGetErrorString(result).decode()}")
    check(lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu", 0, None, None), "create")
    try:
        options = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in OPTIONS)]
        result = lib.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        if result != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, log)
            raise CompileError(f"NVRTC refused the kernel:\n{log.value.decode(errors='replace')}\n"
                               f"--- source ---\n{source}")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "PTX size")
        ptx = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(program, ptx), "PTX")
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def _nvcc_compile(nvcc, source, arch):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernel.cu"), "w") as f:
            f.write(source)
        done = compiler.run_tool([nvcc, "--ptx", f"-arch={arch}", *OPTIONS, "kernel.cu", "-o", "kernel.ptx"],
                                 tmp, timeout=300)
        if done.returncode != 0:
            raise CompileError(f"nvcc refused the kernel:\n{done.stderr}\n--- source ---\n{source}")
        with open(os.path.join(tmp, "kernel.ptx")) as f:
            return f.read()


# --- launching on a GPU -------------------------------------------------------------------

def elementwise_kernel(xp, steps, operands):
    """run(out, inputs, n, inner): the chain over `n` elements of cupy arrays (scalars passed
    by value), or None (see the module docstring)."""
    if not hasattr(xp, "RawModule"):
        return None
    try:
        source = elementwise_source(steps, operands)
    except Unsupported:
        return None
    try:  # cupy compiles at the first get_function
        module = _module(xp, source)
        kernel = module.get_function("kernel")
        # the float4 kernel, where the chain has one: used when every array is 16-byte aligned
        vector = module.get_function("kernel_vec4") if "kernel_vec4(" in source else None
    except Exception as e:
        raise CompileError(f"{type(e).__name__}: {e}\n--- source ---\n{source}") from e
    scalar_types = [np.dtype(dtype).type if kind == "scalar" else None for dtype, _, kind in operands]

    def run(out, inputs, n, inner=0):
        args = [t(elementwise.as_number(v)) if t is not None else v for v, t in zip(inputs, scalar_types)]
        arrays = [out, *(a for a, t in zip(args, scalar_types) if t is None)]
        if vector is not None and n >= 4 and all(a.data.ptr % 16 == 0 for a in arrays):
            fn, work = vector, n // 4
        else:
            fn, work = kernel, n
        blocks = max(1, min(MAX_BLOCKS, -(-work // THREADS)))
        fn((blocks,), (THREADS,), (np.int64(n), np.int64(inner), out, *args))
    return run


@functools.lru_cache(maxsize=256)
def _module(xp, source):
    return xp.RawModule(code=source)
