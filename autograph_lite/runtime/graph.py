"""The graph IR: one `Node`, one `Graph`, and the symbolic `Tensor` naming a node's output.

`Cond` and `While` are ordinary nodes whose attrs hold sub-graphs. A sub-graph reads
values of enclosing graphs only through placeholders it *captures*; the node that
owns it passes the outer values in as explicit inputs, so every graph is closed.
"""
import collections
import contextlib
import threading

import numpy as np

from ..errors import SymbolicValueError, user_location


class Tensor:
    """A symbolic value: output `index` of `node`. Exists only while tracing.

    `shape` is a tuple whose dims may be None; `dtype` a numpy dtype. `weak` marks a
    Python scalar staged as a constant: like numpy (NEP 50) it takes the dtype of the
    other operand.
    """

    __slots__ = ("node", "index", "shape", "dtype", "weak")
    # Make numpy hand `ndarray + Tensor` and `np.tanh(Tensor)` to us (see ops/overloads.py).
    __array_priority__ = 1000
    __hash__ = object.__hash__  # == is elementwise; dict keys must use id()

    def __init__(self, node, index, shape, dtype, weak=False):
        self.node, self.index = node, index
        self.shape, self.dtype, self.weak = tuple(shape), np.dtype(dtype), weak

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


class Node:
    """One operation: `op` name, input Tensors, attrs, typed outputs, the user's `file:line`."""

    __slots__ = ("op", "name", "inputs", "attrs", "outputs", "location", "graph")

    def __init__(self, graph, op, name, inputs, attrs, location):
        self.graph, self.op, self.name = graph, op, name
        self.inputs, self.attrs, self.location = tuple(inputs), attrs, location
        self.outputs = []

    def subgraphs(self):
        return [v for v in self.attrs.values() if isinstance(v, Graph)]

    def __repr__(self):
        return f"<Node {self.name} = {self.op}({', '.join(t.name for t in self.inputs)})>"


class Graph:
    """An ordered list of nodes with explicit inputs (placeholders) and outputs."""

    def __init__(self, name, parent=None):
        self.name, self.parent = name, parent
        self.nodes, self.inputs, self.outputs = [], [], []
        self.captures = []       # [(outer Tensor as the parent sees it, inner placeholder)]
        self._captured = {}      # id(tensor of an enclosing graph) -> (tensor, placeholder)
        # Node names are unique across a graph and all its sub-graphs.
        self._name_counts = parent._name_counts if parent else collections.Counter()

    def unique_name(self, base):
        n = self._name_counts[base]
        self._name_counts[base] += 1
        return base if n == 0 else f"{base}_{n}"

    def add_node(self, op, inputs, attrs, out_specs, location=None, name=None, weak=False):
        """Append a node with outputs typed by `out_specs` [(shape, dtype)]; returns the node."""
        node = Node(self, op, self.unique_name(name or op), inputs, attrs, location or user_location(2))
        node.outputs = [Tensor(node, i, shape, dtype, weak) for i, (shape, dtype) in enumerate(out_specs)]
        self.nodes.append(node)
        return node

    def placeholder(self, shape, dtype, name, weak=False, **attrs):
        node = self.add_node("Placeholder", (), attrs, [(shape, dtype)], name=name, weak=weak)
        self.nodes.pop()  # placeholders are graph inputs, not steps
        return node.outputs[0]

    def capture(self, tensor):
        """The value of `tensor` (from this graph or an enclosing one) as seen inside this graph."""
        if tensor.node.graph is self:
            return tensor
        hit = self._captured.get(id(tensor))
        if hit is not None:
            return hit[1]
        if self.parent is None:
            raise ValueError(
                f"{tensor!r} belongs to a different trace (another function or an earlier "
                f"call) and cannot be used here; pass it in as an argument instead. "
                f"(at {user_location(2)})")
        outer = self.parent.capture(tensor)
        inner = self.placeholder(tensor.shape, tensor.dtype, name=f"{tensor.node.name}_captured",
                                 weak=tensor.weak)
        self._captured[id(tensor)] = (tensor, inner)
        self.captures.append((outer, inner))
        return inner

    def walk(self):
        """Every node of this graph and of its sub-graphs, parents before children."""
        for node in self.nodes:
            yield node
            for sub in node.subgraphs():
                yield from sub.walk()

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
        if node.op == "Placeholder":
            if "argument" in node.attrs and node.attrs["argument"] not in names:
                names.append(node.attrs["argument"])
            hit = next((outer for outer, inner in node.graph.captures if inner is t), None)
            if hit is not None:
                stack.append(hit)
        stack.extend(node.inputs)
    return [f"argument '{n}'" for n in names]


# --- the graph being built (one stack per thread) ----------------------------------------

class _Tracing(threading.local):
    def __init__(self):
        self.stack = []


_tracing = _Tracing()


def current_graph():
    stack = _tracing.stack
    return stack[-1] if stack else None


@contextlib.contextmanager
def building(graph):
    """Ops called inside this block add nodes to `graph` instead of running."""
    stack = _tracing.stack
    stack.append(graph)
    try:
        yield graph
    finally:
        stack.pop()


def copy_graph(graph, parent=None, outer=None):
    """A deep copy of `graph` (new nodes and tensors, sub-graphs copied too) for passes to rewrite.

    `outer` maps ids of the parent graph's tensors to their copies (for captures).
    """
    new = Graph(graph.name, parent=parent)
    new._name_counts = graph._name_counts
    values = {}
    for t in graph.inputs:
        values[id(t)] = Tensor(None, t.index, t.shape, t.dtype, t.weak)
    for old_t in graph.inputs:
        node = Node(new, "Placeholder", old_t.node.name, (), dict(old_t.node.attrs), old_t.node.location)
        t = values[id(old_t)]
        t.node = node
        node.outputs = [t]
    new.inputs = [values[id(t)] for t in graph.inputs]
    for node in graph.nodes:
        attrs = {k: copy_graph(v, new, values) if isinstance(v, Graph) else v for k, v in node.attrs.items()}
        copy = Node(new, node.op, node.name, [values[id(i)] for i in node.inputs], attrs, node.location)
        copy.outputs = [Tensor(copy, o.index, o.shape, o.dtype, o.weak) for o in node.outputs]
        for o, c in zip(node.outputs, copy.outputs):
            values[id(o)] = c
        new.nodes.append(copy)
    new.outputs = [values[id(t)] for t in graph.outputs]
    if outer is not None:
        new.captures = [(outer.get(id(o), o), values.get(id(i), i)) for o, i in graph.captures]
    return new
