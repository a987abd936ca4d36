"""Tensor loops run as Python when the graph runs.

A `while`/`for` on a tensor whose body cannot be traced with static ranks (a loop variable changes
rank, `np.zeros(np.arange(i))` needs a rank known only at run time: `NeedsPython`) is staged as one
`PythonLoop` node (ops/python_values.py). When the graph runs, the node calls the loop's converted
test and body, as the `while`/`for` statement's Python path does, on the run's values: each
iteration is eager numpy, printing, drawing and raising as eager code does. The converted functions
are rebuilt for each run with fresh closure cells holding the run's values where the trace held
tensors (and the contents the cells had when the loop was traced), so runs do not share state.

The loop's variables come out as `PythonValue`s: returned, printed or indexed with constant keys;
anything needing their type while tracing is refused (and makes a tensor loop around it run as
Python too). Arrays the loop is given are read-only to it: an in-place write to one (which eager
would make to the caller's array or a value the graph shares) raises when the graph runs. On a
device the loop runs on host copies of its values (its code is numpy code), and what it gives
stays on the host.
"""
import types

import numpy as np

from .. import nest
from ..errors import ConversionError, NeedsPython
from ..ops.python_values import PYTHON_LOOP, PythonValue
from ..runtime import devices
from ..runtime.boxes import ARRAY, PYTHON, SCALAR, box_of
from ..runtime.graph import Tensor, current_graph
from .lists import TensorList
from .logical import Choice
from .variables import DO_RETURN, RETURN_VALUE, Undefined


class _Cannot(Exception):
    """Why a loop cannot be run as Python (its original refusal stands)."""


def while_loop(test, body, state, names, first, location, extra, opts, error):
    """The `while` statement's variables after a PythonLoop node running it; `first` is its first
    test, traced already. Re-raises `error` (a NeedsPython) where the loop cannot run as Python."""
    return _stage("while", (test, body, first), state, names, location, extra, opts, error)


def for_loop(iterable, extra_test, body, state, names, location, extra, opts, error):
    """The `for` statement's variables after a PythonLoop node running it over tensor `iterable`."""
    if not isinstance(iterable, Tensor):
        raise error
    python_range = id(iterable) in iterable.graph.python_ranges
    return _stage("for", (iterable, extra_test, body, python_range), state, names, location, extra, opts, error)


def _stage(kind, parts, state, names, location, extra, opts, error):
    why = _why_not(extra, opts)
    try:
        if why:
            raise _Cannot(why)
        loop = PythonLoop(kind, parts, tuple(state), names, location)
    except _Cannot as e:
        raise NeedsPython(f"{error}; it cannot run as Python either: {e}") from error
    graph = current_graph()
    inputs = [graph.capture(t) for t in loop.inputs]
    node = graph.add_node(PYTHON_LOOP, inputs, {"loop": loop, "label": f"{kind} loop at {location}"},
                          [((), np.dtype(object))] * loop.outputs, location=location)
    return tuple(PythonValue(t, _LABELS.get(name, f"'{name}'"), location) for t, name in zip(node.outputs, names))


# the loop variables the converter adds, in words (the variables' own names are quoted)
_LABELS = {DO_RETURN: "whether a `return` inside it ran", RETURN_VALUE: "what a `return` inside it returns"}


def _why_not(extra, opts):
    if extra:
        return (f"it carries {', '.join(repr(n) for n in extra.names)} through closure cells, items or "
                f"attributes, which a loop run as Python cannot hand back")
    if (opts or {}).get("test_binds"):
        return "its condition binds names (`:=`)"
    return None


class PythonLoop:
    """A tensor loop's converted code and what it reads, rebuilt per run (`run`).

    `inputs`: the trace's tensors whose run-time values replace them (the node's inputs), read
    from the loop's variables, the closure cells of its test and body (and of the functions those
    cells hold) and the globals they name."""

    def __init__(self, kind, parts, state, names, location):
        self.kind, self.location = kind, location
        self.inputs, self._index, self._boxes = [], {}, []
        self._functions, self._cells = {}, {}
        self.parts = tuple(self._template(p) for p in parts)
        self.state = self._template(state)
        self.outputs = len(names)

    def __repr__(self):
        return f"<PythonLoop: the {self.kind} loop at {self.location}>"

    # --- at the trace: templates of what the loop reads -------------------------------------

    def _template(self, value):
        if isinstance(value, PythonValue):
            value = value.tensor
        if isinstance(value, Tensor):
            return self._input(value)
        if isinstance(value, (TensorList, Choice)) or (
                not isinstance(value, Undefined) and type(value).__module__.startswith("autograph_lite.operators")
                and not callable(value)):
            raise _Cannot(f"it reads {type(value).__name__} {value!r}, which exists only while tracing")
        if type(value) in (tuple, list, dict) or (isinstance(value, tuple) and hasattr(type(value), "_fields")):
            leaves, treedef = nest.flatten_with_treedef(value)
            return _Rebuilt(treedef, [self._template(v) for v in leaves])
        if type(value) is np.ndarray:
            return _Fresh(value)  # made while tracing: each run starts from its own copy, as each eager call
        if type(value) is types.FunctionType:
            return self._function(value)
        return value

    def _input(self, t):
        k = self._index.get(id(t))
        if k is None:
            if t.python_box is not None:
                raise _Cannot(f"it reads {t!r}, a Python number or a numpy value by the path a tensor `if` took")
            k = self._index[id(t)] = len(self.inputs)
            self.inputs.append(t)
            self._boxes.append(box_of(t) if t.shape == () and t.dtype != np.dtype(object) else None)
        return _Input(k)

    def _function(self, fn):
        found = self._functions.get(id(fn))
        if found is not None:
            return found
        template = self._functions[id(fn)] = _Function(fn)
        cells = []
        for cell in fn.__closure__ or ():
            known = self._cells.get(id(cell))
            if known is None:
                try:
                    contents = self._template(cell.cell_contents)
                except ValueError:  # not assigned yet: reading it raises NameError, as eagerly
                    contents = _EMPTY
                known = self._cells[id(cell)] = _Cell(cell, contents)
            cells.append(known)
        template.cells = cells
        for name in _global_names(fn.__code__):
            value = fn.__globals__.get(name, _EMPTY)
            if isinstance(value, (Tensor, PythonValue)) or type(value) in (tuple, list, dict):
                held = self._template(value)
                if held is not value and not (isinstance(held, _Rebuilt) and not held.holds_inputs()):
                    template.globals[name] = held
        return template

    # --- when the graph runs ---------------------------------------------------------------

    def run(self, *values):
        views = {}  # id(read-only view) -> the array it views
        # on a device the loop still runs as numpy code: it is given host values (eager's run is numpy's)
        given = [_read_only(_boxed(devices.to_host(v), box), views) for v, box in zip(values, self._boxes)]
        memo = {}
        state = _build(self.state, given, memo)
        try:
            if self.kind == "while":
                test, body, more = (_build(p, given, memo) for p in self.parts)
                while more:
                    state = tuple(body(*state))
                    more = test(*state)
            else:
                iterable, extra_test, body, python_range = (_build(p, given, memo) for p in self.parts)
                for item in (iterable.tolist() if python_range else iterable):
                    if extra_test is not None and not extra_test(*state):
                        break
                    state = tuple(body(item, *state))
        except ValueError as e:
            if "read-only" in str(e):
                raise ConversionError(
                    f"the {self.kind} loop at {self.location}, run as Python when the graph runs (its variables' "
                    f"ranks change), writes in place to an array it was given ({e}); eagerly that would change "
                    f"the array other names hold too, which the compiled function cannot: write to a copy "
                    f"(`a = a.copy()` before the loop)") from e
            raise
        if views:
            state = tuple(_unviewed(s, views) for s in state)
        return state if len(state) != 1 else state[0]  # a node of one output gives the value itself


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

    def holds_inputs(self):
        return any(isinstance(v, (_Input, _Fresh, _Function)) or (isinstance(v, _Rebuilt) and v.holds_inputs())
                   for v in self.leaves)


class _Cell:
    __slots__ = ("cell", "contents")

    def __init__(self, cell, contents):
        self.cell, self.contents = cell, contents


class _Function:
    __slots__ = ("fn", "cells", "globals")

    def __init__(self, fn):
        self.fn, self.cells, self.globals = fn, [], {}


_EMPTY = object()


def _build(template, given, memo):
    """The run's value for `template`: inputs replaced, containers and cells new, functions rebuilt."""
    if isinstance(template, _Input):
        return given[template.k]
    if isinstance(template, _Fresh):
        return template.array.copy()
    if isinstance(template, _Rebuilt):
        return template.treedef.unflatten([_build(v, given, memo) for v in template.leaves])
    if isinstance(template, _Function):
        return _build_function(template, given, memo)
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
            cells.append((new, None))
    original = template.fn
    globals_ = original.__globals__
    if template.globals:
        globals_ = dict(globals_)
    fn = memo[id(template)] = types.FunctionType(original.__code__, globals_, original.__name__,
                                                 original.__defaults__, tuple(new for new, _ in cells))
    fn.__kwdefaults__, fn.__qualname__ = original.__kwdefaults__, original.__qualname__
    fn.__dict__.update(original.__dict__)
    for new, contents in cells:
        if contents is not None and contents is not _EMPTY:
            new.cell_contents = _build(contents, given, memo)
    for name, held in template.globals.items():
        globals_[name] = _build(held, given, memo)
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


def _unviewed(value, views):
    """`value` with the read-only views `run` made back as the arrays they view (eager's objects)."""
    leaves = nest.flatten(value)
    if not any(id(v) in views for v in leaves):
        return value
    return nest.pack(value, [views.get(id(v), v) for v in leaves])


def _global_names(code, _cache={}):
    names = _cache.get(code)
    if names is None:
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names |= _global_names(const)
        names = _cache[code] = frozenset(names)
    return names
