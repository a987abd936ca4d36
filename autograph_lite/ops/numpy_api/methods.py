"""ndarray's methods and attributes on Tensor (`t.sum(axis)`, `t.T`, `t.size`, `t.astype`), with
ndarray's parameters; `np.<name>(t)` for the fromnumeric functions calls them as numpy does."""
import math

import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from . import functions, indexing, products, reductions, shape, sorting
from .common import keywords


def install():
    Tensor.T = property(lambda x: array_ops.transpose(x))
    Tensor.size = property(_size)
    Tensor.itemsize = property(lambda x: x.dtype.itemsize)
    Tensor.nbytes = property(lambda x: _size(x) * x.dtype.itemsize)
    Tensor.reshape = lambda x, *shape: array_ops.reshape(x, shape[0] if len(shape) == 1 else shape)
    Tensor.astype = _astype
    Tensor.copy = _copy
    for name in ("sum", "mean", "prod", "max", "min", "any", "all"):
        setattr(Tensor, name, _reduction_method(name, getattr(math_ops, f"reduce_{name}")))
    for name, method in METHODS.items():
        setattr(Tensor, name, method)
    for name in REFUSED:
        setattr(Tensor, name, _refused(name))
    Tensor.__round__ = _builtin_round
    Tensor.__divmod__ = lambda x, y: (math_ops.floordiv(x, y), math_ops.mod(x, y))
    Tensor.__rdivmod__ = lambda x, y: (math_ops.floordiv(y, x), math_ops.mod(y, x))


def _copy(x, order="C"):
    """ndarray.copy: a new array (in C order, or keeping the layout: the values alike)."""
    if order not in ("C", "K", "A"):
        keywords("ndarray.copy", dict(order=order), order="C")
    return array_ops.identity(x)


def _astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """ndarray.astype: a new array, or with copy=False the array itself where its dtype is `dtype`."""
    keywords("ndarray.astype", dict(order=order, casting=casting, subok=subok), order="K", casting="unsafe",
             subok=True)
    if not copy and np.dtype(dtype) == x.dtype:
        return x
    return math_ops.cast(x, dtype)


def _round(a, decimals=0, out=None):
    """numpy's round (PyArray_Round): multiply by 10**decimals (divide for negative ones), rint,
    divide back, in the array's float dtype (float64 for integers, cast back); integers with
    decimals >= 0 are copied."""
    keywords("round", dict(out=out), out=None)
    decimals = int(decimals)
    integer = a.dtype.kind in "iu"
    if decimals >= 0 and integer:  # a copy; of a 0-d array the numpy scalar (ndarray.round's PyArray_Return)
        if a.weak:  # a Python int (a loop counter) is a Python int when the graph runs: its 0-d array first
            a = math_ops.cast(a, a.dtype)
        return array_ops.identity(a) if a.ndim else array_ops.getitem(a, ())
    if decimals == 0:
        return math_ops.rint(a)  # of bools a float16, as numpy's rint
    if a.dtype == np.bool_:
        op = "multiply" if decimals > 0 else "divide"
        raise TypeError(f"Cannot cast ufunc '{op}' output from dtype('float64') to dtype('bool') with casting rule "
                        f"'same_kind' (np.round of a bool array with decimals={decimals}, at {user_location(3)})")
    if a.dtype.kind == "c":  # numpy rounds the real and imaginary parts each as a float array
        rounded = math_ops.complex_from_parts(_round(math_ops.real(a), decimals), _round(math_ops.imag(a), decimals))
        return array_ops.getitem(rounded, ()) if rounded.ndim == 0 else rounded  # a 0-d one as numpy's scalar
    power = 1.0
    n = abs(decimals)
    if n < 9:
        power = float(10 ** n)
    else:
        power = 1e9
        for _ in range(n - 9):
            power *= 10.0
    first, then = (math_ops.multiply, math_ops.divide) if decimals >= 0 else (math_ops.divide, math_ops.multiply)
    rounded = then(math_ops.rint(first(a, power)), power)
    return math_ops.cast(rounded, a.dtype) if integer else rounded


def _builtin_round(x, ndigits=None):
    """Python's round() of a tensor, as of the value eager holds: a numpy scalar's __round__ gives a
    Python int without `ndigits`, else np.round's numpy scalar; an ndarray has no __round__."""
    from ...runtime.boxes import ARRAY, PythonBox, box_of
    if box_of(x) == ARRAY and x.python_box is not None:
        on_python, on_numpy, remedy = x.python_box.paths()
        raise ConversionError(f"round() of a value that is a Python number where {on_python} and a 0-d array "
                              f"{on_numpy}: eagerly a number on one path and a TypeError on the other; {remedy} "
                              f"(at {user_location(2)})")
    if box_of(x) == ARRAY or (x.dtype.kind in "bc" and not x.weak):
        name = "ndarray" if box_of(x) == ARRAY else x.dtype.type.__name__
        raise TypeError(f"type numpy.{name} doesn't define __round__ method (at {user_location(2)})")
    if ndigits is None:
        return math_ops.python_call("round", x)
    if x.weak:  # a Python number: Python's round
        return math_ops.python_call("round", x, ndigits)
    box = x.python_box
    if box is None:
        return _round(x, ndigits)
    # a Python number where a tensor `if` took one side, which the merged value holds as one on those
    # runs: np.round of its numpy scalar, and Python's round of the number, picked by the path
    from ..control_flow import python_scalar
    rounded = _round(array_ops.getitem(math_ops.cast(python_scalar(x), x.dtype), ()), ndigits)
    number = x if box.value is None else box.value
    rounded.python_box = PythonBox(box.pick, box.python_when, math_ops.python_call("round", number, ndigits),
                                   box.location, box.loop)
    return rounded


def _item(x, *args):
    if args:
        index = args[0] if len(args) == 1 else args
        x = array_ops.getitem(array_ops.reshape(x, (-1,)), index) if isinstance(index, (int, np.integer)) \
            else array_ops.getitem(x, tuple(index))
    elif x.shape != ():
        if None not in x.shape and math.prod(x.shape) != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        x = array_ops.reshape(x, ())  # a size known only when the graph runs is checked then
    if x.dtype.kind == "c":
        raise ConversionError(f"item() of a complex tensor is not supported (at {user_location(2)})")
    return math_ops.python_call({"b": "bool", "f": "float"}.get(x.dtype.kind, "int"), x)


def _transpose(x, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return functions._transpose(x, axes or None)


def _flatten(x, order="C"):
    keywords("flatten", dict(order=order), order="C")
    return array_ops.identity(array_ops.reshape(x, (-1,)))


# ndarray's methods on Tensor, with ndarray's parameters (numpy's functions of the same name call
# them, as fromnumeric does)
METHODS = {
    "argmin": lambda x, axis=None, out=None, *, keepdims=False: reductions.FUNCTIONS[np.argmin](x, axis, out,
                                                                                                keepdims=keepdims),
    "argmax": lambda x, axis=None, out=None, *, keepdims=False: reductions.FUNCTIONS[np.argmax](x, axis, out,
                                                                                                keepdims=keepdims),
    "cumsum": reductions.FUNCTIONS[np.cumsum], "cumprod": reductions.FUNCTIONS[np.cumprod],
    "clip": lambda x, min=None, max=None, out=None, **kwargs: functions._clip(  # noqa: A002 - ndarray's names
        x, min, max, out, **kwargs),
    "round": _round,
    "ravel": functions._ravel, "flatten": _flatten,
    "squeeze": lambda x, axis=None: array_ops.squeeze(x, axis),
    "dot": products._dot, "item": _item,
    "std": functions._std, "var": functions._var,
    "nonzero": lambda x: array_ops.nonzero(x),
    "transpose": _transpose, "swapaxes": shape.FUNCTIONS[np.swapaxes],
    "repeat": shape.FUNCTIONS[np.repeat], "take": indexing.FUNCTIONS[np.take],
    "trace": shape.FUNCTIONS[np.trace], "diagonal": shape.FUNCTIONS[np.diagonal],
    "argsort": sorting.FUNCTIONS[np.argsort], "searchsorted": indexing.FUNCTIONS[np.searchsorted],
}

# ndarray methods with no graph form, refused by name: in place (the mutation issue), or values
# as Python objects that exist only when the graph runs
REFUSED = {
    "sort": "sorts the array in place; write `x = np.sort(x)`",
    "fill": "fills the array in place; write `x = np.full_like(x, value)`",
    "tolist": "gives Python lists of the values, which exist only when the graph runs",
    "tobytes": "gives the bytes of the values, which exist only when the graph runs",
    "put": "writes into the array in place",
    "resize": "resizes the array in place",
    "partition": "partitions the array in place; write `x = np.sort(x)`",
    "itemset": "writes into the array in place",
    "setfield": "writes into the array in place",
    "flat": None,
}


def _refused(name):
    reason = REFUSED[name]

    def refuse(x, *args, **kwargs):
        raise ConversionError(f"ndarray.{name}() is not supported on tensors: it {reason} (at {user_location(2)})")
    if reason is None:  # an attribute
        def attribute(x):
            raise ConversionError(f"ndarray.{name} is not supported on tensors (at {user_location(2)})")
        return property(attribute)
    return refuse


FUNCTIONS = {np.round: _round, np.around: _round}


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
