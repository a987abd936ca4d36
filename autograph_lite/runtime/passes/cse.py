"""Common-subexpression elimination: two pure nodes with the same op, inputs and attrs
become one (small equal constants too), unless one node then reads both as two operands
where eager's are two arrays (`OpDef.same_operands_matter`: BLAS's syrk for `x @ x.T`)."""
import numpy as np

from ..opdef import CONST

from .util import is_output, is_pure, subgraphs_first

_SMALL = 64


def _key(node):
    if node.opdef is CONST:
        value = node.attrs["value"]
        if isinstance(value, np.ndarray):
            if value.size > _SMALL:
                return None
            return (CONST, value.dtype.str, value.shape, value.tobytes(), node.outputs[0].weak)
        if isinstance(value, (float, np.floating, complex, np.complexfloating)):
            # by bits, as arrays are: -0.0 == 0.0 but is another constant (fuzzer seed 26003198)
            return (CONST, type(value), np.asarray(value).tobytes(), node.outputs[0].weak)
        return (CONST, type(value), value, node.outputs[0].weak)
    if not is_pure(node):
        return None
    attrs = []
    for k, v in sorted(node.attrs.items()):
        if isinstance(v, np.ndarray):
            if v.size > _SMALL:
                return None
            v = (v.dtype.str, v.shape, v.tobytes())
        attrs.append((k, repr(v)))
    # inputs by identity, as (node, output index): the same values, not equal ones
    return (node.op, tuple((i.node, i.index) for i in node.inputs), tuple(attrs))


def _merge(graph):
    seen, merged = {}, []
    for node in list(graph.nodes):
        key = _key(node)
        if key is None:
            continue
        # eager returns distinct arrays for the graph's outputs: never merged away
        if key in seen and not any(is_output(graph, t) for t in node.outputs) \
                and not _read_together(seen[key], node):
            for old, new in zip(node.outputs, seen[key].outputs):
                graph.replace_all_uses(old, new)
            merged.append(node)
        else:
            seen[key] = node
    graph.erase_nodes(merged)


def _readers(t):
    """The nodes reading `t` or a view of it (a transpose, a slice), through chains of views."""
    found, stack = set(), [t]
    while stack:
        x = stack.pop()
        for user in x.users:
            if user.opdef.view is not None and user.inputs[0] is x and user.opdef.view(user):
                stack.extend(user.outputs)
            else:
                found.add(user)
    return found


def _read_together(kept, node):
    """True if a node whose result depends on whether two operands are one array reads both
    `kept`'s and `node`'s results (or views of them): merged, eager's two arrays would be one."""
    mine = set().union(*(_readers(t) for t in node.outputs))
    return any(user.opdef.same_operands_matter for t in kept.outputs for user in _readers(t) & mine)


def run(graph):
    subgraphs_first(graph, _merge)
