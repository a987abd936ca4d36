"""Python operators and numpy ufuncs on symbolic Tensors, routed to ag ops.

`x + 1`, `a @ b`, `x[1:3]`, `x < y` and `np.tanh(x)` on a Tensor all add graph nodes.
"""
import numpy as np

from ..runtime.graph import Tensor
from . import array_ops, math_ops

_BINARY = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.divide, "floordiv": math_ops.floordiv, "mod": math_ops.mod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
}
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


def _install():
    for name, op in _BINARY.items():
        setattr(Tensor, f"__{name}__", lambda x, y, op=op: op(x, y))
        setattr(Tensor, f"__r{name}__", lambda x, y, op=op: op(y, x))
    for name, op in _COMPARE.items():
        setattr(Tensor, f"__{name}__", lambda x, y, op=op: op(x, y))
    for name, op, symbol in (("and", math_ops.logical_and, "&"), ("or", math_ops.logical_or, "|")):
        method = _bool_only(op, symbol)
        setattr(Tensor, f"__{name}__", method)
        setattr(Tensor, f"__r{name}__", lambda x, y, m=method: m(y, x))
    Tensor.__neg__ = lambda x: math_ops.negative(x)
    Tensor.__pos__ = lambda x: x
    Tensor.__abs__ = lambda x: math_ops.abs(x)
    Tensor.__invert__ = lambda x: _bool_only(lambda a, _: math_ops.logical_not(a), "~")(x, x)
    Tensor.__getitem__ = lambda x, index: array_ops.getitem(x, index)
    Tensor.T = property(lambda x: array_ops.transpose(x))
    Tensor.reshape = lambda x, *shape: array_ops.reshape(x, shape[0] if len(shape) == 1 else shape)
    Tensor.astype = lambda x, dtype: math_ops.cast(x, dtype)
    Tensor.sum = lambda x, axis=None, keepdims=False: math_ops.reduce_sum(x, axis, keepdims)
    Tensor.mean = lambda x, axis=None, keepdims=False: math_ops.reduce_mean(x, axis, keepdims)
    Tensor.max = lambda x, axis=None, keepdims=False: math_ops.reduce_max(x, axis, keepdims)
    Tensor.min = lambda x, axis=None, keepdims=False: math_ops.reduce_min(x, axis, keepdims)
    Tensor.__array_ufunc__ = _array_ufunc


# numpy ufuncs that have an ag op: np.tanh(t), ndarray + t, ...
_UFUNCS = {
    np.add: math_ops.add, np.subtract: math_ops.subtract, np.multiply: math_ops.multiply,
    np.true_divide: math_ops.divide, np.floor_divide: math_ops.floordiv, np.remainder: math_ops.mod,
    np.power: math_ops.pow, np.maximum: math_ops.maximum, np.minimum: math_ops.minimum,
    np.equal: math_ops.equal, np.not_equal: math_ops.not_equal, np.less: math_ops.less,
    np.less_equal: math_ops.less_equal, np.greater: math_ops.greater,
    np.greater_equal: math_ops.greater_equal, np.logical_and: math_ops.logical_and,
    np.logical_or: math_ops.logical_or, np.logical_not: math_ops.logical_not,
    np.negative: math_ops.negative, np.tanh: math_ops.tanh, np.exp: math_ops.exp,
    np.log: math_ops.log, np.sqrt: math_ops.sqrt, np.square: math_ops.square,
    np.absolute: math_ops.abs, np.matmul: math_ops.matmul,
}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    op = _UFUNCS.get(ufunc)
    if op is None or method != "__call__" or kwargs:
        raise TypeError(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method} "
                        f"{'with ' + ', '.join(kwargs) + ' ' if kwargs else ''}has no autograph_lite "
                        f"op for symbolic Tensors; use the ag.* function instead")
    return op(*inputs)


_install()
