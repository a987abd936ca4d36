"""The effects of a trace on the caller's containers and objects: snapshot, check and replay.

The comment block below says what is replayed and what is refused.
"""
import functools
import reprlib
import types

import numpy as np

from . import nest
from .errors import ConversionError, user_location
from .runtime import memory
from .runtime.graph import Tensor
from .tensor_spec import _is_array_input


# --- effects of a trace on the caller's containers and objects ------------------------
#
# Tracing runs the Python function once; eagerly, every call runs its Python side effects.
# `_Effects.snapshot` records the mutable Python state reachable from the arguments before
# a trace, `_Effects.finish` compares it after the trace and turns each change into a step
# the ConcreteFunction replays after every call, or raises a ConversionError.
#
# Lists and dicts passed as arguments are keyed by their contents and the trace works on
# copies of them, so a trace's effect on them is fixed by the cache key: their final
# contents are replayed into the caller's containers (items that are tensors become extra
# graph outputs, items the arguments held are found again by path). Objects are keyed by
# identity, not by their state, so a change of a Python value in their attributes (a
# counter) could not be repeated; only attributes (and items of containers they hold) set
# to tensors or to argument values are replayed, anything else is an error. The caller's
# objects are restored after every trace, so no symbolic Tensor is left in them.

_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.generic, range, slice)


class _ReplayError(Exception):
    """A value a trace left in the caller's state that a later call could not produce again."""


class _Effects:
    """The argument state a trace may change, and what each call must redo (see above)."""

    def __init__(self, function, graph, values, traced, roots=()):
        self._function, self._graph = function, graph
        self._origin = {}     # id(traced object) -> (path, traced object): found again in the arguments
        self._copies = []     # (path, traced copy, its items before): list/dict arguments
        self._direct = []     # (path, caller's object, its state before): objects, sets, containers they hold
        self._seen = set()
        self._rebinds = []    # (path, slot, before, after, what): closure variables and module globals the trace rebound
        self.outside = None   # the trace's outside_state.Reads: which arrays it read from attributes
        for i, (name, value, view) in enumerate(zip(function._param_names, values, traced)):
            self._walk(value, view, ((i, name),), False)
        for i, (name, obj) in enumerate(roots, len(values)):  # a bound method's self: paths past the arguments
            self._walk(obj, obj, ((i, name),), False)
        # list arguments a staged if/while/for must not change (operators/control_flow.py checks)
        graph.argument_lists = {id(view): (view, _label(path)) for path, view, _ in self._copies
                                if type(view) is list}
        # objects among them (and `self`) whose attributes a staged if/while/for must not set through a
        # function it calls (operators/control_flow.py `_AttributesKept`)
        graph.argument_objects = [(view, _label(path)) for path, view, _ in self._direct
                                  if type(view) not in (list, dict, set)]

    # path: a tuple of (step, label); the first step is the argument index, then ("item", key)
    # or ("attr", name); labels make the words of an error message.
    def _walk(self, value, view, path, owned):
        if isinstance(view, Tensor):
            self._origin.setdefault(id(view), (path, view))
            return
        t = type(view)
        if t in _IMMUTABLE or _is_array_input(view) or id(view) in self._seen:
            return
        self._seen.add(id(view))
        self._origin.setdefault(id(view), (path, view))
        if (t is list or t is dict) and not owned and view is not value and type(value) is t:
            self._copies.append((path, view, list(view) if t is list else list(view.items())))
            items = enumerate(view) if t is list else view.items()
            for k, v in items:
                self._walk(value[k], v, path + ((("item", k), f"[{k!r}]"),), False)
        elif t is list or t is dict or t is set:
            self._direct.append((path, view, list(view) if t is not dict else list(view.items())))
            if t is not set:
                for k, v in (enumerate(view) if t is list else view.items()):
                    self._walk(v, v, path + ((("item", k), f"[{k!r}]"),), True)
        elif t is tuple or nest.is_namedtuple(view):
            if type(value) is t and len(value) == len(view):
                for k, (v, w) in enumerate(zip(value, view)):
                    self._walk(v, w, path + ((("item", k), f"[{k}]"),), owned)
        elif _has_state(view) and not owned:
            state = vars(view)
            self._direct.append((path, view, dict(state)))
            for k, v in state.items():
                if type(v) in (list, dict, set):
                    self._walk(v, v, path + ((("attr", k), f".{k}"),), True)

    def adopt(self, index, label, obj, before):
        """Take on an object the trace reached outside the arguments and `roots` (a global's, an
        attribute's): its attribute writes are replayed like an argument object's. A call passes it
        as `values[index]`."""
        self._direct.append((((index, label),), obj, dict(before)))
        self._origin.setdefault(id(obj), (((index, label),), obj))

    def adopt_cell(self, index, label, cell, before, now):
        """Take on a closure variable the trace rebound (`nonlocal state; state = state + x`): set
        again after each call, or refused as an object's attribute would be. A call passes the cell
        as `values[index]`."""
        self._rebinds.append((((index, label),), ("attr", "cell_contents"), before, now,
                              f"closure variable {label!r}"))

    def adopt_global(self, index, name, globals_, before, now, what=None):
        """A module global the trace rebound (`global total; total = total + x`, `cfg.total = ...`):
        set again after each call, or refused. A call passes the module's globals as `values[index]`;
        `what` names it in an error (`global 'total'`)."""
        self._rebinds.append((((index, name),), ("item", name), before, now, what or f"global {name!r}"))

    def restore(self):
        """Put the caller's objects and containers back as they were before the trace."""
        for _, obj, before in self._direct:
            t = type(obj)
            if t is list:
                obj[:] = before
            elif t is dict or t is set:
                obj.clear()
                obj.update(before)
            else:
                state = vars(obj)
                state.clear()
                state.update(before)

    def finish(self):
        """The replay steps of this trace (restoring the caller's objects), or a ConversionError."""
        try:
            return self._steps()
        finally:
            self.restore()

    def _steps(self):
        steps, problems = [], []
        for path, view, before in self._copies:
            after = list(view) if type(view) is list else list(view.items())
            if len(after) == len(before) and (all(a is b for a, b in zip(after, before)) if type(view) is list else
                                              all(a[0] == b[0] and a[1] is b[1] for a, b in zip(after, before))):
                continue
            try:
                if type(view) is list:
                    steps.append(("contents", path, [self._recipe(v) for v in after]))
                else:
                    steps.append(("contents", path, {k: self._recipe(v) for k, v in after}))
            except _ReplayError as e:
                problems.append(f"argument '{_label(path)}' (a {type(view).__name__}): {e}")
        for path, obj, before in self._direct:
            t = type(obj)
            if t is set:
                if obj != set(before) or len(obj) != len(before):
                    problems.append(f"argument '{_label(path)}' (a set): items added or removed")
                continue
            if t is list:
                after = list(enumerate(obj))
                if len(obj) != len(before):
                    problems.append(f"argument '{_label(path)}' (a list): items "
                                    f"{'appended or inserted' if len(obj) > len(before) else 'removed'}")
                    continue
                old, what = dict(enumerate(before)), "item"
            else:
                after = list((obj if t is dict else vars(obj)).items())
                old, what = dict(before), ("item" if t is dict else "attribute")
            for k, v in after:
                if k in old and old[k] is v or what == "attribute" and self._written_in_place(obj, k, v):
                    continue
                try:
                    steps.append(("set", path, (("item" if what == "item" else "attr"), k),
                                  self._recipe(v, old.get(k, _MISSING), f"{what} {k!r}")))
                except _ReplayError as e:
                    problems.append(f"argument '{_label(path)}': {e}")
            for k in old:
                if t is not list and k not in dict(after):
                    problems.append(f"argument '{_label(path)}': {what} {k!r} deleted")
        for path, slot, before, now, what in self._rebinds:
            try:
                steps.append(("set", path, slot, self._recipe(now, before, what)))
            except _ReplayError as e:
                problems.append(str(e))
        if problems:
            code = getattr(self._function.python_function, "__code__", None)
            where = f"{code.co_filename}:{code.co_firstlineno}" if code else user_location()
            raise ConversionError(
                f"{self._function.__name__} (defined at {where}) changes Python state of its arguments in a way a "
                f"compiled call cannot repeat: {'; '.join(problems)}. A compiled function runs Python side effects "
                f"only while tracing, and later calls with the same signature would not redo them; return the new "
                f"value instead (or keep it in an array argument updated in place)")
        return steps

    def _written_in_place(self, obj, name, value):
        """Whether `value`, set as `obj.name`, is the array read from `obj.name` written in place
        (`obj.t *= x`): the write-back updates that very array, which the attribute keeps, as eagerly."""
        return isinstance(value, Tensor) and self.outside is not None and any(
            memory.same_array(value, new, self._graph) and self.outside.stands_for(obj, name, root)
            for root, new in self._graph.write_backs.values())

    def _recipe(self, value, old=None, what=None):
        """How a call finds `value` again: ("path", ...) in the arguments, ("output", k), ("const", v).

        `what` (for objects' attributes and the containers they hold, whose Python state is
        not in the cache key) allows only tensors and argument values, not Python values."""
        if id(value) in self._origin and self._origin[id(value)][1] is value:
            return ("path", self._origin[id(value)][0])
        if isinstance(value, nest.SetOnSomeRuns):  # set by a tensor `if`/loop on some runs only
            return ("maybe", (self._recipe(value.pick), self._recipe(value.if_true, old, what)))
        if isinstance(value, Tensor):
            for root, new in self._graph.write_backs.values():  # an argument updated in place: the caller's array
                if memory.same_array(value, new, self._graph) and id(root) in self._origin:
                    return ("path", self._origin[id(root)][0])
            if value.stale is not None:
                value.stale.check_read(self._graph, f"is stored into an argument by {self._graph.name}")
            tensor = self._graph.capture(value)
            k = next((j for j, o in enumerate(self._graph.outputs) if o is tensor), None)
            if k is None:
                k = len(self._graph.outputs)
                self._graph.outputs.append(tensor)
            return ("output", k)
        if type(value) is tuple:
            return ("tuple", [self._recipe(v, None, what) for v in value])
        if what:
            raise _ReplayError(f"{what} changed {_short(old)} -> {_short(value)}")
        if type(value) in _IMMUTABLE:
            return ("const", value)
        raise _ReplayError(f"a new {type(value).__name__} was stored, which a compiled call cannot create "
                           f"anew on each call")


_MISSING = type("_Missing", (), {"__repr__": lambda self: "<unset>"})()


def _short(value):
    return "<unset>" if value is _MISSING else reprlib.repr(value)


def _has_state(obj):
    """An object whose `__dict__` a trace may change: not a module, class, function or our own."""
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                        types.MethodType, functools.partial)):
        return False
    module = type(obj).__module__ or ""
    return hasattr(obj, "__dict__") and not module.startswith("autograph_lite")


def _label(path):
    return path[0][1] + "".join(label for _, label in path[1:])


def _resolve_path(values, path):
    obj = values[path[0][0]]
    for (kind, k), _ in path[1:]:
        obj = obj[k] if kind == "item" else getattr(obj, k)
    return obj


def _resolve(recipe, values, results):
    kind, arg = recipe
    if kind == "output":
        return results[arg]
    if kind == "path":
        return _resolve_path(values, arg)
    if kind == "tuple":
        return tuple(_resolve(r, values, results) for r in arg)
    if kind == "maybe":
        return _resolve(arg[1], values, results) if _resolve(arg[0], values, results) else nest.UNSET
    return arg


def _replay(steps, values, results):
    """Redo a trace's effects on the caller's containers and objects after a call."""
    resolved = []
    for kind, path, *rest in steps:  # resolve everything first: paths see the arguments as passed
        target = _resolve_path(values, path)
        if kind == "contents":
            recipe = rest[0]
            new = [_resolve(r, values, results) for r in recipe] if type(recipe) is list else \
                {k: v for k, r in recipe.items() if (v := _resolve(r, values, results)) is not nest.UNSET}
            resolved.append((target, None, new))
        else:
            resolved.append((target, rest[0], _resolve(rest[1], values, results)))
    for target, slot, new in resolved:
        if new is nest.UNSET:  # left as it was, as on the eager runs that do not set it
            continue
        if slot is None:
            if type(target) is list:
                target[:] = new
            else:
                target.clear()
                target.update(new)
        elif slot[0] == "item":
            target[slot[1]] = new
        else:
            setattr(target, slot[1], new)
