"""Sibling-slice merging: one elementwise op on several adjacent slices of a tensor runs once.

    i = sigmoid(g[:, 0:10]); f = sigmoid(g[:, 10:20]); o = sigmoid(g[:, 20:30])
becomes
    s = sigmoid(g[:, 0:30]); i = s[:, 0:10]; f = s[:, 10:20]; o = s[:, 20:30]

Fewer, larger kernel calls (the gates of recurrent cells). Only static slices of known
extent along one axis, with no step, are merged.
"""
from .util import is_pure, subgraphs_first


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


def _slice(graph, x, axis, start, stop, shape, location, before):
    index = tuple(slice(None) for _ in range(axis)) + (slice(start, stop),)
    return graph.create_node("StridedSlice", [x], {"index": index}, [(shape, x.dtype, x.weak)], location,
                             before=before)


def _merge(graph):
    groups = {}
    for node in graph.nodes:
        if len(node.inputs) != 1 or len(node.outputs) != 1 or not is_pure(node) or not node.opdef.elementwise:
            continue
        source = node.inputs[0].node
        if source.op != "StridedSlice" or source.graph is not graph:
            continue
        cut = _single_axis_slice(source)
        if cut is None:
            continue
        axis, start, stop = cut
        x = source.inputs[0]  # grouped by the sliced tensor, as (node, output index)
        key = ((x.node, x.index), node.op, repr(sorted(node.attrs.items())), axis)
        groups.setdefault(key, []).append((start, stop, node))
    for (_, _, _, axis), members in groups.items():
        members.sort(key=lambda m: m[0])
        run = [members[0]]
        for m in members[1:] + [None]:
            if m is not None and m[0] == run[-1][1]:
                run.append(m)
                continue
            if len(run) > 1:
                _merge_run(graph, run, axis)
            run = [m] if m is not None else []


def _merge_run(graph, run, axis):
    first = min((m[2] for m in run), key=graph.nodes.index)
    op_node = run[0][2]
    x = op_node.inputs[0].node.inputs[0]
    lo, hi = run[0][0], run[-1][1]
    shape = x.shape[:axis] + (hi - lo,) + x.shape[axis + 1:]
    union = _slice(graph, x, axis, lo, hi, shape, op_node.location, first)
    out = op_node.outputs[0]
    applied = graph.create_node(op_node.op, [union.outputs[0]], op_node.attrs, [(shape, out.dtype, out.weak)],
                                op_node.location, before=first)
    for start, stop, node in run:
        part = _slice(graph, applied.outputs[0], axis, start - lo, stop - lo, node.outputs[0].shape,
                      node.location, first)
        graph.replace_all_uses(node.outputs[0], part.outputs[0])


def run(graph):
    subgraphs_first(graph, _merge)
