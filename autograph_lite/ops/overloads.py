"""Python operators and numpy ufuncs on symbolic Tensors, routed to ag ops.

`x + 1`, `a @ b`, `x[1:3]`, `x < y` and `np.tanh(x)` on a Tensor all add graph nodes.
`x += y` keeps x's dtype and shape as numpy does and replaces x's array (see `_in_place`).
"""
import dis
import linecache
import operator
import re
import sys

import numpy as np

from ..errors import ConversionError, NeedsPython, user_location
from ..runtime import memory
from ..runtime.boxes import ARRAY, VARIES, box_of
from ..runtime.graph import InPlaceUpdate, Tensor, check_partial_aliases, current_graph
from ..runtime.opdef import PLACEHOLDER
from . import array_ops, math_ops, numpy_api, python_values
from .core import CHECK_SHAPE, apply, numpy_shape

_BINARY = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.divide, "floordiv": math_ops.floordiv, "mod": math_ops.mod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
}
_SYMBOLS = {"add": "+=", "sub": "-=", "mul": "*=", "truediv": "/=", "floordiv": "//=", "mod": "%=",
            "pow": "**=", "matmul": "@=", "and": "&=", "or": "|=", "xor": "^=", "lshift": "<<=",
            "rshift": ">>="}
_UFUNC_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
                "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
                "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
                "rshift": "right_shift"}
_COMPARE = {
    "lt": math_ops.less, "le": math_ops.less_equal, "gt": math_ops.greater,
    "ge": math_ops.greater_equal, "eq": math_ops.equal, "ne": math_ops.not_equal,
}


def _bitwise(logical, bitwise):
    """`x & y` as numpy's `bitwise_and`: on bools the logical op (the same values), else the bit op
    (integers; a float operand is numpy's TypeError)."""
    def method(x, y):
        weak = [v.weak if isinstance(v, Tensor) else type(v) is bool for v in (x, y)]
        if not all(weak) and all(v.dtype == np.bool_ if isinstance(v, Tensor) else isinstance(v, (bool, np.bool_))
                                 for v in (x, y)):
            return logical(x, y)
        return bitwise(x, y)  # Python bools known at run time: Python's `&`, a Python bool
    return method


def _invert(x):
    # `~` of a Python bool known at run time is Python's (-2 for True), not numpy's
    return math_ops.logical_not(x) if x.dtype == np.bool_ and not x.weak else math_ops.invert(x)


def _getitem(x, index):
    if python_values.origin(index if type(index) is tuple else (index,)) is not None:
        return python_values.defer(operator.getitem, x, index)  # an index known only when the graph runs
    return array_ops.getitem(x, index)


def _assigned_name(frame):
    """The name the statement running in `frame` stores into next (`x` in `x += y`), or None."""
    for ins in dis.get_instructions(frame.f_code):
        if ins.offset > frame.f_lasti:
            return ins.argval if ins.opname in ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL") else None
    return None


def _in_place(name, op):
    """`x op= y` on a Tensor, as numpy does it on an ndarray: the result keeps x's dtype (an
    unsafe cast raises TypeError) and x's shape (a broadcast that would grow x raises
    ValueError). The update writes x's memory (runtime/memory.py), the whole array or the part
    a view shares (`row += 1`, and `x[i] += 1`, which reads x[i] first), as `x[...] op= y` does:
    every other name, view and container of the array reads it, and an argument's final
    contents are written back into the caller's array."""
    symbol = _SYMBOLS[name]

    def method(x, y):
        if x.shape == () and not x.weak and box_of(x) == VARIES:
            return _in_place_either_box(x, op(x, y), symbol, user_location(2))
        if x.weak or (x.shape == () and box_of(x) not in (ARRAY, VARIES) and not _argument(x)):
            # a Python scalar staged as a tensor, or a numpy scalar (`s = x[0]`, a loop variable that
            # is one): `+=` rebinds, as in Python (an argument's trace may be shared by a 0-d array,
            # written back; a numpy scalar is not)
            return op(x, y)
        target = _assigned_name(sys._getframe(1))
        label = f"'{target}'" if target else "an array"
        location = user_location(2)
        # x's memory is written (a view's too: `row = x[0]; row *= 2`), as by `x[...] op= y`: every
        # alias (another name, a view, a container, the caller's argument) reads the new contents
        memory.update(x, lambda current: _updated(current, op(current, y), name, symbol, label, location),
                      label, symbol, location)
        return x
    return method


def _argument(x):
    """Whether `x` is a placeholder of the function's arguments (or of an array read from outside)."""
    return x.node.opdef is PLACEHOLDER and bool(x.node.attrs.get("argument") or x.node.attrs.get("outside"))


def _in_place_either_box(x, new, symbol, location):
    """`x op= y` on a 0-d value that is a 0-d array on some runs (updated in place: still an array, of
    x's dtype) and a numpy scalar on others (rebound: numpy's scalar result), picked when the graph
    runs (BoxLike). Where the two would differ in more than the box (dtype, shape), or where another
    holder could see the difference (its memory was viewed or written; on some runs it is an
    argument's array, or a loop's body hands it an array from outside the iteration): refused; other
    names of the value from before may no longer be read (an array's would see the update, a
    scalar's not)."""
    target = _assigned_name(sys._getframe(2))
    label = f"'{target}'" if target else "the value"
    if new.dtype != x.dtype or new.shape != () or x.mem is not None:
        differs = ("a view of its memory would see the update on the array runs only" if x.mem is not None else
                   f"here to a {new.dtype}{list(new.shape) if new.shape else ''}, not {x.dtype}: the two would differ")
        raise ConversionError(f"{label} {symbol} ...: {label} is a numpy scalar on some runs and a 0-d array on "
                              f"others (by the data: a tensor loop or `if`), and eagerly `{symbol}` updates the "
                              f"array in place but rebinds the scalar, {differs}. "
                              f"Make it one type first (np.asarray(v), or v[()]) (at {location})")
    result = math_ops.box_like(x, new)
    # on the array runs it is an update in place of x's array, which other holders of that array see:
    # what a tensor `if`/loop gave x from (an argument's array: refused, another: stale), and, where x
    # is a loop variable's or branch's placeholder, the array from outside (the While/Cond built
    # around it refuses a body that hands the variable an array from outside the iteration, which
    # the next iteration would update: fuzzer seed 1153013502)
    check_partial_aliases(x, label, symbol, location, new=result)
    x.stale = InPlaceUpdate(current_graph(), f"{label} (a numpy scalar on some runs, a 0-d array on others)",
                            symbol, location)
    if x.node.opdef is PLACEHOLDER and x.node.graph.parent is not None \
            and not any(t is x for t in x.node.graph.maybe_updated):
        x.node.graph.maybe_updated.append(x)
    return result


def _updated(x, new, name, symbol, label, location):
    """`new` (x op y) as numpy writes it into x: x's dtype (an unsafe cast raises TypeError) and
    shape (a broadcast that would grow x raises ValueError)."""
    if new.dtype != x.dtype:
        if not np.can_cast(new.dtype, x.dtype, "same_kind"):
            raise TypeError(f"Cannot cast ufunc '{_UFUNC_NAMES[name]}' output from {new.dtype!r} to "
                            f"{x.dtype!r} with casting rule 'same_kind': {label} {symbol} keeps "
                            f"{label}'s dtype (at {location})")
        new = math_ops.cast(new, x.dtype)
    if len(new.shape) != len(x.shape) or any(a is not None and b is not None and a != b
                                             for a, b in zip(x.shape, new.shape)):
        raise ValueError(f"non-broadcastable output operand with shape {numpy_shape(x.shape)} doesn't match the "
                         f"broadcast shape {numpy_shape(new.shape)}: {label} {symbol} cannot change {label}'s shape "
                         f"(at {location})")
    if new.shape != x.shape:
        # unknown dims: the result must have x's run-time shape, as numpy checks when the graph runs
        apply(CHECK_SHAPE, (new, x), {"message": f": {label} {symbol} cannot change {label}'s shape",
                                      "location": location})
        new = array_ops.reshape(new, array_ops.shape(x))
    if new.shape == () and box_of(x) == ARRAY and box_of(new) != ARRAY:
        # a 0-d array updated in place is still an array, where the op gives a numpy scalar: Select
        # boxes its result as an array (as _copy does)
        new = math_ops.where(True, new, new)
    return new


def _setitem(x, index, value):
    """`x[index] = value`: a functional update of x's memory (runtime/memory.py)."""
    location = user_location(2)
    _refuse_stored_python_value((index, value), _subscript_label(location), location)
    array_ops.set_item(x, index, value, _subscript_label(location), location)


def _refuse_stored_python_value(value, label, location):
    """An array of the graph cannot be written, when the graph runs, with a value known only then."""
    source = python_values.origin((value,))
    if source is not None:
        raise NeedsPython(f"{source.label} comes from the loop on a tensor at {source.location}, which runs as "
                          f"Python when the graph runs, and {label} is an array of the graph written in place "
                          f"with it (at {location}); write into a copy made from it (`y = np.array(...)`) or "
                          f"compute a new array")


def _subscript_label(location):
    """'x' for a statement `x[...] = ...` at `location` (the user's file:line), else 'an array'."""
    filename, _, line = location.rpartition(":")
    match = re.match(r"\s*([A-Za-z_][A-Za-z_0-9.]*)\s*\[", linecache.getline(filename, int(line))) \
        if line.isdigit() else None
    return f"'{match.group(1)}'" if match else "an array"


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
    for name, op in _COMPARE.items():
        setattr(Tensor, f"__{name}__", lambda x, y, op=op: op(x, y))
    for name, method in (("and", _bitwise(math_ops.logical_and, math_ops.bitwise_and)),
                         ("or", _bitwise(math_ops.logical_or, math_ops.bitwise_or)),
                         ("xor", math_ops.bitwise_xor), ("lshift", math_ops.left_shift),
                         ("rshift", math_ops.right_shift)):
        setattr(Tensor, f"__{name}__", method)
        setattr(Tensor, f"__r{name}__", lambda x, y, m=method: m(y, x))
        setattr(Tensor, f"__i{name}__", _in_place(name, method))
    # divmod(x, y) is np.divmod on an ndarray: both results of one floor division
    Tensor.__divmod__ = lambda x, y: (math_ops.floordiv(x, y), math_ops.mod(x, y))
    Tensor.__rdivmod__ = lambda x, y: (math_ops.floordiv(y, x), math_ops.mod(y, x))
    Tensor.__neg__ = lambda x: math_ops.negative(x)
    Tensor.__pos__ = lambda x: math_ops.positive(x)  # np.positive: a new array (a numpy scalar of a 0-d one)
    Tensor.__abs__ = lambda x: math_ops.abs(x)
    Tensor.__invert__ = _invert
    Tensor.__getitem__ = _getitem
    numpy_api.install()





_install()
