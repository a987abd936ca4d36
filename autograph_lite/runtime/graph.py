"""The graph IR: one `Node`, one `Graph`, and the symbolic `Tensor` naming a node's output.

`Cond` and `While` are ordinary nodes whose attrs hold sub-graphs. A sub-graph reads
values of enclosing graphs only through placeholders it *captures*; the node that
owns it passes the outer values in as explicit inputs, so every graph is closed.

Passes edit a graph through it (PyTorch FX's model): `Graph.create_node`, `replace_all_uses`,
`move_node`, `erase_nodes`, and `Tensor.users`, which every rewiring keeps up to date.
"""
import collections
import contextlib
import threading

import numpy as np

from .. import recursion
from ..errors import ConversionError, SymbolicValueError, short_location, user_location
from .opdef import CONST, CONTROL_FLOW, COND, OpDef, PLACEHOLDER, WHILE
from .opdef import check_attrs
from . import memory


class Tensor:
    """A symbolic value: output `index` of `node`. Exists only while tracing.

    `shape` is a tuple whose dims may be None; `dtype` a numpy dtype. `weak` marks a
    Python scalar staged as a constant: like numpy (NEP 50) it takes the dtype of the
    other operand. A handle of memory (`mem`, runtime/memory.py) reads what the array holds
    now; a value that holds a copy of memory written since (a stacked list holding the array,
    a tensor `if`/loop result that is the array on some runs only) gets `stale` (an
    `InPlaceUpdate`) and may no longer be read, since eagerly it would show the write.
    """

    __slots__ = ("node", "index", "shape", "dtype", "weak", "_stale", "_users", "box", "python_box", "mem")
    # Make numpy hand `ndarray + Tensor` and `np.tanh(Tensor)` to us (see ops/overloads.py).
    __array_priority__ = 1000
    __hash__ = object.__hash__  # == is elementwise; dict keys must use id()

    def __init__(self, node, index, shape, dtype, weak=False):
        self.node, self.index = node, index
        self.shape, self.dtype, self.weak = tuple(shape), np.dtype(dtype), weak
        self._stale = None
        self._users = []
        self.box = None  # an argument's box ("scalar" for a numpy scalar), or a Python-number merge's numpy one; runtime/boxes.py
        self.python_box = None  # a tensor `if`'s merge of a Python number and a numpy value (ops/control_flow.py)
        self.mem = None  # the memory it is a handle of (runtime/memory.py View), once viewed or written

    @property
    def stale(self):
        """Why this value may no longer be read (an InPlaceUpdate), or None; an update traced in an
        attempt thrown away (a block traced again to carry memory) leaves none: the new attempt
        marks again what it updates."""
        stale = self._stale
        return None if stale is None or stale.abandoned() else stale

    @stale.setter
    def stale(self, value):
        self._stale = value

    @property
    def users(self):
        """The nodes that read this value, once per input slot (`x + x` lists its node twice);
        kept up to date as nodes are built, rewired (`node.inputs = ...`) and erased."""
        return list(self._users)

    @property
    def name(self):
        return f"{self.node.name}:{self.index}"

    @property
    def graph(self):
        return self.node.graph

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f'Tensor("{self.name}", shape={self.shape}, dtype={self.dtype.name})'

    def _misuse(self, what, instead):
        origin = " and ".join(source_arguments(self)) or "values computed in the graph"
        return SymbolicValueError(
            f"symbolic {self!r} was {what} while tracing, but its value depends on {origin} "
            f"and is only known when the graph runs. {instead} (at {user_location(3)})")

    def __bool__(self):
        raise self._misuse("used as a Python bool",
                           "Use ag.cond / ag.where / ag.while_loop, or write the `if`/`while` "
                           "inside an @ag.function so it is converted to graph control flow.")

    def __len__(self):
        if self.shape and self.shape[0] is not None:
            return self.shape[0]
        raise self._misuse("passed to len()", "Use ag.shape(x)[0] for a length known only at run time.")

    def __iter__(self):
        raise self._misuse("iterated over",
                           "Index it with x[i] in a loop over ag.range(...), or write the `for` "
                           "inside an @ag.function so it becomes a graph loop.")

    def __index__(self):
        raise self._misuse("used as a Python int", "Keep it a Tensor and use ag ops on it.")

    def __float__(self):
        raise self._misuse("converted to a Python float", "Keep it a Tensor and use ag ops on it.")

    __int__ = __index__

    def __array__(self, dtype=None, copy=None):
        raise self._misuse("converted to a numpy array",
                           "Use ag ops (ag.tanh, ag.reduce_sum, ...) on it; its value exists "
                           "only when the compiled function runs.")


class Slot:
    """Marks where the k-th input of a node goes inside a structured attr (an index, a print)."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __repr__(self):
        return f"${self.k}"

    def __eq__(self, other):  # two nodes' indexes compare equal where their slots name the same input
        return type(other) is Slot and other.k == self.k

    def __hash__(self):
        return hash(("Slot", self.k))


def fill_slots(value, inputs):
    """A stored attr value (nested tuples) with each Slot replaced by the node's input it names."""
    if type(value) is Slot:
        return inputs[value.k]
    if type(value) is tuple:
        return tuple(fill_slots(v, inputs) for v in value)
    return value


def _name(op):
    return op.name if isinstance(op, OpDef) else op


class Node:
    """One operation: its `opdef` (`op`: its name), input Tensors, attrs, typed outputs, the
    user's `file:line`.

    `in_place_input`: the index of the input whose buffer the plan writes the result into
    (set by passes/buffer_reuse.py), or None. `forward`: for a node the backprop engine built,
    the forward node whose gradient it computes (None in the forward graph). Passes build
    nodes with `Graph.create_node`."""

    __slots__ = ("opdef", "name", "_inputs", "attrs", "outputs", "location", "graph", "in_place_input", "forward",
                 "_aliases", "unrolled")

    def __init__(self, graph, op, name, inputs, attrs, location):
        self.opdef = check_attrs(op, attrs, name, location)  # op: an OpDef or its name
        self.graph, self.name = graph, name
        self._inputs = ()
        self.inputs, self.attrs, self.location = inputs, attrs, location
        self.outputs = []
        self.in_place_input = None
        self.forward = _tracing.backward_of
        self._aliases = None  # a Cond/While's cached _direct_aliases / _maybe_same / _view_bases, per output
        # the Python loops the trace unrolled around it, outermost first: ((loop's file:line, iteration), ...)
        self.unrolled = tuple(map(tuple, _tracing.unrolled)) if _tracing.unrolled else ()
        _tracing.nodes_made += 1

    @property
    def place(self):
        """Where the node was traced: the user's `file:line`, and within Python loops the trace
        unrolled, each one's iteration (counted from 0, outermost first)."""
        if not self.unrolled:
            return self.location
        loops = ", ".join(f"iteration {k} of the Python loop at {short_location(where)}" for where, k in self.unrolled)
        return f"{self.location} ({loops})"

    @property
    def inputs(self):
        return self._inputs

    @inputs.setter
    def inputs(self, tensors):
        """Rewire the node; each tensor's `users` follows."""
        tensors = tuple(tensors)
        for t in self._inputs:
            t._users.remove(self)
        for t in tensors:
            t._users.append(self)
        self._inputs = tensors

    def subgraphs(self):
        return [v for v in self.attrs.values() if isinstance(v, Graph)]

    @property
    def op(self):
        """The op's name ("MatMul"), as printed and saved."""
        return self.opdef.name

    def __repr__(self):
        return f"<Node {self.name} = {self.op}({', '.join(t.name for t in self.inputs)})>"


class Graph:
    """An ordered list of nodes with explicit inputs (placeholders) and outputs."""

    def __init__(self, name, parent=None):
        self.name, self.parent = name, parent
        self.nodes, self.inputs, self.outputs = [], [], []
        self.captures = []       # [(outer Tensor as the parent sees it, inner placeholder)]
        self.maybe_updated = []  # its placeholders whose array an update changed on some runs only
        self.ends_of_handles = []  # (branch result, the written handle it was made from): _compute_direct_aliases
        self.write_backs = {}    # top graph: id(argument placeholder) -> (placeholder, its final value)
        self.write_back_outputs = []  # top graph: (input index, output index) to copy after a call
        self.views = {}          # id(tensor) -> tensors that numpy would give as views of its array
        self.holders = {}        # id(tensor) -> stacked lists holding its array (operators/lists.py)
        self.held = {}           # id(tensor) -> that tensor, for the keys of `holders`
        self.python_ranges = {}  # id(Range tensor) -> it, for Python's range() on tensors: ints are weak
        self.made_generators = {}  # top graph: id -> a random generator the traced code made from a seed
        self.read_values = {}    # top graph: id(input placeholder) -> the array it stood for while tracing
        self.storages = []       # top graph: the memory.Storage of every array viewed or written in the trace
        self.numpy_aliases = {}  # top graph: id(Const) -> (Const, words): a numpy array held under another name
        self.control_nodes = []  # the Cond/While nodes added while tracing (alias rules scan them, not every node)
        self.carries = False     # a tensor block that carries memory written inside it (memory.block)
        self.carried_out = None  # the final values of the memory it carries
        self.loop_starts = {}    # a loop body's: id(loop variable placeholder) -> its start value
        self._captured = {}      # id(enclosing tensor, or the parent's placeholder for it) -> (it, placeholder)
        # Node names are unique across a graph and all its sub-graphs.
        self._name_counts = parent._name_counts if parent else collections.Counter()

    def unique_name(self, base):
        n = self._name_counts[base]
        self._name_counts[base] += 1
        return base if n == 0 else f"{base}_{n}"

    def add_node(self, op, inputs, attrs, out_specs, location=None, name=None, weak=False):
        """Append a node while tracing (outputs typed by `out_specs` [(shape, dtype)], all `weak`
        or not), and track what it means for in-place updates; returns the node."""
        node = self.create_node(op, inputs, attrs, [(shape, dtype, weak) for shape, dtype in out_specs],
                                location or user_location(2), name=self.unique_name(name or _name(op)))
        if node.opdef in CONTROL_FLOW:
            self.control_nodes.append(node)
            _carry_maybe_updates(node, node.subgraphs())
            _carry_views(node)
        elif _is_view(node):
            self.views.setdefault(id(node.inputs[0]), []).append(node.outputs[0])
        return node

    def create_node(self, op, inputs, attrs, out_specs, location, name=None, before=None):
        """A new node of this graph, with outputs typed by `out_specs` [(shape, dtype, weak)],
        inserted before node `before` (None: at the end); returns the node. `name` defaults to
        a fresh one from `op`."""
        node = Node(self, op, name or self.unique_name(_name(op)), inputs, attrs, location)
        node.outputs = [Tensor(node, i, shape, dtype, weak) for i, (shape, dtype, weak) in enumerate(out_specs)]
        if before is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(self.nodes.index(before), node)
        return node

    def replace_all_uses(self, old, new):
        """Make every node and output of this graph that reads tensor `old` read `new` instead (and a
        Cond's or While's sub-graphs capture `new`: `box_of` follows captures, fuzzer seed 1230004319)."""
        for node in old.users:
            if node.graph is self:
                node.inputs = [new if t is old else t for t in node.inputs]
                for sub in node.subgraphs():
                    if any(o is old for o, _ in sub.captures):
                        sub.captures = [(new if o is old else o, i) for o, i in sub.captures]
        if any(t is old for t in self.outputs):
            self.outputs = [new if t is old else t for t in self.outputs]

    def move_node(self, node, before):
        """Move `node` from its graph (a sub-graph of this one) to this graph, before node `before`."""
        node.graph.nodes.remove(node)
        node.graph = self
        self.nodes.insert(self.nodes.index(before), node)

    def erase_nodes(self, nodes):
        """Remove `nodes` from this graph; nothing outside them may still read their outputs."""
        erased = set(nodes)
        if erased:
            self.nodes = [n for n in self.nodes if n not in erased]
            for node in erased:
                node.inputs = ()

    def placeholder(self, shape, dtype, name, weak=False, **attrs):
        node = self.add_node(PLACEHOLDER, (), attrs, [(shape, dtype)], name=name, weak=weak)
        self.nodes.pop()  # placeholders are graph inputs, not steps
        return node.outputs[0]

    def capture(self, tensor):
        """The value of `tensor` (from this graph or an enclosing one) as seen inside this graph."""
        if tensor.stale is not None and not _tracing.internal:
            tensor.stale.check_read(self)
        if tensor.mem is not None and not _tracing.internal:
            # a handle of memory: what it holds now (runtime/memory.py); the backward pass reads
            # forward nodes' inputs, the values as they were
            tensor = memory.resolve(tensor, self)
        return self._capture(tensor)

    def _capture(self, tensor):
        if tensor.node.graph is self:
            return tensor
        hit = self._captured.get(id(tensor))
        if hit is not None:
            return hit[1]
        if self.parent is None:
            if _root(tensor.node.graph) is self:
                raise ConversionError(
                    f"{tensor!r} was computed inside a branch or loop body on a tensor (at "
                    f"{tensor.node.location}) and is read outside it at {user_location(2)}; a value leaves "
                    f"a tensor `if`/`while`/`for` only through a local variable the block assigns, not through "
                    f"global or nonlocal variables, objects or containers the converter does not carry. "
                    f"Assign it to a local variable in the block and use that variable after it")
            raise ValueError(
                f"{tensor!r} belongs to a different trace (another function or an earlier "
                f"call) and cannot be used here; pass it in as an argument instead. "
                f"(at {user_location(2)})")
        # One placeholder per value the parent passes in: a tensor of an outer graph and the
        # parent's own placeholder for it are the same value, so they share it (two would give
        # the owning node two inputs for one outer tensor, and `_close` would keep only one).
        outer = self.parent._capture(tensor)
        hit = self._captured.get(id(outer))
        if hit is None:
            inner = self.placeholder(tensor.shape, tensor.dtype, name=f"{tensor.node.name}_captured",
                                     weak=tensor.weak)
            inner.python_box = outer.python_box  # its tensors are the outer graph's: ops capture them
            hit = self._captured[id(outer)] = (outer, inner)
            self.captures.append((outer, inner))
        self._captured[id(tensor)] = (tensor, hit[1])
        return hit[1]

    def nesting(self):
        """How deeply Cond and While sub-graphs nest in this graph (0: none)."""
        deepest, stack = 0, [(self, 0)]
        while stack:
            graph, depth = stack.pop()
            deepest = max(deepest, depth)
            stack.extend((sub, depth + 1) for node in graph.nodes for sub in node.subgraphs())
        return deepest

    def walk(self):
        """Every node of this graph and of its sub-graphs, parents before children (an explicit
        stack: Conds nest 1,000 deep in an `elif` chain)."""
        stack = [iter(self.nodes)]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            yield node
            stack.extend(iter(sub.nodes) for sub in reversed(node.subgraphs()))

    def __str__(self):
        from .printing import format_graph
        return format_graph(self)

    def to_dot(self):
        from .printing import to_dot
        return to_dot(self)


def source_arguments(tensor):
    """Names of the function arguments `tensor` was computed from, outermost graph first."""
    names, seen, stack = [], set(), [tensor]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        node = t.node
        if node.opdef is PLACEHOLDER:
            if "argument" in node.attrs and node.attrs["argument"] not in names:
                names.append(node.attrs["argument"])
            hit = next((outer for outer, inner in node.graph.captures if inner is t), None)
            if hit is not None:
                stack.append(hit)
        stack.extend(node.inputs)
    return [f"argument '{n}'" for n in names]


# --- what may no longer be read after a write to memory (runtime/memory.py) ---------------

class InPlaceUpdate:
    """Why a Tensor may no longer be read: `label` ('x') was updated in place (`symbol`, '+=')
    at `location` by code of graph `scope`. Reads from `scope`, from inside it or from the
    graphs around it are refused; a sibling branch (the other side of an `if` being traced) may
    still read it. Once the Cond or While around `scope` is built, the update may have run: from
    then on the scope is the graph around that node (a read in a later `if`'s branch is refused too:
    fuzzer seed 1153011008, a `return x` in a `try` read after its `finally` wrote x)."""

    __slots__ = ("scope", "label", "symbol", "location")

    def __init__(self, scope, label, symbol, location):
        self.scope, self.label, self.symbol, self.location = scope, label, symbol, location

    def abandoned(self):
        """Whether the update was traced in a graph that is thrown away: neither being built nor
        (through the graphs around it) a sub-graph of a node built in one (fuzzer seed
        1202007273: a tensor `if` traced again to carry what a loop in it writes kept the first
        attempt's mark, whose scope then covered no later read)."""
        graph, building = self.scope, _tracing.stack
        while graph.parent is not None and not any(g is graph for g in building):
            if not any(sub is graph for node in graph.parent.control_nodes for sub in node.subgraphs()):
                return True
            graph = graph.parent
        return False

    def check_read(self, graph, reading=None):
        scope = self.scope
        while scope.parent is not None and any(sub is scope for node in scope.parent.control_nodes
                                               for sub in node.subgraphs()):
            scope = scope.parent  # the node holding the update is built: it is behind every later read
        if _within(graph, scope) or _within(scope, graph):
            reading = reading or f"is read again at {user_location()}"
            raise ConversionError(
                f"{self.label} was updated in place (`{self.symbol}`) at {self.location}, and the array from "
                f"before that update {reading} through another name (an alias of the same array); "
                f"compiled code cannot make every alias see an in-place update. Read the updated "
                f"variable instead, or write `x = x {self.symbol[:-1]} y` to make a new array")


def _root(graph):
    while graph.parent is not None:
        graph = graph.parent
    return graph


def _within(graph, ancestor):
    while graph is not None:
        if graph is ancestor:
            return True
        graph = graph.parent
    return False


def _is_view(node):
    """Whether numpy gives this op's result as a view of its first input (`OpDef.view`: basic
    slicing with scalar indices, transpose, reshape, ...): then updating one updates both."""
    opdef = node.opdef
    if opdef.view is None or not node.outputs:
        return False
    if not node.outputs[0].shape:
        # a 0-d result is a view where numpy gives a 0-d array (`x[1:2].reshape(())`, `x[..., 1]`),
        # a copy where it gives a numpy scalar (`x[1]`)
        from .boxes import ARRAY, box_of
        return opdef.view(node) and box_of(node.outputs[0]) == ARRAY
    return opdef.view(node)


def holds(holder, value):
    """Record that `holder` (a list's stacked tensor) holds `value`'s array, as a Python list holds
    the array itself: an in-place update of `value` makes `holder` stale, as for a view."""
    value.node.graph.holders.setdefault(id(value), []).append(holder)
    value.node.graph.held[id(value)] = value


def _mark_views(graph, old, scope, label, symbol, location, modeled=False):
    """Views of `old` (and views of those) read the updated array eagerly: they may not be read
    (with `modeled`, the views runtime/memory.py replays read the new value instead)."""
    for what, table in (("this value is a slice or view of it", graph.views), ("a list holding it", graph.holders)):
        for view in table.get(id(old), ()):
            if modeled and view.mem is not None and table is graph.views:
                continue
            if view.stale is None:
                said = label if label.endswith(f"({what})") else f"{label} ({what})"  # once along a chain
                view.stale = InPlaceUpdate(scope, said, symbol, location)
                _mark_views(graph, view, scope, label, symbol, location, modeled)
                # and what a tensor `if` or loop gave on as that value (a list carried through a loop
                # that updates the array it holds: fuzzer seed 25002913)
                _mark_maybe_aliases(view, None, scope, said, symbol, location)


def check_partial_aliases(old, label, symbol, location, new=None):
    """Before `old`'s array is updated in place (by `supersede`, or runtime/memory.py writing the
    memory `old` started; `new`: the updated value where one Tensor holds it): where on some runs
    `old` is another array (a tensor `if` or loop gave it, or a view of one), an argument's is an
    error (whether the caller's array changes would depend on the data) and another is stale."""
    graph = current_graph()
    _refuse_if_argument(old, label, symbol, location, numpy_only=True)  # `v = w` in both branches of an `if`
    if old.node.opdef in (COND, WHILE, PLACEHOLDER):
        _reach_view_bases(old, graph, label, symbol, location)
    for maybe in _maybe_same(old):
        _refuse_if_argument(maybe, label, symbol, location)
        _mark_maybe_same(maybe, graph, label, symbol, location)
        if maybe.node.opdef is PLACEHOLDER and not any(t is maybe for t in maybe.node.graph.maybe_updated):
            # a loop variable's or a branch's array from outside, changed on the runs where it is the
            # same array (an inner loop may have passed it on): the Cond/While built around it hands
            # the update on (fuzzer seeds 6000624, 23000869)
            maybe.node.graph.maybe_updated.append(maybe)
    _mark_maybe_aliases(old, new, graph, label, symbol, location)


def _refuse_if_argument(maybe, label, symbol, location, numpy_only=False):
    """An update that changes `maybe`'s array on some runs only may not reach an argument: whether
    the caller's array changes would depend on the data."""
    alias = numpy_alias(_origin(maybe))
    if alias is not None:
        raise ConversionError(
            f"{label} is updated in place (`{symbol}`) at {location}, and on some runs it is {alias} (a tensor "
            f"`if` gave it that array), which the compiled function cannot update in place; "
            f"{'make a new array' if symbol == '[...] =' else f'write `x = x {symbol[:-1]} y` to make a new array'}, "
            f"or copy the array when you assign it (`v = w.copy()`)")
    if numpy_only:
        return
    argument = _argument_of(_origin(maybe))
    if argument is None and (written := memory.written_storage(_origin(maybe))) is not None:
        # the argument's contents after an earlier write (`y[0] = 1; v = y if c else y[::-1]`: seed 23001280)
        argument = _argument_of(written.root)
    if argument is not None:
        raise ConversionError(
            f"{label} is updated in place (`{symbol}`) at {location}, and on some runs it is the array of "
            f"argument '{argument}' (a tensor `if` or loop gave it that array on some paths only), so "
            f"whether the caller's array changes depends on the data; write `x = x {symbol[:-1]} y` to "
            f"make a new array, or copy the argument first")


def _reach_view_bases(t, scope, label, symbol, location):
    """An in-place update of `t`, which on some runs is a view of another array (a branch or loop
    gave it `y[0]`), changes that array on those runs: an argument's is an error (the compiled
    function cannot update part of the caller's array as eagerly), another is stale from here."""
    for viewed in _view_bases(t):
        argument = _argument_of(_origin(viewed))
        if argument is not None:
            raise ConversionError(
                f"{label} is updated in place (`{symbol}`) at {location}, and on some runs it is a slice "
                f"or view of argument '{argument}' (a tensor `if` or loop gave it that view), so the "
                f"compiled function cannot update the caller's array as eagerly; write "
                f"`x = x {symbol[:-1]} y`, or copy the view first (`.copy()`)")
        if viewed.stale is None:
            viewed.stale = InPlaceUpdate(scope, f"{label} (on some runs a view of this value)", symbol, location)
            _mark_views(viewed.node.graph, viewed, scope, label, symbol, location)


def _argument_of(t):
    """The name of the argument whose array `t` holds (after any in-place updates), or None; an
    array read from outside the arguments (`self.W`, an `outside` input) is written back as one."""
    root = t
    if root.node.opdef is not PLACEHOLDER:
        return None
    return root.node.attrs.get("argument") or root.node.attrs.get("outside")


def _mark_maybe_aliases(old, new, graph, label, symbol, location, spared=()):
    """Cond/While results that are `old`'s array on some runs (a branch returned it) are stale:
    eagerly they see the update on those runs. `new`, the result that carries the update, is not,
    nor are those in `spared` (memory.py: return values on runs the write does not happen)."""
    for t in _block_results(graph, old.node.graph):
        if t.stale is None and t is not old and t is not new and not any(t is s for s in spared) \
                and id(old) in _maybe_same_ids(t):
            _mark_maybe_same(t, graph, label, symbol, location)


def _block_results(graph, last=None):
    """The outputs of the Cond and While nodes of `graph` and of the graphs around it, out to `last`."""
    scope = graph
    while scope is not None:
        for node in scope.control_nodes:
            if node.graph is scope:
                yield from node.outputs
        if scope is last:
            break
        scope = scope.parent


def mark_views_on_some_runs(storage, graph, label, symbol, location):
    """Before a write to `storage`: the Cond/While results that are, on some runs, a view of one of
    its handles (`v = x[::-1]`, a branch giving `v = n + y` instead) are stale: eagerly they show
    the write on those runs (fuzzer seed 1136007883, found again once a block's output for the
    memory it carried stopped counting as "on some runs the same array")."""
    for t in _block_results(graph):
        if t.stale is None and (t.mem is None or t.mem.storage is not storage) \
                and any(id(b) in storage.handles for b in _view_bases(t)):
            t.stale = InPlaceUpdate(graph, f"{label} (on some runs a view of it)", symbol, location)
            _mark_views(t.node.graph, t, graph, label, symbol, location, modeled=True)


def _mark_maybe_same(t, scope, label, symbol, location):
    """`t`, on some runs the array updated in place, is stale, and so are the stacked lists that
    hold it and its views not modeled in memory (fuzzer seed 1181008174: a list appended to after
    a loop that started it as `[x]`, then `x[2:] = 0`)."""
    if t.stale is None:
        t.stale = InPlaceUpdate(scope, f"{label} (on some runs the same array)", symbol, location)
        _mark_views(t.node.graph, t, scope, label, symbol, location, modeled=True)


def _maybe_same(t):
    """Other tensors whose array `t` is on some runs: a Cond output is what a branch passes through
    from outside, a While output its start value (no iterations) or a value its body passes through,
    and another output of the same node that the branch or body gives the same array (`d['a'] = v`
    in a loop that also carries v: fuzzer seed 8017096); and so on, transitively. Kept on t's node,
    as `_direct_aliases` are (each write asks it of every block result in scope: NPBench's
    scattering_self_energies, thousands of Conds each passing one array on, traced for minutes)."""
    if t.node.opdef not in CONTROL_FLOW:
        return []
    return _cached(t, "closure", _compute_maybe_same)


def _maybe_same_ids(t):
    """{id: tensor} of `_maybe_same(t)`."""
    if t.node.opdef not in CONTROL_FLOW:
        return {}
    return _cached(t, "closure ids", lambda t: {id(x): x for x in _maybe_same(t)})


def _compute_maybe_same(t):
    found, seen, todo = [], {id(t)}, [t]
    while todo:
        for other in _direct_aliases(todo.pop()):
            if id(other) not in seen:
                seen.add(id(other))
                found.append(other)
                todo.append(other)
    return found


def _cached(t, kind, compute):
    """compute(t), cached on t's node (a built Cond/While never changes what it passes through)."""
    node = t.node
    if node._aliases is None:
        node._aliases = {}
    key = (kind, t.index)
    if key not in node._aliases:
        node._aliases[key] = compute(t)
    return node._aliases[key]


def _direct_aliases(t):
    """The tensors whose array `t` may be, one step away (see _maybe_same)."""
    if t.node.opdef not in CONTROL_FLOW:
        return []
    return _cached(t, "same", _compute_direct_aliases)


def _compute_direct_aliases(t):
    node, found = t.node, []
    if node.opdef is COND:
        passed = [node.attrs["then_branch"], node.attrs["else_branch"]]
    else:
        passed = [node.attrs["body"]]
        found.append(node.inputs[t.index])
        found += [o for o in node.outputs if o is not t and node.inputs[o.index] is node.inputs[t.index]]
    n = len(node.outputs)
    for sub in passed:
        if t.index < len(sub.outputs):
            inside = _may_be(sub.outputs[t.index])  # what the sub-graph's result may be
            # a branch result that is what a handle of memory it wrote held at its end is that
            # handle's array on those runs (fuzzer seed 1141004447: `v = y[::-1]`, `y[0] = 1` in one branch)
            handles = [h for end, h in sub.ends_of_handles if any(end is v for v in inside)]
            found += [h for h in handles if not _within(h.node.graph, sub)]
            inside += [a for h in handles if _within(h.node.graph, sub) for a in _may_be(h)]
            found += [outer for outer, inner in sub.captures if any(inner is v for v in inside)]
            if node.opdef is WHILE:  # a loop variable the body passes on from another one
                found += [node.inputs[k] for k, ph in enumerate(sub.inputs[:n])
                          if k != t.index and any(ph is v for v in inside)]
            found += [node.outputs[k] for k in range(min(n, len(sub.outputs)))
                      if k != t.index and any(v is w for v in _may_be(sub.outputs[k]) for w in inside)]
    return found


def _may_be(t):
    """`t` and the tensors whose array it is on some runs."""
    return [t] + _maybe_same(t)


def _origin(t):
    """The tensor that `t` stands for outside its graph, when `t` is a captured placeholder."""
    while t.node.opdef is PLACEHOLDER:
        outer = next((o for o, i in t.node.graph.captures if i is t), None)
        if outer is None:
            break
        t = outer
    return t


def check_stale_across_iterations(body, cond, placeholders, starts, outs, location):
    """After a loop body is traced: a value from outside that an update in the body made stale
    (on some runs the array the body writes: a tensor `if` gave `v = x[::-1]` or `v = w`) is read
    again by the next iteration, stale, where the body or the condition read it before the update,
    or where the body hands on, on some runs, a loop variable that started as it (a loop variable's
    other aliases are not: a loop that carries memory hands on its latest contents). Eagerly that
    read sees the update (fuzzer seed 1215005829: compiled code added the first iteration's array
    every time)."""
    reading = f"is read again by the next iteration of the loop at {location}"

    def refuse_if_stale(t):
        stale = t.stale
        if stale is not None and _within(stale.scope, body):
            stale.check_read(body, reading)

    for graph in (body, cond):
        for outer, _ in graph.captures:
            refuse_if_stale(outer)
    for out in outs:
        refuse_if_stale(out)
        for t in _may_be(out):  # a loop variable's array from before the loop, on some runs
            k = next((k for k, p in enumerate(placeholders) if p is t), None)
            if k is not None and isinstance(starts[k], Tensor):
                refuse_if_stale(starts[k])


def _carry_maybe_updates(node, subs):
    """After a Cond or While is built: an outer array that an update inside changed on some runs
    only (it was the same array as the updated one on those runs) is stale, and an argument's
    array changed that way is an error: whether the caller's array changes depends on the data."""
    n = len(node.outputs)
    for sub in subs:
        for p in sub.maybe_updated:
            k = next((k for k, t in enumerate(sub.inputs[:n]) if t is p), None) if node.opdef is WHILE else None
            outer = node.inputs[k] if k is not None else _origin(p)
            if outer is p:
                continue  # made inside the node
            info = p.stale
            for t in [outer] + _maybe_same(outer):  # and what that array may be in turn
                _refuse_if_argument(t, info.label, info.symbol, info.location)
                # and the arrays it is, on some runs, a view of (fuzzer seed 31002425)
                _reach_view_bases(t, info.scope, info.label, info.symbol, info.location)
                if t.stale is None:
                    t.stale = InPlaceUpdate(info.scope, info.label, info.symbol, info.location)
                if t.node.opdef is PLACEHOLDER and not any(u is t for u in t.node.graph.maybe_updated):
                    t.node.graph.maybe_updated.append(t)
            if k is not None:  # a loop variable updated on some runs: the loop's own checks apply
                _check_loop_update(node, k, info)


def _check_loop_update(node, k, info):
    """Loop variable k of While `node` is updated in place (on some runs, through a value that may
    be its array: fuzzer seeds 23005877, 23007892). Refused where the compiled loop could not show
    that update as eagerly: the loop reads the same array under another name (the tensor a `for`
    iterates), or the body hands the variable an array from outside the iteration, which the next
    iteration would update."""
    cond_g, body = node.attrs["cond"], node.attrs["body"]
    outer = node.inputs[k]
    if any(o is outer for o, _ in body.captures + cond_g.captures):
        raise ConversionError(
            f"{info.label} is updated in place (`{info.symbol}`) at {info.location} inside a loop on a "
            f"tensor, and the loop also reads the same array under another name; compiled code "
            f"cannot make that name see the update. Write `x = x {info.symbol[:-1]} y`")
    if from_outside_iteration(body, body.inputs[k], body.outputs[k]) is not None:
        raise ConversionError(
            f"{info.label} is updated in place (`{info.symbol}`) at {info.location} inside a loop on a "
            f"tensor, and the loop then gives it an array from outside the iteration (another "
            f"variable or argument), which the next iteration would update in place too; compiled "
            f"code cannot update that array. Write `x = x {info.symbol[:-1]} y`, or copy the array "
            f"when you assign it (`x = y.copy()`)")


def from_outside_iteration(body, own, t):
    """What loop body `body`'s result `t` for the variable whose placeholder is `own` may hold, on
    some runs, that is an array from outside the iteration, in words, or None: another placeholder
    (another variable's array, an argument's, a value from before the loop), a view of one (a
    slice, a reshape: `v = x[1:2].reshape(())`), or a numpy array the function holds under another
    name (`numpy_alias`). Eagerly, the next iteration's in-place update would change that array."""
    candidates = _may_be(t)
    candidates += [b for c in list(candidates) for b in _view_bases(c)]
    for c in candidates:
        origin = _origin(c)
        if c is own or origin is own:
            continue
        alias = numpy_alias(origin)
        if alias is not None:
            return alias
        if not _within(origin.node.graph, body):
            argument = _argument_of(origin)
            return f"argument '{argument}'s array" if argument else "an array from before the loop"
        if c.node.opdef is PLACEHOLDER and c.node.graph is body:
            return "another loop variable's array"
    return None


def record_numpy_alias(t, words, array, given):
    """Record that Const `t` stands for numpy array `array`, which the function holds under another
    name (`words`) and a tensor `if` gives on some runs (`given`: to what, where): an in-place update
    reaching `t` is refused, and so is a later update of `array` itself (`numpy_array_given`,
    `check_numpy_aliases`)."""
    _root(t.node.graph).numpy_aliases[id(t)] = (t, words, array, given)


def numpy_array_given(array):
    """The words for numpy array `array` (or one sharing its memory) where a tensor `if` of the trace
    being built gave it to a variable on some runs (`record_numpy_alias`), else None: updating it in
    place would change that variable eagerly on those runs only."""
    graph = current_graph()
    if graph is None:
        return None
    for _, _, held, given in _root(graph).numpy_aliases.values():
        if held is array or np.shares_memory(held, array):
            return given
    return None


def check_numpy_aliases(graph):
    """At the end of a trace: a numpy array a tensor `if` gave to a variable on some runs that numpy
    code updated in place afterwards (`w += 1` on the array itself): eagerly the variable would show
    the update on those runs; the compiled function read the array's contents at the `if`."""
    for t, words, held, _ in graph.numpy_aliases.values():
        before = t.node.attrs["value"]
        if not np.array_equal(held, before, equal_nan=held.dtype.kind in "fc"):
            raise ConversionError(
                f"{words} is updated in place after the `if` (by numpy code, not on a tensor); eagerly the "
                f"variable the `if` gave it to would show the update on the runs taking that branch, and "
                f"compiled code read the array at the `if`. Copy the array when you assign it (`v = w.copy()`)")


def numpy_alias(t):
    """The words for the numpy array (made while tracing and held under another name) that `t`
    stands for (a tensor `if` gave it as a branch's value: operators/control_flow.py), or None."""
    hit = _root(t.node.graph).numpy_aliases.get(id(t))
    return hit[1] if hit is not None and hit[0] is t else None


def _carry_views(node):
    """After a Cond or While is built: an output that is, on some runs, a view of an array from
    before the node (`row = y[0]` in a branch or loop body) is recorded as a view of it, so an
    in-place update of that array afterwards makes the output stale."""
    for out in node.outputs:
        for base in _view_bases(out):
            views = base.node.graph.views.setdefault(id(base), [])
            if not any(v is out for v in views):
                views.append(out)


def _view_bases(t):
    """The tensors whose array `t` is, on some runs, a view of (a Cond/While output through what
    its branches or body give or its other maybe-aliases, a captured placeholder through the value
    it stands for)."""
    node = t.node
    if _is_view(node):
        base = node.inputs[0]
        found = [base] + _view_bases(base)
        written = memory.written_storage(base)
        if written is not None and written.root is not base:
            # a view replayed on an array's contents after a write (`y[0] = 1` in a branch, then
            # `v = y[::-1]` read): a view of that array (fuzzer seed 1141004447)
            found += [written.root] + _view_bases(written.root)
        return found
    if node.opdef is PLACEHOLDER:
        outer = _origin(t)
        return [] if outer is t else _view_bases(outer)
    if node.opdef not in CONTROL_FLOW:
        return []
    return _cached(t, "views", _compute_view_bases)


def _compute_view_bases(t):
    node = t.node
    subs = (node.attrs["then_branch"], node.attrs["else_branch"]) if node.opdef is COND else (node.attrs["body"],)
    found = []
    for sub in subs:
        if t.index < len(sub.outputs):
            for v in _may_be(sub.outputs[t.index]):
                found += [_origin(b) for b in _view_bases(v) if not _within(_origin(b).node.graph, sub)]
    for other in _maybe_same(t):  # a start value, or an outer value a branch passes on, that is a view
        if other.node.opdef not in CONTROL_FLOW:
            found += _view_bases(other)
    return found


# --- the graph being built (one stack per thread) ----------------------------------------

FRAMES_PER_BLOCK = 40  # frames allowed per level of nested blocks being traced: each takes ~12


class _Tracing(threading.local):
    def __init__(self):
        self.stack = []
        self.internal = False  # True while the library itself reads replaced values (gradients)
        self.backward_of = None  # the forward node whose gradient nodes are being built
        self.unrolled = []  # [loop's file:line, iteration] of each Python loop being unrolled (operators/control_flow.py)
        self.nodes_made = 0  # nodes made on this thread so far: how big a Python loop's unrolling has grown
        # the Python range loops this trace staged the rest of as graph loops (operators/control_flow.py), or None
        # where it may not (`range_staging`)
        self.staged_ranges = None
        self.unroll_warned = set()  # the `file:line`s of Python loops this trace warned were long to unroll


_tracing = _Tracing()



def current_graph():
    stack = _tracing.stack
    return stack[-1] if stack else None


@contextlib.contextmanager
def building(graph):
    """Ops called inside this block add nodes to `graph` instead of running."""
    stack = _tracing.stack
    stack.append(graph)
    # a block nested in a block: the user's code traces it from inside the outer one's trace, some
    # ten frames deeper per level (an `elif` chain of 1,000 tensor conditions)
    room = recursion.limit_at_least(recursion.base_limit() + FRAMES_PER_BLOCK * len(stack)) if len(stack) > 8 \
        else contextlib.nullcontext()
    try:
        with room:
            yield graph
    except BaseException as e:
        # a `raise` in a staged block that no `except` of that block handled (operators/exceptions.py)
        refusal = getattr(e, "_ag_staged_raise", None)
        if refusal is not None and graph.parent is not None:
            raise refusal from None
        raise
    finally:
        stack.pop()


@contextlib.contextmanager
def internal_reads():
    """Machinery (the backward pass) may read values that user code replaced in place."""
    saved, _tracing.internal = _tracing.internal, True
    try:
        yield
    finally:
        _tracing.internal = saved


@contextlib.contextmanager
def backward_of(node):
    """Nodes built inside this block compute the gradient of forward node `node` (`Node.forward`)."""
    saved, _tracing.backward_of = _tracing.backward_of, node.forward or node
    try:
        yield
    finally:
        _tracing.backward_of = saved


def copy_graph(graph, parent=None, outer=None, freeze=None):
    """A deep copy of `graph` (new nodes and tensors, sub-graphs copied too) for passes to rewrite.

    `outer` maps ids of the parent graph's tensors to their copies (for captures); `freeze` maps
    ids of inputs to arrays: those inputs become Const nodes holding them (ag.save of a trace that
    reads state outside its arguments).
    """
    return recursion.iterate(_copy(graph, parent, outer, freeze))


def _copy(graph, parent, outer, freeze):
    new = Graph(graph.name, parent=parent)
    new._name_counts = graph._name_counts
    values, freeze = {}, freeze or {}
    for t in graph.inputs:
        values[id(t)] = Tensor(None, t.index, t.shape, t.dtype, t.weak)
        values[id(t)].box = t.box
    for old_t in graph.inputs:
        frozen = id(old_t) in freeze
        attrs = {"value": freeze[id(old_t)]} if frozen else dict(old_t.node.attrs)
        node = Node(new, CONST if frozen else PLACEHOLDER, old_t.node.name, (), attrs, old_t.node.location)
        t = values[id(old_t)]
        t.node = node
        node.outputs = [t]
        if frozen:
            t.index = 0
            new.nodes.append(node)
    new.inputs = [values[id(t)] for t in graph.inputs if id(t) not in freeze]
    for node in graph.nodes:
        attrs = {}
        for k, v in node.attrs.items():
            attrs[k] = (yield _copy(v, new, values, None)) if isinstance(v, Graph) else v
        copy = new.create_node(node.op, [values[id(i)] for i in node.inputs], attrs,
                               [(o.shape, o.dtype, o.weak) for o in node.outputs], node.location, name=node.name)
        copy.forward, copy.unrolled = node.forward, node.unrolled
        for o, c in zip(node.outputs, copy.outputs):
            values[id(o)] = c
    new.outputs = [values[id(t)] for t in graph.outputs]
    new.write_back_outputs = list(graph.write_back_outputs)
    if outer is not None:
        new.captures = [(outer.get(id(o), o), values.get(id(i), i)) for o, i in graph.captures]
    return new
