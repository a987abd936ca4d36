"""Elementwise math, comparisons, logic, matmul, reductions, where and cast.

Kernels reach numpy or cupy only through `xp`; numpy is imported here for dtype rules.
"""
import functools
import math
import operator

import numpy as np

from ..runtime import memory
from ..runtime.fp_errors import report_eagerly
from ..runtime.graph import Tensor, _tracing
from ..runtime.lowering import SPELLINGS
from ..runtime.opdef import AXES, BOOL, DTYPE, INT, SCALAR, STR, OptionalOf
from .core import (apply, broadcast_shapes, define, elementwise, exemplar, normalize_axes,
                   normalize_axis, result_dtype)


_HOST = (np.ndarray, float, int, bool, np.generic)


def _binary(opdef, doc):
    numpy_kernel = report_eagerly(opdef, opdef.kernel(np))

    def op(x, y):
        if not _tracing.stack and isinstance(x, _HOST) and isinstance(y, _HOST):
            return numpy_kernel(x, y)  # eager on host values: the kernel, nothing else
        return apply(opdef, (x, y))
    op.__doc__ = doc
    return op


def _unary(opdef, doc):
    numpy_kernel = report_eagerly(opdef, opdef.kernel(np))

    def op(x):
        if not _tracing.stack and isinstance(x, _HOST):
            return numpy_kernel(x)
        return apply(opdef, (x,))
    op.__doc__ = doc
    return op


# name, graph op, kernel, docstring, facts (see runtime/opdef.py; each backend spells the op from
# its `ufunc`: runtime/lowering.py, runtime/native/cexpr.py, export/onnx.py). Arithmetic and comparisons run
# through Python's operators: on arrays they are the same ufuncs, and on numpy scalars (0-d
# results inside loops) they take numpy's scalar fast path, several times faster than a ufunc call.
def _integer_power(node):
    """An integer to a signed integer power raises for a negative exponent (numpy's ValueError)."""
    return node.inputs[0].dtype.kind in "biu" and node.inputs[1].dtype.kind == "i"


_BINARY = [
    ("add", "Add", lambda xp: operator.add, "x + y, elementwise with numpy broadcasting.",
     dict(ufunc="add", commutative=True, in_place="+=", identity=-0.0, float_errors="add")),
    ("subtract", "Sub", lambda xp: operator.sub, "x - y, elementwise.",
     dict(ufunc="subtract", in_place="-=", identity=0.0, float_errors="subtract")),
    ("multiply", "Mul", lambda xp: operator.mul, "x * y, elementwise.",
     dict(ufunc="multiply", commutative=True, in_place="*=", identity=1, float_errors="multiply")),
    ("divide", "RealDiv", lambda xp: operator.truediv, "x / y (true division), elementwise.",
     dict(ufunc="divide", in_place="/=", identity=1, float_errors="divide")),
    ("floordiv", "FloorDiv", lambda xp: operator.floordiv, "x // y, elementwise.",
     dict(ufunc="floor_divide", float_errors="floor_divide")),
    ("mod", "FloorMod", lambda xp: operator.mod, "x % y with the sign of y (numpy), elementwise.",
     dict(ufunc="remainder", float_errors="remainder")),
    ("pow", "Pow", lambda xp: operator.pow, "x ** y, elementwise.",
     dict(ufunc="power", identity=1, float_errors="power", value_errors=_integer_power)),
    ("maximum", "Maximum", lambda xp: xp.maximum, "Elementwise maximum (NaN propagates).",
     dict(ufunc="maximum")),
    ("minimum", "Minimum", lambda xp: xp.minimum, "Elementwise minimum (NaN propagates).",
     dict(ufunc="minimum")),
    ("equal", "Equal", lambda xp: operator.eq, "x == y, elementwise; bool result.",
     dict(ufunc="equal", commutative=True)),
    ("not_equal", "NotEqual", lambda xp: operator.ne, "x != y, elementwise; bool result.",
     dict(ufunc="not_equal", commutative=True)),
    ("less", "Less", lambda xp: operator.lt, "x < y, elementwise; bool result.",
     dict(ufunc="less")),
    ("less_equal", "LessEqual", lambda xp: operator.le, "x <= y, elementwise; bool result.",
     dict(ufunc="less_equal")),
    ("greater", "Greater", lambda xp: operator.gt, "x > y, elementwise; bool result.",
     dict(ufunc="greater")),
    ("greater_equal", "GreaterEqual", lambda xp: operator.ge, "x >= y, elementwise; bool result.",
     dict(ufunc="greater_equal")),
    ("logical_and", "LogicalAnd", lambda xp: xp.logical_and, "Elementwise logical and.",
     dict(ufunc="logical_and", commutative=True)),
    ("logical_or", "LogicalOr", lambda xp: xp.logical_or, "Elementwise logical or.",
     dict(ufunc="logical_or", commutative=True)),
]

_UNARY = [
    ("negative", "Neg", lambda xp: operator.neg, "-x, elementwise.",
     dict(ufunc="negative", in_place="ufunc", involution=True)),
    ("tanh", "Tanh", lambda xp: xp.tanh, "Hyperbolic tangent, elementwise.",
     dict(ufunc="tanh", in_place="ufunc")),
    ("exp", "Exp", lambda xp: xp.exp, "e ** x, elementwise.",
     dict(ufunc="exp", in_place="ufunc", float_errors="exp")),
    ("log", "Log", lambda xp: xp.log, "Natural logarithm, elementwise.",
     dict(ufunc="log", in_place="ufunc", float_errors="log")),
    ("sqrt", "Sqrt", lambda xp: xp.sqrt, "Square root, elementwise.",
     dict(ufunc="sqrt", in_place="ufunc", float_errors="sqrt")),
    ("square", "Square", lambda xp: xp.square, "x * x, elementwise.",
     dict(ufunc="square", in_place="ufunc", float_errors="square")),
    ("abs", "Abs", lambda xp: operator.abs, "Absolute value, elementwise (Python's abs on Python numbers).",
     dict(ufunc="absolute", in_place="ufunc")),
    ("logical_not", "LogicalNot", lambda xp: xp.logical_not, "Elementwise logical not.",
     dict(ufunc="logical_not")),
]

# kernels that are Python's operators: on Python numbers they give a Python number, so the
# op of weak (Python) scalars is weak; a ufunc gives a numpy scalar (`np.sqrt(4)`), strong
_PYTHON_OPERATORS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                     operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
                     operator.gt, operator.ge, operator.neg, operator.abs}

OPS = {}  # public name -> OpDef, for overloads and tests


def _define_all(table, wrap):
    functions = []
    for name, op, kernel, doc, facts in table:
        OPS[name] = elementwise(op, kernel, weak_result=kernel(np) in _PYTHON_OPERATORS, **facts)
        fn = wrap(OPS[name], doc)
        fn.__name__ = fn.__qualname__ = name
        functions.append(fn)
    return functions


(add, subtract, multiply, divide, floordiv, mod, pow, maximum, minimum, equal, not_equal, less,
 less_equal, greater, greater_equal, logical_and, logical_or) = _define_all(_BINARY, _binary)
(negative, tanh, exp, log, sqrt, square, abs, logical_not) = _define_all(_UNARY, _unary)
assert [f.__name__ for f in (add, logical_or, negative, logical_not)] == [
    _BINARY[0][0], _BINARY[-1][0], _UNARY[0][0], _UNARY[-1][0]], "tables and names out of order"


# --- numpy's math ufuncs --------------------------------------------------------------------
# One op each, named by the ufunc computing it (`np.sin(t)` finds it through ops/overloads.py
# UFUNC_OPS); its dtype is numpy's (NEP 50), its kernel the ufunc itself. `warns`: numpy may
# report a floating-point error for it (overflow, invalid value, divide by zero).

def _math_ufunc(name, op, warns=True, in_place=False):
    facts = dict(ufunc=name, float_errors=name if warns else None)
    if in_place:
        facts["in_place"] = "ufunc"
    return (name, op, lambda xp: getattr(xp, name), f"numpy.{name}, elementwise.", facts)


MATH_UNARY = [_math_ufunc(name, op, in_place=True) for name, op in [
    ("sin", "Sin"), ("cos", "Cos"), ("tan", "Tan"), ("arcsin", "Asin"), ("arccos", "Acos"),
    ("arctan", "Atan"), ("sinh", "Sinh"), ("cosh", "Cosh"), ("arcsinh", "Asinh"), ("arccosh", "Acosh"),
    ("arctanh", "Atanh"), ("exp2", "Exp2"), ("expm1", "Expm1"), ("log2", "Log2"), ("log10", "Log10"),
    ("log1p", "Log1p"), ("cbrt", "Cbrt"), ("deg2rad", "Deg2Rad"), ("rad2deg", "Rad2Deg")]] + [
    _math_ufunc("reciprocal", "Reciprocal"),
    *(_math_ufunc(name, op, warns=False) for name, op in [
        ("sign", "Sign"), ("floor", "Floor"), ("ceil", "Ceil"), ("trunc", "Trunc"), ("rint", "Rint"),
        ("fabs", "Fabs"), ("isnan", "IsNaN"), ("isinf", "IsInf"), ("isfinite", "IsFinite"),
        ("signbit", "SignBit")])]

MATH_BINARY = [_math_ufunc(name, op, warns) for name, op, warns in [
    ("arctan2", "Atan2", True), ("hypot", "Hypot", True), ("logaddexp", "LogAddExp", True),
    ("copysign", "CopySign", False), ("fmax", "FMax", False), ("fmin", "FMin", False),
    ("heaviside", "Heaviside", False), ("fmod", "FMod", True)]]

(sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, arcsinh, arccosh, arctanh, exp2, expm1, log2, log10,
 log1p, cbrt, deg2rad, rad2deg, reciprocal, sign, floor, ceil, trunc, rint, fabs, isnan, isinf, isfinite,
 signbit) = _define_all(MATH_UNARY, _unary)
(arctan2, hypot, logaddexp, copysign, fmax, fmin, heaviside, fmod) = _define_all(MATH_BINARY, _binary)
assert [f.__name__ for f in (sin, signbit, arctan2, fmod)] == [
    MATH_UNARY[0][0], MATH_UNARY[-1][0], MATH_BINARY[0][0], MATH_BINARY[-1][0]], "tables and names out of order"


# --- numpy's integer, bit and floating-point-representation ufuncs ------------------------
# The bit ops' kernels are Python's operators (`&`, `<<`, `~`): numpy's ufuncs on arrays, and
# on Python ints a Python int, as the operators give eagerly (weak results, NEP 50).

BIT_UNARY = [("invert", "Invert", lambda xp: operator.invert, "~x, elementwise (bitwise not; logical on bools).",
              dict(ufunc="invert")),
             _math_ufunc("bitwise_count", "BitwiseCount", warns=False),
             _math_ufunc("spacing", "Spacing", warns=False),
             _math_ufunc("conjugate", "Conj", warns=False),
             _math_ufunc("positive", "Positive", warns=False)]

BIT_BINARY = [
    ("bitwise_and", "BitwiseAnd", lambda xp: operator.and_, "x & y, elementwise.",
     dict(ufunc="bitwise_and", commutative=True)),
    ("bitwise_or", "BitwiseOr", lambda xp: operator.or_, "x | y, elementwise.",
     dict(ufunc="bitwise_or", commutative=True)),
    ("bitwise_xor", "BitwiseXor", lambda xp: operator.xor, "x ^ y, elementwise.",
     dict(ufunc="bitwise_xor", commutative=True)),
    ("left_shift", "LeftShift", lambda xp: operator.lshift, "x << y, elementwise.", dict(ufunc="left_shift")),
    ("right_shift", "RightShift", lambda xp: operator.rshift, "x >> y, elementwise.", dict(ufunc="right_shift")),
    *(_math_ufunc(name, op, warns) for name, op, warns in [
        ("logical_xor", "LogicalXor", False), ("logaddexp2", "LogAddExp2", True), ("float_power", "FloatPower", True),
        ("ldexp", "Ldexp", True), ("nextafter", "NextAfter", False), ("gcd", "Gcd", False), ("lcm", "Lcm", False)])]

_PYTHON_OPERATORS |= {operator.invert, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift}
(invert, bitwise_count, spacing, conjugate, positive) = _define_all(BIT_UNARY, _unary)
(bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift, logical_xor, logaddexp2, float_power, ldexp,
 nextafter, gcd, lcm) = _define_all(BIT_BINARY, _binary)
assert [f.__name__ for f in (invert, positive, bitwise_and, lcm)] == [
    BIT_UNARY[0][0], BIT_UNARY[-1][0], BIT_BINARY[0][0], BIT_BINARY[-1][0]], "tables and names out of order"


# --- Python's `not` ---------------------------------------------------------------------

def _not_infer(x):
    if x.ndim != 0:
        raise ValueError(f"`not` of a tensor of shape {x.shape}: the truth value of an array with more "
                         f"than one element is ambiguous")
    return [((), np.dtype(np.bool_))]


# `not x` is a Python bool whatever x is (`not np.int32(5)` is False, weak under NEP 50),
# unlike logical_not's numpy bool: at run time `not x` itself
OPS["not"] = define("Not", lambda xp: operator.not_, _not_infer, may_raise=False, primitive="not")
SPELLINGS[OPS["not"]] = lambda xp, a, bind: f"(not {a[0]})"


def python_not(x):
    """Python's `not x` for a 0-d `x`: a weak (Python) bool."""
    out = apply(OPS["not"], (x,))
    if not isinstance(out, (bool, np.bool_)):
        out.weak = True
    return out


# --- where, cast --------------------------------------------------------------------------

def _where_kernel(xp):
    if xp is np:
        return np.where

    def where(c, x, y):  # a device's where (cupy's) takes an array condition only: not a Python bool
        return xp.where(c if isinstance(c, xp.ndarray) else xp.asarray(c), x, y)
    return where


OPS["where"] = define("Select", _where_kernel,
                      lambda c, x, y: [(broadcast_shapes(c.shape, x.shape, y.shape),
                                        result_dtype(np.where, (c, x, y)))],
                      elementwise=True, fresh=True, may_raise=False, primitive="where", in_place="copyto",
                      box="array")


def where(condition, x, y):
    """Elementwise `x if condition else y` (numpy.where with three arguments)."""
    return apply(OPS["where"], (condition, x, y))


def _cast_kernel(xp, dtype):
    if xp is np:
        def cast(x):  # astype keeps the box: a numpy scalar stays one, as `s.astype(d)` eagerly
            try:
                return x.astype(dtype)
            except AttributeError:  # a Python number
                return np.asarray(x).astype(dtype)
        return cast

    def cast(x):  # on a device, a host scalar (a loop counter) stays a host scalar: no copy
        if isinstance(x, (int, float, bool, np.generic)):
            return np.asarray(x).astype(dtype)[()]
        return xp.asarray(x).astype(dtype)
    return cast


def _cast_to_same(node):
    return node.inputs[0] if node.inputs[0].dtype == node.attrs["dtype"] else None


OPS["cast"] = define("Cast", _cast_kernel, lambda x, dtype: [(x.shape, dtype)], elementwise=True,
                     attrs={"dtype": DTYPE},
                     float_errors="cast", may_raise=False, primitive="astype", simplify=_cast_to_same,
                     box="input")


def cast(x, dtype):
    """`x` converted to `dtype` (numpy astype semantics)."""
    return apply(OPS["cast"], (x,), {"dtype": np.dtype(dtype)})


# --- matmul -------------------------------------------------------------------------------

def _matmul_infer(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul does not take scalars; use multiply (or *) instead")
    sa = a.shape if a.ndim > 1 else (1,) + a.shape
    sb = b.shape if b.ndim > 1 else b.shape + (1,)
    if None not in (sa[-1], sb[-2]) and sa[-1] != sb[-2]:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape} ({sa[-1]} != {sb[-2]})")
    shape = broadcast_shapes(sa[:-2], sb[:-2]) + sa[-2:-1] * (a.ndim > 1) + sb[-1:] * (b.ndim > 1)
    return [(shape, result_dtype(np.multiply, (a, b)))]


OPS["matmul"] = define("MatMul", lambda xp: xp.matmul, _matmul_infer, float_errors="matmul", ufunc="matmul",
                       fresh=True, may_raise=False, same_operands_matter=True)


def matmul(a, b):
    """Matrix product with numpy.matmul semantics (batch dims broadcast, 1-D promoted)."""
    return apply(OPS["matmul"], (a, b))


# --- reductions ---------------------------------------------------------------------------

# numpy reductions that are one ufunc's reduce: calling it skips np.sum's Python wrapper
_UFUNC_REDUCERS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
                   "any": "logical_or", "all": "logical_and"}


def _reduction(public, op_name, reducer, dtype_fn, doc):
    def kernel(xp, axis=None, keepdims=False):
        ufunc = getattr(xp, _UFUNC_REDUCERS.get(reducer, ""), None)
        if isinstance(ufunc, np.ufunc):
            return functools.partial(ufunc.reduce, axis=axis, keepdims=keepdims)
        return functools.partial(getattr(xp, reducer), axis=axis, keepdims=keepdims)

    def infer(x, axis=None, keepdims=False):
        axes = normalize_axes(axis, x.ndim)
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
        return [(shape, result_dtype(dtype_fn, (x,)))]

    def inline(xp, a, bind, axis=None, keepdims=False):
        ufunc = getattr(xp, _UFUNC_REDUCERS.get(reducer, ""), None)
        if not isinstance(ufunc, np.ufunc):
            return None
        return f"{bind(ufunc.reduce)}({a[0]}, {bind(axis)}, None, None, {bind(keepdims)})"

    OPS[public] = opdef = define(op_name, kernel, infer, may_raise=False, attrs={"axis": AXES, "keepdims": BOOL},
                                 float_errors="reduce" if reducer in ("sum", "mean", "prod") else None)
    SPELLINGS[opdef] = inline
    opdef.reduce_with = {"sum": "Add", "mean": "Add", "max": "Maximum", "min": "Minimum", "any": "LogicalOr",
                         "all": "LogicalAnd"}.get(reducer)
    opdef.averages = reducer == "mean"

    ufunc = getattr(np, _UFUNC_REDUCERS.get(reducer, ""), None)
    reduce = report_eagerly(opdef, getattr(ufunc, "reduce", None))
    report = report_eagerly(opdef, lambda f, x, axis, keepdims: f(x, axis=axis, keepdims=keepdims))

    def op(x, axis=None, keepdims=False):
        axis = _axis_attr(axis)
        if not _tracing.stack and type(x) is np.ndarray:  # eager on a host array: numpy directly
            if isinstance(ufunc, np.ufunc):
                return reduce(x, axis, None, None, bool(keepdims))
            return report(getattr(np, reducer), x, axis, bool(keepdims))
        return apply(opdef, (x,), {"axis": axis, "keepdims": bool(keepdims)})
    op.__name__ = op.__qualname__ = public
    op.__doc__ = doc + " Over `axis` (int, tuple, or None for all), numpy semantics."
    return op


def _axis_attr(axis):
    return tuple(axis) if isinstance(axis, list) else axis


reduce_sum = _reduction("reduce_sum", "Sum", "sum", np.sum, "Sum of elements.")
reduce_mean = _reduction("reduce_mean", "Mean", "mean", np.mean, "Mean of elements.")
reduce_max = _reduction("reduce_max", "Max", "max", np.max, "Maximum of elements.")
reduce_min = _reduction("reduce_min", "Min", "min", np.min, "Minimum of elements.")
reduce_prod = _reduction("reduce_prod", "Prod", "prod", np.prod, "Product of elements.")
reduce_any = _reduction("reduce_any", "Any", "any", np.any, "True where any element is true.")
reduce_all = _reduction("reduce_all", "All", "all", np.all, "True where all elements are true.")


def _argmax_infer(x, axis=None):
    if axis is None:
        return [((), np.dtype(np.intp))]
    axis = normalize_axis(axis, x.ndim)
    return [(x.shape[:axis] + x.shape[axis + 1:], np.dtype(np.intp))]


OPS["argmax"] = define("ArgMax", lambda xp, axis=None: functools.partial(xp.argmax, axis=axis),
                       _argmax_infer, attrs={"axis": OptionalOf(INT)})


def argmax(x, axis=None):
    """Index of the largest element (over the flattened array when axis is None, as numpy)."""
    return apply(OPS["argmax"], (x,), {"axis": axis})


# --- ufuncs with two outputs ------------------------------------------------------------------

def _two_outputs(name, op):
    def infer(x):
        with np.errstate(all="ignore"):
            first, second = getattr(np, name)(exemplar(x))
        return [(x.shape, first.dtype), (x.shape, second.dtype)]
    OPS[name] = define(op, lambda xp: getattr(xp, name), infer, fresh=True, may_raise=False)

    def fn(x):
        return apply(OPS[name], (x,))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"numpy.{name}, elementwise: its two results."
    return fn


modf = _two_outputs("modf", "Modf")
frexp = _two_outputs("frexp", "Frexp")


def _box_like_kernel(xp):
    if xp is not np:
        return lambda like, value: value  # a device has no scalars: its 0-d arrays stand for both
    def box_like(like, value):  # `value` as eager holds `like`: a 0-d array or a numpy scalar
        if isinstance(like, np.ndarray):
            return value if isinstance(value, np.ndarray) else np.asarray(value)
        return value[()] if isinstance(value, np.ndarray) else value
    return box_like


# `x += y` on a 0-d value that is a 0-d array on some runs and a numpy scalar on others (a tensor
# loop's variable: the start's box where it ran zero times, the body's elsewhere): the update in
# place keeps the array, the rebinding gives a scalar; the box is picked when the graph runs
OPS["box_like"] = define("BoxLike", _box_like_kernel, lambda like, value: [(value.shape, value.dtype)],
                         may_raise=False, box="input")


def box_like(like, value):
    """`value` (0-d, of `like`'s dtype) boxed as `like` is when the graph runs."""
    return apply(OPS["box_like"], (like, value))


# --- complex parts --------------------------------------------------------------------------
# `x.real` and `x.imag` (np.real, np.imag): views of a complex array's parts, numpy scalars of a
# numpy scalar's, Python floats of a Python number's (weak, as eager's attribute gives)

def _part(name, op, doc):
    def kernel(xp):
        return lambda x: getattr(x, name)

    def infer(x):
        return [(x.shape, np.dtype(getattr(np.ones((), x.dtype), name).dtype))]
    OPS[name] = define(op, kernel, infer, weak_result=True, may_raise=False, box="input",
                       view=lambda node: node.inputs[0].dtype.kind == "c" or name == "real")

    def fn(x):
        return apply(OPS[name], (x,))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


real = _part("real", "Real", "The real part (x.real): a view of a complex x, x itself viewed otherwise.")
imag = _part("imag", "Imag", "The imaginary part (x.imag): zeros of a real x.")
# numpy's imaginary part of a real array is a new read-only array (fuzzer seed 26002074)
memory.READ_ONLY[OPS["imag"]] = lambda node: node.inputs[0].dtype.kind != "c"


def _complex_kernel(xp):
    def join(re, im):
        out = xp.empty(xp.broadcast(re, im).shape, np.result_type(re.dtype, np.complex64))
        out.real, out.imag = re, im  # each part stored as it is: -0.0, infinities and NaNs kept
        return out
    return join


# the complex array of two float arrays' parts, stored as they are (re + 1j * im would turn
# im's infinities into NaNs and a -0.0 real part into 0.0): numpy's np.round of complex
OPS["complex"] = define("Complex", _complex_kernel,
                        lambda re, im: [(broadcast_shapes(re.shape, im.shape), np.result_type(re.dtype, np.complex64))],
                        fresh=True, may_raise=False, box="array")


def complex_from_parts(re, im):
    """A complex array whose real part is `re` and imaginary part `im` (float arrays of one dtype)."""
    return apply(OPS["complex"], (re, im))


# --- any binary ufunc's reduce and accumulate ----------------------------------------------
# `np.logaddexp.reduce(t)`, `np.add.reduce(t, dtype=..., initial=...)`, `np.multiply.accumulate(t)`:
# the ufunc's own method, so every ufunc numpy can reduce is one op, bit for bit numpy's.

def _ufunc_method_kwargs(axis, dtype, keepdims=None, initial=None):
    kwargs = dict(axis=axis, dtype=dtype)
    if keepdims is not None:
        kwargs["keepdims"] = keepdims
    if initial is not None:
        kwargs["initial"] = initial
    return kwargs


def _ufunc_reduce_infer(x, ufunc, axis, dtype, keepdims, initial):
    axes = normalize_axes(axis, x.ndim)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
    example = np.ones((1,) * x.ndim, x.dtype)  # one element: numpy's dtype and its refusals
    with np.errstate(all="ignore"):
        out = getattr(np, ufunc).reduce(example, **_ufunc_method_kwargs(axis, dtype, keepdims, initial))
    return [(shape, np.asarray(out).dtype)]


def _method_value_errors(node):
    """ufunc.reduce / .accumulate raise for values where the ufunc does: a signed integer power
    (a negative exponent: numpy's ValueError), so an unused one is kept."""
    return node.attrs["ufunc"] == "power" and node.outputs[0].dtype.kind == "i"


def _ufunc_reduce_kernel(xp, ufunc, axis, dtype, keepdims, initial):
    reduce = functools.partial(getattr(xp, ufunc).reduce, **_ufunc_method_kwargs(axis, dtype, keepdims, initial))
    if ufunc not in ("fmax", "fmin"):
        return reduce
    extreme, fill, pick = (xp.max, -np.inf, xp.fmax) if ufunc == "fmax" else (xp.min, np.inf, xp.fmin)

    def nan_extreme(x):
        """fmax/fmin.reduce (np.nanmax's own loop, ops/numpy_api/reductions.py), or where the array
        module has none (cupy 14: NotImplementedError) max/min over the NaNs made -inf/inf, NaN
        where a slice is all NaN, then `initial` picked as fmax/fmin picks it."""
        try:
            return reduce(x)
        except NotImplementedError:
            pass
        x = x if dtype is None else x.astype(dtype)
        axes = normalize_axes(axis, x.ndim)
        if initial is not None and any(x.shape[a] == 0 for a in axes):
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
            return xp.full(shape, initial, x.dtype)
        if x.dtype.kind in "fc":
            nan = xp.isnan(x)
            result = extreme(xp.where(nan, fill, x), axis=axis, keepdims=keepdims)
            result = xp.where(xp.all(nan, axis=axis, keepdims=keepdims), xp.nan, result)
        else:
            result = extreme(x, axis=axis, keepdims=keepdims)
        return result if initial is None else pick(result, xp.asarray(initial, x.dtype))
    return nan_extreme


OPS["ufunc_reduce"] = define(
    "UfuncReduce", _ufunc_reduce_kernel,
    _ufunc_reduce_infer, attrs={"ufunc": STR, "axis": AXES, "dtype": OptionalOf(DTYPE), "keepdims": BOOL,
                                "initial": OptionalOf(SCALAR)}, float_errors="reduce", value_errors=_method_value_errors)


def ufunc_reduce(ufunc, x, axis=0, dtype=None, keepdims=False, initial=None):
    """`ufunc.reduce(x, axis, dtype, keepdims=, initial=)` of numpy ufunc `ufunc` (its name)."""
    return apply(OPS["ufunc_reduce"], (x,), {"ufunc": ufunc, "axis": _axis_attr(axis), "keepdims": bool(keepdims),
                                            "dtype": None if dtype is None else np.dtype(dtype), "initial": initial})


def _accumulate_infer(x, ufunc, axis, dtype):
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    if axis is not None:
        normalize_axis(axis, x.ndim)
    with np.errstate(all="ignore"):
        out = getattr(np, ufunc).accumulate(np.ones((1,) * x.ndim, x.dtype), axis=axis, dtype=dtype)
    return [(x.shape, out.dtype)]


OPS["accumulate"] = define(
    "Accumulate", lambda xp, ufunc, axis, dtype: functools.partial(getattr(xp, ufunc).accumulate, axis=axis,
                                                                   dtype=dtype),
    _accumulate_infer, attrs={"ufunc": STR, "axis": OptionalOf(INT), "dtype": OptionalOf(DTYPE)}, float_errors="accumulate",
    fresh=True, box="array", value_errors=_method_value_errors)


def accumulate(ufunc, x, axis=0, dtype=None):
    """`ufunc.accumulate(x, axis, dtype)` of numpy ufunc `ufunc` (its name): running results along `axis`."""
    return apply(OPS["accumulate"], (x,), {"ufunc": ufunc, "axis": None if axis is None else int(axis),
                                           "dtype": None if dtype is None else np.dtype(dtype)})

def _argmin_infer(x, axis=None):
    return _argmax_infer(x, axis)


OPS["argmin"] = define("ArgMin", lambda xp, axis=None: functools.partial(xp.argmin, axis=axis),
                       _argmin_infer, attrs={"axis": OptionalOf(INT)})


def argmin(x, axis=None):
    """Index of the smallest element (over the flattened array when axis is None, as numpy)."""
    return apply(OPS["argmin"], (x,), {"axis": axis})


def _cumulative(public, op_name, numpy_fn):
    def infer(x, axis=None, dtype=None):
        if axis is None:
            shape = (None if None in x.shape else int(np.prod(x.shape, dtype=np.int64)),)
        else:
            normalize_axis(axis, x.ndim)
            shape = x.shape
        return [(shape, result_dtype(lambda a: numpy_fn(a, dtype=dtype), (x,)))]

    OPS[public] = opdef = define(op_name, lambda xp, axis=None, dtype=None: functools.partial(
        getattr(xp, numpy_fn.__name__), axis=axis, dtype=dtype), infer,
        attrs={"axis": OptionalOf(INT), "dtype": OptionalOf(DTYPE)}, float_errors="accumulate",
        may_raise=False)

    def op(x, axis=None, dtype=None):
        return apply(opdef, (x,), {"axis": axis, "dtype": None if dtype is None else np.dtype(dtype)})
    op.__name__ = op.__qualname__ = public
    op.__doc__ = f"numpy.{numpy_fn.__name__}: running {numpy_fn.__name__[3:]} along `axis` (flattened when None)."
    return op


cumsum = _cumulative("cumsum", "Cumsum", np.cumsum)
cumprod = _cumulative("cumprod", "Cumprod", np.cumprod)


# Python's own functions of numbers, called on 0-d tensors when the graph runs: `math.sqrt(t)`,
# `float(t)`, `round(t)` give a Python number eagerly (and raise where Python raises)
PYTHON_FUNCTIONS = {**{name: getattr(math, name) for name in (
    "sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs", "pow", "hypot",
    "copysign", "fmod", "degrees", "radians", "erf", "erfc", "gamma", "lgamma", "isnan", "isinf", "isfinite",
    "exp2", "cbrt", "remainder", "ldexp")
    if hasattr(math, name)}, "float": float, "int": int, "bool": bool,
    # Python's round of the value as a Python number (round(x, 2) of a float rounds its decimal
    # digits exactly, not as numpy's multiply-rint-divide)
    "round": round}


_INT_RESULTS = {"floor", "ceil", "trunc", "int", "round"}
_BOOL_RESULTS = {"isnan", "isinf", "isfinite", "bool"}


def _python_call_infer(*args, fn):
    if any(a.ndim for a in args):
        raise TypeError(f"only 0-d tensors can be converted to Python scalars, got {[a.shape for a in args]}")
    integer = fn in _INT_RESULTS and not (fn == "round" and len(args) == 2 and args[0].dtype.kind == "f")
    return [((), np.dtype(np.int64 if integer else np.bool_ if fn in _BOOL_RESULTS else np.float64))]


def _python_call_kernel(xp, fn):
    function = PYTHON_FUNCTIONS[fn]

    # each value as its Python number (a numpy scalar's, a device's 0-d array's): the same number
    # the function would read from it, and round(x, 2) of a float rounds its decimal digits exactly
    return lambda *args: function(*[a.item() if hasattr(a, "item") else a for a in args])


OPS["python_call"] = define("PythonCall", _python_call_kernel, _python_call_infer, attrs={"fn": STR})


def python_call(fn, *args):
    """Python's `fn` (a name in PYTHON_FUNCTIONS) of 0-d tensors: a weak Python number."""
    out = apply(OPS["python_call"], args, {"fn": fn})
    if isinstance(out, Tensor):
        out.weak = True
    return out


# --- gradients ----------------------------------------------------------------------------
# Each rule gets the node and the cotangent of each output (None where nothing flows) and
# returns one cotangent per input (None: no gradient, e.g. integer inputs).

from .core import grad_rule  # noqa: E402
from .array_ops import expand_dims, getitem, reshape, shape, size, transpose  # noqa: E402
from .gradient_ops import broadcast_like, float_dtype, sum_to  # noqa: E402


def _to_input(g, x):
    """Cotangent `g` reduced to input `x`'s shape and dtype; None for non-float inputs."""
    if g is None or not float_dtype(x):
        return None
    g = sum_to(g, x)
    return g if g.dtype == x.dtype else cast(g, x.dtype)


def _safe(dy, local):
    """dy * local, but 0 wherever dy is 0, so an infinite or NaN local slope cannot leak
    (masked before the product, so none is computed there and numpy warns of none)."""
    unused = equal(dy, 0)
    return where(unused, 0.0, multiply(dy, where(unused, 0.0, local)))


def _where_used(dy, t):
    """`t`, but 1 wherever dy is 0: a slope computed from it is finite where it goes unused."""
    return where(equal(dy, 0), 1.0, t)


@grad_rule(OPS["add"])
def _add_grad(node, dy):
    x, y = node.inputs
    return [_to_input(dy, x), _to_input(dy, y)]


@grad_rule(OPS["subtract"])
def _sub_grad(node, dy):
    x, y = node.inputs
    return [_to_input(dy, x), _to_input(negative(dy), y)]


@grad_rule(OPS["multiply"])
def _mul_grad(node, dy):
    x, y = node.inputs
    return [_to_input(multiply(dy, y), x), _to_input(multiply(dy, x), y)]


@grad_rule(OPS["divide"])
def _div_grad(node, dy):
    x, y = node.inputs
    y = _where_used(dy, y)
    return [_to_input(_safe(dy, divide(1.0, y)), x),
            _to_input(_safe(dy, negative(divide(node.outputs[0], y))), node.inputs[1])]


@grad_rule(OPS["floordiv"], OPS["equal"], OPS["not_equal"], OPS["less"], OPS["less_equal"],
           OPS["greater"], OPS["greater_equal"], OPS["logical_and"], OPS["logical_or"],
           OPS["logical_not"], OPS["argmax"], OPS["argmin"], OPS["reduce_any"], OPS["reduce_all"])
def _no_grad(node, *dys):
    return [None] * len(node.inputs)


@grad_rule(OPS["mod"])
def _mod_grad(node, dy):
    x, y = node.inputs
    return [_to_input(dy, x), _to_input(negative(multiply(dy, floordiv(x, y))), y)]


@grad_rule(OPS["pow"])
def _pow_grad(node, dy):
    x, y = node.inputs
    out = node.outputs[0]
    dx = _safe(dy, multiply(y, pow(_where_used(dy, x), subtract(y, 1))))
    dexp = _safe(dy, multiply(out, log(where(greater(x, 0), x, 1.0))))
    return [_to_input(dx, x), _to_input(dexp, y)]


def _select_grad(node, dy, is_max):
    """maximum/minimum: the cotangent goes to the input that was picked (x on ties)."""
    x, y = node.inputs
    x_picked = greater_equal(x, y) if is_max else less_equal(x, y)
    return [_to_input(where(x_picked, dy, 0.0), x), _to_input(where(x_picked, 0.0, dy), y)]


grad_rule(OPS["maximum"])(lambda node, dy: _select_grad(node, dy, is_max=True))
grad_rule(OPS["minimum"])(lambda node, dy: _select_grad(node, dy, is_max=False))


@grad_rule(OPS["negative"])
def _neg_grad(node, dy):
    return [_to_input(negative(dy), node.inputs[0])]


@grad_rule(OPS["tanh"])
def _tanh_grad(node, dy):
    out = node.outputs[0]
    return [_to_input(multiply(dy, subtract(1.0, square(out))), node.inputs[0])]


@grad_rule(OPS["exp"])
def _exp_grad(node, dy):
    return [_to_input(_safe(dy, node.outputs[0]), node.inputs[0])]


@grad_rule(OPS["log"])
def _log_grad(node, dy):
    return [_to_input(_safe(dy, divide(1.0, _where_used(dy, node.inputs[0]))), node.inputs[0])]


@grad_rule(OPS["sqrt"])
def _sqrt_grad(node, dy):
    return [_to_input(_safe(dy, divide(0.5, _where_used(dy, node.outputs[0]))), node.inputs[0])]


@grad_rule(OPS["square"])
def _square_grad(node, dy):
    x = node.inputs[0]
    return [_to_input(multiply(dy, multiply(x, 2.0)), x)]


@grad_rule(OPS["abs"])
def _abs_grad(node, dy):
    x = node.inputs[0]
    return [_to_input(where(greater(x, 0), dy, where(less(x, 0), negative(dy), 0.0)), x)]


@grad_rule(OPS["where"])
def _where_grad(node, dy):
    c, x, y = node.inputs
    return [None, _to_input(where(c, dy, 0.0), x), _to_input(where(c, 0.0, dy), y)]


@grad_rule(OPS["cast"])
def _cast_grad(node, dy):
    x = node.inputs[0]
    return [_to_input(cast(dy, x.dtype), x) if float_dtype(x) and float_dtype(node.outputs[0]) else None]


@grad_rule(OPS["box_like"])
def _box_like_grad(node, dy):
    return [None, dy]


@grad_rule(OPS["matmul"])
def _matmul_grad(node, dy):
    a, b = node.inputs
    if a.ndim == 1 and b.ndim == 1:
        return [_to_input(multiply(dy, b), a), _to_input(multiply(dy, a), b)]
    if a.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        da = matmul(b, expand_dims(dy, -1))[..., 0] if b.ndim > 2 else matmul(b, dy)
        db = multiply(expand_dims(a, -1), expand_dims(dy, -2))
        return [_to_input(da, a), _to_input(db, b)]
    if b.ndim == 1:  # (..., m, k) @ (k,) -> (..., m)
        da = multiply(expand_dims(dy, -1), b)
        db = matmul(expand_dims(dy, -2), a)[..., 0, :] if a.ndim > 2 else matmul(dy, a)
        return [_to_input(da, a), _to_input(db, b)]
    return [_to_input(matmul(dy, _swap_last(b)), a), _to_input(matmul(_swap_last(a), dy), b)]


def _swap_last(t):
    perm = list(range(t.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(t, perm)


def _expand_reduced(dy, node):
    """A reduction's cotangent reshaped so it broadcasts against the reduction's input."""
    x = node.inputs[0]
    if node.attrs.get("keepdims"):
        return dy
    for axis in normalize_axes(node.attrs.get("axis"), x.ndim):
        dy = expand_dims(dy, axis)
    return dy


@grad_rule(OPS["reduce_sum"])
def _sum_grad(node, dy):
    x = node.inputs[0]
    return [_to_input(broadcast_like(_expand_reduced(dy, node), x), x)]


@grad_rule(OPS["reduce_mean"])
def _mean_grad(node, dy):
    x = node.inputs[0]
    count = divide(cast(size(x), dy.dtype), cast(size(node.outputs[0]), dy.dtype))
    return [_to_input(broadcast_like(divide(_expand_reduced(dy, node), count), x), x)]


def _extreme_grad(node, dy):
    x = node.inputs[0]
    out = broadcast_like(_expand_reduced(node.outputs[0], node), x)
    picked = cast(equal(x, out), dy.dtype)
    ties = broadcast_like(_expand_reduced(
        _REDUCE_SUM(picked, node.attrs.get("axis"), node.attrs.get("keepdims")), node), x)
    return [_to_input(divide(multiply(broadcast_like(_expand_reduced(dy, node), x), picked), ties), x)]


grad_rule(OPS["reduce_max"], OPS["reduce_min"])(_extreme_grad)
_REDUCE_SUM = reduce_sum


@grad_rule(OPS["reduce_prod"])
def _prod_grad(node, dy):
    x = node.inputs[0]
    out = broadcast_like(_expand_reduced(node.outputs[0], node), x)
    return [_to_input(_safe(broadcast_like(_expand_reduced(dy, node), x), divide(out, x)), x)]


# numpy's math ufuncs: each slope as ops on the node's inputs (x, y) and output (out)
_LN2, _LN10 = float(np.log(2)), float(np.log(10))


def _unary_slope(opdef, slope, masked=False):
    """`slope(x, out)`: d out / d x. `masked`: infinite or NaN somewhere (a pole), so it is
    computed only where the cotangent is used (see _safe)."""
    @grad_rule(opdef)
    def rule(node, dy):
        x, out = node.inputs[0], node.outputs[0]
        if masked:
            return [_to_input(_safe(dy, slope(_where_used(dy, x), out)), x)]
        return [_to_input(multiply(dy, slope(x, out)), x)]
    return rule


for _op, _slope, _masked in [
        (sin, lambda x, out: cos(x), False),
        (cos, lambda x, out: negative(sin(x)), False),
        (tan, lambda x, out: add(1.0, square(out)), False),
        (arcsin, lambda x, out: divide(1.0, sqrt(subtract(1.0, square(x)))), True),
        (arccos, lambda x, out: divide(-1.0, sqrt(subtract(1.0, square(x)))), True),
        (arctan, lambda x, out: divide(1.0, add(1.0, square(x))), False),
        (sinh, lambda x, out: cosh(x), False),
        (cosh, lambda x, out: sinh(x), False),
        (arcsinh, lambda x, out: divide(1.0, sqrt(add(square(x), 1.0))), False),
        (arccosh, lambda x, out: divide(1.0, sqrt(subtract(square(x), 1.0))), True),
        (arctanh, lambda x, out: divide(1.0, subtract(1.0, square(x))), True),
        (exp2, lambda x, out: multiply(out, _LN2), False),
        (expm1, lambda x, out: add(out, 1.0), False),
        (log2, lambda x, out: divide(1.0 / _LN2, x), True),
        (log10, lambda x, out: divide(1.0 / _LN10, x), True),
        (log1p, lambda x, out: divide(1.0, add(1.0, x)), True),
        (cbrt, lambda x, out: divide(1.0 / 3.0, square(cbrt(x))), True),
        (reciprocal, lambda x, out: negative(square(out)), False),
        (deg2rad, lambda x, out: float(np.pi / 180), False),
        (rad2deg, lambda x, out: float(180 / np.pi), False),
        (fabs, lambda x, out: where(greater(x, 0), 1.0, where(less(x, 0), -1.0, 0.0)), False)]:
    _unary_slope(OPS[_op.__name__], _slope, _masked)

grad_rule(*(OPS[f.__name__] for f in (sign, floor, ceil, trunc, rint, isnan, isinf, isfinite, signbit,
                                      heaviside, invert, bitwise_count, spacing, bitwise_and, bitwise_or,
                                      bitwise_xor, left_shift, right_shift, logical_xor, nextafter, gcd,
                                      lcm)))(_no_grad)
grad_rule(OPS["float_power"])(_pow_grad)  # x ** y computed in float64: the same slopes


@grad_rule(OPS["conjugate"], OPS["positive"])
def _conj_grad(node, dy):  # real inputs only reach here with a float cotangent: conj is the identity
    return [_to_input(dy, node.inputs[0])]


@grad_rule(OPS["modf"])
def _modf_grad(node, dfrac, dint):  # the integral part is flat: only the fraction moves with x
    return [None if dfrac is None else _to_input(dfrac, node.inputs[0])]


@grad_rule(OPS["frexp"])
def _frexp_grad(node, dmantissa, dexponent):  # x = m * 2**e with e flat: dm/dx = 2**-e
    if dmantissa is None:
        return [None]
    return [_to_input(ldexp(dmantissa, negative(node.outputs[1])), node.inputs[0])]


@grad_rule(OPS["real"])
def _real_grad(node, dy):  # a real input (a complex one's cotangent is not a float): the identity
    return [_to_input(dy, node.inputs[0])]


@grad_rule(OPS["imag"])
def _imag_grad(node, dy):  # zeros of a real input: flat
    return [None]


@grad_rule(OPS["complex"])
def _complex_grad(node, dy):  # each part's cotangent is its part of dy's
    return [_to_input(real(dy), node.inputs[0]), _to_input(imag(dy), node.inputs[1])]


@grad_rule(OPS["ufunc_reduce"])
def _ufunc_reduce_grad(node, dy):  # np.add.reduce with dtype= or initial=: as a sum's
    if node.attrs["ufunc"] in ("fmax", "fmin") and node.attrs["initial"] is None:  # nanmax: as a max's
        return _extreme_grad(node, dy)
    if node.attrs["ufunc"] != "add":
        raise NotImplementedError(f"no gradient rule for np.{node.attrs['ufunc']}.reduce yet")
    x = node.inputs[0]
    return [_to_input(broadcast_like(_expand_reduced(dy, node), x), x)]


@grad_rule(OPS["accumulate"])
def _accumulate_grad(node, dy):  # np.add.accumulate: each input reaches every later running sum
    if node.attrs["ufunc"] != "add":
        raise NotImplementedError(f"no gradient rule for np.{node.attrs['ufunc']}.accumulate yet")
    x, axis = node.inputs[0], node.attrs["axis"] or 0
    reverse = (slice(None),) * normalize_axis(axis, x.ndim) + (slice(None, None, -1),)
    return [_to_input(getitem(accumulate("add", getitem(dy, reverse), axis), reverse), x)]


@grad_rule(OPS["ldexp"])
def _ldexp_grad(node, dy):  # x * 2**n: the integer exponent has no gradient
    x, n = node.inputs
    return [_to_input(ldexp(dy, n), x), None]


@grad_rule(OPS["arctan2"])
def _arctan2_grad(node, dy):
    y, x = node.inputs
    norm = _where_used(dy, add(square(x), square(y)))
    return [_to_input(_safe(dy, divide(x, norm)), y), _to_input(_safe(dy, divide(negative(y), norm)), x)]


@grad_rule(OPS["hypot"])
def _hypot_grad(node, dy):
    x, y = node.inputs
    out = _where_used(dy, node.outputs[0])
    return [_to_input(_safe(dy, divide(x, out)), x), _to_input(_safe(dy, divide(y, out)), y)]


@grad_rule(OPS["logaddexp"], OPS["logaddexp2"])
def _logaddexp_grad(node, dy):  # log(e**x + e**y): each input's share is e**(input - out) (2** for logaddexp2)
    x, y = node.inputs
    out = node.outputs[0]
    power = exp if node.opdef is OPS["logaddexp"] else exp2
    return [_to_input(_safe(dy, power(subtract(x, out))), x), _to_input(_safe(dy, power(subtract(y, out))), y)]


@grad_rule(OPS["copysign"])
def _copysign_grad(node, dy):
    x, y = node.inputs
    return [_to_input(where(equal(signbit(x), signbit(node.outputs[0])), dy, negative(dy)), x), None]


def _fselect_grad(node, dy, is_max):
    """fmax/fmin: as maximum/minimum, but a NaN loses (the other input is picked)."""
    x, y = node.inputs
    x_picked = logical_or(greater_equal(x, y) if is_max else less_equal(x, y), isnan(y))
    return [_to_input(where(x_picked, dy, 0.0), x), _to_input(where(x_picked, 0.0, dy), y)]


grad_rule(OPS["fmax"])(lambda node, dy: _fselect_grad(node, dy, is_max=True))
grad_rule(OPS["fmin"])(lambda node, dy: _fselect_grad(node, dy, is_max=False))


@grad_rule(OPS["fmod"])
def _fmod_grad(node, dy):
    x, y = node.inputs
    return [_to_input(dy, x), _to_input(_safe(dy, negative(trunc(divide(x, _where_used(dy, y))))), y)]


def _reverse_cumsum(t, axis):
    flip = (slice(None),) * axis + (slice(None, None, -1),)
    return cumsum(t[flip], axis)[flip]


@grad_rule(OPS["cumsum"], OPS["cumprod"])
def _cumulative_grad(node, dy):
    x = node.inputs[0]
    axis = node.attrs["axis"]
    flat = x if axis is not None else reshape(x, (-1,))
    axis = 0 if axis is None else normalize_axis(axis, x.ndim)
    if node.opdef is OPS["cumprod"]:  # d out_j / d x_i = out_j / x_i for j >= i (at an exact zero: 0,
        # as reduce_prod's gradient gives)
        dx = _reverse_cumsum(multiply(dy, node.outputs[0]), axis)
        dx = _safe(dx, divide(1.0, _where_used(dx, flat)))
    else:
        dx = _reverse_cumsum(dy, axis)
    if flat is not x:
        dx = reshape(dx, shape(x) if None in x.shape else x.shape)
    return [_to_input(dx, x)]
