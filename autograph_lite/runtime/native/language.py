"""Dialects of the one C-style code generator: what differs between C for the CPU and its
siblings is spelling only (the model is tinygrad's `CStyleLanguage`).

`render.py` writes a graph region as statements and `cexpr.py` writes each op's expression;
both ask a `CStyleLanguage` for every word that is dialect-specific: the scalar type names,
the prelude, how a helper function and the entry function are declared, the name of a
math function for a dtype, and the loop over the elements of an elementwise kernel. `C` is
the dialect built by the system compiler (`compiler.py`); `CUDA` overrides the same few
members for kernels compiled by NVRTC (`cuda.py`).
"""
import numpy as np

# a C helper: the flags numpy reports ('divide', 'over', 'invalid') raised since the call began
# (on x86-64 the SSE status register alone, read in one instruction: numpy and this code compute
# floats with SSE/AVX, and the helper runs before every call of a numpy loop)
# (`ag_clear_flags` likewise clears the SSE flags alone: glibc's feclearexcept saves and reloads the
# x87 environment too, which costs more than a short loop's whole run)
FLAG_BITS = """#if defined(__x86_64__) && defined(__SSE__)
static inline int ag_flags(void) {
    unsigned f = __builtin_ia32_stmxcsr();
    return (f & 0x4 ? 16 : 0) | (f & 0x8 ? 32 : 0) | (f & 0x1 ? 64 : 0);
}
static inline void ag_clear_flags(void) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() & ~0x3fu); }
#else
static inline int ag_flags(void) {
    int f = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID);
    return (f & FE_DIVBYZERO ? 16 : 0) | (f & FE_OVERFLOW ? 32 : 0) | (f & FE_INVALID ? 64 : 0);
}
static inline void ag_clear_flags(void) { feclearexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID); }
#endif"""

# C helpers raising the flags numpy reports for integer division (x // 0: 'divide'; MIN // -1: 'over'),
# where ag_flags reads them back: on x86-64 the SSE status register (glibc's feraiseexcept sets
# 'over' in the x87's)
RAISE_FLAGS = """#if defined(__x86_64__) && defined(__SSE__)
static inline void ag_raise(unsigned flags) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() | flags); }
#define AG_DIVIDE 0x4u
#define AG_OVERFLOW 0x8u
#else
#include <fenv.h>
static inline void ag_raise(int flags) { feraiseexcept(flags); }
#define AG_DIVIDE FE_DIVBYZERO
#define AG_OVERFLOW FE_OVERFLOW
#endif"""



class Unsupported(Exception):
    """The op, dtype or construct has no translation here; the numpy path runs instead."""


class CStyleLanguage:
    """The spellings every C-family dialect shares; subclasses override what differs."""

    name = "c-style"
    includes = ("#include <stdint.h>", "#include <stdlib.h>", "#include <math.h>")
    helper_prefix = "static inline"      # a small function the expressions call
    entry_prefix = ""                     # the function Python (or a launch) calls
    restrict = "restrict"
    fp_flags = False  # whether an elementwise kernel returns the floating-point flags it raised (FLAG_BITS)
    flag_raisers = None  # the helpers `raise_flag` calls (RAISE_FLAGS); None: the dialect raises none
    # a dialect's own spelling of an op, keyed as cexpr.BY_COMPUTATION (by the op's `ufunc` or
    # `primitive`), over the shared one: rule(emitter, operands, out_dtype) -> expression
    code_for_op = {}
    # float comparisons that raise no 'invalid' flag for a NaN operand
    quiet_comparisons = {"<": "isless", "<=": "islessequal", ">": "isgreater", ">=": "isgreaterequal"}
    types = {
        np.dtype(np.bool_): "uint8_t",
        np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t",
        np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
        np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
        np.dtype(np.uint32): "uint32_t", np.dtype(np.uint64): "uint64_t",
        np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    }

    def __init__(self, vector_math=frozenset()):
        self.vector_math = vector_math  # libm names with SIMD variants the compiler may call

    def type(self, dtype):
        """The scalar type holding numpy `dtype`; raises Unsupported for one it cannot hold."""
        try:
            return self.types[np.dtype(dtype)]
        except (KeyError, TypeError):
            raise Unsupported(f"dtype {dtype}") from None

    def raise_flag(self, kind):
        """A C statement raising floating-point flag `kind` ("DIVIDE", "OVERFLOW"): an integer op numpy
        warns of (x // 0) reported as a float op's are; empty where the dialect raises none."""
        return f"ag_raise(AG_{kind});" if self.flag_raisers else ""

    def math_function(self, name, dtype):
        """The libm-style name of math function `name` ("tanh") for float `dtype`."""
        return name + ("f" if np.dtype(dtype) == np.float32 else "")

    def math_declaration(self, name, dtype):
        """A declaration the prelude needs before calling math function `name`, or None."""
        return None

    vector_types = {}  # numpy dtype -> (vector type, lanes) an elementwise kernel may load whole

    def elementwise_loop(self, body, rows, start="0", count="n"):
        """The loop of an elementwise kernel around `body`, statements over the element index `i`
        from `start` to `count` (C expressions over the parameters `n` and `inner`); with `rows`,
        row inputs are read at the column `j` (`inner` elements a row). A plain loop here."""
        if rows:  # the whole range: a kernel with row inputs is not split
            assert (start, count) == ("0", "n"), "a kernel with row inputs runs over all its rows"
            return ["    for (int64_t r = 0; r < n / inner; r++) {",
                    "        for (int64_t j = 0; j < inner; j++) {",
                    "            const int64_t i = r * inner + j;",
                    *("            " + line for line in body), "        }", "    }"]
        return [f"    for (int64_t i = {start}; i < {count}; i++) {{", *("        " + line for line in body), "    }"]


class C(CStyleLanguage):
    """C compiled for this CPU by the system compiler: SIMD variants of libm functions
    (glibc's libmvec) are declared so loops over them vectorize."""

    name = "c"
    fp_flags = True
    flag_raisers = RAISE_FLAGS

    def math_declaration(self, name, dtype):
        if name not in self.vector_math:
            return None
        t = self.type(dtype)
        params = ", ".join([t] * (2 if name == "pow" else 1))
        return f'__attribute__((simd("notinbranch"))) {t} {self.math_function(name, dtype)}({params});'


class CUDA(CStyleLanguage):
    """CUDA C++ for NVRTC (cupy's compiler): no standard headers (the fixed-width types and
    the float constants are defined in the prelude), kernels `extern "C" __global__`, helpers
    `__device__`, and elementwise loops grid-strided: thread t of T handles elements t, t+T,
    ... so any launch size covers any n; float32 chains also get a kernel loading float4s. The GPU raises no floating-point flags, so comparisons
    are plain operators; math functions are CUDA's (tanhf, expf, ...: the names C uses)."""

    name = "cuda"
    includes = (
        "#ifdef __CUDACC_RTC__",  # NVRTC: no standard headers
        "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;",
        "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;",
        "typedef unsigned long long uint64_t;",
        "#define INFINITY __int_as_float(0x7f800000)",
        "#define NAN __int_as_float(0x7fffffff)",
        "#define INT64_MIN (-9223372036854775807LL - 1)",
        "#else",                  # nvcc
        "#include <stdint.h>",
        "#include <math.h>",
        "#endif",
    )
    helper_prefix = "static __device__ __forceinline__"
    entry_prefix = 'extern "C" __global__ '
    restrict = "__restrict__"
    quiet_comparisons = {}

    vector_types = {np.dtype(np.float32): ("float4", 4)}  # 16-byte loads and stores

    def elementwise_loop(self, body, rows, start="0", count="n"):
        first = ("" if start == "0" else f"{start} + ") + "(int64_t)blockIdx.x * blockDim.x + threadIdx.x"
        lines = ["    {", "    const int64_t stride = (int64_t)gridDim.x * blockDim.x;",
                 f"    for (int64_t i = {first}; i < {count}; i += stride) {{"]
        if rows:
            lines.append("        const int64_t j = i % inner;")
        return [*lines, *("        " + line for line in body), "    }", "    }"]
