"""`if`, `while` and `for` as converted code calls them.

Each takes the statement's parts as functions of the variables it reads and writes
(`state`) and returns the new values of those variables. On a Python condition or
iterable it runs plain Python now; on a symbolic one it builds a Cond or While node.
"""
import builtins
import contextlib
import logging
import os
import sys
import time
import types

import numpy as np

from .. import nest, ops
from ..errors import (ConversionError, NeedsPython, SymbolicValueError, UnknownRank, is_internal_file, mapped_location,
                      traceback_location, user_location)
from ..ops.array_ops import constant_value, known_int
from ..ops.core import apply
from . import outside_state, python_loops
from ..ops import python_values
from ..ops.logging_ops import ASSERT
from ..ops.python_values import PythonValue
from ..ops.control_flow import (_held_elsewhere, build_cond, python_int, python_scalar, stage_while, trace_function,
                                zero_like)
from ..ops.core import convert_to_tensor
from ..runtime import memory
from ..runtime.boxes import ARRAY, PythonBox, box_of
from ..runtime.opdef import WHILE
from ..runtime.graph import Tensor, _tracing, building, current_graph, holds, record_numpy_alias
from ..runtime.passes.util import has_effects
from .lists import TensorList, join_kinds
from .logical import Choice, MaybeUnset
from .variables import RETURN_VALUE, Undefined

logger = logging.getLogger("autograph_lite")

UNROLL_WARNING_ITERATIONS = 5000
UNROLL_WARNING_SECONDS = 1.0


def _check_staging_allowed(opts, what, location):
    for manager in (opts or {}).get("contexts", ()):
        why = _context_needs_running(manager)
        if why:
            raise ConversionError(f"a {what} on a tensor inside `with {type(manager).__name__}(...)` is not "
                                  f"supported (at {location}): {why}; the `with` runs once, while tracing, not "
                                  f"when the graph runs. Move the `with` outside the function or make the "
                                  f"condition a Python value")
    if opts and opts.get("in_try"):
        raise ConversionError(f"a {what} on a tensor inside a `{opts['in_try']}` block with `except` handlers is "
                              f"not supported (at {location}): an error the graph raises when it runs (a failed "
                              f"assert, an index out of bounds) would not reach the handlers; move the "
                              f"`{opts['in_try']}` outside the function, drop its `except` clauses (try/finally "
                              f"works) or make the condition a Python value")
    if opts and opts.get("nonlocal_writes"):
        names = ", ".join(sorted(opts["nonlocal_writes"]))
        raise ConversionError(f"a {what} on a tensor rebinds global/nonlocal {names} (at {location}); "
                              f"a graph loop or branch can only update local variables: return the "
                              f"value instead")


class _ExtraState:
    """What a staged statement carries besides the variables passed to its functions.

    - cell variables (locals that closures see), read and set through the getter and setter
      the converter generates (`opts['cells']`);
    - items and attributes it writes (`opts['composites']`) when they name one place all
      through the statement: `d['k']` or `l[0]` of a plain dict or list, `o.a` of an object
      with plain attribute storage. Anything else written there is refused.
    A place with no value yet (a new key) reads as Undefined; setting Undefined removes it.
    """

    def __init__(self, opts, what, location):
        opts = opts or {}
        self.names, self._cell_get, self._cell_set, self._places = (), None, None, []
        if opts.get("cells"):
            self.names, self._cell_get, self._cell_set = opts["cells"]
        for label, kind, base_fn, key_fn, static in opts.get("composites", ()):
            try:
                base = base_fn()
            except Exception:  # noqa: BLE001 - the traced body meets the same error at the user's line
                continue
            if isinstance(base, (Tensor, TensorList)):
                continue  # item assignment on tensors and lists of tensors is their own operators' business
            key = key_fn() if static else None
            why = _uncarriable(base, kind, key, static)
            if why:
                raise ConversionError(f"`{label}` is written inside a {what} on a tensor (at {location}), but {why}; "
                                      f"assign the value to a local variable inside the {what} and write "
                                      f"`{label}` after it")
            self._places.append((base, kind, int(key) if isinstance(key, np.integer) else key))
            self.names += (label,)

    def __bool__(self):
        return bool(self.names)

    @property
    def cell_names(self):
        return self.names[:len(self.names) - len(self._places)]

    @property
    def composite_names(self):
        return self.names[len(self.names) - len(self._places):]

    def unset_places(self):
        """Labels of the items and attributes with no value yet."""
        values = self.get()[len(self.cell_names):]
        return [name for name, value in zip(self.composite_names, values) if isinstance(value, Undefined)]

    def _refuse_maybe_unset(self, values, location):
        _refuse_maybe_unset_in_loop(self.names, values, location)

    def attribute_places(self):
        """{(id(object), name)} of the attributes this statement carries."""
        return {(id(base), key) for base, kind, key in self._places if kind == "attr"}

    def droppable(self, opts):
        """{label: (holder, key)} of the items of dicts and attributes of objects that may stay unset on some runs
        (`opts['droppable']`: the converter found nothing in the function that asks which keys or
        attributes their holder has)."""
        labels = set((opts or {}).get("droppable", ()))
        return {label: (base, key) for label, (base, kind, key) in zip(self.composite_names, self._places)
                if label in labels and (type(base) is dict if kind == "item" else hasattr(base, "__dict__"))}

    def unset_dict_items(self):
        """(label, dict, key) of the items of plain dicts with no value yet."""
        values = self.get()[len(self.cell_names):]
        return [(label, base, key) for label, value, (base, kind, key) in zip(self.composite_names, values, self._places)
                if isinstance(value, Undefined) and kind == "item" and type(base) is dict]

    def get(self):
        values = tuple(self._cell_get()) if self._cell_get else ()
        for label, (base, kind, key) in zip(self.composite_names, self._places):
            try:
                values += (outside_state.read_carried(base, kind, key),)
            except (KeyError, IndexError, AttributeError):
                values += (Undefined(label),)
        return values

    def set(self, values):
        cells = len(self.names) - len(self._places)
        if cells:
            self._cell_set(tuple(values[:cells]))
        for value, (base, kind, key) in zip(values[cells:], self._places):
            if not isinstance(value, Undefined):
                setattr(base, key, value) if kind == "attr" else base.__setitem__(key, value)
            elif kind == "attr" and key in getattr(base, "__dict__", {}):
                delattr(base, key)
            elif kind == "item" and type(base) is dict and key in base:
                del base[key]

    def branch(self, fn, start):
        """`fn` that starts from `start` and also returns this state."""
        def run(*state):
            self.set(_copy_lists(start))
            return tuple(fn(*state)) + self.get()
        return run

    def loop(self, test, body, count, location):
        """`test` and `body` over the variables plus this state (the first `count` are variables).
        A place with no value yet starts as Undefined: the loop carries it from a zero of the type
        the body gives it (see `unset_places` for a loop that runs zero times)."""
        def loop_test(*state):
            self.set(state[count:])
            return test(*state[:count])

        self._refuse_maybe_unset(self.get(), location)

        def loop_body(*state):
            self.set(state[count:])
            out = tuple(body(*state[:count])) + self.get()
            self._refuse_maybe_unset(out[count:], location)
            # a cell, item or attribute with no value before the loop that the body assigns on some
            # runs only (a Python `if` it traced not taking that path) keeps having none (an error if
            # used after the loop)
            return out[:count] + tuple(s if isinstance(s, Undefined) and isinstance(o, Undefined) else o
                                       for s, o in zip(state[count:], out[count:]))
        return loop_test, loop_body


def _refuse_maybe_unset_in_loop(names, values, location):
    for label, value in zip(names, values):
        if isinstance(value, MaybeUnset):
            raise ConversionError(f"`{label}` is {value.why}, and a loop on a tensor (at {location}) carries it: a "
                                  f"graph loop cannot carry an item or attribute that is set on some runs only; give "
                                  f"it a value before the loop")


def _uncarriable(base, kind, key, static):
    """Why `base[key]` / `base.key` cannot be carried through staged control flow, or None."""
    if not static:
        return "its key or index is not the same all through it (only constant keys and names " \
               "not reassigned there can be carried)"
    if kind == "item":
        if type(base) not in (dict, list):
            return f"items of a {type(base).__name__} cannot be carried (only of a dict or a list)"
        if isinstance(key, Tensor):
            return "its key is a tensor"
        if type(base) is list and not isinstance(key, (int, np.integer)):
            return "a list index must be an int"
        return None
    cls = type(base)
    if isinstance(base, (type, types.ModuleType)) or cls.__setattr__ is not object.__setattr__ \
            or outside_state.own_getattribute(cls) is not object.__getattribute__:
        return f"attributes of a {cls.__name__} cannot be carried (it is a class or module, or customises " \
               f"attribute access)"
    if hasattr(getattr(cls, key, None), "__set__"):
        return f"'{key}' is a property or descriptor of {cls.__name__}"
    return None


def _context_needs_running(manager):
    """Why the graph would have to run context manager `manager` around its control flow, or None
    when entering it once while tracing is all it does: contextlib.nullcontext, and np.errstate
    that only ignores or warns (warnings of the graph's run are not reproduced)."""
    if isinstance(manager, contextlib.nullcontext):
        return None
    if isinstance(manager, np.errstate):
        modes = [getattr(manager, f"_{k}", None) for k in ("all", "divide", "over", "under", "invalid")]
        call = getattr(manager, "_call", None)
        handler = call is not None and type(call).__name__ != "_unspecified"
        if handler or any(m in ("raise", "call", "log") for m in modes):
            return "an np.errstate that raises or calls a handler would have to apply when the graph runs"
        return None
    return f"a {type(manager).__name__} context manager may act around what it encloses"


# --- if ---------------------------------------------------------------------------------

def if_stmt(cond, body, orelse, state, names, opts=None):
    """`if cond: body else: orelse` over variables `state`; returns the variables in `names`."""
    if isinstance(cond, Choice):
        cond = cond.truth()
    if isinstance(cond, PythonValue):  # known when the graph runs: its truth is a bool tensor
        cond = python_values.truth(cond)
    if not isinstance(cond, Tensor):
        return body(*state) if cond else orelse(*state)
    location = user_location()
    _check_staging_allowed(opts, "`if`", location)
    extra = _ExtraState(opts, "`if`", location)
    written = _AttributesKept("an `if`", location)
    if (opts or {}).get("return_guard"):
        body = _return_guard(body)
    if extra:
        count, start = len(names), extra.get()
        body, orelse, names = extra.branch(body, start), extra.branch(orelse, start), (*names, *extra.names)
        result = _staged_if(cond, body, orelse, state, names, location, extra.cell_names, extra.droppable(opts),
                            raising=not (opts or {}).get("in_finally"))
        _check_argument_lists_kept(start, result[count:], "an `if`", location)
        written.check(extra)
        extra.set(result[count:])
        return _note_return_values(names, result)[:count]
    result = _staged_if(cond, body, orelse, state, names, location, raising=not (opts or {}).get("in_finally"))
    written.check()
    return _note_return_values(names, result)


def _return_guard(fn):
    """A converted `return`'s guard (`if not do_return:`, the converter's `opts['return_guard']`): its
    branch's graph says so to runtime/memory.py, which spares the function's pending return values
    from a write there (runs apart: `if c: return x`, then `x[i] = 0` in a tensor loop's body)."""
    def guarded(*args):
        memory.return_guard(current_graph())
        return fn(*args)
    return guarded


def _note_return_values(names, result):
    """`result`, a tensor `if`'s or loop's, after noting its `retval_` as a pending return value
    (runtime/memory.py: a later write under a return guard cannot run where it holds an array)."""
    for name, value in zip(names, result):
        if name == RETURN_VALUE:
            memory.note_return_values(current_graph(), [t for t in nest.flatten(value) if isinstance(t, Tensor)])
    return result


def _staged_if(cond, body, orelse, state, names, location, soft=(), droppable={}, raising=True):  # noqa: B006
    """The Cond of a tensor `if`. `soft`: cells that may stay without a value (an error only if read);
    `droppable`: items and attributes that may stay unset on the runs taking one branch (`MaybeUnset`);
    `raising`: a branch raising a Python error while traced raises it when it runs (RAISED_WHEN_TAKEN;
    not inside a `try` with `finally`, which a graph's error would skip, and whose `return` may cancel it)."""
    graph = current_graph()
    carried = []  # memory from outside that a branch writes (runtime/memory.py): carried as outputs too
    while True:
        # each branch appends to its own copy of a list: one branch's items must not leak into the other
        then_in, else_in = _copy_lists(state), _copy_lists(state)
        kept = _ArraysKept("an `if`", location)
        try:
            with memory.branch_copies([*zip(state, then_in), *zip(state, else_in)]):
                then_g, then_out = _trace_branch(graph, "then", body, then_in, location, carried, raising)
                else_g, else_out = _trace_branch(graph, "else", orelse, else_in, location, carried, raising)
            break
        except memory.Carry as c:
            carried.append(c.storage)
    if isinstance(then_out, _Raises) and isinstance(else_out, _Raises):
        first, second = then_out.error, else_out.error
        if type(first) is type(second) and str(first) == str(second):
            raise first  # whichever branch runs raises this: eager raises it on every call
        raise then_out.refusal from then_out.error
    # a branch that raises when it runs gives stand-ins of the other's values (never used)
    ran = [side for side, out in ((then_in, then_out), (else_in, else_out)) if not isinstance(out, _Raises)]
    if isinstance(then_out, _Raises):
        then_out = _filler_like(then_g, else_out)
    elif isinstance(else_out, _Raises):
        else_out = _filler_like(else_g, then_out)
    _check_argument_lists(state, "an `if`", location, *ran)
    _check_arrays_kept(state, body, location, *ran)
    kept.check()
    then_out, else_out = list(then_out), list(else_out)
    _alias_held_arrays(graph, state, names, location, (then_g, then_in, then_out), (else_g, else_in, else_out))
    # a variable both branches leave holding the same handle of memory (`x[i] = v` in one, nothing
    # in the other) stays that handle: the Cond carries what the branches wrote to its memory
    handles = {i: t for i, (t, e) in enumerate(zip(then_out, else_out))
               if t is e and isinstance(t, Tensor) and t.mem is not None}
    maybe = {}  # output index -> (label, whether the true branch sets it, whether the false one does)
    for i, name in enumerate(names):
        t, e = then_out[i], else_out[i]
        if isinstance(t, Undefined) and isinstance(e, Undefined):
            else_out[i] = t
        elif name in droppable and t is not e and any(isinstance(v, (Undefined, MaybeUnset)) for v in (t, e)):
            (t_set, then_out[i]), (e_set, else_out[i]) = (_set_where(v, droppable[name], name, location)
                                                          for v in (t, e))
            if then_out[i] is None:
                then_out[i] = _zeros_like(then_g, else_out[i])
            if else_out[i] is None:
                else_out[i] = _zeros_like(else_g, then_out[i])
            maybe[i] = (name, t_set, e_set)
        elif isinstance(t, Undefined) or isinstance(e, Undefined):
            side, other, sub = ("false", t, else_g) if isinstance(e, Undefined) else ("true", e, then_g)
            message = (f"'{name}' is assigned in only the {'true' if side == 'false' else 'false'} branch of "
                       f"an `if` on a tensor (at {location}) but used after it; give '{name}' a value "
                       f"before the `if` or in the {side} branch too")
            if name in soft:
                # a cell carried whether or not it is read later: an error only if it is used
                then_out[i] = else_out[i] = Undefined(name, message)
                continue
            if name != RETURN_VALUE:
                raise ConversionError(message)
            # the return value of a branch that did not return: never read, so any value will do
            filler = _zeros_like(sub, other)
            if side == "false":
                else_out[i] = filler
            else:
                then_out[i] = filler
    _stack_lists_of_other_lengths(then_g, then_out, else_g, else_out)
    lists = [i for i, v in enumerate(then_out) if isinstance(v, TensorList) or isinstance(else_out[i], TensorList)]
    then_out_lists, else_out_lists = dict(enumerate(then_out)), dict(enumerate(else_out))
    for i in lists:
        then_out[i], else_out[i] = _list_tensor(then_out[i], names[i], location), _list_tensor(else_out[i], names[i], location)
    count = len(then_out)
    set_names = tuple(f"whether {label} is set" for label, _, _ in maybe.values())
    then_out += [t for _, t, _ in maybe.values()]
    else_out += [e for _, _, e in maybe.values()]
    memory_names = tuple(f"the memory of {s.label}" for s in carried)
    then_out, else_out = then_out + then_g.carried_out, else_out + else_g.carried_out
    names = (*names, *set_names, *memory_names)
    result = list(build_cond(cond, then_g, tuple(then_out), else_g, tuple(else_out), _labels(names, then_out),
                             location, var_names=names))
    for (i, (label, _, _)), is_set in zip(maybe.items(), result[count:count + len(maybe)]):
        result[i] = MaybeUnset(is_set, result[i], label, f"set in only one branch of the `if` on a tensor at "
                               f"{location}, so it is unset on the runs that take the other", *droppable[label])
    result = result[:count] + result[count + len(maybe):]
    if carried:
        memory.carried_out(carried, result[-len(carried):], location)
        result = result[:-len(carried)]
    for i, handle in handles.items():
        result[i] = handle
    for i in lists:
        result[i] = TensorList(result[i], join_kinds(_kind(then_out_lists[i]), _kind(else_out_lists[i])))
        for side, sub in ((then_out[i], then_g), (else_out[i], else_g)):
            _hold_what_a_branch_list_holds(result[i].tensor, side, sub)
    return tuple(result)


def _set_where(value, place, label, location):
    """(whether a branch's `value` of a droppable item or attribute `place` (holder, key) is set, as a
    bool tensor or numpy bool; its value where set, None where never)."""
    if isinstance(value, Undefined):
        return np.bool_(False), None
    if isinstance(value, MaybeUnset):
        if value.base is not place[0] or value.key != place[1]:
            value._refuse()  # another place's: read where it may be unset
        return value.pick, value.if_true
    if not isinstance(value, Tensor) and not isinstance(value, (bool, int, float, complex, np.generic)) \
            and not _static_leaf(value):
        raise ConversionError(f"'{label}' is set in only one branch of an `if` on a tensor (at {location}) to "
                              f"{type(value).__name__}, a structure: only a number, an array or an object "
                              f"can be left unset on some runs; give '{label}' a value before the `if` or in "
                              f"the other branch too")
    return np.bool_(True), value


def _static_leaf(value):
    return not isinstance(value, (list, tuple, dict, TensorList, Choice)) and not hasattr(value, "_fields")


def _hold_what_a_branch_list_holds(merged, side, sub):
    """`merged` (a Cond's list output) holds the arrays that list `side` held in branch `sub`: an
    in-place update of one after the `if` makes the list stale, as for a list built outside (fuzzer
    seed 924003827: `L = [x]`, a branch appending `v = x`, then `v += ...` and `L[-1]` read)."""
    if merged is None or not isinstance(side, Tensor) or side.node.graph is not sub:
        return
    inside, todo = set(), [side.node]
    while todo:  # the nodes of `sub` that `side` is computed from
        node = todo.pop()
        if id(node) not in inside:
            inside.add(id(node))
            todo += [t.node for t in node.inputs if t.node.graph is sub]
    outer_of = {id(inner): outer for outer, inner in sub.captures}
    graph = sub
    while graph is not None:
        for key, holders in list(graph.holders.items()):
            if any(id(h.node) in inside for h in holders):
                value = next((v for v in _held_values(graph, key)), None)
                value = outer_of.get(id(value), value) if graph is sub else value
                if value is not None and value.node.graph is sub and value.mem is not None \
                        and value.mem.storage.root.node.graph is not sub:
                    # a view the branch took of an array from outside (`L.append(x[::-1])`): the list
                    # holds part of that array, which a write after the `if` changes
                    value = value.mem.storage.root
                if value is not None and value.node.graph is not sub:
                    holds(merged, value)
        graph = graph.parent


def _held_values(graph, key):
    """The tensor of `graph` whose id is `key` (a key of its `holders` table)."""
    for t in (*graph.inputs, *(inner for _, inner in graph.captures), *(o for n in graph.nodes for o in n.outputs)):
        if id(t) == key:
            yield t


def _stack_lists_of_other_lengths(then_g, then_out, else_g, else_out):
    """A list that the branches leave with different lengths (one popped or appended) becomes a
    TensorList on both sides, as a loop that appends makes it: a graph value has one structure."""
    for i, (t, e) in enumerate(zip(then_out, else_out)):
        if type(t) is not list or type(e) is not list or len(t) == len(e):
            continue
        then_out[i], else_out[i] = _stacked_at_end(then_g, t), _stacked_at_end(else_g, e)
        for sub, side, other in ((then_g, then_out, else_out), (else_g, else_out, then_out)):
            if side[i].tensor is None:
                with building(sub):
                    side[i] = other[i].empty_like()


def _stacked_at_end(sub, items):
    """Python list `items` that branch `sub` gave, stacked in `sub` after it was traced: an array the
    branch wrote gives its contents at the branch's end (`L.append(x); x[0] = 1`: eagerly the list
    holds x itself; the memory outside the branch is back to x's contents from before it, fuzzer
    seed 1193023577). The list holds the arrays themselves, for writes after the `if`."""
    ends = [memory.at_end(sub, v) if isinstance(v, Tensor) else None for v in items]
    with building(sub):
        return TensorList.from_list(items, [v if end is None else end for v, end in zip(items, ends)])


def _trace_branch(graph, name, fn, state, location, carried=None, raising=True):
    """trace_function of one branch: eagerly only the branch that runs can raise, but both are traced."""
    side = "true" if name == "then" else "false"
    block, why = f"the {side} branch of an `if`", "both branches are traced, even one that the data never takes"
    run = _naming_block(_raising_when_taken(fn, block, location, why) if raising else fn, block, location, why)
    # the branch's results as they are when it ends, in containers of their own: a dict it returns
    # and also updates through a carried item (`d['a'] = x; return d`) is restored before the
    # other branch runs (fuzzer seed 5012791)
    def traced(*args):
        out = run(*args)
        return out if isinstance(out, _Raises) else nest.pack(out, nest.flatten(out))
    return trace_function(graph, name, traced, state, carried)


# Python's errors that a branch of a tensor `if` may raise while it is traced and that the graph
# raises instead on the runs that take the branch, as eagerly: those of Python and numpy
# operating on static values in the user's code (a missing key, an index out of range, a
# division by zero, a wrong type). Subclasses (numpy's AxisError), errors raised inside the
# compiler (its own limits, whatever their type) and errors of both branches stay refusals.
RAISED_WHEN_TAKEN = (KeyError, IndexError, AttributeError, TypeError, ValueError, ZeroDivisionError,
                     OverflowError, AssertionError, UnboundLocalError, NameError)


class _Raises:
    """What a branch that raised one of RAISED_WHEN_TAKEN while traced gives instead of its values:
    its graph raises `error` when it runs; `refusal` is the ConversionError if the other raises
    another error too (both raising the same one: it is raised as it is, as on every eager call)."""

    def __init__(self, error, refusal):
        self.error, self.refusal = error, refusal


def _raising_when_taken(fn, block, location, why):
    """`fn` (a branch of a tensor `if`) where an error of RAISED_WHEN_TAKEN raised by the user's
    code becomes an Assert that fails whenever the branch runs, and the branch gives `_Raises`."""
    def traced(*args):
        try:
            return fn(*args)
        except RAISED_WHEN_TAKEN as e:
            where = _raised_by_user(e)
            if type(e) not in RAISED_WHEN_TAKEN or where is None or getattr(e, "_ag_staged_raise", None) is not None:
                raise
            apply(ASSERT, (ops.convert_to_tensor(np.bool_(False)),),
                  {"message": str(e), "location": where, "error": type(e).__name__})
            return _Raises(e, _traced_error(block, location, why, e))
    return traced


def _raised_by_user(error):
    """The user's `file:line` that raised `error` when the innermost frame outside numpy is the
    user's code (converted or not), else None (the compiler raised it)."""
    from .call import PASS_THROUGH
    from .variables import Undefined
    passing = PASS_THROUGH | {Undefined._fail.__code__}  # a variable read before assignment: the reader's line
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    for code, line in reversed(frames):
        filename = code.co_filename
        if filename.startswith(_NUMPY_DIR) or code in passing:
            continue
        mapped = mapped_location(filename, line)
        if mapped:
            return mapped
        return None if is_internal_file(filename) else f"{filename}:{line}"
    return None


_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


def _filler_like(sub, value):
    """A stand-in with `value`'s structure, types and boxes (a numpy scalar where it is one), made
    in graph `sub`, for a branch whose values are never used."""
    def zero(v):
        if isinstance(v, TensorList):
            return v.empty_like()
        if isinstance(v, Tensor) and not v.weak and v.shape == () and box_of(v) != ARRAY:
            return v.dtype.type(0)
        return zero_like(v)
    with building(sub):
        return nest.pack(value, [zero(v) for v in nest.flatten(value)])


def _naming_block(fn, block, location, why):
    """`fn` (a branch or loop body being traced) with an error it raises turned into a ConversionError
    naming the staged block: eagerly the error comes only on the runs that reach the block, but a
    trace runs it whatever the data. Refusals that name their construct already (ConversionError,
    SymbolicValueError) pass as they are."""
    def traced(*args):
        try:
            return fn(*args)
        except (ConversionError, SymbolicValueError):
            raise
        except Exception as e:
            if getattr(e, "_ag_staged_raise", None) is not None:  # a `raise` no `except` of the block handled
                raise e._ag_staged_raise from None
            raise _traced_error(block, location, why, e) from e
    return traced


def _traced_error(block, location, why, e):
    return (NeedsPython if isinstance(e, UnknownRank) else ConversionError)(
        f"{block} on a tensor (at {location}) raised {type(e).__name__} while it was traced ({e}, at "
        f"{traceback_location(e.__traceback__) or user_location()}); {why}. Make it valid for any "
        f"input (e.g. cast the operands first)")


def _check_argument_lists(state, block, location, *branch_states):
    """A list argument of the compiled function that a staged block changes is an error: eagerly
    the caller's list changes each time the block runs; a graph cannot change a Python list. A loop
    carries only what it assigns; `branch_states` (the copies an `if`'s branches ran on): a list
    changes if a branch changed its copy in place."""
    arguments = _argument_lists()
    if not arguments:
        return
    for i, value in enumerate(state):
        if id(value) in arguments and arguments[id(value)][0] is value and (not branch_states or any(
                len(copy[i]) != len(value) or any(a is not b for a, b in zip(copy[i], value))
                for copy in branch_states)):
            name = arguments[id(value)][1]
            raise ConversionError(
                f"list argument '{name}' is changed inside {block} on a tensor (at {location}); eagerly the "
                f"caller's list would change each time the block runs, which a compiled function cannot do. "
                f"Work on a copy (`{name} = list({name})` before it) and return the new list")


def _check_argument_lists_kept(before, after, block, location):
    """The check of _check_argument_lists for values a staged block carries through closure cells,
    items or attributes (`_ExtraState`): a list argument must come out with the items it went in with."""
    arguments = _argument_lists()
    if not arguments:
        return
    for b, a in zip(before, after):
        if id(b) in arguments and arguments[id(b)][0] is b and not (
                type(a) is list and len(a) == len(b) and all(x is y for x, y in zip(a, b))):
            name = arguments[id(b)][1]
            raise ConversionError(
                f"list argument '{name}' is changed inside {block} on a tensor (at {location}); eagerly the "
                f"caller's list would change each time the block runs, which a compiled function cannot do. "
                f"Work on a copy (`{name} = list({name})` before it) and return the new list")


def _check_arrays_kept(state, body, location, *branch_states):
    """An array made while tracing (`a = np.ones(4)`) that a branch updates in place, and that the
    function holds under another name too (a view of it, the array it views, `b = a`), is an error:
    the branch updated its own copy, the other names would not see it (fuzzer seed 824004757:
    `v = a[::-1]; if t: v += v`). Held by one name only, the copy is what the `if` gives on."""
    code = getattr(body, "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    for i, value in enumerate(state):
        if type(value) is not np.ndarray or all(
                copy[i] is value or np.array_equal(copy[i], value, equal_nan=value.dtype.kind in "fc")
                for copy in branch_states):
            continue
        name = names[i] if i < len(names) else "a variable"
        others = _other_names(value, name)
        if others:
            raise ConversionError(
                f"'{name}' holds an array computed while tracing (from Python values only) and is updated in "
                f"place inside an `if` on a tensor (at {location}), but {', '.join(others)} holds that array "
                f"too (or a view of it) and would not see the update. Write '{name} = {name} + ...' (a new "
                f"array), or `.copy()` it first")


def _alias_held_arrays(graph, state, names, location, *branches):
    """A branch that gives a variable a numpy array the function holds under another name too
    (`v = w`, `w = np.zeros(3)` before the `if`): the Cond's result is that array on the runs taking
    the branch, so an in-place update of it (`v += 1`) would change `w` eagerly on those runs only.
    The array is staged once, in the top graph, as a Const recorded as that array (`graph.numpy_alias`), and
    the branch gives it captured: an update reaching it, then or in a later loop iteration, is refused."""
    staged = {}
    for sub, copies, out in branches:
        for i, name in enumerate(names[:len(out)]):
            value = out[i]
            if type(value) is not np.ndarray:
                continue
            # a variable the branch left as it was holds its copy (`_copy_lists`): the array itself
            value = next((s for s, c in zip(state, copies) if c is value
                          and np.array_equal(s, c, equal_nan=s.dtype.kind in "fc")), value)
            held = _held_elsewhere(value, name)
            if held is None:
                continue
            if id(value) not in staged:
                top = graph
                while top.parent is not None:
                    top = top.parent  # outside every block: an `if` around this one gives it on too
                const = convert_to_tensor(value, top)
                record_numpy_alias(const, f"the numpy array {held} (given to '{name}' by the `if` at {location})",
                                   value, f"given to '{name}' on some runs by the tensor `if` at {location}")
                staged[id(value)] = const
            out[i] = sub.capture(staged[id(value)])


class _ArraysKept:
    """The arrays computed while tracing that the converted function calling a staged block holds in
    its variables, and their contents: tracing the block must not change them in place (`v = a[::-1];
    v += 1` in a branch changes `a` while tracing, once per trace, where eagerly it changes on the runs
    that take the branch: fuzzer seed 1024003980)."""

    def __init__(self, what, location):
        self.what, self.location = what, location
        frame = _converted_frame(sys._getframe(2))
        self.arrays = [] if frame is None else [
            (name, v, v.copy()) for name, v in frame.f_locals.items() if type(v) is np.ndarray and v.dtype.kind != "O"]

    def check(self):
        for name, value, before in self.arrays:
            if not np.array_equal(value, before, equal_nan=value.dtype.kind in "fc"):
                value[...] = before  # as it was: the trace fails, and the function may be called eagerly
                raise ConversionError(
                    f"'{name}' holds an array computed while tracing (from Python values only), and {self.what} "
                    f"on a tensor (at {self.location}) updates it in place (through a view, another name or "
                    f"a function it calls); tracing would update it once, not on the runs that get there. "
                    f"Write 'v = v + ...' (a new array) for the update, or make '{name}' from a tensor")


class _AttributesKept:
    """The attributes of the caller's objects (argument objects, `self`, objects reached through a
    global, a cell or another object) before a staged block: one that tracing the block sets by code
    the converter cannot see (a function it calls: `STATE.acc = STATE.w` in a helper) is refused. The
    trace sets it once, whatever the data, and the effects replay would set it on every call, where
    eagerly it is set only on the runs that take the branch or run the loop (fuzzer seeds 21000322,
    1153006709). Writes in the converted function's own code are carried (`_ExtraState`), not checked."""

    def __init__(self, what, location):
        self.what, self.location = what, location
        self.reads = outside_state.active()
        self.then = self.reads.attributes_now() if self.reads is not None else None
        self.objects = [(obj, label, dict(vars(obj))) for obj, label in _argument_objects()
                        if isinstance(getattr(obj, "__dict__", None), dict)]

    def check(self, extra=None):
        carried = extra.attribute_places() if extra else set()
        changes = [(label, obj, name) for obj, label, before in self.objects
                   for name in sorted(set(before) | set(vars(obj)), key=str)
                   if before.get(name, outside_state.ABSENT) is not vars(obj).get(name, outside_state.ABSENT)]
        if self.reads is not None:
            changes += [(label, obj, name) for label, obj, name, _, now in self.reads.attributes_set_since(self.then)
                        if not self.reads.is_stand_in(obj, name, now)]
        for label, obj, name in changes:
            if (id(obj), name) not in carried:
                attribute = f"{label}.{name}" if isinstance(name, str) and name.isidentifier() else f"{label}.<{name!r}>"
                raise ConversionError(
                    f"`{attribute}` is set by a function called inside {self.what} on a tensor (at {self.location}); "
                    f"tracing sets it once whatever the data, where eagerly it is set only on the runs that "
                    f"{'take that branch' if 'if' in self.what else 'run the loop body'}. Return the new value from "
                    f"that function and write `{attribute} = ...` in the compiled function's own code (an "
                    f"assignment there is carried by the graph), or call the function outside the block")


def _argument_objects():
    """(object, label) of the argument objects and `self` of the function being traced (set by its trace)."""
    graph = current_graph()
    while graph is not None and graph.parent is not None:
        graph = graph.parent
    return getattr(graph, "argument_objects", None) or ()


def _converted_frame(frame):
    while frame is not None and not frame.f_code.co_filename.startswith("<autograph_lite converted"):
        frame = frame.f_back
    return frame


def _other_names(value, name):
    """The names besides `name` under which the converted function calling this holds `value`'s
    memory (a view of it, the array it views), as far as its frame shows them."""
    frame = _converted_frame(sys._getframe(2))
    found = ["the array it is a view of"] if value.base is not None else []
    if frame is not None:
        found += [f"'{k}'" for k, v in frame.f_locals.items() if k != name and type(v) is np.ndarray
                  and (v is value or np.shares_memory(v, value))]
    return found


def _copy_lists(state):
    """`state` with its lists and numpy arrays copied: a branch that appends to one or updates
    it in place (`a += 1` on a concrete array) must not change what the other branch sees. A copy
    of a list argument stands for that argument (a staged block nested in the branch changing it
    is refused too: fuzzer seed 7008171)."""
    copies = tuple(list(v) if type(v) is list else v.copy() if type(v) is np.ndarray else v for v in state)
    arguments = _argument_lists()
    for value, copy in zip(state, copies):
        if arguments and copy is not value and id(value) in arguments and arguments[id(value)][0] is value:
            arguments[id(copy)] = (copy, arguments[id(value)][1])
    return copies


def _argument_lists():
    """id -> (list, label) of the list arguments of the function being traced (set by its trace)."""
    graph = current_graph()
    while graph is not None and graph.parent is not None:
        graph = graph.parent
    return getattr(graph, "argument_lists", None)


def _labels(names, values):
    """One error-message label per leaf of `values`, named after the variables."""
    labels = []
    for name, value in zip(names, values):
        labels.extend(nest.paths(value, name))
    return labels


def _kind(value):
    """The item kind of a list value a staged block gives back (a TensorList or a Python list)."""
    if isinstance(value, TensorList):
        return value.kind
    return TensorList.from_list(value).kind if type(value) is list else None


def _list_tensor(value, name, location):
    if not isinstance(value, TensorList) or value.tensor is None:
        raise ConversionError(f"list '{name}' is appended to on one side of a tensor `if` but is empty "
                              f"or not a list on the other (at {location}); start it with at least one "
                              f"item or append in both branches")
    return value.tensor


def _zeros_like(sub, value):
    """A stand-in with `value`'s structure and types, made in graph `sub`."""
    with building(sub):
        return nest.pack(value, [v.empty_like() if isinstance(v, TensorList) else zero_like(v)
                                 for v in nest.flatten(value)])


# --- while ------------------------------------------------------------------------------

def while_stmt(test, body, state, names, opts=None):
    """`while test: body` over variables `state`; returns their final values."""
    state = tuple(state)
    start, iterations, warned = time.perf_counter(), 0, False
    with _unrolling() as level:
        while True:
            graph = current_graph()
            first = len(graph.nodes) if graph is not None else 0  # none: a loop run as Python runs this one
            pred = test(*state)
            if isinstance(pred, Choice):
                pred = pred.truth()
            if isinstance(pred, PythonValue):  # known when the graph runs: its truth is a bool tensor
                pred = python_values.truth(pred)
            if isinstance(pred, Tensor):
                break
            if not pred:
                return state
            state = tuple(body(*state))
            iterations += 1
            level[1] = iterations
            warned = _warn_long_unroll(iterations, start, "while", warned)
    location = user_location()
    _check_staging_allowed(opts, "`while` loop", location)
    extra = _ExtraState(opts, "`while` loop", location)
    dict_items, places = _check_runs_once(pred, opts, state, names, "while", location, extra)
    try:
        result = _while_staged(test, body, state, names, opts, graph, first, pred, location, extra)
    except NeedsPython as e:  # not traceable with static ranks: the loop runs as Python in the graph
        return python_loops.while_loop(test, body, state, names, pred, location, extra, opts, e)
    _check_places_set(pred, places, extra, "while", location)
    _mark_maybe_unset(dict_items, pred, "while", location)
    return _note_return_values(names, _box_python_starts(state, result, pred, location))


def _while_staged(test, body, state, names, opts, graph, first, pred, location, extra):
    if (opts and opts.get("test_binds")) or any(has_effects(n) for n in graph.nodes[first:]):
        # `:=` in the condition binds names (cells the loop carries), or the condition prints or
        # asserts: it must run once per test, as in Python, not again in the loop's own condition.
        # The test just traced is the first one; the body runs the next test at its end, and the
        # loop carries the predicate. After the loop the names hold what the last (failing) test bound.
        def truth(p):  # the first test and the next may give different dtypes (`0 < i and x`)
            return ops.cast(p, bool) if isinstance(p, Tensor) and p.dtype != np.bool_ and p.ndim == 0 \
                else p if isinstance(p, Tensor) else bool(p)

        def body_then_test(_, *s):
            s = tuple(body(*s))
            return (truth(test(*s)), *s)
        result = _staged_loop(lambda p, *s: p, body_then_test, (truth(pred), *state), ("<condition>", *names),
                              location, extra)
        return result[1:]
    return _staged_loop(test, body, state, names, location, extra)


def _box_python_starts(state, result, runs, location):
    """`result` of a tensor loop whose first test is `runs`: a variable that starts as a Python number
    and that the loop makes a numpy value stays the Python number on the runs where the loop runs
    zero times, as eagerly (a `PythonBox` picked by `runs` when the call returns or an op uses it)."""
    boxed = []
    for start, end in zip(state, result):
        starts, ends = nest.flatten(start), nest.flatten(end)
        if len(starts) != len(ends):
            boxed.append(end)
            continue
        for k, (s, e) in enumerate(zip(starts, ends)):
            python = type(s) in (bool, int, float, complex) or (
                isinstance(s, Tensor) and s.weak and s.shape == () and s.python_box is None)
            maybe = isinstance(s, Tensor) and s.python_box is not None  # a Python number on some runs (an `if`)
            if not ((python or maybe) and isinstance(e, Tensor) and e is not s and not e.weak and e.shape == ()
                    and e.python_box is None):
                continue
            if not isinstance(runs, Tensor):  # known while tracing (a `for` over a known length)
                ends[k] = e if runs else s
                continue
            runs = runs if runs.dtype == np.bool_ else ops.cast(runs, bool)
            if python:
                e.python_box = PythonBox(runs, False, ops.convert_to_tensor(s), location, loop=True)
            else:  # the Python number where the start was one and the loop ran zero times
                box = s.python_box
                was = ops.cast(box.pick, bool)
                was = was if box.python_when else ops.logical_not(was)
                value = box.value if box.value is not None else _as_python_number(s)
                e.python_box = PythonBox(ops.logical_and(ops.logical_not(runs), was), True, value, location,
                                         loop=True)
        boxed.append(nest.pack(end, ends))
    return tuple(boxed)


def _as_python_number(t):
    """0-d tensor `t` as the Python number of its value (weak, of the Python type of its kind)."""
    default = np.dtype(type(t.dtype.type(0).item()))
    return python_scalar(t if t.dtype == default else ops.cast(t, default))


def _refuse_python_boxes(values, names, location):
    """A loop variable that starts as a Python float on some runs only (`Tensor.python_box`) and a
    float32 (complex64, float16) on the others is an error: eager's loop computes on whichever it is,
    in its own precision, which a graph loop cannot carry. (Of one precision the loop carries the
    numpy value, and its box after the loop is the numpy one.)"""
    for name, value in zip(names, values):
        boxed = next((t for t in nest.flatten(value) if isinstance(t, Tensor) and t.python_box is not None
                      and t.dtype.kind in "fc" and t.dtype.itemsize < (16 if t.dtype.kind == "c" else 8)), None)
        if boxed is not None:
            on_python, on_numpy, remedy = boxed.python_box.paths()
            raise ConversionError(
                f"'{name}' is a Python number where {on_python} and a numpy value {on_numpy}, and a loop "
                f"on a tensor (at {location}) carries it: "
                f"eager's loop would compute on whichever it is, in its own type. {remedy[0].upper()}{remedy[1:]}")


def _check_runs_once(runs, opts, state, names, kind, location, extra):
    """When the graph runs, if a loop whose first test is `runs` runs zero times: UnboundLocalError,
    as Python gives, when a variable it first assigns is read after it. Returns the dict items it
    may leave out (`_mark_maybe_unset`) and the other items and attributes with no value before
    it (`_check_places_set`: ValueError, as eagerly they stay unset and a graph cannot leave so)."""
    unset = [n for n, v in zip(names, state)
             if n in (opts or {}).get("unbound_after", ()) and isinstance(v, Undefined)]
    if unset:
        _assert_runs(runs, f"local variable {', '.join(repr(n) for n in unset)} is read after a `{kind}` loop "
                           f"that ran zero times, so it has no value", "UnboundLocalError", location)
    droppable = (opts or {}).get("droppable", ())  # dicts the function only indexes and returns
    dict_items = [item for item in extra.unset_dict_items() if item[0] in droppable] \
        if isinstance(runs, Tensor) else []
    places = [p for p in extra.unset_places() if p not in {label for label, _, _ in dict_items}]
    return dict_items, places


def _check_places_set(runs, places, extra, kind, location):
    """After the loop: items and attributes it first wrote (not dict items left out, see
    _check_runs_once) raise ValueError on the runs where it ran zero times; those still unset
    after it (written only on a path of the body its trace did not take) stay unset, as eagerly."""
    places = [p for p in places if p not in extra.unset_places()]
    if places:
        _assert_runs(runs, f"{', '.join(f'`{p}`' for p in places)} is first written inside a `{kind}` loop on a "
                           f"tensor that ran zero times: eagerly it would stay unset, which a compiled function "
                           f"cannot do; give it a value before the loop", "ValueError", location)


def _mark_maybe_unset(dict_items, runs, kind, location):
    """After a tensor loop: a dict item it first wrote is a `MaybeUnset` (set where the loop ran)."""
    for label, base, key in dict_items:
        if key in base and isinstance(base[key], Tensor):
            base[key] = MaybeUnset(runs, base[key], label, f"first written inside the `{kind}` loop on a tensor at "
                                   f"{location}, so it is unset where the loop runs zero times", base, key)


def _assert_runs(runs, message, error, location):
    if not isinstance(runs, Tensor):
        if not runs:
            raise {"ValueError": ValueError, "UnboundLocalError": UnboundLocalError}[error](f"{message} (at {location})")
        return
    apply(ASSERT, (runs,), {"message": message, "location": location, "error": error})


@contextlib.contextmanager
def _unrolling():
    """While tracing, a Python loop the trace unrolls: the nodes each iteration makes record it
    (`Node.unrolled`: errors, ag.debug.dump and check_numerics name it); yields [loop's line,
    iteration], whose iteration the loop advances."""
    if current_graph() is None:
        yield [None, 0]
        return
    level = [user_location(3), 0]
    _tracing.unrolled.append(level)
    try:
        yield level
    finally:
        _tracing.unrolled.remove(level)


def _warn_long_unroll(iterations, start, kind, warned):
    """Log once when a Python loop unrolled into a trace gets long; returns whether it has warned."""
    if warned or current_graph() is None:
        return warned
    if iterations < UNROLL_WARNING_ITERATIONS and time.perf_counter() - start < UNROLL_WARNING_SECONDS:
        return False
    location = user_location()
    if location in _tracing.unroll_warned:  # said once per loop per trace
        return True
    _tracing.unroll_warned.add(location)
    logger.warning("a Python `%s` loop at %s has run %d iterations while tracing (%.1f s); it is being "
                   "unrolled into the graph. If its length comes from data, iterate over ag.range(n) "
                   "with a tensor n so it becomes one graph loop.", kind, location, iterations,
                   time.perf_counter() - start)
    return True


def _staged_loop(test, body, state, names, location, extra=None, written=None):
    """Stage a loop whose condition is symbolic. Lists become TensorLists; variables with no
    value yet (Undefined, empty lists) get start values from a first trace of the body.
    `extra` (an _ExtraState) is carried beside the variables."""
    own = written is None  # the check of the outermost call (the one carrying `extra`'s places)
    written = _AttributesKept("a loop", location) if own else written
    if extra:
        count = len(state)
        test, body = extra.loop(test, body, count, location)
        result = _staged_loop(test, body, (*state, *extra.get()), (*names, *extra.names), location, written=written)
        written.check(extra)
        extra.set(result[count:])
        return result[:count]
    _check_argument_lists(state, "a loop", location)
    _refuse_python_boxes(state, names, location)
    lists = [i for i, v in enumerate(state) if type(v) is list or isinstance(v, TensorList)]
    state = tuple(TensorList.from_list(v) if type(v) is list else v for v in state)
    unknown, offset = {}, 0
    for value in state:
        for leaf in nest.flatten(value):
            if isinstance(leaf, Undefined):
                unknown[offset] = "value"
            elif isinstance(leaf, TensorList) and leaf.tensor is None:
                unknown[offset] = "list"
            offset += 1

    # what each list's items are (lists.item_kind): the body is traced again until the kinds it
    # starts from are the kinds it gives back, so its reads of items see the kinds every iteration sees
    kinds = {i: state[i].kind for i in lists}
    changed = []

    def wrap(values):
        values = list(values)
        for i in lists:
            if isinstance(values[i], Tensor):
                values[i] = TensorList(values[i], kinds[i])
        return values

    def unwrap(values):
        values = list(values)
        for i in lists:
            if isinstance(values[i], TensorList):
                kind = join_kinds(kinds[i], values[i].kind)
                if kind != kinds[i]:
                    kinds[i] = kind
                    changed.append(i)
                values[i] = _list_tensor(values[i], names[i], location)
        return tuple(values)

    def settled():
        done = not changed
        changed.clear()
        return done

    body = _naming_block(body, "the body of a loop", location, "the body is traced even when the data runs "
                         "it zero times")
    kept = _ArraysKept("a loop", location)
    with memory.shared_arrays(state, known=(state,)):
        result = stage_while(lambda *s: test(*wrap(s)), lambda s: unwrap(body(*wrap(s))), unwrap_lists(state, lists),
                             _labels(names, state), location, unknown=unknown, var_names=names, settled=settled)
    kept.check()
    if own:
        written.check()
    for i in lists:  # a list the loop grew holds what its body appended: an update of that array after
        t = result[i]  # the loop makes it stale (fuzzer seed 1222010457: `L.append(y)`, then `y[0] = 7`)
        if isinstance(t, Tensor) and t.node.opdef is WHILE:
            body = t.node.attrs["body"]
            _hold_what_a_branch_list_holds(t, body.outputs[t.index], body)
    return tuple(wrap(result))


def unwrap_lists(state, lists):
    """Start values for a staged loop: TensorLists as their tensors (pending ones as they are)."""
    values = list(state)
    for i in lists:
        if values[i].tensor is not None:
            values[i] = values[i].tensor
    return tuple(values)


# --- for --------------------------------------------------------------------------------

def for_stmt(iterable, extra_test, body, state, names, opts=None):
    """`for target in iterable: body` over variables `state` (the target among them).

    `body(item, *state)` assigns the target and runs the loop body. `extra_test(*state)`,
    if given, must hold for another iteration to start (it carries `break` and `return`).
    """
    if isinstance(iterable, PythonValue):  # known when the graph runs: the loop runs as Python then
        location = user_location()
        _check_staging_allowed(opts, "`for` loop", location)
        extra = _ExtraState(opts, "`for` loop", location)
        return python_loops.for_loop(iterable, extra_test, body, tuple(state), names, location, extra, opts)
    if isinstance(iterable, (Tensor, TensorList, StagedSequence)):
        location = user_location()
        return _staged_for(iterable, extra_test, body, tuple(state), names, location, opts)
    state = tuple(state)
    start, iterations, warned = time.perf_counter(), 0, False
    made, rest = _tracing.nodes_made, None
    budget = STAGE_AFTER_NODES if not _in_graph_loop() else 0
    with _unrolling() as level:
        for item in iterable:
            if _stages_rest(iterable, iterations, _tracing.nodes_made - made, budget, level[0]):
                rest = iterable[iterations:]
                break
            level[1] = iterations
            if extra_test is not None:
                go_on = extra_test(*state)
                if isinstance(go_on, Tensor):
                    # a tensor `break`/`return` in an unrolled loop: the rest of it runs under a Cond
                    state = if_stmt(go_on, lambda *s, item=item: body(item, *s), lambda *s: s, state, names, opts)
                    iterations += 1
                    continue
                if not go_on:
                    break
            state = tuple(body(item, *state))
            iterations += 1
            warned = _warn_long_unroll(iterations, start, "for", warned)
    if rest is not None:
        if level[0] not in _tracing.staged_ranges:
            _tracing.staged_ranges.append(level[0])
        return _staged_for(rest, extra_test, body, state, names, level[0], opts)
    return state


def _staged_for(iterable, extra_test, body, state, names, location, opts):
    """The variables after one graph loop over `iterable`: a tensor, a TensorList, a StagedSequence
    or (the rest of a long Python range, `_stages_rest`) a Python range."""
    _check_staging_allowed(opts, "`for` loop", location)
    sequence = _sequence(iterable, location)
    extra = _ExtraState(opts, "`for` loop", location)
    runs = sequence[0] > 0
    dict_items, places = _check_runs_once(runs, opts, state, names, "for", location, extra)
    try:
        result = _tensor_for(sequence, extra_test, body, state, names, location, extra)
    except NeedsPython as e:  # not traceable with static ranks: the loop runs as Python in the graph
        if isinstance(iterable, builtins.range):
            raise  # the trace starts again, unrolling it (`range_staging`)
        return python_loops.for_loop(iterable, extra_test, body, state, names, location, extra, opts, e)
    _check_places_set(runs, places, extra, "for", location)
    _mark_maybe_unset(dict_items, runs, "for", location)
    count = known_int(sequence[0]) if isinstance(sequence[0], Tensor) else sequence[0]
    return _note_return_values(names, _box_python_starts(state, result, runs if count is None else count > 0,
                                                         location))


# A Python `for` over a range that has made more than STAGE_AFTER_NODES nodes while the trace unrolled
# it (inside a graph loop's body: any), with at least STAGE_AT_LEAST iterations left or a rest that
# would make STAGE_AFTER_NODES more (a nest of short loops: NPBench's scattering_self_energies, eight
# deep, unrolls 21,600 bodies), runs the rest as one graph loop (the tests lower them)
STAGE_AFTER_NODES = 2000
STAGE_AT_LEAST = 16


def _stages_rest(iterable, iterations, made, budget, location):
    """Whether the trace stages the rest of a Python loop over `iterable` at `location` after
    `iterations` iterations that made `made` nodes as a graph loop, `budget` the nodes it may
    unroll. A loop this trace staged before (at the same `file:line`) is staged whole: unrolling its
    first iteration again in each iteration of a staged loop around it doubles the nodes per level
    of a nest, and a helper called again (NPBench's lenet, two conv2d layers) would run its unrolled
    part on numpy's path (lenet 0.19 of numpy's time, 0.59 with it)."""
    if _tracing.staged_ranges is None or type(iterable) is not builtins.range:
        return False
    if not iterations:
        return location in _tracing.staged_ranges
    if made <= budget:
        return False
    left = len(iterable) - iterations
    return left >= STAGE_AT_LEAST or (left > 0 and left * made >= STAGE_AFTER_NODES * iterations)


def _in_graph_loop():
    """Whether the graph being built is (inside) a graph loop's body: unrolling there makes the body
    bigger, not the loop faster."""
    graph = current_graph()
    while graph is not None:
        if graph.name in ("body", "cond"):
            return True
        graph = graph.parent
    return False


@contextlib.contextmanager
def range_staging(on):
    """While tracing, long Python range loops may run their rest as graph loops (`_stages_rest`) if
    `on`, else they unroll whatever their length. Yields the list of the staged loops' `file:line`
    (None if not `on`): if the trace fails with any staged, the caller traces again with it off,
    since staging changes how the body is traced (its target is a tensor) and the error may come
    from that. The loops the trace warned of start empty too."""
    saved = _tracing.staged_ranges, _tracing.unroll_warned
    _tracing.staged_ranges, _tracing.unroll_warned = [] if on else None, set()
    try:
        yield _tracing.staged_ranges
    finally:
        _tracing.staged_ranges, _tracing.unroll_warned = saved


class StagedSequence:
    """What `enumerate` and `zip` give over tensors: `count` items, item `i` being `item(i)`
    (both may be symbolic). Only a `for` loop can go through it, as one graph loop."""

    def __init__(self, what, count, item):
        self.what, self.count, self.item = what, count, item

    def __iter__(self):
        raise TypeError(f"{self.what} over a tensor can only be iterated by a `for` loop in converted code "
                        f"(at {user_location()})")


python_loops.TRACE_ONLY.append(StagedSequence)


def enumerate_(iterable, start=0):
    """enumerate: over a tensor, a StagedSequence a `for` turns into one graph loop."""
    if not isinstance(iterable, (Tensor, TensorList, StagedSequence)):
        return builtins.enumerate(iterable, start)
    count, item = _sequence(iterable, user_location())
    start = python_int(start)  # Python's enumerate counts in Python ints (weak), from int(start)
    return StagedSequence("enumerate()", count, lambda i: (start + i, item(i)))


def zip_(*iterables, strict=False):
    """zip: when one of the iterables is a tensor, a StagedSequence over the shortest."""
    if not any(isinstance(it, (Tensor, TensorList, StagedSequence)) for it in iterables):
        return builtins.zip(*iterables, strict=strict)
    location = user_location()
    if strict:
        raise ConversionError(f"zip(..., strict=True) over a tensor is not supported (at {location}): the "
                              f"lengths are known only when the graph runs")
    parts = [_sequence(it, location) for it in iterables]
    count = parts[0][0]
    for other, _ in parts[1:]:
        count = ops.minimum(count, other)
    return StagedSequence("zip()", count, lambda i: tuple(item(i) for _, item in parts))


def _sequence(iterable, location):
    """(count, item) of what a staged `for` goes through: the first axis of a tensor, an
    ag.range (without building it), a list of tensors, a StagedSequence, or (beside a
    tensor in zip) a Python range, list or tuple of numbers."""
    if isinstance(iterable, StagedSequence):
        return iterable.count, iterable.item
    if isinstance(iterable, TensorList):
        count, item = _sequence(iterable.stacked(), location)
        return count, lambda i: iterable.item(item(i), 4)
    if isinstance(iterable, np.ndarray):
        iterable = ops.convert_to_tensor(iterable)
    elif isinstance(iterable, builtins.range):
        count = builtins.len(iterable)
        return count, lambda i: iterable.start + i * iterable.step
    elif isinstance(iterable, (list, tuple)):
        # Python numbers would be weak (NEP 50) items: no graph value keeps that, so they are refused
        if not all(isinstance(v, (np.ndarray, np.generic)) for v in iterable):
            raise ConversionError(f"a {type(iterable).__name__} zipped with a tensor must hold numpy arrays "
                                  f"or scalars of one shape (at {location}); wrap it in np.array(...)")
        iterable = ops.convert_to_tensor(np.stack(iterable)) if iterable else ops.convert_to_tensor(np.zeros(0))
    elif not isinstance(iterable, Tensor):
        raise ConversionError(f"a {type(iterable).__name__} cannot be zipped with a tensor (at {location}); "
                              f"convert it to an array first")
    if iterable.node.op == "Range":
        # in int64: small or unsigned bounds would wrap (0 - uint8(5))
        start, limit, delta = (_int64(b) for b in _range_bounds(iterable, location))
        count = ops.maximum(ops.cast(-((start - limit) // delta), np.int64), 0)
        if id(iterable) in iterable.graph.python_ranges:  # Python's range(): items are Python ints
            start, delta = python_int(start), python_int(delta)
            return count, lambda i: start + i * delta
        # an item of the range's array: a numpy scalar, as iterating it eagerly gives
        return count, lambda i: _numpy_scalar(ops.cast(start + i * delta, iterable.dtype))
    if iterable.ndim == 0:
        raise TypeError(f"cannot iterate over a scalar {iterable!r} (at {location})")
    return ops.shape(iterable)[0], lambda i: iterable[i]


def _tensor_for(sequence, extra_test, body, state, names, location, extra):
    """A While over the items of `sequence`, a (count, item) pair (see _sequence)."""
    count, item = sequence

    def test(i, *s):
        more = i < count
        if extra_test is None:
            return more
        from .logical import and_
        return and_(lambda: more, lambda: extra_test(*s), truth=True)

    def step(i, *s):
        return (i + 1, *body(item(i), *s))

    # the counter is a Python int (weak): items computed from it keep the dtypes eager gives
    result = _staged_loop(test, step, (0, *state), ("<iteration>", *names), location, extra)
    return result[1:]


def _numpy_scalar(t):
    """0-d tensor `t` boxed as a numpy scalar (`t[()]` where its box is a 0-d array)."""
    return t[()] if box_of(t) == ARRAY else t


def _int64(bound):
    """An integer range bound as int64 (a Python number stays one; floats are ag.range's business)."""
    if isinstance(bound, Tensor) and bound.dtype.kind in "biu" and bound.dtype != np.int64:
        return ops.cast(bound, np.int64)
    return bound


def _range_bounds(r, location):
    """start, limit, delta of an ag.range; a zero step is the ValueError Python's range raises
    (now if the trace knows it, else when the graph runs)."""
    inputs = r.node.inputs
    if len(inputs) == 1:
        return 0, inputs[0], 1
    if len(inputs) == 2:
        return inputs[0], inputs[1], 1
    start, limit, delta = inputs
    known = constant_value(delta)
    if known is not None and np.all(np.asarray(known) == 0):
        raise ValueError(f"range() arg 3 must not be zero (at {location})")
    if known is None:
        apply(ASSERT, (ops.not_equal(delta, 0),), {"message": "range() arg 3 must not be zero",
                                                    "location": location, "error": "ValueError"})
    return start, limit, delta
