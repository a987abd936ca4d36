"""Functional control flow: `cond` and `while_loop`.

On a Python predicate they run as plain Python. On a symbolic predicate they trace
each branch (or the loop's condition and body) into a sub-graph and add one `Cond`
or `While` node whose inputs are the predicate or loop variables plus every outer
value the sub-graphs read (their captures).
"""
import sys

import numpy as np

from .. import nest
from ..errors import ConversionError, NeedsPython, user_location
from ..runtime import devices, memory
from ..runtime.boxes import ARRAY, SCALAR, VARIES, PythonBox, box_of
from ..runtime.graph import Graph, Tensor, building, check_stale_across_iterations, current_graph, from_outside_iteration
from ..runtime.opdef import COND, WHILE, always
from .array_ops import _like
from .core import apply, convert_to_tensor, define, exemplar, grad_rule
from .math_ops import cast, logical_not
from .python_values import PythonValue, as_python

_MAX_RELAXATIONS = 8


def _python_int_infer(x):
    if x.ndim != 0 or x.dtype.kind not in "biu":
        raise TypeError(f"an integer scalar is needed, got {x!r}")
    return [((), np.dtype(np.int64))]


# A Python int (a weak scalar, NEP 50) from an integer tensor: what Python's range() and
# enumerate() give when their bounds are numpy integers. At run time a weak value must be a
# Python number (the plan computes on it with Python's operators), so this is int(x), not a cast.
PYTHON_INT = define("PythonInt", lambda xp: int, _python_int_infer, value_errors=always)


def _python_scalar_infer(x):
    if x.ndim != 0 or x.dtype.kind not in "biufc":
        raise TypeError(f"a number scalar is needed, got {x!r}")
    return [((), x.dtype)]


# A Python number (weak) from a scalar of its default dtype: an item of a list of Python numbers
# read back from the stacked tensor that carries the list through a graph loop.
PYTHON_SCALAR = define("PythonScalar", lambda xp: _item, _python_scalar_infer, value_errors=always)


def _item(x):
    return x.item() if hasattr(x, "item") else x  # a merge may hold a Python number already (no cast)


@grad_rule(PYTHON_SCALAR)
def _python_scalar_grad(node, dy):  # the same number, held as Python's: its cotangent passes through
    return [_like(dy, node.inputs[0])]


def python_scalar(x):
    """`x` (a scalar of a Python number's default dtype, possibly symbolic) as a weak Python number."""
    if not isinstance(x, Tensor):
        return x.item()
    if x.weak:
        return x
    out = apply(PYTHON_SCALAR, (x,))
    out.weak = True
    return out


def python_int(x):
    """`x` (an integer scalar, possibly symbolic) as a weak Python int."""
    if not isinstance(x, Tensor):
        return x.__index__()
    if x.weak:
        return x
    out = apply(PYTHON_INT, (x,))
    out.weak = True
    return out


def relax_shape(a, b):
    """The most specific shape both `a` and `b` fit: differing dims become None."""
    return tuple(x if x == y else None for x, y in zip(a, b))


def _unify_weak(a, b):
    """dtype that a weak (Python scalar) value `a` takes beside strong `b`, or None if numpy disagrees."""
    return b.dtype if np.result_type(b.dtype, exemplar(a)) == b.dtype else None


def _close(sub, explicit, outer_captures, outputs):
    """Fix `sub`'s inputs: explicit placeholders, then one placeholder per outer capture."""
    mine = {id(outer): inner for outer, inner in sub.captures}
    with building(sub):
        sub.inputs = list(explicit) + [mine[id(o)] if id(o) in mine else sub.capture(o)
                                       for o in outer_captures]
    sub.outputs = list(outputs)


def _union_captures(*subs):
    seen, union = set(), []
    for sub in subs:
        for outer, _ in sub.captures:
            if id(outer) not in seen:
                seen.add(id(outer))
                union.append(outer)
    return union


def _to_tensors(sub, values):
    with building(sub):
        return [convert_to_tensor(v, sub) for v in values]


def cond(pred, true_fn, false_fn, *, names=None):
    """`true_fn()` if `pred` else `false_fn()`.

    A Python (or concrete array) `pred` picks a branch now. A symbolic `pred` traces both
    branches and decides when the graph runs; both must return the same structure with
    the same dtypes (shapes that differ become None dims). `names` labels the outputs
    in error messages.

        y = ag.cond(x > 0, lambda: x * 2.0, lambda: -x)
    """
    if not isinstance(pred, Tensor):
        return true_fn() if pred else false_fn()
    graph = current_graph()
    location = user_location(2)
    carried = []
    while True:
        try:
            then_g, then_out = trace_function(graph, "then", true_fn, carried=carried)
            else_g, else_out = trace_function(graph, "else", false_fn, carried=carried)
            break
        except memory.Carry as c:  # a branch writes memory from outside: carry it as an output too
            carried.append(c.storage)
    if not carried:
        return build_cond(pred, then_g, then_out, else_g, else_out, names, location)
    out = build_cond(pred, then_g, (then_out, *then_g.carried_out), else_g, (else_out, *else_g.carried_out),
                     names and (*names, *(f"the memory of {s.label}" for s in carried)), location)
    memory.carried_out(carried, out[1:], location)
    return out[0]


def trace_function(parent, name, fn, args=(), carried=None):
    """Trace `fn(*args)` into a new sub-graph of `parent`; returns (sub-graph, outputs). With
    `carried` (a list of runtime/memory.py storages), the sub-graph carries that memory
    (`sub.carried_out`), and a write to other memory from outside raises `memory.Carry`."""
    sub = Graph(name, parent=parent)
    if carried is None:
        with building(sub):
            return sub, fn(*args)
    with memory.block(sub, carried), building(sub):
        return sub, fn(*args)


def _is_static(value):
    """A leaf that cannot be a tensor and is carried through control flow as the same object."""
    return not isinstance(value, (Tensor, bool, int, float, complex, np.ndarray, np.generic)) \
        and not devices.is_device_array(value)


def build_cond(pred, then_g, then_out, else_g, else_out, names, location, var_names=None):
    """One Cond node from two traced branches. Non-tensor leaves must be the same object in both.

    `names` label the leaves in error messages; `var_names` the top-level items (variables).
    """
    graph = current_graph()
    pred = graph.capture(pred)
    if pred.ndim != 0:
        raise ValueError(f"a tensor condition must be a scalar, got {pred!r} (at {location})")
    if nest.structure_of(then_out) != nest.structure_of(else_out):
        raise ConversionError(f"the branches of a conditional return different structures: "
                              f"{_first_difference(then_out, else_out, var_names)} (at {location})")
    then_flat, else_flat = nest.flatten(then_out), nest.flatten(else_out)
    labels = names or nest.paths(then_out, "output")
    results, then_t, else_t, boxed = list(then_flat), [], [], []
    known_later = set()  # leaves that are PythonValues (ops/python_values.py): the Cond gives one
    for i, (t, e) in enumerate(zip(then_flat, else_flat)):
        if t is not e and (isinstance(t, PythonValue) or isinstance(e, PythonValue)):
            # a value known only when the graph runs on one side: each side as one, the run's pick
            with building(then_g):
                t = as_python(t, location).tensor
            with building(else_g):
                e = as_python(e, location).tensor
            known_later.add(i)
        elif _is_static(t) or _is_static(e):
            if t is not e:
                raise ConversionError(f"'{labels[i]}' is {_short(t)} in the true branch and {_short(e)} in "
                                      f"the false branch; a tensor conditional can only merge numbers and "
                                      f"arrays (at {location})")
            continue
        handles = t, e
        if t is e and isinstance(t, Tensor) and t.node.graph is not then_g and t.node.graph is not else_g:
            # both branches give the same array from outside (`v = x if c else x`): it stays that
            # handle, so writes through it reach x (fuzz seed 23000299)
            continue
        (t,), (e,) = _to_tensors(then_g, [t]), _to_tensors(else_g, [e])
        same = _captured_from(then_g, t)
        if same is not None and same is _captured_from(else_g, e):
            results[i] = same  # both branches give the same outer value: it is that value (and its aliases)
            continue
        # a handle of memory the branch wrote gives what it held at the branch's end (fuzz seed 22001258)
        ends = [memory.at_end(g, h) for g, h in ((then_g, handles[0]), (else_g, handles[1]))]
        for g, end, h in zip((then_g, else_g), ends, handles):
            if end is not None:
                g.ends_of_handles.append((end, h))
        t, e = [x if end is None else end for end, x in zip(ends, (t, e))]
        if t.python_box is not None or e.python_box is not None:
            # a side that is a Python number on some runs only: which, and the number, as outputs too
            (t_is, t_value), (e_is, e_value) = _python_side(then_g, t), _python_side(else_g, e)
            if t_value is None:
                t_value = _weak_filler(then_g, e_value)
            if e_value is None:
                e_value = _weak_filler(else_g, t_value)
            if t_value.dtype != e_value.dtype:
                raise ConversionError(f"'{labels[i]}' is a Python {_python_name(t_value)} on some runs and a Python "
                                      f"{_python_name(e_value)} on others, by the tensor `if`s it went through; give "
                                      f"them the same type (at {location})")
            then_t += [t_is, t_value]
            else_t += [e_is, e_value]
            boxed.append((i, len(then_t) - 2, True, len(then_t) - 1, _numpy_box(t, e)))
        elif t.weak != e.weak and (e if t.weak else t).shape == ():
            # a Python number on one side, a numpy value on the other: the number as an output too
            then_t.append(t if t.weak else _weak_filler(then_g, e))
            else_t.append(e if e.weak else _weak_filler(else_g, t))  # the filler is never returned
            boxed.append((i, None, t.weak, len(then_t) - 1, _numpy_box(t, e)))
        t, e = _unify_pair(then_g, else_g, t, e, labels[i], location, ("true branch", "false branch"))
        then_t.append(t)
        else_t.append(e)
        results[i] = _GRAPH_OUTPUT
    specs = [(relax_shape(t.shape, e.shape), t.dtype) for t, e in zip(then_t, else_t)]
    captures = _union_captures(then_g, else_g)
    _close(then_g, [], captures, then_t)
    _close(else_g, [], captures, else_t)
    node = graph.add_node(COND, [pred, *captures], {"then_branch": then_g, "else_branch": else_g},
                          specs, location=location)
    for out, t, e in zip(node.outputs, then_t, else_t):
        out.weak = t.weak and e.weak
    extra = {k for _, pick, _, value, _ in boxed for k in (pick, value) if k is not None}
    outputs = iter(o for k, o in enumerate(node.outputs) if k not in extra)
    results = [next(outputs) if value is _GRAPH_OUTPUT else value for value in results]
    for i in known_later:
        results[i] = PythonValue(results[i], f"'{labels[i]}'", location)
    for i, pick, python_when, value, numpy_box in boxed:
        # eager gives the Python number where that branch ran: the output slot picks the box
        results[i].python_box = PythonBox(pred if pick is None else node.outputs[pick], python_when,
                                          node.outputs[value], location)
        results[i].box = numpy_box  # where it is not one (a numpy scalar or a 0-d array)
    return nest.pack(then_out, results)


def _numpy_box(t, e):
    """The box of what a side that is not a Python number gives (None where the two differ)."""
    boxes = {box_of(x) for x in (t, e) if not x.weak}
    return boxes.pop() if len(boxes) == 1 else None


def _python_side(sub, t):
    """(whether `t` is a Python number, as a bool tensor of branch `sub`; that number as a weak tensor
    of `sub`, None where it never is one)."""
    with building(sub):
        if t.weak:
            return convert_to_tensor(np.bool_(True), sub), t
        box = t.python_box
        if box is None:
            return convert_to_tensor(np.bool_(False), sub), None
        pick = cast(convert_to_tensor(box.pick, sub), bool)
        is_python = pick if box.python_when else logical_not(pick)
        if box.value is not None:
            return is_python, convert_to_tensor(box.value, sub)
        default = np.dtype(type(t.dtype.type(0).item()))
        return is_python, python_scalar(t if t.dtype == default else cast(t, default))


def _python_name(t):
    return type(t.dtype.type(0).item()).__name__


def _weak_filler(sub, weak):
    """A Python zero of `weak`'s type in branch `sub`, which gives a numpy value instead."""
    with building(sub):
        return convert_to_tensor(zero_like(weak), sub)


_GRAPH_OUTPUT = object()  # marks a leaf that becomes an output of the node


def _captured_from(sub, t):
    """The outer tensor (as `sub`'s parent sees it) that placeholder `t` of `sub` captures, or None."""
    return next((outer for outer, inner in sub.captures if inner is t), None)


def _short(value):
    text = repr(value)
    return text if len(text) < 40 else f"a {type(value).__name__}"


def _unify_pair(then_g, else_g, t, e, label, location, sides):
    """Make a weak Python scalar take the other side's dtype; raise on a real dtype or rank clash."""
    if t.dtype != e.dtype and t.weak != e.weak:
        weak_side, strong = (t, e) if t.weak else (e, t)
        dtype = _unify_weak(weak_side, strong)
        if dtype is not None:
            with building(then_g if t.weak else else_g):
                fixed = cast(weak_side, dtype)
            t, e = (fixed, e) if t.weak else (t, fixed)
    if t.dtype != e.dtype:
        raise ConversionError(f"'{label}' has dtype {t.dtype} in the {sides[0]} and {e.dtype} "
                              f"in the {sides[1]}; cast one so they match (at {location})")
    if t.ndim != e.ndim:  # inside a tensor loop, the loop runs as Python instead (operators/python_loops.py)
        raise NeedsPython(f"'{label}' has shape {t.shape} in the {sides[0]} and {e.shape} "
                          f"in the {sides[1]}: ranks differ (at {location})")
    return t, e


def _first_difference(a, b, var_names=None):
    """Where two structures first differ, in words."""
    if var_names is not None and isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for name, x, y in zip(var_names, a, b):
            if nest.structure_of(x) != nest.structure_of(y):
                return f"'{name}' is {_describe(x)} in the true branch and {_describe(y)} in the false branch"
    return f"{_describe(a)} vs {_describe(b)}"


def _structure_change(before, after, var_names):
    """Where the structure of loop variables `after` an iteration first differs from `before`, in words."""
    if isinstance(before, (tuple, list)) and isinstance(after, (tuple, list)) and len(before) == len(after):
        names = var_names or [f"loop_vars[{i}]" for i in range(len(before))]
        for name, a, b in zip(names, before, after):
            found = _differ_at(a, b, name)
            if found:
                return (f"loop variable '{found[0]}' is {_describe(found[1])} before the loop body and "
                        f"{_describe(found[2])} after it")
    return f"the loop body returns {_describe(after)} but the loop carries {_describe(before)}"


def _differ_at(a, b, name):
    """(path, a part, b part) where structures `a` and `b` first differ, or None."""
    if nest.structure_of(a) == nest.structure_of(b):
        return None
    if type(a) is type(b) and isinstance(a, (tuple, list)) and len(a) == len(b):
        return next(found for i, (x, y) in enumerate(zip(a, b)) if (found := _differ_at(x, y, f"{name}[{i}]")))
    if type(a) is dict and type(b) is dict and a.keys() == b.keys():
        return next(found for k in a if (found := _differ_at(a[k], b[k], f"{name}[{k!r}]")))
    return name, a, b


def _describe(value):
    if isinstance(value, (tuple, list, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    return "a tensor" if isinstance(value, Tensor) else f"a {type(value).__name__}"


def while_loop(cond_fn, body_fn, loop_vars, *, names=None):
    """Repeat `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)`; returns the final vars.

    While the condition is a Python value the loop runs as Python. Once it is symbolic,
    the rest of the loop becomes one `While` node that runs as many times as the data
    says. A variable whose dtype changes is an error; one whose shape changes gets None
    dims and the body is traced again.

        i, x = ag.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 2.0), (0, x))
    """
    single = not isinstance(loop_vars, (tuple, list))
    loop_vars = (loop_vars,) if single else loop_vars
    location = user_location(2)

    def step(values):
        out = body_fn(*values)
        return (out,) if single or (len(values) == 1 and not isinstance(out, (tuple, list))) else out

    while True:
        pred = cond_fn(*loop_vars)
        if isinstance(pred, Tensor):
            break
        if not pred:
            return loop_vars[0] if single else loop_vars
        loop_vars = step(loop_vars)

    result = stage_while(cond_fn, step, loop_vars, names, location)
    return result[0] if single else result


def stage_while(cond_fn, step, loop_vars, names, location, unknown=(), var_names=None, settled=None):
    """One While node looping `loop_vars = step(loop_vars)` while `cond_fn(*loop_vars)`.

    Leaves that cannot be tensors (None, strings, objects) are held as they are: the body
    must give back the same object. The others are carried; a Python-scalar start takes
    the dtype the body gives it, and shapes that change become None dims (body retraced).
    Leaves at flat positions `unknown` ({position: "value" or "list"}) have no value yet: a
    first trace of the body finds what it assigns them, and they start at zeros of that
    type ("list": an empty stack of such items). `var_names` name the items of `loop_vars`
    in error messages. `settled()`, if given, says whether the caller's own view of the
    variables (e.g. what a list's items are) held still over the last body trace: if not,
    the body is traced again.

    Memory from outside that the body (or the condition) writes (runtime/memory.py: `x[i] = v`
    on an array from before the loop, a view of it, the loop variable's own array) is carried
    too: the loop traces again with each such storage's base as an extra loop variable, and a
    loop variable that is a handle of it stays that handle.
    """
    carried = []  # storages the loop writes (runtime/memory.py), found by tracing
    private = set()  # flat positions of variables whose arrays the body permutes (`_Permuted`)
    while True:
        try:
            return _stage_while(cond_fn, step, loop_vars, names, location, unknown, var_names, settled, carried,
                                private)
        except _CarryOut as c:
            raise c.carry from None  # memory the loop's own result writes: the block around carries it
        except memory.Carry as c:
            if any(c.storage is s for s in carried):
                raise
            carried.append(c.storage)
        except _Permuted as p:
            if p.positions <= private:
                raise p.error from None
            private |= p.positions
            del carried[:]  # found again by tracing: the permuted variables' arrays are not carried


class _CarryOut(BaseException):
    """A `memory.Carry` raised after the loop node is built, in the graph around the loop (its carried
    memory's final contents written there, `memory.carried_out`, a body around it carrying them on):
    for the block around to catch, not this loop, which carries that memory already."""

    def __init__(self, carry):
        super().__init__(str(carry))
        self.carry = carry


class _Permuted(Exception):
    """Loop variables written in place whose arrays the body permutes (`b[1:-1] = f(a); a, b = b, a`):
    the loop traces again with them private (each iteration owns the arrays they hold, carried as
    ordinary loop variables, and an iteration count says which array each holds after the loop)."""

    def __init__(self, positions, error):
        super().__init__(str(error))
        self.positions, self.error = frozenset(positions), error


def _stage_while(cond_fn, step, loop_vars, names, location, unknown, var_names, settled, carried, private=frozenset()):
    graph = current_graph()
    memory_carried = carried
    flat = nest.flatten(loop_vars)
    labels = names or nest.paths(loop_vars, "loop_vars")
    if unknown:
        loop_vars, labels = _discover_start_values(step, loop_vars, flat, dict(unknown), labels, graph, memory_carried)
        flat = nest.flatten(loop_vars)
    carried = [i for i, v in enumerate(flat) if not _is_static(v)]
    init = [convert_to_tensor(flat[i], graph) for i in carried]
    specs = [(t.shape, t.dtype, t.weak) for t in init]
    boxes = [_box(t) for t in init]  # numpy scalar or 0-d array: VARIES once an iteration changes it
    memory_init = [convert_to_tensor(s.base, graph) for s in memory_carried]
    private_k = [k for k, i in enumerate(carried) if i in private]
    if private_k:
        _check_private_starts([flat[carried[k]] for k in private_k], [labels[carried[k]] for k in private_k],
                              memory_carried, location)
    count_init = [convert_to_tensor(np.int64(0), graph)] if private_k else []  # the iterations run

    def with_values(values):
        full = list(flat)
        for i, v in zip(carried, values):
            full[i] = v
        return nest.pack(loop_vars, full)

    for _ in range(_MAX_RELAXATIONS):
        cond_g, body_g = Graph("cond", parent=graph), Graph("body", parent=graph)
        cond_in = [cond_g.placeholder(s, d, name=_ph_name(labels[i]), weak=w) for i, (s, d, w) in zip(carried, specs)]
        body_in = [body_g.placeholder(s, d, name=_ph_name(labels[i]), weak=w) for i, (s, d, w) in zip(carried, specs)]
        for t, box in zip(cond_in + body_in, boxes + boxes):
            t.box = box if t.shape == () and not t.weak else None
        cond_memory = [cond_g.placeholder(t.shape, t.dtype, name="memory") for t in memory_init + count_init]
        body_memory = [body_g.placeholder(t.shape, t.dtype, name="memory") for t in memory_init + count_init]
        for t in cond_memory[:len(memory_init)] + body_memory[:len(memory_init)]:
            if t.shape == ():
                t.box = ARRAY  # memory is an array's: a 0-d one read through a handle is a 0-d array
        _link_loop_variables(cond_g, cond_in, [flat[i] for i in carried], memory_carried, private_k)
        _link_loop_variables(body_g, body_in, [flat[i] for i in carried], memory_carried, private_k)
        with memory.loop_block(cond_g, memory_carried, cond_memory), building(cond_g):
            pred = convert_to_tensor(cond_fn(*with_values(cond_in)), cond_g)
        if pred.ndim != 0:
            raise ValueError(f"a loop condition must be a scalar, got {pred!r} (at {location})")
        with memory.loop_block(body_g, memory_carried, body_memory), building(body_g):
            out = step(with_values(body_in))
            if nest.structure_of(tuple(out)) != nest.structure_of(tuple(loop_vars)):
                raise ConversionError(f"{_structure_change(loop_vars, out, var_names)}; a graph loop carries the "
                                      f"same structure on every iteration (at {location})")
            out_flat = nest.flatten(out)
            for i, v in enumerate(out_flat):
                if isinstance(v, PythonValue) and v is not flat[i]:
                    v._refuse()  # a value only a loop run as Python gives: this loop runs as Python too
                if i not in carried and v is not flat[i]:
                    raise ConversionError(f"loop variable '{labels[i]}' is {_short(flat[i])} before the loop and "
                                          f"{_short(v)} after an iteration; a graph loop can only carry numbers "
                                          f"and arrays (at {location})")
            body_out = [convert_to_tensor(out_flat[i], body_g) for i in carried]
            memory_out = [convert_to_tensor(s.base, body_g) for s in memory_carried]
            if private_k:
                memory_out.append(body_memory[-1] + np.int64(1))
            memory.check_held_across_iterations(body_g, location)
            memory.check_lists_read_across_iterations(body_g, init, [labels[i] for i in carried], location)
            check_stale_across_iterations(body_g, cond_g, body_in, [flat[i] for i in carried], body_out, location)
            _check_rebound_handles(body_in, [out_flat[i] for i in carried], [labels[i] for i in carried], location,
                                   carried)
            permutation = _permutation(private_k, body_in, [out_flat[i] for i in carried],
                                       [labels[i] for i in carried], location)
            _check_written_handed_outside(body_g, body_in, [out_flat[i] for i in carried], body_out,
                                          [labels[i] for i in carried], location)
        new_specs = []
        for k, ((shape, dtype, weak), o) in enumerate(zip(specs, body_out)):
            label = labels[carried[k]]
            if o.dtype != dtype:
                if weak and not o.weak and np.result_type(o.dtype, exemplar(init[k])) == o.dtype:
                    dtype, weak = o.dtype, False  # a Python scalar start adopts the body's dtype
                elif o.weak and not weak and np.result_type(dtype, exemplar(o)) == dtype:
                    with building(body_g):
                        body_out[k] = o = cast(o, dtype)
                else:
                    raise ConversionError(f"loop variable '{label}' changes dtype from {dtype} to {o.dtype} "
                                          f"in the loop body; cast it so the dtype stays the same (at {location})")
            if o.ndim != len(shape):
                raise NeedsPython(f"loop variable '{label}' changes rank from shape {shape} to {o.shape} "
                                  f"in the loop body (at {location})")
            new_specs.append((relax_shape(shape, o.shape), dtype, weak and o.weak))
        # a Python number start rebinds on `+=` and gives numpy scalars in ufuncs, as a numpy scalar does
        new_boxes = [(SCALAR if _box(o) == SCALAR else VARIES) if weak and not new_weak
                     else b if b == _box(o) else VARIES
                     for b, o, (_, _, weak), (_, _, new_weak) in zip(boxes, body_out, specs, new_specs)]
        if new_specs == specs and new_boxes == boxes and (settled is None or settled()):
            break
        specs, boxes = new_specs, new_boxes
    else:
        raise ConversionError(f"loop variable shapes did not settle after {_MAX_RELAXATIONS} traces (at {location})")
    # a Python number start cast to the body's dtype is the numpy scalar the body sees, not a 0-d array
    init = [t if t.dtype == d else cast(t, d)[()] if t.weak and t.shape == () and not w else cast(t, d)
            for t, (_, d, w) in zip(init, specs)]
    captures = _union_captures(cond_g, body_g)
    _close(cond_g, cond_in + cond_memory, captures, [pred])
    _close(body_g, body_in + body_memory, captures, body_out + memory_out)
    if private_k:
        _check_private_not_read([init[k] for k in private_k], [flat[carried[k]] for k in private_k], captures,
                                [labels[carried[k]] for k in private_k], location)
    node = graph.add_node(WHILE, [*init, *memory_init, *count_init, *captures], {"cond": cond_g, "body": body_g},
                          [(s, d) for s, d, _ in specs] + [(t.shape, t.dtype) for t in memory_init + count_init],
                          location=location)
    for out, (_, _, w), box in zip(node.outputs, specs, boxes):
        out.weak = w
        out.box = box if out.shape == () and not w else None
    n = len(specs)
    for out in node.outputs[n:n + len(memory_carried)]:
        if out.shape == ():
            out.box = ARRAY
    try:
        memory.carried_out(memory_carried, node.outputs[n:n + len(memory_carried)], location)
        if private_k:
            _settle_permuted(private_k, permutation, [flat[i] for i in carried], node.outputs, node.outputs[-1],
                             [labels[i] for i in carried], location)
    except memory.Carry as c:
        raise _CarryOut(c) from None
    # a loop variable that is a handle of carried memory and that the body hands on as it is stays
    # that handle: it reads the loop's final contents of its memory, and later writes reach it
    # (and one the body hands on untouched, `x = x`, is its start value: the same array, as eagerly)
    results = [flat[i] if (_linked(body_in[k]) and _same_place(out_flat[i], body_in[k]))
               or (body_out[k] is body_in[k] and isinstance(flat[i], Tensor)) else node.outputs[k]
               for k, i in enumerate(carried)]
    return with_values(results)


def _link_loop_variables(sub, placeholders, starts, storages, private_k=()):
    """Loop variables whose start value is a handle of carried memory are handles of it inside the
    loop too (read by replaying their view on the memory's placeholder); the others' placeholders
    remember their start value (`sub.loop_starts`), so a write to one says which memory to carry;
    a private one's (at a position in `private_k`) writes stay in the iteration (`memory.PRIVATE`)."""
    sub.loop_starts = {}
    for k, (ph, start) in enumerate(zip(placeholders, starts)):
        if k in private_k:
            sub.loop_starts[id(ph)] = memory.PRIVATE
        elif isinstance(start, Tensor) and start.mem is not None and any(start.mem.storage is s for s in storages):
            ph.mem = memory.View(start.mem.storage, start.mem.steps, ph)
            ph.mem.seen = -1  # never read as its own value: always through the memory
        else:
            sub.loop_starts[id(ph)] = start


def _linked(placeholder):
    """Whether a loop variable's placeholder is a handle of carried memory (`_link_loop_variables`),
    not merely the base of memory of its own (viewed inside the body)."""
    return placeholder.mem is not None and placeholder.mem.storage.root is not placeholder


def _same_place(value, handle):
    """Whether `value` is `handle` or a handle of the same place in the same memory."""
    return value is handle or (isinstance(value, Tensor) and value.mem is not None
                               and value.mem.storage is handle.mem.storage and value.mem.steps == handle.mem.steps)


def _check_rebound_handles(placeholders, outs, labels, location, positions):
    """A loop variable that is a handle of carried memory and that the body rebinds to another array:
    the next iteration would write that other array, not the memory the first one wrote. Where the
    other array is another loop variable's (`a, b = b, a`), the loop traces again with the variables
    whose arrays it permutes private (`_Permuted`)."""
    moved = set()  # the positions of variables given another variable's array, and of those
    for k, o in enumerate(outs):
        for j, p in enumerate(placeholders):
            if j != k and (o is p or (_linked(p) and _same_place(o, p))):
                moved |= {positions[k], positions[j]}
    for k, (ph, out, label) in enumerate(zip(placeholders, outs, labels)):
        if _linked(ph) and not _same_place(out, ph):
            symbol, where = ph.mem.storage.last_write
            error = ConversionError(f"loop variable '{label}' is written in place (`{symbol}` at {where}) in a loop on "
                                    f"a tensor and rebound to another array in the same body (at {location}); the "
                                    f"next iteration would write that array. Copy it first (`{label} = "
                                    f"{label}.copy()`) or write `{label} = ...` without the in-place update")
            if positions[k] in moved:
                raise _Permuted(moved, error)
            raise error


def _check_written_handed_outside(body, placeholders, outs, tensors, labels, location):
    """A loop variable whose own array the body updates in place (its start a numpy array the loop
    replaces, `memory._carry`) and that the body then gives, on some runs, an array from outside the
    iteration (an argument's, a view of one, `x[1:2].reshape(())`, a numpy array held under another
    name): eagerly the next iteration's update changes that array, which the compiled loop cannot."""
    for ph, out, t, label in zip(placeholders, outs, tensors, labels):
        mem = ph.mem
        if mem is None or mem.storage.root is not ph or not mem.storage.written \
                or body.loop_starts.get(id(ph)) is memory.PRIVATE:  # a permuted array: `_permutation`'s
            continue
        why = None
        if isinstance(out, np.ndarray):
            held = _held_elsewhere(out, label)
            why = f"the numpy array {held}" if held else None
        else:
            why = from_outside_iteration(body, ph, t)
        if why is not None:
            symbol, where = mem.storage.last_write
            raise ConversionError(
                f"loop variable '{label}' is updated in place (`{symbol}` at {where}) in a loop on a tensor, and the "
                f"body then gives it {why} (in the loop at {location}), which eagerly the next iteration would update in place "
                f"too; the compiled loop cannot update that array. Copy it when you assign it (`{label} = "
                f"w.copy()`), or make a new array instead of the update (`{label} = {label} + 1`)")


def _held_elsewhere(array, name):
    """Words for the names other than `name` under which the converted functions on the stack hold
    numpy array `array`'s memory (the array, a view of it, the array it views), or None."""
    def same_memory(v):
        return type(v) is np.ndarray and (v is array or np.shares_memory(v, array))

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<autograph_lite converted"):
            for k, v in frame.f_locals.items():
                if k != name and same_memory(v):
                    return f"'{k}'"
                items = v.values() if type(v) is dict else v if type(v) in (list, tuple) else ()
                if any(same_memory(item) for item in items):
                    return f"held by '{k}'"
        frame = frame.f_back
    return None


def _permutation(private_k, placeholders, outs, labels, location):
    """{k: j}: private loop variable k ends each iteration holding the array variable j held at its
    start (`a, b = b, a`); any other value (a new array) is refused: which array the caller's
    memory would end in depends on the iteration where it was replaced."""
    permutation = {}
    for k in private_k:
        j = next((j for j in private_k if outs[k] is placeholders[j]), None)
        if j is None:
            raise ConversionError(
                f"loop variable '{labels[k]}' is written in place in a loop on a tensor whose body passes arrays "
                f"between loop variables (at {location}), and the body gives it a new array; only a permutation of "
                f"the variables' arrays (`a, b = b, a`) is followed. Copy the array first (`{labels[k]} = "
                f"{labels[k]}.copy()`)")
        permutation[k] = j
    if sorted(permutation.values()) != sorted(private_k):
        raise ConversionError(
            f"loop variables {', '.join(repr(labels[k]) for k in private_k)} are written in place in a loop on a "
            f"tensor (at {location}) and two of them end an iteration holding the same array; copy it first")
    return permutation


def _check_private_starts(starts, labels, storages, location):
    """The arrays a loop permutes among private variables: distinct memory, none carried by the loop
    otherwise (written through another name), a numpy array held by nothing else."""
    seen = []
    for start, label in zip(starts, labels):
        if isinstance(start, Tensor):
            storage = memory.storage_of(start).storage
            if any(storage is s for s in seen) or any(storage is s for s in storages):
                raise ConversionError(
                    f"loop variable '{label}' holds an array that the loop on a tensor at {location} swaps with "
                    f"another variable's and that it also reaches another way (the same array, or a view of it, "
                    f"under another name); copy it first (`{label} = {label}.copy()`)")
            seen.append(storage)
        elif isinstance(start, np.ndarray):
            memory._check_unshared(start, f"'{label}'", "a, b = b, a", location)
        else:
            raise ConversionError(f"loop variable '{label}' is swapped with another array in a loop on a tensor "
                                  f"(at {location}) but starts as {_short(start)}; start it as an array")


def _reaches(t, base):
    """Whether `t` is `base` or a view of it taken by the ops the memory model replays."""
    while t is not base:
        if t.node.opdef not in memory.VIEWS or not t.node.inputs:
            return False
        t = t.node.inputs[0]
    return True


def _check_private_not_read(inits, starts, captures, labels, location):
    """A private variable's array read inside the loop under another name would read its contents
    from before the loop, where eagerly earlier iterations wrote it: refused."""
    for init, start, label in zip(inits, starts, labels):
        bases = [init] + ([start.mem.storage.base] if isinstance(start, Tensor) and start.mem is not None else [])
        if any(_reaches(outer, b) for outer in captures for b in bases):
            raise ConversionError(
                f"loop variable '{label}' is swapped with another array in a loop on a tensor (at {location}) that "
                f"also reads its array under another name; read it through the loop variable")


def _settle_permuted(private_k, permutation, starts, outputs, count, labels, location):
    """After a loop permuting private variables' arrays `count` times: each start array's final
    contents are those of the variable holding it at the end (selected by `count` modulo the
    permutation's order), written into its memory; the variables and those arrays may not be
    written afterwards (which array a variable is depends on the count)."""
    from .math_ops import equal, mod, where
    powers = [{k: k for k in private_k}]  # powers[r][k]: whose start array variable k holds after r iterations
    while True:
        nxt = {k: powers[-1][permutation[k]] for k in private_k}
        if nxt == powers[0]:
            break
        powers.append(nxt)
    order = len(powers)
    phase = mod(count, np.int64(order))
    names = " and ".join(f"'{labels[k]}'" for k in private_k)
    why = (f"a loop on a tensor at {location} swaps the arrays of {names}, so which array each holds "
           f"afterwards depends on the number of iterations; copy it first (`v = v.copy()`)")
    finals = {}
    for j in private_k:
        holder = [next(k for k in private_k if powers[r][k] == j) for r in range(order)]
        finals[j] = outputs[holder[0]]
        for r in range(1, order):
            finals[j] = where(equal(phase, np.int64(r)), outputs[holder[r]], finals[j])
    for j in private_k:
        start = starts[j]
        if isinstance(start, Tensor):
            memory.update(start, lambda current, final=finals[j]: final, f"'{labels[j]}'", "a, b = b, a", location)
            memory.storage_of(start).storage.entangled = (why, count)
    for k in private_k:
        # each holds its final contents (the writes above take them for a start array's other names,
        # "on some runs the same array": they are that array's contents, and may not be written)
        outputs[k].stale = None
        memory.storage_of(outputs[k]).storage.entangled = (why, count)


def _box(t):
    """How eager holds a loop variable's 0-d value (runtime/boxes.py), None for others."""
    return box_of(t) if t.shape == () and not t.weak else None


def _discover_start_values(step, loop_vars, flat, unknown, labels, graph, memory_carried):
    """Trace the body once (throwaway) to learn the types of variables it first assigns.

    Returns the loop variables with start values for those (zeros of the type, or of each
    leaf when the body assigns a structure, e.g. a returned pair) and their leaf labels.
    """
    probe = Graph("probe", parent=graph)
    args = list(flat)
    for i, v in enumerate(flat):
        if i not in unknown and not _is_static(v):
            t = convert_to_tensor(v, graph)
            args[i] = probe.placeholder(t.shape, t.dtype, name=_ph_name(labels[i]), weak=t.weak)
    placeholders = [probe.placeholder(s.base.shape, s.base.dtype, name="memory") for s in memory_carried]
    for t in placeholders:
        if t.shape == ():
            t.box = ARRAY
    _link_loop_variables(probe, args, flat, memory_carried)
    with memory.loop_block(probe, memory_carried, placeholders), building(probe):
        out = step(nest.pack(loop_vars, args))
    # an unknown leaf is a whole variable (Undefined or an empty list): map it to the body's value of it
    values, new_labels, offset = [], [], 0
    for var, result in zip(loop_vars, out):
        width = len(nest.flatten(var))
        kind = unknown.get(offset) if width == 1 else None
        if kind == "list" and isinstance(result, Tensor):
            values.append(np.zeros((0,) + tuple(d or 0 for d in result.shape[1:]), result.dtype))
        elif kind == "value" and not any(_is_static(o) for o in nest.flatten(result)):
            values.append(nest.pack(result, [zero_like(o) for o in nest.flatten(result)]))
        else:
            values.append(var)
        new_labels.extend(nest.paths(values[-1], labels[offset]) if values[-1] is not var else labels[offset:offset + width])
        offset += width
    return tuple(values), new_labels


def zero_like(value):
    """A zero of `value`'s type: a Python zero for Python (weak) scalars, else a numpy array or
    scalar (unknown dims as 0). Other objects (device arrays too) are returned as they are."""
    if isinstance(value, Tensor):
        if value.weak:
            return value.dtype.type(0).item()
        return np.zeros(tuple(d or 0 for d in value.shape), value.dtype)
    if isinstance(value, (bool, int, float, complex)):
        return type(value)(0)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.zeros_like(value)[()] if isinstance(value, np.generic) else np.zeros_like(value)
    return value


def _ph_name(label):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in label).strip("_")
