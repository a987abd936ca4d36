"""numpy's API on tensors: ufuncs (`ufuncs.py`, NEP 13), numpy functions (`ARRAY_FUNCTIONS`, NEP 18,
joined from each area module's `FUNCTIONS`) and ndarray's methods (`methods.py`).

A numpy callable with no entry is a ConversionError naming it and the user's line. A new area
(linear algebra, sorting, ...) is a module with a `FUNCTIONS` dict, listed in `_AREAS`.
"""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from . import (complex_numbers, creation, functions, indexing, linalg, methods, products, reductions, shape,
               sorting, statistics, ufuncs)
from .ufuncs import UFUNC_OPS, UFUNC_REDUCTIONS  # noqa: F401  (the ufunc tables, read by tests and docs)

_AREAS = (functions, reductions, shape, indexing, sorting, creation, methods, products, linalg, statistics,
          complex_numbers)


def _join(areas):
    table = {}
    for area in areas:
        twice = table.keys() & area.FUNCTIONS.keys()
        assert not twice, f"{area.__name__} defines {sorted(f.__name__ for f in twice)} again"
        table.update(area.FUNCTIONS)
    return table


# numpy function -> graph form, the one table `np.<function>(t, ...)` goes through (NEP 18); a
# function with no entry is a ConversionError naming it
ARRAY_FUNCTIONS = _join(_AREAS)

# numpy functions that never dispatch to a Tensor (`np.zeros(n)`, `np.array([t, 1.0])`, written in C)
# -> what converted code calls instead (operators/call.py): the graph form when an argument holds a tensor
CALLS = creation.CALLS


def _array_function(self, func, types, args, kwargs):
    """numpy's hook for a numpy function called with a Tensor argument: `np.zeros_like(t)`,
    `np.concatenate([t, a])`, routed through `ARRAY_FUNCTIONS`."""
    entry = ARRAY_FUNCTIONS.get(func)
    if entry is None:
        raise ConversionError(f"{numpy_name(func)} is not supported on tensors (at {user_location(2)})")
    return entry(*args, **kwargs)


def numpy_name(func):
    """How a user spells numpy function `func`: `np.sum`, `np.linalg.eig`, `np.fft.fft`."""
    module = getattr(func, "__module__", None) or "numpy"
    return f"np.{module[len('numpy.'):]}.{func.__name__}" if module.startswith("numpy.") else f"np.{func.__name__}"


_NDARRAY_NAMES = frozenset(n for n in dir(np.ndarray) if not n.startswith("_"))


def _missing_attribute(self, name):
    """`t.flat` and other ndarray attributes a Tensor lacks: a ConversionError naming it at the user's
    line, not an AttributeError (`getattr(t, "base", None)` would quietly take the default where
    eager code gets the array's attribute)."""
    if name in _NDARRAY_NAMES:
        raise ConversionError(f"ndarray.{name} is not supported on tensors (at {user_location(2)}); "
                              f"docs/numpy.md lists what is")
    raise AttributeError(f"'numpy.ndarray' object has no attribute '{name}'")  # eager's message


def install():
    """Tensor's numpy protocols and ndarray methods."""
    methods.install()
    complex_numbers.install()
    Tensor.__array_ufunc__ = ufuncs.array_ufunc
    Tensor.__array_function__ = _array_function
    Tensor.__getattr__ = _missing_attribute
