"""Values only a Python run gives: the variables of a tensor loop run as Python.

A tensor loop whose body cannot be traced with static ranks (operators/python_loops.py) is one
`PythonLoop` node: when the graph runs, it runs the loop's converted code on the run's values,
each iteration eager numpy, and gives each variable's final value as it is (any type, rank, box or
structure). The graph holds such an output as an opaque tensor (dtype object, shape ()), and the
converted code sees it as a `PythonValue`: it can be returned, printed and indexed with constant
keys (`v['a']`, `v[0]`: a `PythonItem` node); any other use needs its type while tracing and is
refused with `NeedsPython`, which makes a tensor loop around the use run as Python too.
"""
import numpy as np

from ..errors import NeedsPython, user_location
from ..runtime.graph import Slot
from ..runtime.opdef import CALL_VALUE, PYTHON_CODE, STR, always
from .core import apply, define

OPAQUE = np.dtype(object)  # the dtype of a graph value that is any Python object


def _loop_kernel(xp, loop, label):
    return loop.run


def _loop_infer(*inputs, loop, label):
    return [((), OPAQUE)] * loop.outputs


# stateful: its body may print, draw or raise, so it is never dropped, merged or moved
PYTHON_LOOP = define("PythonLoop", _loop_kernel, _loop_infer, stateful=True, value_errors=always,
                     attrs={"loop": PYTHON_CODE, "label": STR}, printed_attrs=("label",))


def _item_kernel(xp, key):
    return lambda value: value[key]


def _item_infer(value, key):
    return [((), OPAQUE)]


PYTHON_ITEM = define("PythonItem", _item_kernel, _item_infer, value_errors=always, attrs={"key": CALL_VALUE})


def _constant_key(key):
    return CALL_VALUE.accepts(key) and not _has_slot(key)


def _has_slot(key):
    return type(key) is Slot or (type(key) is tuple and any(_has_slot(k) for k in key))


class PythonValue:
    """A variable's value after a tensor loop run as Python: known only when the graph runs."""

    __slots__ = ("tensor", "label", "location")

    def __init__(self, tensor, label, location):
        self.tensor, self.label, self.location = tensor, label, location

    def __repr__(self):
        return f"<{self.label}: a Python value of the loop at {self.location}>"

    def __getitem__(self, key):
        if not _constant_key(key):
            self._refuse()
        return PythonValue(apply(PYTHON_ITEM, (self.tensor,), {"key": key}), f"{self.label}[{key!r}]",
                           self.location)

    def _refuse(self, *args, **kwargs):
        raise NeedsPython(
            f"{self.label} comes from the loop on a tensor at {self.location}, which runs as Python when the "
            f"graph runs (its variables' ranks are not the same on every iteration), so its type, rank and "
            f"box are known only then; the compiled function can return it, print it and take items with "
            f"constant keys, but not use it otherwise (at {user_location(2)})")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()


_REFUSED_USES = ("__array__", "__array_ufunc__", "__array_function__", "__bool__", "__len__", "__iter__",
                 "__contains__", "__str__", "__format__", "__float__", "__int__", "__index__", "__complex__",
                 "__neg__", "__pos__", "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__",
                 "__ne__", "__call__", "__setitem__", "__delitem__",
                 *(f"__{p}{o}__" for o in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                                          "and", "or", "xor", "lshift", "rshift", "divmod") for p in ("", "r", "i")))
for _name in _REFUSED_USES:
    setattr(PythonValue, _name, PythonValue._refuse)
PythonValue.__hash__ = object.__hash__
