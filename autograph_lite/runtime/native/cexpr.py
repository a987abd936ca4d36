"""C expressions for graph ops, with numpy's semantics.

One `Emitter` per generated source: `emitter.op(name, operands, out_dtype)` gives the C
expression of an op over operand expressions, each a `Value(expr, dtype, weak)`, and
records the helpers and libm declarations the source must start with (`prelude()`).
The expression syntax is shared by C and CUDA, so the CPU kernels (compiled here with
the system compiler) and a GPU ElementwiseKernel can be written from the same steps.

What numpy does and C would not, and how it is kept:
- dtypes: operands are cast to the dtype numpy computes in (NEP 50: a weak Python
  scalar takes the array's dtype), every step is stored in a typed local;
- integer overflow wraps (the source is compiled with -fwrapv); `//` and `%` floor
  toward -inf, and a zero divisor gives 0 (numpy's result) instead of a trap;
- maximum/minimum propagate NaN; no FMA contraction (-ffp-contract=off).
An op, dtype or combination not listed raises `Unsupported`, and the caller keeps its
numpy path for that kernel.
"""
import collections

import numpy as np

Value = collections.namedtuple("Value", "expr dtype weak")


class Unsupported(Exception):
    """The op or dtype has no C translation here; the numpy path runs instead."""


C_TYPES = {
    np.dtype(np.bool_): "uint8_t",
    np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
    np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
    np.dtype(np.uint32): "uint32_t", np.dtype(np.uint64): "uint64_t",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}

_BINARY = {"Add": "+", "Sub": "-", "Mul": "*"}
_COMPARE = {"Equal": "==", "NotEqual": "!=", "Less": "<", "LessEqual": "<=",
            "Greater": ">", "GreaterEqual": ">="}
_LIBM = {"Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Pow": "pow"}
_WEAK_EXAMPLE = {"b": True, "i": 1, "u": 1, "f": 1.0}


def c_type(dtype):
    try:
        return C_TYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise Unsupported(f"dtype {dtype}") from None


def literal(value, dtype):
    """A C literal of `value` in `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        text = repr(float(value))
        if text in ("inf", "-inf", "nan"):
            text = {"inf": "INFINITY", "-inf": "(-INFINITY)", "nan": "NAN"}[text]
            return text if dtype == np.float32 else f"((double){text})"
        return text + ("f" if dtype == np.float32 else "")
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is not None and not info.min <= int(value) <= info.max:
        raise Unsupported(f"{value} does not fit {dtype}")  # numpy raises; the Python path will too
    return f"(({c_type(dtype)}){int(value)})"


def compute_dtype(operands):
    """The dtype numpy computes a binary or unary op of `operands` in (NEP 50)."""
    examples = [_WEAK_EXAMPLE[v.dtype.kind] if v.weak else v.dtype for v in operands]
    return np.result_type(*examples)


class Emitter:
    def __init__(self, vector_math=frozenset()):
        self.vector_math = vector_math  # libm names with SIMD variants to declare
        self.helpers = {}               # name -> C definition
        self.declared = {}              # libm function -> declaration

    def prelude(self):
        return "\n".join(["#include <stdint.h>", "#include <math.h>",
                          *self.declared.values(), *self.helpers.values(), ""])

    def cast(self, value, dtype):
        dtype = np.dtype(dtype)
        if value.dtype == dtype:
            return value.expr
        if dtype == np.bool_:
            return f"({value.expr} != 0)"
        return f"(({c_type(dtype)}){value.expr})"

    def op(self, name, operands, out_dtype):
        """C expression of op `name` over `operands`, giving `out_dtype`."""
        out_dtype = np.dtype(out_dtype)
        c_type(out_dtype)
        for v in operands:
            c_type(v.dtype)
        if name in _COMPARE:
            dtype = compute_dtype(operands)
            if any(v.weak and v.dtype.kind in "iu" for v in operands) and dtype.kind in "iu":
                # numpy 2 compares a Python int with an integer array exactly (`uint8_x < -1` is
                # False): in int64, which holds both (a Python int is carried as int64 here)
                if any(not v.weak and v.dtype == np.uint64 for v in operands):
                    raise Unsupported("a Python int compared with uint64")
                dtype = np.dtype(np.int64)
            a, b = (self.cast(v, dtype) for v in operands)
            return f"({a} {_COMPARE[name]} {b})"
        if name in ("LogicalAnd", "LogicalOr", "LogicalNot"):
            a = [self.cast(v, np.bool_) for v in operands]
            return {"LogicalAnd": lambda: f"({a[0]} && {a[1]})",
                    "LogicalOr": lambda: f"({a[0]} || {a[1]})",
                    "LogicalNot": lambda: f"(!{a[0]})"}[name]()
        if name == "Select":
            c, x, y = self.cast(operands[0], np.bool_), *(self.cast(v, out_dtype) for v in operands[1:])
            return f"({c} ? {x} : {y})"
        if name == "Cast":
            if operands[0].dtype.kind == "f" and out_dtype.kind in "iu":
                raise Unsupported("float to integer casts")  # out-of-range values are undefined in C
            return self.cast(operands[0], out_dtype)
        if out_dtype == np.bool_:
            raise Unsupported(f"{name} on booleans")
        a = [self.cast(v, out_dtype) for v in operands]
        kind = out_dtype.kind
        zero, half = literal(0, out_dtype), literal(0.5, out_dtype) if kind == "f" else None
        if name in _BINARY:
            return f"({a[0]} {_BINARY[name]} {a[1]})"
        if name == "Neg":
            return f"(-{a[0]})"
        if name == "Square":
            return f"({a[0]} * {a[0]})"
        if name in ("Maximum", "Minimum", "Relu"):
            x, y = (a[0], zero) if name == "Relu" else a
            test = "<=" if name == "Minimum" else ">="
            nan = f" || {x} != {x}" if kind == "f" else ""
            return f"(({x} {test} {y}{nan}) ? {x} : {y})"
        if name == "Abs":
            return f"{self._libm('fabs', out_dtype)}({a[0]})" if kind == "f" else f"({a[0]} < 0 ? -{a[0]} : {a[0]})"
        if name in ("FloorDiv", "FloorMod") and kind in "iu":
            return f"{self._int_division(name, out_dtype)}({a[0]}, {a[1]})"
        if kind != "f":
            raise Unsupported(f"{name} on {out_dtype}")
        if name == "RealDiv":
            return f"({a[0]} / {a[1]})"
        if name in _LIBM:
            return f"{self._libm(_LIBM[name], out_dtype)}({', '.join(a)})"
        if name == "Sigmoid":  # the eager kernel's formula: 0.5 * tanh(0.5 * x) + 0.5
            return f"({self._libm('tanh', out_dtype)}({a[0]} * {half}) * {half} + {half})"
        raise Unsupported(name)

    def _libm(self, name, dtype):
        fn = name + ("f" if np.dtype(dtype) == np.float32 else "")
        if name in self.vector_math and fn not in self.declared:
            t = c_type(dtype)
            params = ", ".join([t] * (2 if name == "pow" else 1))
            # the SIMD variant glibc's libmvec provides, so loops over it vectorize
            self.declared[fn] = f'__attribute__((simd("notinbranch"))) {t} {fn}({params});'
        return fn

    def _int_division(self, name, dtype):
        """Helper for numpy's integer // or %: floor rounding, 0 for a zero divisor."""
        t = c_type(dtype)
        fn = f"ag_{'floordiv' if name == 'FloorDiv' else 'mod'}_{t}"
        if fn in self.helpers:
            return fn
        if dtype.kind == "u":
            body = "return b == 0 ? 0 : a / b;" if name == "FloorDiv" else "return b == 0 ? 0 : a % b;"
        elif name == "FloorDiv":
            # b == -1 is negation (MIN // -1 wraps to MIN, as in numpy), never a trap
            body = (f"if (b == 0) return 0;\n    if (b == -1) return ({t})(0 - (u{t})a);\n"
                    f"    {t} q = a / b;\n    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;")
        else:
            body = (f"if (b == 0 || b == -1) return 0;\n    {t} r = a % b;\n"
                    f"    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;")
        self.helpers[fn] = f"static inline {t} {fn}({t} a, {t} b) {{\n    {body}\n}}"
        return fn
