"""ndarray's methods and attributes on Tensor (`t.sum(axis)`, `t.T`, `t.size`, `t.astype`), with
ndarray's parameters; `np.<name>(t)` for the fromnumeric functions calls them as numpy does."""
import math

import numpy as np

from ...errors import user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops


def install():
    Tensor.T = property(lambda x: array_ops.transpose(x))
    Tensor.size = property(_size)
    Tensor.reshape = lambda x, *shape: array_ops.reshape(x, shape[0] if len(shape) == 1 else shape)
    Tensor.astype = lambda x, dtype: math_ops.cast(x, dtype)
    Tensor.copy = lambda x: array_ops.identity(x)
    for name in ("sum", "mean", "prod", "max", "min", "any", "all"):
        setattr(Tensor, name, _reduction_method(name, getattr(math_ops, f"reduce_{name}")))


def _size(x):
    """`t.size`: a Python int, as ndarray's, when the shape is known; else counted when the graph runs
    (a weak int: eagerly it is a Python int)."""
    if all(d is not None for d in x.shape):
        return math.prod(x.shape)
    from ..control_flow import python_scalar  # function-local: control_flow is imported after this module
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
