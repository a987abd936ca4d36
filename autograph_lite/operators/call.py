"""`ag__.call(f)`: what a call in converted code actually calls.

User functions, methods, lambdas and callable objects are converted (once, cached);
library code (numpy, the standard library, installed packages, autograph_lite) and
`@ag.do_not_convert` functions are called as they are; a few builtins that mean
something else on tensors are replaced (print, range, len, str, isinstance, type, hasattr,
callable), and while tracing, those computing numbers (min, max, sum, sorted, any, all, float,
int, math.*) and numpy's creation functions (np.zeros, np.array, ...: `numpy_api.CALLS`).
"""
import builtins
import functools
import math
import os
import sys
import threading
import types

import numpy as np

from .. import ops
from ..ops import generator_draws, math_ops, numpy_api, python_values
from ..errors import ConversionError, user_location
from ..runtime import devices
from ..runtime.graph import Tensor, current_graph
from . import control_flow, lists, outside_state, py_builtins

_REPLACED = {builtins.print: py_builtins.print_, builtins.range: py_builtins.range_,
             builtins.len: py_builtins.len_, builtins.str: py_builtins.str_, ops.stack: lists.stack, ops.concat: lists.concat,
             builtins.enumerate: control_flow.enumerate_, builtins.zip: control_flow.zip_,
             builtins.isinstance: py_builtins.isinstance_, builtins.type: py_builtins.type_,
             builtins.hasattr: py_builtins.hasattr_, builtins.callable: py_builtins.callable_}

# replaced while tracing: Python's functions of numbers and numpy's creation functions, which
# given a tensor compute eagerly's result in the graph (each calls the original on other values)
_REPLACED_WHILE_TRACING = {
    builtins.min: py_builtins.min_, builtins.max: py_builtins.max_, builtins.sum: py_builtins.sum_,
    builtins.sorted: py_builtins.sorted_, builtins.float: py_builtins.float_, builtins.int: py_builtins.int_,
    builtins.any: py_builtins.any_, builtins.all: py_builtins.all_,
    **{getattr(math, name): py_builtins.math_function(getattr(math, name))
       for name in math_ops.PYTHON_FUNCTIONS if getattr(math, name, None) is not None},
    **numpy_api.CALLS}

_LIBRARY_ROOTS = set(getattr(sys, "stdlib_module_names", ())) | {
    "numpy", "scipy", "cupy", "cupyx", "numba", "jax", "jaxlib", "tensorflow", "torch", "gast",
    "autograph_lite", "builtins", "pytest", "_pytest", "pluggy"}

_GENERATOR_TYPES = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
# numpy's functions of its global RandomState that are not its methods: refused as those are
_GLOBAL_STATE_FUNCTIONS = (np.random.seed, np.random.get_state, np.random.set_state)

MAX_RECURSION = 50
_depth = threading.local()


def do_not_convert(fn):
    """Decorator: converted code calls `fn` as it is, never converting it."""
    fn.__ag_do_not_convert__ = True
    return fn


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_library(fn):
    return is_library_code(getattr(fn, "__module__", None), getattr(getattr(fn, "__code__", None), "co_filename", ""))


def is_library_code(module, filename):
    """Whether code of `module` (its name) in `filename` is a library's (numpy, the standard library,
    installed packages, ours), not the user's."""
    if filename.startswith(_PACKAGE_DIR):  # ours, even when functools.wraps borrowed a user's name
        return True
    if (module or "").split(".")[0] in _LIBRARY_ROOTS:
        return True
    return f"{os.sep}site-packages{os.sep}" in filename or f"{os.sep}dist-packages{os.sep}" in filename


def _replacement(table, f):
    try:
        return table.get(f)
    except TypeError:  # unhashable callable
        return None


def call(f):
    """The callable converted code should call in place of `f`."""
    target = _target(f)
    if current_graph() is None or f is builtins.print or _converted_code(target):
        return target

    numpy_function = (getattr(f, "__module__", None) or "").split(".")[0] == "numpy" or isinstance(f, np.ufunc)

    def call_or_defer(*args, **kwargs):
        # a value known only when the graph runs among the arguments: `f` runs then, as eagerly
        if python_values.origin((f, *args, *kwargs.values())) is not None:
            return python_values.defer(f, *args, **kwargs)
        if numpy_function and any(isinstance(a, lists.TensorList) for a in (*args, *kwargs.values())):
            return lists.numpy_call(target, args, kwargs)  # a list built in a graph loop: as numpy takes a list
        return target(*args, **kwargs)
    return call_or_defer


# the frames of `call`'s wrapper, through which converted code reaches its callee: an error raised
# beyond them is the callee's (operators/control_flow.py `_raised_by_user`)
PASS_THROUGH = frozenset(c for c in call.__code__.co_consts if isinstance(c, types.CodeType))


def _converted_code(fn):
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code is not None and code.co_filename.startswith("<autograph_lite")


def _target(f):
    replaced = _replacement(_REPLACED, f)
    if replaced is not None:
        return replaced
    if current_graph() is not None:
        replaced = _replacement(_REPLACED_WHILE_TRACING, f)
        if replaced is not None:
            return replaced
        if generator_draws.is_draw_method(f):
            return generator_draws.method_call(f)
        if any(f is g for g in _GLOBAL_STATE_FUNCTIONS):
            return generator_draws.method_call(getattr(np.random.mtrand._rand, f.__name__))
        if f is np.random.default_rng or (isinstance(f, type) and issubclass(f, _GENERATOR_TYPES)):
            return generator_draws.made_generator(f)
        device = devices.random_function_device(f)
        if device is not None:  # a device's global random functions: cupy.random.rand, ...
            if isinstance(f, type) or f.__name__ == "default_rng":
                return generator_draws.made_generator(f)
            return generator_draws.method_call(f, device.xp.random)
        if getattr(f, "__objclass__", None) is np.ndarray and callable(f):  # np.ndarray.copy(x)
            return _unbound_array_method(f)
    if isinstance(f, type) and issubclass(f, np.generic):
        return py_builtins.numpy_scalar_type(f)
    if isinstance(f, types.BuiltinMethodType) and type(f.__self__) in _CONTAINERS:
        return _container_method(f)
    if isinstance(f, types.MethodType):
        converted = _convert(f.__func__)
        return f if converted is f.__func__ else types.MethodType(converted, f.__self__)
    if isinstance(f, types.FunctionType):
        return _convert(f)
    call_method = getattr(type(f), "__call__", None)
    if isinstance(call_method, types.FunctionType) and not isinstance(f, type):
        converted = _convert(call_method)
        return f if converted is call_method else types.MethodType(converted, f)
    return f


def _unbound_array_method(method):
    """ndarray's method called through the class (`np.ndarray.copy(x)`): on a tensor, the tensor's
    method of that name, as numpy's call is the array's own method."""
    def call(self, *args, **kwargs):
        if isinstance(self, Tensor):
            return getattr(self, method.__name__)(*args, **kwargs)
        return method(self, *args, **kwargs)
    return call


_CONTAINERS = {list: {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"},
               dict: {"update", "pop", "popitem", "setdefault", "clear"},
               set: {"add", "update", "discard", "remove", "pop", "clear", "difference_update",
                     "intersection_update", "symmetric_difference_update"}}


def _container_method(method):
    """A mutating list/dict/set method called inside a branch or loop body the graph decides
    runs once, while tracing: refused there (the converter rewrites those it can carry)."""
    if method.__name__ not in _CONTAINERS[type(method.__self__)]:
        return method
    graph = current_graph()
    if graph is None or graph.parent is None:
        return method
    kind = type(method.__self__).__name__
    raise ConversionError(
        f"{kind}.{method.__name__}() inside an `if`/`while`/`for` on a tensor (at {user_location(2)}) would "
        f"change the {kind} once, while tracing, not each time the graph runs the block. Keep the {kind} "
        f"in a local variable of the function (lists: append, extend, pop() or pop(0) as a statement), "
        f"or change it outside the block")


def _convert(fn):
    if getattr(fn, "__ag_do_not_convert__", False) or is_library(fn):
        return fn
    if fn.__code__.co_filename.startswith("<autograph_lite"):
        return fn  # made by converted code: converted with its enclosing function
    from ..loader import convert
    return _recursion_guarded(fn, convert(fn))


def _recursion_guarded(original, converted):
    @functools.wraps(converted)
    def guarded(*args, **kwargs):
        depths = _depth.__dict__.setdefault("by_function", {})
        key = original.__code__
        depths[key] = depths.get(key, 0) + 1
        try:
            if depths[key] > MAX_RECURSION:
                raise ConversionError(
                    f"{original.__qualname__} calls itself more than {MAX_RECURSION} levels deep while "
                    f"tracing (at {user_location()}); recursion whose depth depends on a tensor cannot "
                    f"become a graph: rewrite it as a loop")
            # while a trace runs: a copy seeing the outside state as the trace must (outside_state.py)
            return outside_state.function_for(original, converted)(*args, **kwargs)
        finally:
            depths[key] -= 1
    return guarded
