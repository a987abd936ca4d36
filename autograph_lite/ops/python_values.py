"""Values only a Python run gives: what a tensor loop run as Python leaves, and what is computed from it.

A tensor loop whose body cannot be traced with static ranks (operators/python_loops.py) is one
`PythonLoop` node: when the graph runs, it runs the loop's converted code on the run's values, each
iteration eager numpy, and gives each variable's final value as it is (any type, rank, box or
structure). The graph holds such a value as an opaque tensor (dtype object, shape ()), and converted
code sees it as a `PythonValue`. What the code does with one is deferred to the run, as eager Python
would do it there: an operator, a method, an attribute, an item, a numpy function or an ag op on it is
a `DeferredCall` node calling that Python callable on the run's values (its result another PythonValue);
its truth (`if v:`, `while`, `not`) is a bool tensor (`PythonTruth`), so graph control flow can test
it; a tensor `if` merging one gives a PythonValue (ops/control_flow.py); a `for` over one is a loop
run as Python. What needs its value while tracing (unpacking it, iterating it in unrolled Python,
formatting it outside `print`, writing it into an array of the graph) is refused with `NeedsPython`,
which makes a tensor loop around the use run as Python too.

`Templates` is how a node that runs Python gets the run's values: it records what the Python code
reads (tensors, PythonValues, containers of them, closures over them) and rebuilds it for each run.
"""
import contextlib
import functools
import operator
import types

import numpy as np

from .. import nest
from ..errors import ConversionError, NeedsPython, user_location
from ..runtime import devices
from ..runtime.boxes import ARRAY, PYTHON, SCALAR, box_of
from ..runtime.graph import Tensor, current_graph
from ..runtime.opdef import PYTHON_CODE, STR, always
from . import core
from .core import define

OPAQUE = np.dtype(object)  # the dtype of a graph value that is any Python object
TRACE_ONLY = []  # types of values that exist only while tracing (operators/ adds its own: TensorList, Choice)


def _run_kernel(xp, code, label):
    return code.run


def _run_infer(*inputs, code, label):
    return [((), OPAQUE)] * code.outputs


# A node running Python code when the graph runs (a loop run as Python, a call on PythonValues). It
# is stateful: the code may print, draw, raise or change its values in place, so it is never dropped,
# merged or moved
PYTHON_LOOP = define("PythonLoop", _run_kernel, _run_infer, stateful=True, value_errors=always,
                     attrs={"code": PYTHON_CODE, "label": STR}, printed_attrs=("label",))
PYTHON_CALL = define("DeferredCall", _run_kernel, _run_infer, stateful=True, value_errors=always,
                     attrs={"code": PYTHON_CODE, "label": STR}, printed_attrs=("label",))


def _truth_kernel(xp):
    return lambda value: np.bool_(bool(value))  # eager's `if v:`: ValueError for an array of several items


PYTHON_TRUTH = define("PythonTruth", _truth_kernel, lambda value: [((), np.dtype(bool))], value_errors=always)


class PythonValue:
    """A value known only when the graph runs, as Python (see the module docstring)."""

    __slots__ = ("tensor", "label", "location")

    def __init__(self, tensor, label, location):
        self.tensor, self.label, self.location = tensor, label, location

    def __repr__(self):
        return f"<{self.label}: a Python value from the loop at {self.location}>"

    def _refuse(self, *args, **kwargs):
        raise NeedsPython(
            f"{self.label} comes from the loop on a tensor at {self.location}, which runs as Python when the "
            f"graph runs (its variables' ranks are not the same on every iteration), so its value is known "
            f"only then; operations on it are run then too, but this one needs it while tracing (at "
            f"{user_location(2)})")

    def __getattr__(self, name):
        if name.startswith("_"):  # Python's and the compiler's own probes (`__array_interface__`)
            raise AttributeError(name)
        return defer(getattr, self, name)

    def __call__(self, *args, **kwargs):
        return defer(self, *args, **kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return defer(getattr(ufunc, method), *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return defer(func, *args, **kwargs)


def _deferring(fn):
    return lambda *args: defer(fn, *args)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift", "lt", "le", "gt", "ge", "eq", "ne", "getitem", "neg", "pos", "abs", "invert"):
    setattr(PythonValue, f"__{_name}__", _deferring(getattr(operator, f"__{_name}__")))
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
    _op = getattr(operator, f"__{_name}__")
    setattr(PythonValue, f"__r{_name}__", lambda x, y, op=_op: defer(op, y, x))
    setattr(PythonValue, f"__i{_name}__", _deferring(getattr(operator, f"__i{_name}__")))
setattr(PythonValue, "__divmod__", _deferring(divmod))
setattr(PythonValue, "__rdivmod__", lambda x, y: defer(divmod, y, x))
# what Python needs an answer to now (a bool, an int, text, an iterator): refused
for _name in ("__bool__", "__len__", "__iter__", "__contains__", "__str__", "__format__", "__float__", "__int__",
              "__index__", "__complex__", "__setitem__", "__delitem__", "__array__"):
    setattr(PythonValue, _name, PythonValue._refuse)
PythonValue.__hash__ = object.__hash__


def origin(values):
    """The first PythonValue among `values` (nested in lists, tuples and dicts too), or None."""
    for v in values:
        if type(v) is PythonValue:
            return v
        if type(v) in (list, tuple, dict, slice):
            found = origin(v.values() if type(v) is dict else (v.start, v.stop, v.step) if type(v) is slice else v)
            if found is not None:
                return found
    return None


def defer(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` called when the graph runs, on the run's values: a PythonValue."""
    source = origin((fn, *args, *kwargs.values()))
    label = _describe_call(fn, args, source)
    where = source.location if source is not None else user_location()
    return run_python(PYTHON_CALL, Deferred(fn, args, kwargs), label, [label], where)[0]


def _describe_call(fn, args, source):
    """`v.shape`, `v.sum()`, `add(v, ...)`: the call in words, for the node and for errors."""
    if source is None:
        return "a value"
    if fn is getattr and len(args) == 2 and isinstance(args[1], str):
        return f"{_plain(args[0])}.{args[1]}"
    if type(fn) is PythonValue:
        return f"{_plain(fn)}()"
    if fn is core.eager_apply:  # an ag op on one (core.apply)
        fn, args = args[0], args[1]
    name = getattr(fn, "__name__", None) or getattr(fn, "name", "a call")
    return f"{name}({', '.join(_plain(a) for a in args[:2])}{', ...' if len(args) > 2 else ''})"


def _plain(value):
    if type(value) is PythonValue:
        return value.label.strip("'")
    return "..." if isinstance(value, Tensor) else repr(value) if len(repr(value)) < 20 else "..."


def truth(value):
    """The truth of PythonValue `value` as a bool tensor (computed when the graph runs, as eager's `bool`)."""
    graph = current_graph()
    node = graph.add_node(PYTHON_TRUTH, [graph.capture(value.tensor)], {}, [((), np.dtype(bool))],
                          location=user_location(2))
    return node.outputs[0]


def as_python(value, location):
    """`value` (a tensor, a Python value) as a PythonValue: a tensor `if` merges it with one."""
    if type(value) is PythonValue:
        return value
    return run_python(PYTHON_CALL, Deferred(_same, (value,), {}), "a value", ["a value"], location)[0]


def _same(value):
    return value


core.PYTHON_VALUE[:] = [PythonValue, defer]  # ag ops on a PythonValue are deferred to the run (core.apply)


def run_python(op, code, label, labels, location):
    """One node of `op` (PythonLoop or DeferredCall) running `code` (a Templates) when the graph runs,
    at the user's current line; its outputs as PythonValues named by `labels`, from `location`."""
    graph = current_graph()
    inputs = [graph.capture(t) for t in code.inputs]
    node = graph.add_node(op, inputs, {"code": code, "label": label}, [((), OPAQUE)] * code.outputs,
                          location=user_location())
    return [PythonValue(t, name, location) for t, name in zip(node.outputs, labels)]


class CannotRun(Exception):
    """Why Python code cannot run when the graph runs (it reads what exists only while tracing)."""


class Templates:
    """What Python code reads, rebuilt for each run: `inputs` are the trace's tensors whose run-time
    values replace them (the node's inputs), read from values, containers, closure cells of the
    functions it calls (and of the functions those cells hold) and the globals they name. Arrays
    made while tracing are copied for each run; tensors' arrays are given read-only (a write to one
    would reach values the graph shares: it raises), as host values (the code is numpy code);
    PythonValues' objects as they are."""

    outputs = 1

    def __init__(self):
        self.inputs, self._index, self._boxes = [], {}, []
        self._functions, self._cells = {}, {}

    def template(self, value):
        if type(value) is PythonValue:
            value = value.tensor
        if isinstance(value, Tensor):
            return self._input(value)
        if isinstance(value, tuple(TRACE_ONLY)):
            raise CannotRun(f"it reads {type(value).__name__} {value!r}, which exists only while tracing")
        if type(value) in (tuple, list, dict) or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
            leaves, treedef = nest.flatten_with_treedef(value)
            return _Rebuilt(treedef, [self.template(v) for v in leaves])
        if type(value) is slice and holds_symbols((value.start, value.stop, value.step)):
            return _Slice(self.template((value.start, value.stop, value.step)))
        if type(value) is np.ndarray:
            return _Fresh(value)  # made while tracing: each run starts from its own copy, as each eager call
        if type(value) is types.FunctionType:
            return self._function(value)
        if type(value) is types.MethodType and isinstance(value.__self__, (Tensor, PythonValue)):
            # `x.reshape` of a tensor: the run's array's own method, as eagerly
            return _Attribute(self.template(value.__self__), _method_name(value))
        if type(value) is functools.partial:
            return _Partial(self.template(value.func), self.template(value.args), self.template(value.keywords))
        return value

    def _input(self, t):
        k = self._index.get(id(t))
        if k is None:
            if t.python_box is not None:
                raise CannotRun(f"it reads {t!r}, a Python number or a numpy value by the path a tensor `if` took")
            k = self._index[id(t)] = len(self.inputs)
            self.inputs.append(t)
            # a PythonValue's object is given as it is (eager's own object, which eager may update in place)
            self._boxes.append(_AS_IT_IS if t.dtype == OPAQUE else box_of(t) if t.shape == () else None)
        return _Input(k)

    def _function(self, fn):
        found = self._functions.get(id(fn))
        if found is not None:
            return found
        template = self._functions[id(fn)] = _Function(fn)
        for cell in fn.__closure__ or ():
            known = self._cells.get(id(cell))
            if known is None:
                try:
                    contents = self.template(cell.cell_contents)
                except ValueError:  # not assigned yet: reading it raises NameError, as eagerly
                    contents = _EMPTY
                known = self._cells[id(cell)] = _Cell(cell, contents)
            template.cells.append(known)
        for name in code_names(fn.__code__):
            value = fn.__globals__.get(name, _EMPTY)
            if holds_symbols(value):  # a global the trace holds a tensor in (outside state read as an input)
                template.globals[name] = self.template(value)
        return template

    def given(self, values):
        """The run's `values` as the code is given them, and {id(read-only view): the array it views}."""
        views = {}
        return [v if box is _AS_IT_IS else _read_only(_boxed(devices.to_host(v), box), views)
                for v, box in zip(values, self._boxes)], views


def holds_symbols(value, depth=0):
    if isinstance(value, (Tensor, PythonValue)):
        return True
    if depth > 8 or type(value) not in (tuple, list, dict):
        return False
    return any(holds_symbols(v, depth + 1) for v in (value.values() if type(value) is dict else value))


class Deferred(Templates):
    """A call `fn(*args, **kwargs)` made when the graph runs (`defer`)."""

    def __init__(self, fn, args, kwargs):
        super().__init__()
        try:
            self.call = self.template((fn, args, kwargs))
        except CannotRun as e:
            raise NeedsPython(f"a call on a value known only when the graph runs cannot be deferred to it: {e} "
                              f"(at {user_location(3)})") from None

    def run(self, *values):
        given, views = self.given(values)
        fn, args, kwargs = build(self.call, given, {})
        with read_only_writes(f"{getattr(fn, '__name__', 'a call')}() on a value from a loop run as Python"):
            return unviewed(fn(*args, **kwargs), views)


@contextlib.contextmanager
def read_only_writes(what):
    """A write to an array of the graph given read-only (`Templates.given`), said clearly."""
    try:
        yield
    except ValueError as e:
        if "read-only" not in str(e):
            raise
        raise ConversionError(
            f"{what} writes in place, when the graph runs, to an array of the graph or a view of one ({e}); "
            f"eagerly that would change the array other names hold too, which the compiled function cannot: "
            f"write to a copy (`a = a.copy()`)") from e


class _Input:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


class _Fresh:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array.copy()


class _Rebuilt:
    __slots__ = ("treedef", "leaves")

    def __init__(self, treedef, leaves):
        self.treedef, self.leaves = treedef, leaves


class _Attribute:
    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner, self.name = owner, name


class _Slice:
    __slots__ = ("bounds",)

    def __init__(self, bounds):
        self.bounds = bounds


class _Partial:
    __slots__ = ("func", "args", "keywords")

    def __init__(self, func, args, keywords):
        self.func, self.args, self.keywords = func, args, keywords


def _method_name(method):
    """The attribute name under which `method` (bound to a Tensor) is found on its class."""
    for cls in type(method.__self__).__mro__:
        for name, attr in vars(cls).items():
            if attr is method.__func__:
                return name
    raise CannotRun(f"it calls {method!r}, a method of a tensor with no ndarray counterpart")


class _Cell:
    __slots__ = ("cell", "contents")

    def __init__(self, cell, contents):
        self.cell, self.contents = cell, contents


class _Function:
    __slots__ = ("fn", "cells", "globals")

    def __init__(self, fn):
        self.fn, self.cells, self.globals = fn, [], {}


_EMPTY = object()
_AS_IT_IS = "as it is"  # how `given` passes a PythonValue's object


def build(template, given, memo):
    """The run's value for `template`: inputs replaced, containers and cells new, functions rebuilt."""
    if isinstance(template, _Input):
        return given[template.k]
    if isinstance(template, _Fresh):
        return template.array.copy()
    if isinstance(template, _Rebuilt):
        return template.treedef.unflatten([build(v, given, memo) for v in template.leaves])
    if isinstance(template, _Function):
        return _build_function(template, given, memo)
    if isinstance(template, _Attribute):
        return getattr(build(template.owner, given, memo), template.name)
    if isinstance(template, _Slice):
        return slice(*build(template.bounds, given, memo))
    if isinstance(template, _Partial):
        return functools.partial(build(template.func, given, memo), *build(template.args, given, memo),
                                 **build(template.keywords, given, memo))
    return template


def _build_function(template, given, memo):
    fn = memo.get(id(template))
    if fn is not None:
        return fn
    cells = []
    for cell in template.cells:
        new = memo.get(id(cell))
        if new is None:
            new = memo[id(cell)] = types.CellType()
            cells.append((new, cell.contents))
        else:
            cells.append((new, _EMPTY))  # its contents come from the function that made it
    original = template.fn
    globals_ = dict(original.__globals__) if template.globals else original.__globals__
    fn = memo[id(template)] = types.FunctionType(original.__code__, globals_, original.__name__,
                                                 original.__defaults__, tuple(new for new, _ in cells))
    fn.__kwdefaults__, fn.__qualname__ = original.__kwdefaults__, original.__qualname__
    fn.__dict__.update(original.__dict__)
    for new, contents in cells:
        if contents is not _EMPTY:
            new.cell_contents = build(contents, given, memo)
    for name, held in template.globals.items():
        globals_[name] = build(held, given, memo)
    return fn


def _boxed(value, box):
    """A 0-d run-time value in the box eager holds it in (runtime/boxes.py)."""
    if box == SCALAR and type(value) is np.ndarray:
        return value[()]
    if box == ARRAY and isinstance(value, np.generic):
        return np.asarray(value)
    if box == PYTHON and isinstance(value, np.generic):
        return value.item()
    return value


def _read_only(value, views):
    """`value`, an ndarray as a read-only view of it (`views` remembers which it views)."""
    if type(value) is np.ndarray and value.flags.writeable:
        view = value.view()
        view.flags.writeable = False
        views[id(view)] = value
        return view
    return value


def unviewed(value, views):
    """`value` with the read-only views `given` made back as the arrays they view (eager's objects)."""
    if not views:
        return value
    leaves = nest.flatten(value)
    if not any(id(v) in views for v in leaves):
        return value
    return nest.pack(value, [views.get(id(v), v) for v in leaves])


def code_names(code, _cache={}):
    """The names compiled `code` and the code nested in it read as globals or attributes
    (`co_names`), cached per code object."""
    names = _cache.get(code)
    if names is None:
        found = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                found |= code_names(c)
        names = _cache[code] = frozenset(found)
    return names
