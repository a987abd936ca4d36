"""Sibling-slice merging: one elementwise op on several adjacent slices of a tensor runs once.

    i = sigmoid(g[:, 0:10]); f = sigmoid(g[:, 10:20]); o = sigmoid(g[:, 20:30])
becomes
    s = sigmoid(g[:, 0:30]); i = s[:, 0:10]; f = s[:, 10:20]; o = s[:, 20:30]

Fewer, larger kernel calls (the gates of recurrent cells). Only static slices of known
extent along one axis, with no step, are merged.
"""
from ..graph import Node, Tensor
from ..opdef import lookup
from .util import is_pure, rewire, subgraphs_first


def _single_axis_slice(slice_node):
    """(axis, start, stop) if the index slices one axis with static bounds inside it, else None."""
    if len(slice_node.inputs) != 1:  # tensor parts in the index
        return None
    x = slice_node.inputs[0]
    index = slice_node.attrs["index"]
    if len(index) > x.ndim or any(not isinstance(i, slice) for i in index):
        return None
    cut = [(axis, i) for axis, i in enumerate(index) if i != slice(None)]
    if len(cut) != 1:
        return None
    axis, s = cut[0]
    dim = x.shape[axis]
    if s.step is not None or not isinstance(s.start, int) or not isinstance(s.stop, int) or dim is None:
        return None
    if not 0 <= s.start < s.stop <= dim:
        return None
    return axis, s.start, s.stop


def _slice(graph, x, axis, start, stop, shape, location):
    index = tuple(slice(None) for _ in range(axis)) + (slice(start, stop),)
    node = Node(graph, "StridedSlice", graph.unique_name("StridedSlice"), [x], {"index": index}, location)
    node.outputs = [Tensor(node, 0, shape, x.dtype, x.weak)]
    return node


def _merge(graph):
    groups = {}
    for node in graph.nodes:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or not is_pure(node) or not lookup(node.op).elementwise:
            continue
        source = node.inputs[0].node
        if source.op != "StridedSlice" or source not in graph.nodes:
            continue
        cut = _single_axis_slice(source)
        if cut is None:
            continue
        axis, start, stop = cut
        key = (id(source.inputs[0]), node.op, repr(sorted(node.attrs.items())), axis)
        groups.setdefault(key, []).append((start, stop, node))
    replacements, insert = {}, {}
    for (_, _, _, axis), members in groups.items():
        members.sort(key=lambda m: m[0])
        run = [members[0]]
        for m in members[1:] + [None]:
            if m is not None and m[0] == run[-1][1]:
                run.append(m)
                continue
            if len(run) > 1:
                _merge_run(graph, run, axis, replacements, insert)
            run = [m] if m is not None else []
    if not insert:
        return
    nodes = []
    for node in graph.nodes:
        nodes.extend(insert.get(id(node), []))
        nodes.append(node)
    graph.nodes = nodes
    rewire(graph, replacements)


def _merge_run(graph, run, axis, replacements, insert):
    first = min((m[2] for m in run), key=graph.nodes.index)
    op_node = run[0][2]
    x = op_node.inputs[0].node.inputs[0]
    lo, hi = run[0][0], run[-1][1]
    shape = x.shape[:axis] + (hi - lo,) + x.shape[axis + 1:]
    union = _slice(graph, x, axis, lo, hi, shape, op_node.location)
    out = op_node.outputs[0]
    applied = Node(graph, op_node.op, graph.unique_name(op_node.op), [union.outputs[0]], op_node.attrs, op_node.location)
    applied.outputs = [Tensor(applied, 0, shape, out.dtype, out.weak)]
    new_nodes = [union, applied]
    for start, stop, node in run:
        part = _slice(graph, applied.outputs[0], axis, start - lo, stop - lo, node.outputs[0].shape, node.location)
        new_nodes.append(part)
        replacements[id(node.outputs[0])] = part.outputs[0]
    insert.setdefault(id(first), []).extend(new_nodes)


def run(graph):
    subgraphs_first(graph, _merge)
