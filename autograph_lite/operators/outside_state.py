"""State a trace reads from outside its arguments: arrays become graph inputs, the rest guards.

Eagerly, a function sees its globals, closure cells and the attributes of the objects it is
given as they are at each call. A trace reads them once, so what it read must be read again
on every call (TorchDynamo's guards, `torch/_dynamo/guards.py`, work the same way):

- an array reached that way becomes a graph input (a Placeholder with an `outside` attr),
  fetched by the same path (`self.Ws[0]`, a global `G`) at each call, so rebinding it or
  changing it in place is seen; its type, shape and dtype are guarded;
- a Python or numpy scalar, string, None, function, class or object is guarded: by value,
  or by identity. A change retraces (and counts towards the RetracingWarning);
- lists, tuples and dicts are guarded by type and length, and their items as above.

Where the trace reads: every user function it runs (operators/call.py asks `function_for`
for a copy of it whose globals and cells hold the substitutes), and every attribute read on
an object reached from the roots (a thread-local `__getattribute__` hook on the object's
class, installed for the trace only). The roots are the arguments' leaves, a bound method's
`self` and those functions' globals and cells. Modules are not guarded. After the trace,
`Reads.finish` compiles the guards into one generated function, `OutsideState.read`, which
returns the arrays to feed (or None when a guard fails) in one pass.
"""
import contextlib
import functools
import keyword
import math
import random
import reprlib
import sys
import threading
import types

import numpy as np

from ..errors import ConversionError, user_location
from ..runtime import devices
from ..ops.python_values import code_names
from ..runtime.graph import Tensor

_local = threading.local()  # .reads: the Reads of the trace running on this thread

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)
_BY_VALUE = (range, slice, frozenset, np.dtype)
_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, type, types.MethodDescriptorType,
                types.WrapperDescriptorType, types.BuiltinMethodType)
MAX_ITEMS = 256  # a container with more items is guarded as one value when it holds scalars only
MAX_DEPTH = 8


def active():
    return getattr(_local, "reads", None)


def read_carried(base, kind, key):
    """An attribute or item that a tensor `if`/`while` carries, read as its start value: an array
    there is guarded and fed like any read, a Python value is not guarded (the block may overwrite
    it on every path; where it does not, the block's other rules apply)."""
    reads = getattr(_local, "reads", None)
    _local.reads = None
    try:
        value = getattr(base, key) if kind == "attr" else base[key]
    finally:
        _local.reads = reads
    if reads is not None and kind == "attr" and (type(value) is np.ndarray or type(value) in (list, tuple, dict)):
        return reads.attribute(base, key, value)
    return value


def function_for(original, converted):
    """The function a trace should run for a user function: `converted`, or a copy of it whose
    globals and closure cells hold what the trace must see (arrays as graph inputs)."""
    reads = getattr(_local, "reads", None)
    return converted if reads is None else reads.function(original, converted)


class Reads:
    """What one trace read from outside its arguments (see the module docstring)."""

    def __init__(self, graph, leaves, leaf_labels, bound_self):
        self.graph = graph
        self._seen = {}      # path -> (the value read, what the trace got instead)
        self._guards = {}    # path -> (kind, payload): insertion order is the order of checks
        self._labels = {}    # path -> its words (`self.Ws[0]`)
        self._inputs = []    # paths of the arrays fed as inputs, in placeholder order
        self._objects = {}   # id(object) -> its path (the first found)
        self._before = {}    # id(object) -> its attributes when found (what the trace did not set)
        self._keep = []      # everything indexed stays alive, so ids stay unique
        self._roots = []     # the constants the generated reader fetches roots from
        self._watched = []   # (path, object, its attributes before): objects the effects replay does not cover
        self._globals = {}   # id(globals dict) -> (dict, its copy for the trace, the substituted names)
        self._copies = []    # (path, the container, its copy with stand-ins, the copy's items)
        self._real = []      # (path, list or dict, its items): containers outside args and self, read as they are
        self._hooked = []
        self._unhooked = []  # (path, object): reads of its attributes cannot be seen (a builtin type's instance)
        self._swapped = []   # (object, name, its value, the stand-in put in its place during the trace)
        self._swapping = False  # set by swap_in: an unhooked object found later is swapped in when found
        self._subclass_items = []  # (path, list or dict subclass, its items when swapped in): writes refused
        self.adopted = []    # (label, object, its attributes before): writes the effects replay takes on
        self._module_labels = {}  # id(a module's globals) -> its name, for a module the trace writes into
        self._cells = {}     # id(closure cell) -> (its name, the cell, its value, the stand-in cell or None, stand-in)
        self.cell_writes = []  # (name, cell, its value before, the value the trace left): replayed
        self.global_writes = []  # (name, the module's globals, its value before or _MISSING, after): replayed
        self._random_before = _global_random_states()
        self._finished = False
        for j, (leaf, label) in enumerate(zip(leaves, leaf_labels)):
            if _has_attributes(leaf) or _unhookable(leaf):
                self._root((("leaf", j),), label, leaf, watch=False)
        if bound_self is not None and (_has_attributes(bound_self) or _unhookable(bound_self)):
            self._root((("self",),), "self", bound_self, watch=False, constant=bound_self)

    # --- during the trace ---------------------------------------------------------------

    @contextlib.contextmanager
    def recording(self):
        previous = getattr(_local, "reads", None)
        _local.reads = self
        try:
            yield self
        finally:
            _local.reads = previous
            self._swap_out()  # a trace that failed: the caller's values back
            if not self._finished:
                for _, obj, before in self._watched:
                    _restore_state(obj, before, _state(obj))
                for _, cell, before, _, _ in self._cells.values():
                    cell.cell_contents = before
                for globals_, _, names in self._globals.values():
                    for name, (before, _) in names.items():
                        if before is _MISSING:
                            globals_.pop(name, None)
                        elif globals_.get(name, _MISSING) is not before:
                            globals_[name] = before
            for cls in self._hooked:
                _unhook(cls)
            self._hooked.clear()

    def _root(self, path, label, value, watch, constant=None):
        self._labels[path] = label
        self._guards[path] = ("root", constant)
        self._seen[path] = (value, value)
        # the effects replay covers an argument's `__dict__`; state in slots only this check sees
        self._index_object(path, value, watch or not hasattr(value, "__dict__"))

    def _index_object(self, path, obj, watch):
        if id(obj) in self._objects:  # reached again (`STATE` and `STATE.scaled`'s self): indexed once,
            return                    # its state as first found
        self._objects[id(obj)] = path
        self._before.setdefault(id(obj), _state(obj) if not isinstance(obj, (list, dict)) else {})
        self._keep.append(obj)
        if watch:
            self._watched.append((path, obj, _state(obj)))
        cls = type(obj)
        if _unhookable(obj) or _container_subclass(obj):
            self._unhooked.append((path, obj))
            if self._swapping:  # found during the trace (through a global, a cell, an attribute)
                self._swap_in(path, obj)
        elif cls not in self._hooked and _hook(cls):
            self._hooked.append(cls)

    def attributes_now(self):
        """{id: its attributes} of the objects reached so far whose writes `finish` hands to the
        effects replay (through a global, a cell or another object)."""
        return {id(obj): _state(obj) for _, obj, _ in self._watched}

    def attributes_set_since(self, then):
        """(label, object, name, value before, value now) of each attribute set since `then`
        (`attributes_now()`) on those objects (one first reached since: from its first read);
        ABSENT for an attribute not there."""
        changes = []
        for path, obj, first in self._watched:
            before, now = then.get(id(obj), first), _state(obj)
            changes += [(self._labels[path], obj, name, before.get(name, _MISSING), now.get(name, _MISSING))
                        for name in sorted(set(before) | set(now), key=str)
                        if before.get(name, _MISSING) is not now.get(name, _MISSING)]
        return changes

    def stands_for(self, obj, name, tensor):
        """Whether `tensor` is the graph input the trace read `obj.name` as."""
        parent = self._objects.get(id(obj))
        seen = None if parent is None else self._seen.get(parent + (("attr", name),))
        return seen is not None and seen[1] is tensor

    def is_stand_in(self, obj, name, value):
        """Whether `value`, now `obj.name`, is the stand-in `swap_in` put there (not a write)."""
        return any(o is obj and k == ("attr", name) and s is value for o, k, _, s in self._swapped)

    def swap_in(self):
        """Objects whose attribute reads cannot be intercepted (`types.SimpleNamespace`): every
        attribute is read now, and stand-ins (Tensors for arrays) put in its place until `finish`.
        Called once the effects replay has taken its snapshot of the arguments; such an object the
        trace finds later is swapped in when found."""
        self._swapping = True
        for path, obj in self._unhooked:
            self._swap_in(path, obj)

    def _swap_in(self, path, obj):
        if isinstance(obj, (list, dict)):  # a list or dict subclass: its items (and its size) too
            self._guards[path + (("size", None),)] = ("size", len(obj))
            self._labels[path + (("size", None),)] = self._labels[path]
            items = list(dict.items(obj) if isinstance(obj, dict) else enumerate(obj))
            self._subclass_items.append((path, obj, items))
            for key, value in items:
                stand_in = self.see(path + (("item", key),), f"{self._labels[path]}[{key!r}]", value)
                if stand_in is not value:
                    (dict.__setitem__ if isinstance(obj, dict) else list.__setitem__)(obj, key, stand_in)
                    self._swapped.append((obj, ("item", key), value, stand_in))
            if not isinstance(getattr(obj, "__dict__", None), dict):
                return
        store = vars(obj)
        for name, value in list(store.items()):
            if name[:2] == "__":
                continue
            stand_in = self.see(path + (("attr", name),), self._labels[path] + _attr_label(name), value)
            if stand_in is not value:
                store[name] = stand_in
                self._swapped.append((obj, ("attr", name), value, stand_in))

    def _swap_out(self):
        for obj, (kind, key), value, stand_in in self._swapped:
            if kind == "attr" and vars(obj).get(key, _MISSING) is stand_in:  # not set by the trace: put back
                vars(obj)[key] = value
            elif kind == "item" and isinstance(obj, dict) and dict.get(obj, key, _MISSING) is stand_in:
                dict.__setitem__(obj, key, value)
            elif kind == "item" and isinstance(obj, list) and key < len(obj) and list.__getitem__(obj, key) is stand_in:
                list.__setitem__(obj, key, value)
        self._swapped.clear()

    def attribute(self, obj, name, value):
        """An attribute read on an object: the value the trace sees (a Tensor for an array)."""
        parent = self._objects.get(id(obj))
        if parent is not None and name == "__dict__" and type(value) is dict and _read_by_converted_code():
            # `self.__dict__['a']`, `vars(self)`: a copy holding the stand-ins, its items guarded; what the
            # trace writes into it goes where a write to the attribute would (`finish`)
            return self.see(parent + (("attr", name),), self._labels[parent] + ".__dict__", value)
        if parent is None or name[:2] == "__":
            return value
        before = self._before.get(id(obj), {})
        if (before.get(name, _MISSING) is not value if name in before
                else name in (getattr(obj, "__dict__", None) or {})):
            return value  # set by the trace itself: its own value, not state from outside
        return self.see(parent + (("attr", name),), self._labels[parent] + _attr_label(name), value)

    def missing(self, obj, name):
        parent = self._objects.get(id(obj))
        if parent is not None and name[:2] != "__":
            path = parent + (("absent", name),)
            self._guards.setdefault(path, ("absent", name))
            self._labels.setdefault(path, self._labels[parent] + _attr_label(name))

    def see(self, path, label, value, depth=0):
        """Guard `value`, read at `path`; what the trace should see in its place."""
        seen = self._seen.get(path)
        if seen is not None:
            # the same value again gets the same stand-in; another one was set by the trace itself
            return seen[1] if seen[0] is value else value
        self._labels[path] = label
        self._keep.append(value)
        stand_in = value
        t = type(value)
        if t is types.ModuleType and _user_module(value):
            # a module of the user's (`import cfg`): its attributes are read each call, as globals are
            self._guards[path] = ("module" if path[0][0] == "global" else "identity", value)
            self._seen[path] = (value, _ModuleView(self, value))
            return self._seen[path][1]
        if isinstance(value, Tensor) or (t is types.ModuleType and path[0][0] != "global"):
            self._seen[path] = (value, value)
            return value
        if t is types.ModuleType:  # a module global (`np`): checked in C by the fast path, see module_guards
            self._guards[path] = ("module", value)
            self._seen[path] = (value, value)
            return value
        if t is np.ndarray or devices.device_of(value) is not None:  # a device's array (cupy's) too
            self._guards[path] = ("array", (t, value.shape, value.dtype))
            stand_in = self._input(path, label, value)
        elif isinstance(value, _SCALARS) or isinstance(value, _BY_VALUE):
            self._guards[path] = ("value", value)
        elif t is types.BuiltinMethodType and not isinstance(value.__self__, (types.ModuleType, type(None))):
            # a builtin type's method bound to an object (`R.random` of a random.Random): a new object
            # on each read, the same method while it is bound to the same object under the same name
            self._guards[path] = ("builtin method", (value.__self__, value.__name__))
        elif t is types.MethodType:
            self._guards[path] = ("method", (value.__func__, value.__self__))
            # the object it is bound to (`fwd = model.forward`): its attributes read as any object's
            self.see(path + (("attr", "__self__"),), label + ".__self__", value.__self__, depth)
        elif t in (list, tuple, dict) or (isinstance(value, tuple) and hasattr(t, "_fields")):
            stand_in = self._container(path, label, value, depth)
        elif t is functools.partial:  # what it holds (`partial(np.multiply, W)`) read as any value
            self._guards[path] = ("identity", value)
            parts = [self.see(path + (("attr", part),), f"{label}.{part}", getattr(value, part), depth + 1)
                     for part in ("func", "args", "keywords")]
            if any(a is not getattr(value, b) for a, b in zip(parts, ("func", "args", "keywords"))):
                stand_in = functools.partial(parts[0], *parts[1], **parts[2])
        elif isinstance(value, _BY_IDENTITY) or not (_has_attributes(value) or _unhookable(value)
                                                     or _container_subclass(value)):
            self._guards[path] = ("identity", value)
        else:
            self._guards[path] = ("identity", value)
            self._index_object(path, value, watch=True)
        self._seen[path] = (value, stand_in)
        return stand_in

    def _container(self, path, label, value, depth):
        items = list(value.items()) if type(value) is dict else list(enumerate(value))
        if len(items) > MAX_ITEMS or depth >= MAX_DEPTH:
            if all(type(v) in _SCALARS[:-1] for _, v in items):
                self._guards[path] = ("equal", (type(value), value if type(value) is tuple else
                                                type(value)(value), [type(v) for _, v in items]))
                return value
            raise ConversionError(
                f"{label} (a {type(value).__name__} of {len(items)} items) is read by the compiled function at "
                f"{user_location()}; a compiled call reads outside state again on every call, and a container this "
                f"large or deep is not guarded item by item: pass it as an argument")
        self._guards[path] = ("length", (type(value), len(items)))
        stand_ins = [(k, self.see(path + (("item", k),), f"{label}[{k!r}]", v, depth + 1)) for k, v in items]
        if all(s is v for (_, s), (_, v) in zip(stand_ins, items)):
            if type(value) is not tuple:
                self._index_object(path, value, watch=False)
                if path[0][0] not in ("leaf", "self"):  # the effects replay does not cover it: checked here
                    self._real.append((path, value, items))
            return value
        if type(value) is dict:
            copy = {k: s for k, s in stand_ins}
        elif type(value) is list:
            copy = [s for _, s in stand_ins]
        else:
            copy = type(value)(*[s for _, s in stand_ins]) if hasattr(type(value), "_fields") else \
                tuple(s for _, s in stand_ins)
        if type(value) in (list, dict):
            self._copies.append((path, value, copy, _items(copy)))
        return copy

    def _input(self, path, label, array):
        root = self.graph
        p = root.placeholder(array.shape, array.dtype, name=_name(label), outside=label)
        root.inputs.append(p)
        root.read_values[id(p)] = array
        self._inputs.append(path)
        return p

    def function(self, original, converted):
        """`converted` with its globals and cells as the trace must see them (see `function_for`)."""
        code = original.__code__
        globals_ = original.__globals__
        entry = self._namespace(globals_)
        k = self._root_index(globals_)
        names = entry[2]
        changed, found = {}, False
        for name in code_names(code):
            if name not in names:
                value = globals_.get(name, _MISSING)  # missing: a global the trace may create
                names[name] = (value, value if value is _MISSING else self.see((("global", k, name),), name, value))
                found = found or names[name][1] is not value
            if names[name][1] is not names[name][0]:
                changed[name] = names[name][1]
        cells = dict(zip(code.co_freevars, original.__closure__ or ()))
        new_cells = {}
        for name, cell in cells.items():
            known = self._cells.get(id(cell))
            if known is not None:  # seen by an earlier call: the same stand-in cell, writes and all
                if known[3] is not None:
                    new_cells[name] = known[3]
                continue
            try:
                value = cell.cell_contents
            except ValueError:
                continue  # not yet assigned: reading it raises, eagerly too
            stand_in = self.see((("cell", self._root_index(cell), name),), name, value)
            self._cells[id(cell)] = (name, cell, value, None if stand_in is value else types.CellType(stand_in),
                                     stand_in)
            if stand_in is not value:
                new_cells[name] = self._cells[id(cell)][3]
        defaults, kwdefaults = self._defaults(original)
        if not changed and not new_cells and defaults is None and kwdefaults is None:
            return converted
        if changed:
            copy = entry[1]
            if copy is None:
                copy = dict(globals_)
                self._globals[id(globals_)] = entry = (globals_, copy, names)
                copy.update(changed)
            elif found:  # only the names new to the copy: the others may hold the trace's own writes
                copy.update({name: names[name][1] for name in changed if name not in copy or
                             copy[name] is names[name][0]})
            globals_ = copy
        else:
            globals_ = entry[1] or globals_
        closure = tuple(new_cells.get(name, cell) for name, cell in
                            zip(converted.__code__.co_freevars, converted.__closure__ or ()))
        fn = types.FunctionType(converted.__code__, globals_, converted.__name__,
                                converted.__defaults__ if defaults is None else defaults, closure)
        fn.__kwdefaults__ = converted.__kwdefaults__ if kwdefaults is None else kwdefaults
        fn.__qualname__ = converted.__qualname__
        fn.__dict__.update(converted.__dict__)
        return fn

    def _defaults(self, original):
        """A function's default argument values as the trace must see them (`def layer(x, w=W1)`:
        W1 read each call), or None where they are the function's own."""
        code = original.__code__
        defaults, kwdefaults = original.__defaults__ or (), original.__kwdefaults__ or {}
        if not defaults and not kwdefaults:
            return None, None
        k = self._root_index(original)
        first = code.co_argcount - len(defaults)
        seen = tuple(self.see((("default", k, i),), f"{original.__qualname__}({code.co_varnames[first + i]}=)", v)
                     for i, v in enumerate(defaults))
        seen_kw = {name: self.see((("kwdefault", k, name),), f"{original.__qualname__}({name}=)", v)
                   for name, v in kwdefaults.items()}
        return (None if all(a is b for a, b in zip(seen, defaults)) else seen,
                None if all(seen_kw[n] is v for n, v in kwdefaults.items()) else seen_kw)

    def _namespace(self, globals_):
        """The trace's record of a module's globals: (the dict, its copy for the trace or None,
        {name: (its value before, the stand-in)})."""
        entry = self._globals.get(id(globals_))
        if entry is None:
            entry = self._globals[id(globals_)] = (globals_, None, {})
        return entry

    def _copy_of(self, globals_):
        """The trace's copy of a module's globals, made if there is none yet."""
        entry = self._namespace(globals_)
        if entry[1] is None:
            entry = self._globals[id(globals_)] = (globals_, dict(globals_), entry[2])
        return entry[1]

    def module_attribute(self, module, name):
        """`module.name` read by the trace (through a _ModuleView): the value the trace sees."""
        globals_ = vars(module)
        names = self._namespace(globals_)[2]
        if name not in names:
            value = globals_.get(name, _MISSING)
            if value is _MISSING:  # not in its globals (a module's __getattr__): as it is
                return getattr(module, name)
            path = (("global", self._root_index(globals_), name),)
            names[name] = (value, self.see(path, f"{module.__name__}.{name}", value))
            if names[name][1] is not value:
                self._copy_of(globals_)[name] = names[name][1]
        copy = self._globals[id(globals_)][1]
        value = (globals_ if copy is None else copy).get(name, _MISSING)
        if value is _MISSING:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        return value

    def module_write(self, module, name, value):
        """`module.name = value` (or `del module.name`, value _MISSING) in the trace: kept in the
        trace's copy of the module's globals; `finish` makes it a write the effects replay redoes."""
        globals_ = vars(module)
        names = self._namespace(globals_)[2]
        if name not in names:
            before = globals_.get(name, _MISSING)
            names[name] = (before, before)
            self._root_index(globals_)
        copy = self._copy_of(globals_)
        if value is _MISSING:
            del copy[name]
        else:
            copy[name] = value
        self._module_labels[id(globals_)] = module.__name__

    def _root_index(self, obj):
        index = next((k for k, r in enumerate(self._roots) if r is obj), None)
        if index is None:
            self._roots.append(obj)
            index = len(self._roots) - 1
        return index

    # --- after the trace ----------------------------------------------------------------

    def finish(self, name):
        """Before the effects replay is worked out: the trace's writes into stand-in containers of
        the arguments and `self` moved into the real ones, objects reached otherwise whose attributes
        it set listed in `adopted` (effects.py replays both); any other write to outside state a
        ConversionError."""
        self._swap_out()
        self._finished = True
        problems = []
        for variable, cell, before, stand_in_cell, stand_in in self._cells.values():
            try:
                now = (stand_in_cell or cell).cell_contents
            except ValueError:
                problems.append(f"closure variable {variable!r} deleted")
                continue
            if now is not before and now is not stand_in:
                self.cell_writes.append((variable, cell, before, now))  # the effects replay sets it each call
            cell.cell_contents = before
        for globals_, copy, names in self._globals.values():
            module = self._module_labels.get(id(globals_))
            for key, (before, stand_in) in names.items():
                now = (copy or globals_).get(key, _MISSING)
                what = f"module attribute '{module}.{key}'" if module else f"global {key!r}"
                if now is not before and now is not stand_in:
                    if now is _MISSING:
                        problems.append(f"{what} deleted")
                    else:  # the effects replay sets it
                        self.global_writes.append((key, globals_, before, now, what))
                if before is _MISSING:
                    globals_.pop(key, None)
                elif globals_.get(key, _MISSING) is not before:
                    globals_[key] = before
        for path, real, copy, before in self._copies:
            if _same_items(_items(copy), before):
                continue
            if path[0][0] in ("leaf", "self"):
                # the arguments' and self's containers are the effects replay's (effects.py): it sees the
                # change in the real container, and restores it after the trace
                _copy_back(real, copy, before)
            else:
                problems.append(f"{self._labels[path]} changed")
        for path, real, before in self._real:
            now = _items(real)
            if not _same_items(now, before):
                problems.append(f"{self._labels[path]} {_change(before, now)}")
                real.clear()
                real.update(before) if type(real) is dict else real.extend(v for _, v in before)
        for path, obj, before in self._subclass_items:
            now = _items(obj)
            if not _same_items(now, before):
                problems.append(f"{self._labels[path]} (a {type(obj).__name__}) {_change(before, now)}")
                (dict.clear if isinstance(obj, dict) else list.clear)(obj)
                for key, value in before:
                    (dict.__setitem__(obj, key, value) if isinstance(obj, dict) else list.append(obj, value))
        for path, obj, before in self._watched:
            after = _state(obj)
            changed = [key for key in set(before) | set(after) if before.get(key, _MISSING) is not after.get(key, _MISSING)]
            if changed and isinstance(getattr(obj, "__dict__", None), dict) and not _slots(type(obj)):
                # an object reached through a global, a cell or another object (guarded by identity):
                # the effects replay redoes its attribute writes, as for an argument's
                self.adopted.append((self._labels[path], obj, before))
            elif changed:
                problems.append(f"{self._labels[path]}{_attr_label(sorted(map(str, changed))[0])} set (an object "
                                f"with __slots__)")
                _restore_state(obj, before, after)
        if _global_random_states() != self._random_before:
            raise ConversionError(
                f"{name}: numpy's global random state or Python's `random` module advanced while tracing, so a "
                f"function called as it is (library code, or one marked @ag.do_not_convert) drew random numbers; "
                f"they would be constants of the trace, the same on every call. Draw with np.random.* (or a "
                f"Generator's methods, or `random.*`) in the compiled function's own code: those draw on each call")
        if problems:
            raise _write_error(name, problems)

    def state(self, name, leaves):
        """After the effects replay restored the arguments and `self`: the OutsideState of this
        trace (None when it read nothing to guard). A guard that fails now names a value the trace
        itself changed (a list a closure holds, appended to): a ConversionError."""
        if not any(g[0] != "root" for g in self._guards.values()):
            return None
        state = OutsideState(self._guards, self._labels, self._inputs, self._roots)
        state.trace_values = [self._seen[p][0] for p in self._inputs]
        if state.read(leaves) is None:
            raise _write_error(name, [state.why(leaves)])
        return state


def _write_error(name, problems):
    return ConversionError(
        f"{name} changes state outside its arguments while tracing ({'; '.join(problems)}); a compiled call runs "
        f"Python side effects only while tracing, so later calls would not redo them as eager calls do. Return "
        f"the new value, keep it on an argument object or on `self` (writes there are replayed on every call), "
        f"or do it in a function marked @ag.do_not_convert, which runs while tracing only")


_MISSING = object()
ABSENT = _MISSING


def _global_random_states():
    """numpy's global RandomState and Python's `random` as comparable values (a trace's own draws
    use copies of them, so any change while tracing is a draw made outside the graph)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return kind, keys.tobytes(), pos, has_gauss, gauss, random.getstate()


def _change(before, now):
    """What happened to a container's (key, item) pairs, in words."""
    old, new = dict(before), dict(now)
    for k in new:
        if k not in old:
            return f"gained item {k!r}"
        if new[k] is not old[k]:
            return f"had item {k!r} set"
    return f"lost item {next(k for k in old if k not in new)!r}"


def _items(container):
    """A list's or dict's (key, item) pairs (a subclass's own methods not called)."""
    return list(dict.items(container) if isinstance(container, dict) else enumerate(container))


def _same_items(now, before):
    """Whether two `_items` lists hold the same keys and the very same items."""
    return len(now) == len(before) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(now, before))


def _copy_back(real, copy, before):
    """Put what a trace did to `copy` (a container with stand-ins) into `real`, stand-ins undone."""
    if type(real) is list:
        originals = {id(s): o for (_, s), o in zip(before, real)}
        real[:] = [originals.get(id(v), v) for v in copy]
    else:
        originals = {id(s): real[k] for k, s in before}
        new = {k: originals.get(id(v), v) for k, v in copy.items()}
        real.clear()
        real.update(new)


class OutsideState:
    """The guards of one trace and the arrays it reads from outside, compiled into `read`."""

    def __init__(self, guards, labels, inputs, roots):
        self._guards, self._labels, self._roots = guards, labels, roots
        self.inputs = [labels[p] for p in inputs]
        self.read = _compile(guards, inputs, roots)
        self.trace_values = []  # the arrays read while tracing

    def why(self, leaves):
        """The first guard `leaves` fail, in words (for the retrace log and warning)."""
        for path, (kind, payload) in self._guards.items():
            if kind == "root":
                continue
            try:
                value = _fetch(path[:-1] if kind in ("absent", "size") else path, leaves, self._roots, self._guards)
            except Exception as e:  # noqa: BLE001 - failing to reach it is the change
                return f"{self._labels[path]} is gone ({type(e).__name__}: {e})"
            if not _holds(kind, payload, value):
                return f"{self._labels[path]} {_describe(kind, payload, value)}"
        return "outside state changed"

    @property
    def module_guards(self):
        """(globals dict, name, module) of each module global the trace read (`np`, `ag`)."""
        return [(self._roots[path[0][1]], path[0][2], payload) for path, (kind, payload) in self._guards.items()
                if kind == "module"]

    @property
    def modules_only(self):
        """Whether the module globals are all this trace guards (no arrays to feed, no other values):
        then the fast path's own check of them (Function._fast_path) is the whole check."""
        return all(kind in ("root", "module") for kind, _ in self._guards.values())

    def __len__(self):
        """How many values are guarded."""
        return sum(1 for g in self._guards.values() if g[0] != "root")


def _fetch(path, leaves, roots, guards):
    step = path[0]
    if step[0] == "leaf":
        value = leaves[step[1]]
    elif step[0] == "self":
        value = guards[(("self",),)][1]
    elif step[0] == "global":
        value = roots[step[1]][step[2]]
    elif step[0] == "default":
        value = roots[step[1]].__defaults__[step[2]]
    elif step[0] == "kwdefault":
        value = roots[step[1]].__kwdefaults__[step[2]]
    else:
        value = roots[step[1]].cell_contents
    for kind, key in path[1:]:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


def _holds(kind, payload, value):
    """The generated reader's check of one guard, in Python (for `why`)."""
    if kind == "absent":
        return not hasattr(value, payload)
    if kind == "size":
        return len(value) == payload
    if kind == "array":
        return type(value) is payload[0] and value.shape == payload[1] and value.dtype == payload[2]
    if kind == "value":
        return type(value) is type(payload) and (_same(value, payload) if isinstance(
            payload, (float, complex, np.inexact)) else bool(value == payload))
    if kind in ("identity", "module"):
        return value is payload
    if kind == "method":
        return type(value) is types.MethodType and value.__func__ is payload[0] and value.__self__ is payload[1]
    if kind == "builtin method":
        return type(value) is types.BuiltinMethodType and value.__self__ is payload[0] and value.__name__ == payload[1]
    if kind == "length":
        return type(value) is payload[0] and len(value) == payload[1]
    return type(value) is payload[0] and value == payload[1] and [type(i) for i in value] == payload[2]


def _describe(kind, payload, now):
    if kind == "array":
        return f"was an array of shape {payload[1]} and dtype {payload[2]}, is {_brief(now)}"
    if kind == "absent":
        return "was absent, is set"
    if kind == "size":
        return f"held {payload} items, holds {len(now)}"
    if kind == "length":
        return f"was a {payload[0].__name__} of {payload[1]} items, is {_brief(now)}"
    if kind == "builtin method":
        return f"was {type(payload[0]).__name__}.{payload[1]} of the object read while tracing, is {_brief(now)}"
    return f"was {_brief(payload if kind != 'method' else payload[0])}, is {_brief(now)}"


def _brief(value):
    if isinstance(value, np.ndarray) or devices.device_of(value) is not None:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return reprlib.repr(value)


def _compile(guards, inputs, roots):
    """One generated function: fetch each guarded value by its path, check it, return the inputs.

    Every constant (names, keys, expected values) is bound as a default argument, never written
    into the source, so a hostile string or key cannot change what the code does."""
    consts, lines, var = {}, [], {}

    def const(value):
        name = f"k{len(consts)}"
        consts[name] = value
        return name

    self_root = next((payload for kind, payload in guards.values() if kind == "root" and payload is not None), None)
    for path, (kind, payload) in guards.items():
        src = _source(path[:-1] if kind in ("absent", "size") else path, var, const, self_root)
        if kind == "absent":
            lines.append(f"if hasattr({src}, {const(payload)}): return None")
            continue
        if kind == "size":
            lines.append(f"if len({src}) != {int(payload)}: return None")
            continue
        v = f"v{len(var)}"
        var[path] = v
        lines.append(f"{v} = {src}")
        if kind == "root":
            continue
        if kind == "array":
            lines.append(f"if type({v}) is not {const(payload[0])} or {v}.shape != {const(payload[1])} "
                         f"or {v}.dtype != {const(payload[2])}: return None")
        elif kind == "value":
            lines.append(f"if {_value_check(v, payload, const)}: return None")
        elif kind in ("identity", "module"):
            lines.append(f"if {v} is not {const(payload)}: return None")
        elif kind == "method":
            lines.append(f"if type({v}) is not MethodType or {v}.__func__ is not {const(payload[0])} "
                         f"or {v}.__self__ is not {const(payload[1])}: return None")
        elif kind == "builtin method":
            lines.append(f"if type({v}) is not BuiltinMethodType or {v}.__self__ is not {const(payload[0])} "
                         f"or {v}.__name__ != {const(payload[1])}: return None")
        elif kind == "length":
            lines.append(f"if type({v}) is not {const(payload[0])} or len({v}) != {payload[1]}: return None")
        elif kind == "equal":
            t, snapshot, item_types = payload
            lines.append(f"if type({v}) is not {const(t)} or {v} != {const(snapshot)} or "
                         f"[type(i) for i in {v}] != {const(item_types)}: return None")
    result = "[" + ", ".join(var[p] for p in inputs) + "]"
    params = ", ".join(["leaves"] + [f"{k}={k}" for k in consts] +
                       ["roots=roots", "ndarray=ndarray", "MethodType=MethodType", "_same=_same",
                        "BuiltinMethodType=BuiltinMethodType"])
    body = "\n".join("        " + line for line in lines) or "        pass"
    source = (f"def make({', '.join(['roots', 'ndarray', 'MethodType', '_same', 'BuiltinMethodType'] + list(consts))}):\n"
              f"    def read({params}):\n"
              f"      try:\n{body}\n"
              f"      except Exception:\n"
              f"        return None\n"
              f"      return {result}\n"
              f"    return read\n")
    namespace = {}
    exec(compile(source, "<autograph_lite outside-state guards>", "exec"), namespace)
    return namespace["make"](roots, np.ndarray, types.MethodType, _same, types.BuiltinMethodType, **consts)


def _source(path, var, const, self_root):
    for n in range(len(path), 0, -1):
        if path[:n] in var:
            src, rest = var[path[:n]], path[n:]
            break
    else:
        step = path[0]
        if step[0] == "leaf":
            src = f"leaves[{int(step[1])}]"
        elif step[0] == "self":
            src = const(self_root)
        elif step[0] == "global":
            src = f"roots[{int(step[1])}][{const(step[2])}]"
        elif step[0] == "default":
            src = f"roots[{int(step[1])}].__defaults__[{int(step[2])}]"
        elif step[0] == "kwdefault":
            src = f"roots[{int(step[1])}].__kwdefaults__[{const(step[2])}]"
        else:
            src = f"roots[{int(step[1])}].cell_contents"
        rest = path[1:]
    for kind, key in rest:
        if kind == "attr" and key.isidentifier() and not keyword.iskeyword(key) and key[:2] != "__":
            src = f"{src}.{key}"
        elif kind == "attr":
            src = f"getattr({src}, {const(key)})"
        else:
            src = f"{src}[{const(key)}]"
    return src


def _value_check(v, expected, const):
    t = type(expected)
    if expected is None:
        return f"{v} is not None"
    if isinstance(expected, (float, complex, np.floating, np.complexfloating)) and (
            expected != expected or expected == 0):
        return f"type({v}) is not {const(t)} or not _same({v}, {const(expected)})"
    return f"type({v}) is not {const(t)} or {v} != {const(expected)}"


def _same(a, b):
    """Equal as a cache key sees floats: NaN is NaN, -0.0 is not 0.0."""
    if a != a or b != b:
        return a != a and b != b
    if a == 0 and isinstance(a, (float, np.floating)):
        return math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


def _has_attributes(value):
    """An object whose attributes a trace may read: a user class's instance (not a module,
    class, function, container, array or one of ours)."""
    t = type(value)
    if isinstance(value, _SCALARS) or isinstance(value, _BY_IDENTITY) or isinstance(value, _BY_VALUE) or \
            t in (list, tuple, dict, set, np.ndarray, types.ModuleType, types.MethodType) or isinstance(value, Tensor) \
            or devices.device_of(value) is not None:
        return False
    return (t.__module__ or "").split(".")[0] != "autograph_lite" and t.__flags__ & (1 << 9) != 0  # a heap type


def _read_by_converted_code():
    """Whether the attribute read `Reads.attribute` sees was made by the user's converted code (not by
    ours or a library's, which read `__dict__` as it is)."""
    return sys._getframe(3).f_code.co_filename.startswith("<autograph_lite converted")


def _user_module(module):
    """A module of the user's (`import cfg`), not a library's (numpy, the standard library, ours)."""
    from .call import is_library_code
    return module.__name__ not in sys.builtin_module_names and not is_library_code(
        module.__name__, getattr(module, "__file__", None) or "")


class _ModuleView(types.ModuleType):
    """What a trace sees in place of a user's module: its attributes read through the trace's Reads
    (arrays as graph inputs, the rest guarded), writes kept for the effects replay."""

    def __init__(self, reads, module):
        super().__init__(module.__name__)
        object.__setattr__(self, "_ag_state", (reads, module))

    def __getattribute__(self, name):
        reads, module = object.__getattribute__(self, "_ag_state")
        if name[:2] == "__":
            return getattr(module, name)
        return reads.module_attribute(module, name)

    def __setattr__(self, name, value):
        reads, module = object.__getattribute__(self, "_ag_state")
        reads.module_write(module, name, value)

    def __delattr__(self, name):
        reads, module = object.__getattribute__(self, "_ag_state")
        reads.module_write(module, name, _MISSING)

    def __repr__(self):
        return repr(object.__getattribute__(self, "_ag_state")[1])


def _container_subclass(value):
    """A list or dict subclass (`OrderedDict`, `class Params(dict)`): its items are swapped in."""
    return isinstance(value, (list, dict)) and type(value) not in (list, dict)


def _slots(cls):
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [name for name in names if name not in ("__dict__", "__weakref__")]


def _state(obj):
    """An object's attributes: its `__dict__` and its slots (read past any hook)."""
    state = dict(vars(obj)) if isinstance(getattr(obj, "__dict__", None), dict) else {}
    for name in _slots(type(obj)):
        try:
            state.setdefault(name, object.__getattribute__(obj, name))
        except AttributeError:
            pass  # an empty slot
    return state


def _restore_state(obj, before, after):
    for name in after:
        if name not in before:
            object.__delattr__(obj, name)
    for name, value in before.items():
        object.__setattr__(obj, name, value)


def _unhookable(value):
    """An instance of a builtin type with a `__dict__` (types.SimpleNamespace): its attributes can be
    read and swapped, but reads of them cannot be intercepted."""
    if type(value).__flags__ & (1 << 9) or isinstance(value, (types.ModuleType, type, types.FunctionType,
                                                             types.MethodType, functools.partial)):
        return False
    return isinstance(getattr(value, "__dict__", None), dict)


def _attr_label(name):
    return f".{name}" if isinstance(name, str) and name.isidentifier() else f".<{name!r}>"


def _name(label):
    name = "".join(c if c.isalnum() else "_" for c in label).strip("_")
    return name or "outside"


# --- reading attributes while a trace runs ---------------------------------------------

_hook_lock = threading.Lock()
_hooks = {}  # class -> [users, its own __getattribute__ or _MISSING]


def _hook(cls):
    """Route attribute reads on `cls`'s instances through the running trace's Reads (thread-local)."""
    if not (cls.__flags__ & (1 << 9)):  # a builtin type: its attributes cannot be intercepted
        return False
    with _hook_lock:
        entry = _hooks.get(cls)
        if entry is not None:
            entry[0] += 1
            return True
        own = cls.__dict__.get("__getattribute__", _MISSING)
        resolved = cls.__getattribute__

        def __getattribute__(self, name):
            try:
                value = resolved(self, name)
            except AttributeError:
                reads = getattr(_local, "reads", None)
                fallback = getattr(type(self), "__getattr__", None)
                if reads is None or fallback is None:
                    if reads is not None:
                        reads.missing(self, name)
                    raise
                try:  # what Python would call next, called here so its result is seen
                    value = fallback(self, name)
                except AttributeError:
                    reads.missing(self, name)
                    raise
            reads = getattr(_local, "reads", None)
            return value if reads is None else reads.attribute(self, name, value)
        __getattribute__.__ag_resolved__ = resolved
        try:
            cls.__getattribute__ = __getattribute__
        except (TypeError, AttributeError):
            return False
        _hooks[cls] = [1, own]
        return True


def own_getattribute(cls):
    """`cls.__getattribute__` as the class defines it, whether or not a trace has hooked it."""
    found = cls.__getattribute__
    while hasattr(found, "__ag_resolved__"):
        found = found.__ag_resolved__
    return found


def _unhook(cls):
    with _hook_lock:
        entry = _hooks[cls]
        entry[0] -= 1
        if entry[0]:
            return
        del _hooks[cls]
        if entry[1] is _MISSING:
            del cls.__getattribute__
        else:
            cls.__getattribute__ = entry[1]
