"""`target[index] = value` and `target[index] op= value` in converted code (`ag__.set_item`).

On a tensor, a list or a dict it is Python's own statement (a tensor's `__setitem__` is a
functional update of its memory: runtime/memory.py). A numpy array made in the function that
receives a tensor (`out = np.empty(n); out[i] = t`) cannot hold it: it becomes a tensor holding
its contents (a constant), the update is made on that, and the converted code's variable names
it from then on (`out = ag__.set_item(out, i, t)`). Refused where another name could still see
the numpy array (a view of it, a list holding it, a second variable): it would miss the update.
"""
import operator

import numpy as np

from ..errors import ConversionError, user_location
from ..ops import python_values
from ..ops.core import convert_to_tensor, holds_tensor
from ..runtime import memory
from ..runtime.graph import Tensor, current_graph, numpy_array_given
from .lists import TensorList
from .logical import Choice

_IN_PLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
             "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "@": operator.imatmul,
             "&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift,
             ">>": operator.irshift}

def set_item(target, index, value, op=None, name=None):
    """`target[index] = value` (`op`: `target[index] op= value()`, Python's own sequence: read the
    item, evaluate the right side, update the item, store it); returns what the variable `name`
    holds afterwards."""
    if python_values.origin((target, index)) is not None:  # the item is read when the graph runs, as eagerly
        return python_values.defer(_store, target, index, value() if op is not None else value, op)
    if type(target) is np.ndarray and current_graph() is not None and _holds_tensor(index, value):
        # before an `op=` reads the item: a numpy array indexed by a tensor (`v[n % 4] -= 1`) cannot be read
        target = _promoted(target, name)
    if op is not None:
        current = target[index]
        value = _IN_PLACE[op](current, value())
    if type(target) is np.ndarray and python_values.origin((value,)) is not None:
        return python_values.defer(_store, target, index, value, None)  # done when the graph runs, as eagerly
    if isinstance(value, Choice) and isinstance(target, (np.ndarray, Tensor)):
        value = value.stored(target.dtype)  # `a[i] = x or y`: the picked operand, as the array holds it
    if isinstance(target, TensorList):  # a list a graph loop carries: a new stacked tensor
        return target.with_item(index, value)
    if type(target) is np.ndarray and current_graph() is not None and _holds_tensor(index, value):
        target = _promoted(target, name)
    target[index] = value
    return target


def _store(target, index, value, op):
    if op is not None:
        value = _IN_PLACE[op](target[index], value)
    target[index] = value
    return target


def _holds_tensor(index, value):
    parts = (index if type(index) is tuple else (index,)) + (value,)
    return any(isinstance(p, Tensor) or (type(p) is slice and any(isinstance(b, Tensor) for b in (p.start, p.stop, p.step)))
               or (type(p) in (list, tuple) and holds_tensor(p)) for p in parts)


def _promoted(array, name):
    label = f"'{name}'" if name else "a numpy array"
    what = numpy_array_given(array) or memory.other_holder(array)
    if what is not None:
        raise ConversionError(
            f"{label} is a numpy array made in the function, {what}, and a tensor is stored into it at "
            f"{user_location(3)}: it becomes a tensor from here, and the other holder would not see the "
            f"update. Store into the array before taking views of it or other names for it, or make it "
            f"with np.zeros/np.empty right where it is filled")
    return convert_to_tensor(array.copy())
