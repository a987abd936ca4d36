"""`target[index] = value` and `target[index] op= value` in converted code (`ag__.set_item`).

On a tensor, a list or a dict it is Python's own statement (a tensor's `__setitem__` is a
functional update of its memory: runtime/memory.py). A numpy array made in the function that
receives a tensor (`out = np.empty(n); out[i] = t`) cannot hold it: it becomes a tensor holding
its contents (a constant), the update is made on that, and the converted code's variable names
it from then on (`out = ag__.set_item(out, i, t)`). Refused where another name could still see
the numpy array (a view of it, a list holding it, a second variable): it would miss the update.
"""
import gc
import operator
import sys

import numpy as np

from ..errors import ConversionError, user_location
from ..ops.core import convert_to_tensor, holds_tensor
from ..runtime.graph import Tensor, current_graph

_IN_PLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
             "//": operator.ifloordiv, "%": operator.imod, "**": operator.ipow, "@": operator.imatmul,
             "&": operator.iand, "|": operator.ior, "^": operator.ixor, "<<": operator.ilshift,
             ">>": operator.irshift}

def set_item(target, index, value, op=None, name=None):
    """`target[index] = value` (`op`: `target[index] op= value`, Python's own sequence: read the
    item, update it, store it); returns what the variable `name` holds afterwards."""
    if op is not None:
        value = _IN_PLACE[op](target[index], value)
    if type(target) is np.ndarray and current_graph() is not None and _holds_tensor(index, value):
        target = _promoted(target, name)
    target[index] = value
    return target


def _holds_tensor(index, value):
    parts = (index if type(index) is tuple else (index,)) + (value,)
    return any(isinstance(p, Tensor) or (type(p) is slice and any(isinstance(b, Tensor) for b in (p.start, p.stop, p.step)))
               or (type(p) in (list, tuple) and holds_tensor(p)) for p in parts)


def _other_holder(array):
    """What else holds `array` (a view of it, a container, a second variable, a variable of a
    calling function), in words, or None. The references counted as ours: the variables of the
    frames on the stack (the converted function writing and its generated loop and branch
    functions, the operators between them and here, this one's) and the tuples the operators pass
    them in; any other (a numpy view holds its base through `.base`, which the garbage collector
    does not list) is another holder."""
    if array.base is not None:
        return "a view of another array"
    counted, frame_dicts, frame, writer = 0, set(), sys._getframe(1), None
    while frame is not None:
        names = frame.f_locals  # a dict of the frame's own, itself a referrer from now on
        frame_dicts.add(id(names))
        mine = sum(v is array for v in names.values())
        converted = frame.f_code.co_filename
        if converted.startswith("<autograph_lite converted"):
            writer = writer or converted  # the converted function writing (its loop bodies share its file)
            if mine and converted != writer:
                return "held by a variable of the function that called this one"
            if mine > 1:
                return "held by two variables"
        counted += 2 * mine  # the frame's variable and its f_locals dict
        frame = frame.f_back
    for r in gc.get_referrers(array):
        if isinstance(r, (list, dict, set)) and id(r) not in frame_dicts:
            return f"held by a {type(r).__name__}"
        if isinstance(r, tuple):
            counted += sum(v is array for v in r)
    if sys.getrefcount(array) - 2 > counted:  # getrefcount's argument, this frame's `array`
        return "viewed by another array, or held elsewhere"
    return None


def _promoted(array, name):
    label = f"'{name}'" if name else "a numpy array"
    what = _other_holder(array)
    if what is not None:
        raise ConversionError(
            f"{label} is a numpy array made in the function, {what}, and a tensor is stored into it at "
            f"{user_location(3)}: it becomes a tensor from here, and the other holder would not see the "
            f"update. Store into the array before taking views of it or other names for it, or make it "
            f"with np.zeros/np.empty right where it is filled")
    return convert_to_tensor(array.copy())
