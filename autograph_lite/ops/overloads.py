"""Python operators and numpy ufuncs on symbolic Tensors, routed to ag ops.

`x + 1`, `a @ b`, `x[1:3]`, `x < y` and `np.tanh(x)` on a Tensor all add graph nodes.
`x += y` keeps x's dtype and shape as numpy does and replaces x's array (see `_in_place`).
"""
import dis
import math
import sys

import numpy as np

from ..errors import ConversionError, user_location
from ..runtime.graph import Tensor, supersede
from . import array_ops, math_ops
from .core import apply

_BINARY = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.divide, "floordiv": math_ops.floordiv, "mod": math_ops.mod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
}
_SYMBOLS = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "floordiv": "//=", "mod": "%=",
            "pow": "**=", "matmul": "@=", "and": "&=", "or": "|="}
_UFUNC_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
                "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
                "and": "logical_and", "or": "logical_or"}
_COMPARE = {
    "lt": math_ops.less, "le": math_ops.less_equal, "gt": math_ops.greater,
    "ge": math_ops.greater_equal, "eq": math_ops.equal, "ne": math_ops.not_equal,
}


def _bool_only(op, symbol):
    def method(x, y):
        for v in (x, y):
            if isinstance(v, Tensor) and v.dtype != np.bool_:
                raise TypeError(f"operator {symbol} is supported on bool tensors only (got {v!r}); "
                                f"use ag.logical_and / ag.logical_or on comparisons")
        return op(x, y)
    return method


def _assigned_name(frame):
    """The name the statement running in `frame` stores into next (`x` in `x += y`), or None."""
    for ins in dis.get_instructions(frame.f_code):
        if ins.offset > frame.f_lasti:
            return ins.argval if ins.opname in ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL") else None
    return None


def _in_place(name, op):
    """`x op= y` on a Tensor, as numpy does it on an ndarray: the result keeps x's dtype (an
    unsafe cast raises TypeError) and x's shape (a broadcast that would grow x raises
    ValueError). The old Tensor is superseded: reading it later through an alias is an error,
    and an argument's final value is written back into the caller's array."""
    symbol = _SYMBOLS[name]

    def method(x, y):
        if x.weak:  # a Python scalar staged as a tensor: `+=` rebinds, as in Python
            return op(x, y)
        target = _assigned_name(sys._getframe(1))
        label = f"'{target}'" if target else "an array"
        location = user_location(2)
        new = op(x, y)
        if new.dtype != x.dtype:
            if not np.can_cast(new.dtype, x.dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc '{_UFUNC_NAMES[name]}' output from {new.dtype!r} to "
                                f"{x.dtype!r} with casting rule 'same_kind': {label} {symbol} keeps "
                                f"{label}'s dtype (at {location})")
            new = math_ops.cast(new, x.dtype)
        if len(new.shape) != len(x.shape) or any(a is not None and b is not None and a != b
                                                 for a, b in zip(x.shape, new.shape)):
            raise ValueError(f"non-broadcastable output operand with shape {x.shape} doesn't match the "
                             f"broadcast shape {new.shape}: {label} {symbol} cannot change {label}'s shape "
                             f"(at {location})")
        if new.shape != x.shape:
            # unknown dims: the result must fit x's run-time shape (reshape raises where it would grow x)
            new = array_ops.reshape(new, array_ops.shape(x))
        supersede(x, new, label, symbol, location)
        return new
    return method


def _setitem(x, index, value):
    raise ConversionError(
        f"item assignment on a symbolic tensor (`x[...] = value`) is not supported (at {user_location(2)}); "
        f"build the new value instead, e.g. with ag.where(mask, value, x) or ag.concat")


def _iter(x):
    """Iterating a tensor whose first dim is known yields its rows, as iterating an ndarray does
    (`a, b = x`, `for row in x` in Python code, comprehensions, zip)."""
    if x.ndim == 0:
        raise TypeError(f"iteration over a 0-d tensor {x!r} (at {user_location(2)})")
    if x.shape[0] is None:
        raise x._misuse("iterated over, with a length known only when the graph runs,",
                        "Loop with `for i in range(ag.shape(x)[0])` (a graph loop) instead of a "
                        "comprehension or unpacking.")
    return iter([array_ops.getitem(x, i) for i in range(x.shape[0])])


def _install():
    for name, op in _BINARY.items():
        setattr(Tensor, f"__{name}__", lambda x, y, op=op: op(x, y))
        setattr(Tensor, f"__r{name}__", lambda x, y, op=op: op(y, x))
        setattr(Tensor, f"__i{name}__", _in_place(name, op))
    Tensor.__setitem__ = _setitem
    Tensor.__iter__ = _iter
    Tensor.copy = lambda x: array_ops.identity(x)
    for name, op in _COMPARE.items():
        setattr(Tensor, f"__{name}__", lambda x, y, op=op: op(x, y))
    for name, op, symbol in (("and", math_ops.logical_and, "&"), ("or", math_ops.logical_or, "|")):
        method = _bool_only(op, symbol)
        setattr(Tensor, f"__{name}__", method)
        setattr(Tensor, f"__r{name}__", lambda x, y, m=method: m(y, x))
        setattr(Tensor, f"__i{name}__", _in_place(name, method))
    Tensor.__neg__ = lambda x: math_ops.negative(x)
    Tensor.__pos__ = lambda x: x
    Tensor.__abs__ = lambda x: math_ops.abs(x)
    Tensor.__invert__ = lambda x: _bool_only(lambda a, _: math_ops.logical_not(a), "~")(x, x)
    Tensor.__getitem__ = lambda x, index: array_ops.getitem(x, index)
    Tensor.T = property(lambda x: array_ops.transpose(x))
    Tensor.size = property(_size)
    Tensor.reshape = lambda x, *shape: array_ops.reshape(x, shape[0] if len(shape) == 1 else shape)
    Tensor.astype = lambda x, dtype: math_ops.cast(x, dtype)
    for name in ("sum", "mean", "prod", "max", "min", "any", "all"):
        setattr(Tensor, name, _reduction_method(name, getattr(math_ops, f"reduce_{name}")))
    Tensor.__array_ufunc__ = _array_ufunc


def _size(x):
    """`t.size`: a Python int, as ndarray's, when the shape is known; else counted when the graph runs
    (a weak int: eagerly it is a Python int)."""
    if all(d is not None for d in x.shape):
        return math.prod(x.shape)
    from .control_flow import python_scalar  # function-local: control_flow is imported after this module
    return python_scalar(array_ops.size(x))


def _reduction_method(name, reduce):
    """`Tensor.<name>`, which `np.<name>(t, ...)` calls too, with ndarray's parameters: sum, mean
    and prod take a `dtype` (numpy accumulates in it: the values cast to it, reduced, and the
    result cast back to it where the reduction widened it, which wraps as accumulating in it
    does; to a single value that cast would make a 0-d array where numpy gives a scalar, so it
    is refused); `out`, `initial` and a `where` mask have no graph form and are refused too."""
    def refuse(given, keepdims, rest):
        refused = [k for k, v in (*given, *rest.items()) if v is not None and v is not np._NoValue
                   and not (k == "where" and v is True)]
        if refused:
            raise TypeError(f"{name}() of a symbolic Tensor with {', '.join(refused)} is not supported (at "
                            f"{user_location(3)}); reduce first and combine the result instead")
        return keepdims is not np._NoValue and bool(keepdims)

    if name in ("sum", "mean", "prod"):
        def method(x, axis=None, dtype=None, out=None, keepdims=False, **rest):
            keepdims = refuse([("out", out)], keepdims, rest)
            if dtype is None:
                return reduce(x, axis, keepdims)
            result = reduce(math_ops.cast(x, dtype), axis, keepdims)
            if result.dtype == np.dtype(dtype):
                return result
            if result.ndim == 0:
                raise TypeError(f"{name}(..., dtype={np.dtype(dtype)}) of a symbolic Tensor to one value is not "
                                f"supported (at {user_location(2)}): numpy accumulates in {np.dtype(dtype)} and "
                                f"gives a scalar; reduce along an axis, or cast the result with ag.cast")
            return math_ops.cast(result, dtype)
    else:  # max, min, any, all: ndarray's order has no dtype
        def method(x, axis=None, out=None, keepdims=False, **rest):
            return reduce(x, axis, refuse([("out", out)], keepdims, rest))
    method.__name__ = method.__qualname__ = name
    return method


# numpy ufunc -> op, the one table `np.<ufunc>(t, ...)` goes through (NEP 13): every op whose
# `ufunc` fact names one (np.sin(t), ndarray + t, np.add.outer(a, t))
UFUNC_OPS = {getattr(np, op.ufunc): op for op in math_ops.OPS.values() if op.ufunc}

# `ufunc.reduce` for the ufuncs with a reduction op (np.add.reduce(t, axis) is t.sum(axis))
UFUNC_REDUCTIONS = {np.add: math_ops.reduce_sum, np.multiply: math_ops.reduce_prod,
                    np.maximum: math_ops.reduce_max, np.minimum: math_ops.reduce_min,
                    np.logical_and: math_ops.reduce_all, np.logical_or: math_ops.reduce_any}

_OPERATOR_SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
                     np.floor_divide: "//", np.remainder: "%", np.power: "**", np.matmul: "@"}


def _refuse(ufunc, method, detail=""):
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    raise ConversionError(f"{name}{detail} is not supported on tensors (at {user_location(3)})")


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's hook for every ufunc call with a Tensor operand: `np.sin(t)`, `a + t`,
    `np.add.outer(a, t)`, `np.add.reduce(t, axis)`, routed through `UFUNC_OPS`."""
    if method == "__call__" and isinstance(kwargs.get("out"), tuple) and isinstance(kwargs["out"][0], np.ndarray):
        symbol = _OPERATOR_SYMBOLS.get(ufunc, f"np.{ufunc.__name__}(..., out=a)")
        raise TypeError(f"a numpy array cannot be updated in place with a symbolic tensor (`a {symbol}= t`, at "
                        f"{user_location(2)}): compiled code cannot change a numpy array the function "
                        f"holds, and others may hold it too. Write `a = a {symbol} t` to make a new value")
    op = UFUNC_OPS.get(ufunc)
    if method == "reduce" and ufunc in UFUNC_REDUCTIONS:
        return _reduce(ufunc, *inputs, **kwargs)
    if op is None or method not in ("__call__", "outer"):
        _refuse(ufunc, method)
    if kwargs:
        _refuse(ufunc, method, f" with {', '.join(f'{k}=' for k in kwargs)}")
    if method == "outer":
        a, b = inputs
        a = array_ops.getitem(a, (Ellipsis,) + (None,) * np.ndim(b)) if isinstance(a, Tensor) \
            else np.asarray(a)[(Ellipsis,) + (None,) * np.ndim(b)]
        inputs = (a, b)
    return apply(op, inputs)


def _reduce(ufunc, x, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """`ufunc.reduce` as numpy does it (axis 0 unless told); `dtype`, `out`, `initial` and a
    `where` mask have no graph form."""
    given = [k for k, v, default in (("dtype", dtype, None), ("out", out, None),
                                     ("initial", initial, np._NoValue), ("where", where, True))
             if v is not default]
    if given:
        _refuse(ufunc, "reduce", f" with {', '.join(f'{k}=' for k in given)}")
    return UFUNC_REDUCTIONS[ufunc](x, axis, keepdims)


_install()
