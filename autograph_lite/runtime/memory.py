"""Arrays as mutable memory while tracing: functional updates of a base, views replayed on read.

numpy arrays are memory: `row = x[0]; row[1] = 5` changes `x`. A traced `Tensor` is an SSA
value, so a write cannot change the value a node already read. This module keeps, beside the
SSA values, the memory they came from (PyTorch's functionalization,
`torch/_subclasses/functional_tensor.py`):

- a `Storage` is one array's memory: `base`, the Tensor holding its whole contents now, and
  a `version` that every write moves on;
- a Tensor that user code holds as an array (a *handle*) has a `View` (`Tensor.mem`): its
  storage and the `steps` that take the base to it (basic slices, transposes, expand_dims,
  squeeze), each a node of an op in `VIEWS`, replayed on the current base when the handle is
  read and the storage has moved on (`resolve`, called by `Graph.capture`, the one place op
  inputs become graph values);
- a write through a handle (`x[i] = v`, `row += 1`) computes the handle's new contents and
  scatters them back into the base through the inverse of each step (`update`): a new base
  version; every handle of the storage, the one written, the base and other views, reads it
  from then on.

An argument's storage written during the trace gives the caller's array its final contents
after each call (`finish` fills `Graph.write_backs`, which `function.py` turns into outputs).
What is not modeled is refused, naming the array and the lines: a write through a view whose
op is not in `VIEWS` (a reshape: whether numpy gave a view depends on the caller's strides),
reading such a view after its storage was written, and a write inside a tensor `if`/loop to an
array made before it (its new contents would have to be carried out of the block).
"""
import contextlib
import gc
import itertools
import sys

from ..errors import ConversionError
from .boxes import ARRAY
from .opdef import PLACEHOLDER

_versions = itertools.count(1)


class ViewRule:
    """How the memory model treats the results of one view op: `replay(node, base)` takes the
    step again from a new value of its input (in the current graph); `scatter(node, before,
    new)` is the input's new value once the view's value becomes `new` (`before`: the input's
    value the view was taken from)."""

    __slots__ = ("replay", "scatter")

    def __init__(self, replay, scatter):
        self.replay, self.scatter = replay, scatter


# OpDef -> ViewRule, filled by ops/array_ops.py for the view ops it models. A view op (its
# `OpDef.view` fact) not in this table gives an unmodeled view: refused where a write meets it.
VIEWS = {}

# OpDef -> predicate(node): whether numpy gives the op's result as a read-only array (np.imag of a
# real array, np.broadcast_to); a write into it, or into a view of it, is numpy's ValueError
READ_ONLY = {}


def _read_only(handle):
    """Whether `handle` is (a view of) an array numpy makes read-only."""
    mem = handle.mem
    nodes = [handle.node] if mem is None else [mem.storage.root.node, *mem.steps]
    return any(n.opdef in READ_ONLY and READ_ONLY[n.opdef](n) for n in nodes)


class Storage:
    """One array's memory: `base`, the Tensor of its whole contents now; `version`, moved on by
    every write; `root`, the Tensor it started as (an argument's placeholder is written back);
    `views`, the handles of its modeled views; `unmodeled`, views of it taken by ops the model
    does not replay."""

    __slots__ = ("base", "version", "root", "views", "unmodeled", "label", "written", "last_write", "entangled",
                 "handles", "outer")

    def __init__(self, base):
        self.base, self.root, self.version = base, base, next(_versions)
        self.handles = {id(base): base}  # id -> the root, its bases so far and modeled views (`_mark_copies`)
        self.written = []    # the bases its writes made (SetItem outputs, blocks' outputs), in order
        self.label = "an array"  # the name of its first write, for messages
        self.last_write = ("[...] =", "?")  # the symbol and location of its last write, for messages
        self.entangled = None  # (why, a Tensor): not to be written where it is visible (a loop swapped it)
        self.views = []      # handles of views of it (modeled)
        self.unmodeled = []  # (view, line) of views the model does not replay
        self.outer = []      # the bases of the blocks around the one carrying it now (`block`), outermost first


class View:
    """A handle's place in its storage: the `steps` (view nodes, first from the base) and the
    value it read last (`value`, at storage version `seen`)."""

    __slots__ = ("storage", "steps", "seen", "value")

    def __init__(self, storage, steps, value):
        self.storage, self.steps, self.seen, self.value = storage, steps, storage.version, value


def storage_of(t):
    """`t`'s View, made (as the base of a new storage) on first use."""
    if t.mem is None:
        storage = Storage(t)
        t.mem = View(storage, (), t)
        root = t.node.graph
        while root.parent is not None:
            root = root.parent
        root.storages.append(storage)
    return t.mem


def resolve(t, graph):
    """The value handle `t` holds now, as a Tensor `graph` may read (its storage's latest base
    with `t`'s view steps replayed in `graph`); `t` itself when nothing wrote its storage."""
    mem = t.mem
    if mem is None:
        return t
    storage = mem.storage
    if mem.seen == storage.version and _visible(mem.value, graph):
        return mem.value
    if not mem.steps:
        value = storage.base
    else:
        from .graph import building
        value = storage.base
        with building(graph):
            for step in mem.steps:
                value = VIEWS[step.opdef].replay(step, value)
    mem.value, mem.seen = value, storage.version
    return value


def _visible(value, graph):
    """Whether `graph` (or a graph inside it) may read `value` (made in it or around it)."""
    home = value.node.graph
    while graph is not None:
        if graph is home:
            return True
        graph = graph.parent
    return False


def track_view(handle, out):
    """`out`, just made by a view op from `handle` (`row = x[0]`), is a view of `handle`'s
    storage: reads of it replay the step on the storage's latest base."""
    node = out.node
    if node.opdef.view is None or not node.outputs or not _array_result(out) or not node.opdef.view(node):
        return
    mem = storage_of(handle)
    if node.opdef in VIEWS:
        out.mem = View(mem.storage, mem.steps + (node,), out)
        mem.storage.views.append(out)
        mem.storage.handles[id(out)] = out
    else:
        mem.storage.unmodeled.append((out, node.location))


def track_computed_view(handle, out):
    """`out` is an array numpy gives as a view of `handle`'s (np.diagonal: a read-only view) that the
    graph computes as a new one: a write to `handle`'s memory makes it stale, as a view it is not
    modeled as (a reviewer's finding, older than the eighth session: the diagonal kept old values)."""
    storage_of(handle).storage.unmodeled.append((out, out.node.location))


def update(handle, compute, label, symbol, location):
    """Write through `handle`: `compute(value)` gives its new contents from its current value;
    the storage's base becomes the value with them scattered back. Returns nothing: every
    handle of the storage reads the new contents."""
    from .graph import current_graph
    graph = current_graph()
    if _read_only(handle):
        # numpy's words: a store (`x[i] = v`) meets the assignment's check, an in-place operator its out=
        raise ValueError(f"{'assignment destination' if symbol == '[...] =' else 'output array'} is read-only "
                         f"(written at {location})")
    unmodeled = _unmodeled_step(handle)
    if unmodeled is not None:
        raise ConversionError(
            f"{label} is updated in place (`{symbol}`) at {location}, and it is a view of another array "
            f"made by {unmodeled.op} at {unmodeled.location}, whose memory the compiled function does not "
            f"model (numpy gives a view or a copy depending on the array's strides); update the array it "
            f"was made from, or copy the view first (`.copy()`)")
    mem = storage_of(handle)
    storage = mem.storage
    if storage.entangled is not None and _visible(storage.entangled[1], graph):
        raise ConversionError(f"{label} is updated in place (`{symbol}`) at {location}, but {storage.entangled[0]}")
    if not _local(storage, graph) and not (graph.carries and _carry(storage, graph, label, symbol, location)):
        raise ConversionError(
            f"{label} is updated in place (`{symbol}`) at {location} inside a tensor `if` or loop, but its "
            f"array was made before the block (it holds the memory of an array from outside); a compiled "
            f"block cannot yet carry that array's new contents out (issue 26). Build the new value with "
            f"ag.where, or update the array outside the block")
    storage.label, storage.last_write = label, (symbol, location)
    from .graph import (InPlaceUpdate, _mark_maybe_aliases, _mark_views, building, check_partial_aliases,
                        mark_views_on_some_runs)
    # (the memory's current contents, a block's output for the memory it carried, are what this
    # update moves on from, not "on some runs the same array": `if c: x[0] = 1`, then `x[1] = 2`)
    check_partial_aliases(storage.root, label, symbol, location,
                          new=storage.base if storage.base is not storage.root else None)
    for base in [*storage.outer, storage.base]:
        if base is not storage.root:
            # a tensor `if` or loop result that is the array's contents written before on some runs only
            # (`m = y[:-1]; m[1] *= 2; v = y if c else x; y[3] = 1`) misses this write: stale (seed 2057);
            # inside a block carrying the memory, also a result from before the block that is its contents
            # there (`y[0] = 1; v = y if c else x`, then `if d: y[3] = 1`: fuzzer seed 1153011008). For a
            # loop body's own variable written under a `return` guard of the body (`if c: return x`, then
            # `x[i] = 0` under `if not do_return`), the function's pending return values are spared: the
            # runs that set them skip the guard. Elsewhere (a finally's guards, other bases) they are not
            # (a return x then a guarded write at top level where x was written before stays refused)
            spared = _pending_returns(graph, base) if base is not storage.base and _loop_variable(base) else ()
            _mark_maybe_aliases(base, None, graph, label, symbol, location, spared)
    with building(graph):
        prefixes = [storage.base]  # the value of each prefix of the steps, for the scatter back
        for step in mem.steps[:-1]:
            prefixes.append(VIEWS[step.opdef].replay(step, prefixes[-1]))
        new = compute(resolve(handle, graph))
        for step, prefix in zip(reversed(mem.steps), reversed(prefixes)):
            new = VIEWS[step.opdef].scatter(step, prefix, new)
    # what holds a copy of the memory's contents (a stacked list holding an array of it, a tensor
    # `if`/loop result that is on some runs a view of it) no longer shows them: stale
    _mark_copies(storage, handle, graph, label, symbol, location)
    mark_views_on_some_runs(storage, graph, label, symbol, location)
    if new.shape == () and not new.weak:
        new.box = ARRAY  # memory is an array's: a 0-d one written stays a 0-d array (a ufunc's result would be a scalar)
    storage.base, storage.version = new, next(_versions)
    storage.written.append(new)
    storage.handles[id(new)] = new
    for view, made in storage.unmodeled:
        if view.stale is None:
            view.stale = InPlaceUpdate(graph, f"{label} (of which this value is a view made at {made})",
                                       symbol, location)
            # and the views of it (`np.meshgrid(y, copy=False)`: y's reshape, broadcast)
            _mark_views(view.node.graph, view, graph, view.stale.label, symbol, location)


def _mark_copies(storage, handle, graph, label, symbol, location):
    """Before a write to `storage`: the stacked lists holding a handle of it (graph.holders) and the
    tensor `if`/loop results recorded as views of one (graph.views, unmodeled) are stale."""
    from .graph import _mark_views
    handles = storage.handles  # the root, the bases so far, the modeled views
    scope = graph
    while scope is not None:
        for table in (scope.holders, scope.views):
            # the smaller side drives the lookups: a storage written many times, or many views
            keys = [k for k in table if k in handles] if len(table) < len(handles) else \
                [k for k in handles if k in table]
            if id(handle) in table and id(handle) not in handles:
                keys.append(id(handle))
            for key in keys:
                _mark_views(scope, handles.get(key, handle), graph, label, symbol, location, modeled=True)
        scope = scope.parent


def check_held_across_iterations(body, location):
    """After a loop body is traced: a stacked list of it holding a handle of memory that lives
    across iterations and that the body writes (`v += y; L.append(v)`): eagerly the list holds the
    array itself, so the next iteration's write changes the items appended before (seed 22012065)."""
    from .graph import _within
    for value in body.held.values():
        if value.mem is None:
            continue
        s = value.mem.storage
        made_here = s.root.node.graph is body and s.root.node.opdef is not PLACEHOLDER
        if not made_here and any(_within(w.node.graph, body) for w in s.written):
            raise ConversionError(
                f"{s.label} is appended to a list in a loop on a tensor (at {location}) and updated in place "
                f"(`{s.last_write[0]}`) at {s.last_write[1]} by the next iteration; eagerly the list holds that "
                f"one array, so every item would change with it. Append a copy (`.append(x.copy())`)")


def check_lists_read_across_iterations(body, starts, labels, location):
    """After a loop body is traced: a stacked list from before the loop (a loop variable's start,
    or one the body reads) holding an array the body updates in place (`L = [y]`, a body that
    appends to L and does `y[:] = 5`): eagerly the list's item is that array and shows the update
    in the next iterations and after the loop; the stack holds its contents from before the loop
    (fuzzer seed 1190009388)."""
    from .graph import _maybe_same, _within
    held = {}  # id(stacked list) -> the arrays it holds (graph.holders, from operators/lists.py)
    scope = body.parent
    while scope is not None:
        for key, holders in scope.holders.items():
            for h in holders:
                held.setdefault(id(h), []).append(scope.held[key])
        scope = scope.parent
    if not held:
        return
    for t, what in [*((t, f"list '{label}'") for t, label in zip(starts, labels)),
                    *((o, "a list the loop reads") for o, _ in body.captures)]:
        seen, todo = {id(t)}, [t]
        while todo:  # what t holds, what the lists it holds hold, and so on
            holder = todo.pop()
            # (a list an earlier loop grew holds on all runs what its start held)
            for value in [v for h in (holder, *_maybe_same(holder)) for v in held.get(id(h), ())]:
                if id(value) in seen:
                    continue
                seen.add(id(value))
                todo.append(value)
                s = value.mem.storage if value.mem is not None else None
                if s is not None and any(_within(w.node.graph, body) for w in s.written):
                    raise ConversionError(
                        f"{what} holds {s.label} from before the loop on a tensor at {location}, and {s.label} is "
                        f"updated in place (`{s.last_write[0]}`) at {s.last_write[1]} inside it; eagerly the list's "
                        f"item is that one array and changes with it, which a list the loop carries cannot follow. "
                        f"Put a copy in the list (`.copy()`), or build the list after the loop")


# `Graph.loop_starts` value of a loop variable that holds, iteration by iteration, one of several
# arrays the body permutes (`a, b = b, a`): its writes stay in the iteration (ops/control_flow.py)
PRIVATE = object()


class Carry(BaseException):
    """A write inside a tensor block (`graph.carries`) to memory from outside it: the block that
    catches this traces again carrying `storage` (its base an input and an output of the block).
    A BaseException, so the user's `except Exception` in the traced code does not catch it."""

    def __init__(self, storage):
        super().__init__(storage.label)
        self.storage = storage


@contextlib.contextmanager
def block(sub, carried):
    """Trace tensor block `sub` carrying storages `carried` (runtime/memory.py's part of a Cond
    branch): inside, each starts from its value outside (captured); `sub.carried_out` gets their
    final values; a write to other memory from outside raises `Carry`. Outside, all is as before."""
    saved = [(s, s.base) for s in carried]
    sub.carries = True
    sub.carried_now = list(carried)
    for s in carried:
        s.outer.append(s.base)
    try:
        for s in carried:
            s.base, s.version = sub.capture(s.base), next(_versions)
        yield
        sub.carried_out = [s.base for s in carried]
        sub.carried_storages = list(carried)
    finally:
        for s, base in saved:
            s.base, s.version = base, next(_versions)
            s.outer.pop()


def return_guard(graph):
    """Mark `graph`, a tensor `if`'s true branch, as a converted `return`'s guard (`if not do_return:`
    outside any `finally` that resets the flag): its code runs only on the runs where no `return` of
    its function has run before it (operators/control_flow.py's `if_stmt`, `opts['return_guard']`)."""
    graph.return_guard = True


def note_return_values(graph, tensors):
    """`tensors`: the leaves of the `retval_` that a tensor `if` or loop built in `graph` gives: until the
    function returns (`returned`), an array among them is its return value only on the runs that set
    `do_return`, where its later return guards do not run."""
    pending = graph.__dict__.setdefault("pending_returns", {})
    for t in tensors:
        pending[id(t)] = t


def returned(tensors):
    """The function returned `tensors` (`ag__.return_value`): its caller holds them as any other value."""
    from .graph import current_graph
    graph = current_graph()
    while graph is not None:  # the graphs around: an inlined function's `if`s were built there
        pending = graph.__dict__.get("pending_returns")
        if pending:
            for t in tensors:
                if pending.get(id(t)) is t:
                    del pending[id(t)]
        graph = graph.parent


def _pending_returns(graph, base):
    """The pending return values (`note_return_values`) of loop body `base.node.graph` and the blocks in
    it, where the write in `graph` is under a return guard inside that body; () otherwise."""
    body, scope, guarded = base.node.graph, graph, False
    while scope is not None and scope is not body:
        guarded = guarded or getattr(scope, "return_guard", False)
        scope = scope.parent
    if not guarded or scope is None:
        return ()
    spared, scope = [], graph
    while scope is not None:
        spared += (getattr(scope, "pending_returns", None) or {}).values()
        if scope is body:
            break
        scope = scope.parent
    return spared


def _loop_variable(t):
    """Whether `t` is a loop body's placeholder for a loop variable (not a capture from outside)."""
    graph = t.node.graph
    return t.node.opdef is PLACEHOLDER and graph.parent is not None and not any(i is t for _, i in graph.captures)


def at_end(sub, handle):
    """What `handle` held at the end of block `sub` when its storage is one `sub` carried (a branch
    output `r = x` after `x[1] = 0` there: the branch's last base with the view steps replayed in
    `sub`; reading it after the block would give the base from before it); None otherwise."""
    mem = getattr(handle, "mem", None)
    if mem is None:
        return None
    for s, base in zip(getattr(sub, "carried_storages", ()), getattr(sub, "carried_out", ())):
        if s is mem.storage:
            from .graph import building
            value = base
            with building(sub):
                for step in mem.steps:
                    value = VIEWS[step.opdef].replay(step, value)
            return value
    return None


@contextlib.contextmanager
def loop_block(sub, carried, placeholders):
    """Trace a loop's condition or body `sub` carrying storages `carried`, each starting from its
    placeholder in `placeholders` (an extra loop variable); as `block` otherwise."""
    saved = [(s, s.base) for s in carried]
    sub.carries = True
    sub.carried_now = list(carried)
    for s, ph in zip(carried, placeholders):
        s.outer.append(s.base)
        s.base, s.version = ph, next(_versions)
    try:
        yield
        sub.carried_out = [s.base for s in carried]
    finally:
        for s, base in saved:
            s.base, s.version = base, next(_versions)
            s.outer.pop()


def _carry(storage, graph, label, symbol, location):
    """Raise `Carry` for the memory a write in carrying block `graph` reaches: `storage` when its
    base is from outside the block, the start value's when it is a loop variable's placeholder.
    Returns True when the write may stay inside the block: a loop variable that starts as a numpy
    array made in the function and held by nothing else (the loop's result replaces it)."""
    from .graph import Tensor
    storage.label = label
    if storage.base.node.graph is not graph:
        raise Carry(storage)  # the block traces again, carrying this memory
    start = graph.loop_starts.get(id(storage.root))
    if start is PRIVATE:
        return True  # a loop variable whose array the loop permutes with others': each iteration's own
    if isinstance(start, Tensor):
        outer = storage_of(start).storage  # the loop variable's array from before the loop
        outer.label = label
        raise Carry(outer)
    if start is not None:
        _check_unshared(start, label, symbol, location)
        return True
    return False


def _check_unshared(array, label, symbol, location):
    """A numpy array a tensor loop starts a variable from, updated in place in it: the loop's result
    replaces the array, which another holder of it (`shared_arrays`) would not see."""
    why = _shared.get(id(array))
    if why is not None:
        raise ConversionError(
            f"{label} is updated in place (`{symbol}`) at {location} inside a loop on a tensor, and its numpy "
            f"array from before the loop is also {why}, which would not see the update; make the array from a "
            f"tensor (`np.zeros_like(x)`), or copy it for the other holder")


_shared = {}  # id(numpy array) -> what else holds it, for the tensor loops being staged


@contextlib.contextmanager
def shared_arrays(values, known=()):
    """While a tensor loop over variables `values` is staged: which of the numpy arrays among them
    something else holds too (a view, a container, another variable)."""
    added = []
    for v in values:
        if type(v).__module__ == "numpy" and type(v).__name__ == "ndarray" and id(v) not in _shared:
            why = other_holder(v, known)
            if why is not None:
                _shared[id(v)] = why
                added.append(id(v))
    try:
        yield
    finally:
        for key in added:
            del _shared[key]


def carried_out(storages, values, location):
    """After a block node is built: each carried storage's base is the node's output for it. In a
    block that does not carry it (a branch inside a loop body), that is a write there: `Carry`."""
    from .graph import current_graph
    graph = current_graph()
    for s, value in zip(storages, values):
        # (a loop variable whose writes stay in the loop, `_carry` True: as for a write there)
        if not _local(s, graph) and not (graph.carries and _carry(s, graph, s.label, "[...] =", location)):
            raise ConversionError(
                f"{s.label} is updated in place inside a tensor `if` (at {location}), inside a block that cannot "
                f"carry its new contents out (issue 26); build the new value with ag.where, or update it "
                f"outside the block")
        s.base, s.version = value, next(_versions)
        s.written.append(value)
        s.handles[id(value)] = value


def written_storage(t):
    """The storage whose contents `t` is after a write (a base `update` or a block made), or None:
    such a value is still the array of the storage's root (an argument's, say)."""
    root = t.node.graph
    while root.parent is not None:
        root = root.parent
    for s in root.storages:
        if any(w is t for w in s.written):
            return s
    return None


def _local(storage, graph):
    """Whether code of `graph` may write `storage`: its contents are a value of `graph`, and not a
    loop variable's placeholder of it (whose array comes from outside on the first iteration)."""
    if storage.base.node.graph is not graph:
        return False
    root = storage.root
    return graph.parent is None or root.node.opdef is not PLACEHOLDER or root.node.graph is not graph


def _unmodeled_step(handle):
    """The node of an unmodeled view op that made `handle` from a storage, directly or under views
    of its result (`a.reshape(2, 2)[0]`: the slice is modeled, on a reshape that is not, so the
    write would reach only the slice's own memory; a reviewer's finding, older than the eighth
    session), or None."""
    t = handle
    while True:
        node = t.node
        if node.opdef.view is None or not node.outputs or not _array_result(t) or not node.opdef.view(node):
            return None
        if t.mem is not None and t.mem.storage.root is not t:
            t = t.mem.storage.root  # a handle of that memory: is its root a view numpy makes?
            continue
        if node.opdef not in VIEWS:
            return node
        t = node.inputs[0]


def _array_result(t):
    """Whether a view op's result `t` is an array numpy gives as a view: not a 0-d result numpy
    gives as a scalar (`x[1]`); a 0-d array is one (`x[..., 1]`, `x[1:2].reshape(())`)."""
    if t.shape:
        return True
    from .boxes import box_of
    return not t.weak and box_of(t) == ARRAY


def finish(graph):
    """At the end of a trace: every argument (or array read from outside) whose storage was
    written gets its final contents written back (`graph.write_backs`)."""
    from .graph import _argument_of
    for storage in graph.storages:
        if storage.base is storage.root:
            continue
        root = storage.root
        if _argument_of(root) is not None and root.node.graph is graph:
            graph.write_backs[id(root)] = (root, storage.base)


def same_array(handle, value, graph):
    """Whether returning handle `handle` returns the array whose final contents are `value`."""
    return handle is value or (handle.mem is not None and not handle.mem.steps
                               and resolve(handle, graph) is value)


class ViewSteps:
    """A returned view of an argument updated in place, taken again from the caller's array after
    the write-back: `steps`, each (OpDef in `VIEWS`, its attrs, the result indices of its other
    inputs: a run-time subscript's bounds), replayed by numpy's own view ops (`x[1:]`, `x.T`)."""

    __slots__ = ("steps", "_kernels")

    def __init__(self, steps):
        import numpy
        self.steps = tuple(steps)
        self._kernels = [(opdef.kernel(numpy, **attrs), inputs) for opdef, attrs, inputs in self.steps]

    def __call__(self, array, results):
        for kernel, inputs in self._kernels:
            array = kernel(array, *(results[k] for k in inputs))
        return array


def view_steps(handle, value, graph):
    """The view nodes that take the array whose final contents are `value` to handle `handle`: ()
    where the handle is that array itself (`x += 1; return x`), the steps where it is a modeled view
    of it made in `graph` (`x += 1; return x[1:]`), else None."""
    if same_array(handle, value, graph):
        return ()
    mem = handle.mem
    if mem is None or not mem.steps or mem.storage.base is not value or any(s.graph is not graph for s in mem.steps):
        return None
    return mem.steps


# id(copy) -> (copy, original): the copies of numpy arrays that a tensor `if`'s branches start from
# (operators/control_flow.py `_copy_lists`), while the branches are traced
_branch_copies = {}


@contextlib.contextmanager
def branch_copies(pairs):
    """While a tensor `if`'s branches are traced: each `(original, copy)` in `pairs` is known, so an
    in-place update of the copy asks what else holds the original (`copied_from`)."""
    added = [id(c) for o, c in pairs if c is not o and id(c) not in _branch_copies]
    _branch_copies.update({id(c): (c, o) for o, c in pairs if c is not o})
    try:
        yield
    finally:
        for key in added:
            _branch_copies.pop(key, None)


def copied_from(array):
    """`(array, original)` where `array` is a branch's copy of numpy array `original`, else None."""
    entry = _branch_copies.get(id(array))
    return entry if entry is not None and entry[0] is array else None


def other_holder(array, known=(), unseen=0):
    """What else holds `array` (a view of it, a container, a second variable, a variable of a
    calling function), in words, or None. The references counted as ours: the variables of the
    frames on the stack (the converted function writing and its generated loop and branch
    functions, the operators between them and here, this one's) and the tuples the operators pass
    them in; any other (a numpy view holds its base through `.base`, which the garbage collector
    does not list) is another holder. `known`: containers the caller knows hold it for the
    operation at hand (numpy's argument tuples for a ufunc); `unseen`: references the operation
    itself holds where no frame or container shows them (`unseen_references`)."""
    if array.base is not None:
        return "a view of another array"
    counted, frame_dicts, frame, writer = 0, set(), sys._getframe(1), None
    known_ids = {id(c) for c in known}
    counted += sum(sum(v is array for v in c) for c in known)
    while frame is not None:
        names = frame.f_locals  # a dict of the frame's own, itself a referrer from now on
        frame_dicts.add(id(names))
        mine = sum(v is array for v in names.values())
        for v in names.values():
            # tuples the frames hold (the operators' `state`): the garbage collector stops listing a
            # tuple of untracked objects (arrays, numbers) after a collection, so count them here
            if type(v) is tuple and id(v) not in known_ids:
                known_ids.add(id(v))
                counted += sum(item is array for item in v)
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
        if id(r) in known_ids:
            continue
        if isinstance(r, (list, dict, set)) and id(r) not in frame_dicts:
            return f"held by a {type(r).__name__}"
        if isinstance(r, tuple):
            known_ids.add(id(r))
            counted += sum(v is array for v in r)
    if sys.getrefcount(array) - 2 - unseen > counted:  # getrefcount's argument, this frame's `array`
        return "viewed by another array, or held elsewhere"
    return None


def unseen_references(array, known=()):
    """How many references to `array` no frame or container on the stack shows (the caller's
    evaluation stack, numpy's own during a ufunc): measured by the caller on an array nothing
    else holds, to calibrate `other_holder` for that operation."""
    for unseen in range(16):
        if other_holder(array, known, unseen) is None:
            return unseen
    return 16
