"""Python operators and numpy ufuncs on symbolic Tensors, routed to ag ops.

`x + 1`, `a @ b`, `x[1:3]`, `x < y` and `np.tanh(x)` on a Tensor all add graph nodes.
`x += y` keeps x's dtype and shape as numpy does and replaces x's array (see `_in_place`).
"""
import dis
import math
import sys

import numpy as np

from ..errors import ConversionError, user_location
from ..runtime.boxes import ARRAY, box_of
from ..runtime.graph import Tensor, supersede
from . import array_ops, math_ops
from .core import apply, normalize_axes, normalize_axis

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
        if new.shape == () and box_of(x) == ARRAY and box_of(new) != ARRAY:
            # a 0-d array updated in place is still an array, where the op gives a numpy scalar: Select
            # boxes its result as an array (as _copy does)
            new = math_ops.where(True, new, new)
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
    Tensor.__array_function__ = _array_function


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


# --- numpy functions on tensors (NEP 18): `np.zeros_like(t)`, `np.where(c, t, 0)` ---------------

_NO = np._NoValue


def _keywords(name, given, **defaults):
    """Refuse, by name, the keywords of `np.<name>` given a value other than numpy's default
    (the defaults are the only values the graph forms here implement)."""
    refused = [k for k, v in given.items() if k not in defaults or not _is_default(v, defaults[k])]
    if refused:
        raise ConversionError(f"np.{name}(..., {', '.join(f'{k}=' for k in refused)}) is not supported on "
                              f"tensors (at {user_location(4)})")


def _is_default(value, default):
    if value is default or value is _NO:
        return True
    try:
        return isinstance(default, (str, bool, type(None))) and value == default and type(value) is type(default)
    except Exception:
        return False


def _static_shape(x, name):
    if any(d is None for d in x.shape):
        raise ConversionError(f"np.{name} of {x!r}, whose shape is known only when the graph runs, is not "
                              f"supported (at {user_location(4)})")
    return x.shape


def _like(name, op):
    def like(a, dtype=None, order="K", subok=True, shape=None, **rest):
        _keywords(name, dict(order=order, subok=subok, **rest), order="K", subok=True, device=None)
        if shape is None:
            return op(a, dtype)
        return array_ops.zeros(shape, a.dtype if dtype is None else dtype) if op is not array_ops.ones_like \
            else array_ops.ones(shape, a.dtype if dtype is None else dtype)
    return like


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **rest):
    _keywords("full_like", dict(order=order, subok=subok, **rest), order="K", subok=True, device=None)
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    return array_ops.fill(array_ops.shape(a) if shape is None else shape, math_ops.cast(fill_value, dtype))


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _keywords("reshape", dict(order=order, copy=copy), order="C", copy=None)
    return array_ops.reshape(a, newshape if shape is None else shape)


def _transpose(a, axes=None):
    if axes is not None:
        axes = tuple(int(i) % a.ndim if -a.ndim <= int(i) < a.ndim else int(i) for i in axes)
    return array_ops.transpose(a, axes)


def _ravel(a, order="C"):
    _keywords("ravel", dict(order=order), order="C")
    return array_ops.reshape(a, (-1,))


def _expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = a.ndim + len(axes)
    axes = sorted(normalize_axis(i, out_ndim) for i in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    for i in axes:
        a = array_ops.expand_dims(a, i)
    return a


def _where(condition, x=_NO, y=_NO):
    if x is _NO or y is _NO:
        raise ConversionError(f"np.where with one argument (np.nonzero) is not supported on tensors (at "
                              f"{user_location(3)}); give np.where(condition, x, y)")
    return math_ops.where(condition, x, y)


def _dot(a, b, out=None):
    _keywords("dot", dict(out=out), out=None)
    # np.dot converts a Python scalar to an array: strong, not weak as in a ufunc (dot(f32, 2) is f64)
    a, b = (v if isinstance(v, Tensor) else np.asarray(v) for v in (a, b))
    na, nb = np.ndim(a), np.ndim(b)
    if na == 0 or nb == 0:
        return math_ops.multiply(a, b)
    if na > 2 or nb > 2 or (na == 1 and nb == 2):
        raise ConversionError(f"np.dot of {na}-D and {nb}-D operands is not supported on tensors (at "
                              f"{user_location(3)}); use ag.matmul or `@`")
    return math_ops.matmul(a, b)


def _outer(a, b, out=None):
    _keywords("outer", dict(out=out), out=None)
    a = array_ops.reshape(a, (-1, 1)) if isinstance(a, Tensor) else np.ravel(a)[:, None]
    b = array_ops.reshape(b, (1, -1)) if isinstance(b, Tensor) else np.ravel(b)[None, :]
    return math_ops.multiply(a, b)


def _clip(a, a_min=_NO, a_max=_NO, out=None, *, min=_NO, max=_NO, **rest):  # noqa: A002 - numpy's names
    _keywords("clip", dict(out=out, **rest), out=None)
    low = min if a_min is _NO else a_min
    high = max if a_max is _NO else a_max
    if (low is _NO or low is None) and (high is _NO or high is None):
        raise ValueError("One of max or min must be given")
    if low is not _NO and low is not None:
        a = math_ops.maximum(a, low)
    if high is not _NO and high is not None:
        a = math_ops.minimum(a, high)
    return a


def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO, mean=_NO, correction=_NO,
         name="var"):
    """numpy's `_methods._var`: the mean summed in `dtype` (float64 for ints and bools), divided by the
    count as an intp (the quotient cast back to the sum's dtype), then the squared deviations summed
    and divided by max(count - ddof, 0) the same way."""
    _keywords(name, dict(out=out, where=where, mean=mean), out=None, where=True, mean=None)
    if correction is not _NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    keepdims = keepdims is not _NO and bool(keepdims)
    axes = normalize_axes(math_ops._axis_attr(axis), a.ndim)
    count = math.prod(_static_shape(a, name)[i] for i in axes)
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    x = a if dtype is None else math_ops.cast(a, dtype)
    total = math_ops.reduce_sum(x, axes, True)
    mean_ = math_ops.cast(math_ops.divide(total, np.intp(count)), total.dtype)
    deviation = math_ops.subtract(a, mean_)
    squares = math_ops.multiply(deviation, deviation)
    if dtype is not None:
        squares = math_ops.cast(squares, dtype)
    ret = math_ops.reduce_sum(squares, axes, keepdims)
    ret = math_ops.cast(math_ops.divide(ret, np.intp(builtins_max(count - ddof, 0))), ret.dtype)
    return math_ops.sqrt(ret) if name == "std" else ret


builtins_max = max


def _std(a, *args, **kwargs):
    return _var(a, *args, name="std", **kwargs)


def _method(name):
    """`np.<name>(t, ...)` as numpy's fromnumeric does it: the Tensor method, which takes ndarray's
    parameters, with the keywords numpy was given (none left at numpy's `_NoValue`)."""
    def call(a, *args, **kwargs):
        return getattr(a, name)(*args, **{k: v for k, v in kwargs.items() if v is not _NO})
    return call


def _copy(a, order="K", subok=False):
    _keywords("copy", dict(order=order, subok=subok), order="K", subok=False)
    copied = array_ops.identity(a)
    # np.copy always gives an ndarray: a 0-d one where a is a numpy scalar (Select boxes so)
    return copied if a.ndim else math_ops.where(True, copied, copied)


def _joined(name, op):
    def join(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        _keywords(name, dict(out=out, dtype=dtype, casting=casting), out=None, dtype=None, casting="same_kind")
        arrays = list(arrays)
        if axis is None:
            if name == "stack":
                raise TypeError("axis=None is not supported by np.stack")
            arrays, axis = [array_ops.reshape(v, (-1,)) if isinstance(v, Tensor) else np.ravel(v)
                            for v in arrays], 0
        return op(arrays, axis)
    return join


def _triangle(name, lower):
    """numpy's triu/tril: where(tri mask, zeros, m) with the mask of the last two dims (a 1-D m is its rows)."""
    def triangle(m, k=0):
        shape = _static_shape(m, name)[-2:]
        mask = np.tri(*shape, k=k - 1 if not lower else k, dtype=bool)
        if lower:
            return math_ops.where(mask, m, np.zeros(1, m.dtype))
        return math_ops.where(mask, np.zeros(1, m.dtype), m)
    return triangle


# numpy function -> graph form, the one table `np.<function>(t, ...)` goes through (NEP 18); a
# function with no entry is a ConversionError naming it
ARRAY_FUNCTIONS = {
    np.zeros_like: _like("zeros_like", array_ops.zeros_like),
    np.ones_like: _like("ones_like", array_ops.ones_like),
    # eager's contents are undefined (whatever the memory held); zeros are one such content
    np.empty_like: _like("empty_like", array_ops.zeros_like),
    np.full_like: _full_like,
    np.reshape: _reshape, np.transpose: _transpose, np.ravel: _ravel,
    np.squeeze: lambda a, axis=None: array_ops.squeeze(a, axis),
    np.expand_dims: _expand_dims,
    np.where: _where, np.dot: _dot, np.outer: _outer, np.clip: _clip,
    np.var: _var, np.std: _std,
    **{getattr(np, name): _method(name) for name in ("sum", "mean", "prod", "max", "min", "any", "all")},
    np.amax: _method("max"), np.amin: _method("min"),
    np.copy: _copy,
    np.concatenate: _joined("concatenate", array_ops.concat), np.stack: _joined("stack", array_ops.stack),
    np.triu: _triangle("triu", False), np.tril: _triangle("tril", True),
    # numpy's shape queries, which the static shape answers (np.ndim(t) inside ufunc.outer too)
    np.ndim: lambda a: a.ndim, np.shape: lambda a: a.shape,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
}


def _array_function(self, func, types, args, kwargs):
    """numpy's hook for a numpy function called with a Tensor argument: `np.zeros_like(t)`,
    `np.concatenate([t, a])`, routed through `ARRAY_FUNCTIONS`."""
    entry = ARRAY_FUNCTIONS.get(func)
    if entry is None:
        raise ConversionError(f"np.{func.__name__} is not supported on tensors (at {user_location(2)})")
    return entry(*args, **kwargs)



_install()
