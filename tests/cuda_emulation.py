"""CUDA kernels of the generator's CUDA dialect, run on the CPU: the source compiled as C++ with
the CUDA words defined away and the thread coordinates as globals, and for each kernel a
`launch_<kernel>(blocks, threads, params...)` that runs the grid one thread after another.

It checks what a GPU would run without one: tests/test_cuda_kernels.py runs every kernel of the
suite this way, and the stand-in device's `RawModule` (tests/standin.py) launches through it,
so the runtime's GPU path (layouts, scalars passed by value, the float4 kernel when aligned,
the launch size) runs under AG_TEST_DEVICE=standin. Math functions are the C library's here,
not CUDA's: this checks the kernels' structure and semantics, not CUDA's rounding.
"""
import atexit
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

from autograph_lite.runtime.native.language import CUDA

PRELUDE = """#include <stdint.h>
#include <math.h>
#include <string.h>
#define __global__
#define __device__
#define __forceinline__ inline
struct ag_dim3 { unsigned x; };
struct alignas(16) float4 { float x, y, z, w; };
static ag_dim3 blockIdx, threadIdx, blockDim, gridDim;
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static void ag_set_thread(unsigned block, unsigned thread, unsigned threads, unsigned blocks) {
    blockIdx.x = block; threadIdx.x = thread; blockDim.x = threads; gridDim.x = blocks;
}
"""
_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\) \{')
_DIRECTORY = tempfile.mkdtemp(prefix="ag-cuda-emulation-")
atexit.register(shutil.rmtree, _DIRECTORY, ignore_errors=True)


def compiler():
    return shutil.which("g++") or shutil.which("clang++")


def build(sources):
    """The library of `sources` ((tag, CUDA source) pairs): each kernel K of source `tag` as
    `K_<tag>` with its launcher `launch_K_<tag>`. Raises RuntimeError with the compiler's output."""
    shared = set(CUDA.includes)
    parts = [PRELUDE]
    for tag, source in sources:
        body = "\n".join(line for line in source.splitlines() if line not in shared)
        launchers = []
        for name, params in _KERNEL.findall(body):
            names = [p.split()[-1] for p in params.split(",")]
            launchers.append(
                f'extern "C" void launch_{name}_{tag}(unsigned blocks, unsigned threads, {params}) {{\n'
                f"    for (unsigned b = 0; b < blocks; b++)\n"
                f"        for (unsigned t = 0; t < threads; t++) {{\n"
                f"            ag_set_thread(b, t, threads, blocks);\n"
                f"            {name}_{tag}({', '.join(names)});\n"
                f"        }}\n}}")
        body = _KERNEL.sub(lambda m: f'extern "C" __global__ void {m.group(1)}_{tag}({m.group(2)}) {{', body)
        parts.append(f"namespace k{tag} {{\n{body}\n" + "\n".join(launchers) + "\n}")
    text = "\n".join(parts)
    path = os.path.join(_DIRECTORY, hashlib.sha256(text.encode()).hexdigest()[:24] + ".so")
    if not os.path.exists(path):
        with open(path[:-3] + ".cpp", "w") as f:
            f.write(text)
        done = subprocess.run([compiler(), "-O1", "-shared", "-fPIC", "-fwrapv", "-ffp-contract=off",
                               path[:-3] + ".cpp", "-o", path], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-4000:])
    return ctypes.CDLL(path)


_C_TYPES = {"int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32,
            "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
            "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "float": ctypes.c_float,
            "double": ctypes.c_double}


def launcher(library, source, name, tag):
    """fn(blocks, threads, *args) running kernel `name` of `source` (built into `library` as
    `tag`); args: pointers (ints) for the pointer parameters, numbers for the others."""
    params = dict(_KERNEL.findall(source))[name]
    types = [ctypes.c_void_p if "*" in p else _C_TYPES[p.split()[0]] for p in params.split(",")]
    fn = getattr(library, f"launch_{name}_{tag}")
    fn.restype = None
    fn.argtypes = [ctypes.c_uint, ctypes.c_uint, *types]
    return fn
