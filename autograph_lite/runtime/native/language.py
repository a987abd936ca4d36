"""Dialects of the one C-style code generator: what differs between C for the CPU and its
siblings is spelling only (the model is tinygrad's `CStyleLanguage`).

`render.py` writes a graph region as statements and `cexpr.py` writes each op's expression;
both ask a `CStyleLanguage` for every word that is dialect-specific: the scalar type names,
the prelude, how a helper function and the entry function are declared, and the name of a
math function for a dtype. `C` is the dialect built by the system compiler (`compiler.py`);
a CUDA dialect overrides the same few members.
"""
import numpy as np


class Unsupported(Exception):
    """The op, dtype or construct has no translation here; the numpy path runs instead."""


class CStyleLanguage:
    """The spellings every C-family dialect shares; subclasses override what differs."""

    name = "c-style"
    includes = ("#include <stdint.h>", "#include <math.h>")
    helper_prefix = "static inline"      # a small function the expressions call
    entry_prefix = ""                     # the function Python (or a launch) calls
    restrict = "restrict"
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

    def math_function(self, name, dtype):
        """The libm-style name of math function `name` ("tanh") for float `dtype`."""
        return name + ("f" if np.dtype(dtype) == np.float32 else "")

    def math_declaration(self, name, dtype):
        """A declaration the prelude needs before calling math function `name`, or None."""
        return None


class C(CStyleLanguage):
    """C compiled for this CPU by the system compiler: SIMD variants of libm functions
    (glibc's libmvec) are declared so loops over them vectorize."""

    name = "c"

    def math_declaration(self, name, dtype):
        if name not in self.vector_math:
            return None
        t = self.type(dtype)
        params = ", ".join([t] * (2 if name == "pow" else 1))
        return f'__attribute__((simd("notinbranch"))) {t} {self.math_function(name, dtype)}({params});'
